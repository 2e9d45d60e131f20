/* When a ready task waits for a batch instead of running at once.
 *
 * The no-starvation rule (doc/design.md, section 6): holding a task
 * back is only free while every CPU worker of its context already has
 * queued work.  When fewer ready tasks are queued than there are CPU
 * workers, a worker is (or is about to be) idle, so the task runs unfused
 * and open batches are flushed.  This is also what keeps a chain of
 * dependent tasks free of any batching cost: each link becomes ready when
 * the queue is empty, so none is held. */
#ifndef STARPU_FUSING_CORE_ADMISSION_H
#define STARPU_FUSING_CORE_ADMISSION_H

#include <starpu.h>

#include <array>
#include <atomic>

namespace fusing {

/* queued_not_started: tasks pushed to the base policy of the context and not
 * started yet (merged tasks count as one).  cpu_workers: CPU workers of the
 * context. */
inline bool every_worker_has_queued_work(long queued_not_started, unsigned cpu_workers)
{
	return cpu_workers > 0 && queued_not_started >= static_cast<long>(cpu_workers);
}

/* Per scheduling context, lock-free hints read on every push, pop and task
 * start.  They steer batching only; correctness never depends on them (the
 * flusher's timer closes every batch within STARPU_FUSING_MAX_DELAY). */
struct ContextLoad {
	/* Written by the thread changing the context (add/remove_workers). */
	std::array<std::atomic<unsigned>, STARPU_NMAX_SCHED_CTXS> cpu_workers{};
	/* Incremented before a push, decremented when the task starts. */
	std::array<std::atomic<long>, STARPU_NMAX_SCHED_CTXS> queued_not_started{};

	/* Incremented when a task starts (pre_exec_hook), decremented when it
	 * ends (post_exec_hook), on the worker running it. */
	std::array<std::atomic<long>, STARPU_NMAX_SCHED_CTXS> running{};

	/* Some CPU worker of ctx neither runs a task nor has one queued. */
	bool some_worker_waits(unsigned ctx) const
	{
		return queued_not_started[ctx].load(std::memory_order_relaxed) + running[ctx].load(std::memory_order_relaxed) <
		       static_cast<long>(cpu_workers[ctx].load(std::memory_order_relaxed));
	}

	bool every_worker_busy(unsigned ctx) const
	{
		return every_worker_has_queued_work(queued_not_started[ctx].load(std::memory_order_relaxed),
						    cpu_workers[ctx].load(std::memory_order_relaxed));
	}
};

} // namespace fusing

#endif
