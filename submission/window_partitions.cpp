/* Partition trees in the submission window (window.h, partition_trees.h;
 * doc/design.md, section 12): a task on a followed tree, and the plan
 * switches StarPU makes for it (tree_access, follow_plan_switches_locked);
 * the program's partition calls placed between groups
 * (record_partition_call) and plan elision (may_elide, spoil_episodes_locked,
 * elide_plan_locked, note_not_elided); the other partition functions run
 * after what they could observe (run_partition_change) and calls made
 * outside the window; what STARPU_FUSING_STATS prints of them.
 *
 * Locks and threads:
 *  - record_partition_call, run_partition_change: the program's thread, or a
 *    callback's (interpose/interpose_partition.cpp); each takes mutex_.
 *    record_partition_call may take closer_mutex_ after it, briefly, to
 *    wake the closer thread when it leaves a call in a window that held
 *    nothing; run_partition_change takes outside_calls_mutex_ after it.
 *  - tree_access, follow_plan_switches_locked (for submit(), window.cpp),
 *    may_elide, spoil_episodes_locked, elide_plan_locked, note_not_elided,
 *    stop_following_unseen_children: mutex_ held.
 *  - note_partition_outside_window: any thread, under StarPU's call; takes
 *    only outside_calls_mutex_, a leaf lock.
 *  - unpartitions_not_elided, partitions_handed_over: atomics, read unlocked
 *    (at shutdown); hand_over_text: no state. */
#include "submission/window.h"

#include "core/member_run.h"
#include "core/starpu_functions.h"
#include "submission/access_modes.h"

#include <algorithm>
#include <memory>

namespace fusing {

SubmissionWindow::TreeAccess SubmissionWindow::tree_access(const struct starpu_task *task) const
{
	TreeAccess found;
	if (!task->cl)
		return found;
	const bool codelet_switches = !(task->cl->flags & STARPU_CODELET_NOPLANS);
	for (unsigned i = 0; i < STARPU_TASK_GET_NBUFFERS(task); i++) {
		const starpu_data_handle_t handle = STARPU_TASK_GET_HANDLE(task, i);
		if (!trees_.in_tree(handle))
			continue;
		if (trees_.excluded(handle))
			found.excluded = true;
		const enum starpu_data_access_mode mode = STARPU_TASK_GET_MODE(task, i);
		if (reduces(mode))
			found.reduces = true;
		/* StarPU 1.4 counts a reduction as a write; 1.3 as a read, for
		 * which no fewer switches are needed. */
		if (codelet_switches && !(mode & STARPU_NOPLAN) && trees_.switches_plans(handle, (mode & (STARPU_W | STARPU_REDUX)) != 0))
			found.switches_plans = true;
	}
	return found;
}

void SubmissionWindow::follow_plan_switches_locked(const struct starpu_task *task)
{
	/* The handles StarPU switches plans for, in its own order
	 * (_starpu_task_submit, core/task.c); as tree_access. */
	switching_.clear();
	for (unsigned i = 0; i < STARPU_TASK_GET_NBUFFERS(task); i++) {
		const starpu_data_handle_t handle = STARPU_TASK_GET_HANDLE(task, i);
		const enum starpu_data_access_mode mode = STARPU_TASK_GET_MODE(task, i);
		if (trees_.in_tree(handle) && !trees_.excluded(handle) && !(mode & STARPU_NOPLAN))
			switching_.push_back({handle, plan_switch_writes(mode)});
	}
	/* Two accesses in one tree: StarPU switches for each in the order of
	 * its sorted buffers, which the window does not reproduce.  A
	 * synchronous task is submitted after the window's lock is released
	 * (submit()), and a task deferred meanwhile on the tree would be
	 * placed by a state StarPU has not reached yet.  Their trees are no
	 * longer followed (partition_trees.h). */
	bool follow = !task->synchronous;
	for (std::size_t a = 0; a < switching_.size() && follow; a++)
		for (std::size_t b = a + 1; b < switching_.size() && follow; b++)
			if (trees_.same_tree(switching_[a].handle, switching_[b].handle))
				follow = false;
	for (const Access<starpu_data_handle_t> &access : switching_) {
		if (!follow)
			trees_.exclude_tree(access.handle);
		else if (trees_.switches_plans(access.handle, access.writes))
			trees_.follow_switch(access.handle, access.writes);
	}
}

namespace {

/* The accesses StarPU's switch task gives a partition call: the parent
 * and every child, as _starpu_data_partition_submit and
 * _starpu_data_unpartition_submit do (filters.c, 1.3 and 1.4); a
 * read-only partition reads the parent. */
void call_accesses(PartitionTrees::Call call, starpu_data_handle_t parent, unsigned nparts, const starpu_data_handle_t *children,
		   std::vector<Access<starpu_data_handle_t>> &accesses)
{
	accesses.clear();
	accesses.push_back({parent, call != PartitionTrees::Call::partition_readonly});
	for (unsigned i = 0; i < nparts; i++)
		accesses.push_back({children[i], true});
}

} // namespace

void SubmissionWindow::record_partition_call(PartitionTrees::Call call, starpu_data_handle_t parent, unsigned nparts,
					     const starpu_data_handle_t *children, std::function<void()> starpu_call)
{
	std::lock_guard<std::recursive_mutex> lock(mutex_);
	if (call == PartitionTrees::Call::unpartition)
		unpartitions_recorded_.fetch_add(1, std::memory_order_relaxed);
	if (!episodes_.empty())
		spoil_episodes_locked(call, parent);
	if (call == PartitionTrees::Call::unpartition) {
		if (episodes_.empty())
			note_not_elided(parent, nullptr, false);
		else if (elide_plan_locked(parent, nparts, children))
			return;
	}
	trees_.apply(call, parent, children, nparts);
	/* Run under mutex_, as every call the window holds. */
	starpu_call = [this, parent, call_starpu = std::move(starpu_call)] {
		trees_.note_reached_starpu(parent);
		call_starpu();
	};
	call_accesses(call, parent, nparts, children, accesses_);
	const std::size_t position = std::max(order_.call_position(accesses_), first_open_);
	const std::size_t opened = first_open_ + groups_.size();
	const bool calls_at_position = position < opened ? !groups_[position - first_open_].calls_before.empty() : !pending_calls_.empty();
	if (!trees_.in_tree(parent) || trees_.excluded(parent)) {
		/* Nothing of its tree is deferred any more: it runs now, after
		 * what it must follow. */
		if (position != first_open_ || calls_at_position)
			flush_locked();
		run_call(starpu_call);
		return;
	}
	/* A partition that its unpartition may elide waits in the window even
	 * when nothing must precede it. */
	const bool opens_episode = (call == PartitionTrees::Call::partition || call == PartitionTrees::Call::partition_readonly) &&
				   may_elide(parent, nparts, children);
	order_.place_call(position, accesses_);
	if (position == first_open_ && !calls_at_position && !opens_episode) {
		/* Nothing in the window must run before it: StarPU may have
		 * it now. */
		run_call(starpu_call);
		return;
	}
	PendingCall pending{std::move(starpu_call), opens_episode ? parent : nullptr};
	if (opens_episode)
		episodes_.push_back(PlanEpisode{parent, std::min(position, opened), std::vector<starpu_data_handle_t>(children, children + nparts)});
	if (position < opened) {
		groups_[position - first_open_].calls_before.push_back(std::move(pending));
	} else {
		if (pending_calls_.empty())
			pending_since_us_ = starpu_timing_now();
		pending_calls_.push_back(std::move(pending));
	}
	if (calls_waiting_.fetch_add(1, std::memory_order_seq_cst) == 0 && deferred_.load(std::memory_order_relaxed) == 0 &&
	    !closer_watching_.load(std::memory_order_seq_cst)) {
		std::lock_guard<std::mutex> closer_lock(closer_mutex_);
		closer_wakeup_.notify_one();
	}
}

bool SubmissionWindow::may_elide(starpu_data_handle_t parent, unsigned nparts, const starpu_data_handle_t *children) const
{
	if (!limits_.elide_plans || !trees_.plan_filter(parent))
		return false;
	/* The children of the parent's one plan, all of them, in its order:
	 * each gets its place in the plan from there. */
	const std::vector<starpu_data_handle_t> &plan = trees_.plan_children(parent);
	if (plan.size() != nparts || !std::equal(plan.begin(), plan.end(), children))
		return false;
	/* The merged tasks will read the parent: StarPU refuses to read data
	 * that never had a value, which a parent registered without a buffer
	 * (home node -1) may not have (its partition would then submit no
	 * switch; doc/design.md, section 12). */
	if (starpu_data_get_home_node(parent) < 0)
		return false;
	for (const PlanEpisode &episode : episodes_)
		if (episode.parent == parent)
			return false;
	return true;
}

void SubmissionWindow::spoil_episodes_locked(PartitionTrees::Call call, starpu_data_handle_t parent)
{
	/* Any other call on the episode's parent (an upgrade) or on a handle
	 * of its tree (a plan of a child partitioned: its tasks' handles are
	 * no children of the parent) leaves the episode to StarPU. */
	for (PlanEpisode &episode : episodes_) {
		const bool closes = call == PartitionTrees::Call::unpartition && parent == episode.parent;
		if (!closes && (parent == episode.parent || trees_.related(parent, episode.parent)))
			episode.spoiled = true;
	}
}

void SubmissionWindow::note_not_elided(starpu_data_handle_t parent, PlanEpisode *episode, bool member_calibrating)
{
	auto handed = partition_handed_over_.find(parent);
	if (member_calibrating) {
		count_not_elided(NotElided::member_calibrating);
	} else if ((episode && episode->spoiled) || (handed != partition_handed_over_.end() && handed->second.spoiled)) {
		count_not_elided(NotElided::other_call_on_tree);
	} else if (handed != partition_handed_over_.end() && !episode) {
		count_not_elided(NotElided::partition_handed_over);
		handed_over_[static_cast<int>(handed->second.cause)].fetch_add(1, std::memory_order_relaxed);
	} else {
		/* Not a partition of the whole plan, or an unpartition naming
		 * other children than its partition. */
		count_not_elided(NotElided::never_elidable);
	}
	if (handed != partition_handed_over_.end())
		partition_handed_over_.erase(handed);
	if (episode)
		episode->unpartition_recorded = true;
}

bool SubmissionWindow::elide_plan_locked(starpu_data_handle_t parent, unsigned nparts, const starpu_data_handle_t *children)
{
	auto episode = std::find_if(episodes_.begin(), episodes_.end(), [&](const PlanEpisode &e) { return e.parent == parent; });
	if (episode == episodes_.end()) {
		note_not_elided(parent, nullptr, false);
		return false;
	}
	if (episode->spoiled || episode->children.size() != nparts || !std::equal(episode->children.begin(), episode->children.end(), children)) {
		note_not_elided(parent, &*episode, false);
		return false;
	}
	/* A use the group noted as one of this plan's children (the plan's
	 * children are the episode's, checked above). */
	auto of_this_plan = [&](const Group &group, const Group::ChildUse &use) {
		return use.child < nparts && group.members.use_handles[use.use] == children[use.child];
	};
	/* A member whose codelet's model StarPU calibrates adds its duration
	 * to the model, which reads its handles: the program may unregister
	 * the children (cleaning the plan) before it runs.  Then the partition
	 * goes to StarPU (doc/design.md, section 12). */
	for (std::size_t g = episode->position - first_open_; g < groups_.size(); g++) {
		const Group &group = groups_[g];
		const std::vector<Group::ChildUse> *uses = group.child_uses_of.find(parent);
		if (!uses)
			continue;
		for (const Group::ChildUse &use : *uses)
			if (of_this_plan(group, use) && starpu_calibrates(group.members.tasks[group.members.member_of_use(use.use)])) {
				note_not_elided(parent, &*episode, true);
				return false;
			}
	}
	/* The partition is still in the window, so is every group from its
	 * position on (groups go to StarPU in order, the call with the first):
	 * take the call out. */
	const std::size_t opened = first_open_ + groups_.size();
	std::vector<PendingCall> &calls = episode->position < opened ? groups_[episode->position - first_open_].calls_before : pending_calls_;
	auto partition = std::find_if(calls.begin(), calls.end(), [&](const PendingCall &c) { return c.opens_episode == parent; });
	if (partition == calls.end()) {
		note_not_elided(parent, &*episode, false);
		return false;
	}
	calls.erase(partition);
	calls_waiting_.fetch_sub(1, std::memory_order_relaxed);
	/* Every use of a child since the partition is in those groups (the
	 * uses conflict with the call): each becomes a view of the parent. */
	auto plan = std::make_shared<ElidedPlan>();
	plan->filter = *trees_.plan_filter(parent);
	auto copy_interface = [](starpu_data_handle_t handle, std::vector<unsigned char> &copy) {
		const auto *bytes = static_cast<const unsigned char *>(starpu_data_get_interface_on_node(handle, STARPU_MAIN_RAM));
		copy.assign(bytes, bytes + starpu_data_get_interface_ops(handle)->interface_size);
	};
	copy_interface(parent, plan->parent_interface);
	plan->child_interfaces.resize(nparts);
	for (unsigned c = 0; c < nparts; c++)
		copy_interface(children[c], plan->child_interfaces[c]);
	for (std::size_t g = episode->position - first_open_; g < groups_.size(); g++) {
		Group &group = groups_[g];
		std::vector<Group::ChildUse> *uses = group.child_uses_of.find(parent);
		if (!uses)
			continue;
		std::vector<unsigned> viewed;
		for (const Group::ChildUse &use : *uses) {
			if (!of_this_plan(group, use))
				continue;
			/* The group now holds the parent, not the children
			 * (fits_trees). */
			forget_tree_handle(group, children[use.child]);
			group.members.make_view(use.use, parent, ChildView{plan, use.child});
			viewed.push_back(use.use);
		}
		const bool any_view = !viewed.empty();
		/* They are uses of the parent now: of a child of the
		 * grandparent's plan, when the parent has one. */
		uses->clear();
		starpu_data_handle_t grandparent;
		unsigned place;
		if (any_view && trees_.child_of_plan(parent, grandparent, place)) {
			std::vector<Group::ChildUse> &of_grandparent = group.child_uses_of.find_or_add(grandparent);
			for (unsigned u : viewed)
				of_grandparent.push_back({u, place});
		}
		if (any_view)
			note_tree_handle(group, parent);
	}
	episodes_.erase(episode);
	/* The tree's state and the order rule's record are as if both calls
	 * had been placed: what comes next is ordered the same way. */
	trees_.apply(PartitionTrees::Call::unpartition, parent, children, nparts);
	call_accesses(PartitionTrees::Call::unpartition, parent, nparts, children, accesses_);
	order_.place_call(std::max(order_.call_position(accesses_), first_open_), accesses_);
	plans_elided_.fetch_add(1, std::memory_order_relaxed);
	return true;
}

void SubmissionWindow::run_partition_change(PartitionChange change, starpu_data_handle_t parent, unsigned nparts,
					    const starpu_data_handle_t *children, const std::function<void()> &starpu_call,
					    const struct starpu_data_filter *plan_filter)
{
	std::lock_guard<std::recursive_mutex> lock(mutex_);
	switch (change) {
	case PartitionChange::plan:
		accesses_.assign(1, {parent, true});
		break;
	case PartitionChange::clean:
		call_accesses(PartitionTrees::Call::partition, parent, nparts, children, accesses_);
		break;
	case PartitionChange::unfollowed:
		accesses_.clear();
		break;
	}
	if (change == PartitionChange::unfollowed)
		flush_locked();
	else
		flush_through_locked(order_.latest_conflicting_group(accesses_));
	{
		std::lock_guard<std::mutex> outside(outside_calls_mutex_);
		for (starpu_data_handle_t reached : partitioned_outside_)
			trees_.note_reached_starpu(reached);
		partitioned_outside_.clear();
	}
	if (change == PartitionChange::clean && trees_.never_reached_starpu(parent, children, nparts))
		stop_following_unseen_children(children, nparts);
	run_call(starpu_call);
	/* A plan's children exist only now. */
	switch (change) {
	case PartitionChange::plan:
		trees_.add_plan(parent, children, nparts, *plan_filter);
		any_tree_.store(true, std::memory_order_relaxed);
		break;
	case PartitionChange::clean:
		trees_.clean_plan(parent, children, nparts);
		partition_handed_over_.erase(parent);
		break;
	case PartitionChange::unfollowed:
		if (trees_.in_tree(parent))
			trees_.exclude_tree(parent);
		break;
	}
}

void SubmissionWindow::note_partition_outside_window(starpu_data_handle_t parent)
{
	std::lock_guard<std::mutex> outside(outside_calls_mutex_);
	partitioned_outside_.insert(parent);
}

/* The plan's children were never seen by StarPU (every partition of the
 * plan elided, PartitionTrees::never_reached_starpu) and nothing left in
 * the window uses them (the clean's flush took every conflicting group):
 * StarPU holds no access to them, so their sequential consistency has
 * nothing to order.  Turned off, starpu_data_partition_clean unregisters
 * each child at once instead of through an acquisition with a
 * synchronisation task before and after it (starpu_data_unregister_submit,
 * user_interactions.c, 1.3 and 1.4): two tasks per child saved
 * (doc/design.md, section 12).  StarPU's definition, not the flush
 * barrier's entry: the window is flushed already. */
void SubmissionWindow::stop_following_unseen_children(const starpu_data_handle_t *children, unsigned nparts)
{
	static StarpuFunction<void (*)(starpu_data_handle_t, unsigned)> set_sequential_consistency(
		"starpu_data_set_sequential_consistency_flag");
	for (unsigned i = 0; i < nparts; i++)
		set_sequential_consistency.get()(children[i], 0);
	plans_cleaned_unseen_.fetch_add(1, std::memory_order_relaxed);
}

std::uint64_t SubmissionWindow::unpartitions_not_elided(NotElided reason) const
{
	return not_elided_[static_cast<int>(reason)].load(std::memory_order_relaxed);
}

std::uint64_t SubmissionWindow::partitions_handed_over(HandOver cause) const
{
	return handed_over_[static_cast<int>(cause)].load(std::memory_order_relaxed);
}

const char *SubmissionWindow::hand_over_text(HandOver cause)
{
	switch (cause) {
	case HandOver::task_not_deferred: return "a conflicting task not deferred";
	case HandOver::program_call: return "a StarPU call of the program";
	case HandOver::group_full: return "a full group";
	case HandOver::window_full: return "a full window";
	case HandOver::max_delay: return "STARPU_FUSING_MAX_DELAY";
	case HandOver::idle_worker: return "an idle worker";
	case HandOver::count_: break;
	}
	return "?";
}

} // namespace fusing
