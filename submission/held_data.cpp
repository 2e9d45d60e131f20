/* Data the program may keep from merged tasks; see held_data.h. */
#include "submission/held_data.h"
#include "submission/access_modes.h"

#include <utility>
#include <vector>

namespace fusing {

/* The accesses (handle, writes) of one submission of a held task, kept
 * until StarPU calls its callback.  Most tasks have a few: those go in the
 * record, the rest in a list. */
struct HeldData::Submission {
	static constexpr unsigned kInlineAccesses = 8;
	unsigned count = 0;
	std::pair<starpu_data_handle_t, bool> inline_accesses[kInlineAccesses];
	std::vector<std::pair<starpu_data_handle_t, bool>> more_accesses;
	Submission *newer = nullptr; /* the task's next pending submission */

	void add(starpu_data_handle_t handle, bool write)
	{
		if (count < kInlineAccesses)
			inline_accesses[count] = {handle, write};
		else
			more_accesses.emplace_back(handle, write);
		count++;
	}
	template <typename F>
	void for_each(F f) const
	{
		for (unsigned i = 0; i < count && i < kInlineAccesses; i++)
			f(inline_accesses[i].first, inline_accesses[i].second);
		for (const auto &access : more_accesses)
			f(access.first, access.second);
	}
};

/* A task whose callback fields hold_until_terminated wrapped: what StarPU
 * calls instead, from the task's first pending submission until the
 * termination of its last. */
struct HeldData::HeldTask {
	HeldData *owner = nullptr;
	struct starpu_task *task = nullptr;
	void (*callback)(void *) = nullptr; /* the task's own, given back after its last termination */
	/* What StarPU would call: the task's callback, else its codelet's,
	 * read at submission (StarPU reads it before releasing dependents,
	 * after which an internal task's codelet may be freed, e.g. a
	 * partition's switch codelet at unregistration). */
	void (*callback_to_run)(void *) = nullptr;
	void *callback_arg = nullptr;
	unsigned callback_arg_free = 0;
	/* The submissions StarPU has yet to call the callback of, oldest
	 * first (linked by newer).  There can be two: StarPU releases a
	 * task's dependents before it calls the task's callback, and a
	 * dependent (its callback, on another worker) may submit the task
	 * again meanwhile.  The task's fields then stay wrapped: the
	 * terminating thread reads them without any lock of ours
	 * (_starpu_handle_job_termination reads callback_func before
	 * releasing dependents and callback_arg after). */
	Submission *oldest = nullptr;
	Submission *newest = nullptr;
};

HeldData::HeldData() = default;
HeldData::~HeldData() = default;

void HeldData::add(starpu_data_handle_t handle, bool write)
{
	Holds &holds = holds_.find_or_add(handle);
	(write ? holds.writers : holds.readers)++;
	held_handles_.store(holds_.size(), std::memory_order_relaxed);
}

void HeldData::remove(starpu_data_handle_t handle, bool write)
{
	Holds *found = holds_.find(handle);
	/* A release without an acquisition seen here (one StarPU made for
	 * itself from code outside libstarpu) has no hold to drop. */
	if (!found)
		return;
	unsigned &count = write ? found->writers : found->readers;
	if (count > 0)
		count--;
	if (found->readers == 0 && found->writers == 0)
		holds_.erase(handle);
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
	const Holds *found = holds_.find(handle);
	remove(handle, found && found->readers == 0);
}

void HeldData::downgraded(starpu_data_handle_t handle)
{
	std::lock_guard<std::mutex> lock(mutex_);
	Holds *found = holds_.find(handle);
	if (!found || found->writers == 0)
		return;
	found->writers--;
	found->readers++;
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
		const Holds *found = holds_.find(STARPU_TASK_GET_HANDLE(task, i));
		if (!found)
			continue;
		const bool write = changes_data(STARPU_TASK_GET_MODE(task, i));
		if (found->writers > 0 || write)
			return true;
	}
	return false;
}

void HeldData::hold_until_terminated(struct starpu_task *task)
{
	std::lock_guard<std::mutex> lock(mutex_);
	bool first_pending = false;
	HeldTask *&slot = held_tasks_.find_or_add(task, &first_pending);
	if (first_pending) {
		slot = spare_held_tasks_.take();
		*slot = HeldTask{};
		slot->owner = this;
		slot->task = task;
	}
	HeldTask *held = slot;
	/* Wrap the task's fields unless they are wrapped already (a previous
	 * submission not terminated yet).  A program that set new ones
	 * before submitting again gets those run from now on. */
	if (task->callback_func != on_terminated || task->callback_arg != held) {
		held->callback = task->callback_func;
		held->callback_to_run = task->callback_func ? task->callback_func : (task->cl ? task->cl->callback_func : nullptr);
		held->callback_arg = task->callback_arg;
		held->callback_arg_free = task->callback_arg_free;
		task->callback_func = on_terminated;
		task->callback_arg = held;
		/* A bit field: written only when set, since the word it
		 * shares (use_tag, ...) may be read by a thread submitting
		 * the task again. */
		if (task->callback_arg_free)
			task->callback_arg_free = 0;
	}
	Submission *submission = spare_submissions_.take();
	submission->count = 0;
	submission->more_accesses.clear();
	submission->newer = nullptr;
	for (unsigned i = 0; i < STARPU_TASK_GET_NBUFFERS(task); i++) {
		const bool write = changes_data(STARPU_TASK_GET_MODE(task, i));
		submission->add(STARPU_TASK_GET_HANDLE(task, i), write);
		add(STARPU_TASK_GET_HANDLE(task, i), write);
	}
	if (held->newest)
		held->newest->newer = submission;
	else
		held->oldest = submission;
	held->newest = submission;
}

bool HeldData::holds_task(struct starpu_task *task) const
{
	std::lock_guard<std::mutex> lock(mutex_);
	return held_tasks_.contains(task);
}

void HeldData::end_submission_holds(HeldTask *held, bool oldest)
{
	Submission *ending = oldest ? held->oldest : held->newest;
	ending->for_each([&](starpu_data_handle_t handle, bool write) { remove(handle, write); });
	if (held->oldest == held->newest) {
		held->oldest = held->newest = nullptr;
	} else if (oldest) {
		held->oldest = ending->newer;
	} else {
		Submission *previous = held->oldest;
		while (previous->newer != ending)
			previous = previous->newer;
		previous->newer = nullptr;
		held->newest = previous;
	}
	spare_submissions_.give(ending);
	if (held->oldest)
		return;
	struct starpu_task *task = held->task;
	task->callback_func = held->callback;
	task->callback_arg = held->callback_arg;
	if (held->callback_arg_free)
		task->callback_arg_free = held->callback_arg_free;
	held_tasks_.erase(task);
	spare_held_tasks_.give(held);
}

void HeldData::unhold(struct starpu_task *task)
{
	std::lock_guard<std::mutex> lock(mutex_);
	end_submission_holds(*held_tasks_.find(task), false);
}

/* StarPU calls it in place of the task's callback, in the thread ending the
 * task, after releasing its dependents.  held outlives the call's start:
 * only the termination of the task's last pending submission gives it back to the spares, and
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
