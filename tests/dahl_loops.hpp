/* DAHL's CPU codelet functions (github PhoqueEberlue/dahl at 052cb67,
 * src/tasks/cpu/{ml,matrix,vector}.c), transcribed for the tests of the
 * kernel pack: what the pack's entries must compute.  Plus one function
 * with the shape of DAHL's convolution_2d and other arithmetic, to plant. */
#ifndef STARPU_FUSING_TESTS_DAHL_LOOPS_HPP
#define STARPU_FUSING_TESTS_DAHL_LOOPS_HPP

#include <starpu.h>

#include <cstddef>

/* A grid read the way DAHL's codelets read STARPU_BLOCK_GET or
 * STARPU_MATRIX_GET (a matrix: nz = 1). */
template <typename T>
struct Dahl {
	T *p;
	unsigned nx, ny, nz, ldy, ldz;
	explicit Dahl(void *interface)
	{
		if (*static_cast<enum starpu_data_interface_id *>(interface) == STARPU_MATRIX_INTERFACE_ID) {
			auto *m = static_cast<struct starpu_matrix_interface *>(interface);
			*this = Dahl{reinterpret_cast<T *>(m->ptr), m->nx, m->ny, 1, m->ld, m->ld * m->ny};
		} else if (*static_cast<enum starpu_data_interface_id *>(interface) == STARPU_BLOCK_INTERFACE_ID) {
			auto *b = static_cast<struct starpu_block_interface *>(interface);
			*this = Dahl{reinterpret_cast<T *>(b->ptr), b->nx, b->ny, b->nz, b->ldy, b->ldz};
		} else {
			auto *v = static_cast<struct starpu_vector_interface *>(interface);
			*this = Dahl{reinterpret_cast<T *>(v->ptr), v->nx, 1, 1, v->nx, v->nx};
		}
	}
	Dahl(T *ptr, unsigned x, unsigned y, unsigned z, unsigned ly, unsigned lz) : p(ptr), nx(x), ny(y), nz(z), ldy(ly), ldz(lz) {}
};

/* convolution_2d (ml.c) and, for one channel, matrix_cross_correlation (matrix.c). */
template <typename T>
void dahl_convolution_2d(void **buffers)
{
	Dahl<T> in(buffers[0]), ker(buffers[1]), out(buffers[2]);
	for (size_t j = 0; j < out.ny; j++)
		for (size_t i = 0; i < out.nx; i++) {
			T cell_res = 0.0F;
			for (size_t m = 0; m < ker.nz; m++)
				for (size_t l = 0; l < ker.ny; l++)
					for (size_t k = 0; k < ker.nx; k++)
						cell_res += in.p[(m * in.ldz) + ((l + j) * in.ldy) + k + i] * ker.p[(m * ker.ldz) + (l * ker.ldy) + k];
			out.p[(j * out.ldy) + i] = cell_res;
		}
}

/* convolution_2d_backward_filters (ml.c) */
template <typename T>
void dahl_convolution_2d_backward_filters(void **buffers)
{
	Dahl<T> in(buffers[0]), ker(buffers[1]), out(buffers[2]);
	for (size_t k = 0; k < out.nz; k++)
		for (size_t j = 0; j < out.ny; j++)
			for (size_t i = 0; i < out.nx; i++) {
				T cell_res = 0.0F;
				for (size_t m = 0; m < ker.ny; m++)
					for (size_t l = 0; l < ker.nx; l++)
						cell_res += in.p[(k * in.ldz) + ((m + j) * in.ldy) + l + i] * ker.p[(m * ker.ldy) + l];
				out.p[(k * out.ldz) + (j * out.ldy) + i] += cell_res;
			}
}

/* matrix_vector_product (matrix.c) */
template <typename T>
void dahl_matrix_vector_product(void **buffers)
{
	Dahl<T> mat(buffers[0]), vec(buffers[1]), out(buffers[2]);
	for (size_t y = 0; y < mat.ny; y++)
		for (size_t x = 0; x < mat.nx; x++)
			out.p[y] += vec.p[x] * mat.p[(y * mat.ldy) + x];
}

/* vector_matrix_product (vector.c) */
template <typename T>
void dahl_vector_matrix_product(void **buffers)
{
	Dahl<T> vec(buffers[0]), mat(buffers[1]), out(buffers[2]);
	for (size_t y = 0; y < mat.ny; y++)
		for (size_t x = 0; x < mat.nx; x++)
			out.p[x] += vec.p[y] * mat.p[(y * mat.ldy) + x];
}

/* Correlation with the filter turned by 180 degrees: a convolution, the
 * kind of different arithmetic a codelet of the same name may have. */
template <typename T>
void convolution_not_correlation(void **buffers)
{
	Dahl<T> in(buffers[0]), ker(buffers[1]), out(buffers[2]);
	for (size_t j = 0; j < out.ny; j++)
		for (size_t i = 0; i < out.nx; i++) {
			T sum = 0;
			for (size_t l = 0; l < ker.ny; l++)
				for (size_t k = 0; k < ker.nx; k++)
					sum += in.p[(l + j) * in.ldy + k + i] * ker.p[(ker.ny - 1 - l) * ker.ldy + (ker.nx - 1 - k)];
			out.p[j * out.ldy + i] = sum;
		}
}

#endif
