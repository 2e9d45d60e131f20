/* How long a task waits for an idle worker, path by path: a chain of tiny
 * tasks in which every link reaches a worker the way the path names, so
 * that each link may find that worker idle (resting, under fusing's
 * STARPU_FUSING_IDLE_WORKERS=sleep) and must wake it.  Prints the time per
 * link; examples/wakeup_paths/run_wakeup_paths.sh runs it under a base
 * policy alone and under fusing, side by side.
 *
 *   wakeup_paths PATH [LINKS]
 *
 * PATH:
 *   pushed      each task depends on the previous one (one handle, RW):
 *               released, it is pushed through the policy
 *   pinned      the same, pinned alternately to workers 0 and 1
 *               (execute_on_a_specific_worker: StarPU queues it on the
 *               worker without the policy's push)
 *   workerids   the same, limited alternately to worker 0 or 1 (workerids)
 *   context     two contexts of the program's policy, one worker each; the
 *               links alternate between them (starpu_task_submit_to_ctx)
 *   tag         each task waits for the previous one's tag
 *   callback    each task's callback submits the next, pinned to the other
 *               worker
 *   roundtrip   the program submits a task, waits for it, and submits the
 *               next: every link crosses from the program's thread to an
 *               idle worker and back (NNTile waits after every operation)
 *   released    the program holds the handle (starpu_data_acquire),
 *               submits a task on it and releases it: the release readies
 *               the task
 *
 * Needs two CPU workers (STARPU_NCPU=2).  Exits 1 when a result is wrong. */
#include <starpu.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void increment(void *buffers[], void *arg)
{
	(void)arg;
	long *value = (long *)STARPU_VARIABLE_GET_PTR(buffers[0]);
	(*value)++;
}

static struct starpu_codelet increment_cl = {
	.cpu_funcs = {increment},
	.nbuffers = 1,
	.modes = {STARPU_RW},
	.name = "increment",
};

static starpu_data_handle_t handle;
static long links_left;
static uint32_t worker_masks[2] = {1u, 2u};

static struct starpu_task *increment_task(void)
{
	struct starpu_task *task = starpu_task_create();
	task->cl = &increment_cl;
	task->handles[0] = handle;
	return task;
}

static void submit(struct starpu_task *task)
{
	if (starpu_task_submit(task) != 0) {
		fprintf(stderr, "starpu_task_submit failed\n");
		exit(1);
	}
}

static void pin(struct starpu_task *task, long link)
{
	task->execute_on_a_specific_worker = 1;
	task->workerid = (unsigned)(link % 2);
}

static void submit_next_from_callback(void *arg)
{
	const long link = (long)(intptr_t)arg + 1;
	if (link >= links_left)
		return;
	struct starpu_task *task = increment_task();
	pin(task, link);
	task->callback_func = submit_next_from_callback;
	task->callback_arg = (void *)(intptr_t)link;
	submit(task);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s pushed|pinned|workerids|context|tag|callback|roundtrip|released [LINKS]\n", argv[0]);
		return 2;
	}
	const char *path = argv[1];
	const long links = argc > 2 ? atol(argv[2]) : 2000;
	if (starpu_init(NULL) != 0)
		return 77;
	if (starpu_cpu_worker_get_count() != 2) {
		fprintf(stderr, "wakeup_paths needs two CPU workers (STARPU_NCPU=2)\n");
		starpu_shutdown();
		return 2;
	}
	long value = 0;
	starpu_variable_data_register(&handle, STARPU_MAIN_RAM, (uintptr_t)&value, sizeof(value));
	unsigned contexts[2] = {0, 0};
	if (strcmp(path, "context") == 0) {
		/* Each context runs the policy the program was started with. */
		struct starpu_sched_policy *policy = starpu_sched_ctx_get_sched_policy(0);
		for (int w = 0; w < 2; w++) {
			int worker = w;
			contexts[w] = starpu_sched_ctx_create(&worker, 1, w ? "second" : "first", STARPU_SCHED_CTX_POLICY_STRUCT, policy, 0);
		}
	}
	const double start = starpu_timing_now();
	if (strcmp(path, "callback") == 0) {
		links_left = links;
		struct starpu_task *task = increment_task();
		pin(task, 0);
		task->callback_func = submit_next_from_callback;
		task->callback_arg = (void *)(intptr_t)0;
		submit(task);
	} else {
		for (long link = 0; link < links; link++) {
			struct starpu_task *task = increment_task();
			if (strcmp(path, "pushed") == 0) {
				submit(task);
			} else if (strcmp(path, "pinned") == 0) {
				pin(task, link);
				submit(task);
			} else if (strcmp(path, "workerids") == 0) {
				task->workerids = &worker_masks[link % 2];
				task->workerids_len = 1;
				submit(task);
			} else if (strcmp(path, "context") == 0) {
				if (starpu_task_submit_to_ctx(task, contexts[link % 2]) != 0)
					return 1;
			} else if (strcmp(path, "tag") == 0) {
				task->use_tag = 1;
				task->tag_id = (starpu_tag_t)(link + 1);
				if (link > 0)
					starpu_tag_declare_deps(task->tag_id, 1, (starpu_tag_t)link);
				submit(task);
			} else if (strcmp(path, "roundtrip") == 0) {
				task->synchronous = 1;
				submit(task);
			} else if (strcmp(path, "released") == 0) {
				starpu_data_acquire(handle, STARPU_RW);
				submit(task);
				starpu_data_release(handle);
				starpu_task_wait_for_all();
			} else {
				fprintf(stderr, "unknown path '%s'\n", path);
				return 2;
			}
		}
	}
	starpu_task_wait_for_all();
	const double end = starpu_timing_now();
	if (strcmp(path, "context") == 0)
		for (int w = 0; w < 2; w++)
			starpu_sched_ctx_delete(contexts[w]);
	starpu_data_unregister(handle);
	starpu_shutdown();
	printf("%s: %.2f us per link, %ld links, value %ld\n", path, (end - start) / (double)links, links, value);
	return value == links ? 0 : 1;
}
