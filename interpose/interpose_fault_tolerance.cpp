/* StarPU 1.4's fault-tolerance prologue, with its two steps in the order
 * that cannot end the program's task before it started.
 *
 * starpu_task_ft_prologue (core/task.c, 1.4.12) runs when the program's
 * "meta" task becomes ready, in the thread that made it ready.  It submits a
 * copy of the task that does the work (submit_nodeps), and only then adds
 * the end dependency that keeps the meta task from terminating until a copy
 * succeeded.  If that thread is delayed between the two, the copies run,
 * fail and retry from their callbacks, one succeeds and releases the end
 * dependency that was never added: StarPU terminates the meta task while it
 * is still being pushed and aborts ("task->status == STARPU_TASK_RUNNING",
 * core/jobs.c).  Natively it takes a delay (StarPU's tests/fault-tolerance/
 * retry under lws, with that thread made to sleep 20 ms after submit_nodeps:
 * 10 aborts in 10 runs); idle workers that sleep (sched/idle_workers.h)
 * make one likely, since waking them on 2 cores preempts the pushing
 * thread (retry under fusing: 16 of 30 runs aborted, 0 of 30 with
 * STARPU_FUSING_IDLE_WORKERS=poll).
 *
 * Preloaded (as the launcher does on 1.4), this definition is the one a
 * program names in STARPU_PROLOGUE_CALLBACK.  It does what StarPU's does,
 * adding the end dependency before submitting the copy.  Runs where StarPU
 * runs prologues: in the thread that makes the meta task ready. */
#include "build_config.h"
#include "starpu_fusing.h"

#include <starpu.h>

#if HAVE_DECL_STARPU_TASK_FT_PROLOGUE

#include <cstdio>
#include <cstdlib>

namespace {

void submit_retry(struct starpu_task *retry)
{
	const int ret = starpu_task_submit_nodeps(retry);
	if (ret != 0) {
		std::fprintf(stderr, "starpu-fusing: starpu_task_ft_prologue: StarPU refused the retry of a failed task "
			     "(starpu_task_submit_nodeps returned %d)\n", ret);
		std::abort(); /* where StarPU's own prologue asserts */
	}
}

/* StarPU's default check (static in core/task.c): a failed copy is
 * submitted again, a successful one releases the meta task.  Runs as the
 * copy's callback. */
void retry_until_success(void *meta_task)
{
	struct starpu_task *meta = static_cast<struct starpu_task *>(meta_task);
	struct starpu_task *current = starpu_task_get_current();
	if (!current->failed) {
		starpu_task_ft_success(meta);
		return;
	}
	submit_retry(starpu_task_ft_create_retry(meta, current, retry_until_success));
}

} // namespace

extern "C" FUSING_PUBLIC void starpu_task_ft_prologue(void *check_ft)
{
	struct starpu_task *meta = starpu_task_get_current();
	void (*check)(void *) = check_ft ? reinterpret_cast<void (*)(void *)>(check_ft) : retry_until_success;
	/* The copy first: it must not inherit the end dependency nor
	 * STARPU_NOWHERE. */
	struct starpu_task *retry = starpu_task_ft_create_retry(meta, meta, check);
	starpu_task_end_dep_add(meta, 1);
	meta->where = STARPU_NOWHERE;
	submit_retry(retry);
}

#endif
