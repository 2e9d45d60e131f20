/* A codelet named matrix_vector_product (DAHL's out += M v, outputs
 * zeroed) that also records something outside its buffers: it counts, in
 * a global atomic counter, the output elements that came out negative (a
 * program's statistics, a loss, a NaN check...).  Checks the outputs and
 * the counter against the host. */
#include "common.h"

#define N 64
#define T 256

static long negatives; /* updated with __atomic builtins */

static void mv_and_count(void *buffers[], void *arg)
{
	(void)arg;
	const float *m = (const float *)STARPU_MATRIX_GET_PTR(buffers[0]);
	unsigned nx = STARPU_MATRIX_GET_NX(buffers[0]), ny = STARPU_MATRIX_GET_NY(buffers[0]), ld = STARPU_MATRIX_GET_LD(buffers[0]);
	const float *v = (const float *)STARPU_VECTOR_GET_PTR(buffers[1]);
	float *out = (float *)STARPU_VECTOR_GET_PTR(buffers[2]);
	long neg = 0;
	for (unsigned y = 0; y < ny; y++) {
		for (unsigned x = 0; x < nx; x++)
			out[y] += v[x] * m[y * ld + x];
		neg += out[y] < 0;
	}
	__atomic_add_fetch(&negatives, neg, __ATOMIC_RELAXED);
}

static struct starpu_codelet cl = {
	.cpu_funcs = {mv_and_count},
	.nbuffers = 3,
	.modes = {STARPU_R, STARPU_R, STARPU_W},
	.name = "matrix_vector_product",
};

static float M[N * N], V[T][N], OUT[T][N];

int main(void)
{
	unsigned seed = 17;
	for (int i = 0; i < N * N; i++) M[i] = frand(&seed);
	for (int t = 0; t < T; t++) for (int i = 0; i < N; i++) V[t][i] = frand(&seed);
	memset(OUT, 0, sizeof(OUT));
	CHECK(starpu_init(NULL));
	starpu_data_handle_t hm, hv[T], ho[T];
	starpu_matrix_data_register(&hm, STARPU_MAIN_RAM, (uintptr_t)M, N, N, N, sizeof(float));
	for (int t = 0; t < T; t++) {
		starpu_vector_data_register(&hv[t], STARPU_MAIN_RAM, (uintptr_t)V[t], N, sizeof(float));
		starpu_vector_data_register(&ho[t], STARPU_MAIN_RAM, (uintptr_t)OUT[t], N, sizeof(float));
	}
	for (int t = 0; t < T; t++)
		CHECK(starpu_task_insert(&cl, STARPU_R, hm, STARPU_R, hv[t], STARPU_W, ho[t], 0));
	starpu_task_wait_for_all();
	starpu_data_unregister(hm);
	for (int t = 0; t < T; t++) { starpu_data_unregister(hv[t]); starpu_data_unregister(ho[t]); }
	starpu_shutdown();
	int wrong = 0; long expected_neg = 0;
	for (int t = 0; t < T; t++)
		for (int y = 0; y < N; y++) {
			double s = 0;
			for (int x = 0; x < N; x++) s += (double)V[t][x] * M[y * N + x];
			expected_neg += OUT[t][y] < 0;
			if (fabs(OUT[t][y] - s) > 1e-3 * (1 + fabs(s))) wrong++;
		}
	int bad = wrong || negatives != expected_neg;
	printf("RESULT %s: %d of %d outputs wrong; negative-output counter %ld, expected %ld\n", bad ? "WRONG" : "OK", wrong, T * N,
	       negatives, expected_neg);
	return bad;
}
