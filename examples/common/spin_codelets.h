/* Codelet bodies shared by the examples' synthetic workloads: tasks that
 * busy-wait a chosen time, then do a trivial, checkable update. */
#ifndef STARPU_FUSING_EXAMPLES_SPIN_CODELETS_H
#define STARPU_FUSING_EXAMPLES_SPIN_CODELETS_H

#include <starpu.h>

/* Busy-waits for the duration (us, a double packed with STARPU_VALUE) in
 * the task's arguments. */
static inline void spin_as_asked(void *cl_arg)
{
	double us;
	starpu_codelet_unpack_args(cl_arg, &us);
	if (us > 0) {
		double start = starpu_timing_now();
		while (starpu_timing_now() - start < us)
			;
	}
}

/* One stencil cell: buffers are the left, centre and right cells of the
 * previous step (variables of unsigned) and the cell to write;
 * next = left + centre + right + 1 (unsigned: wraps, as the examples' host
 * checks do). */
static inline void spin_and_stencil(void *buffers[], void *cl_arg)
{
	spin_as_asked(cl_arg);
	unsigned sum = 1;
	for (int b = 0; b < 3; b++)
		sum += *(unsigned *)STARPU_VARIABLE_GET_PTR(buffers[b]);
	*(unsigned *)STARPU_VARIABLE_GET_PTR(buffers[3]) = sum;
}

/* The same stencil on the host, for checking: steps steps over two rows
 * of cells cells each (rows[0] holds step 0, as the programs register them). */
static inline void stencil_on_host(unsigned *rows[2], long cells, long steps)
{
	for (long t = 0; t < steps; t++) {
		const unsigned *in = rows[t % 2];
		unsigned *out = rows[(t + 1) % 2];
		for (long i = 0; i < cells; i++)
			out[i] = 1 + in[(i + cells - 1) % cells] + in[i] + in[(i + 1) % cells];
	}
}

#endif
