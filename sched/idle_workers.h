/* Idle CPU workers sleep instead of polling, on the condition StarPU wakes
 * them on (STARPU_FUSING_IDLE_WORKERS=sleep; doc/design.md, section 3).
 *
 * Why sleep: StarPU built with STARPU_NON_BLOCKING_DRIVERS (Debian's
 * 1.3.10, a default 1.4 build) never blocks a worker; one that finds no
 * task calls pop_task again after a few sched_yield()s, and with one worker
 * per core the program's submitting thread shares its core with pollers.
 *
 * When: after polling (StarPU's loop, yielding the core between polls after
 * the first 10 us) for about what a wake-up costs, measured on the
 * wake-ups sent (a cross-core hand-off took ~40 us on this project's VM):
 * a task arriving sooner is taken at once.
 *
 * Where: in StarPU's idle hook (starpu_idle_hook_register), which the CPU
 * driver calls after a driver iteration that got no task
 * (_starpu_cpu_driver_run_once).  By then _starpu_get_worker_task has left
 * its scheduling operation and set the worker's status to SLEEPING, so every
 * StarPU function that wakes this worker -- starpu_wake_worker_locked from
 * _starpu_push_local_task (a task pinned to it), the bases' wake-ups, the
 * data requests' _starpu_wake_all_blocked_workers_on_node, shutdown's
 * starpu_wake_all_blocked_workers -- broadcasts the worker's own
 * sched_cond under its sched_mutex (starpu_worker_get_sched_condition):
 * the worker waits there, holding that mutex from its last check to the
 * wait, as StarPU's blocking driver does.  Inside pop_task the status is
 * SCHEDULING, and StarPU would only set a flag the policy cannot read.
 *
 * The checks made under the mutex before waiting close the gap between the
 * driver's empty pop and the wait: no task pushed through the policy since
 * the worker's pop began (the push counter), no task pinned to the worker
 * announced by push_task_notify and not yet started.  The wake-ups StarPU
 * does not send in a non-blocking build are sent here: a push through the
 * policy wakes every resting worker (the base may have queued the task for
 * any of them), a pinned task its worker.  The wait has a safety net
 * (kSafetyNet_us); a rest the safety net ended while one of the checks
 * above was already true is counted as stalled: it must stay 0.
 *
 * A worker does not rest, and keeps StarPU's loop, when:
 *  - StarPU's driver itself decided whether to sleep after the empty pop
 *    (a build with blocking drivers: _starpu_worker_can_block runs the
 *    progression hooks there, which non-blocking builds never do between
 *    the pop and the idle hook); the first such observation settles it for
 *    the process, and StarPU's own sleep, where every wake-up lands, is
 *    left alone;
 *  - it belongs to a context of another policy (whose pushes would not
 *    wake it), or to several of ours with tasks queued in any (a
 *    non-blocking driver pops one context per iteration);
 *  - the iteration did not call our pop (the driver waits for a transfer);
 *  - the machine has several memory nodes (requests between them progress
 *    only while a worker of the node polls, and posting one wakes nobody
 *    in a non-blocking build);
 *  - one of the program's progression or idle hooks returned 0 ("do not
 *    block") since the worker's last decision: the library defines the
 *    two registration functions and wraps the program's hooks.
 * And the window, which hands over what is worth running when a polling
 * worker's pop finds nothing, is asked to when a group becomes worth running
 * while a worker waits (submission/window_placement.cpp, place).
 *
 * Threads: every function runs in a CPU worker except pushed() and
 * pinned_task_queued() (any thread pushing a task) and the statistics
 * (any thread).  A worker's own bookkeeping is thread-local; what other
 * threads read is atomic.  StarPU's sched_mutex is the only lock: taken
 * by the resting worker around its checks and wait, and by the wakers
 * through starpu_wake_worker_relax_light (which relaxes a waker that is
 * itself in a scheduling operation). */
#ifndef STARPU_FUSING_SCHED_IDLE_WORKERS_H
#define STARPU_FUSING_SCHED_IDLE_WORKERS_H

#include <starpu.h>

#include <cstdint>
#include <cstdio>
#include <functional>

namespace fusing {

struct ContextLoad;

namespace idle_workers {

/* The longest rest: a wake-up lost anyway (a data request posted between a
 * worker's pop and its wait) costs at most this. */
constexpr long kSafetyNet_us = 500;

/* Registers the hooks; policy is the `fusing` structure (contexts using it
 * wake their workers through pushed()), load the per-context queued counts,
 * work_held whether the engine holds work a worker could do now that no
 * wake-up is on its way for (a rest the safety net ends then counts as
 * stalled).  The thread creating the engine, before any task. */
void start(const struct starpu_sched_policy *policy, const ContextLoad *load, std::function<bool()> work_held);
/* Deregisters them; workers still inside a hook return at once. */
void stop();

/* pop_task, before the base's pop: the push count to compare against. */
std::uint64_t pushes_seen();
/* pop_task, after it: whether the base found a task. */
void popped(std::uint64_t pushes_before, bool found_task);
/* push_task, after the base accepted a task: wakes every resting worker. */
void pushed();
/* push_task_notify, before StarPU queues a task pinned to worker. */
void pinned_task_queued(int worker);
/* pre_exec_hook: the calling worker starts task. */
void task_starting(const struct starpu_task *task);

struct Statistics {
	std::uint64_t rests;
	std::uint64_t woken;
	std::uint64_t safety_net;
	std::uint64_t stalled;
	unsigned resting_now;
	bool drivers_sleep; /* StarPU's drivers block (blocking-drivers build) */
};
/* One of the program's hooks returned 0 (the calling thread's next rest
 * decision does not rest); any thread. */
void note_program_hook_forbids_resting();

/* start() ran and stop() did not: workers may rest. */
bool resting_enabled();
Statistics statistics();
void print(FILE *stream);

} // namespace idle_workers
} // namespace fusing

#endif
