/* What submitting costs the program's thread: one thread submits N no-op
 * tasks, then waits for all of them; prints the CPU time of that thread
 * (CLOCK_THREAD_CPUTIME_ID) and of the whole process
 * (CLOCK_PROCESS_CPUTIME_ID) per task, from the first submission to the
 * end of the wait.  examples/submission_cost/run_submission_cost.sh runs
 * it under a base policy alone and under fusing, side by side.
 *
 *   submission_cost CASE [TASKS]
 *
 * CASE:
 *   chains       read-write chains over 100 handles (task i writes handle
 *                i % 100): the window merges them vertically
 *   independent  every task writes a handle of its own: merged
 *                horizontally
 *   tagged       as independent, each task with a tag: never deferred
 *   excluded     as independent, of a codelet named "excluded_noop":
 *                run it with STARPU_FUSING_EXCLUDE=excluded_noop, and the
 *                window keeps none
 *
 * Handles are registered before the clock starts and unregistered after it
 * stops.  Exits 1 when a task did not run. */
#include <starpu.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void noop(void *buffers[], void *arg)
{
	(void)arg;
	long *value = (long *)STARPU_VARIABLE_GET_PTR(buffers[0]);
	(*value)++;
}

static struct starpu_codelet noop_cl = {.cpu_funcs = {noop}, .nbuffers = 1, .modes = {STARPU_RW}, .name = "noop"};
static struct starpu_codelet excluded_cl = {.cpu_funcs = {noop}, .nbuffers = 1, .modes = {STARPU_RW}, .name = "excluded_noop"};

static double seconds_of(clockid_t clock)
{
	struct timespec now;
	clock_gettime(clock, &now);
	return (double)now.tv_sec + (double)now.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s chains|independent|tagged|excluded [TASKS]\n", argv[0]);
		return 2;
	}
	const char *kind = argv[1];
	const long tasks = argc > 2 ? atol(argv[2]) : 20000;
	const int chains = strcmp(kind, "chains") == 0;
	const int tagged = strcmp(kind, "tagged") == 0;
	const int excluded = strcmp(kind, "excluded") == 0;
	if (!chains && !tagged && !excluded && strcmp(kind, "independent") != 0) {
		fprintf(stderr, "unknown case '%s'\n", kind);
		return 2;
	}
	if (starpu_init(NULL) != 0)
		return 77;
	const long nhandles = chains ? 100 : tasks;
	long *values = calloc((size_t)nhandles, sizeof(long));
	starpu_data_handle_t *handles = malloc((size_t)nhandles * sizeof(*handles));
	for (long h = 0; h < nhandles; h++)
		starpu_variable_data_register(&handles[h], STARPU_MAIN_RAM, (uintptr_t)&values[h], sizeof(long));
	const double thread_start = seconds_of(CLOCK_THREAD_CPUTIME_ID), process_start = seconds_of(CLOCK_PROCESS_CPUTIME_ID);
	const double wall_start = starpu_timing_now();
	for (long t = 0; t < tasks; t++) {
		struct starpu_task *task = starpu_task_create();
		task->cl = excluded ? &excluded_cl : &noop_cl;
		task->handles[0] = handles[t % nhandles];
		if (tagged) {
			task->use_tag = 1;
			task->tag_id = (starpu_tag_t)(t + 1);
		}
		if (starpu_task_submit(task) != 0)
			return 1;
	}
	starpu_task_wait_for_all();
	const double thread_seconds = seconds_of(CLOCK_THREAD_CPUTIME_ID) - thread_start;
	const double process_seconds = seconds_of(CLOCK_PROCESS_CPUTIME_ID) - process_start;
	const double wall_us = starpu_timing_now() - wall_start;
	long total = 0;
	for (long h = 0; h < nhandles; h++) {
		starpu_data_unregister(handles[h]);
		total += values[h];
	}
	starpu_shutdown();
	printf("%s: %ld tasks, program thread %.3f us CPU per task, process %.3f us CPU per task, %.3f us wall per task\n", kind,
	       tasks, thread_seconds * 1e6 / (double)tasks, process_seconds * 1e6 / (double)tasks, wall_us / (double)tasks);
	free(handles);
	free(values);
	return total == tasks ? 0 : 1;
}
