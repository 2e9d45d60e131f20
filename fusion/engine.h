/* The fusion engine: takes ready tasks into batches and submits the batches.
 *
 * Life of a fused task (DESIGN.md §3), with the thread that runs each step:
 *  1. on_submit (submitting thread): if check_fusable() accepts it, install
 *     our ready prologue, chaining the application's.
 *  2. on_ready (the thread that makes it ready, no scheduler lock held): if
 *     the controller says so (controller.h), hold it: where=NOWHERE, one end
 *     dependency, and append it to its family's open batch.  Otherwise it
 *     runs unfused.  StarPU then takes its NOWHERE path: it releases the
 *     task's data and makes the first of the two termination calls.
 *  3. the flusher thread submits a proxy per closed batch (proxy_task.h),
 *     with no lock held.
 *  4. the proxy's callback releases the end dependency: the second call.
 *  5. in the member's termination (whichever of the two calls comes last),
 *     its stand-in callback restores `where` and its own callback.
 * Step 5 is where `where` comes back, not step 4, for two reasons: StarPU
 * reads task->where in the termination to skip post_exec_hook for NOWHERE
 * tasks (the base never saw the member), and a proxy whose members only read
 * can start, and finish, while StarPU is still on its way to the NOWHERE
 * check; the termination cannot complete before that check.
 *
 * Batches close when full, when max_delay has passed, and as soon as a worker
 * of the context is out of queued work (admission.h). */
#ifndef STARPU_FUSING_FUSION_ENGINE_H
#define STARPU_FUSING_FUSION_ENGINE_H

#include "fusion/batch_buffers.h"
#include "fusion/controller.h"
#include "fusion/family.h"
#include "fusion/codelet_observations.h"
#include "fusion/topology.h"
#include "fusion/stats.h"
#include "sched/config.h"

#include <starpu.h>

#include <array>
#include <atomic>
#include <bitset>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace fusing {

class Engine {
public:
	/* Starts the flusher thread.  Called from the policy's first init_sched. */
	explicit Engine(const Config &config);
	/* Stops the flusher.  StarPU has waited for every task by then
	 * (starpu_shutdown waits for no ready task, and buffered members count
	 * as ready until they terminate); a task still buffered is reported and
	 * the program aborts rather than losing it. */
	~Engine();

	/* submit_hook: the submitting thread. */
	void on_submit(struct starpu_task *task);
	/* push_task, before the base policy gets task: any thread. */
	void on_pushing_to_base(unsigned sched_ctx);
	/* push_task, when the base policy refused it. */
	void on_push_refused(unsigned sched_ctx);
	/* pre_exec_hook: the worker about to run task. */
	void on_task_starting(const struct starpu_task *task, unsigned sched_ctx);
	/* pop_task found nothing: the worker, holding its sched_mutex. */
	void on_worker_found_nothing(unsigned sched_ctx);
	/* do_schedule (starpu_task_wait_for_all and friends): close every open
	 * batch of the context now. */
	void flush_context(unsigned sched_ctx);
	/* add_workers/remove_workers: the thread changing the context. */
	void set_worker_count(unsigned sched_ctx, unsigned nworkers);

	/* The fusion table, then the workers' time proportions. */
	void print_statistics(FILE *stream) const;

	/* The online estimate: mean member duration measured in batches, per
	 * codelet.  Lock-free so that every readying thread can consult it. */
	CodeletObservations &observations() { return observations_; }

private:
	using Buffers = BatchBuffers<Family *, Member>;

	static void on_ready(void *prologue_arg);
	void admit(struct starpu_task *task, std::int32_t where_before_batching, double predicted_us);
	void request_flush(unsigned sched_ctx);
	Family *family_locked(const struct starpu_task *task, int numa_node);
	/* Appends batch to closed, split into one part per worker of its
	 * context when split (controller.h says when), and records the sizes of
	 * what it appended; mutex_ held. */
	void close_batch(Buffers::Batch &&batch, bool split, std::vector<Buffers::Batch> &closed);
	/* Predicted duration of one task (µs), NaN when unknown; any thread. */
	double predict_member_us(struct starpu_task *task);
	void flusher_loop();

	const Config config_;
	const Targets targets_;
	const bool selecting_by_name_; /* STARPU_FUSING_ONLY or _EXCLUDE set */
	struct starpu_perfmodel_arch *cpu_perf_arch_ = nullptr; /* for StarPU's models */
	double profiling_started_us_ = 0.0; /* starpu_timing_now() at start, for the worker report */
	Topology topology_;                 /* read once, at start */
	bool group_by_numa_node_ = false;   /* several NUMA nodes: batches keep to one */
	std::uint64_t working_set_cap_bytes_ = 0; /* STARPU_FUSING_CACHE_CAP; 0: off or cache unknown */
	Statistics stats_;
	CodeletObservations observations_;

	std::mutex mutex_;                       /* guards the fields below it, up to the atomics */
	std::condition_variable flusher_wakeup_; /* signalled with mutex_ held or just released */
	Buffers buffers_;
	std::map<FamilyKey, std::unique_ptr<Family>> families_;
	Family *last_family_ = nullptr; /* most tasks follow one of their own family */
	std::vector<Buffers::Batch> full_batches_;
	std::bitset<STARPU_NMAX_SCHED_CTXS> flush_requested_;
	bool stopping_ = false;

	/* Lock-free hints read on every push, pop and task start.  They steer
	 * batching only; correctness never depends on them (the flusher's timer
	 * closes every batch within max_delay regardless). */
	std::atomic<std::size_t> buffered_{0};   /* copy of buffers_.buffered() */
	std::atomic<std::uint64_t> idle_with_nothing_held_{0}; /* statistics only */
	std::atomic<std::uint64_t> long_tasks_seen_{0}; /* too long for generic execution: remeasure_period */
	std::array<std::atomic<long>, STARPU_NMAX_SCHED_CTXS> queued_not_started_{};
	std::array<std::atomic<unsigned>, STARPU_NMAX_SCHED_CTXS> nworkers_{};

	std::thread flusher_;
};

/* The engine of the running policy, or null when fusion is off.  Set by the
 * policy layer before any task is submitted and cleared after the last. */
extern std::atomic<Engine *> active_engine;

} // namespace fusing

#endif
