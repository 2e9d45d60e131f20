/* The StarPU task that runs one group of deferred tasks (doc/design.md,
 * section 12).
 *
 * Unlike a ready-time batch (ready/merged_task.h), a group's members were
 * never given to StarPU: the merged task is submitted with sequential
 * consistency on, and StarPU derives its dependencies from its handles
 * (each once, modes OR-ed) exactly as it would have for the members, in
 * the order the window submits groups.  Members may be of different
 * codelets (vertical fusion).  Threads:
 *  - submit_group: the thread flushing the window, window lock held
 *    (StarPU may run the members' prologues inside it);
 *  - the prologue (members' ready prologues, in order): the thread that
 *    made the merged task ready, inside StarPU's push;
 *  - the CPU function: the worker; runs each member on its own buffers, in
 *    order, or each phase of a kernel group (all members, when they have
 *    one codelet) through a registered batched implementation once or the
 *    kernel pack entry bound to the codelet (kernels/kernel_binding.h),
 *    phase after phase;
 *  - the callback: the worker, after StarPU released the merged task's
 *    data: each member's callback in order; the members StarPU would
 *    destroy (destroy = 1) are handed to the window, and freed by the next
 *    thread that submits a task or ends a wait (retired_members.h).
 * While a member's function, prologue or callback runs,
 * starpu_task_get_current() answers with the member, and the merged task
 * stands for it in dependencies declared on it (current_member.h). */
#ifndef STARPU_FUSING_SUBMISSION_MERGED_GROUP_H
#define STARPU_FUSING_SUBMISSION_MERGED_GROUP_H

#include <starpu.h>

#include <atomic>
#include <memory>
#include <algorithm>
#include <vector>

namespace fusing {

class BatchTrace;
class CodeletObservations;
class KernelBindings;
class NamedMembers;
class RetiredMembers;
class Statistics;
class UncountedMembers;
struct ReadyWorkPriorities;

struct GroupReports {
	CodeletObservations *observations;
	Statistics *stats; /* null when STARPU_FUSING_STATS is off */
	BatchTrace *trace; /* null without STARPU_FUSING_TRACE */
	NamedMembers *names;                       /* the window's */
	std::atomic<std::size_t> *running_groups; /* the window's: submitted, callback not ended */
	RetiredMembers *retired;                  /* the window's: ended members to free */
	UncountedMembers *uncounted;              /* the window's: members StarPU does not count */
	KernelBindings *kernels; /* the kernel pack's bindings (none bind with STARPU_FUSING_KERNELS=off) */
	ReadyWorkPriorities *priorities; /* the engine's: ready and running work by priority */
};

using SubmitFunction = int (*)(struct starpu_task *);

/* A partition plan as the window elided it (doc/design.md, section 12,
 * plan elision): its filter and the parent's and each child's interface on
 * the main memory node, copied then.  The program may clean the plan, which unregisters the
 * children, before the merged task runs: StarPU sees no task on them. */
struct ElidedPlan {
	struct starpu_data_filter filter;
	std::vector<unsigned char> parent_interface;              /* on the main memory node */
	std::vector<std::vector<unsigned char>> child_interfaces; /* the same, in the plan's order */
};

/* A use of a plan's child served from its parent's buffer: the use's handle
 * is the parent, and the member gets the child's interface built from the
 * parent's with the plan's filter, as StarPU builds it when the plan is
 * made. */
struct ChildView {
	std::shared_ptr<const ElidedPlan> plan;
	unsigned index; /* the child's place in the plan */
};

/* A group's members in order, and their buffers as they were when each was
 * deferred: a program may change its codelet's modes[] before its next
 * submission (DAHL does), and StarPU reads them at submission. */
struct GroupMembers {
	std::vector<struct starpu_task *> tasks;
	std::vector<unsigned> first_use; /* task m's buffers are uses first_use[m].. */
	std::vector<starpu_data_handle_t> use_handles;
	std::vector<enum starpu_data_access_mode> use_modes; /* a view's are the child's */
	/* Empty, or per use: its view in views, or -1. */
	std::vector<int> view_of_use;
	std::vector<ChildView> views;
	/* A kernel group's phases (doc/design.md, section 12, kernel
	 * groups): phase p is members [phase_starts[p], phase_starts[p + 1])
	 * (the last one runs to the end), all of one codelet with a batched
	 * implementation, run in one call after the phases before it.  Empty
	 * for other groups. */
	std::vector<unsigned> phase_starts;

	/* Use u, of a child, is served from parent from now on. */
	void make_view(std::size_t use, starpu_data_handle_t parent, ChildView view)
	{
		if (view_of_use.empty())
			view_of_use.assign(use_handles.size(), -1);
		use_handles[use] = parent;
		view_of_use[use] = static_cast<int>(views.size());
		views.push_back(std::move(view));
	}
	bool is_view(std::size_t use) const { return !view_of_use.empty() && view_of_use[use] >= 0; }
	/* The member use u belongs to. */
	std::size_t member_of_use(std::size_t use) const
	{
		return static_cast<std::size_t>(std::upper_bound(first_use.begin(), first_use.end(), use) - first_use.begin()) - 1;
	}

	/* Room for tasks of nbuffers each: one allocation per group. */
	void reserve(std::size_t tasks_count, unsigned nbuffers)
	{
		tasks.reserve(tasks_count);
		first_use.reserve(tasks_count);
		use_handles.reserve(tasks_count * nbuffers);
		use_modes.reserve(tasks_count * nbuffers);
	}
	void add(struct starpu_task *task)
	{
		tasks.push_back(task);
		first_use.push_back(static_cast<unsigned>(use_handles.size()));
		const unsigned nbuffers = STARPU_TASK_GET_NBUFFERS(task);
		for (unsigned b = 0; b < nbuffers; b++) {
			use_handles.push_back(STARPU_TASK_GET_HANDLE(task, b));
			use_modes.push_back(STARPU_TASK_GET_MODE(task, b));
			if (!view_of_use.empty())
				view_of_use.push_back(-1);
		}
	}
	/* Uses of task m: [first_use[m], end_use(m)). */
	std::size_t end_use(std::size_t m) const { return m + 1 < tasks.size() ? first_use[m + 1] : use_handles.size(); }

	/* The phase member m is in (phase_starts), 0 without phases. */
	std::size_t phase_of(std::size_t m) const
	{
		if (phase_starts.empty())
			return 0;
		return static_cast<std::size_t>(std::upper_bound(phase_starts.begin(), phase_starts.end(), m) - phase_starts.begin()) - 1;
	}
	/* The members m with keep[m], in their order, each with its uses; a
	 * phase keeps its kept members together. */
	GroupMembers subset(const std::vector<bool> &keep) const
	{
		GroupMembers kept;
		kept.views = views;
		std::size_t last_phase = 0;
		for (std::size_t m = 0; m < tasks.size(); m++) {
			if (!keep[m])
				continue;
			if (!phase_starts.empty() && (kept.tasks.empty() || phase_of(m) != last_phase))
				kept.phase_starts.push_back(static_cast<unsigned>(kept.tasks.size()));
			last_phase = phase_of(m);
			kept.tasks.push_back(tasks[m]);
			kept.first_use.push_back(static_cast<unsigned>(kept.use_handles.size()));
			for (std::size_t u = first_use[m]; u < end_use(m); u++) {
				kept.use_handles.push_back(use_handles[u]);
				kept.use_modes.push_back(use_modes[u]);
				if (!view_of_use.empty())
					kept.view_of_use.push_back(view_of_use[u]);
			}
		}
		return kept;
	}

	/* The same members, phase by phase (member m is in phase
	 * phase_of[m] < phases), in their order within each phase, with
	 * phase_starts set. */
	GroupMembers in_phase_order(const std::vector<unsigned> &phase_of, unsigned phases) const
	{
		GroupMembers ordered;
		ordered.reserve(tasks.size(), tasks.empty() ? 0 : static_cast<unsigned>(use_handles.size() / tasks.size()) + 1);
		ordered.views = views;
		for (unsigned p = 0; p < phases; p++) {
			ordered.phase_starts.push_back(static_cast<unsigned>(ordered.tasks.size()));
			for (std::size_t m = 0; m < tasks.size(); m++) {
				if (phase_of[m] != p)
					continue;
				ordered.tasks.push_back(tasks[m]);
				ordered.first_use.push_back(static_cast<unsigned>(ordered.use_handles.size()));
				for (std::size_t u = first_use[m]; u < end_use(m); u++) {
					ordered.use_handles.push_back(use_handles[u]);
					ordered.use_modes.push_back(use_modes[u]);
					if (!view_of_use.empty())
						ordered.view_of_use.push_back(view_of_use[u]);
				}
			}
		}
		return ordered;
	}
};

/* A member whose termination a stand-in makes (end_dependency_stand_in.h):
 * its merged task runs it, then releases the stand-in instead of running
 * its callback and freeing it. */
struct MemberStandIn {
	struct starpu_task *member;
	struct starpu_task *stand_in;
};

/* Submits members (at least one, all of context sched_ctx) as one task
 * through real_submit; predicted_us is NaN when unknown; stand_in, when
 * given, names one of the members.  Returns the number of distinct handles
 * it has.  A refused submission stops the program with a message: the
 * members could not run. */
std::size_t submit_group(GroupMembers members, unsigned sched_ctx, double predicted_us, const GroupReports &reports,
		  SubmitFunction real_submit, const MemberStandIn *stand_in = nullptr);

/* When member runs in a merged task submitted whose callback has not
 * begun: that callback will release stand_in instead of terminating member
 * (MemberStandIn), and handles and modes get member's uses as the window
 * recorded them; true.  Else false (StarPU has member, or it has
 * terminated).  Any thread; takes the registry's lock of merged tasks,
 * a leaf lock, which their callbacks take first to claim their members. */
bool stand_in_for_running_member(struct starpu_task *member, struct starpu_task *stand_in,
				 std::vector<starpu_data_handle_t> &handles, std::vector<enum starpu_data_access_mode> &modes);

/* True when task is a group's merged task. */
bool is_group_task(const struct starpu_task *task);

} // namespace fusing

#endif
