/* The submission window hands what it holds to StarPU (window.h;
 * doc/design.md, section 12): groups in the order they opened, each as one
 * merged task, with the partition calls placed before them; the program's
 * calls that need the window flushed first (flush, dependencies, acquisitions,
 * waits); and the closer thread, which hands over what waited
 * STARPU_FUSING_MAX_DELAY and, on request, what is worth running now.
 *
 * Locks and threads:
 *  - submit_groups_through, clear_record_when_empty, note_group_size,
 *    flush_conflicting_locked, flush_through_locked, flush_locked,
 *    run_calls_locked, run_call: mutex_ held, by whichever thread flushes
 *    (a submitting thread, a program's call below, the closer).  StarPU's
 *    starpu_task_submit runs under it (submit_group, merged_group.h), as do
 *    the partition calls (run_call, inside StarPU: their switch tasks go
 *    straight to StarPU); what StarPU runs meanwhile in the same thread (a
 *    member's prologue) may submit through the window again (mutex_ is
 *    recursive).  names_ takes its own lock after mutex_ (named_members.h).
 *  - flush, task_for_dependency, begin_acquisition,
 *    follow_acquisition_switch, begin_wait: the thread making the call
 *    (window.h says which).  Each takes mutex_: flush() only when the
 *    window holds something, task_for_dependency only for a deferred task
 *    whose group's merged task is not made yet, follow_acquisition_switch
 *    only while a tree is followed and the mode is not STARPU_NOPLAN.
 *    begin_acquisition takes HeldData's lock first, alone.
 *    acquisition_switches_plans_locked, follow_acquisition_switch_locked:
 *    mutex_ held.  end_wait: no lock.
 *  - flush_overdue_locked, flush_worth_running_locked: mutex_ held, by the
 *    closer thread.
 *  - request_flush: a worker in pop_task (Engine::on_worker_found_nothing),
 *    or place() with mutex_ held; takes closer_mutex_ only to wake the
 *    closer.  holds_unrequested_work: any thread; only tries mutex_, never
 *    waits for it.
 *  - close_periodically: the closer thread.  Waits on closer_wakeup_ with
 *    closer_mutex_ (released while it sleeps), releases it, then takes
 *    mutex_ to hand over: it never holds both.  A thread holding both took
 *    mutex_ first (place() and record_partition_call waking the closer). */
#include "submission/window.h"

#include "core/current_member.h"
#include "submission/window_internal.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace fusing {

void SubmissionWindow::submit_groups_through(std::size_t group_number)
{
	while (first_open_ <= group_number && !groups_.empty()) {
		Group group = take_first_group_locked();
		const double predicted_us = group.unpredicted ? NAN : group.predicted_us;
		submit_members_locked(std::move(group.members), group.sched_ctx, predicted_us, nullptr);
	}
	clear_record_when_empty();
}

SubmissionWindow::Group SubmissionWindow::take_first_group_locked()
{
	/* Taken out of the window before StarPU sees it: StarPU runs the
	 * members' prologues when the merged task is ready, possibly inside
	 * its submission, and what they submit re-enters the window (same
	 * thread, mutex_ is recursive). */
	Group group = std::move(groups_.front());
	groups_.pop_front();
	first_open_++;
	auto priority = open_group_priorities_.find(group.priority);
	if (--priority->second == 0)
		open_group_priorities_.erase(priority);
	run_calls_locked(std::move(group.calls_before));
	/* A kernel group's phases run one after another, each in one call:
	 * its members go phase by phase. */
	if (group.phases.size() > 1)
		group.members = group.members.in_phase_order(group.member_phase, static_cast<unsigned>(group.phases.size()));
	return group;
}

void SubmissionWindow::submit_members_locked(GroupMembers members, unsigned ctx, double predicted_us, const MemberStandIn *stand_in)
{
	const std::size_t count = members.tasks.size();
	note_group_size(members);
	submitting_groups_++;
	const std::size_t nhandles = submit_group(std::move(members), ctx, predicted_us, reports_, real_submit_, stand_in);
	submitting_groups_--;
	/* Only now: flush() returns without the lock when nothing is
	 * deferred, and must not return while a group is on its way to
	 * StarPU (a program's acquisition overtook a merged task the closer
	 * thread was submitting). */
	deferred_.fetch_sub(count, std::memory_order_relaxed);
	handles_submitted_.fetch_add(nhandles, std::memory_order_relaxed);
	groups_submitted_.fetch_add(1, std::memory_order_relaxed);
}

void SubmissionWindow::clear_record_when_empty()
{
	if (groups_.empty() && pending_calls_.empty() && submitting_groups_ == 0) {
		/* Everything is in StarPU's hands, which orders what follows:
		 * the record starts afresh (group numbers at 0).  Every time:
		 * kept until 65,536 handles, the record of a program registering
		 * a handle per task (20,000 independent tasks) grew and was
		 * allocated again up to 5 MiB, and its lookups missed the
		 * cache; clear() is O(1). */
		order_.clear();
		first_open_ = 0;
	}
}

void SubmissionWindow::note_group_size(const GroupMembers &members)
{
	/* A group holds a few codelets: a short list beats a set. */
	std::vector<const struct starpu_codelet *> &seen = codelets_seen_;
	seen.clear();
	for (const struct starpu_task *task : members.tasks)
		if (std::find(seen.begin(), seen.end(), task->cl) == seen.end()) {
			seen.push_back(task->cl);
			group_sizes_.record_batch_members(task->cl, members.tasks.size());
		}
}

void SubmissionWindow::flush_conflicting_locked(const struct starpu_task *task)
{
	flush_through_locked(order_.latest_conflicting_group(accesses_of(task)));
}

void SubmissionWindow::flush_through_locked(long position)
{
	if (position < 0 || static_cast<std::size_t>(position) < first_open_)
		return;
	if (static_cast<std::size_t>(position) >= first_open_ + groups_.size())
		flush_locked(); /* a call placed after every group */
	else
		submit_groups_through(static_cast<std::size_t>(position));
}

void SubmissionWindow::flush_locked()
{
	const std::size_t end = first_open_ + groups_.size();
	if (!groups_.empty())
		submit_groups_through(end - 1);
	/* The calls placed at the end of the window: a task that StarPU's
	 * submission of a group ran a prologue for may have opened group end
	 * meanwhile, which took them (place()); they go to StarPU now all the
	 * same, before that group. */
	if (end < first_open_ + groups_.size() && end >= first_open_)
		run_calls_locked(std::move(groups_[end - first_open_].calls_before));
	run_calls_locked(std::move(pending_calls_));
	clear_record_when_empty();
}

void SubmissionWindow::run_calls_locked(std::vector<PendingCall> calls)
{
	/* Taken out of the window first (calls is the caller's list, moved):
	 * a call may run a callback that submits.  A partition that goes to
	 * StarPU ends its episode: its tasks will be on the children. */
	for (const PendingCall &call : calls) {
		if (call.opens_episode) {
			auto episode = std::find_if(episodes_.begin(), episodes_.end(),
						    [&](const PlanEpisode &e) { return e.parent == call.opens_episode; });
			if (!episode->unpartition_recorded)
				partition_handed_over_[episode->parent] = HandedOver{hand_over_, episode->spoiled};
			episodes_.erase(episode);
		}
		run_call(call.run);
	}
	calls_waiting_.fetch_sub(calls.size(), std::memory_order_relaxed);
}

void SubmissionWindow::run_call(const std::function<void()> &call)
{
	/* The switch task StarPU submits for it goes straight to StarPU. */
	InsideStarpuScope inside_starpu;
	call();
}

void SubmissionWindow::flush()
{
	if (!holds_tasks())
		return;
	std::lock_guard<std::recursive_mutex> lock(mutex_);
	flush_locked();
}

struct starpu_task *SubmissionWindow::task_for_dependency(struct starpu_task *task)
{
	if (struct starpu_task *merged = merged_task_standing_for(task))
		return merged;
	NamedMembers::Place place = names_.find(task);
	if (!place.known)
		return task;
	if (!place.merged) {
		std::lock_guard<std::recursive_mutex> lock(mutex_);
		place = names_.find(task);
		if (place.known && !place.merged)
			submit_groups_through(place.group);
		place = names_.find(task);
	}
	return place.merged ? place.merged : task;
}

/* Both take mutex_ even when nothing is deferred (unlike flush()): a
 * submission that read the hold or the count of waiting threads before
 * they changed may be about to place its task, and must be done with it
 * before the call goes on (a chain's next link, deferred just as the
 * program's wait began, was missed by the wait, and its callback ran after
 * the program had freed what it read). */
void SubmissionWindow::begin_acquisition(starpu_data_handle_t handle, enum starpu_data_access_mode mode)
{
	held_.acquired(handle, mode);
	std::lock_guard<std::recursive_mutex> lock(mutex_);
	flush_locked();
	follow_acquisition_switch_locked(handle, mode);
}

void SubmissionWindow::follow_acquisition_switch(starpu_data_handle_t handle, enum starpu_data_access_mode mode)
{
	/* StarPU's own switches acquire with STARPU_NOPLAN, from whatever
	 * thread makes them: they need not wait for the window's lock. */
	if (!any_tree_.load(std::memory_order_relaxed) || (mode & STARPU_NOPLAN))
		return;
	std::lock_guard<std::recursive_mutex> lock(mutex_);
	if (acquisition_switches_plans_locked(handle, mode)) {
		/* StarPU's switch accesses siblings the order rule took for
		 * free: everything deferred goes first, as for a task. */
		flush_locked();
		follow_acquisition_switch_locked(handle, mode);
	}
}

bool SubmissionWindow::acquisition_switches_plans_locked(starpu_data_handle_t handle, enum starpu_data_access_mode mode) const
{
	/* user_interactions.c: a write is W alone for an acquisition. */
	return any_tree_.load(std::memory_order_relaxed) && !(mode & STARPU_NOPLAN) && !trees_.excluded(handle) &&
	       trees_.switches_plans(handle, (mode & STARPU_W) != 0);
}

/* StarPU may switch plans for an acquisition, as for a task
 * (partition_trees.h). */
void SubmissionWindow::follow_acquisition_switch_locked(starpu_data_handle_t handle, enum starpu_data_access_mode mode)
{
	if (acquisition_switches_plans_locked(handle, mode))
		trees_.follow_switch(handle, (mode & STARPU_W) != 0);
}

void SubmissionWindow::begin_wait()
{
	waiting_threads_.fetch_add(1, std::memory_order_relaxed);
	std::lock_guard<std::recursive_mutex> lock(mutex_);
	flush_locked();
}

/* Nothing is deferred during the wait (begin_wait flushed the window,
 * and submit() defers nothing while a thread waits), so no merged task is
 * submitted meanwhile and the members StarPU does not count only decrease.
 * Once there are E <= n of them, StarPU's own wait for its count C to drop
 * to n - E returns when the tasks not terminated number C + E' <= n - E + E
 * = n.  While E > n, no count of StarPU's can be enough: the wait is for
 * merged tasks to end. */
int SubmissionWindow::wait_for_n_submitted(bool every_context, unsigned ctx, unsigned n,
					   const std::function<int(unsigned)> &starpu_wait)
{
	uncounted_.wait_until_at_most(every_context, ctx, n);
	const std::size_t uncounted = every_context ? uncounted_.total() : uncounted_.in(ctx);
	return starpu_wait(n - static_cast<unsigned>(std::min<std::size_t>(uncounted, n)));
}

void SubmissionWindow::end_wait()
{
	waiting_threads_.fetch_sub(1, std::memory_order_relaxed);
	retired_.free_waiting();
}

double SubmissionWindow::flush_overdue_locked()
{
	HandOverScope cause(*this, HandOver::max_delay);
	const double now_us = starpu_timing_now();
	std::size_t overdue = 0;
	while (overdue < groups_.size() && now_us - groups_[overdue].opened_us >= limits_.max_delay_us)
		overdue++;
	if (overdue > 0)
		submit_groups_through(first_open_ + overdue - 1);
	if (!groups_.empty())
		return groups_.front().opened_us + limits_.max_delay_us;
	/* Calls waiting for a group that may never open. */
	if (!pending_calls_.empty() && now_us - pending_since_us_ >= limits_.max_delay_us)
		flush_locked();
	return pending_calls_.empty() ? 0.0 : pending_since_us_ + limits_.max_delay_us;
}

void SubmissionWindow::flush_worth_running_locked()
{
	HandOverScope cause(*this, HandOver::idle_worker);
	/* Through the newest group worth running: one request used to hand
	 * over the oldest only, and polling workers asked again at once, but
	 * a resting worker does not (DAHL: 9 rests ended by the safety net
	 * while such groups waited).  Only while a worker of its context still
	 * waits: the request may be older than the groups (the program's
	 * thread deferred tasks while the worker that asked got busy), and
	 * handing them over then only makes them smaller (flush barrier test:
	 * increments deferred while the worker ran a reduction reached StarPU
	 * before the reader that had to find them deferred). */
	for (std::size_t i = groups_.size(); i-- > 0;) {
		const Group &group = groups_[i];
		if ((group.unpredicted || group.predicted_us >= kWorthRunningAlone_us) && load_.some_worker_waits(group.sched_ctx)) {
			submit_groups_through(first_open_ + i);
			return;
		}
	}
}

bool SubmissionWindow::holds_unrequested_work()
{
	if (!holds_tasks() || flush_requested_.load(std::memory_order_seq_cst) || closer_handling_.load(std::memory_order_seq_cst))
		return false;
	std::unique_lock<std::recursive_mutex> lock(mutex_, std::try_to_lock);
	if (!lock.owns_lock())
		return false;
	for (const Group &group : groups_)
		if (group.unpredicted || group.predicted_us >= kWorthRunningAlone_us)
			return !flush_requested_.load(std::memory_order_seq_cst) && !closer_handling_.load(std::memory_order_seq_cst);
	return false;
}

void SubmissionWindow::request_flush()
{
	if (!flush_requested_.exchange(true, std::memory_order_relaxed)) {
		std::lock_guard<std::mutex> lock(closer_mutex_);
		closer_wakeup_.notify_one();
	}
}

/* The closer thread: once the oldest deferred task has waited
 * STARPU_FUSING_MAX_DELAY, flushes the window; on request (a worker found no
 * work), hands StarPU the groups worth running now (with the groups opened
 * before the newest of them): one nothing predicts, or with at least
 * kWorthRunningAlone_us of predicted work.  Groups of tinier tasks wait to
 * fill up: a worker idle because the program submits tiny tasks one by one
 * gains more from larger merged tasks, which cost the program less to
 * submit, than from a few µs of work now.  Waits without a
 * lock of the window; takes mutex_ only to flush.
 *
 * After a look that found the window holding something, it looks again
 * STARPU_FUSING_MAX_DELAY later at the latest even if it is empty by then
 * (closer_watching_), and sleeps until woken only after a look that found
 * it empty: a window the program's thread fills and the closer empties again
 * and again needs no wake-up from that thread each time it turns non-empty
 * (the convolution at 2,304 px: ~28 per loop, each a futex call and often a
 * preemption of that thread; 10 interleaved runs, 0.047 -> 0.044 s).  A task
 * deferred meanwhile is still handed over STARPU_FUSING_MAX_DELAY after its
 * group opened: the closer's next look finds its group and waits until it
 * is due.  Stopping to watch pairs with place(): the closer clears
 * closer_watching_ and then tests holds_tasks(), the program's thread
 * counts its task and then reads closer_watching_, both sequentially
 * consistent, so either the closer sees the task or the thread wakes it. */
void SubmissionWindow::close_periodically()
{
	std::unique_lock<std::mutex> lock(closer_mutex_);
	double due_us = 0.0; /* when the oldest group is due, 0: none known */
	bool looked_at_work = false; /* the last look found tasks or calls in the window */
	while (!closer_stop_) {
		if (due_us > 0.0) {
			closer_watching_.store(true, std::memory_order_seq_cst);
			const double wait_us = std::max(0.0, due_us - starpu_timing_now());
			closer_wakeup_.wait_for(lock, std::chrono::microseconds(static_cast<long long>(wait_us)));
		} else if (looked_at_work) {
			closer_watching_.store(true, std::memory_order_seq_cst);
			closer_wakeup_.wait_for(lock, std::chrono::microseconds(static_cast<long long>(limits_.max_delay_us)),
						[&] { return closer_stop_ || flush_requested_.load(); });
		} else {
			closer_watching_.store(false, std::memory_order_seq_cst);
			closer_wakeup_.wait(lock, [&] { return closer_stop_ || holds_tasks() || flush_requested_.load(); });
		}
		if (closer_stop_)
			break;
		/* Set while a request is taken and handled: what the window holds
		 * then is on its way (holds_unrequested_work). */
		closer_handling_.store(true, std::memory_order_seq_cst);
		const bool requested = flush_requested_.exchange(false, std::memory_order_seq_cst);
		lock.unlock();
		{
			std::lock_guard<std::recursive_mutex> window_lock(mutex_);
			looked_at_work = holds_tasks();
			if (requested)
				flush_worth_running_locked();
			due_us = flush_overdue_locked();
		}
		closer_handling_.store(false, std::memory_order_seq_cst);
		lock.lock();
	}
}

} // namespace fusing
