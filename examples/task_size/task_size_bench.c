/* task_size_bench: many small tasks of a chosen duration, in a chosen shape.
 *
 *   task_size_bench -shape independent|chains|shared-read|stencil -tasks N -us D [-chains C]
 *
 * independent: N tasks, each writing its own variable.
 * shared-read: N tasks reading one shared variable, counting their runs in
 *              an atomic counter: independent tasks without one data
 *              registration per task (what the instruction count measures).
 * chains:      C chains of N/C tasks; the tasks of one chain read-write the
 *              same variable, so each waits for the previous one.
 * stencil:     a periodic 1-D stencil C cells wide (C >= 3), N/C steps, as in
 *              Task Bench: the task of cell i at step t reads cells i-1, i,
 *              i+1 of step t-1 and writes cell i of step t (two rows of
 *              variables, so StarPU orders reads before overwrites too).
 * Each task spins for D microseconds (D = 0: no-op) and updates its
 * variable.  The program checks every variable against a host computation,
 * then prints one CSV line:
 *   shape,us,tasks,seconds,workers
 * (time from the first submission to the end of starpu_task_wait_for_all;
 * workers: StarPU's CPU workers, for the ideal time tasks * D / workers).
 * It uses whatever policy STARPU_SCHED selects: run it with
 * starpu-fusing-run to use `fusing`. */
#include "examples/common/spin_codelets.h"

#include <starpu.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void spin_and_increment(void *buffers[], void *cl_arg)
{
	spin_as_asked(cl_arg);
	unsigned *counter = (unsigned *)STARPU_VARIABLE_GET_PTR(buffers[0]);
	(*counter)++;
}

static unsigned long shared_read_runs;

static void spin_and_count(void *buffers[], void *cl_arg)
{
	(void)buffers;
	spin_as_asked(cl_arg);
	__atomic_add_fetch(&shared_read_runs, 1, __ATOMIC_RELAXED);
}

static struct starpu_codelet stencil_codelet = {
	.cpu_funcs = {spin_and_stencil},
	.nbuffers = 4,
	.modes = {STARPU_R, STARPU_R, STARPU_R, STARPU_W},
	.name = "stencil",
};

static struct starpu_codelet read_codelet = {
	.cpu_funcs = {spin_and_count},
	.nbuffers = 1,
	.modes = {STARPU_R},
	.name = "spin_read",
};

static struct starpu_codelet spin_codelet = {
	.cpu_funcs = {spin_and_increment},
	.nbuffers = 1,
	.modes = {STARPU_RW},
	.name = "spin",
};

/* The stencil shape: width cells, steps steps; returns the exit status. */
static int run_stencil(long width, long steps, double us)
{
	unsigned *rows[2] = {calloc(width, sizeof(unsigned)), calloc(width, sizeof(unsigned))};
	unsigned *expected[2] = {calloc(width, sizeof(unsigned)), calloc(width, sizeof(unsigned))};
	starpu_data_handle_t *handles[2] = {malloc(width * sizeof(starpu_data_handle_t)), malloc(width * sizeof(starpu_data_handle_t))};
	for (int r = 0; r < 2; r++)
		for (long i = 0; i < width; i++) {
			rows[r][i] = expected[r][i] = (unsigned)(r * width + i);
			starpu_variable_data_register(&handles[r][i], STARPU_MAIN_RAM, (uintptr_t)&rows[r][i], sizeof(unsigned));
		}
	double start = starpu_timing_now();
	for (long t = 0; t < steps; t++) {
		starpu_data_handle_t *in = handles[t % 2], *out = handles[(t + 1) % 2];
		for (long i = 0; i < width; i++) {
			int ret = starpu_task_insert(&stencil_codelet, STARPU_R, in[(i + width - 1) % width], STARPU_R, in[i],
						     STARPU_R, in[(i + 1) % width], STARPU_W, out[i], STARPU_VALUE, &us, sizeof(us), 0);
			STARPU_CHECK_RETURN_VALUE(ret, "starpu_task_insert");
		}
	}
	starpu_task_wait_for_all();
	double seconds = (starpu_timing_now() - start) / 1e6;
	unsigned workers = starpu_cpu_worker_get_count();
	for (int r = 0; r < 2; r++)
		for (long i = 0; i < width; i++)
			starpu_data_unregister(handles[r][i]);
	starpu_shutdown();

	stencil_on_host(expected, width, steps);
	int status = 0;
	for (int r = 0; r < 2 && status == 0; r++)
		for (long i = 0; i < width; i++)
			if (rows[r][i] != expected[r][i]) {
				fprintf(stderr, "stencil row %d cell %ld: %u, expected %u\n", r, i, rows[r][i], expected[r][i]);
				status = 1;
				break;
			}
	if (status == 0)
		printf("stencil,%g,%ld,%.6f,%u\n", us, width * steps, seconds, workers);
	for (int r = 0; r < 2; r++) {
		free(rows[r]);
		free(expected[r]);
		free(handles[r]);
	}
	return status;
}

static void usage(const char *program)
{
	fprintf(stderr, "usage: %s -shape independent|chains|shared-read|stencil -tasks N -us D [-chains C]\n", program);
	exit(2);
}

int main(int argc, char **argv)
{
	const char *shape = "independent";
	long ntasks = 10000, nchains = 2;
	double us = 10.0;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "-shape")) shape = argv[i + 1];
		else if (!strcmp(argv[i], "-tasks")) ntasks = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "-us")) us = atof(argv[i + 1]);
		else if (!strcmp(argv[i], "-chains")) nchains = atol(argv[i + 1]);
		else usage(argv[0]);
	}
	if (argc % 2 == 0 || ntasks < 1 || nchains < 1 || us < 0) usage(argv[0]);
	int chains = !strcmp(shape, "chains");
	int shared_read = !strcmp(shape, "shared-read");
	int stencil = !strcmp(shape, "stencil");
	if (!chains && !shared_read && !stencil && strcmp(shape, "independent")) usage(argv[0]);
	if (stencil && nchains < 3) usage(argv[0]);

	int ret = starpu_init(NULL);
	if (ret == -ENODEV) return 77;
	STARPU_CHECK_RETURN_VALUE(ret, "starpu_init");

	if (stencil)
		return run_stencil(nchains, ntasks / nchains, us);
	long nvariables = chains ? nchains : shared_read ? 1 : ntasks;
	unsigned *counters = calloc(nvariables, sizeof(*counters));
	starpu_data_handle_t *handles = malloc(nvariables * sizeof(*handles));
	for (long v = 0; v < nvariables; v++)
		starpu_variable_data_register(&handles[v], STARPU_MAIN_RAM, (uintptr_t)&counters[v], sizeof(counters[v]));

	double start = starpu_timing_now();
	for (long t = 0; t < ntasks; t++) {
		if (shared_read)
			ret = starpu_task_insert(&read_codelet, STARPU_R, handles[0], STARPU_VALUE, &us, sizeof(us), 0);
		else
			ret = starpu_task_insert(&spin_codelet, STARPU_RW, handles[t % nvariables],
						 STARPU_VALUE, &us, sizeof(us), 0);
		STARPU_CHECK_RETURN_VALUE(ret, "starpu_task_insert");
	}
	starpu_task_wait_for_all();
	double seconds = (starpu_timing_now() - start) / 1e6;
	unsigned workers = starpu_cpu_worker_get_count();

	long expected_total = 0, total = 0;
	if (shared_read) {
		starpu_data_unregister(handles[0]);
		total = expected_total = (long)shared_read_runs;
		if (total != ntasks) {
			fprintf(stderr, "%ld tasks ran, expected %ld\n", total, ntasks);
			return 1;
		}
	}
	for (long v = 0; v < nvariables && !shared_read; v++) {
		starpu_data_unregister(handles[v]);
		unsigned expected = (unsigned)(ntasks / nvariables + (v < ntasks % nvariables));
		if (counters[v] != expected) {
			fprintf(stderr, "variable %ld: %u increments, expected %u\n", v, counters[v], expected);
			return 1;
		}
		total += counters[v];
		expected_total += expected;
	}
	starpu_shutdown();
	if (total != expected_total || total != ntasks) return 1;
	printf("%s,%g,%ld,%.6f,%u\n", shape, us, ntasks, seconds, workers);
	free(handles);
	free(counters);
	return 0;
}
