/* What the programs of tests/kernel_pack_programs share (plain C): each is
 * correct under any StarPU policy and checks its results against the host
 * (one line "RESULT OK" or "RESULT WRONG ...", exit status 0 or 1); a
 * hostile review of the kernel pack wrote them (issue 38). */
#ifndef STARPU_FUSING_TESTS_KERNEL_PACK_PROGRAMS_COMMON_H
#define STARPU_FUSING_TESTS_KERNEL_PACK_PROGRAMS_COMMON_H
#include <starpu.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>

/* deterministic pseudo-random in [-1, 1) */
static inline double frand(unsigned *s)
{
	*s = *s * 1103515245u + 12345u;
	return ((*s >> 8) & 0xffff) / 32768.0 - 1.0;
}

/* DAHL's matrix_vector_product on floats, scaled: out += scale * M v
 * (buffers: R matrix, R vector, W vector). */
static inline void float_matvec_accumulate(void *buffers[], float scale)
{
	const float *m = (const float *)STARPU_MATRIX_GET_PTR(buffers[0]);
	unsigned nx = STARPU_MATRIX_GET_NX(buffers[0]), ny = STARPU_MATRIX_GET_NY(buffers[0]), ld = STARPU_MATRIX_GET_LD(buffers[0]);
	const float *v = (const float *)STARPU_VECTOR_GET_PTR(buffers[1]);
	float *out = (float *)STARPU_VECTOR_GET_PTR(buffers[2]);
	for (unsigned y = 0; y < ny; y++)
		for (unsigned x = 0; x < nx; x++)
			out[y] += scale * v[x] * m[y * ld + x];
}

#define CHECK(x) do { int _r = (x); if (_r) { fprintf(stderr, "%s failed: %d\n", #x, _r); exit(2); } } while (0)
#endif
