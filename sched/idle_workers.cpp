/* Idle CPU workers sleep on StarPU's own condition; see idle_workers.h. */
#include "sched/idle_workers.h"

#include "core/admission.h"
#include "core/starpu_functions.h"
#include "starpu_fusing.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <sched.h>

namespace fusing {
namespace idle_workers {
namespace {

/* Bounds on the polling before a rest for a wake-up's cost (spin_us). */
constexpr double kShortestSpin_us = 5.0, kLongestSpin_us = 100.0;
/* The longest polling that catches a worker's short idle gaps: beyond, a
 * gap costs more polling than the wake-up it saves. */
constexpr double kLongestCatch_us = 160.0;
/* The first microseconds of idleness are polled as StarPU does: a task
 * often follows at once (a successor its last task released), and a
 * sched_yield() per poll costs 1-2 µs here (a pinned chain alternating two
 * workers: 7.5 µs per task yielding from the start, 5.3 µs from 10 µs on,
 * 6.0 µs under lws alone; cnn_training at DAHL's granularity the same
 * either way). */
constexpr double kPollWithoutYielding_us = 10.0;

/* Workers beyond this never rest (StarPU's STARPU_NMAXWORKERS is far
 * below it in every build seen). */
constexpr unsigned kMaxWorkers = 1024;

/* Set by start() before StarPU can call a hook, cleared by stop(); a hook
 * that runs after stop() (StarPU reads a hook's slot, then calls it
 * outside its lock) finds it false.  The state below has static storage,
 * so that late call still touches valid memory. */
std::atomic<bool> running{false};
/* Workers inside the idle hook past its first test: stop() waits for none. */
std::atomic<unsigned> workers_in_hook{0};
const struct starpu_sched_policy *fusing_policy = nullptr; /* written by start() only */
const ContextLoad *context_load = nullptr;                 /* written by start() only */
std::function<bool()> engine_holds_work;                   /* written by start() only */
int idle_hook = -1;                                        /* start() and stop() */
/* Registered until the first idle iteration tells the driver's kind;
 * exchanged by whoever deregisters it. */
std::atomic<int> progression_hook{-1};

/* StarPU's own registration functions (the library defines both for the
 * program, below). */
using HookRegistration = int (*)(unsigned (*)(void *), void *);
StarpuFunction<HookRegistration> starpu_idle_hook_registration("starpu_idle_hook_register");
StarpuFunction<HookRegistration> starpu_progression_hook_registration("starpu_progression_hook_register");

/* Tasks pushed through the policy, counted once the base holds them, and
 * those whose wake-ups were sent: a rest the safety net ends while one is
 * under way (the pusher preempted in between) is not counted as stalled. */
std::atomic<std::uint64_t> pushes{0}, pushes_woken{0};
/* Pinned tasks announced whose worker is being woken: the same for them. */
std::atomic<unsigned> pinned_wakeups_in_flight{0};

/* How long a resting worker takes to run again once woken (µs): a moving
 * average over the wake-ups this library sends; 40 µs on this project's
 * 2-vCPU VM (a condition-variable hand-off between two cores). */
std::atomic<double> wakeup_latency_us{40.0};

struct WorkerState {
	std::atomic<bool> resting{false};
	/* starpu_timing_now() of the first wake-up sent to this rest; 0 if none. */
	std::atomic<double> woken_at_us{0.0};
	/* Announced by push_task_notify and not yet started. */
	std::atomic<long> pinned_waiting{0};
};
std::array<WorkerState, kMaxWorkers> workers;
std::atomic<unsigned> resting_count{0};

/* A rest was refused because the machine has several memory nodes. */
std::atomic<bool> several_memory_nodes{false};

enum class DriverKind { unknown, polls, sleeps };
std::atomic<DriverKind> driver_kind{DriverKind::unknown};

std::atomic<std::uint64_t> rests{0}, woken{0}, safety_net{0}, stalled{0};

/* How long the calling worker's recent idle gaps lasted, from its first
 * empty iteration to its next task: a weight per bucket of lengths (powers
 * of two from 10 us), older gaps fading.  A program whose worker waits
 * tens of microseconds between operations (NNTile's one worker, while the
 * program's thread, woken from its wait for all, prepares the next
 * operation: 90% of gaps under 160 us) gets them caught by polling rather
 * than paying a wake-up on each. */
class IdleGaps {
public:
	void add(double gap_us)
	{
		for (double &weight : weights_)
			weight *= kFading;
		weights_[bucket_of(gap_us)] += 1.0;
	}

	/* The length under which the fraction q of the gaps ended (a bucket's
	 * bound); infinity past the last bucket or before any gap. */
	double quantile_us(double q) const
	{
		double total = 0.0;
		for (double weight : weights_)
			total += weight;
		double below = 0.0, bound = kFirstBound_us;
		for (std::size_t b = 0; b + 1 < weights_.size() && total > 0.0; b++, bound *= 2.0) {
			below += weights_[b];
			if (below >= q * total)
				return bound;
		}
		return HUGE_VAL;
	}

private:
	static constexpr double kFirstBound_us = 10.0;
	static constexpr double kFading = 0.98; /* ~50 gaps make the picture */
	static std::size_t bucket_of(double gap_us)
	{
		std::size_t bucket = 0;
		for (double bound = kFirstBound_us; gap_us >= bound && bucket + 1 < kBuckets; bound *= 2.0)
			bucket++;
		return bucket;
	}
	static constexpr std::size_t kBuckets = 8; /* the last: 640 us and more */
	std::array<double, kBuckets> weights_{};
};

/* The calling worker's view of its current driver iteration. */
struct ThisWorker {
	/* Our pop found nothing in this iteration, and nothing has run since. */
	bool pop_found_nothing = false;
	std::uint64_t pushes_before_pop = 0;
	/* starpu_timing_now() of the first empty iteration since the worker
	 * last had a task; 0 while it has one. */
	double idle_since_us = 0.0;
	/* A progression hook ran after that pop: the driver evaluated
	 * _starpu_worker_can_block (blocking drivers). */
	bool driver_evaluated_sleep = false;
	/* One of the program's progression or idle hooks returned 0 since the
	 * worker's last rest decision: "the driver must not block"
	 * (_starpu_worker_can_block honours it in a blocking build). */
	bool program_hook_forbids_resting = false;
	IdleGaps gaps;
	/* The worker's contexts, read by the pop that follows the hook's
	 * request (wants_contexts): StarPU changes a worker's list of
	 * contexts from the changing thread, keeping the worker out of
	 * scheduling operations only (notify_workers_about_changing_ctx_pending,
	 * core/sched_ctx.c), so the list is read inside pop_task, never in the
	 * idle hook (two_cpu_contexts, a StarPU example, crashed in 2% of its
	 * runs reading it there).  contexts_read: the last pop read them and
	 * no task has started since. */
	bool wants_contexts = false;
	bool contexts_read = false;
	bool all_contexts_ours = false;
	unsigned context_count = 0;
	std::array<unsigned, STARPU_NMAX_SCHED_CTXS> contexts{};
};
thread_local ThisWorker this_worker;

/* StarPU keeps a copy of the policy structure for each context
 * (_starpu_init_sched_policy), so the copy's push function tells. */
bool is_ours(unsigned ctx)
{
	const struct starpu_sched_policy *policy = starpu_sched_ctx_get_sched_policy(ctx);
	return policy && policy->push_task == fusing_policy->push_task;
}

/* The worker's contexts all use this policy, and only one of them, or none
 * with queued tasks: every task it could pop would have been seen by its
 * pop, or wakes it through pushed().  From the contexts its last pop read:
 * a change since then ends with a broadcast of the worker's sched_cond
 * (_starpu_worker_leave_changing_ctx_op), which ends a rest already begun;
 * one that ended between that pop and the rest is seen at the next rest,
 * the safety net bounding the one in between. */
bool contexts_let_it_rest(const ThisWorker &self)
{
	if (!self.all_contexts_ours || self.context_count == 0)
		return false;
	if (self.context_count == 1)
		return true;
	for (unsigned i = 0; i < self.context_count; i++)
		if (context_load->queued_not_started[self.contexts[i]].load(std::memory_order_relaxed) > 0)
			return false;
	return true;
}

/* pop_task, inside StarPU's scheduling operation: the calling worker's
 * contexts, for the idle hook that asked. */
void read_contexts(ThisWorker &self, int worker)
{
	unsigned *contexts = nullptr;
	const unsigned count = starpu_worker_get_sched_ctx_list(worker, &contexts);
	self.context_count = std::min<unsigned>(count, STARPU_NMAX_SCHED_CTXS);
	self.all_contexts_ours = count <= STARPU_NMAX_SCHED_CTXS;
	for (unsigned i = 0; i < self.context_count; i++) {
		self.contexts[i] = contexts[i];
		self.all_contexts_ours = self.all_contexts_ours && is_ours(contexts[i]);
	}
	std::free(contexts);
	self.contexts_read = true;
}

/* What a rest waits for, already true. */
bool wakeup_due(int worker, std::uint64_t pushes_before)
{
	return pushes.load(std::memory_order_seq_cst) != pushes_before ||
	       workers[worker].pinned_waiting.load(std::memory_order_seq_cst) > 0;
}

/* A pusher or a pinned task's announcer is between its count and its
 * wake-up. */
bool wakeup_under_way()
{
	return pushes.load(std::memory_order_seq_cst) != pushes_woken.load(std::memory_order_seq_cst) ||
	       pinned_wakeups_in_flight.load(std::memory_order_seq_cst) != 0;
}

/* Any thread; a racy update only blurs the average. */
void note_wakeup_latency(double woken_at_us)
{
	if (woken_at_us <= 0.0)
		return;
	const double average = wakeup_latency_us.load(std::memory_order_relaxed);
	/* A sample counts at most twice the average: a worker preempted
	 * before it could run again (a loaded machine) measures the load, not
	 * the wake-up, and polling longer would only add to that load. */
	const double latency = std::min(starpu_timing_now() - woken_at_us, 2.0 * average);
	wakeup_latency_us.store(average + (latency - average) / 8.0, std::memory_order_relaxed);
}

/* What a wake-up costs (the moving average), within its bounds. */
double wakeup_cost_us()
{
	return std::clamp(wakeup_latency_us.load(std::memory_order_relaxed), kShortestSpin_us, kLongestSpin_us);
}

/* How long an idle worker keeps polling before it rests: as long as a
 * wake-up would cost it, so that a task arriving sooner is taken at once
 * and one arriving later has cost at most twice the wait (spin, then
 * block: the classic bound); longer, up to kLongestCatch_us, when 90% of
 * the worker's recent idle gaps ended within that (IdleGaps).  Between its
 * polls, after the first kPollWithoutYielding_us, it yields its core,
 * which StarPU's own loop never does ("rep; nop", common/utils.h): the
 * program's thread queued on that core runs first. */
double spin_us(const ThisWorker &self)
{
	const double wakeup = wakeup_cost_us();
	const double most_gaps = self.gaps.quantile_us(0.9);
	return most_gaps <= kLongestCatch_us ? std::max(wakeup, most_gaps) : wakeup;
}

void rest(int worker, std::uint64_t pushes_before)
{
	starpu_pthread_mutex_t *mutex;
	starpu_pthread_cond_t *cond;
	starpu_worker_get_sched_condition(worker, &mutex, &cond);
	WorkerState &state = workers[worker];
	bool ended_by_safety_net = false;
	starpu_pthread_mutex_lock(mutex);
	/* Announced before the checks; wakers announce their task before
	 * looking for resting workers (seq_cst both ways): one of the two
	 * sees the other. */
	state.woken_at_us.store(0.0, std::memory_order_relaxed);
	state.resting.store(true, std::memory_order_seq_cst);
	resting_count.fetch_add(1, std::memory_order_seq_cst);
	if (!wakeup_due(worker, pushes_before)) {
		rests.fetch_add(1, std::memory_order_relaxed);
		struct timespec deadline;
		clock_gettime(CLOCK_REALTIME, &deadline);
		deadline.tv_nsec += kSafetyNet_us * 1000;
		if (deadline.tv_nsec >= 1000000000L) {
			deadline.tv_sec++;
			deadline.tv_nsec -= 1000000000L;
		}
		/* One wait: any broadcast ends it, StarPU's for its own reasons
		 * too (a context change, a parallel task's block request), and
		 * the driver loop then looks at everything again. */
		const bool timed_out = starpu_pthread_cond_timedwait(cond, mutex, &deadline) == ETIMEDOUT;
		/* A wake-up this library sent counts even when the deadline passed
		 * before the worker could run again (a loaded machine): the wait
		 * then reports the timeout. */
		const double woken_at_us = state.woken_at_us.load(std::memory_order_relaxed);
		if (!timed_out || woken_at_us > 0.0) {
			woken.fetch_add(1, std::memory_order_relaxed);
			note_wakeup_latency(woken_at_us);
		} else {
			safety_net.fetch_add(1, std::memory_order_relaxed);
			ended_by_safety_net = true;
			if (wakeup_due(worker, pushes_before) && !wakeup_under_way())
				stalled.fetch_add(1, std::memory_order_relaxed);
		}
	}
	resting_count.fetch_sub(1, std::memory_order_seq_cst);
	state.resting.store(false, std::memory_order_seq_cst);
	starpu_pthread_mutex_unlock(mutex);
	/* Asked without the worker's mutex: a pusher holds the engine's locks
	 * (the window's) while it takes a worker's, through the wake-up. */
	if (ended_by_safety_net && engine_holds_work && engine_holds_work())
		stalled.fetch_add(1, std::memory_order_relaxed);
}

void deregister_progression_hook()
{
	const int hook = progression_hook.exchange(-1);
	if (hook >= 0)
		starpu_progression_hook_deregister(hook);
}

void decide_and_rest(ThisWorker &self);

/* The idle hook: the CPU driver, after an iteration without a task, outside
 * any scheduling operation (driver_cpu.c, _starpu_cpu_driver_run_once). */
unsigned after_idle_iteration(void *)
{
	ThisWorker &self = this_worker;
	if (!self.pop_found_nothing)
		return 1;
	self.pop_found_nothing = false;
	/* Counted before running is read, so that stop() can wait for every
	 * worker to be out of the engine's state. */
	workers_in_hook.fetch_add(1, std::memory_order_seq_cst);
	if (running.load(std::memory_order_seq_cst))
		decide_and_rest(self);
	/* What a pop read is for the hook right after it only (a pop that
	 * found a task leaves it to task_starting to clear). */
	self.contexts_read = false;
	workers_in_hook.fetch_sub(1, std::memory_order_seq_cst);
	return 1;
}

/* The idle hook's decision, for a worker whose pop found nothing, while
 * start() has run and stop() has not finished. */
void decide_and_rest(ThisWorker &self)
{
	DriverKind kind = driver_kind.load(std::memory_order_relaxed);
	if (kind == DriverKind::unknown) {
		const DriverKind seen = self.driver_evaluated_sleep ? DriverKind::sleeps : DriverKind::polls;
		driver_kind.compare_exchange_strong(kind, seen, std::memory_order_relaxed);
		kind = driver_kind.load(std::memory_order_relaxed);
		/* Known: the progression hook's only use is over, and StarPU
		 * calls it on every driver iteration. */
		deregister_progression_hook();
	}
	self.driver_evaluated_sleep = false;
	if (kind != DriverKind::polls)
		return;
	if (self.program_hook_forbids_resting) {
		self.program_hook_forbids_resting = false;
		return;
	}
	/* Requests between memory nodes (an out-of-core disk, NUMA nodes
	 * StarPU manages) progress only while a worker of the node polls
	 * for them (__starpu_datawizard_progress), and posting one wakes
	 * nobody in a non-blocking build (_starpu_post_data_request,
	 * datawizard/data_request.c: inside #ifndef STARPU_NON_BLOCKING_DRIVERS):
	 * an acquisition of out-of-core data waited 608 us for the safety net
	 * instead of 40.  Asked each time: a disk node appears after the
	 * policy starts (_starpu_swap_init) or when the program registers one. */
	if (starpu_memory_nodes_get_count() > 1) {
		several_memory_nodes.store(true, std::memory_order_relaxed);
		return;
	}
	const int worker = starpu_worker_get_id();
	if (worker < 0 || static_cast<unsigned>(worker) >= kMaxWorkers || starpu_worker_get_type(worker) != STARPU_CPU_WORKER)
		return;
	const double now = starpu_timing_now();
	if (self.idle_since_us == 0.0)
		self.idle_since_us = now;
	const double idle_us = now - self.idle_since_us;
	if (idle_us < spin_us(self)) {
		if (idle_us >= kPollWithoutYielding_us)
			sched_yield();
		return;
	}
	/* Time to rest: the next pop reads the contexts it may rest with. */
	if (!self.contexts_read) {
		self.wants_contexts = true;
		return;
	}
	if (contexts_let_it_rest(self))
		rest(worker, self.pushes_before_pop);
}

/* The progression hook: every thread making data requests progress; in a
 * worker after our empty pop, only a blocking driver deciding to sleep
 * (_starpu_worker_can_block).  Its answer, 1, lets it. */
unsigned after_progress(void *)
{
	if (this_worker.pop_found_nothing)
		this_worker.driver_evaluated_sleep = true;
	return 1;
}

void wake(int worker)
{
	double none = 0.0;
	workers[worker].woken_at_us.compare_exchange_strong(none, starpu_timing_now(), std::memory_order_relaxed);
	/* Locks the worker's sched_mutex (relaxing a calling worker that is
	 * in a scheduling operation) and, the resting worker's status being
	 * SLEEPING, broadcasts its sched_cond. */
	starpu_wake_worker_relax_light(worker);
}

} // namespace

void start(const struct starpu_sched_policy *policy, const ContextLoad *load, std::function<bool()> work_held)
{
	fusing_policy = policy;
	context_load = load;
	engine_holds_work = std::move(work_held);
	pushes.store(0);
	pushes_woken.store(0);
	rests.store(0);
	woken.store(0);
	safety_net.store(0);
	stalled.store(0);
	for (WorkerState &state : workers)
		state.pinned_waiting.store(0);
	/* A blocking build was recognised by the previous StarPU of this
	 * process; the library loaded now may be another. */
	driver_kind.store(DriverKind::unknown);
	several_memory_nodes.store(false);
	wakeup_latency_us.store(40.0);
	running.store(true, std::memory_order_release);
	idle_hook = starpu_idle_hook_registration.get()(after_idle_iteration, nullptr);
	progression_hook.store(starpu_progression_hook_registration.get()(after_progress, nullptr));
	if (idle_hook < 0 || progression_hook.load() < 0) {
		std::fprintf(stderr, "starpu-fusing: StarPU has no free idle or progression hook slot; "
			     "idle workers poll (as STARPU_FUSING_IDLE_WORKERS=poll)\n");
		stop();
	}
}

void stop()
{
	running.store(false, std::memory_order_seq_cst);
	/* The engine's state (context_load, engine_holds_work) goes with it:
	 * a worker still in the hook (a context of this policy deleted while
	 * others run) is woken and waited for. */
	while (workers_in_hook.load(std::memory_order_seq_cst) != 0) {
		const unsigned count = starpu_worker_get_count();
		for (unsigned worker = 0; worker < count && worker < kMaxWorkers; worker++)
			if (workers[worker].resting.load(std::memory_order_seq_cst))
				wake(static_cast<int>(worker));
		sched_yield();
	}
	if (idle_hook >= 0)
		starpu_idle_hook_deregister(idle_hook);
	idle_hook = -1;
	deregister_progression_hook();
}

std::uint64_t pushes_seen()
{
	return pushes.load(std::memory_order_seq_cst);
}

void popped(std::uint64_t pushes_before, bool found_task)
{
	ThisWorker &self = this_worker;
	self.pop_found_nothing = !found_task;
	self.pushes_before_pop = pushes_before;
	self.driver_evaluated_sleep = false;
	if (!found_task && self.wants_contexts) {
		self.wants_contexts = false;
		const int worker = starpu_worker_get_id();
		if (worker >= 0)
			read_contexts(self, worker);
	}
}

void pushed()
{
	pushes.fetch_add(1, std::memory_order_seq_cst);
	if (resting_count.load(std::memory_order_seq_cst) != 0) {
		const unsigned count = starpu_worker_get_count();
		for (unsigned worker = 0; worker < count && worker < kMaxWorkers; worker++)
			if (workers[worker].resting.load(std::memory_order_seq_cst))
				wake(static_cast<int>(worker));
	}
	pushes_woken.fetch_add(1, std::memory_order_seq_cst);
}

void pinned_task_queued(int worker)
{
	if (worker < 0 || static_cast<unsigned>(worker) >= kMaxWorkers)
		return;
	pinned_wakeups_in_flight.fetch_add(1, std::memory_order_seq_cst);
	workers[worker].pinned_waiting.fetch_add(1, std::memory_order_seq_cst);
	/* StarPU wakes it too once the task is queued (_starpu_push_local_task);
	 * woken now, it does not go back to rest while the task is on its way. */
	if (workers[worker].resting.load(std::memory_order_seq_cst))
		wake(worker);
	pinned_wakeups_in_flight.fetch_sub(1, std::memory_order_seq_cst);
}

void task_starting(const struct starpu_task *task)
{
	ThisWorker &self = this_worker;
	self.pop_found_nothing = false;
	self.wants_contexts = false;
	self.contexts_read = false;
	if (self.idle_since_us > 0.0) {
		self.gaps.add(starpu_timing_now() - self.idle_since_us);
		self.idle_since_us = 0.0;
	}
	if (!task->execute_on_a_specific_worker)
		return;
	const int worker = starpu_worker_get_id();
	if (worker < 0 || static_cast<unsigned>(worker) >= kMaxWorkers)
		return;
	/* Never below zero: a pinned task of a context without this policy
	 * was not announced. */
	std::atomic<long> &waiting = workers[worker].pinned_waiting;
	long now = waiting.load(std::memory_order_relaxed);
	while (now > 0 && !waiting.compare_exchange_weak(now, now - 1, std::memory_order_seq_cst)) {
	}
}

void note_program_hook_forbids_resting()
{
	this_worker.program_hook_forbids_resting = true;
}

bool resting_enabled()
{
	return running.load(std::memory_order_acquire);
}

Statistics statistics()
{
	return Statistics{rests.load(), woken.load(), safety_net.load(), stalled.load(), resting_count.load(),
			  driver_kind.load() == DriverKind::sleeps};
}

void print(FILE *stream)
{
	const Statistics s = statistics();
	if (several_memory_nodes.load()) {
		std::fprintf(stream, "[starpu-fusing] idle workers: poll, as StarPU's drivers do: the machine "
				     "has %u memory nodes, whose data requests progress only while their workers poll\n",
			     starpu_memory_nodes_get_count());
		return;
	}
	if (s.drivers_sleep) {
		std::fprintf(stream, "[starpu-fusing] idle workers: StarPU's drivers sleep themselves (a build with "
				     "blocking drivers); the policy lets them\n");
		return;
	}
	std::fprintf(stream, "[starpu-fusing] idle workers: poll %.0f us (a wake-up's measured cost; up to %.0f us for a "
			     "worker whose idle gaps were shorter), then rest: %llu rests, "
			     "%llu ended by a wake-up, %llu by the %ld us safety net, %llu of these with a task waiting\n",
		     wakeup_cost_us(), kLongestCatch_us, (unsigned long long)s.rests, (unsigned long long)s.woken, (unsigned long long)s.safety_net,
		     kSafetyNet_us, (unsigned long long)s.stalled);
}

} // namespace idle_workers
} // namespace fusing

namespace {

/* A hook the program registers, as StarPU calls it: the program's function
 * and argument.  Never freed: StarPU reads a slot under its lock and calls
 * the hook after releasing it, so a deregistered hook may still run once. */
struct ProgramHook {
	unsigned (*function)(void *);
	void *arg;
};

unsigned run_program_hook(void *arg)
{
	const ProgramHook *hook = static_cast<const ProgramHook *>(arg);
	const unsigned may_block = hook->function(hook->arg);
	if (!may_block)
		fusing::idle_workers::note_program_hook_forbids_resting();
	return may_block;
}

} // namespace

/* The program's hooks go through run_program_hook, so that a worker does
 * not rest after one asked StarPU's drivers not to block (a program polling
 * an external event from its hook: 237 us from event to callback instead of
 * 21).  Effective where the program's calls reach the library (preloaded,
 * as starpu-fusing-run does); any thread. */
extern "C" FUSING_PUBLIC int starpu_progression_hook_register(unsigned (*func)(void *arg), void *arg)
{
	return fusing::idle_workers::starpu_progression_hook_registration.get()(run_program_hook, new ProgramHook{func, arg});
}

extern "C" FUSING_PUBLIC int starpu_idle_hook_register(unsigned (*func)(void *arg), void *arg)
{
	return fusing::idle_workers::starpu_idle_hook_registration.get()(run_program_hook, new ProgramHook{func, arg});
}

extern "C" FUSING_PUBLIC int starpu_fusing_get_idle_statistics(struct starpu_fusing_idle_statistics *statistics)
{
	if (!statistics || statistics->size != sizeof(*statistics))
		return -EINVAL;
	if (!fusing::idle_workers::resting_enabled())
		return -ENOENT;
	const fusing::idle_workers::Statistics s = fusing::idle_workers::statistics();
	statistics->rests = s.rests;
	statistics->woken = s.woken;
	statistics->safety_net = s.safety_net;
	statistics->stalled = s.stalled;
	statistics->resting_now = s.resting_now;
	statistics->drivers_sleep = s.drivers_sleep ? 1 : 0;
	return 0;
}
