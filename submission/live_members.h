/* The deferred tasks the program keeps (destroy = 0), from deferral until
 * the program may no longer name them.
 *
 * StarPU never sees a deferred task, so a dependency declared on one after
 * its submission would wait for a termination that never comes.  Such a
 * declaration (submission/interpose_task_deps.cpp) instead waits here until
 * the task has run, and leaves it out, which is what StarPU does with a
 * dependency on a task that has terminated.  Only kept tasks can be named
 * after their submission: StarPU refuses a dependency declared then on a
 * task it destroys itself (_starpu_task_declare_deps_array, task_deps.c).
 * A kept task stays known as finished until the program destroys, cleans or
 * submits it again.
 *
 * Any thread; every method takes mutex_, and no other lock of ours is taken
 * while it is held. */
#ifndef STARPU_FUSING_SUBMISSION_LIVE_MEMBERS_H
#define STARPU_FUSING_SUBMISSION_LIVE_MEMBERS_H

#include <starpu.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <unordered_set>

namespace fusing {

class LiveMembers {
public:
	/* The window deferred task, which the program keeps (the submitting
	 * thread). */
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
		finished_kept_.insert(task);
		any_kept_.store(true, std::memory_order_relaxed);
		if (waiters_ != 0)
			changed_.notify_all();
	}
	/* The program destroys, cleans or resubmits task: its address may
	 * name another task from now on. */
	void forget(struct starpu_task *task)
	{
		if (!any_kept_.load(std::memory_order_relaxed))
			return;
		std::lock_guard<std::mutex> lock(mutex_);
		finished_kept_.erase(task);
	}
	/* Whether the window deferred task; if so, returns once it has run.
	 * The caller has flushed the window, so its group is in StarPU's
	 * hands. */
	bool was_deferred(struct starpu_task *task)
	{
		std::unique_lock<std::mutex> lock(mutex_);
		if (live_.count(task)) {
			waiters_++;
			changed_.wait(lock, [&] { return live_.count(task) == 0; });
			waiters_--;
			return true;
		}
		return finished_kept_.count(task) != 0;
	}
	/* Whether the window deferred task (still to run, or kept after it
	 * ran); does not wait. */
	bool deferred(struct starpu_task *task) const
	{
		std::lock_guard<std::mutex> lock(mutex_);
		return live_.count(task) != 0 || finished_kept_.count(task) != 0;
	}
	/* No deferred task is waiting to run. */
	bool none_running() const
	{
		std::lock_guard<std::mutex> lock(mutex_);
		return live_.empty();
	}

private:
	mutable std::mutex mutex_;
	std::condition_variable changed_;
	std::unordered_set<struct starpu_task *> live_;          /* guarded by mutex_ */
	std::unordered_set<struct starpu_task *> finished_kept_; /* guarded by mutex_ */
	unsigned waiters_ = 0;                                   /* guarded by mutex_ */
	std::atomic<bool> any_kept_{false}; /* finished_kept_ was ever non-empty */
};

} // namespace fusing

#endif
