/* Data the program may keep from merged tasks; see held_data.h. */
#include "submission/held_data.h"
#include "submission/access_modes.h"

#include <deque>
#include <utility>
#include <vector>

namespace fusing {

/* A task whose callback fields hold_until_terminated wrapped: what StarPU
 * calls instead, from the task's first pending submission until the
 * termination of its last. */
struct HeldData::HeldTask {
	HeldData *owner;
	struct starpu_task *task;
	void (*callback)(void *); /* the task's own, given back after its last termination */
	/* What StarPU would call: the task's callback, else its codelet's,
	 * read at submission (StarPU reads it before releasing dependents,
	 * after which an internal task's codelet may be freed, e.g. a
	 * partition's switch codelet at unregistration). */
	void (*callback_to_run)(void *);
	void *callback_arg;
	unsigned callback_arg_free;
	/* The accesses (handle, writes) of each submission StarPU has yet to
	 * call the callback of, oldest first.  There can be two: StarPU
	 * releases a task's dependents before it calls the task's callback,
	 * and a dependent (its callback, on another worker) may submit the
	 * task again meanwhile.  The task's fields then stay wrapped: the
	 * terminating thread reads them without any lock of ours
	 * (_starpu_handle_job_termination reads callback_func before
	 * releasing dependents and callback_arg after). */
	std::deque<std::vector<std::pair<starpu_data_handle_t, bool>>> submissions;
};

HeldData::HeldData() = default;
HeldData::~HeldData() = default;

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
	std::lock_guard<std::mutex> lock(mutex_);
	std::unique_ptr<HeldTask> &held = held_tasks_[task];
	if (!held)
		held.reset(new HeldTask{this, task, nullptr, nullptr, nullptr, 0, {}});
	/* Wrap the task's fields unless they are wrapped already (a previous
	 * submission not terminated yet).  A program that set new ones
	 * before submitting again gets those run from now on. */
	if (task->callback_func != on_terminated || task->callback_arg != held.get()) {
		held->callback = task->callback_func;
		held->callback_to_run = task->callback_func ? task->callback_func : (task->cl ? task->cl->callback_func : nullptr);
		held->callback_arg = task->callback_arg;
		held->callback_arg_free = task->callback_arg_free;
		task->callback_func = on_terminated;
		task->callback_arg = held.get();
		/* A bit field: written only when set, since the word it
		 * shares (use_tag, ...) may be read by a thread submitting
		 * the task again. */
		if (task->callback_arg_free)
			task->callback_arg_free = 0;
	}
	const unsigned nbuffers = STARPU_TASK_GET_NBUFFERS(task);
	held->submissions.emplace_back();
	auto &accesses = held->submissions.back();
	accesses.reserve(nbuffers);
	for (unsigned i = 0; i < nbuffers; i++) {
		const bool write = changes_data(STARPU_TASK_GET_MODE(task, i));
		accesses.emplace_back(STARPU_TASK_GET_HANDLE(task, i), write);
		add(STARPU_TASK_GET_HANDLE(task, i), write);
	}
}

void HeldData::end_submission_holds(HeldTask *held, bool oldest)
{
	const auto &accesses = oldest ? held->submissions.front() : held->submissions.back();
	for (const auto &access : accesses)
		remove(access.first, access.second);
	if (oldest)
		held->submissions.pop_front();
	else
		held->submissions.pop_back();
	if (!held->submissions.empty())
		return;
	struct starpu_task *task = held->task;
	task->callback_func = held->callback;
	task->callback_arg = held->callback_arg;
	if (held->callback_arg_free)
		task->callback_arg_free = held->callback_arg_free;
	held_tasks_.erase(task); /* frees held */
}

void HeldData::unhold(struct starpu_task *task)
{
	std::lock_guard<std::mutex> lock(mutex_);
	end_submission_holds(held_tasks_.at(task).get(), false);
}

/* StarPU calls it in place of the task's callback, in the thread ending the
 * task, after releasing its dependents.  held outlives the call's start:
 * only the termination of the task's last pending submission frees it, and
 * this is one of them.  After the task's last termination its own fields
 * come back before its callback runs: the callback may submit it again. */
void HeldData::on_terminated(void *held_task)
{
	HeldTask *held = static_cast<HeldTask *>(held_task);
	HeldData *owner = held->owner;
	void (*callback)(void *);
	void *callback_arg;
	{
		/* The holds end before the callback: the task's dependents
		 * were released already, and the callback may submit tasks on
		 * its data that should not count it as held. */
		std::lock_guard<std::mutex> lock(owner->mutex_);
		callback = held->callback_to_run;
		callback_arg = held->callback_arg;
		owner->end_submission_holds(held, true);
	}
	if (callback)
		callback(callback_arg);
}

} // namespace fusing
