/* End dependencies the program adds to a deferred task after its submission
 * (window.h, stand_in_for_end_dependencies; doc/design.md, section 12,
 * end dependencies added after submission).
 *
 * The task's termination moves to a stand-in (end_dependency_stand_in.h)
 * that StarPU gets right after the merged task running the task, before
 * anything submitted after the task that could depend on it:
 *  - the task still in the window: its group goes to StarPU split after
 *    it (the members up to it, run first, then the stand-in, then the
 *    rest), the groups opened before it first;
 *  - its group already with StarPU (its merged task's callback has not
 *    begun): that callback hands its termination over
 *    (stand_in_for_running_member), and the stand-in goes to StarPU now.
 * Then the window is flushed whole, each group in two merged tasks: the
 * members that depend on the task (they conflict with it, or with a member
 * before them that does) after those that do not, so that no member waits
 * for the program's release unless StarPU would have made it wait.  The
 * stand-in's data counts as held until it terminates (held_data.h): what
 * follows on it is not deferred meanwhile.
 *
 * A task StarPU has (submitted without being deferred: tags, explicit
 * dependencies, data on a tree the window does not follow...) gets no
 * stand-in, but may now wait for the program as much: its data is held
 * until it terminates, and the window is flushed the same way
 * (end_dependencies_added_to_submitted).  Without that, the API fuzzer's
 * seed 98 hung 4 times in 4 (a task writing data the task read, merged
 * with the task releasing it).
 *
 * What cannot be undone: members merged after the task into a merged task
 * StarPU already has ran right after it, release or not.
 *
 * Locks and threads: the thread adding the dependency (the program's, a
 * callback's, another task's), with mutex_ held; StarPU's submissions run
 * under it as for any hand-over (window_flush.cpp). */
#include "submission/window.h"

#include "submission/access_modes.h"
#include "submission/end_dependency_stand_in.h"

#include <cmath>
#include <unordered_map>

namespace fusing {

/* The accesses of the task given end dependencies and of the members that
 * depend on it: a member conflicting with one (same handle, or related in a
 * followed partition tree, one of the two writing) depends on the task. */
class SubmissionWindow::DependentAccesses {
public:
	explicit DependentAccesses(const SubmissionWindow &window) : window_(window) {}
	void add(starpu_data_handle_t handle, enum starpu_data_access_mode mode)
	{
		const bool writes = changes_data(mode);
		accessed_[handle] = accessed_[handle] || writes;
		starpu_data_handle_t ancestor;
		for (starpu_data_handle_t h = handle; parent_of(h, ancestor); h = ancestor)
			below_[ancestor] = below_[ancestor] || writes;
	}
	bool conflicts(starpu_data_handle_t handle, enum starpu_data_access_mode mode) const
	{
		const bool writes = changes_data(mode);
		auto conflicting = [&](const std::unordered_map<starpu_data_handle_t, bool> &table, starpu_data_handle_t h) {
			auto found = table.find(h);
			return found != table.end() && (writes || found->second);
		};
		if (conflicting(below_, handle))
			return true;
		starpu_data_handle_t ancestor;
		for (starpu_data_handle_t h = handle;; h = ancestor) {
			if (conflicting(accessed_, h))
				return true;
			if (!parent_of(h, ancestor))
				return false;
		}
	}
	/* Whether member m of members depends on what was added; if so, its
	 * accesses are added. */
	bool take(const GroupMembers &members, std::size_t m)
	{
		bool depends = false;
		for (std::size_t u = members.first_use[m]; u < members.end_use(m) && !depends; u++)
			depends = conflicts(members.use_handles[u], members.use_modes[u]);
		if (depends)
			for (std::size_t u = members.first_use[m]; u < members.end_use(m); u++)
				add(members.use_handles[u], members.use_modes[u]);
		return depends;
	}

private:
	bool parent_of(starpu_data_handle_t handle, starpu_data_handle_t &parent) const
	{
		return tree_parent_of(&window_, handle, parent);
	}
	const SubmissionWindow &window_;
	std::unordered_map<starpu_data_handle_t, bool> accessed_; /* handle -> some access writes it */
	std::unordered_map<starpu_data_handle_t, bool> below_;    /* strict ancestor of an access -> one below writes */
};

struct starpu_task *SubmissionWindow::stand_in_for_end_dependencies(struct starpu_task *task,
								    const std::function<void(struct starpu_task *)> &add_dependencies)
{
	if (!holds_tasks() && running_groups_.load(std::memory_order_acquire) == 0)
		return nullptr;
	std::lock_guard<std::recursive_mutex> lock(mutex_);
	HandOverScope cause(*this, HandOver::program_call);
	/* The groups before the task's go first; handing them over may run
	 * prologues that submit (same thread), so the task is looked for
	 * again each time. */
	auto group_holding = [&]() -> long {
		for (std::size_t g = 0; g < groups_.size(); g++)
			for (struct starpu_task *member : groups_[g].members.tasks)
				if (member == task)
					return static_cast<long>(g);
		return -1;
	};
	long held_in = group_holding();
	while (held_in > 0) {
		submit_groups_through(first_open_ + static_cast<std::size_t>(held_in) - 1);
		held_in = group_holding();
	}
	struct starpu_task *stand_in = make_end_dependency_stand_in(task);
	DependentAccesses dependent(*this);
	GroupMembers tail;
	unsigned tail_ctx = 0;
	double tail_share_us = NAN;
	if (held_in == 0) {
		Group group = take_first_group_locked();
		GroupMembers &members = group.members;
		const std::size_t count = members.tasks.size();
		std::size_t position = 0;
		while (members.tasks[position] != task)
			position++;
		std::vector<starpu_data_handle_t> handles(members.use_handles.begin() + members.first_use[position],
							  members.use_handles.begin() + members.end_use(position));
		std::vector<enum starpu_data_access_mode> modes(members.use_modes.begin() + members.first_use[position],
								members.use_modes.begin() + members.end_use(position));
		give_member_accesses(stand_in, handles, modes);
		for (std::size_t u = 0; u < handles.size(); u++)
			dependent.add(handles[u], modes[u]);
		std::vector<bool> in_head(count, false);
		for (std::size_t m = 0; m <= position; m++)
			in_head[m] = true;
		std::vector<bool> in_tail(in_head.size());
		for (std::size_t m = 0; m < count; m++)
			in_tail[m] = !in_head[m];
		const double member_share_us = group.unpredicted ? NAN : group.predicted_us / double(count);
		tail = members.subset(in_tail);
		tail_ctx = group.sched_ctx;
		tail_share_us = member_share_us;
		const MemberStandIn named{task, stand_in};
		add_dependencies(stand_in);
		submit_members_locked(members.subset(in_head), group.sched_ctx, member_share_us * double(position + 1), &named);
	} else {
		std::vector<starpu_data_handle_t> handles;
		std::vector<enum starpu_data_access_mode> modes;
		if (!stand_in_for_running_member(task, stand_in, handles, modes)) {
			discard_end_dependency_stand_in(stand_in);
			return nullptr;
		}
		/* Its merged task may release the stand-in from now on: StarPU
		 * counts releases and the stand-in's own end alike, so the
		 * program's dependencies may still be added. */
		add_dependencies(stand_in);
		give_member_accesses(stand_in, handles, modes);
		for (std::size_t u = 0; u < handles.size(); u++)
			dependent.add(handles[u], modes[u]);
	}
	if (!task->destroy)
		names_.stand_in(task, stand_in);
	hand_to_starpu(stand_in, true);
	flush_apart_from_dependents_locked(std::move(tail), tail_ctx, tail_share_us, dependent);
	return stand_in;
}

void SubmissionWindow::end_dependencies_added_to_submitted(struct starpu_task *task)
{
	std::lock_guard<std::recursive_mutex> lock(mutex_);
	/* A task held already (a tag, declared dependencies) keeps its one
	 * hold: a second would outlive its termination. */
	if (!held_.holds_task(task))
		held_.hold_until_terminated(task);
	if (!holds_tasks())
		return;
	HandOverScope cause(*this, HandOver::program_call);
	DependentAccesses dependent(*this);
	for (unsigned b = 0; b < STARPU_TASK_GET_NBUFFERS(task); b++)
		dependent.add(STARPU_TASK_GET_HANDLE(task, b), STARPU_TASK_GET_MODE(task, b));
	flush_apart_from_dependents_locked(GroupMembers{}, 0, NAN, dependent);
}

void SubmissionWindow::flush_apart_from_dependents_locked(GroupMembers first, unsigned first_ctx, double member_share_us,
							  DependentAccesses &dependent)
{
	auto hand_over = [&](const GroupMembers &members, unsigned ctx, double share_us) {
		const std::size_t count = members.tasks.size();
		std::vector<bool> depends(count), independent(count);
		std::size_t dependents = 0;
		for (std::size_t m = 0; m < count; m++) {
			depends[m] = dependent.take(members, m);
			independent[m] = !depends[m];
			dependents += depends[m] ? 1 : 0;
		}
		if (dependents < count)
			submit_members_locked(members.subset(independent), ctx, share_us * double(count - dependents), nullptr);
		if (dependents > 0)
			submit_members_locked(members.subset(depends), ctx, share_us * double(dependents), nullptr);
	};
	if (!first.tasks.empty())
		hand_over(first, first_ctx, member_share_us);
	while (!groups_.empty()) {
		Group group = take_first_group_locked();
		const double share_us = group.unpredicted ? NAN : group.predicted_us / double(group.members.tasks.size());
		hand_over(group.members, group.sched_ctx, share_us);
	}
	run_calls_locked(std::move(pending_calls_));
	clear_record_when_empty();
}

} // namespace fusing
