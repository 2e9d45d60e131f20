/* Idle CPU workers sleep instead of polling (STARPU_FUSING_IDLE_WORKERS;
 * doc/design.md, section 3).
 *
 * StarPU's drivers never block when built with STARPU_NON_BLOCKING_DRIVERS,
 * as Debian's 1.3.10 and a default 1.4.12 build are (starpu_config.h): a
 * worker that finds no task calls pop_task again after a few sched_yield()s
 * (_starpu_exponential_backoff, drivers/driver_common/driver_common.c).
 * Where workers fill every core, the program's submitting thread then runs
 * half the time: DAHL at 28x28 on 2 cores and 2 workers, its main thread
 * was on a CPU 1.6 s and waiting on the run queue 1.4 s of 3 s (its
 * schedstat), never blocked.  So a CPU worker whose pop found nothing
 * sleeps here until a task is pushed through the policy, or at most
 * kLongestRest_us: StarPU wakes a worker for a task pushed to it outside
 * the policy (a task bound to a worker) only on its own condition, which a
 * worker sleeping here does not wait on.
 *
 * Threads: rest() runs in a worker inside pop_task, in a scheduling
 * operation: it relaxes first (starpu_worker_relax_on, as StarPU's policies
 * do before blocking on a lock of theirs).  pushed() runs in any thread
 * pushing a task, after the base policy took it.  mutex_ guards only the
 * sleep and the wake-up; pushes_ and resting_ are read without it. */
#ifndef STARPU_FUSING_SCHED_IDLE_WORKERS_H
#define STARPU_FUSING_SCHED_IDLE_WORKERS_H

#include <starpu.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace fusing {

class IdleWorkers {
public:
	/* A bound on a sleep: a task StarPU hands a worker without the
	 * policy waits at most this long. */
	static constexpr long kLongestRest_us = 500;

	/* Read before the base policy's pop: a push after it ends the rest
	 * at once, even when it came before the worker started sleeping. */
	std::uint64_t pushes_seen() const { return pushes_.load(std::memory_order_acquire); }

	/* The calling worker found nothing; pushes_before is pushes_seen()
	 * from before its pop.  Returns at once for a worker that is not a
	 * CPU worker. */
	void rest(std::uint64_t pushes_before)
	{
		const int worker = starpu_worker_get_id();
		if (worker < 0 || starpu_worker_get_type(worker) != STARPU_CPU_WORKER)
			return;
		starpu_worker_relax_on();
		{
			std::unique_lock<std::mutex> lock(mutex_);
			resting_.fetch_add(1, std::memory_order_seq_cst);
			wakeup_.wait_for(lock, std::chrono::microseconds(kLongestRest_us),
					 [&] { return pushes_.load(std::memory_order_seq_cst) != pushes_before; });
			resting_.fetch_sub(1, std::memory_order_relaxed);
		}
		starpu_worker_relax_off();
	}

	/* A task was pushed: every resting worker looks for it (the base
	 * policy may have queued it for any of them). */
	void pushed()
	{
		pushes_.fetch_add(1, std::memory_order_seq_cst);
		if (resting_.load(std::memory_order_seq_cst) != 0) {
			std::lock_guard<std::mutex> lock(mutex_);
			wakeup_.notify_all();
		}
	}

private:
	std::atomic<std::uint64_t> pushes_{0};
	std::atomic<unsigned> resting_{0};
	std::mutex mutex_;
	std::condition_variable wakeup_;
};

} // namespace fusing

#endif
