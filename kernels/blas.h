/* The matrix product of the batched kernels, for float and double.
 *
 * OpenBLAS, row-major.  StarPU already runs one worker per core, so
 * OpenBLAS must not start threads of its own inside a worker:
 * keep_blas_to_one_thread() is called before a kernel's first product. */
#ifndef STARPU_FUSING_KERNELS_BLAS_H
#define STARPU_FUSING_KERNELS_BLAS_H

#include <cblas.h>

#include <mutex>

namespace fusing {
namespace kernels {

/* C (m x n, ldc) = alpha * op(A) * op(B) + beta * C. */
inline void gemm(bool transpose_a, bool transpose_b, int m, int n, int k, float alpha, const float *a, int lda, const float *b,
		 int ldb, float beta, float *c, int ldc)
{
	cblas_sgemm(CblasRowMajor, transpose_a ? CblasTrans : CblasNoTrans, transpose_b ? CblasTrans : CblasNoTrans, m, n, k, alpha,
		    a, lda, b, ldb, beta, c, ldc);
}

inline void gemm(bool transpose_a, bool transpose_b, int m, int n, int k, double alpha, const double *a, int lda, const double *b,
		 int ldb, double beta, double *c, int ldc)
{
	cblas_dgemm(CblasRowMajor, transpose_a ? CblasTrans : CblasNoTrans, transpose_b ? CblasTrans : CblasNoTrans, m, n, k, alpha,
		    a, lda, b, ldb, beta, c, ldc);
}

/* Any thread; sets OpenBLAS's thread count once per process. */
inline void keep_blas_to_one_thread()
{
	static std::once_flag once;
	std::call_once(once, [] { openblas_set_num_threads(1); });
}

} // namespace kernels
} // namespace fusing

#endif
