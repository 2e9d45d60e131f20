/* Matrix products of stacked vectors; see dense.h. */
#include "kernels/dense.h"

#include "kernels/blas.h"
#include "kernels/task_groups.h"

#include <cstring>

namespace fusing {
namespace kernels {
namespace {

/* Stacks the vectors (each of length n) into rows, multiplies the stack by
 * the matrix (transposed or not) into outputs of length out_n each, and
 * adds each product row to its output. */
template <typename T>
void accumulate_stacked_products(const Grid<T> &matrix, bool transpose_matrix, unsigned n, unsigned out_n,
				 const std::vector<Vector<T>> &vectors, const std::vector<Vector<T>> &outputs)
{
	keep_blas_to_one_thread();
	const unsigned count = static_cast<unsigned>(vectors.size());
	/* Thread-local scratch: one worker runs one batch at a time. */
	thread_local std::vector<T> stacked, products;
	stacked.resize(std::size_t(count) * n);
	products.resize(std::size_t(count) * out_n);
	for (unsigned t = 0; t < count; t++)
		std::memcpy(&stacked[std::size_t(t) * n], vectors[t].ptr, n * sizeof(T));
	gemm(false, transpose_matrix, static_cast<int>(count), static_cast<int>(out_n), static_cast<int>(n), T(1), stacked.data(),
	     static_cast<int>(n), matrix.ptr, static_cast<int>(matrix.ldy), T(0), products.data(), static_cast<int>(out_n));
	for (unsigned t = 0; t < count; t++) {
		const T *product = &products[std::size_t(t) * out_n];
		for (unsigned i = 0; i < out_n; i++)
			outputs[t].ptr[i] += product[i];
	}
}

} // namespace

template <typename T>
void accumulate_matrix_vector_products(const Grid<T> &matrix, const std::vector<Vector<T>> &vectors,
				       const std::vector<Vector<T>> &outputs)
{
	/* (count x nx) by matrix^T (nx x ny). */
	accumulate_stacked_products(matrix, true, matrix.nx, matrix.ny, vectors, outputs);
}

template <typename T>
void accumulate_vector_matrix_products(const Grid<T> &matrix, const std::vector<Vector<T>> &vectors,
				       const std::vector<Vector<T>> &outputs)
{
	/* (count x ny) by matrix (ny x nx). */
	accumulate_stacked_products(matrix, false, matrix.ny, matrix.nx, vectors, outputs);
}

namespace {

/* Runs each group of tasks sharing a matrix through shared_product, lone
 * tasks through plain_product (both take the matrix, then vectors and
 * outputs). */
template <typename T, typename Shared, typename Plain>
void product_tasks(unsigned ntasks, void **task_buffers[], int matrix_index, int vector_index, int output_index,
		   Shared shared_product, Plain plain_product)
{
	auto matrix_of = [&](unsigned t) { return grid_of<T>(task_buffers[t][matrix_index]); };
	auto groups = group_tasks(ntasks, [&](unsigned t) { return grid_key(matrix_of(t)); });
	for (const std::vector<unsigned> &group : groups) {
		std::vector<Vector<T>> vectors, outputs;
		for (unsigned t : group) {
			vectors.push_back(vector_of<T>(task_buffers[t][vector_index]));
			outputs.push_back(vector_of<T>(task_buffers[t][output_index]));
		}
		if (group.size() < kSmallestSharedProduct)
			for (std::size_t t = 0; t < group.size(); t++)
				plain_product(matrix_of(group.front()), vectors[t], outputs[t]);
		else
			shared_product(matrix_of(group.front()), vectors, outputs);
	}
}

} // namespace

template <typename T>
void matrix_vector_product_tasks(unsigned ntasks, void **task_buffers[], int matrix_index, int vector_index, int output_index)
{
	product_tasks<T>(ntasks, task_buffers, matrix_index, vector_index, output_index, accumulate_matrix_vector_products<T>,
			 [](const Grid<T> &matrix, const Vector<T> &vector, const Vector<T> &output) {
				 for (unsigned y = 0; y < matrix.ny; y++)
					 for (unsigned x = 0; x < matrix.nx; x++)
						 output.ptr[y] += vector.ptr[x] * matrix.at(0, y, x);
			 });
}

template <typename T>
void vector_matrix_product_tasks(unsigned ntasks, void **task_buffers[], int vector_index, int matrix_index, int output_index)
{
	product_tasks<T>(ntasks, task_buffers, matrix_index, vector_index, output_index, accumulate_vector_matrix_products<T>,
			 [](const Grid<T> &matrix, const Vector<T> &vector, const Vector<T> &output) {
				 for (unsigned y = 0; y < matrix.ny; y++)
					 for (unsigned x = 0; x < matrix.nx; x++)
						 output.ptr[x] += vector.ptr[y] * matrix.at(0, y, x);
			 });
}

#define FUSING_INSTANTIATE(T)                                                                                                 \
	template void accumulate_matrix_vector_products<T>(const Grid<T> &, const std::vector<Vector<T>> &,                    \
							   const std::vector<Vector<T>> &);                                   \
	template void accumulate_vector_matrix_products<T>(const Grid<T> &, const std::vector<Vector<T>> &,                    \
							   const std::vector<Vector<T>> &);                                   \
	template void matrix_vector_product_tasks<T>(unsigned, void **[], int, int, int);                                      \
	template void vector_matrix_product_tasks<T>(unsigned, void **[], int, int, int);
FUSING_INSTANTIATE(float)
FUSING_INSTANTIATE(double)
#undef FUSING_INSTANTIATE

} // namespace kernels
} // namespace fusing
