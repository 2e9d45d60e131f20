/* The fusion engine; see engine.h. */
#include "sched/engine.h"

#include "build_config.h" /* configure's findings, not sched/config.h */

#include "core/batched_registry.h"
#include "core/eligibility.h"
#include "ready/merged_task.h"
#include "core/numa_node.h"
#include "sched/idle_workers.h"
#include "sched/worker_report.h"
#include "core/starpu_functions.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace fusing {
namespace {

std::vector<unsigned> cpu_workers_of_machine()
{
	std::vector<unsigned> workers;
	for (unsigned w = 0; w < starpu_worker_get_count(); w++)
		if (starpu_worker_get_type(static_cast<int>(w)) == STARPU_CPU_WORKER)
			workers.push_back(w);
	return workers;
}

/* The smallest share of memory a CPU worker has: its memory node's total
 * (StarPU's limit when one is set) divided among the CPU workers of that
 * node; 0 when StarPU knows no total. */
std::uint64_t memory_share_per_cpu_worker(const std::vector<unsigned> &cpu_workers)
{
	std::vector<unsigned> nodes;
	for (unsigned w : cpu_workers)
		nodes.push_back(starpu_worker_get_memory_node(w));
	std::uint64_t smallest = 0;
	for (unsigned node : nodes) {
		starpu_ssize_t total = starpu_memory_get_total(node);
		if (total <= 0)
			continue;
		auto workers_on_node = static_cast<std::uint64_t>(std::count(nodes.begin(), nodes.end(), node));
		std::uint64_t share = static_cast<std::uint64_t>(total) / workers_on_node;
		if (smallest == 0 || share < smallest)
			smallest = share;
	}
	return smallest;
}

/* Whether task writes, without reading it, a handle of which no memory
 * node has a valid copy (registered without data, invalidated,
 * deinitialized).  The task holds the handle's write lock now (StarPU
 * calls the prologue once the task's data requests are granted), so the
 * answer cannot change before the hold. */
bool writes_data_without_a_valid_copy(const BorrowedTask &task)
{
	const unsigned nnodes = starpu_memory_nodes_get_count();
	for (unsigned i = 0; i < task.nbuffers(); i++) {
		if ((task.mode(i) & STARPU_R) || !(task.mode(i) & STARPU_W))
			continue;
		bool valid_somewhere = false;
		for (unsigned node = 0; node < nnodes && !valid_somewhere; node++)
			valid_somewhere = starpu_data_is_on_node(task.handle(i), node);
		if (!valid_somewhere)
			return true;
	}
	return false;
}

std::uint64_t buffer_bytes(const BorrowedTask &task)
{
	std::uint64_t bytes = 0;
	for (unsigned i = 0; i < task.nbuffers(); i++)
		bytes += starpu_data_get_size(task.handle(i));
	return bytes;
}

/* Whether asking StarPU for model's prediction can have side effects:
 * measured models (history, regressions) force calibration when they have
 * too few samples; the program's own cost functions just answer. */
bool model_may_force_calibration(const struct starpu_perfmodel *model)
{
	return model->type != STARPU_COMMON && model->type != STARPU_PER_ARCH
#if HAVE_DECL_STARPU_PER_WORKER
	       && model->type != STARPU_PER_WORKER
#endif
		;
}

/* The unfused task a worker is timing (on_task_starting to
 * on_task_finished); written and read by that worker only. */
thread_local const struct starpu_task *timed_task = nullptr;
thread_local double timed_task_start_us = 0.0;

} // namespace

Engine::Engine(const Config &config)
	: config_(config),
	  targets_{config.target_us, config.min_batch_tasks, config.max_batch_tasks, config.max_generic_task_us},
	  selecting_by_name_(!config.only_codelets.empty() || !config.exclude_codelets.empty()),
	  kernels_(enabled_pack_entries(config.kernel_entries))
{
	if (config_.print_stats) {
		starpu_profiling_status_set(STARPU_PROFILING_ENABLE);
		profiling_started_us_ = starpu_timing_now();
	}
	if (!config_.trace_path.empty()) {
		/* Opened now: a file that cannot be written is refused at
		 * start, not found out at shutdown. */
		std::FILE *file = std::fopen(config_.trace_path.c_str(), "w");
		if (!file) {
			std::fprintf(stderr, "starpu-fusing: STARPU_FUSING_TRACE='%s': cannot open it for writing: %s\n",
				     config_.trace_path.c_str(), std::strerror(errno));
			std::exit(EXIT_FAILURE);
		}
		trace_ = std::make_unique<BatchTrace>(file);
	}
	topology_ = describe_this_machine();
	group_by_numa_node_ = topology_.numa_nodes > 1;
	const std::vector<unsigned> cpu_workers = cpu_workers_of_machine();
	if (config_.cache_cap_level != 0) {
		caps_.working_set_bytes = topology_.smallest_cache(config_.cache_cap_level, cpu_workers);
		/* Asked for, but impossible: say so rather than run without it silently. */
		if (caps_.working_set_bytes == 0)
			std::fprintf(stderr, "starpu-fusing: STARPU_FUSING_CACHE_CAP=l%d: the L%d cache of some CPU worker is unknown "
				     "(workers not bound to one core, e.g. STARPU_WORKERS_NOBIND=1, or hwloc does not report it); "
				     "batches are not capped\n", config_.cache_cap_level, config_.cache_cap_level);
	}
	const std::uint64_t share = memory_share_per_cpu_worker(cpu_workers);
	caps_.close_at_bytes = share / 4;
	double cpu_relative_speedup = 1.0;
	if (!cpu_workers.empty()) {
		cpu_perf_arch_ = starpu_worker_get_perf_archtype(static_cast<int>(cpu_workers[0]), STARPU_NMAX_SCHED_CTXS);
		cpu_relative_speedup = starpu_worker_get_relative_speedup(cpu_perf_arch_);
	}
	collector_ = std::make_unique<BatchCollector>(
		targets_, config_.max_delay_us, caps_, load_, observations_,
		[this](const struct starpu_codelet *cl) { return names_.of(cl); }, cpu_relative_speedup);
	flusher_ = std::make_unique<Flusher>(*collector_,
					     MergedTaskReports{&observations_, config_.print_stats ? &stats_ : nullptr, trace_.get(), &kernels_, &priorities_});
	start_submission_window();
}

void Engine::start_submission_window()
{
	if (config_.mode == Config::Mode::ready)
		return;
	/* The default asks for submission-time fusion only where the program's
	 * submissions reach it: an unpreloaded program (STARPU_SCHED_LIB alone
	 * on 1.4, libstarpu linked first) runs ready-time fusion, as it did
	 * before both became the default; STARPU_FUSING_STATS says which. */
	if (!config_.mode_set && !submissions_reach_this_library())
		return;
	if (!submissions_reach_this_library()) {
		std::fprintf(stderr, "starpu-fusing: STARPU_FUSING_MODE=%s needs the program's starpu_task_submit calls, "
			     "but libstarpu comes before libstarpu-fusing: preload it (LD_PRELOAD, or run the program "
			     "with starpu-fusing-run) or use STARPU_FUSING_MODE=ready\n",
			     config_.mode == Config::Mode::both ? "both" : "submission");
		std::exit(EXIT_FAILURE);
	}
	ready_time_fusion_ = config_.mode == Config::Mode::both;
	const SubmissionWindow::Limits limits{config_.max_batch_tasks, config_.target_us, config_.max_delay_us,
					      config_.max_generic_task_us, caps_.close_at_bytes, caps_.working_set_bytes,
					      config_.hold == Config::Hold::always, config_.elide_plans};
	/* A ready-time batch's merged task is never deferred. */
	auto selected = [this](struct starpu_task *task) {
		return !is_merged_task(task) && (!selecting_by_name_ || family_selected(task->cl));
	};
	auto predict = [this](struct starpu_task *task) { return predict_member_us(task); };
	auto batched = [this](struct starpu_task *task) { return has_batched_kernel(task->cl); };
	SubmissionWindow::SubmissionCounter count_deferred;
	if (config_.print_stats)
		count_deferred = [this](struct starpu_task *task) { stats_.record_submitted(task->cl, names_.of(task->cl)); };
	const GroupReports reports{&observations_, config_.print_stats ? &stats_ : nullptr, trace_.get(), nullptr, nullptr, nullptr, nullptr, &kernels_, &priorities_};
	window_ = std::make_unique<SubmissionWindow>(limits, selected, predict, batched, count_deferred, load_, reports,
						     starpu_own_task_submit);
	set_active_submission_window(window_.get());
}

Engine::~Engine()
{
	if (window_) {
		set_active_submission_window(nullptr);
		/* starpu_shutdown flushed (it is a barrier) and waited for every
		 * merged task. */
		if (window_->holds_tasks() || window_->groups_running() != 0) {
			std::fprintf(stderr, "starpu-fusing: deferred tasks were still waiting when StarPU shut down; "
				     "this is a bug of starpu-fusing, please report it\n");
			std::abort();
		}
		window_.reset();
	}
	flusher_.reset();
	if (selecting_by_name_)
		warn_about_unused_names(stderr);
	if (collector_->buffered() != 0) {
		std::fprintf(stderr, "starpu-fusing: %zu tasks were still waiting for a batch when StarPU shut down; "
			     "this is a bug of starpu-fusing, please report it\n", collector_->buffered());
		std::abort();
	}
	/* Every merged task has ended: starpu_shutdown waited for them. */
	if (trace_ && !trace_->write())
		std::fprintf(stderr, "starpu-fusing: STARPU_FUSING_TRACE='%s': writing it failed: %s\n", config_.trace_path.c_str(),
			     std::strerror(errno));
}

bool Engine::family_selected(const struct starpu_codelet *cl)
{
	return selection_.selected(cl, [this](const struct starpu_codelet *codelet) {
		return codelet_selected(config_, names_.of(codelet).c_str());
	});
}

bool Engine::has_batched_kernel(const struct starpu_codelet *cl)
{
	return batched_implementation_for(cl).has_value() || kernels_.may_bind(cl);
}

void Engine::record_unfused(const struct starpu_codelet *cl, UnfusedReason reason)
{
	if (config_.print_stats)
		stats_.record_unfused(cl, reason);
}

void Engine::on_submit(struct starpu_task *task)
{
	if (is_merged_task(task) || is_group_task(task))
		return;
	if (config_.print_stats)
		stats_.record_submitted(task->cl, names_.of(task->cl));
	/* The cheaper test first: an excluded family is the common case of a
	 * task that fails both. */
	UnfusedReason reason = selecting_by_name_ && task->cl && !family_selected(task->cl) ? UnfusedReason::family_not_selected
											  : check_fusable(task, ReduxAccesses::unfused);
	if (reason != UnfusedReason::none) {
		record_unfused(task->cl, reason);
		return;
	}
	if (ready_time_fusion_)
		BorrowedTask::borrow_at_submission(task, *this);
}

void Engine::on_task_ready(BorrowedTask &borrowed)
{
	struct starpu_task *task = borrowed.task();
	const unsigned ctx = task->sched_ctx;
	/* An end dependency declared after submission would make a third
	 * termination call, which the hand-back (borrowed_task.h) must not
	 * race with. */
	if (task->nb_termination_call_required != 0)
		return record_unfused(task->cl, UnfusedReason::end_dependencies);
	/* A context without CPU workers could never run the batch. */
	if (load_.cpu_workers[ctx].load(std::memory_order_relaxed) == 0)
		return record_unfused(task->cl, UnfusedReason::no_cpu_worker_in_context);
	double predicted_us = predict_member_us(task);
	const bool fuse_even_if_long = too_long_for_generic_execution(predicted_us, targets_) &&
				       (has_batched_kernel(task->cl) ||
					long_tasks_seen_.fetch_add(1, std::memory_order_relaxed) % remeasure_period == 0);
	UnfusedReason reason = decide_hold(predicted_us, targets_, fuse_even_if_long, observations_.worth_holding(task->cl),
					   load_.every_worker_busy(ctx), config_.hold == Config::Hold::always);
	/* A worker waits: the task should run now, but through the codelet's
	 * batched implementation, whose gain is compute, not only StarPU's
	 * costs: it is held and its batch closed right away (request_flush
	 * below), with the tasks of the codelet readied meanwhile.  Run
	 * alone, the convolution's first conv2d tasks at 600 kpx took ~8 ms
	 * each, ~1.4 ms per member in a batch sharing their image
	 * (doc/design.md, section 6). */
	if (reason == UnfusedReason::worker_was_idle && has_batched_kernel(task->cl))
		reason = UnfusedReason::none;
	if (reason != UnfusedReason::none)
		return record_unfused(task->cl, reason);
	const std::uint64_t bytes = buffer_bytes(borrowed);
	if (caps_.close_at_bytes > 0 && bytes > caps_.close_at_bytes)
		return record_unfused(task->cl, UnfusedReason::data_too_large_for_memory);
	/* Held, the task would give its write lock back (the NOWHERE path)
	 * while the handle has no value, and StarPU's own requests queued on
	 * the handle would then find none: the idle prefetch that
	 * starpu_data_wont_use makes after its release (_starpu_data_wont_use,
	 * datawizard/user_interactions.c, 1.3 and 1.4) aborted in
	 * _starpu_fetch_data_on_node ("no handle initialization function")
	 * when an invalidation submitted after the wont_use ran first and the
	 * next writer was held (promises_wont_use_then_invalidate_unblocked,
	 * 10 aborts in 10 runs under MODE=ready on 1.4.12).  Run at once, the
	 * writer keeps the lock until it has written, as under StarPU alone. */
	if (writes_data_without_a_valid_copy(borrowed))
		return record_unfused(task->cl, UnfusedReason::writes_data_without_value);
	/* Ready work of lower priority waits (queued, or held) or runs: held,
	 * the task would wait for its batch meanwhile (waiting_priorities.h). */
	if (priorities_.lower_priority_work(task->priority))
		return record_unfused(task->cl, UnfusedReason::outranks_ready_work);

	/* Outside the collector's lock: on a multi-node machine, a page query
	 * per buffer. */
	const int numa_node = group_by_numa_node_ ? numa_node_of_task(task, node_of_address) : -1;
	borrowed.hold();
	priorities_.waiting.add(task->priority); /* until its batch starts (merged_task.cpp) */
	collector_->add(borrowed, family_of(borrowed, numa_node), predicted_us, bytes);
	/* A worker may have gone idle between the busy check above and now:
	 * it found nothing to pop while buffered() was still 0. */
	if (!load_.every_worker_busy(ctx))
		request_flush(ctx);
}

double Engine::predict_member_us(struct starpu_task *task)
{
	double predicted_us = NAN;
	/* StarPU's own model, when asking it cannot force calibration or the
	 * base policy asks it too (codelet_observations.h), and it answers for
	 * the CPU architecture that would run the batch. */
	const struct starpu_perfmodel *model = task->cl->model;
	if (model && cpu_perf_arch_ && (!model_may_force_calibration(model) || observations_.base_predicts(task->cl))) {
		double expected = starpu_task_expected_length(task, cpu_perf_arch_, 0);
		if (!std::isnan(expected) && expected > 0.0)
			predicted_us = expected;
	}
	if (std::isnan(predicted_us))
		predicted_us = observations_.member_us(task->cl);
	return predicted_us;
}

void Engine::on_task_finished(const struct starpu_task *task, unsigned sched_ctx)
{
	load_.running[sched_ctx].fetch_sub(1, std::memory_order_relaxed);
	priorities_.running.remove(task->priority);
	if (timed_task == task) {
		timed_task = nullptr;
		observations_.record_member_us(task->cl, starpu_timing_now() - timed_task_start_us);
	}
}

void Engine::on_pushing_to_base(unsigned sched_ctx, int priority)
{
	load_.queued_not_started[sched_ctx].fetch_add(1, std::memory_order_relaxed);
	priorities_.waiting.add(priority);
}

void Engine::on_push_refused(unsigned sched_ctx, int priority)
{
	load_.queued_not_started[sched_ctx].fetch_sub(1, std::memory_order_relaxed);
	priorities_.waiting.remove(priority);
}

void Engine::on_task_starting(const struct starpu_task *task, unsigned sched_ctx)
{
	/* A codelet nothing predicts yet, run unfused: its duration is what
	 * the window needs to decide whether merging it would serialise
	 * work (submission/window.cpp, deferrable). */
	if (window_ && task->cl && !is_merged_task(task) && !is_group_task(task) && std::isnan(observations_.member_us(task->cl))) {
		timed_task = task;
		timed_task_start_us = starpu_timing_now();
	}
	/* Set by model-aware bases when they placed the task. */
	if (task->cl && !std::isnan(task->predicted) && !is_merged_task(task))
		observations_.note_base_predicts(task->cl);
	load_.running[sched_ctx].fetch_add(1, std::memory_order_relaxed);
	priorities_.running.add(task->priority);
	/* Tasks bound to a worker bypass push_task, so were never counted. */
	if (task->execute_on_a_specific_worker)
		return;
	load_.queued_not_started[sched_ctx].fetch_sub(1, std::memory_order_relaxed);
	priorities_.waiting.remove(task->priority);
	if (collector_->buffered() != 0 && !load_.every_worker_busy(sched_ctx))
		request_flush(sched_ctx);
}

void Engine::on_worker_found_nothing(unsigned sched_ctx)
{
	/* Unlocked read: a task held after this read sees the idle worker
	 * through the context's load in on_task_ready and requests the flush
	 * itself. */
	if (window_ && window_->holds_tasks())
		window_->request_flush();
	if (collector_->buffered() != 0) {
		request_flush(sched_ctx);
		/* Give the flusher a core: StarPU's idle workers poll, and where
		 * they and the submitting thread occupy every core, the flusher
		 * waited behind them (perf, stencil 64 wide on 2 cores: 15.6% of
		 * the time in _starpu_get_worker_task against 2.9% under lws; the
		 * yield took the run from 0.231 to 0.200 s, lws 0.175 s).  With a
		 * free core it returns at once.  Relaxed, as for any wait inside a
		 * scheduling operation: a thread pushing to this worker's queue
		 * waits until StarPU may observe the worker (starpu_worker_lock,
		 * 1.3 and 1.4), and a yielding worker may not run again for a
		 * scheduler period (the program's push of a high-priority task
		 * under MODE=ready waited 5 ms for it, while 110 low-priority
		 * tasks started: promises_high_priority_task_overtakes_queued_work). */
		starpu_worker_relax_on();
		std::this_thread::yield();
		starpu_worker_relax_off();
	} else if (config_.print_stats)
		idle_with_nothing_held_.fetch_add(1, std::memory_order_relaxed);
}

void Engine::request_flush(unsigned sched_ctx)
{
	/* A worker blocking on a lock other than its sched_mutex while in a
	 * scheduling operation must let StarPU observe it
	 * (starpu_worker_relax_on, starpu_worker.h), as StarPU's own policies
	 * do; other threads just take the lock. */
	const bool worker = starpu_worker_get_id() >= 0;
	if (worker)
		starpu_worker_relax_on();
	collector_->request_flush(sched_ctx);
	if (worker)
		starpu_worker_relax_off();
}

void Engine::flush_context(unsigned sched_ctx)
{
	request_flush(sched_ctx);
}

void Engine::update_cpu_workers(unsigned sched_ctx)
{
	unsigned cpu_workers = 0;
	int *workers = nullptr;
	unsigned n = starpu_sched_ctx_get_workers_list(sched_ctx, &workers);
	for (unsigned i = 0; i < n; i++)
		if (starpu_worker_get_type(workers[i]) == STARPU_CPU_WORKER)
			cpu_workers++;
	std::free(workers);
	load_.cpu_workers[sched_ctx].store(cpu_workers, std::memory_order_relaxed);
}

void Engine::warn_about_unused_names(FILE *stream) const
{
	const std::vector<std::string> seen = names_.all();
	for (const auto &list : {std::make_pair("STARPU_FUSING_ONLY", &config_.only_codelets),
				 std::make_pair("STARPU_FUSING_EXCLUDE", &config_.exclude_codelets)})
		for (const std::string &name : *list.second)
			if (std::find(seen.begin(), seen.end(), name) == seen.end()) {
				std::string known;
				for (const std::string &other : seen)
					known += (known.empty() ? "" : ", ") + other;
				std::fprintf(stream, "starpu-fusing: %s names '%s', but no task of a codelet of that name was "
					     "submitted (codelets seen: %s)\n", list.first, name.c_str(),
					     known.empty() ? "none" : known.c_str());
			}
}

void Engine::print_unpartitions_not_elided(FILE *stream) const
{
	using Window = SubmissionWindow;
	std::fprintf(stream, "[starpu-fusing]   not elided: partition handed to StarPU first %llu (",
		     (unsigned long long)window_->unpartitions_not_elided(Window::NotElided::partition_handed_over));
	const char *separator = "";
	for (int c = 0; c < static_cast<int>(Window::HandOver::count_); c++) {
		const auto cause = static_cast<Window::HandOver>(c);
		if (const std::uint64_t count = window_->partitions_handed_over(cause)) {
			std::fprintf(stream, "%sby %s: %llu", separator, Window::hand_over_text(cause), (unsigned long long)count);
			separator = ", ";
		}
	}
	std::fprintf(stream, "), another call on its tree %llu, a member calibrating its model %llu, "
			     "partition not elidable %llu\n",
		     (unsigned long long)window_->unpartitions_not_elided(Window::NotElided::other_call_on_tree),
		     (unsigned long long)window_->unpartitions_not_elided(Window::NotElided::member_calibrating),
		     (unsigned long long)window_->unpartitions_not_elided(Window::NotElided::never_elidable));
}

void Engine::print_statistics(FILE *stream) const
{
	if (window_)
		std::fprintf(stream, "[starpu-fusing] mode: %s\n", config_.mode == Config::Mode::both ? "both" : "submission");
	else if (config_.mode == Config::Mode::ready)
		std::fprintf(stream, "[starpu-fusing] mode: ready\n");
	else
		std::fprintf(stream, "[starpu-fusing] mode: ready (the default, both, needs the program's starpu_task_submit "
			     "calls: run it with starpu-fusing-run or LD_PRELOAD)\n");
	stats_.print(stream);
	kernels_.print(stream);
	if (window_)
		std::fprintf(stream, "[starpu-fusing] submission-time fusion: %llu tasks deferred, merged into %llu tasks "
			     "with %llu handles in all; %llu of %llu unpartitions elided with their partition; "
			     "%llu plans cleaned whose children StarPU never saw\n",
			     (unsigned long long)window_->tasks_deferred(), (unsigned long long)window_->groups_submitted(),
			     (unsigned long long)window_->handles_submitted(), (unsigned long long)window_->plans_elided(),
			     (unsigned long long)window_->unpartitions_recorded(), (unsigned long long)window_->plans_cleaned_unseen());
	if (window_ && window_->unpartitions_recorded() > window_->plans_elided())
		print_unpartitions_not_elided(stream);
	std::fprintf(stream, "[starpu-fusing] families: %zu\n", collector_->families());
	print_topology(stream, topology_);
	if (caps_.working_set_bytes > 0)
		std::fprintf(stream, "[starpu-fusing] working-set cap (STARPU_FUSING_CACHE_CAP): %llu KiB, closed %llu batches\n",
			     (unsigned long long)(caps_.working_set_bytes / 1024), (unsigned long long)collector_->working_set_closes());
	else
		std::fprintf(stream, "[starpu-fusing] working-set cap (STARPU_FUSING_CACHE_CAP): off\n");
	if (caps_.close_at_bytes > 0)
		std::fprintf(stream, "[starpu-fusing] memory cap: batches close at %llu KiB of data, closed %llu batches\n",
			     (unsigned long long)(caps_.close_at_bytes / 1024), (unsigned long long)collector_->memory_closes());
	if (config_.idle_workers_sleep)
		idle_workers::print(stream);
	print_cpu_time(stream, starpu_timing_now() - profiling_started_us_);
	print_worker_report(stream, starpu_timing_now() - profiling_started_us_,
			    idle_with_nothing_held_.load(std::memory_order_relaxed));
}

} // namespace fusing
