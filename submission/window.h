/* The window of submission-time fusion (doc/design.md, section 12).
 *
 * The program's starpu_task_submit (interpose/interpose_task_submit.cpp) hands every
 * task to submit().  A deferrable task is placed in a group by the order
 * rule (submission/window_order.h) instead of going to StarPU; any other task
 * first flushes the window, so it reaches StarPU after everything submitted
 * before it.  Groups go to StarPU in the order they were opened, each as
 * one merged task (merged_group.h): when a group fills up (together with
 * every group opened before it), and the whole window when a worker finds
 * no work, after STARPU_FUSING_MAX_DELAY, and before any StarPU function
 * that could observe deferred work (the flush barrier, interpose/barrier_entry.cpp).
 *
 * Locks: mutex_ (recursive: a StarPU call made while flushing may run a
 * callback that submits, in the same thread) orders the program's, the
 * callbacks' and the closer thread's submissions: a task submitted after a
 * window closed cannot reach StarPU before that window's merged tasks.  It
 * is held while StarPU's starpu_task_submit runs (never a blocking one:
 * synchronous tasks are submitted after it is released, and submission
 * limits are refused with fusion).  closer_mutex_ only guards the closer
 * thread's wake-up.  names_ has its own, taken after mutex_. */
#ifndef STARPU_FUSING_SUBMISSION_WINDOW_H
#define STARPU_FUSING_SUBMISSION_WINDOW_H

#include "core/admission.h"
#include "core/codelet_observations.h"
#include "core/handle_table.h"
#include "submission/window_order.h"
#include "submission/held_data.h"
#include "submission/named_members.h"
#include "submission/retired_members.h"
#include "submission/uncounted_members.h"
#include "submission/merged_group.h"
#include "submission/partition_trees.h"

#include <starpu.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace fusing {

class CodeletObservations;
class Statistics;

class SubmissionWindow {
public:
	struct Limits {
		unsigned max_group_tasks;      /* STARPU_FUSING_MAX_BATCH */
		double target_us;              /* STARPU_FUSING_TARGET */
		double max_delay_us;           /* STARPU_FUSING_MAX_DELAY */
		double max_generic_task_us;    /* STARPU_FUSING_MAX_TASK */
		std::uint64_t close_at_bytes;  /* the memory cap (sched/engine.h); 0: none */
		std::uint64_t working_set_bytes; /* STARPU_FUSING_CACHE_CAP; 0: none */
		bool always_defer;             /* STARPU_FUSING_HOLD=always: even while a worker waits */
		bool elide_plans;              /* STARPU_FUSING_PLAN_ELISION */
	};
	/* Whether the task may be fused at all (STARPU_FUSING_ONLY/EXCLUDE,
	 * and not a ready-time batch's merged task); predicted
	 * duration of one task in µs, NaN when unknown; whether its codelet
	 * has a batched implementation (registered, or bound from the kernel
	 * pack); counts a task the window defers in the statistics (StarPU's
	 * submit hook counts the others), empty without them.  Called in the
	 * submitting thread. */
	using Selector = std::function<bool(struct starpu_task *)>;
	using Predictor = std::function<double(struct starpu_task *)>;
	using SubmissionCounter = std::function<void(struct starpu_task *)>;

	/* reports.names, reports.running_groups and reports.retired are the
	 * window's own. */
	SubmissionWindow(const Limits &limits, Selector selected, Predictor predict, Selector has_batched_kernel,
			 SubmissionCounter count_deferred,
			 const ContextLoad &load, const GroupReports &reports, SubmitFunction real_submit);
	/* Stops the closer thread.  The window is empty by then: starpu_shutdown
	 * is a barrier (the engine checks). */
	~SubmissionWindow();

	/* starpu_task_submit's replacement: the program's thread, a callback
	 * or a task.  Returns what StarPU's would (0 for a deferred task). */
	int submit(struct starpu_task *task);
	/* Hands every group to StarPU now.  Any thread but one in a scheduling
	 * operation. */
	void flush();
	/* A thread enters (begin_wait) and leaves (end_wait) a StarPU call
	 * that waits for StarPU's count of submitted or ready tasks to drop:
	 * starpu_task_wait_for_all, _for_n_submitted, _for_no_ready (and their
	 * _in_ctx forms), starpu_shutdown (interpose/interpose_waits.cpp).  A task
	 * deferred meanwhile, by a callback or another thread, would not be
	 * counted, and the wait would return before it ran: until the wait
	 * ends, tasks go to StarPU as they are submitted.  begin_wait flushes
	 * the window.  The waiting thread. */
	void begin_wait();
	void end_wait();
	/* starpu_task_wait_for_n_submitted and _in_ctx, in a thread inside
	 * a wait (between begin_wait and end_wait): returns what starpu_wait,
	 * StarPU's wait for its own count, returns, once at most n of the
	 * tasks submitted (in ctx, or in every context) have not terminated,
	 * the members of each merged task counted (uncounted_members.h). */
	int wait_for_n_submitted(bool every_context, unsigned ctx, unsigned n, const std::function<int(unsigned)> &starpu_wait);
	/* What starpu_task_nsubmitted answers: StarPU's count, the members
	 * it counts once in their merged tasks, and the tasks in the window. */
	std::size_t submitted_not_terminated(std::size_t starpu_count) const
	{
		return starpu_count + uncounted_.total() + deferred_.load(std::memory_order_seq_cst);
	}
	/* A worker found no work: the closer thread hands StarPU what is worth
	 * running now (close_periodically).  Never blocks (called from
	 * pop_task). */
	void request_flush();
	bool holds_tasks() const
	{
		return deferred_.load(std::memory_order_seq_cst) != 0 || calls_waiting_.load(std::memory_order_seq_cst) != 0;
	}
	/* A group worth running now (what request_flush hands over) waits in
	 * the window, and no flush was requested for it: work a worker could
	 * do.  Does not wait for mutex_ (false when another thread holds it:
	 * placing or handing over).  Any thread; the idle workers' statistics
	 * (sched/idle_workers.h) ask it when a rest ends by its safety net. */
	bool holds_unrequested_work();

	/* Tasks touching handle are never deferred from now on: data
	 * partitioned with starpu_data_partition (its children alias it in
	 * ways the order rule does not follow).  The thread partitioning. */
	void exclude_from_deferral(starpu_data_handle_t handle);
	/* The program invalidated handle (starpu_data_invalidate_submit,
	 * _deinitialize_submit; interpose/interpose_invalidate.cpp): the next
	 * task touching it is not deferred, so that StarPU has the handle's
	 * next writer when the invalidation ends, as it would without the
	 * window.  The invalidating thread, after flush(). */
	void note_invalidation(starpu_data_handle_t handle);

	/* Partition plans (interpose/interpose_partition.cpp; doc/design.md, section
	 * 12).  The program's thread, or a callback's; never StarPU's own
	 * calls.
	 *
	 * A partition or unpartition the program submits is placed in the
	 * window (window_order.h, place_call) and handed to StarPU, through
	 * starpu_call, between the groups it must follow and those that must
	 * follow it; its tree's state changes now, in program order
	 * (partition_trees.h).  An unpartition whose partition is still in
	 * the window with every task on the children since may elide both:
	 * neither reaches StarPU, and the merged tasks access the parent
	 * (elide_plan_locked). */
	void record_partition_call(PartitionTrees::Call call, starpu_data_handle_t parent, unsigned nparts,
				   const starpu_data_handle_t *children, std::function<void()> starpu_call);
	/* Other partition functions run now, after the deferred work they
	 * could observe: a plan (after what accesses the parent: StarPU copies
	 * its state into the children), a cleaned plan (after what accesses
	 * the parent or the children), and the calls the window does not
	 * follow (after everything; their tree is no longer deferred).  A plan
	 * passes its filter (plan_filter), which the window copies. */
	enum class PartitionChange { plan, clean, unfollowed };
	/* A partition call on parent went to StarPU without the window: one
	 * StarPU makes by itself (automatic partitioning, from inside a
	 * submission or an acquisition) or one made inside a StarPU call.
	 * Its plan's children are StarPU's from now on (never cleaned at once,
	 * run_partition_change).  Any thread, under StarPU's call: takes
	 * only outside_calls_mutex_. */
	void note_partition_outside_window(starpu_data_handle_t parent);
	void run_partition_change(PartitionChange change, starpu_data_handle_t parent, unsigned nparts,
				  const starpu_data_handle_t *children, const std::function<void()> &starpu_call,
				  const struct starpu_data_filter *plan_filter = nullptr);
	/* The program acquires handle in mode: it is held from now on
	 * (held_data.h), and the window is flushed.  The acquiring thread. */
	void begin_acquisition(starpu_data_handle_t handle, enum starpu_data_access_mode mode);
	/* An acquisition of handle in mode that holds nothing for the
	 * program: one StarPU makes itself for a call of the program
	 * (starpu_data_invalidate and _submit, starpu_data_deinitialize and
	 * _submit, datawizard/interfaces/data_interface.c), the program's
	 * attempt (starpu_data_acquire_try), or a fetch or prefetch (mode
	 * STARPU_R, interpose/interpose_fetch.cpp).  StarPU switches plans for it as
	 * for any acquisition (_starpu_data_check_initialized,
	 * datawizard/user_interactions.c): the window hands over what it holds
	 * and follows the switch when there is one.  The acquiring thread. */
	void follow_acquisition_switch(starpu_data_handle_t handle, enum starpu_data_access_mode mode);
	HeldData &held() { return held_; }
	/* What StarPU knows in place of task, for a dependency declared on
	 * it: the merged task of its group when task is a deferred kept task
	 * (its group handed to StarPU first if still in the window) or the
	 * member running on this thread (current_member.h); task otherwise.
	 * Never waits for a task to run.  Any thread but one in a scheduling
	 * operation. */
	struct starpu_task *task_for_dependency(struct starpu_task *task);
	/* The program adds end dependencies to task after submitting it
	 * (interpose/interpose_task_deps.cpp): when the window deferred task,
	 * a stand-in terminates it from now on (end_dependency_stand_in.h,
	 * window_end_dependencies.cpp), add_dependencies gives the stand-in
	 * the program's dependencies before StarPU has it (it must not use
	 * the window), and the stand-in is returned; null when task is not a
	 * deferred task that has not terminated (StarPU has it).  Hands the
	 * window over.  Any thread but one in a scheduling operation. */
	struct starpu_task *stand_in_for_end_dependencies(struct starpu_task *task,
							  const std::function<void(struct starpu_task *)> &add_dependencies);
	/* The program is about to add end dependencies to task, which StarPU
	 * has (submitted, not terminated): it may now wait for the program, so
	 * its data is held until it terminates (held_data.h), and the window
	 * is handed over with the tasks depending on it apart, as for a
	 * stand-in.  Any thread but one in a scheduling operation. */
	void end_dependencies_added_to_submitted(struct starpu_task *task);
	/* The program destroys, cleans, reinitialises or resubmits task
	 * (named_members.h).  Any thread. */
	void forget(struct starpu_task *task) { names_.forget(task); }
	/* Merged tasks whose callback has not ended. */
	std::size_t groups_running() const { return running_groups_.load(std::memory_order_acquire); }

	/* What STARPU_FUSING_STATS prints. */
	std::uint64_t tasks_deferred() const { return tasks_deferred_.load(std::memory_order_relaxed); }
	std::uint64_t groups_submitted() const { return groups_submitted_.load(std::memory_order_relaxed); }
	std::uint64_t handles_submitted() const { return handles_submitted_.load(std::memory_order_relaxed); }
	std::uint64_t plans_elided() const { return plans_elided_.load(std::memory_order_relaxed); }
	std::uint64_t unpartitions_recorded() const { return unpartitions_recorded_.load(std::memory_order_relaxed); }
	std::uint64_t plans_cleaned_unseen() const { return plans_cleaned_unseen_.load(std::memory_order_relaxed); }
	/* Why an unpartition the program submitted was not elided with its
	 * partition: that partition reached StarPU first, handed over by one
	 * of these; another call came on its tree; a member using a child
	 * calibrates its model; or it was never in the window to elide (not a
	 * partition of the whole plan, a parent without a buffer, a tree not
	 * followed, elision off). */
	enum class HandOver {
		task_not_deferred, /* a task the window did not defer, conflicting */
		program_call,      /* a StarPU call of the program (barrier, wait, acquisition, plan, dependency) */
		group_full,
		window_full,
		max_delay,
		idle_worker,
		count_
	};
	enum class NotElided { partition_handed_over, other_call_on_tree, member_calibrating, never_elidable, count_ };
	std::uint64_t unpartitions_not_elided(NotElided reason) const;
	std::uint64_t partitions_handed_over(HandOver cause) const;
	static const char *hand_over_text(HandOver cause);

	SubmissionWindow(const SubmissionWindow &) = delete;
	SubmissionWindow &operator=(const SubmissionWindow &) = delete;

private:
	/* A partition call waiting in the window.  opens_episode: the parent
	 * of a partition that may be elided (episodes_), else null. */
	struct PendingCall {
		std::function<void()> run;
		starpu_data_handle_t opens_episode = nullptr;
	};
	/* A partition in the window that its unpartition may elide (doc/design.md,
	 * section 12, plan elision): from the partition call until it goes to
	 * StarPU or its unpartition is recorded.  Every task on the children
	 * since was placed in group position or later: they conflict with the
	 * call. */
	struct PlanEpisode {
		starpu_data_handle_t parent;
		std::size_t position; /* the group the call runs before */
		std::vector<starpu_data_handle_t> children;
		bool spoiled = false; /* another call in its tree came meanwhile */
		bool unpartition_recorded = false; /* it came, and did not elide the plan */
	};
	/* Counts why the unpartition of parent, just recorded, did not elide
	 * its plan (episode: its episode, or null).  mutex_ held. */
	void note_not_elided(starpu_data_handle_t parent, PlanEpisode *episode, bool member_calibrating);
	/* One batched call of a kernel group's merged task (doc/design.md,
	 * section 12, kernel groups): tasks of one codelet submitted with
	 * these modes, none conflicting with another, run after the phases
	 * before it. */
	struct KernelPhase {
		const struct starpu_codelet *codelet;
		std::vector<enum starpu_data_access_mode> modes;
		double predicted_us = 0.0; /* over its members with a prediction */
		std::size_t members = 0;
	};
	/* Whether phase holds tasks of task's codelet and modes. */
	static bool phase_takes(const KernelPhase &phase, const struct starpu_task *task);
	struct Group {
		GroupMembers members;
		unsigned sched_ctx = 0;
		int priority = 0;          /* its first member's; all share its priority_bucket (place()) */
		double predicted_us = 0.0; /* sum over members with a prediction */
		bool unpredicted = false;  /* some member had none */
		std::uint64_t bytes = 0;
		double opened_us = 0.0;    /* starpu_timing_now() when its first member came */
		/* Partition calls StarPU gets just before the merged task. */
		std::vector<PendingCall> calls_before;
		/* The members' handles in partition trees, and every strict
		 * ancestor of those, with how many held handles it is an
		 * ancestor of: a group never holds a handle and its ancestor
		 * (fits_trees()).  Tables, so that a task's check costs its own
		 * handles' depth, not the group's size times it, and an
		 * elided plan's children give way to their parent without
		 * rebuilding them.  A held handle's ancestors do not change
		 * while the group is open: cleaning or re-planning an ancestor
		 * conflicts with it and hands the group over first. */
		HandleSet<starpu_data_handle_t> tree_handles;
		HandleTable<starpu_data_handle_t, unsigned> tree_ancestors;
		/* parent -> the uses of children of parent's plan, each as
		 * (members.use_handles index, the child's place in the plan):
		 * what eliding that plan turns into views, found without
		 * looking at every use of the group. */
		struct ChildUse {
			unsigned use;
			unsigned child;
		};
		HandleTable<starpu_data_handle_t, std::vector<ChildUse>> child_uses_of;
		/* The handles its members reduce (STARPU_REDUX): no member
		 * accesses them otherwise (fits_reductions()). */
		std::vector<starpu_data_handle_t> reduced_handles;
		/* A kernel group holds only tasks of codelets with a batched
		 * implementation, run in phases (KernelPhase): member m is in
		 * phase member_phase[m].  Both empty for other groups. */
		std::vector<KernelPhase> phases;
		std::vector<unsigned> member_phase;
		bool is_kernel_group() const { return !phases.empty(); }
	};
	/* The phase of kernel group group that task (with a batched
	 * implementation; accesses, predicted_us) may join: the first of its
	 * codelet and modes after every phase holding a member it conflicts
	 * with, or a new one (phases.size()); -1 when there is none, or when
	 * must_be_light and task depends on a member without being light next
	 * to it.  holds_conflict: some member may conflict with task (else
	 * none is looked at).  mutex_ held. */
	long kernel_phase_for(const Group &group, const struct starpu_task *task, const std::vector<Access<starpu_data_handle_t>> &accesses,
			      double predicted_us, bool holds_conflict, bool must_be_light) const;

	/* The order rule's parent of handle (WindowOrder::ParentOf; window is
	 * the SubmissionWindow): its parent in a followed tree.  Under mutex_. */
	static bool tree_parent_of(const void *window, const starpu_data_handle_t &handle, starpu_data_handle_t &parent);
	/* Hands StarPU a task the window does not keep while it holds
	 * nothing and follows no tree: no lock (submit()). */
	int submit_not_deferred(struct starpu_task *task, bool known_to_starpu);
	/* StarPU's submission of a task not deferred (with mutex_ or not). */
	int hand_to_starpu(struct starpu_task *task, bool waits_for_program);
	/* Whether task may be deferred (no lock; reads the task and its
	 * handles).  On true, ctx, predicted_us and bytes are set. */
	bool deferrable(struct starpu_task *task, unsigned &ctx, double &predicted_us, std::uint64_t &bytes, bool &batched_kernel);
	bool touches_excluded_data(const struct starpu_task *task);
	/* Whether task touches a handle note_invalidation() named, which it
	 * then no longer names.  Takes excluded_mutex_ when some handle is
	 * named. */
	bool follows_an_invalidation(const struct starpu_task *task);
	/* The open group a task that continues no chain joins (number), or
	 * -1 to open one (place()).  mutex_ held. */
	template <typename Joinable>
	long horizontal_group(const struct starpu_task *task, unsigned ctx, std::size_t lowest, long latest_dependency,
			      bool reduction, bool batched_kernel, const Joinable &joinable) const;
	/* Whether task touches a partition tree that is no longer deferred,
	 * and whether StarPU would switch plans for it (partition_trees.h).
	 * mutex_ held. */
	struct TreeAccess {
		bool excluded = false;
		bool switches_plans = false;
		/* A reduction of a handle in a tree is not deferred: a child
		 * view cannot reduce part of its parent, and StarPU ends a
		 * child's reduction with switches of its own. */
		bool reduces = false;
	};
	TreeAccess tree_access(const struct starpu_task *task) const;
	/* task, not deferred, makes StarPU switch plans when it is submitted
	 * (tree_access): the trees follow the switch (partition_trees.h,
	 * follow_switch), or are no longer followed when the window cannot
	 * tell the outcome.  mutex_ held; after a flush. */
	void follow_plan_switches_locked(const struct starpu_task *task);
	bool acquisition_switches_plans_locked(starpu_data_handle_t handle, enum starpu_data_access_mode mode) const;
	void follow_acquisition_switch_locked(starpu_data_handle_t handle, enum starpu_data_access_mode mode);
	/* Whether group may take a task with these accesses without holding a
	 * handle and its ancestor (StarPU would need two plans at once).
	 * mutex_ held. */
	bool fits_trees(const Group &group, const std::vector<Access<starpu_data_handle_t>> &accesses) const;
	void note_tree_handles(Group &group, const std::vector<Access<starpu_data_handle_t>> &accesses) const;
	/* Takes a handle out of group's tree handles (its ancestors' counts
	 * down with it); mutex_ held. */
	void forget_tree_handle(Group &group, starpu_data_handle_t handle) const;
	/* Notes a task's accesses to plan children in group.child_uses_of,
	 * before the task's uses are added to the group; mutex_ held. */
	void note_child_uses(Group &group, const std::vector<Access<starpu_data_handle_t>> &accesses) const;
	void note_tree_handle(Group &group, starpu_data_handle_t handle) const;
	/* mutex_ held; the program's thread, cleaning a plan. */
	void stop_following_unseen_children(const starpu_data_handle_t *children, unsigned nparts);
	/* Whether group may take task without one handle being reduced
	 * (STARPU_REDUX) by some of its members and accessed otherwise by
	 * others: the merged task makes one access per handle, and a reduction
	 * combined with a read or write is neither (doc/design.md, section 12,
	 * reductions).  mutex_ held. */
	bool fits_reductions(const Group &group, const struct starpu_task *task) const;
	/* Whether group holds tasks of task's kind: of its codelet and modes
	 * when it has a batched implementation (batched_kernel), of codelets
	 * without one otherwise.  mutex_ held. */
	bool fits_kernel(const Group &group, const struct starpu_task *task, bool batched_kernel) const;
	void note_reduced_handles(Group &group, const struct starpu_task *task);
	/* The highest group holding an access that conflicts with one of
	 * task's accesses other than its reductions.  mutex_ held. */
	long latest_conflict_without_reductions(const struct starpu_task *task);
	/* Runs a partition call with StarPU's own submissions passing straight
	 * to it.  mutex_ held. */
	void run_call(const std::function<void()> &call);
	/* Runs calls, taken out of the window, in order.  mutex_ held. */
	void run_calls_locked(std::vector<PendingCall> calls);
	/* Plan elision (PlanEpisode).  Whether the program's partition of
	 * parent into children may open an episode; marks the episodes a call
	 * on their tree spoils; elides the episode of parent for its
	 * unpartition into children, if it can: returns false when the
	 * unpartition must be placed as usual.  mutex_ held. */
	bool may_elide(starpu_data_handle_t parent, unsigned nparts, const starpu_data_handle_t *children) const;
	void spoil_episodes_locked(PartitionTrees::Call call, starpu_data_handle_t parent);
	bool elide_plan_locked(starpu_data_handle_t parent, unsigned nparts, const starpu_data_handle_t *children);
	/* Clears the order rule's record once it is large, nothing is in the
	 * window and no group is being handed over.  mutex_ held. */
	void clear_record_when_empty();
	/* Records the group's size for each of its codelets (group_sizes_).
	 * mutex_ held. */
	void note_group_size(const GroupMembers &members);
	/* Hands StarPU the groups holding an access that conflicts with
	 * one of task's, and those opened before them: a task that is not
	 * deferred must follow them (the order rule), not the others.
	 * mutex_ held. */
	void flush_conflicting_locked(const struct starpu_task *task);
	/* Hands StarPU every group and call up to position (a group number,
	 * or past the open groups: everything); nothing when position went
	 * already.  mutex_ held. */
	void flush_through_locked(long position);
	/* task's accesses, in accesses_ (reused: no allocation per task);
	 * mutex_ held. */
	const std::vector<Access<starpu_data_handle_t>> &accesses_of(const struct starpu_task *task);
	/* mutex_ held. */
	void place(struct starpu_task *task, unsigned ctx, double predicted_us, std::uint64_t bytes, bool batched_kernel);
	bool full(const Group &group) const;
	void submit_groups_through(std::size_t group_number);
	/* Takes the oldest open group out of the window, runs the partition
	 * calls placed before it, and puts a kernel group's members in phase
	 * order: what submitting it needs.  mutex_ held. */
	Group take_first_group_locked();
	/* Submits members, out of the window already, as one merged task
	 * (merged_group.h), and counts them out.  mutex_ held. */
	void submit_members_locked(GroupMembers members, unsigned ctx, double predicted_us, const MemberStandIn *stand_in);
	/* window_end_dependencies.cpp: the accesses a stand-in's dependents
	 * conflict with, and the flush that hands first (members of an open
	 * group's, out of the window, in context first_ctx, each predicted at
	 * member_share_us), then every open group, each as the members that
	 * depend on none of dependent's accesses and then those that do.
	 * mutex_ held. */
	class DependentAccesses;
	void flush_apart_from_dependents_locked(GroupMembers first, unsigned first_ctx, double member_share_us,
						DependentAccesses &dependent);
	void flush_locked();
	void flush_worth_running_locked();
	/* Submits the groups opened STARPU_FUSING_MAX_DELAY ago or earlier;
	 * returns when the next one will be due (µs, starpu_timing_now()),
	 * 0 when the window is empty. */
	double flush_overdue_locked();
	void close_periodically();

	const Limits limits_;
	const Selector selected_;
	const Predictor predict_;
	const Selector has_batched_kernel_;
	const SubmissionCounter count_deferred_;
	const ContextLoad &load_;
	GroupReports reports_; /* names, running_groups, retired, uncounted point at the members below */
	const SubmitFunction real_submit_;
	/* Chains fill one group each: a window holds up to this many tasks
	 * before it is flushed whole. */
	const std::size_t max_window_tasks_;

	std::recursive_mutex mutex_;
	WindowOrder<starpu_data_handle_t> order_; /* guarded by mutex_ */
	std::vector<Access<starpu_data_handle_t>> accesses_; /* guarded by mutex_: accesses_of()'s, kept for its capacity */
	std::vector<Access<starpu_data_handle_t>> accesses_without_reductions_; /* guarded by mutex_: latest_conflict_without_reductions()'s */
	std::vector<Access<starpu_data_handle_t>> switching_; /* guarded by mutex_: follow_plan_switches_locked()'s */
	/* The open groups, guarded by mutex_: groups_[i] is group number
	 * first_open_ + i; groups below first_open_ went to StarPU.  The order
	 * rule's record of them stays until the window is empty (every use of
	 * it treats a group below first_open_ as none), then is cleared
	 * (clear_record_when_empty). */
	std::deque<Group> groups_;
	std::size_t first_open_ = 0;
	/* How many open groups have each priority, guarded by mutex_: a task
	 * of higher priority than one of them is not deferred (submit()). */
	std::map<int, unsigned> open_group_priorities_;
	std::atomic<std::size_t> deferred_{0};    /* tasks in the window; written under mutex_ */
	std::atomic<unsigned> waiting_threads_{0}; /* in a wait (begin_wait); read under mutex_ */

	std::mutex excluded_mutex_;
	std::unordered_set<starpu_data_handle_t> excluded_; /* guarded by excluded_mutex_ */
	std::atomic<bool> any_excluded_{false};
	/* note_invalidation()'s handles whose next task has not come yet;
	 * guarded by excluded_mutex_, with a count read without it. */
	std::unordered_set<starpu_data_handle_t> invalidated_;
	std::atomic<std::size_t> invalidated_count_{0};

	/* Calls placed after every open group, for the next group to open (or
	 * the end of the window); guarded by mutex_.  With no group open, the
	 * closer hands them over STARPU_FUSING_MAX_DELAY after the first came
	 * (pending_since_us_, starpu_timing_now()). */
	std::vector<PendingCall> pending_calls_;
	double pending_since_us_ = 0.0;
	std::vector<PlanEpisode> episodes_; /* guarded by mutex_; a few */
	std::atomic<std::size_t> calls_waiting_{0}; /* in pending_calls_ and groups' calls_before; written under mutex_ */
	/* Groups being handed to StarPU by this thread's calls below (StarPU
	 * may run prologues that submit, in the same thread): the group
	 * numbers of the callers must stay valid, so the record is not
	 * cleared meanwhile.  Guarded by mutex_. */
	unsigned submitting_groups_ = 0;
	PartitionTrees trees_;                       /* guarded by mutex_ */
	std::atomic<bool> any_tree_{false};          /* some plan was made: trees_ is worth reading */

	/* How many members the groups holding each codelet's tasks got
	 * (CodeletObservations' batch sizes; written under mutex_, read in
	 * deferrable() without it: hints only).  A codelet whose recent
	 * groups averaged under min_useful_members is not deferred until
	 * its next retry: such groups save StarPU almost nothing and add the
	 * window's latency (DAHL's tasks on partition plans, cut into groups
	 * of 2 by the partition calls and its tasks that are not deferred, ran
	 * 0.73 s per epoch instead of 0.51). */
	CodeletObservations group_sizes_;
	std::vector<const struct starpu_codelet *> codelets_seen_; /* note_group_size()'s, kept for its capacity; guarded by mutex_ */

	NamedMembers names_;
	HeldData held_;
	std::atomic<std::size_t> running_groups_{0};
	/* Ended members StarPU would have destroyed; freed in submit() and
	 * end_wait(), by the thread that calls them (retired_members.h). */
	RetiredMembers retired_;
	UncountedMembers uncounted_;

	std::atomic<std::uint64_t> tasks_deferred_{0};
	std::atomic<std::uint64_t> groups_submitted_{0};
	std::atomic<std::uint64_t> handles_submitted_{0}; /* over every merged task */
	std::atomic<std::uint64_t> plans_elided_{0};
	std::atomic<std::uint64_t> unpartitions_recorded_{0};
	std::atomic<std::uint64_t> plans_cleaned_unseen_{0}; /* children StarPU never saw, unregistered at once */
	/* note_partition_outside_window()'s parents, until a plan change
	 * gives them to trees_ (under mutex_).  A leaf lock: nothing is
	 * called under it. */
	std::mutex outside_calls_mutex_;
	std::unordered_set<starpu_data_handle_t> partitioned_outside_;
	/* Why groups are being handed over now, set by each entry point that
	 * hands them (HandOverScope); guarded by mutex_. */
	HandOver hand_over_ = HandOver::program_call;
	class HandOverScope {
	public:
		HandOverScope(SubmissionWindow &window, HandOver cause) : window_(window), outer_(window.hand_over_)
		{
			window.hand_over_ = cause;
		}
		~HandOverScope() { window_.hand_over_ = outer_; }

	private:
		SubmissionWindow &window_;
		HandOver outer_;
	};
	/* Parents whose elidable partition reached StarPU before their
	 * unpartition came, with why, until that unpartition (or the plan's
	 * clean); guarded by mutex_. */
	struct HandedOver {
		HandOver cause;
		bool spoiled; /* another call on its tree came first */
	};
	std::unordered_map<starpu_data_handle_t, HandedOver> partition_handed_over_;
	/* Counts under mutex_, read unlocked at shutdown (STARPU_FUSING_STATS). */
	std::atomic<std::uint64_t> not_elided_[static_cast<int>(NotElided::count_)] = {};
	std::atomic<std::uint64_t> handed_over_[static_cast<int>(HandOver::count_)] = {};
	void count_not_elided(NotElided reason) { not_elided_[static_cast<int>(reason)].fetch_add(1, std::memory_order_relaxed); }

	std::mutex closer_mutex_;
	std::condition_variable closer_wakeup_;
	bool closer_stop_ = false;                 /* guarded by closer_mutex_ */
	std::atomic<bool> flush_requested_{false};
	/* The closer took a request and hands over what it asked for. */
	std::atomic<bool> closer_handling_{false};
	/* The closer will look at the window within STARPU_FUSING_MAX_DELAY
	 * without being woken (close_periodically). */
	std::atomic<bool> closer_watching_{false};
	std::thread closer_; /* last: started once everything above exists */
};

/* The window while submission-time fusion runs, else null; any thread. */
SubmissionWindow *active_submission_window();
void set_active_submission_window(SubmissionWindow *window);

/* Flushes window before a StarPU call the program makes, i.e. unless this
 * thread is inside StarPU's own code (InsideStarpuScope, below) or StarPU's
 * code made the call (caller: the call's return address; starpu_code.h).
 * The calling thread. */
void flush_before_program_call(SubmissionWindow &window, const void *caller);

/* While an object of this class lives, the thread is inside StarPU's own
 * code (a real StarPU call made by this library, or a scheduling callback):
 * submissions pass straight to StarPU and barriers do not flush. */
class InsideStarpuScope {
public:
	InsideStarpuScope();
	~InsideStarpuScope();
	static bool active();
	InsideStarpuScope(const InsideStarpuScope &) = delete;
	InsideStarpuScope &operator=(const InsideStarpuScope &) = delete;
};

} // namespace fusing

#endif
