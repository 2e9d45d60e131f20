/* Convolution kernels for the granularity experiment and for programs with
 * DAHL-like layouts, each as a StarPU codelet (one task) and as a batched
 * implementation (starpu_fusing.h) for batches of those tasks.
 *
 * Layouts (StarPU interfaces):
 *   image   STARPU block  nx = width, ny = height, nz = channels (x fastest),
 *           or, for one channel, a STARPU matrix (nx = width, ny = height)
 *   filter  STARPU block  nx = kw, ny = kh, nz = channels, or a matrix
 *   output  STARPU matrix nx = width - kw + 1, ny = height - kh + 1
 *   bias    STARPU variable, one float
 * conv2d computes the valid cross-correlation
 *   out[y][x] = sum_c sum_v sum_u image[c][y + v][x + u] * filter[c][v][u]
 * (what DAHL's convolution_2d codelet computes for one sample and filter).
 *
 *   conv2d_codelet         R image, R filter, W output
 *   bias_add_codelet       RW output, R bias
 *   conv2d_bias_codelet    R image, R filter, R bias, W output
 *   conv2d_matrix_codelet  R image, R filter, W output, all STARPU matrices:
 *                          DAHL's own layout (its convolution forward pass
 *                          submits task_matrix_cross_correlation(input
 *                          matrix, filter sub-matrix, output sub-matrix) per
 *                          filter, the sub-matrices from blocks partitioned
 *                          along z); same batched implementation as conv2d
 *
 * Batched versions: conv2d and conv2d_bias run a batch's tasks through
 * kernels/cross_correlation.h (tasks sharing an image as one im2col copy
 * and one single-precision GEMM); bias_add stays a loop (memory-bound: a
 * GEMM would not help). */
#ifndef STARPU_FUSING_KERNELS_CONV2D_H
#define STARPU_FUSING_KERNELS_CONV2D_H

#include <starpu.h>

#ifdef __cplusplus
extern "C" {
#endif

extern struct starpu_codelet conv2d_codelet;
extern struct starpu_codelet bias_add_codelet;
extern struct starpu_codelet conv2d_bias_codelet;
extern struct starpu_codelet conv2d_matrix_codelet;

/* The batched implementations (signature of starpu_fusing_batched_cpu_func_t). */
void conv2d_batched(unsigned ntasks, void **task_buffers[], void *task_args[], void *batch_arg);
void bias_add_batched(unsigned ntasks, void **task_buffers[], void *task_args[], void *batch_arg);
void conv2d_bias_batched(unsigned ntasks, void **task_buffers[], void *task_args[], void *batch_arg);

/* Registers the batched implementations for the four codelets.  Returns 0
 * or the first error of starpu_fusing_register_batched. */
int conv2d_register_batched_kernels(void);

#ifdef __cplusplus
}
#endif

#endif
