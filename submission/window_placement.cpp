/* Where the submission window places a deferred task (window.h; doc/design.md,
 * section 12): the order rule's lowest group and the chain the task
 * continues (place), the group it joins otherwise (horizontal_group), when
 * a group is full, and what a group must not mix: kernel groups' phases
 * (fits_kernel, kernel_phase_for), reductions with other accesses
 * (fits_reductions), a handle with its ancestor in a partition tree
 * (fits_trees, and the tree handles and child uses noted for that and for
 * plan elision, window_partitions.cpp).
 *
 * Locks and threads: every function here runs with mutex_ held, in the
 * thread that submit() placed the task from (window.cpp); forget_tree_handle
 * and note_tree_handle also under elide_plan_locked (window_partitions.cpp).
 * place() may hand groups to StarPU under it (submit_groups_through,
 * flush_locked: window_flush.cpp), and may take closer_mutex_ after
 * mutex_, briefly, to wake the closer thread: when the window turns
 * non-empty while the closer is not watching, or through request_flush
 * when a worker waits. */
#include "submission/window.h"

#include "core/waiting_priorities.h"
#include "submission/access_modes.h"
#include "submission/window_internal.h"

#include <algorithm>
#include <cmath>

namespace fusing {
namespace {

bool reduces_any(const struct starpu_task *task)
{
	const unsigned nbuffers = STARPU_TASK_GET_NBUFFERS(task);
	for (unsigned i = 0; i < nbuffers; i++)
		if (reduces(STARPU_TASK_GET_MODE(task, i)))
			return true;
	return false;
}

} // namespace

const std::vector<Access<starpu_data_handle_t>> &SubmissionWindow::accesses_of(const struct starpu_task *task)
{
	const unsigned nbuffers = STARPU_TASK_GET_NBUFFERS(task);
	accesses_.resize(nbuffers);
	for (unsigned i = 0; i < nbuffers; i++)
		accesses_[i] = {STARPU_TASK_GET_HANDLE(task, i), changes_data(STARPU_TASK_GET_MODE(task, i))};
	return accesses_;
}

void SubmissionWindow::place(struct starpu_task *task, unsigned ctx, double predicted_us, std::uint64_t bytes,
			     bool batched_kernel)
{
	const std::vector<Access<starpu_data_handle_t>> &accesses = accesses_of(task);
	const long latest_conflict = order_.latest_conflicting_group(accesses);
	const std::size_t lowest = std::max<std::size_t>(latest_conflict < 0 ? 0 : latest_conflict, first_open_);
	/* Reductions of a handle conflict in the order rule, but none reads
	 * another's result: the latest group the task depends on is that of
	 * its other accesses (a group reducing a handle the task reads or
	 * writes cannot take it: fits_reductions). */
	const bool reduction = reduces_any(task);
	const long latest_dependency = reduction ? latest_conflict_without_reductions(task) : latest_conflict;
	/* A task joins a group holding a task it depends on only while that
	 * group is too small to be worth running alone: a group of dependent
	 * tasks runs them one after another, and grown further it would take
	 * the parallelism of narrow graphs (a 16-wide stencil of 100 us
	 * tasks merged into groups of 64 ran at half efficiency on 2
	 * workers).  Chains many wide still fill whole groups of tiny tasks. */
	const bool some_unpredicted = std::isnan(predicted_us);
	auto may_follow = [&](std::size_t g) {
		const Group &candidate = groups_[g - first_open_];
		const bool depends_on_it = latest_dependency >= 0 && static_cast<std::size_t>(latest_dependency) == g;
		return !depends_on_it || limits_.always_defer ||
		       (!some_unpredicted && !candidate.unpredicted && candidate.predicted_us + predicted_us < kWorthRunningAlone_us);
	};
	/* A kernel group's phase for the task (kernel_phase_for): only a
	 * group holding a conflicting access (the order rule's latest) has
	 * members to look through, and that look is kept for the placement
	 * below, which asks again for the group chosen. */
	long conflict_group_phase = -2; /* -2: not looked yet */
	auto kernel_phase_in = [&](std::size_t g) {
		const bool holds_conflict = latest_conflict >= 0 && static_cast<std::size_t>(latest_conflict) == g;
		if (holds_conflict && conflict_group_phase != -2)
			return conflict_group_phase;
		const long phase = kernel_phase_for(groups_[g - first_open_], task, accesses, predicted_us, holds_conflict, !may_follow(g));
		if (holds_conflict)
			conflict_group_phase = phase;
		return phase;
	};
	auto joinable = [&](std::size_t g) {
		if (g < lowest || g >= first_open_ + groups_.size())
			return false;
		const Group &candidate = groups_[g - first_open_];
		if (candidate.sched_ctx != ctx || priority_bucket(candidate.priority) != priority_bucket(task->priority) || full(candidate) ||
		    candidate.is_kernel_group() != batched_kernel ||
		    !fits_trees(candidate, accesses) || !fits_reductions(candidate, task))
			return false;
		return candidate.is_kernel_group() ? kernel_phase_in(g) >= 0 : may_follow(g);
	};
	/* A task that writes a handle continues the chain of that handle's
	 * last accessor: it joins that task's group (vertical fusion: a chain
	 * of read-write tasks becomes one merged task with one handle), or
	 * opens the chain's next group when that one is full.  Other tasks
	 * (only reads, reductions, or writes of data new to the window) join
	 * the newest group of their kind (horizontal fusion): for a codelet
	 * with a batched kernel, the newest of its own codelet and modes; for
	 * others, the newest not kept for one. */
	long chain_group = -1;
	for (std::size_t i = 0; i < accesses.size(); i++)
		if (accesses[i].writes && !reduces(STARPU_TASK_GET_MODE(task, i)))
			chain_group = std::max(chain_group, order_.last_access_group(accesses[i].handle));
	/* A chain whose last group already went to StarPU has nothing left to
	 * continue in the window (the record keeps groups handed over until
	 * the window is empty, and a handle registered meanwhile at the
	 * address of an unregistered one inherits its entry): the task is
	 * placed as one on data new to the window. */
	if (chain_group >= 0 && static_cast<std::size_t>(chain_group) < first_open_)
		chain_group = -1;
	/* Nor is there one to continue in a group of another kind (a kernel
	 * group for a task without a batched implementation, or the other
	 * way round): a group of its own for every such task would follow.
	 * A bias added to a convolution's output continues the convolution's
	 * kernel group in a phase of its own when both codelets have a
	 * batched implementation. */
	if (chain_group >= 0 && groups_[static_cast<std::size_t>(chain_group) - first_open_].is_kernel_group() != batched_kernel)
		chain_group = -1;
	/* A chain it cannot continue (its group is full, or already holds
	 * enough work that the task, which depends on it, should run beside
	 * other work rather than after it) leaves the task placed like one
	 * on data new to the window: the next step of a stencil writes cells
	 * the previous step read, and a group of its own per task followed. */
	const bool continues_chain = chain_group >= 0 && joinable(static_cast<std::size_t>(chain_group));
	const long horizontal =
		continues_chain ? -1 : horizontal_group(task, ctx, lowest, latest_dependency, reduction, batched_kernel, joinable);
	std::size_t group;
	long phase = 0; /* in a kernel group */
	if (continues_chain || horizontal >= 0) {
		group = static_cast<std::size_t>(continues_chain ? chain_group : horizontal);
		if (batched_kernel)
			phase = kernel_phase_in(group);
		order_.join(group, accesses);
	} else {
		group = order_.open(accesses);
		groups_.emplace_back();
		groups_.back().sched_ctx = ctx;
		groups_.back().priority = task->priority;
		open_group_priorities_[task->priority]++;
		groups_.back().members.reserve(limits_.max_group_tasks, STARPU_TASK_GET_NBUFFERS(task));
		groups_.back().opened_us = starpu_timing_now();
		/* The calls placed at the end of the window run before it. */
		groups_.back().calls_before.swap(pending_calls_);
	}
	Group &g = groups_[group - first_open_];
	if (batched_kernel) {
		if (static_cast<std::size_t>(phase) == g.phases.size()) {
			KernelPhase opened{task->cl, {}};
			for (unsigned i = 0; i < STARPU_TASK_GET_NBUFFERS(task); i++)
				opened.modes.push_back(STARPU_TASK_GET_MODE(task, i));
			g.phases.push_back(std::move(opened));
		}
		g.member_phase.push_back(static_cast<unsigned>(phase));
		g.phases[static_cast<std::size_t>(phase)].members++;
		if (!std::isnan(predicted_us))
			g.phases[static_cast<std::size_t>(phase)].predicted_us += predicted_us;
	}
	note_tree_handles(g, accesses);
	if (reduction)
		note_reduced_handles(g, task);
	note_child_uses(g, accesses);
	g.members.add(task);
	if (std::isnan(predicted_us))
		g.unpredicted = true;
	else
		g.predicted_us += predicted_us;
	g.bytes += bytes;
	if (!task->destroy)
		names_.deferred(task, group);
	tasks_deferred_.fetch_add(1, std::memory_order_relaxed);
	if (deferred_.fetch_add(1, std::memory_order_seq_cst) == 0 && !closer_watching_.load(std::memory_order_seq_cst)) {
		/* Under closer_mutex_: the closer tests holds_tasks() under it
		 * before it sleeps, so the wake-up cannot fall in between. */
		std::lock_guard<std::mutex> lock(closer_mutex_);
		closer_wakeup_.notify_one();
	}
	if (full(g)) {
		HandOverScope cause(*this, HandOver::group_full);
		submit_groups_through(group);
	} else if (deferred_.load(std::memory_order_relaxed) >= max_window_tasks_) {
		HandOverScope cause(*this, HandOver::window_full);
		flush_locked();
	} else if ((g.unpredicted || g.predicted_us >= kWorthRunningAlone_us) && load_.some_worker_waits(ctx)) {
		/* A worker waits, and the group is now worth running: what a
		 * polling worker's empty pop would ask for (request_flush), asked
		 * here, since a resting worker does not pop (a group of 5 tasks of
		 * 11 us waited for the 500 us safety net; sched/idle_workers.h). */
		request_flush();
	}
}

template <typename Joinable>
long SubmissionWindow::horizontal_group(const struct starpu_task *task, unsigned ctx, std::size_t lowest, long latest_dependency,
					bool reduction, bool batched_kernel, const Joinable &joinable) const
{
	/* Tasks that depend on a group still in the window come after it:
	 * gathered into one group, a generation of them (the next step of a
	 * stencil) would run on one worker while the others wait for it, and
	 * the next generation after it.  They are spread over as many groups
	 * after that one as the context has CPU workers, each task joining
	 * the one with the fewest members.  Other tasks join the newest group
	 * of their kind, whose predecessors may already be running.  So do
	 * reductions: one may join no group before the newest reducing its
	 * handle (the order rule's lowest), and spreading them opened a group
	 * per task (cnn_training's filter gradients: groups of 1.0 instead of
	 * 28.5). */
	const bool follows_open_group = latest_dependency >= static_cast<long>(first_open_) && !reduction;
	const std::size_t spread =
		follows_open_group ? std::max(1u, load_.cpu_workers[ctx].load(std::memory_order_relaxed)) : 1;
	/* Without a reduction latest_dependency is the order rule's latest
	 * conflict: the groups after it are all at or above lowest. */
	const std::size_t first_candidate = follows_open_group ? static_cast<std::size_t>(latest_dependency) + 1 : lowest;
	std::size_t of_its_kind = 0;
	long lightest = -1;
	for (std::size_t g = first_open_ + groups_.size(); g-- > first_candidate && of_its_kind < spread;) {
		if (!fits_kernel(groups_[g - first_open_], task, batched_kernel))
			continue;
		of_its_kind++;
		if (joinable(g) && (lightest < 0 || groups_[g - first_open_].members.tasks.size() <
							    groups_[static_cast<std::size_t>(lightest) - first_open_].members.tasks.size()))
			lightest = static_cast<long>(g);
	}
	return of_its_kind < spread ? -1 : lightest;
}

bool SubmissionWindow::full(const Group &group) const
{
	/* Nothing predicts some member: a group is spread over the context's
	 * workers as a ready-time batch is (at most 1/workers of the cap each),
	 * rather than risk the whole cap's work on one worker. */
	const std::size_t workers = std::max(1u, load_.cpu_workers[group.sched_ctx].load(std::memory_order_relaxed));
	const std::size_t most = group.unpredicted ? std::max<std::size_t>(1, limits_.max_group_tasks / workers) : limits_.max_group_tasks;
	/* The caches' cap counts every use of a handle (a ready-time batch
	 * counts distinct handles): a group may close a little early. */
	return group.members.tasks.size() >= most || group.predicted_us >= limits_.target_us ||
	       (limits_.close_at_bytes > 0 && group.bytes >= limits_.close_at_bytes) ||
	       (limits_.working_set_bytes > 0 && group.bytes >= limits_.working_set_bytes);
}

namespace {

/* A kernel group runs at most this many batched calls: a longer chain of
 * dependent tasks goes on in the next group. */
constexpr std::size_t kMostKernelPhases = 8;

} // namespace

bool SubmissionWindow::phase_takes(const KernelPhase &phase, const struct starpu_task *task)
{
	if (phase.codelet != task->cl)
		return false;
	for (unsigned i = 0; i < phase.modes.size(); i++)
		if (STARPU_TASK_GET_MODE(task, i) != phase.modes[i])
			return false;
	return true;
}

bool SubmissionWindow::fits_kernel(const Group &group, const struct starpu_task *task, bool batched_kernel) const
{
	if (!batched_kernel)
		return !group.is_kernel_group();
	for (const KernelPhase &phase : group.phases)
		if (phase_takes(phase, task))
			return true;
	return false;
}

long SubmissionWindow::kernel_phase_for(const Group &group, const struct starpu_task *task,
					const std::vector<Access<starpu_data_handle_t>> &accesses, double predicted_us, bool holds_conflict,
					bool must_be_light) const
{
	/* The highest phase holding a member task conflicts with (the order
	 * rule's conflicts, within one group: no handle and its ancestor
	 * meet there, fits_trees()).  A batched implementation gets tasks
	 * that could all run at once, as a ready-time batch's are
	 * (starpu_fusing.h): task goes to a later phase, which runs after
	 * that one.  One call taking a chain of in-place doublings read every
	 * member's input before writing any output and computed x * 2 for
	 * three (api_kernel_group_takes_no_dependent_task). */
	long conflicting = -1;
	if (holds_conflict) {
		const GroupMembers &members = group.members;
		const long last = static_cast<long>(group.phases.size()) - 1;
		for (std::size_t m = members.tasks.size(); m-- > 0 && conflicting < last;) {
			const long phase = group.member_phase[m];
			if (phase <= conflicting)
				continue;
			for (std::size_t u = members.first_use[m]; u < members.end_use(m) && phase > conflicting; u++)
				for (const Access<starpu_data_handle_t> &access : accesses)
					if (access.handle == members.use_handles[u] && (access.writes || changes_data(members.use_modes[u]))) {
						conflicting = phase;
						break;
					}
		}
	}
	/* A task depending on a member may run after it in the same merged
	 * task, rather than in a group of its own that would wait for this
	 * one anyway, when it is light next to that member (at most half its
	 * phase's mean prediction: a bias added to a convolution's output);
	 * a stencil's next step, as long as the step it follows, goes to
	 * groups of its own, spread over the workers (horizontal_group). */
	if (must_be_light && conflicting >= 0) {
		const KernelPhase &followed = group.phases[static_cast<std::size_t>(conflicting)];
		if (std::isnan(predicted_us) || group.unpredicted || 2.0 * predicted_us * double(followed.members) > followed.predicted_us)
			return -1;
	}
	for (std::size_t p = static_cast<std::size_t>(conflicting + 1); p < group.phases.size(); p++)
		if (phase_takes(group.phases[p], task))
			return static_cast<long>(p);
	return group.phases.size() < kMostKernelPhases ? static_cast<long>(group.phases.size()) : -1;
}

long SubmissionWindow::latest_conflict_without_reductions(const struct starpu_task *task)
{
	accesses_without_reductions_.clear();
	for (unsigned i = 0; i < STARPU_TASK_GET_NBUFFERS(task); i++) {
		const enum starpu_data_access_mode mode = STARPU_TASK_GET_MODE(task, i);
		if (!reduces(mode))
			accesses_without_reductions_.push_back({STARPU_TASK_GET_HANDLE(task, i), changes_data(mode)});
	}
	return order_.latest_conflicting_group(accesses_without_reductions_);
}

bool SubmissionWindow::fits_reductions(const Group &group, const struct starpu_task *task) const
{
	const unsigned nbuffers = STARPU_TASK_GET_NBUFFERS(task);
	for (unsigned i = 0; i < nbuffers; i++) {
		const starpu_data_handle_t handle = STARPU_TASK_GET_HANDLE(task, i);
		if (!reduces(STARPU_TASK_GET_MODE(task, i))) {
			if (std::find(group.reduced_handles.begin(), group.reduced_handles.end(), handle) != group.reduced_handles.end())
				return false;
			continue;
		}
		const GroupMembers &members = group.members;
		for (std::size_t u = 0; u < members.use_handles.size(); u++)
			if (members.use_handles[u] == handle && !reduces(members.use_modes[u]))
				return false;
	}
	return true;
}

void SubmissionWindow::note_reduced_handles(Group &group, const struct starpu_task *task)
{
	for (unsigned i = 0; i < STARPU_TASK_GET_NBUFFERS(task); i++) {
		const starpu_data_handle_t handle = STARPU_TASK_GET_HANDLE(task, i);
		if (reduces(STARPU_TASK_GET_MODE(task, i)) &&
		    std::find(group.reduced_handles.begin(), group.reduced_handles.end(), handle) == group.reduced_handles.end())
			group.reduced_handles.push_back(handle);
	}
}

bool SubmissionWindow::fits_trees(const Group &group, const std::vector<Access<starpu_data_handle_t>> &accesses) const
{
	if (group.tree_handles.empty())
		return true;
	for (const Access<starpu_data_handle_t> &access : accesses) {
		if (!trees_.in_tree(access.handle))
			continue;
		/* The access is an ancestor of a held handle, or a held handle
		 * is one of its ancestors (PartitionTrees::related). */
		if (group.tree_ancestors.contains(access.handle))
			return false;
		starpu_data_handle_t ancestor;
		for (starpu_data_handle_t h = access.handle; trees_.parent_of(h, ancestor); h = ancestor)
			if (group.tree_handles.contains(ancestor))
				return false;
	}
	return true;
}

void SubmissionWindow::note_child_uses(Group &group, const std::vector<Access<starpu_data_handle_t>> &accesses) const
{
	if (!any_tree_.load(std::memory_order_relaxed))
		return;
	const auto first = static_cast<unsigned>(group.members.use_handles.size());
	starpu_data_handle_t parent;
	unsigned child;
	for (std::size_t b = 0; b < accesses.size(); b++)
		if (trees_.child_of_plan(accesses[b].handle, parent, child))
			group.child_uses_of.find_or_add(parent).push_back({first + static_cast<unsigned>(b), child});
}

void SubmissionWindow::note_tree_handles(Group &group, const std::vector<Access<starpu_data_handle_t>> &accesses) const
{
	if (!any_tree_.load(std::memory_order_relaxed))
		return;
	for (const Access<starpu_data_handle_t> &access : accesses)
		if (trees_.in_tree(access.handle))
			note_tree_handle(group, access.handle);
}

void SubmissionWindow::note_tree_handle(Group &group, starpu_data_handle_t handle) const
{
	if (!group.tree_handles.insert(handle))
		return;
	starpu_data_handle_t ancestor;
	for (starpu_data_handle_t h = handle; trees_.parent_of(h, ancestor); h = ancestor)
		group.tree_ancestors.find_or_add(ancestor)++;
}

void SubmissionWindow::forget_tree_handle(Group &group, starpu_data_handle_t handle) const
{
	if (!group.tree_handles.erase(handle))
		return;
	starpu_data_handle_t ancestor;
	for (starpu_data_handle_t h = handle; trees_.parent_of(h, ancestor); h = ancestor)
		if (unsigned *count = group.tree_ancestors.find(ancestor); count && --*count == 0)
			group.tree_ancestors.erase(ancestor);
}

} // namespace fusing
