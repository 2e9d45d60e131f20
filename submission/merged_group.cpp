/* Groups' merged tasks; see merged_group.h. */
#include "submission/merged_group.h"

#include "core/batch_trace.h"
#include "core/batched_registry.h"
#include "core/buffer_merge.h"
#include "core/codelet_name.h"
#include "core/codelet_observations.h"
#include "core/current_member.h"
#include "core/member_run.h"
#include "core/merged_task_buffers.h"
#include "core/starpu_functions.h"
#include "core/stats.h"
#include "core/waiting_priorities.h"
#include "kernels/kernel_binding.h"
#include "submission/end_dependency_stand_in.h"
#include "submission/named_members.h"
#include "submission/retired_members.h"
#include "submission/uncounted_members.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_set>
#include <utility>

namespace fusing {
namespace {

/* Members [begin, end), of one codelet, that the merged task hands to one
 * batched call: the codelet's registered implementation, or else the
 * kernel pack's entry bound to it; with neither (unregistered since the
 * window grouped them), each member alone. */
struct Phase {
	std::size_t begin, end;
	std::optional<struct starpu_fusing_batched_implementation> batched;
	KernelBinding *kernel = nullptr;
	double exec_us = 0.0;
};

/* From submit_group (flushing thread) to the end of the callback (the
 * worker that ran it), where it is freed. */
struct RunningGroup {
	std::vector<struct starpu_task *> members;
	std::vector<unsigned> first_use;     /* member m's buffers start at buffer_of_use[first_use[m]] */
	std::vector<unsigned> buffer_of_use; /* use -> the merged task's buffer */
	std::vector<starpu_data_handle_t> use_handles;           /* as recorded (GroupMembers) */
	std::vector<enum starpu_data_access_mode> use_modes;     /* as recorded (GroupMembers) */
	/* Members whose termination a stand-in makes; written under the
	 * registry's lock (LiveGroups) until finish_group takes the group out
	 * of it. */
	std::vector<MemberStandIn> stand_ins;
	std::vector<int> view_of_use;        /* empty, or use -> views, -1: none (GroupMembers) */
	std::vector<ChildView> views;
	std::vector<bool> has_view;          /* empty, or per member: some use is a view */
	bool one_codelet;                    /* every member has members[0]'s codelet */
	/* The batched calls that run every member, in order (a kernel group's
	 * phases, or one for a group of one codelet with a batched
	 * implementation); empty: the members run one by one. */
	std::vector<Phase> phases;
	GroupReports reports;
	double predicted_us; /* NaN when unknown; read by StarPU through group_model */
	unsigned sched_ctx = 0;
	std::size_t member_count = 0; /* members.size() when submitted (finish_group shrinks members) */
	double exec_us = 0.0;
	struct starpu_task *merged = nullptr; /* the task StarPU runs in the members' place */
	/* The task running the members now: merged, or a continuation of it
	 * (continue_in_another_task); written by the worker running it. */
	struct starpu_task *running = nullptr;
	/* The first member (or phase, in phases) the running task runs:
	 * written before a continuation is submitted, read when it runs. */
	std::size_t resume_at = 0;
	bool may_give_way = false; /* no STARPU_REDUX access (continue_in_another_task) */
	/* member m's buffer b is the merged task's buffer_of_use[first_use[m] + b] */
	const unsigned *merged_buffers_of(std::size_t m) const { return buffer_of_use.data() + first_use[m]; }
	/* Whether member m uses only handles StarPU still has (no child view:
	 * run_member's handles_registered). */
	bool handles_registered(std::size_t m) const { return has_view.empty() || !has_view[m]; }
	/* Runs member m's own function on buffers (member_run.h); the running
	 * task stands for it in what it declares on itself. */
	void run_alone(std::size_t m, void **buffers) const
	{
		run_member(members[m], buffers, members.size(), merged_buffers_of(m), running, handles_registered(m));
	}
	/* A task of higher priority waits (waiting_priorities.h). */
	bool gives_way() const { return may_give_way && reports.priorities->higher_priority_waits(merged->priority); }
};

/* The merged tasks submitted whose callback has not begun, for a program
 * adding end dependencies to one of their members
 * (stand_in_for_running_member).  mutex_ guards groups_ and the groups'
 * stand_ins; nothing else is called under it. */
class LiveGroups {
public:
	void add(RunningGroup *group)
	{
		std::lock_guard<std::mutex> lock(mutex_);
		groups_.insert(group);
	}
	/* The group's callback begins: its stand-ins are fixed from now on. */
	void remove(RunningGroup *group)
	{
		std::lock_guard<std::mutex> lock(mutex_);
		groups_.erase(group);
	}
	bool stand_in(struct starpu_task *member, struct starpu_task *stand_in, std::vector<starpu_data_handle_t> &handles,
		      std::vector<enum starpu_data_access_mode> &modes)
	{
		std::lock_guard<std::mutex> lock(mutex_);
		for (RunningGroup *group : groups_) {
			auto found = std::find(group->members.begin(), group->members.end(), member);
			if (found == group->members.end())
				continue;
			const std::size_t m = static_cast<std::size_t>(found - group->members.begin());
			const std::size_t end = m + 1 < group->members.size() ? group->first_use[m + 1] : group->use_handles.size();
			handles.assign(group->use_handles.begin() + group->first_use[m], group->use_handles.begin() + end);
			modes.assign(group->use_modes.begin() + group->first_use[m], group->use_modes.begin() + end);
			group->stand_ins.push_back({member, stand_in});
			return true;
		}
		return false;
	}

private:
	std::mutex mutex_;
	std::unordered_set<RunningGroup *> groups_;
};

LiveGroups &live_groups()
{
	static LiveGroups groups;
	return groups;
}

/* The distinct names of the members' codelets (codelet_name.h), in order,
 * joined by '+': the trace's name of a group. */
std::string codelet_names(const std::vector<struct starpu_task *> &members)
{
	std::vector<const struct starpu_codelet *> seen_codelets;
	std::vector<std::string> seen_names;
	for (const struct starpu_task *member : members) {
		if (std::find(seen_codelets.begin(), seen_codelets.end(), member->cl) != seen_codelets.end())
			continue;
		seen_codelets.push_back(member->cl);
		std::string name = codelet_family_name(member->cl);
		if (std::find(seen_names.begin(), seen_names.end(), name) == seen_names.end())
			seen_names.push_back(std::move(name));
	}
	std::string names;
	for (const std::string &name : seen_names)
		names += (names.empty() ? "" : "+") + name;
	return names;
}

/* The interfaces of the group's child views (GroupMembers::make_view), in
 * storage.  StarPU computed each child's interface on the main memory node
 * from the parent's there when the plan was made, with the plan's filter
 * (_starpu_data_partition, filters.c, 1.3 and 1.4); when the parent's
 * interface the merged task got is still the one copied with them, the
 * child's copy is its interface.  Otherwise (another memory node) the
 * filter builds it from the parent's, starting from that copy for the
 * fields a filter may leave alone.  The worker. */
void build_child_views(const RunningGroup &group, void *buffers[], std::vector<std::max_align_t> &storage,
		       std::vector<void *> &uses)
{
	auto words_of = [](const ChildView &view) {
		const std::size_t size = view.plan->child_interfaces[view.index].size();
		return (size + sizeof(std::max_align_t) - 1) / sizeof(std::max_align_t);
	};
	std::vector<std::size_t> offsets(group.views.size());
	std::size_t words = 0;
	for (std::size_t v = 0; v < group.views.size(); v++) {
		offsets[v] = words;
		words += words_of(group.views[v]);
	}
	storage.resize(words);
	for (std::size_t u = 0; u < uses.size(); u++) {
		if (group.view_of_use[u] < 0)
			continue;
		const std::size_t v = static_cast<std::size_t>(group.view_of_use[u]);
		const ElidedPlan &plan = *group.views[v].plan;
		const unsigned index = group.views[v].index;
		void *parent_interface = buffers[group.buffer_of_use[u]];
		void *child_interface = storage.data() + offsets[v];
		std::memcpy(child_interface, plan.child_interfaces[index].data(), plan.child_interfaces[index].size());
		if (std::memcmp(parent_interface, plan.parent_interface.data(), plan.parent_interface.size()) != 0) {
			struct starpu_data_filter filter = plan.filter; /* filter_func takes it non-const */
			filter.filter_func(parent_interface, child_interface, &filter, index,
					   static_cast<unsigned>(plan.child_interfaces.size()));
		}
		uses[u] = child_interface;
	}
}

/* Runs phase's members in one batched call, or one by one without an
 * implementation; their codelet's observations get the per-member time.
 * The worker, in run_group. */
void run_phase(RunningGroup &group, Phase &phase, std::vector<void *> &uses)
{
	const std::size_t count = phase.end - phase.begin;
	const double start_us = starpu_timing_now();
	if (phase.batched || phase.kernel) {
		std::vector<void **> task_buffers(count);
		std::vector<void *> task_args(count);
		for (std::size_t i = 0; i < count; i++) {
			task_buffers[i] = uses.data() + group.first_use[phase.begin + i];
			task_args[i] = group.members[phase.begin + i]->cl_arg;
		}
		if (phase.batched) {
			phase.batched->cpu_func(static_cast<unsigned>(count), task_buffers.data(), task_args.data(), phase.batched->batch_arg);
		} else {
			const KernelRun ran = phase.kernel->run(group.members[phase.begin]->cl, static_cast<unsigned>(count), task_buffers.data(),
								task_args.data(),
								[&](unsigned i) { group.run_alone(phase.begin + i, task_buffers[i]); });
			for (unsigned i : ran.tasks)
				if (starpu_profiles(group.members[phase.begin + i]))
					record_in_starpu_profiling(group.members[phase.begin + i], ran.start_us, ran.end_us);
		}
	} else {
		for (std::size_t m = phase.begin; m < phase.end; m++)
			group.run_alone(m, uses.data() + group.first_use[m]);
	}
	const double end_us = starpu_timing_now();
	phase.exec_us = end_us - start_us;
	group.reports.observations->record_member_us(group.members[phase.begin]->cl, phase.exec_us / double(count));
	/* Every member ran inside the one batched call. */
	if (phase.batched)
		for (std::size_t m = phase.begin; m < phase.end; m++)
			if (starpu_profiles(group.members[m]))
				record_in_starpu_profiling(group.members[m], start_us, end_us);
}

/* A continuation's callback: the task it continued may terminate. */
void end_continued_task(void *continued)
{
	starpu_own_task_end_dep_release(static_cast<struct starpu_task *>(continued));
}

/* A task of higher priority waits (waiting_priorities.h): the members from
 * next on (phases, in a kernel group) go to a continuation, a task on the
 * same data that StarPU schedules like any other, and the running task
 * ends after this one without terminating: an end dependency, released by
 * the continuation's callback, holds back its termination (so what depends
 * on its members, and the members' callbacks in finish_group) until every
 * member ran.  The continuation has sequential consistency off: the running
 * task's dependents wait for that termination, not for its data, which it
 * takes once the running task let it go, as a ready-time batch does.  A
 * handle the running task only wrote is read and written by the
 * continuation: earlier members may have written it.  The worker, between
 * two members. */
void continue_in_another_task(RunningGroup *group, std::size_t next)
{
	struct starpu_task *running = group->running;
	starpu_own_task_end_dep_add(running, 1);
	const unsigned nbuffers = STARPU_TASK_GET_NBUFFERS(running);
	std::vector<starpu_data_handle_t> handles(nbuffers);
	std::vector<enum starpu_data_access_mode> modes(nbuffers);
	for (unsigned b = 0; b < nbuffers; b++) {
		handles[b] = STARPU_TASK_GET_HANDLE(running, b);
		const enum starpu_data_access_mode mode = STARPU_TASK_GET_MODE(running, b);
		modes[b] = (mode & STARPU_W) ? STARPU_RW : mode;
	}
	struct starpu_task *continuation = starpu_task_create();
	continuation->cl = running->cl;
	continuation->name = running->name;
	give_buffers(continuation, handles, modes);
	continuation->sequential_consistency = 0;
	continuation->priority = running->priority;
	continuation->sched_ctx = running->sched_ctx;
	continuation->cl_arg = group;
	continuation->callback_func = end_continued_task;
	continuation->callback_arg = running;
	group->resume_at = next;
	const int ret = starpu_own_task_submit(continuation);
	if (ret != 0) {
		std::fprintf(stderr, "starpu-fusing: StarPU refused the continuation of a merged task (error %d: %s); "
			     "its members cannot run, stopping\n", ret, std::strerror(-ret));
		std::abort();
	}
}

void run_group(void *buffers[], void *arg)
{
	RunningGroup *group = static_cast<RunningGroup *>(arg);
	/* StarPU's own answer: no member runs on this thread yet. */
	group->running = starpu_task_get_current();
	const std::size_t ntasks = group->members.size();
	std::vector<void *> uses(group->buffer_of_use.size());
	for (std::size_t u = 0; u < uses.size(); u++)
		uses[u] = buffers[group->buffer_of_use[u]];
	std::vector<std::max_align_t> view_storage;
	if (!group->views.empty())
		build_child_views(*group, buffers, view_storage, uses);
	const double start_us = starpu_timing_now();
	const std::size_t first = group->resume_at;
	std::size_t ran = 0;
	if (!group->phases.empty()) {
		for (std::size_t p = first; p < group->phases.size(); p++) {
			if (p > first && group->gives_way()) {
				continue_in_another_task(group, p);
				break;
			}
			run_phase(*group, group->phases[p], uses);
			ran += group->phases[p].end - group->phases[p].begin;
		}
	} else {
		for (std::size_t i = first; i < ntasks; i++) {
			if (i > first && group->gives_way()) {
				continue_in_another_task(group, i);
				break;
			}
			const double member_start_us = starpu_timing_now();
			group->run_alone(i, uses.data() + group->first_use[i]);
			/* Several codelets: each member's time goes to its own codelet. */
			if (!group->one_codelet)
				group->reports.observations->record_member_us(group->members[i]->cl, starpu_timing_now() - member_start_us);
			ran++;
		}
	}
	const double end_us = starpu_timing_now();
	group->exec_us += end_us - start_us;
	if (group->phases.empty() && group->one_codelet && ran > 0)
		group->reports.observations->record_member_us(group->members[0]->cl, (end_us - start_us) / double(ran));
	if (group->reports.trace)
		group->reports.trace->record(starpu_worker_get_id(), start_us, end_us, ran, "submission", codelet_names(group->members));
}

/* StarPU calls it when the merged task becomes ready (in _starpu_push_task),
 * where it would have called each member's. */
void run_member_prologues(void *arg)
{
	RunningGroup *group = static_cast<RunningGroup *>(arg);
	for (std::size_t m = 0; m < group->members.size(); m++) {
		struct starpu_task *member = group->members[m];
		if (member->prologue_callback_func) {
			RunningMemberScope running(member, group->members.size(), group->merged_buffers_of(m), group->merged);
			member->prologue_callback_func(member->prologue_callback_arg);
		}
	}
}

/* STARPU_FUSING_STATS: each codelet's members count for that codelet (a
 * group of several codelets counted for its first one made "fused" exceed
 * "submitted"), with their phases' time, or else their share of the
 * group's. */
void record_in_statistics(const RunningGroup &group)
{
	struct CodeletShare {
		const struct starpu_codelet *cl;
		std::size_t count;
		double phases_us;
	};
	std::vector<CodeletShare> shares;
	auto share_of = [&](const struct starpu_codelet *cl) -> CodeletShare & {
		auto found = std::find_if(shares.begin(), shares.end(), [&](const CodeletShare &c) { return c.cl == cl; });
		if (found != shares.end())
			return *found;
		shares.push_back({cl, 0, 0.0});
		return shares.back();
	};
	for (const struct starpu_task *member : group.members)
		share_of(member->cl).count++;
	for (const Phase &phase : group.phases)
		share_of(group.members[phase.begin]->cl).phases_us += phase.exec_us;
	for (const CodeletShare &c : shares) {
		const double share = double(c.count) / double(group.members.size());
		group.reports.stats->record_batch(c.cl, c.count, group.phases.empty() ? group.exec_us * share : c.phases_us,
						  group.predicted_us * share);
	}
}

void finish_group(void *arg)
{
	RunningGroup *group = static_cast<RunningGroup *>(arg);
	live_groups().remove(group);
	if (group->reports.stats)
		record_in_statistics(*group);
	/* The first `retired` entries of group->members become the members
	 * StarPU would destroy now (rewritten in place: an entry is replaced
	 * only once the loop has passed it). */
	std::size_t retired = 0;
	for (std::size_t m = 0; m < group->members.size(); m++) {
		struct starpu_task *member = group->members[m];
		auto stand_in = std::find_if(group->stand_ins.begin(), group->stand_ins.end(),
					     [&](const MemberStandIn &s) { return s.member == member; });
		if (stand_in != group->stand_ins.end()) {
			/* It has run; its stand-in terminates it. */
			member_ran_for_stand_in(stand_in->stand_in);
			continue;
		}
		/* Read first: a kept member's callback may submit it again. */
		const bool destroy = member->destroy;
		/* StarPU falls back to the codelet's callback when the task has none. */
		void (*callback)(void *) = member->callback_func ? member->callback_func : member->cl->callback_func;
		if (callback) {
			RunningMemberScope running(member, group->members.size(), group->merged_buffers_of(m), group->merged);
			callback(member->callback_arg);
		}
		/* Deferred tasks are detached (window.cpp): with destroy = 1
		 * StarPU would free them now.  starpu_task_destroy refuses
		 * such a task, so the flag goes first; the task is not anyone's
		 * current one then, so it is freed at once.  A kept task stays
		 * the program's, named by the merged task (named_members.h). */
		if (destroy) {
			member->destroy = 0;
			group->members[retired++] = member;
		}
	}
	group->members.resize(retired);
	/* Freed by the next thread that submits a task or ends a wait, usually
	 * the program's (retired_members.h), or here when too many wait. */
	if (!group->reports.retired->hand_over(group->members))
		for (struct starpu_task *member : group->members)
			starpu_task_destroy(member);
	/* Every member has terminated: StarPU's count of its tasks drops by
	 * one when this callback returns, waits on counts add the rest. */
	group->reports.uncounted->remove(group->sched_ctx, group->member_count);
	group->reports.running_groups->fetch_sub(1, std::memory_order_release);
	delete group;
}

double predicted_group_us(struct starpu_task *merged, unsigned nimpl)
{
	(void)nimpl;
	return static_cast<RunningGroup *>(merged->cl_arg)->predicted_us;
}

/* Two codelets, with and without a prediction: a model answering
 * "unknown" makes dmda-like bases calibrate (see merged_task.cpp). */
struct GroupCodelets {
	struct starpu_perfmodel model;
	struct starpu_codelet with_model;
	struct starpu_codelet without_model;
	GroupCodelets()
	{
		starpu_codelet_init(&without_model);
		without_model.where = STARPU_CPU;
		without_model.cpu_funcs[0] = run_group;
		without_model.nbuffers = STARPU_VARIABLE_NBUFFERS;
		/* StarPU switches no plan for it: the window checked that no
		 * member needs one (partition_trees.h). */
		without_model.flags = STARPU_CODELET_NOPLANS;
		without_model.name = "fusing_group";
		std::memset(&model, 0, sizeof(model));
		model.type = STARPU_COMMON;
		model.cost_function = predicted_group_us;
		model.symbol = "fusing_group";
		with_model = without_model;
		with_model.model = &model;
	}
};

GroupCodelets &group_codelets()
{
	static GroupCodelets codelets;
	return codelets;
}

/* merge_buffers ORs the modes of a handle's uses, which is right for a
 * ready-time batch (its members never conflict).  A group may hold a writer
 * and then a reader of one handle: the reader reads the writer's result,
 * not the handle's previous contents, so the merged task must fetch the
 * handle only if a member reads it before any earlier member wrote it (a
 * STARPU_W-only first use of a never-initialised handle must stay W, or
 * StarPU refuses to read it).  It writes it if any member does.  A child
 * view (GroupMembers::make_view) writes only part of its parent: the rest
 * must be fetched, and the parent counts as written only by a member
 * writing it whole. */
void fetch_only_what_members_read_first(const GroupMembers &members, const std::vector<unsigned> &buffer_of_use,
					std::vector<enum starpu_data_access_mode> &merged_modes)
{
	const std::size_t nhandles = merged_modes.size();
	const std::vector<enum starpu_data_access_mode> &use_modes = members.use_modes;
	std::vector<bool> written(nhandles, false), fetched(nhandles, false), any_write(nhandles, false);
	for (std::size_t m = 0; m < members.tasks.size(); m++) {
		for (std::size_t u = members.first_use[m]; u < members.end_use(m); u++) {
			const bool needs_contents = (use_modes[u] & STARPU_R) || (members.is_view(u) && (use_modes[u] & STARPU_W));
			if (needs_contents && !written[buffer_of_use[u]])
				fetched[buffer_of_use[u]] = true;
		}
		for (std::size_t u = members.first_use[m]; u < members.end_use(m); u++)
			if (use_modes[u] & STARPU_W) {
				any_write[buffer_of_use[u]] = true;
				if (!members.is_view(u))
					written[buffer_of_use[u]] = true;
			}
	}
	for (std::size_t h = 0; h < nhandles; h++) {
		int mode = merged_modes[h] & ~STARPU_RW;
		if (fetched[h])
			mode |= STARPU_R;
		if (any_write[h])
			mode |= STARPU_W;
		merged_modes[h] = static_cast<enum starpu_data_access_mode>(mode);
	}
}

/* The batched calls of a group (RunningGroup::phases): a kernel group's
 * phases; for another group of one codelet of a fixed buffer count, one
 * call of all when the codelet has a batched implementation or a kernel
 * pack entry bound to it; else none.  The window groups a codelet the
 * kernel pack may bind only with tasks of the same modes
 * (SubmissionWindow::fits_kernel): a phase's first member's modes are
 * every member's. */
std::vector<Phase> batched_phases(const GroupMembers &members, bool one_codelet, const GroupReports &reports)
{
	std::vector<Phase> phases;
	auto phase_of = [&](std::size_t begin, std::size_t end) {
		const struct starpu_codelet *cl = members.tasks[begin]->cl;
		Phase phase{begin, end, batched_implementation_for(cl), nullptr, 0.0};
		if (!phase.batched && reports.kernels)
			phase.kernel = reports.kernels->binding_for(
				cl, std::vector<enum starpu_data_access_mode>(members.use_modes.begin() + members.first_use[begin],
									      members.use_modes.begin() + members.end_use(begin)));
		return phase;
	};
	const std::vector<unsigned> &starts = members.phase_starts;
	for (std::size_t p = 0; p < starts.size(); p++)
		phases.push_back(phase_of(starts[p], p + 1 < starts.size() ? starts[p + 1] : members.tasks.size()));
	if (!starts.empty() || !one_codelet || members.tasks.front()->cl->nbuffers == STARPU_VARIABLE_NBUFFERS)
		return phases;
	Phase all = phase_of(0, members.tasks.size());
	if (all.batched || all.kernel)
		phases.push_back(std::move(all));
	return phases;
}

} // namespace

bool stand_in_for_running_member(struct starpu_task *member, struct starpu_task *stand_in,
				 std::vector<starpu_data_handle_t> &handles, std::vector<enum starpu_data_access_mode> &modes)
{
	return live_groups().stand_in(member, stand_in, handles, modes);
}

bool is_group_task(const struct starpu_task *task)
{
	return task->cl && task->cl->cpu_funcs[0] == run_group;
}

std::size_t submit_group(GroupMembers members, unsigned sched_ctx, double predicted_us, const GroupReports &reports,
		  SubmitFunction real_submit, const MemberStandIn *stand_in)
{
	auto merged = merge_buffers(members.use_handles, members.use_modes);
	fetch_only_what_members_read_first(members, merged.index_of_use, merged.modes);
	const struct starpu_codelet *first_cl = members.tasks.front()->cl;
	const bool one_codelet = std::all_of(members.tasks.begin(), members.tasks.end(),
					     [&](const struct starpu_task *member) { return member->cl == first_cl; });
	std::vector<Phase> phases = batched_phases(members, one_codelet, reports);
	RunningGroup *group = new RunningGroup{std::move(members.tasks), std::move(members.first_use), std::move(merged.index_of_use),
					       std::move(members.use_handles), std::move(members.use_modes), {},
					       std::move(members.view_of_use), std::move(members.views), {}, one_codelet, std::move(phases), reports,
					       predicted_us};
	if (stand_in)
		group->stand_ins.push_back(*stand_in);
	if (!group->views.empty()) {
		group->has_view.assign(group->members.size(), false);
		for (std::size_t m = 0; m < group->members.size(); m++) {
			const std::size_t end = m + 1 < group->members.size() ? group->first_use[m + 1] : group->buffer_of_use.size();
			for (std::size_t u = group->first_use[m]; u < end; u++)
				if (group->view_of_use[u] >= 0)
					group->has_view[m] = true;
		}
	}
	int priority = group->members.front()->priority;
	bool any_prologue = false;
	for (struct starpu_task *member : group->members) {
		priority = std::max(priority, member->priority);
		any_prologue = any_prologue || member->prologue_callback_func;
	}

	GroupCodelets &codelets = group_codelets();
	struct starpu_task *task = starpu_task_create();
	task->cl = std::isnan(predicted_us) ? &codelets.without_model : &codelets.with_model;
	task->name = group->members.front()->cl->name ? group->members.front()->cl->name : "fusing_group";
	give_buffers(task, merged.handles, merged.modes);
	task->priority = priority;
	task->sched_ctx = sched_ctx;
	task->cl_arg = group;
	task->callback_func = finish_group;
	task->callback_arg = group;
	if (any_prologue) {
		task->prologue_callback_func = run_member_prologues;
		task->prologue_callback_arg = group;
	}
	group->merged = task;
	group->may_give_way = std::none_of(group->use_modes.begin(), group->use_modes.end(),
					   [](enum starpu_data_access_mode mode) { return (mode & STARPU_REDUX) != 0; });
	group->sched_ctx = sched_ctx;
	group->member_count = group->members.size();
	if (NamedMembers::any_kept(group->members)) {
		/* Named in dependencies instead of its kept members, so kept
		 * too, until nothing can name them (named_members.h). */
		task->detach = 0;
		task->destroy = 0;
		reports.names->submitted(group->members, task);
	}
	const std::size_t count = group->members.size();
	const std::size_t nhandles = merged.handles.size();
	reports.running_groups->fetch_add(1, std::memory_order_relaxed);
	reports.uncounted->add(sched_ctx, count);
	live_groups().add(group);
	int ret = real_submit(task);
	if (ret != 0) {
		std::fprintf(stderr, "starpu-fusing: StarPU refused the merged task of %zu deferred tasks (error %d: %s); "
			     "they cannot run, stopping\n", count, ret, std::strerror(-ret));
		std::abort();
	}
	return nhandles;
}

} // namespace fusing
