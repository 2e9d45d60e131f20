/* The ready-time fusion engine: which tasks are borrowed at submission,
 * which ready tasks are held, and what triggers a flush.
 *
 * The life of a held task, step by step with its threads, is in
 * borrowed_task.h; collecting held tasks into batches in batch_collector.h;
 * submitting them in flusher.h; running them in merged_task.h.  This file
 * is the glue and the hold rule (controller.h, admission.h):
 *  - on_submit (submitting thread, from submit_hook): eligibility
 *    (eligibility.h) and STARPU_FUSING_ONLY/EXCLUDE; accepted tasks are
 *    borrowed;
 *  - on_task_ready (the readying thread): predict, apply the hold rule and
 *    the memory cap, hold and add to the collector, or let it run unfused;
 *  - the policy's push, pop and pre_exec hooks keep the per-context load
 *    (admission.h) and ask for a flush when a CPU worker runs out of work;
 *    do_schedule (starpu_task_wait_for_all and friends) flushes too.
 *
 * The memory cap: a batch needs all its members' data in the memory node of
 * the worker that runs it at once.  Under a memory limit
 * (STARPU_LIMIT_CPU_MEM, out-of-core) a batch larger than what the node can
 * hold would wait for memory forever (StarPU 1.4's disk/mem_reclaim hung).
 * So that every CPU worker can run a batch at once within half the node's
 * memory, a batch closes once its members' buffers sum to a quarter of
 * (node memory / CPU workers), and a task whose own buffers exceed that
 * quarter runs unfused: a batch then never exceeds half of its share. */
#ifndef STARPU_FUSING_SCHED_ENGINE_H
#define STARPU_FUSING_SCHED_ENGINE_H

#include "core/admission.h"
#include "core/waiting_priorities.h"
#include "ready/batch_collector.h"
#include "core/batch_trace.h"
#include "ready/borrowed_task.h"
#include "core/codelet_name.h"
#include "core/codelet_observations.h"
#include "core/codelet_selection.h"
#include "ready/controller.h"
#include "ready/flusher.h"
#include "kernels/kernel_binding.h"
#include "core/stats.h"
#include "core/topology.h"
#include "sched/config.h"
#include "submission/window.h"

#include <starpu.h>

#include <atomic>
#include <cstdio>
#include <memory>

namespace fusing {

class Engine final : public ReadyListener {
public:
	/* Starts the flusher thread.  Called from the policy's first
	 * init_sched, in the thread calling starpu_init (workers exist). */
	explicit Engine(const Config &config);
	/* Stops the flusher.  StarPU has waited for every task by then
	 * (starpu_shutdown waits for every submitted task, and a held task
	 * has not terminated); a task still held is reported and the program
	 * aborts rather than losing it. */
	~Engine();

	/* submit_hook: the submitting thread. */
	void on_submit(struct starpu_task *task);
	/* push_task, before the base policy gets a task of this priority:
	 * any thread. */
	void on_pushing_to_base(unsigned sched_ctx, int priority);
	/* push_task, when the base policy refused it. */
	void on_push_refused(unsigned sched_ctx, int priority);
	/* pre_exec_hook: the worker about to run task. */
	void on_task_starting(const struct starpu_task *task, unsigned sched_ctx);
	/* post_exec_hook: the worker that ran task. */
	void on_task_finished(const struct starpu_task *task, unsigned sched_ctx);
	/* pop_task found nothing: the worker, in its scheduling operation (its
	 * sched_mutex released: driver_common.c calls pop_task that way). */
	void on_worker_found_nothing(unsigned sched_ctx);
	/* STARPU_FUSING_IDLE_WORKERS=sleep: a CPU worker that found nothing
	 * sleeps until StarPU or a push wakes it (idle_workers.h). */
	bool idle_workers_sleep() const { return config_.idle_workers_sleep; }
	/* Each context's queued and running tasks; any thread reads it. */
	const ContextLoad &load() const { return load_; }
	/* The window holds a group worth running now, and no flush was
	 * requested for it (SubmissionWindow::holds_unrequested_work); any
	 * thread, without waiting for a lock. */
	bool holds_unrequested_work() { return window_ && window_->holds_unrequested_work(); }
	/* do_schedule (starpu_task_wait_for_all and friends): close every open
	 * batch of the context now. */
	void flush_context(unsigned sched_ctx);
	/* add_workers/remove_workers: the thread changing the context. */
	void update_cpu_workers(unsigned sched_ctx);

	/* The fusion table, then the workers' time proportions. */
	void print_statistics(FILE *stream) const;

private:
	/* Why unpartitions were not elided with their partition
	 * (SubmissionWindow::NotElided). */
	void print_unpartitions_not_elided(FILE *stream) const;
	void on_task_ready(BorrowedTask &task) override;
	/* Predicted duration of one task (µs), NaN when unknown; any thread. */
	double predict_member_us(struct starpu_task *task);
	/* Asks for the context's batches to close; from a worker, lets StarPU
	 * observe it while it may block on the collector's mutex. */
	void request_flush(unsigned sched_ctx);
	void record_unfused(const struct starpu_codelet *cl, UnfusedReason reason);
	/* STARPU_FUSING_ONLY/EXCLUDE let cl's tasks be fused; any thread. */
	bool family_selected(const struct starpu_codelet *cl);
	/* cl has a batched implementation: registered, or a kernel pack
	 * entry that may bind to it; any thread. */
	bool has_batched_kernel(const struct starpu_codelet *cl);
	/* Starts the submission window if config_ asks for it and the
	 * library sees the program's submissions; the constructor. */
	void start_submission_window();
	/* One line per STARPU_FUSING_ONLY/EXCLUDE name no codelet had. */
	void warn_about_unused_names(FILE *stream) const;

	const Config config_;
	const Targets targets_;
	const bool selecting_by_name_; /* STARPU_FUSING_ONLY or _EXCLUDE set */
	struct starpu_perfmodel_arch *cpu_perf_arch_ = nullptr; /* for StarPU's models */
	double profiling_started_us_ = 0.0; /* starpu_timing_now() at start, for the worker report */
	Topology topology_;                 /* read once, at start */
	bool group_by_numa_node_ = false;   /* several NUMA nodes: batches keep to one */
	/* Set at start.  caps_.close_at_bytes is also the most a held task's
	 * buffers may sum to (the memory cap); 0 when StarPU knows no memory
	 * total. */
	DataCaps caps_;

	Statistics stats_;          /* only fed when config_.print_stats */
	std::unique_ptr<BatchTrace> trace_; /* STARPU_FUSING_TRACE; null without it */
	CodeletNames names_;
	CodeletSelection selection_; /* only used when selecting_by_name_ */
	CodeletObservations observations_;
	KernelBindings kernels_; /* STARPU_FUSING_KERNELS's entries */
	ContextLoad load_;
	ReadyWorkPriorities priorities_;
	std::unique_ptr<BatchCollector> collector_;
	std::unique_ptr<Flusher> flusher_;
	/* Set when submission-time fusion runs (STARPU_FUSING_MODE); last: it
	 * uses the fields above. */
	std::unique_ptr<SubmissionWindow> window_;
	bool ready_time_fusion_ = true; /* mode ready or both */

	std::atomic<std::uint64_t> idle_with_nothing_held_{0}; /* statistics only */
	std::atomic<std::uint64_t> long_tasks_seen_{0}; /* too long for generic execution: remeasure_period */
};

} // namespace fusing

#endif
