/* Data the program may keep from merged tasks; see held_data.h. */
#include "submission/held_data.h"
#include "submission/access_modes.h"

#include <utility>
#include <vector>

namespace fusing {

/* What hold_until_terminated puts in place of a task's callback, from
 * submission to the callback's end. */
struct HeldData::TaskHold {
	HeldData *owner;
	struct starpu_task *task;
	void (*callback)(void *); /* the task's own, restored before it runs */
	/* What StarPU would call: the task's callback, else its codelet's,
	 * read at submission (StarPU reads it before releasing dependents,
	 * after which an internal task's codelet may be freed, e.g. a
	 * partition's switch codelet at unregistration). */
	void (*callback_to_run)(void *);
	void *callback_arg;
	unsigned callback_arg_free;
	std::vector<std::pair<starpu_data_handle_t, bool>> accesses; /* handle, writes */
};

void HeldData::add(starpu_data_handle_t handle, bool write)
{
	Holds &holds = holds_[handle];
	(write ? holds.writers : holds.readers)++;
	held_handles_.store(holds_.size(), std::memory_order_relaxed);
}

void HeldData::remove(starpu_data_handle_t handle, bool write)
{
	auto found = holds_.find(handle);
	/* A release without an acquisition seen here (one StarPU made for
	 * itself from code outside libstarpu) has no hold to drop. */
	if (found == holds_.end())
		return;
	unsigned &count = write ? found->second.writers : found->second.readers;
	if (count > 0)
		count--;
	if (found->second.readers == 0 && found->second.writers == 0)
		holds_.erase(found);
	held_handles_.store(holds_.size(), std::memory_order_relaxed);
}

void HeldData::acquired(starpu_data_handle_t handle, enum starpu_data_access_mode mode)
{
	std::lock_guard<std::mutex> lock(mutex_);
	add(handle, changes_data(mode));
}

void HeldData::released(starpu_data_handle_t handle)
{
	std::lock_guard<std::mutex> lock(mutex_);
	auto found = holds_.find(handle);
	remove(handle, found != holds_.end() && found->second.readers == 0);
}

void HeldData::downgraded(starpu_data_handle_t handle)
{
	std::lock_guard<std::mutex> lock(mutex_);
	auto found = holds_.find(handle);
	if (found == holds_.end() || found->second.writers == 0)
		return;
	found->second.writers--;
	found->second.readers++;
}

bool HeldData::conflicts(const struct starpu_task *task) const
{
	/* Unlocked read: a hold added after it comes from a call the program
	 * makes after this submission, or the window's lock orders the two
	 * (window.cpp, submit). */
	if (held_handles_.load(std::memory_order_relaxed) == 0)
		return false;
	std::lock_guard<std::mutex> lock(mutex_);
	for (unsigned i = 0; i < STARPU_TASK_GET_NBUFFERS(task); i++) {
		auto found = holds_.find(STARPU_TASK_GET_HANDLE(task, i));
		if (found == holds_.end())
			continue;
		const bool write = changes_data(STARPU_TASK_GET_MODE(task, i));
		if (found->second.writers > 0 || write)
			return true;
	}
	return false;
}

void HeldData::hold_until_terminated(struct starpu_task *task)
{
	void (*callback_to_run)(void *) = task->callback_func ? task->callback_func : (task->cl ? task->cl->callback_func : nullptr);
	TaskHold *hold = new TaskHold{this, task, task->callback_func, callback_to_run, task->callback_arg, task->callback_arg_free, {}};
	const unsigned nbuffers = STARPU_TASK_GET_NBUFFERS(task);
	hold->accesses.reserve(nbuffers);
	{
		std::lock_guard<std::mutex> lock(mutex_);
		for (unsigned i = 0; i < nbuffers; i++) {
			const bool write = changes_data(STARPU_TASK_GET_MODE(task, i));
			hold->accesses.emplace_back(STARPU_TASK_GET_HANDLE(task, i), write);
			add(STARPU_TASK_GET_HANDLE(task, i), write);
		}
	}
	task->callback_func = on_terminated;
	task->callback_arg = hold;
	task->callback_arg_free = 0;
}

void HeldData::end_task_hold(TaskHold *hold)
{
	struct starpu_task *task = hold->task;
	task->callback_func = hold->callback;
	task->callback_arg = hold->callback_arg;
	task->callback_arg_free = hold->callback_arg_free;
	std::lock_guard<std::mutex> lock(mutex_);
	for (const auto &access : hold->accesses)
		remove(access.first, access.second);
}

void HeldData::unhold(struct starpu_task *task)
{
	TaskHold *hold = static_cast<TaskHold *>(task->callback_arg);
	end_task_hold(hold);
	delete hold;
}

/* StarPU calls it in place of the task's callback, in the thread ending the
 * task.  The task's own fields come back first: its callback may submit it
 * again. */
void HeldData::on_terminated(void *task_hold)
{
	TaskHold *hold = static_cast<TaskHold *>(task_hold);
	void (*callback)(void *) = hold->callback_to_run;
	void *callback_arg = hold->callback_arg;
	HeldData *owner = hold->owner;
	/* The holds end before the callback: the task's dependents were
	 * released already, and the callback may submit tasks on its data
	 * that should not count it as held. */
	owner->end_task_hold(hold);
	delete hold;
	if (callback)
		callback(callback_arg);
}

} // namespace fusing
