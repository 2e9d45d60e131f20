/* Products of many vectors with one matrix, as one matrix product
 * (blas.h), for float and double: a dense layer's forward and backward
 * passes written one task per sample.
 *
 *   matrix-vector:  out_t[y] += sum_x matrix[y][x] * vector_t[x]
 *   vector-matrix:  out_t[x] += sum_y vector_t[y] * matrix[y][x]
 *
 * Both accumulate into the outputs, as the codelets they replace do (a
 * program's output buffer starting at zero gets the product).  The vectors
 * are stacked into one matrix, multiplied once, and the rows added to the
 * outputs: the sums run in another order than the plain loops, so results
 * differ from them by rounding only.  matrix is a grid (views.h) of one
 * plane with any row stride. */
#ifndef STARPU_FUSING_KERNELS_DENSE_H
#define STARPU_FUSING_KERNELS_DENSE_H

#include "kernels/views.h"

#include <vector>

namespace fusing {
namespace kernels {

/* vectors[t].n = matrix.nx, outputs[t].n = matrix.ny. */
template <typename T>
void accumulate_matrix_vector_products(const Grid<T> &matrix, const std::vector<Vector<T>> &vectors,
				       const std::vector<Vector<T>> &outputs);

/* vectors[t].n = matrix.ny, outputs[t].n = matrix.nx. */
template <typename T>
void accumulate_vector_matrix_products(const Grid<T> &matrix, const std::vector<Vector<T>> &vectors,
				       const std::vector<Vector<T>> &outputs);

/* Batches of tasks (starpu_fusing.h's task_buffers) computing one product
 * each, with buffer indices naming the task's matrix, vector and output:
 * tasks sharing a matrix run as one call above, lone ones in plain loops
 * (summing into the output element by element, in the order of the
 * formulas above). */
template <typename T>
void matrix_vector_product_tasks(unsigned ntasks, void **task_buffers[], int matrix_index, int vector_index, int output_index);
template <typename T>
void vector_matrix_product_tasks(unsigned ntasks, void **task_buffers[], int vector_index, int matrix_index, int output_index);

} // namespace kernels
} // namespace fusing

#endif
