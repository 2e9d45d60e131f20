/* The tasks deferred by the window that have not finished yet.
 *
 * StarPU never sees a deferred task, so a dependency declared on one after
 * its submission would wait for a termination that never comes; the
 * declaration instead waits here until the task has run, and drops it
 * (submission/interpose_task_deps.cpp).  Any thread; every method takes
 * mutex_, and no other lock of ours is taken while it is held. */
#ifndef STARPU_FUSING_SUBMISSION_LIVE_MEMBERS_H
#define STARPU_FUSING_SUBMISSION_LIVE_MEMBERS_H

#include <starpu.h>

#include <condition_variable>
#include <mutex>
#include <unordered_set>

namespace fusing {

class LiveMembers {
public:
	/* The window deferred task (the submitting thread). */
	void add(struct starpu_task *task)
	{
		std::lock_guard<std::mutex> lock(mutex_);
		live_.insert(task);
	}
	/* task ran and its callback returned (the worker running its group). */
	void finished(struct starpu_task *task)
	{
		std::lock_guard<std::mutex> lock(mutex_);
		live_.erase(task);
		if (waiters_ != 0)
			changed_.notify_all();
	}
	bool contains(struct starpu_task *task) const
	{
		std::lock_guard<std::mutex> lock(mutex_);
		return live_.count(task) != 0;
	}
	/* Blocks until task is no longer live.  The caller has flushed the
	 * window, so its group is in StarPU's hands. */
	void wait_until_finished(struct starpu_task *task)
	{
		std::unique_lock<std::mutex> lock(mutex_);
		waiters_++;
		changed_.wait(lock, [&] { return live_.count(task) == 0; });
		waiters_--;
	}
	bool empty() const
	{
		std::lock_guard<std::mutex> lock(mutex_);
		return live_.empty();
	}

private:
	mutable std::mutex mutex_;
	std::condition_variable changed_;
	std::unordered_set<struct starpu_task *> live_; /* guarded by mutex_ */
	unsigned waiters_ = 0;                          /* guarded by mutex_ */
};

} // namespace fusing

#endif
