/* A read-only Hankel matrix H[y][x] = a[x + y] registered as a StarPU
 * matrix view of a vector with ld = 1 < nx (StarPU 1.3 accepts it), and
 * DAHL's matrix_vector_product (out += H v, outputs zeroed) on T vectors,
 * in ROUNDS rounds.  Checks every output against the host. */
#include "common.h"

#define N 32
#define T 64
#define ROUNDS 3

static void mv(void *buffers[], void *arg)
{
	(void)arg;
	float_matvec_accumulate(buffers, 1.0f);
}
static struct starpu_codelet cl = {.cpu_funcs = {mv}, .nbuffers = 3, .modes = {STARPU_R, STARPU_R, STARPU_W}, .name = "matrix_vector_product"};

static float A[2 * N], V[ROUNDS][T][N], OUT[ROUNDS][T][N];

int main(void)
{
#if STARPU_MAJOR_VERSION > 1 || (STARPU_MAJOR_VERSION == 1 && STARPU_MINOR_VERSION >= 4)
	/* StarPU 1.4 refuses such a matrix at registration (ld >= nx). */
	printf("RESULT SKIP: StarPU %d.%d refuses a matrix whose ld is below its width\n", STARPU_MAJOR_VERSION, STARPU_MINOR_VERSION);
	return 77;
#endif
	unsigned seed = 41;
	for (int i = 0; i < 2 * N; i++) A[i] = frand(&seed);
	for (int r = 0; r < ROUNDS; r++) for (int t = 0; t < T; t++) for (int i = 0; i < N; i++) V[r][t][i] = frand(&seed);
	memset(OUT, 0, sizeof(OUT));
	CHECK(starpu_init(NULL));
	starpu_data_handle_t hh, hv[ROUNDS][T], ho[ROUNDS][T];
	starpu_matrix_data_register(&hh, STARPU_MAIN_RAM, (uintptr_t)A, 1, N, N, sizeof(float));
	for (int r = 0; r < ROUNDS; r++) for (int t = 0; t < T; t++) {
		starpu_vector_data_register(&hv[r][t], STARPU_MAIN_RAM, (uintptr_t)V[r][t], N, sizeof(float));
		starpu_vector_data_register(&ho[r][t], STARPU_MAIN_RAM, (uintptr_t)OUT[r][t], N, sizeof(float));
	}
	for (int r = 0; r < ROUNDS; r++) {
		for (int t = 0; t < T; t++) CHECK(starpu_task_insert(&cl, STARPU_R, hh, STARPU_R, hv[r][t], STARPU_W, ho[r][t], 0));
		starpu_task_wait_for_all();
	}
	starpu_data_unregister(hh);
	for (int r = 0; r < ROUNDS; r++) for (int t = 0; t < T; t++) { starpu_data_unregister(hv[r][t]); starpu_data_unregister(ho[r][t]); }
	starpu_shutdown();
	int wrong = 0; double maxerr = 0;
	for (int r = 0; r < ROUNDS; r++) for (int t = 0; t < T; t++) for (int y = 0; y < N; y++) {
		double s = 0;
		for (int x = 0; x < N; x++) s += (double)V[r][t][x] * A[x + y];
		double e = fabs(OUT[r][t][y] - s);
		if (e > maxerr) maxerr = e;
		if (e > 1e-3 * (1 + fabs(s))) wrong++;
	}
	printf("RESULT %s: %d of %d outputs wrong, max abs error %.3g\n", wrong ? "WRONG" : "OK", wrong, ROUNDS * T * N, maxerr);
	return wrong != 0;
}
