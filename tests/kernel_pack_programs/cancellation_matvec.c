/* A codelet named matrix_vector_product (DAHL's out += M v on float data,
 * outputs zeroed by the program) that accumulates each dot product in
 * double before rounding it to float once.  Round 0: well-conditioned data
 * (entries in [-1, 1]).  Round 1: each row of M alternates +-1e4 plus a
 * small part, so the results are sums of O(1e4) products with
 * cancellation (built with -DBIG=1e6f -DPAIRED=1: the BIG parts cancel
 * exactly and the results are O(1) sums of O(1e6) products).  Reference: the same sums in double on the host; an
 * output is wrong when it is off by more than 1e-3 * (1 + |exact|). */
#include "common.h"

#define N 64
#define T 64
#ifndef BIG
#define BIG 1e4f   /* the +-BIG part of round 1's matrix */
#endif
#ifndef PAIRED
#define PAIRED 0   /* 1: v[2k+1] = v[2k], so the BIG parts cancel exactly */
#endif

static void mv_double_accumulate(void *buffers[], void *arg)
{
	(void)arg;
	const float *m = (const float *)STARPU_MATRIX_GET_PTR(buffers[0]);
	unsigned nx = STARPU_MATRIX_GET_NX(buffers[0]), ny = STARPU_MATRIX_GET_NY(buffers[0]), ld = STARPU_MATRIX_GET_LD(buffers[0]);
	const float *v = (const float *)STARPU_VECTOR_GET_PTR(buffers[1]);
	float *out = (float *)STARPU_VECTOR_GET_PTR(buffers[2]);
	for (unsigned y = 0; y < ny; y++) {
		double s = 0;
		for (unsigned x = 0; x < nx; x++)
			s += (double)v[x] * (double)m[y * ld + x];
		out[y] += (float)s;
	}
}

static struct starpu_codelet cl = {
	.cpu_funcs = {mv_double_accumulate},
	.nbuffers = 3,
	.modes = {STARPU_R, STARPU_R, STARPU_W},
	.name = "matrix_vector_product",
};

static float M[2][N * N], V[2][T][N], OUT[2][T][N];

int main(void)
{
	unsigned seed = 3;
	for (int i = 0; i < N * N; i++) M[0][i] = frand(&seed);
	for (int y = 0; y < N; y++)
		for (int x = 0; x < N; x++)
			M[1][y * N + x] = (x % 2 ? -BIG : BIG) + (float)frand(&seed);
	for (int r = 0; r < 2; r++)
		for (int t = 0; t < T; t++)
			for (int i = 0; i < N; i++)
				V[r][t][i] = r == 0 ? frand(&seed) : PAIRED && i % 2 ? V[r][t][i - 1] : 1.0f + 1e-3f * (float)frand(&seed);
	memset(OUT, 0, sizeof(OUT));
	CHECK(starpu_init(NULL));
	starpu_data_handle_t hm[2], hv[2][T], ho[2][T];
	for (int r = 0; r < 2; r++) {
		starpu_matrix_data_register(&hm[r], STARPU_MAIN_RAM, (uintptr_t)M[r], N, N, N, sizeof(float));
		for (int t = 0; t < T; t++) {
			starpu_vector_data_register(&hv[r][t], STARPU_MAIN_RAM, (uintptr_t)V[r][t], N, sizeof(float));
			starpu_vector_data_register(&ho[r][t], STARPU_MAIN_RAM, (uintptr_t)OUT[r][t], N, sizeof(float));
		}
	}
	for (int r = 0; r < 2; r++) {
		for (int t = 0; t < T; t++)
			CHECK(starpu_task_insert(&cl, STARPU_R, hm[r], STARPU_R, hv[r][t], STARPU_W, ho[r][t], 0));
		starpu_task_wait_for_all();
	}
	for (int r = 0; r < 2; r++) {
		starpu_data_unregister(hm[r]);
		for (int t = 0; t < T; t++) { starpu_data_unregister(hv[r][t]); starpu_data_unregister(ho[r][t]); }
	}
	starpu_shutdown();
	int wrong = 0; double maxerr = 0, maxexact = 0;
	for (int r = 0; r < 2; r++)
		for (int t = 0; t < T; t++)
			for (int y = 0; y < N; y++) {
				double s = 0;
				for (int x = 0; x < N; x++) s += (double)V[r][t][x] * M[r][y * N + x];
				double e = fabs(OUT[r][t][y] - s);
				if (e > maxerr) maxerr = e;
				if (r == 1 && fabs(s) > maxexact) maxexact = fabs(s);
				if (e > 1e-3 * (1 + fabs(s))) wrong++;
			}
	printf("RESULT %s: %d of %d outputs wrong, max abs error %.3g (largest |exact| result of round 1: %.3g)\n", wrong ? "WRONG" : "OK",
	       wrong, 2 * T * N, maxerr, maxexact);
	return wrong != 0;
}
