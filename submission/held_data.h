/* Data that may stay unavailable until the program acts, which merged tasks
 * must not wait for on behalf of tasks that do not (doc/design.md, section
 * 12, "No dependency the program did not have").
 *
 * A merged task waits for the data of all its members: merging a task whose
 * data the program holds (starpu_data_acquire, until starpu_data_release)
 * with a task on other data makes the second wait for the program too, and
 * a program that then acquires the second task's data before releasing the
 * first hangs.  So the window never defers a task that conflicts with a
 * hold, and counts as holds:
 *  - the program's acquisitions, from the call until the matching release
 *    (acquired/released, from interpose/interpose_acquire.cpp; StarPU-MPI's sends
 *    and receives are acquisitions too);
 *  - the accesses of a task handed to StarPU that may itself wait for the
 *    program (a hold on its data, a tag, dependencies declared by or on it),
 *    from its submission until StarPU calls its callback
 *    (hold_until_terminated), since a task after it on that data waits
 *    for it.
 * Every task the window defers then waits only for tasks that end without
 * the program's help, and so does every merged task.
 *
 * Any thread; mutex_ is taken alone or after the window's lock. */
#ifndef STARPU_FUSING_SUBMISSION_HELD_DATA_H
#define STARPU_FUSING_SUBMISSION_HELD_DATA_H

#include <starpu.h>

#include "core/handle_table.h"
#include "core/record_pool.h"

#include <atomic>
#include <cstddef>
#include <mutex>

namespace fusing {

class HeldData {
public:
	HeldData();
	~HeldData(); /* where HeldTask is complete */
	/* The program asks for handle in mode (before StarPU has it). */
	void acquired(starpu_data_handle_t handle, enum starpu_data_access_mode mode);
	/* The program releases handle (after StarPU did): a read hold if it
	 * has one (a write acquisition is granted only once reads are
	 * released), else a write hold. */
	void released(starpu_data_handle_t handle);
	/* The program keeps handle, acquired for writing, for reading only
	 * (StarPU 1.4's starpu_data_release_to). */
	void downgraded(starpu_data_handle_t handle);
	/* Whether one of task's accesses conflicts with a hold (a write or a
	 * reduction with any hold, a read with a write hold). */
	bool conflicts(const struct starpu_task *task) const;
	/* task, about to be handed to StarPU, may wait for the program: its
	 * accesses are holds until StarPU calls its callback (wrapped here),
	 * which it does after releasing the task's dependents
	 * (_starpu_handle_job_termination, 1.3 and 1.4).  Undone by unhold()
	 * when StarPU refuses the task. */
	void hold_until_terminated(struct starpu_task *task);
	void unhold(struct starpu_task *task);
	/* Whether task's accesses are holds now (hold_until_terminated, and
	 * its callback has not run). */
	bool holds_task(struct starpu_task *task) const;

private:
	struct Holds {
		unsigned readers = 0;
		unsigned writers = 0;
	};
	struct HeldTask;
	struct Submission;
	static void on_terminated(void *held_task);
	void add(starpu_data_handle_t handle, bool write);
	void remove(starpu_data_handle_t handle, bool write);
	/* Drops the holds of one of task's submissions (the oldest at its
	 * termination, the newest when StarPU refuses it); after its last,
	 * gives the task its callback fields back.  Called with mutex_ held. */
	void end_submission_holds(HeldTask *held, bool oldest);

	/* Nothing here allocates per task once warm: a program tagging every
	 * task (or declaring dependencies on each) pays the holds on its
	 * submitting thread, where node-based maps and a deque per task cost
	 * more than StarPU's own submission (callgrind, 5,000 tagged tasks:
	 * 1,700 instructions per task against StarPU's 2,000). */
	mutable std::mutex mutex_;
	HandleTable<starpu_data_handle_t, Holds> holds_; /* guarded by mutex_ */
	std::atomic<std::size_t> held_handles_{0};       /* holds_.size(), read without mutex_ */
	/* Tasks whose callback fields are wrapped, guarded by mutex_. */
	HandleTable<struct starpu_task *, HeldTask *> held_tasks_;
	/* The records of tasks and submissions no longer held, for the next
	 * ones (guarded by mutex_). */
	RecordPool<HeldTask> spare_held_tasks_;
	RecordPool<Submission> spare_submissions_;
};

} // namespace fusing

#endif
