/* A fusable task from its submission to its termination, with every field of
 * the program's task that fusion borrows on the way (doc/design.md, section 5,
 * "Life of a member").  One object per task accepted at submission; each step says
 * which thread runs it:
 *
 *  1. borrow_at_submission (submitting thread, inside the program's
 *     starpu_task_submit, from submit_hook): records the access modes as
 *     StarPU records them for itself at this moment (a program may change
 *     its codelet's modes[] before its next submission: DAHL does) and
 *     borrows the ready prologue, chaining the program's own.
 *  2. on_ready (the thread that satisfied the task's last dependency, inside
 *     StarPU's _starpu_push_task, no scheduler lock held): gives the prologue
 *     back and runs the program's, then asks the ReadyListener.  Either the
 *     task runs unfused (the object is freed) or hold() borrows `where`
 *     (STARPU_NOWHERE) and adds one end dependency.  StarPU then takes its
 *     NOWHERE path in the same thread: it releases the task's data and makes
 *     its own termination call, which only decrements the end-dependency
 *     counter.
 *  3. lend_callback (flusher thread, while it builds the merged task):
 *     borrows the callback; a stand-in runs in the task's termination.
 *  4. await_handover (the worker running the merged task, before any
 *     member's code runs): waits until StarPU's own termination call of
 *     step 2 is over.  Waiting here rather than at release keeps a member
 *     that adds end dependencies to itself while it runs (StarPU's
 *     task_end_dep_add example) from being mistaken for that call.
 *  5. release (the same worker, from the merged task's callback): releases
 *     the end dependency.  The task terminates in this thread, so its
 *     callback, successors and tags are released where StarPU releases
 *     those of a task that ran on a worker; if it added end dependencies of
 *     its own, their last release terminates it, as without fusion.
 *  6. the stand-in callback (the terminating thread, inside StarPU's
 *     termination, after StarPU has read `where` to skip the base's
 *     post_exec_hook): gives back `where` and the callback, runs the
 *     program's callback, frees the object.
 *
 * Why step 4 waits: both termination calls read the counter without StarPU's
 * lock (_starpu_handle_job_termination, src/core/jobs.c, 1.3 and 1.4).  When
 * they overlapped, both could read 1 and the counter ended at UINT_MAX, and
 * when ours came first the whole termination ran in step 2's thread — inside
 * the program's starpu_task_submit when the task was ready at submission.
 * Known limit: a program that adds an end dependency to a task from another
 * thread after the task became ready, and releases it only after something
 * that needs the worker running the batch, would wait forever in step 4. */
#ifndef STARPU_FUSING_READY_BORROWED_TASK_H
#define STARPU_FUSING_READY_BORROWED_TASK_H

#include <starpu.h>

#include <array>
#include <cstdint>
#include <memory>

namespace fusing {

class BorrowedTask;

/* Told when a borrowed task becomes ready (step 2).  It either calls
 * task.hold() and keeps the object until release(), or returns without
 * holding: the object is then freed and the task runs unfused. */
class ReadyListener {
public:
	virtual void on_task_ready(BorrowedTask &task) = 0;

protected:
	~ReadyListener() = default;
};

class BorrowedTask {
public:
	/* Step 1.  Never fails; the task keeps running as submitted if it is
	 * never held. */
	static void borrow_at_submission(struct starpu_task *task, ReadyListener &listener);

	struct starpu_task *task() const { return task_; }
	unsigned nbuffers() const { return nbuffers_; }
	/* Mode of buffer i as StarPU recorded it at submission. */
	enum starpu_data_access_mode mode(unsigned i) const
	{
		return i < inline_modes_.size() ? inline_modes_[i] : more_modes_[i - inline_modes_.size()];
	}
	starpu_data_handle_t handle(unsigned i) const { return STARPU_TASK_GET_HANDLE(task_, i); }

	/* Step 2, from ReadyListener::on_task_ready only. */
	void hold();
	/* Step 3. */
	void lend_callback();
	/* Step 4. */
	void await_handover();
	/* Step 5: the object may be freed before this returns. */
	void release();

	BorrowedTask(const BorrowedTask &) = delete;
	BorrowedTask &operator=(const BorrowedTask &) = delete;

private:
	BorrowedTask(struct starpu_task *task, ReadyListener &listener);
	static void on_ready(void *self);
	static void on_terminated(void *self);

	struct starpu_task *const task_;
	ReadyListener &listener_;
	unsigned nbuffers_;
	std::array<enum starpu_data_access_mode, 8> inline_modes_{};
	std::unique_ptr<enum starpu_data_access_mode[]> more_modes_;
	/* The program's fields while they are lent; each is written in the
	 * step that borrows it and read in the step that gives it back, which
	 * StarPU orders after it (submission before readiness; the flusher
	 * submits the merged task, whose termination runs step 4). */
	bool held_ = false; /* written and read by on_ready's thread */
	void (*program_prologue_)(void *) = nullptr;
	void *program_prologue_arg_ = nullptr;
	std::int32_t program_where_ = 0;
	void (*program_callback_)(void *) = nullptr;
	void *program_callback_arg_ = nullptr;
	unsigned program_callback_arg_free_ = 0;
};

} // namespace fusing

#endif
