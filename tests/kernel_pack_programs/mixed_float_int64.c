/* One codelet named matrix_vector_product (DAHL's out += M v, outputs
 * zeroed by the program) that works on 4-byte floats and on 8-byte
 * int64_t, choosing by the element size.  ROUNDS rounds, each submitting
 * T float tasks and T int64 tasks interleaved (so that batches hold both)
 * and waiting for them; then one round of int64 tasks only.  Checks every
 * result (int64 exactly).  Built with -DUSE_DOUBLE, the 8-byte type is
 * double instead (a control: a codelet correct for both element types);
 * with -DNO_FLOAT, no float task is submitted (a control: int64 tasks
 * alone). */
#include "common.h"
#ifdef USE_DOUBLE
typedef double wide_t;
#define WIDE_ERR(a, b) (fabs((double)(a) - (double)(b)) > 1e-9 * (1 + fabs((double)(b))))
#else
typedef int64_t wide_t;
#define WIDE_ERR(a, b) ((a) != (b))
#endif

#define N 32
#define T 32
#define ROUNDS 6
#define TW (T * (ROUNDS + 1))   /* 8-byte tasks in all */

static void mv_generic(void *buffers[], void *arg)
{
	(void)arg;
	unsigned nx = STARPU_MATRIX_GET_NX(buffers[0]), ny = STARPU_MATRIX_GET_NY(buffers[0]), ld = STARPU_MATRIX_GET_LD(buffers[0]);
	if (STARPU_MATRIX_GET_ELEMSIZE(buffers[0]) == sizeof(float)) {
		const float *m = (const float *)STARPU_MATRIX_GET_PTR(buffers[0]);
		const float *v = (const float *)STARPU_VECTOR_GET_PTR(buffers[1]);
		float *out = (float *)STARPU_VECTOR_GET_PTR(buffers[2]);
		for (unsigned y = 0; y < ny; y++)
			for (unsigned x = 0; x < nx; x++)
				out[y] += v[x] * m[y * ld + x];
	} else {
		const wide_t *m = (const wide_t *)STARPU_MATRIX_GET_PTR(buffers[0]);
		const wide_t *v = (const wide_t *)STARPU_VECTOR_GET_PTR(buffers[1]);
		wide_t *out = (wide_t *)STARPU_VECTOR_GET_PTR(buffers[2]);
		for (unsigned y = 0; y < ny; y++)
			for (unsigned x = 0; x < nx; x++)
				out[y] += v[x] * m[y * ld + x];
	}
}

static struct starpu_codelet cl = {
	.cpu_funcs = {mv_generic},
	.nbuffers = 3,
	.modes = {STARPU_R, STARPU_R, STARPU_W},
	.name = "matrix_vector_product",
};

static float MF[N * N], VF[ROUNDS][T][N], OF[ROUNDS][T][N];
static wide_t MI[N * N], VI[TW][N], OI[TW][N];

int main(void)
{
	unsigned seed = 7;
	for (int i = 0; i < N * N; i++) { MF[i] = frand(&seed); MI[i] = (wide_t)(int)(10 * (frand(&seed) + 1)); }
	for (int r = 0; r < ROUNDS; r++) for (int t = 0; t < T; t++) for (int i = 0; i < N; i++) VF[r][t][i] = frand(&seed);
	for (int t = 0; t < TW; t++) for (int i = 0; i < N; i++) VI[t][i] = (wide_t)(int)(10 * (frand(&seed) + 1));
	CHECK(starpu_init(NULL));
	starpu_data_handle_t hmf, hmi, hvf[ROUNDS][T], hof[ROUNDS][T], hvi[TW], hoi[TW];
	starpu_matrix_data_register(&hmf, STARPU_MAIN_RAM, (uintptr_t)MF, N, N, N, sizeof(float));
	starpu_matrix_data_register(&hmi, STARPU_MAIN_RAM, (uintptr_t)MI, N, N, N, sizeof(wide_t));
	for (int r = 0; r < ROUNDS; r++) for (int t = 0; t < T; t++) {
		starpu_vector_data_register(&hvf[r][t], STARPU_MAIN_RAM, (uintptr_t)VF[r][t], N, sizeof(float));
		starpu_vector_data_register(&hof[r][t], STARPU_MAIN_RAM, (uintptr_t)OF[r][t], N, sizeof(float));
	}
	for (int t = 0; t < TW; t++) {
		starpu_vector_data_register(&hvi[t], STARPU_MAIN_RAM, (uintptr_t)VI[t], N, sizeof(wide_t));
		starpu_vector_data_register(&hoi[t], STARPU_MAIN_RAM, (uintptr_t)OI[t], N, sizeof(wide_t));
	}
	for (int r = 0; r <= ROUNDS; r++) {
		for (int t = 0; t < T; t++) {
#ifndef NO_FLOAT
			if (r < ROUNDS)
				CHECK(starpu_task_insert(&cl, STARPU_R, hmf, STARPU_R, hvf[r][t], STARPU_W, hof[r][t], 0));
#endif
			CHECK(starpu_task_insert(&cl, STARPU_R, hmi, STARPU_R, hvi[r * T + t], STARPU_W, hoi[r * T + t], 0));
		}
		starpu_task_wait_for_all();
	}
	starpu_data_unregister(hmf); starpu_data_unregister(hmi);
	for (int r = 0; r < ROUNDS; r++) for (int t = 0; t < T; t++) { starpu_data_unregister(hvf[r][t]); starpu_data_unregister(hof[r][t]); }
	for (int t = 0; t < TW; t++) { starpu_data_unregister(hvi[t]); starpu_data_unregister(hoi[t]); }
	starpu_shutdown();
	int wrong = 0, wrong_f = 0; double maxerr = 0;
	for (int t = 0; t < TW; t++)
		for (int y = 0; y < N; y++) {
			wide_t s = 0;
			for (int x = 0; x < N; x++) s += VI[t][x] * MI[y * N + x];
			double e = fabs((double)OI[t][y] - (double)s);
			if (e > maxerr) maxerr = e;
			if (WIDE_ERR(OI[t][y], s)) wrong++;
		}
#ifndef NO_FLOAT
	for (int r = 0; r < ROUNDS; r++) for (int t = 0; t < T; t++)
		for (int y = 0; y < N; y++) {
			double s = 0;
			for (int x = 0; x < N; x++) s += (double)VF[r][t][x] * MF[y * N + x];
			if (fabs(OF[r][t][y] - s) > 1e-3 * (1 + fabs(s))) wrong_f++;
		}
#endif
	printf("RESULT %s: %d of %d 8-byte outputs wrong (max abs error %g), %d float outputs wrong\n", wrong + wrong_f ? "WRONG" : "OK",
	       wrong, TW * N, maxerr, wrong_f);
	return wrong + wrong_f != 0;
}
