/* A codelet named matrix_vector_product (out += g_scale * M v, outputs
 * zeroed) whose scale is a global variable the program sets between
 * phases, with no task in flight (after starpu_task_wait_for_all).
 * Phase 1: g_scale = 1 (what the entry computes).  Phase 2: g_scale = 0.5. */
#include "common.h"

#define N 64
#define T 64

static volatile float g_scale = 1.0f;

static void mv_global_scale(void *buffers[], void *arg)
{
	(void)arg;
	const float s = g_scale;
	float_matvec_accumulate(buffers, s);
}

static struct starpu_codelet cl = {
	.cpu_funcs = {mv_global_scale},
	.nbuffers = 3,
	.modes = {STARPU_R, STARPU_R, STARPU_W},
	.name = "matrix_vector_product",
};

static float M[N * N], V[2][T][N], OUT[2][T][N];

int main(void)
{
	const float scales[2] = {1.0f, 0.5f};
	unsigned seed = 13;
	for (int i = 0; i < N * N; i++) M[i] = frand(&seed);
	for (int r = 0; r < 2; r++) for (int t = 0; t < T; t++) for (int i = 0; i < N; i++) V[r][t][i] = frand(&seed);
	memset(OUT, 0, sizeof(OUT));
	CHECK(starpu_init(NULL));
	starpu_data_handle_t hm, hv[2][T], ho[2][T];
	starpu_matrix_data_register(&hm, STARPU_MAIN_RAM, (uintptr_t)M, N, N, N, sizeof(float));
	for (int r = 0; r < 2; r++)
		for (int t = 0; t < T; t++) {
			starpu_vector_data_register(&hv[r][t], STARPU_MAIN_RAM, (uintptr_t)V[r][t], N, sizeof(float));
			starpu_vector_data_register(&ho[r][t], STARPU_MAIN_RAM, (uintptr_t)OUT[r][t], N, sizeof(float));
		}
	for (int r = 0; r < 2; r++) {
		g_scale = scales[r];
		for (int t = 0; t < T; t++)
			CHECK(starpu_task_insert(&cl, STARPU_R, hm, STARPU_R, hv[r][t], STARPU_W, ho[r][t], 0));
		starpu_task_wait_for_all();
	}
	starpu_data_unregister(hm);
	for (int r = 0; r < 2; r++) for (int t = 0; t < T; t++) { starpu_data_unregister(hv[r][t]); starpu_data_unregister(ho[r][t]); }
	starpu_shutdown();
	int wrong = 0; double maxerr = 0;
	for (int r = 0; r < 2; r++)
		for (int t = 0; t < T; t++)
			for (int y = 0; y < N; y++) {
				double s = 0;
				for (int x = 0; x < N; x++) s += (double)V[r][t][x] * M[y * N + x];
				s *= scales[r];
				double e = fabs(OUT[r][t][y] - s);
				if (e > maxerr) maxerr = e;
				if (e > 1e-3 * (1 + fabs(s))) wrong++;
			}
	printf("RESULT %s: %d of %d outputs wrong, max abs error %.3g\n", wrong ? "WRONG" : "OK", wrong, 2 * T * N, maxerr);
	return wrong != 0;
}
