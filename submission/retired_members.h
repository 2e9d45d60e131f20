/* Deferred tasks that have run and that StarPU would have destroyed, waiting
 * for a thread of the program to free them (doc/design.md, section 12,
 * "who frees a member").
 *
 * A program's tasks are allocated in its submitting thread's malloc arena
 * (starpu_task_create, and the job StarPU's model creates for the window's
 * prediction).  StarPU, and merged_group.cpp before this class, frees them
 * in the worker that ran them: each free takes that arena's lock while the
 * program's thread takes it for its next starpu_task_create.  At 2,304 px
 * in the convolution example under `both` that contention was ~12% of the
 * workers' samples and ~9% of the program thread's (perf, call graphs).  A
 * member handed over here is freed by the next thread that submits a task,
 * ends a wait, or destroys the window: usually the program's, whose frees
 * and next allocations then meet no other thread.
 *
 * At most kMostWaiting tasks wait: beyond that the worker frees its group's
 * members itself, so a program that stops submitting does not keep the
 * memory of everything it submitted until shutdown.
 *
 * Any thread hands over (a worker, in a merged task's callback) and frees.
 * mutex_ guards waiting_ only while tasks are moved in or out; no StarPU
 * function and no free runs under it. */
#ifndef STARPU_FUSING_SUBMISSION_RETIRED_MEMBERS_H
#define STARPU_FUSING_SUBMISSION_RETIRED_MEMBERS_H

#include <starpu.h>

#include <atomic>
#include <cstddef>
#include <mutex>
#include <vector>

namespace fusing {

class RetiredMembers {
public:
	static constexpr std::size_t kMostWaiting = 4096;

	/* Takes tasks (every one ended, its callback run, destroy cleared)
	 * and leaves tasks empty; false, taking none, when kMostWaiting
	 * already wait. */
	bool hand_over(std::vector<struct starpu_task *> &tasks);
	/* Frees every task waiting (starpu_task_destroy).  Cheap when none. */
	void free_waiting();

	RetiredMembers() = default;
	~RetiredMembers() { free_waiting(); }
	RetiredMembers(const RetiredMembers &) = delete;
	RetiredMembers &operator=(const RetiredMembers &) = delete;

private:
	std::mutex mutex_;
	std::vector<struct starpu_task *> waiting_; /* guarded by mutex_ */
	std::atomic<std::size_t> count_{0};         /* waiting_.size(), read without mutex_ */
};

} // namespace fusing

#endif
