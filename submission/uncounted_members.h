/* Deferred tasks StarPU does not count among its submitted tasks: a merged
 * task counts once for all its members (doc/design.md, section 12, waits
 * for counts).
 *
 * starpu_task_wait_for_n_submitted(n) promises that at most n of the tasks
 * submitted are not terminated when it returns, and starpu_task_nsubmitted
 * answers that number; StarPU counts its own tasks, so a merged task of 128
 * members made the wait return with 127 of them still to run.  This class
 * keeps, per context, the members beyond the first of every merged task
 * submitted whose callback has not ended (its members terminate in that
 * callback, submission/merged_group.cpp), so that a wait can add them to
 * StarPU's count (SubmissionWindow::wait_for_n_submitted).
 *
 * Any thread: add() in the thread handing a group to StarPU, remove() in
 * the worker ending the merged task's callback, the waits in the program's
 * waiting thread.  The counts are atomics; mutex_ and ended_ only serve a
 * waiting thread, and remove() takes mutex_ only while one waits. */
#ifndef STARPU_FUSING_SUBMISSION_UNCOUNTED_MEMBERS_H
#define STARPU_FUSING_SUBMISSION_UNCOUNTED_MEMBERS_H

#include <starpu.h>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <mutex>

namespace fusing {

class UncountedMembers {
public:
	/* A merged task of members tasks in context ctx is being submitted. */
	void add(unsigned ctx, std::size_t members);
	/* Its callback has ended: its members have terminated. */
	void remove(unsigned ctx, std::size_t members);
	/* The members StarPU does not count, in ctx or in every context. */
	std::size_t in(unsigned ctx) const { return per_context_[ctx].load(std::memory_order_seq_cst); }
	std::size_t total() const { return total_.load(std::memory_order_seq_cst); }
	/* Returns once total() (every_context) or in(ctx) is at most n. */
	void wait_until_at_most(bool every_context, unsigned ctx, std::size_t n);

private:
	std::atomic<std::size_t> per_context_[STARPU_NMAX_SCHED_CTXS] = {};
	std::atomic<std::size_t> total_{0};
	std::atomic<unsigned> waiters_{0};
	std::mutex mutex_;
	std::condition_variable ended_; /* with mutex_: a merged task's members terminated */
};

} // namespace fusing

#endif
