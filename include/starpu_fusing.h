/* starpu-fusing: a StarPU scheduling policy that fuses small ready tasks.
 *
 * Most programs need nothing from this header: run them with
 *     starpu-fusing-run ./program args...
 * (or STARPU_SCHED=fusing plus LD_PRELOAD on StarPU 1.3, STARPU_SCHED_LIB on
 * StarPU 1.4; see README.md).  This header is for programs that link
 * libstarpu-fusing and select the policy themselves:
 *
 *     struct starpu_conf conf;
 *     starpu_conf_init(&conf);
 *     conf.sched_policy = starpu_fusing_policy();
 *     if (!conf.sched_policy) return 1;   // the error was printed
 *     starpu_init(&conf);
 */
#ifndef STARPU_FUSING_H
#define STARPU_FUSING_H

#include <starpu.h>

#if defined(__GNUC__)
#define FUSING_PUBLIC __attribute__((visibility("default")))
#else
#define FUSING_PUBLIC
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The `fusing` policy configured from the STARPU_FUSING_* environment
 * variables, layered over STARPU_FUSING_BASE (default lws).  Returns NULL,
 * after printing one line naming the variable and what it accepts, when a
 * variable is invalid.  The same policy object is returned on every call. */
FUSING_PUBLIC struct starpu_sched_policy *starpu_fusing_policy(void);

/* Inside a codelet function: the number of tasks in the batch this task runs
 * in, or 0 when it runs unfused (or outside any task). */
FUSING_PUBLIC unsigned starpu_fusing_current_batch_size(void);

/* How idle CPU workers waited since the policy started
 * (STARPU_FUSING_IDLE_WORKERS=sleep): a worker that finds no task polls for
 * about the cost of a wake-up, then rests on StarPU's own condition until
 * StarPU or a push wakes it, at most a safety net of 500 us. */
struct starpu_fusing_idle_statistics {
	/* sizeof(struct starpu_fusing_idle_statistics), set by the caller. */
	size_t size;
	unsigned long long rests;      /* rests begun */
	unsigned long long woken;      /* rests a wake-up ended */
	unsigned long long safety_net; /* rests the safety net ended */
	/* Of those, rests that ended by the safety net while a task was known
	 * to wait for the worker (pushed, or pinned to it): a missed wake-up.
	 * 0 unless something is wrong. */
	unsigned long long stalled;
	unsigned resting_now; /* workers resting at the time of the call */
	/* 1: StarPU's drivers sleep by themselves (StarPU built with
	 * --enable-blocking-drivers); the policy then rests no worker. */
	int drivers_sleep;
};

/* Fills *statistics.  Returns 0, -EINVAL (NULL or a wrong size), or
 * -ENOENT when no idle worker rests through the policy (the policy is not
 * running, STARPU_FUSING=0, or STARPU_FUSING_IDLE_WORKERS=poll).  Any
 * thread, while StarPU runs. */
FUSING_PUBLIC int starpu_fusing_get_idle_statistics(struct starpu_fusing_idle_statistics *statistics);

/* ----------------------------------------------------------- batched kernels
 *
 * A batched implementation runs a whole batch of tasks of one codelet in
 * one call: for a convolution, one im2col and one matrix product instead of
 * one small loop per task.  Without one, a batch calls the codelet's own CPU
 * function once per task.
 *
 * The CPU function receives the batch's tasks in the order they became
 * ready: ntasks, then for task i its buffers task_buffers[i] (as the
 * codelet's function would get them: task_buffers[i][b] is the interface of
 * its buffer b, e.g. for STARPU_MATRIX_GET_PTR) and its cl_arg
 * task_args[i]; batch_arg is what was registered.  All tasks of a batch
 * have the same codelet, buffer count and access modes.  The function runs
 * in a CPU worker, like a codelet function. */
typedef void (*starpu_fusing_batched_cpu_func_t)(unsigned ntasks, void **task_buffers[], void *task_args[], void *batch_arg);

struct starpu_fusing_batched_implementation {
	/* sizeof(struct starpu_fusing_batched_implementation): lets later
	 * versions add fields (a CUDA function) without breaking callers. */
	size_t size;
	starpu_fusing_batched_cpu_func_t cpu_func;
	void *batch_arg;
};

/* Gives codelet cl a batched implementation.  Returns 0, or -EINVAL (NULL
 * argument or function, wrong size, or a codelet whose tasks are never
 * fused: no CPU function, several, can_execute, parallel type), or -EEXIST
 * (already registered); an error also prints one line naming the codelet.
 * May be called before or after starpu_init, from any thread. */
FUSING_PUBLIC int starpu_fusing_register_batched(struct starpu_codelet *cl, const struct starpu_fusing_batched_implementation *implementation);

/* Removes it (-ENOENT if none).  Batches already submitted keep the
 * implementation they were built with. */
FUSING_PUBLIC int starpu_fusing_unregister_batched(struct starpu_codelet *cl);

#ifdef __cplusplus
}
#endif

#endif
