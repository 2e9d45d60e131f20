/* The fusion engine; see engine.h for the life of a fused task. */
#include "fusion/engine.h"

#include "fusion/admission.h"
#include "fusion/batched_registry.h"
#include "fusion/controller.h"
#include "fusion/eligibility.h"
#include "fusion/numa_node.h"
#include "fusion/proxy_task.h"
#include "fusion/worker_report.h"

#include <chrono>
#include <cstdint>
#include <cstdlib>

namespace fusing {

std::atomic<Engine *> active_engine{nullptr};

namespace {

/* Our ready prologue's argument is the task itself, or, when the
 * application had a ready prologue of its own, a ChainedPrologue tagged by
 * its lowest bit (both are at least 2-byte aligned).  Passing the task
 * spares a starpu_task_get_current() per task. */
struct ChainedPrologue {
	struct starpu_task *task;
	void (*function)(void *);
	void *arg;
};

void *prologue_arg_for(struct starpu_task *task, ChainedPrologue *chained)
{
	return chained ? reinterpret_cast<void *>(reinterpret_cast<std::uintptr_t>(chained) | 1u) : task;
}

ChainedPrologue *chained_prologue_in(void *arg)
{
	std::uintptr_t bits = reinterpret_cast<std::uintptr_t>(arg);
	return (bits & 1u) ? reinterpret_cast<ChainedPrologue *>(bits & ~std::uintptr_t(1)) : nullptr;
}

double now_us()
{
	using namespace std::chrono;
	return duration<double, std::micro>(steady_clock::now().time_since_epoch()).count();
}

} // namespace

Engine::Engine(const Config &config)
	: config_(config), targets_{config.target_us, config.min_batch_tasks, config.max_batch_tasks, config.max_generic_task_us},
	  selecting_by_name_(!config.only_codelets.empty() || !config.exclude_codelets.empty()),
	  buffers_(config.max_batch_tasks, config.max_delay_us)
{
	if (config_.print_stats) {
		starpu_profiling_status_set(STARPU_PROFILING_ENABLE);
		profiling_started_us_ = starpu_timing_now();
	}
	topology_ = describe_this_machine();
	group_by_numa_node_ = topology_.numa_nodes > 1;
	if (config_.cache_cap_level != 0) {
		std::vector<unsigned> cpu_workers;
		for (unsigned w = 0; w < topology_.workers.size(); w++)
			if (starpu_worker_get_type(static_cast<int>(w)) == STARPU_CPU_WORKER)
				cpu_workers.push_back(w);
		working_set_cap_bytes_ = topology_.smallest_cache(config_.cache_cap_level, cpu_workers);
		/* Asked for, but impossible: say so rather than run without it silently. */
		if (working_set_cap_bytes_ == 0)
			std::fprintf(stderr, "starpu-fusing: STARPU_FUSING_CACHE_CAP=l%d: the L%d cache of some CPU worker is unknown "
				     "(workers not bound to one core, e.g. STARPU_WORKERS_NOBIND=1, or hwloc does not report it); "
				     "batches are not capped\n", config_.cache_cap_level, config_.cache_cap_level);
	}
	int cpu_worker = starpu_worker_get_by_type(STARPU_CPU_WORKER, 0);
	if (cpu_worker >= 0)
		cpu_perf_arch_ = starpu_worker_get_perf_archtype(cpu_worker, STARPU_NMAX_SCHED_CTXS);
	flusher_ = std::thread([this] { flusher_loop(); });
}

Engine::~Engine()
{
	{
		std::lock_guard<std::mutex> lock(mutex_);
		stopping_ = true;
	}
	flusher_wakeup_.notify_one();
	flusher_.join();
	if (buffers_.buffered() != 0) {
		std::fprintf(stderr, "starpu-fusing: %zu tasks were still waiting for a batch when StarPU shut down; "
			     "this is a bug of starpu-fusing, please report it\n", buffers_.buffered());
		std::abort();
	}
}

void Engine::on_submit(struct starpu_task *task)
{
	if (is_proxy_task(task))
		return;
	UnfusedReason reason = check_fusable(task);
	if (config_.print_stats)
		stats_.record_submitted(task->cl, task->name);
	if (reason == UnfusedReason::none && selecting_by_name_ && !codelet_selected(config_, task->cl->name))
		reason = UnfusedReason::family_not_selected;
	if (reason != UnfusedReason::none) {
		if (config_.print_stats)
			stats_.record_unfused(task->cl, reason);
		return;
	}
	ChainedPrologue *chained = nullptr;
	if (task->prologue_callback_func)
		chained = new ChainedPrologue{task, task->prologue_callback_func, task->prologue_callback_arg};
	task->prologue_callback_func = on_ready;
	task->prologue_callback_arg = prologue_arg_for(task, chained);
}

/* StarPU calls this from _starpu_push_task when the task's dependencies are
 * satisfied, in whichever thread satisfied the last one, with no scheduler
 * lock held and starpu_task_get_current() returning the task. */
void Engine::on_ready(void *prologue_arg)
{
	ChainedPrologue *chained = chained_prologue_in(prologue_arg);
	struct starpu_task *task = chained ? chained->task : static_cast<struct starpu_task *>(prologue_arg);
	task->prologue_callback_func = chained ? chained->function : nullptr;
	task->prologue_callback_arg = chained ? chained->arg : nullptr;
	delete chained;
	if (task->prologue_callback_func)
		task->prologue_callback_func(task->prologue_callback_arg);

	Engine *engine = active_engine.load(std::memory_order_acquire);
	const unsigned ctx = task->sched_ctx;
	double predicted_us = engine->predict_member_us(task);
	const bool fuse_even_if_long = too_long_for_generic_execution(predicted_us, engine->targets_) &&
				       (batched_implementation_for(task->cl).has_value() ||
					engine->long_tasks_seen_.fetch_add(1, std::memory_order_relaxed) % remeasure_period == 0);
	const bool batches_form = engine->observations_.worth_holding(task->cl);
	UnfusedReason reason = decide_hold(predicted_us, engine->targets_, fuse_even_if_long, batches_form,
					   every_worker_has_queued_work(engine->queued_not_started_[ctx].load(std::memory_order_relaxed),
									engine->nworkers_[ctx].load(std::memory_order_relaxed)),
					   engine->config_.hold == Config::Hold::always);
	if (reason != UnfusedReason::none) {
		if (engine->config_.print_stats)
			engine->stats_.record_unfused(task->cl, reason);
		return;
	}
	/* Take it: StarPU will release its data without running it (NOWHERE)
	 * and wait for our end-dependency release before terminating it.  The
	 * end dependency must exist before the task can reach a batch. */
	std::int32_t where_before_batching = task->where;
	task->where = STARPU_NOWHERE;
	starpu_task_end_dep_add(task, 1);
	engine->admit(task, where_before_batching, predicted_us);
}

void Engine::close_batch(Buffers::Batch &&batch, bool split, std::vector<Buffers::Batch> &closed)
{
	batch.family->open_working_set.clear();
	if (!split) {
		observations_.record_batch_members(batch.family->key.codelet, batch.members.size());
		closed.push_back(std::move(batch));
		return;
	}
	unsigned nworkers = nworkers_[batch.family->key.sched_ctx].load(std::memory_order_relaxed);
	auto member = batch.members.begin();
	for (std::size_t size : split_for_workers(batch.members.size(), nworkers)) {
		observations_.record_batch_members(batch.family->key.codelet, size);
		closed.push_back(Buffers::Batch{batch.family, std::vector<Member>(member, member + size)});
		member += size;
	}
}

Family *Engine::family_locked(const struct starpu_task *task, int numa_node)
{
	FamilyKey key = family_of(task, numa_node);
	if (last_family_ && !(key < last_family_->key) && !(last_family_->key < key))
		return last_family_;
	auto it = families_.find(key);
	if (it == families_.end()) {
		const char *name = task->cl->name ? task->cl->name : task->name;
		it = families_.emplace(key, std::make_unique<Family>(key, name)).first;
		if (cpu_perf_arch_)
			it->second->cpu_relative_speedup = starpu_worker_get_relative_speedup(cpu_perf_arch_);
	}
	last_family_ = it->second.get();
	return last_family_;
}

void Engine::admit(struct starpu_task *task, std::int32_t where_before_batching, double predicted_us)
{
	bool wake = false;
	/* Outside the lock: on a multi-node machine, a page query per buffer. */
	const int numa_node = group_by_numa_node_ ? numa_node_of_task(task, node_of_address) : -1;
	{
		std::lock_guard<std::mutex> lock(mutex_);
		bool was_empty = buffers_.buffered() == 0;
		Family *family = family_locked(task, numa_node);
		family->predicted_member_us.store(predicted_us, std::memory_order_relaxed);
		std::size_t limit = batch_size_for(predicted_us, targets_);
		if (working_set_cap_bytes_ > 0) {
			family->open_working_set.add(task);
			if (family->open_working_set.bytes >= working_set_cap_bytes_) {
				limit = 1; /* closes with this member */
				if (config_.print_stats)
					stats_.record_cache_cap_close();
			}
		}
		auto full = buffers_.add(family, Member{task, where_before_batching}, now_us, limit);
		if (full) {
			close_batch(std::move(*full), std::isnan(predicted_us), full_batches_);
			wake = true;
		}
		/* The flusher sleeps without deadline while nothing is buffered. */
		wake = wake || was_empty;
		buffered_.store(buffers_.buffered(), std::memory_order_relaxed);
	}
	if (wake)
		flusher_wakeup_.notify_one();
	/* A worker may have gone idle between on_ready's check and now: it
	 * found nothing to pop while buffered_ was still 0. */
	const unsigned ctx = task->sched_ctx;
	if (!every_worker_has_queued_work(queued_not_started_[ctx].load(std::memory_order_relaxed),
					  nworkers_[ctx].load(std::memory_order_relaxed)))
		request_flush(ctx);
}

double Engine::predict_member_us(struct starpu_task *task)
{
	double predicted_us = NAN;
	/* StarPU's own model, when the codelet has one and it is calibrated
	 * for the CPU architecture that would run the batch. */
	if (task->cl->model && cpu_perf_arch_) {
		double expected = starpu_task_expected_length(task, cpu_perf_arch_, 0);
		if (!std::isnan(expected) && expected > 0.0)
			predicted_us = expected;
	}
	if (std::isnan(predicted_us))
		predicted_us = observations_.member_us(task->cl);
	return predicted_us;
}

void Engine::on_pushing_to_base(unsigned sched_ctx)
{
	queued_not_started_[sched_ctx].fetch_add(1, std::memory_order_relaxed);
}

void Engine::on_push_refused(unsigned sched_ctx)
{
	queued_not_started_[sched_ctx].fetch_sub(1, std::memory_order_relaxed);
}

void Engine::on_task_starting(const struct starpu_task *task, unsigned sched_ctx)
{
	/* Tasks bound to a worker bypass push_task, so were never counted. */
	if (task->execute_on_a_specific_worker)
		return;
	long queued = queued_not_started_[sched_ctx].fetch_sub(1, std::memory_order_relaxed) - 1;
	if (buffered_.load(std::memory_order_relaxed) != 0 &&
	    !every_worker_has_queued_work(queued, nworkers_[sched_ctx].load(std::memory_order_relaxed)))
		request_flush(sched_ctx);
}

void Engine::on_worker_found_nothing(unsigned sched_ctx)
{
	/* Unlocked read: a member admitted after this read sees the idle worker
	 * through queued_not_started_ in admit() and requests the flush itself. */
	if (buffered_.load(std::memory_order_relaxed) != 0) {
		request_flush(sched_ctx);
		/* Give the flusher a core: StarPU's idle workers poll, and where
		 * they and the submitting thread occupy every core, the flusher
		 * waited behind them (perf, stencil 64 wide on 2 cores: 15.6% of
		 * the time in _starpu_get_worker_task against 2.9% under lws; the
		 * yield took the run from 0.231 to 0.200 s, lws 0.175 s).  With a
		 * free core it returns at once. */
		std::this_thread::yield();
	} else if (config_.print_stats)
		idle_with_nothing_held_.fetch_add(1, std::memory_order_relaxed);
}

void Engine::print_statistics(FILE *stream) const
{
	stats_.print(stream);
	print_topology(stream, topology_);
	if (working_set_cap_bytes_ > 0)
		std::fprintf(stream, "[starpu-fusing] working-set cap (STARPU_FUSING_CACHE_CAP): %llu KiB, closed %llu batches\n",
			     (unsigned long long)(working_set_cap_bytes_ / 1024), (unsigned long long)stats_.cache_cap_closes());
	else
		std::fprintf(stream, "[starpu-fusing] working-set cap (STARPU_FUSING_CACHE_CAP): off\n");
	print_worker_report(stream, starpu_timing_now() - profiling_started_us_,
			    idle_with_nothing_held_.load(std::memory_order_relaxed));
}

void Engine::flush_context(unsigned sched_ctx)
{
	request_flush(sched_ctx);
}

void Engine::set_worker_count(unsigned sched_ctx, unsigned nworkers)
{
	nworkers_[sched_ctx].store(nworkers, std::memory_order_relaxed);
}

void Engine::request_flush(unsigned sched_ctx)
{
	{
		std::lock_guard<std::mutex> lock(mutex_);
		flush_requested_.set(sched_ctx);
	}
	flusher_wakeup_.notify_one();
}

/* The flusher thread: the only thread that submits proxies.  It holds mutex_
 * only while it picks batches, never while it calls StarPU, so that no
 * StarPU lock is ever taken under mutex_. */
void Engine::flusher_loop()
{
	std::unique_lock<std::mutex> lock(mutex_);
	for (;;) {
		std::vector<Buffers::Batch> closed = std::move(full_batches_);
		full_batches_.clear();
		if (flush_requested_.any()) {
			auto requested = flush_requested_;
			/* Workers ran out of work: one part per worker, so that none
			 * of them stays idle while another runs the whole batch. */
			for (auto &batch : buffers_.take_all([&](Family *f) { return requested.test(f->key.sched_ctx); }))
				close_batch(std::move(batch), true, closed);
			flush_requested_.reset();
		}
		for (auto &batch : buffers_.take_expired(now_us()))
			close_batch(std::move(batch), std::isnan(batch.family->predicted_member_us.load(std::memory_order_relaxed)), closed);
		buffered_.store(buffers_.buffered(), std::memory_order_relaxed);

		if (closed.empty()) {
			if (stopping_)
				return;
			double deadline_us = buffers_.next_deadline_us();
			if (deadline_us == std::numeric_limits<double>::infinity())
				flusher_wakeup_.wait(lock);
			else
				flusher_wakeup_.wait_for(lock, std::chrono::duration<double, std::micro>(deadline_us - now_us()));
			continue;
		}
		lock.unlock();
		for (auto &batch : closed)
			submit_proxy(*batch.family, std::move(batch.members), config_.print_stats ? &stats_ : nullptr);
		lock.lock();
	}
}

} // namespace fusing
