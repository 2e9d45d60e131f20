/* Borrowed tasks; see borrowed_task.h for the steps and their threads. */
#include "ready/borrowed_task.h"

#include "core/starpu_functions.h"

#include <sched.h>

namespace fusing {

BorrowedTask::BorrowedTask(struct starpu_task *task, ReadyListener &listener)
	: task_(task), listener_(listener), nbuffers_(STARPU_TASK_GET_NBUFFERS(task))
{
	if (nbuffers_ > inline_modes_.size())
		more_modes_.reset(new enum starpu_data_access_mode[nbuffers_ - inline_modes_.size()]);
	for (unsigned i = 0; i < nbuffers_; i++) {
		enum starpu_data_access_mode mode = STARPU_TASK_GET_MODE(task, i);
		if (i < inline_modes_.size())
			inline_modes_[i] = mode;
		else
			more_modes_[i - inline_modes_.size()] = mode;
	}
}

void BorrowedTask::borrow_at_submission(struct starpu_task *task, ReadyListener &listener)
{
	BorrowedTask *borrowed = new BorrowedTask(task, listener);
	borrowed->program_prologue_ = task->prologue_callback_func;
	borrowed->program_prologue_arg_ = task->prologue_callback_arg;
	task->prologue_callback_func = on_ready;
	task->prologue_callback_arg = borrowed;
}

/* StarPU calls this from _starpu_push_task once the task's dependencies are
 * met, with starpu_task_get_current() returning the task. */
void BorrowedTask::on_ready(void *self)
{
	BorrowedTask *borrowed = static_cast<BorrowedTask *>(self);
	struct starpu_task *task = borrowed->task_;
	task->prologue_callback_func = borrowed->program_prologue_;
	task->prologue_callback_arg = borrowed->program_prologue_arg_;
	if (task->prologue_callback_func)
		task->prologue_callback_func(task->prologue_callback_arg);
	borrowed->listener_.on_task_ready(*borrowed);
	if (!borrowed->held_)
		delete borrowed; /* runs unfused */
}

void BorrowedTask::hold()
{
	held_ = true;
	program_where_ = task_->where;
	task_->where = STARPU_NOWHERE;
	/* Before the task can reach a batch: the merged task's release must
	 * find the dependency there. */
	starpu_own_task_end_dep_add(task_, 1);
}

void BorrowedTask::lend_callback()
{
	program_callback_ = task_->callback_func;
	program_callback_arg_ = task_->callback_arg;
	program_callback_arg_free_ = task_->callback_arg_free;
	task_->callback_func = on_terminated;
	task_->callback_arg = this;
	task_->callback_arg_free = 0;
}

void BorrowedTask::await_handover()
{
	/* StarPU's own call (step 2) decrements the counter from 1 to 0 under
	 * the job's sync_mutex, right after it released the task's data; the
	 * merged task can only run after that release, so this loop waits at
	 * most for the few instructions in between (unless that thread was
	 * preempted there: then it yields to it).  Reading StarPU's field
	 * without its lock is deliberate: StarPU does the same in
	 * _starpu_handle_job_termination, and only a 0 is acted upon. */
	while (__atomic_load_n(&task_->nb_termination_call_required, __ATOMIC_ACQUIRE) != 0)
		sched_yield();
	/* Adding no dependency takes and releases the job's sync_mutex: once
	 * it returns, StarPU's call has left that mutex too, so terminating
	 * (and possibly destroying) the task later cannot overlap it. */
	starpu_own_task_end_dep_add(task_, 0);
}

void BorrowedTask::release()
{
	starpu_own_task_end_dep_release(task_);
}

/* Stands in for the program's callback: StarPU captured it in
 * _starpu_handle_job_termination after testing `where` (no post_exec_hook
 * for a task the base policy never saw) and calls it after releasing the
 * task's dependencies, in release()'s thread. */
void BorrowedTask::on_terminated(void *self)
{
	BorrowedTask *borrowed = static_cast<BorrowedTask *>(self);
	struct starpu_task *task = borrowed->task_;
	task->where = borrowed->program_where_;
	task->callback_func = borrowed->program_callback_;
	task->callback_arg = borrowed->program_callback_arg_;
	task->callback_arg_free = borrowed->program_callback_arg_free_;
	/* StarPU falls back to the codelet's callback when the task has none. */
	void (*callback)(void *) = borrowed->program_callback_ ? borrowed->program_callback_ : task->cl->callback_func;
	void *callback_arg = borrowed->program_callback_arg_;
	delete borrowed;
	if (callback)
		callback(callback_arg);
}

} // namespace fusing
