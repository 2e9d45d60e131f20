/* A codelet named matrix_vector_product whose output is STARPU_W and which
 * OVERWRITES it (out = M v): correct StarPU semantics (W = contents
 * undefined on entry).  The pack's entry accumulates (out += M v).
 * Round 0 writes fresh zero outputs (verification agrees); later rounds
 * reuse the same output handles, which now hold the previous round's
 * results. */
#include "common.h"

#define N 64     /* matrix is N x N */
#define T 64     /* tasks per round */
#ifndef ROUNDS
#define ROUNDS 3
#endif

static void mv_overwrite(void *buffers[], void *arg)
{
	(void)arg;
	const float *m = (const float *)STARPU_MATRIX_GET_PTR(buffers[0]);
	unsigned nx = STARPU_MATRIX_GET_NX(buffers[0]), ny = STARPU_MATRIX_GET_NY(buffers[0]), ld = STARPU_MATRIX_GET_LD(buffers[0]);
	const float *v = (const float *)STARPU_VECTOR_GET_PTR(buffers[1]);
	float *out = (float *)STARPU_VECTOR_GET_PTR(buffers[2]);
	for (unsigned y = 0; y < ny; y++) {
		float s = 0;
		for (unsigned x = 0; x < nx; x++)
			s += m[y * ld + x] * v[x];
		out[y] = s;
	}
}

#ifndef TWO_IMPLS
#define TWO_IMPLS 0 /* 1: the codelet also has a second CPU implementation (the same function) */
#endif
static struct starpu_codelet cl = {
#if TWO_IMPLS
	.cpu_funcs = {mv_overwrite, mv_overwrite},
#else
	.cpu_funcs = {mv_overwrite},
#endif
	.nbuffers = 3,
	.modes = {STARPU_R, STARPU_R, STARPU_W},
	.name = "matrix_vector_product",
};

static float M[N * N], V[ROUNDS][T][N], OUT[T][N];

int main(void)
{
	unsigned seed = 1;
	for (int i = 0; i < N * N; i++) M[i] = frand(&seed);
	for (int r = 0; r < ROUNDS; r++)
		for (int t = 0; t < T; t++)
			for (int i = 0; i < N; i++) V[r][t][i] = frand(&seed);
	memset(OUT, 0, sizeof(OUT));
	CHECK(starpu_init(NULL));
	starpu_data_handle_t hm, hv[ROUNDS][T], ho[T];
	starpu_matrix_data_register(&hm, STARPU_MAIN_RAM, (uintptr_t)M, N, N, N, sizeof(float));
	for (int t = 0; t < T; t++) {
		starpu_vector_data_register(&ho[t], STARPU_MAIN_RAM, (uintptr_t)OUT[t], N, sizeof(float));
		for (int r = 0; r < ROUNDS; r++)
			starpu_vector_data_register(&hv[r][t], STARPU_MAIN_RAM, (uintptr_t)V[r][t], N, sizeof(float));
	}
	for (int r = 0; r < ROUNDS; r++) {
		for (int t = 0; t < T; t++)
			CHECK(starpu_task_insert(&cl, STARPU_R, hm, STARPU_R, hv[r][t], STARPU_W, ho[t], 0));
		starpu_task_wait_for_all();
	}
	starpu_data_unregister(hm);
	for (int t = 0; t < T; t++) {
		starpu_data_unregister(ho[t]);
		for (int r = 0; r < ROUNDS; r++) starpu_data_unregister(hv[r][t]);
	}
	starpu_shutdown();
	int wrong = 0;
	double maxerr = 0;
	for (int t = 0; t < T; t++)
		for (int y = 0; y < N; y++) {
			double s = 0;
			for (int x = 0; x < N; x++) s += (double)M[y * N + x] * V[ROUNDS - 1][t][x];
			double e = fabs(OUT[t][y] - s);
			if (e > maxerr) maxerr = e;
			if (e > 1e-3 * (1 + fabs(s))) wrong++;
		}
	printf("RESULT %s: %d of %d outputs wrong, max abs error %.3g\n", wrong ? "WRONG" : "OK", wrong, T * N, maxerr);
	return wrong != 0;
}
