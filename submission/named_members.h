/* The deferred tasks a program may still name in a dependency, and the task
 * StarPU knows in their place.
 *
 * StarPU never sees a deferred task: a dependency declared on one must name
 * what StarPU runs instead, the merged task of its group (that task ends
 * after every member of the group, so the dependent waits for no less).
 * Only kept tasks (destroy = 0) can be named after their submission: StarPU
 * refuses a dependency declared then on a task it destroys itself, unless
 * that task is the current one (_starpu_task_declare_deps_array,
 * task_deps.c), which current_member.h answers.  So the window records each
 * deferred kept task with its group number (deferred), and the group's
 * merged task once made (submitted, before StarPU sees it); a declaration
 * naming a task still in the window first hands its group to StarPU
 * (interpose/interpose_task_deps.cpp).  It never waits for the task to run: a
 * declaration returns at once, as StarPU's does.
 *
 * A merged task holding kept members is kept too (detach = 0, destroy = 0):
 * StarPU accepts dependencies on it at any time.  It is destroyed once no
 * member can be named any more (the program destroyed, cleaned,
 * reinitialised or resubmitted each) and StarPU has finished it
 * (starpu_task_finished, hence detach = 0: a terminated task is not touched
 * by StarPU again, as when a program destroys a task after starpu_task_wait).
 *
 * Any thread; every method takes mutex_, which is taken after the window's
 * lock when both are held.  Under mutex_ the only StarPU call is
 * starpu_task_finished (take_finished_locked), which takes nothing but the
 * job's own sync_mutex, a lock StarPU never holds while it calls this
 * library; merged tasks are destroyed after mutex_ is released. */
#ifndef STARPU_FUSING_SUBMISSION_NAMED_MEMBERS_H
#define STARPU_FUSING_SUBMISSION_NAMED_MEMBERS_H

#include <starpu.h>

#include <atomic>
#include <cstddef>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace fusing {

class NamedMembers {
public:
	/* Where StarPU can find a named task. */
	struct Place {
		bool known = false;                  /* a deferred kept task */
		struct starpu_task *merged = nullptr; /* its group's merged task, once made */
		std::size_t group = 0;               /* else its group's number in the window */
	};

	/* The window deferred task, which the program keeps, into group
	 * (window lock held). */
	void deferred(struct starpu_task *task, std::size_t group);
	/* Whether members has a kept task: its merged task must then be kept
	 * (detach = 0) and recorded below before it is submitted. */
	static bool any_kept(const std::vector<struct starpu_task *> &members);
	/* The kept members of a group are run by merged, not yet submitted
	 * (window lock held). */
	void submitted(const std::vector<struct starpu_task *> &members, struct starpu_task *merged);
	Place find(struct starpu_task *task) const;
	/* The kept task is named by stand_in from now on, not by its merged
	 * task (end_dependency_stand_in.h): stand_in is kept, and destroyed
	 * once nothing names it and StarPU finished it. */
	void stand_in(struct starpu_task *task, struct starpu_task *stand_in);
	/* The program destroys, cleans, reinitialises or resubmits task: its
	 * address may name another task from now on.  Destroys the merged
	 * tasks that nothing can name any more and that StarPU has finished. */
	void forget(struct starpu_task *task);
	/* At shutdown, every task has ended: destroys every kept merged task
	 * StarPU finished. */
	void destroy_finished();

	NamedMembers() = default;
	~NamedMembers() { destroy_finished(); }
	NamedMembers(const NamedMembers &) = delete;
	NamedMembers &operator=(const NamedMembers &) = delete;

private:
	/* Moves merged tasks that are no longer named and that StarPU finished
	 * out of retired_ into done (mutex_ held). */
	void take_finished_locked(std::vector<struct starpu_task *> &done);

	mutable std::mutex mutex_;
	std::unordered_map<struct starpu_task *, Place> places_;          /* guarded by mutex_ */
	std::unordered_map<struct starpu_task *, std::size_t> names_left_; /* merged -> kept members still named; mutex_ */
	std::vector<struct starpu_task *> retired_;                       /* merged tasks named by nothing; mutex_ */
	std::atomic<bool> any_{false}; /* places_ was ever non-empty: forget()'s cheap exit */
};

} // namespace fusing

#endif
