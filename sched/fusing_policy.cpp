/* The `fusing` policy layer; see fusing_policy.h.
 *
 * Every function here is a StarPU scheduler callback: it runs in whatever
 * thread StarPU calls it from.  None holds a scheduler lock on entry:
 * include/starpu_scheduler.h says pop_task runs with the worker's
 * sched_mutex held, but _starpu_get_worker_task (driver_common.c, 1.3 and
 * 1.4) releases it before calling pop_task and keeps the worker in a
 * scheduling operation instead, which is why the engine relaxes before it
 * blocks there (engine.cpp, request_flush).
 *
 * Each callback marks its thread as inside StarPU (InsideStarpuScope): the
 * base policies call StarPU functions of the flush barrier from there
 * (dmdas's pop asks starpu_data_query_status), and a flush must never
 * submit from inside a scheduling operation. */
#include "sched/fusing_policy.h"

#include "build_config.h" /* which policy fields this StarPU has */
#include "sched/engine.h"
#include "sched/idle_workers.h"

#include <atomic>
#include <cstdio>
#include <memory>
#include <mutex>

namespace fusing {
namespace {

/* Written once by build_fusing_policy() before StarPU starts, then read. */
struct starpu_sched_policy *base = nullptr;
Config layer_config;
struct starpu_sched_policy fusing_policy;

/* The engine lives from the first init_sched to the last deinit_sched. */
std::mutex lifetime_mutex;                /* guards the two fields below */
std::unique_ptr<Engine> engine;
unsigned contexts_using_policy = 0;
/* The engine for callbacks, which must not take lifetime_mutex on every
 * task: set before StarPU can submit a task to a context of ours and
 * cleared after the last context is gone. */
std::atomic<Engine *> active_engine{nullptr};

Engine *current_engine()
{
	return active_engine.load(std::memory_order_acquire);
}

void update_worker_count(unsigned sched_ctx)
{
	if (Engine *e = current_engine())
		e->update_cpu_workers(sched_ctx);
}

void init_sched(unsigned sched_ctx)
{
	{
		std::lock_guard<std::mutex> lock(lifetime_mutex);
		if (contexts_using_policy++ == 0 && layer_config.fusion_enabled) {
			engine = std::make_unique<Engine>(layer_config);
			if (layer_config.idle_workers_sleep)
				idle_workers::start(&fusing_policy, &engine->load(), [e = engine.get()] { return e->holds_unrequested_work(); });
			active_engine.store(engine.get(), std::memory_order_release);
		}
	}
	if (base->init_sched)
		base->init_sched(sched_ctx);
	update_worker_count(sched_ctx);
}

void deinit_sched(unsigned sched_ctx)
{
	if (base->deinit_sched)
		base->deinit_sched(sched_ctx);
	std::lock_guard<std::mutex> lock(lifetime_mutex);
	if (--contexts_using_policy == 0 && engine) {
		if (layer_config.print_stats)
			engine->print_statistics(stderr);
		active_engine.store(nullptr, std::memory_order_release);
		if (layer_config.idle_workers_sleep)
			idle_workers::stop();
		engine.reset();
	}
}

int push_task(struct starpu_task *task)
{
	InsideStarpuScope scheduling;
	/* Counted before the push: once pushed, the task may start (and be
	 * freed) before push_task returns. */
	const unsigned sched_ctx = task->sched_ctx;
	const int priority = task->priority;
	Engine *e = current_engine();
	if (e)
		e->on_pushing_to_base(sched_ctx, priority);
	int ret = base->push_task(task);
	if (e && ret != 0)
		e->on_push_refused(sched_ctx, priority);
	else if (e && e->idle_workers_sleep())
		idle_workers::pushed();
	return ret;
}

/* An idle worker does not rest here but in StarPU's idle hook, after the
 * driver has left its scheduling operation (idle_workers.h). */
struct starpu_task *pop_task(unsigned sched_ctx)
{
	InsideStarpuScope scheduling;
	Engine *e = current_engine();
	const bool sleep = e && e->idle_workers_sleep();
	const std::uint64_t pushes_before = sleep ? idle_workers::pushes_seen() : 0;
	struct starpu_task *task = base->pop_task ? base->pop_task(sched_ctx) : nullptr;
	if (!task && e)
		e->on_worker_found_nothing(sched_ctx);
	if (sleep)
		idle_workers::popped(pushes_before, task != nullptr);
	return task;
}

void submit_hook(struct starpu_task *task)
{
	InsideStarpuScope scheduling;
	if (Engine *e = current_engine())
		e->on_submit(task);
	if (base->submit_hook)
		base->submit_hook(task);
}

void pre_exec_hook(struct starpu_task *task, unsigned sched_ctx)
{
	InsideStarpuScope scheduling;
	if (base->pre_exec_hook)
		base->pre_exec_hook(task, sched_ctx);
	if (Engine *e = current_engine()) {
		e->on_task_starting(task, sched_ctx);
		if (e->idle_workers_sleep())
			idle_workers::task_starting(task);
	}
}

void do_schedule(unsigned sched_ctx)
{
	InsideStarpuScope scheduling;
	if (base->do_schedule)
		base->do_schedule(sched_ctx);
	if (Engine *e = current_engine())
		e->flush_context(sched_ctx);
}

void add_workers(unsigned sched_ctx, int *workerids, unsigned nworkers)
{
	if (base->add_workers)
		base->add_workers(sched_ctx, workerids, nworkers);
	update_worker_count(sched_ctx);
}

void remove_workers(unsigned sched_ctx, int *workerids, unsigned nworkers)
{
	if (base->remove_workers)
		base->remove_workers(sched_ctx, workerids, nworkers);
	update_worker_count(sched_ctx);
}

/* StarPU calls it, for each context of the worker, before queuing a task
 * pinned to that worker (_starpu_push_task_on_specific_worker): a resting
 * worker is told once, for the task's own context. */
void push_task_notify(struct starpu_task *task, int workerid, int perf_workerid, unsigned sched_ctx)
{
	InsideStarpuScope scheduling;
	Engine *e = current_engine();
	if (e && e->idle_workers_sleep() && sched_ctx == task->sched_ctx)
		idle_workers::pinned_task_queued(workerid);
	if (base->push_task_notify)
		base->push_task_notify(task, workerid, perf_workerid, sched_ctx);
}

/* Pure forwarders, installed only where the base has the callback. */
void post_exec_hook(struct starpu_task *task, unsigned sched_ctx)
{
	InsideStarpuScope scheduling;
	if (base->post_exec_hook)
		base->post_exec_hook(task, sched_ctx);
	if (Engine *e = current_engine())
		e->on_task_finished(task, sched_ctx);
}

double simulate_push_task(struct starpu_task *task)
{
	InsideStarpuScope scheduling;
	return base->simulate_push_task(task);
}

#ifdef HAVE_STRUCT_STARPU_SCHED_POLICY_POP_EVERY_TASK
struct starpu_task *pop_every_task(unsigned sched_ctx)
{
	InsideStarpuScope scheduling;
	return base->pop_every_task(sched_ctx);
}
#endif

} // namespace

const char *const fusing_policy_description =
	"fuses small ready tasks of one codelet into batches, over STARPU_FUSING_BASE (default lws)";

bool fusion_is_running()
{
	return current_engine() != nullptr;
}

struct starpu_sched_policy *build_fusing_policy(struct starpu_sched_policy *base_policy, const Config &config)
{
	base = base_policy;
	layer_config = config;
	const bool fusing = config.fusion_enabled;

	struct starpu_sched_policy policy = {};
	policy.init_sched = init_sched;
	policy.deinit_sched = deinit_sched;
	policy.push_task = push_task;
	/* With fusion on, an empty pop is how we learn a worker is out of work,
	 * even over a base that only uses workers' local queues (random):
	 * StarPU pops local tasks before calling pop_task. */
	policy.pop_task = (base->pop_task || fusing) ? pop_task : nullptr;
	policy.submit_hook = (base->submit_hook || fusing) ? submit_hook : nullptr;
	policy.pre_exec_hook = (base->pre_exec_hook || fusing) ? pre_exec_hook : nullptr;
	policy.do_schedule = (base->do_schedule || fusing) ? do_schedule : nullptr;
	policy.add_workers = (base->add_workers || fusing) ? add_workers : nullptr;
	policy.remove_workers = (base->remove_workers || fusing) ? remove_workers : nullptr;
	policy.push_task_notify = (base->push_task_notify || fusing) ? push_task_notify : nullptr;
	policy.post_exec_hook = (base->post_exec_hook || fusing) ? post_exec_hook : nullptr;
	policy.simulate_push_task = base->simulate_push_task ? simulate_push_task : nullptr;
#ifdef HAVE_STRUCT_STARPU_SCHED_POLICY_POP_EVERY_TASK
	policy.pop_every_task = base->pop_every_task ? pop_every_task : nullptr;
#endif
#ifdef HAVE_STRUCT_STARPU_SCHED_POLICY_PREFETCHES
	policy.prefetches = base->prefetches;
#endif
	policy.worker_type = base->worker_type;
	policy.policy_name = "fusing";
	policy.policy_description = fusing_policy_description;
	fusing_policy = policy;
	return &fusing_policy;
}

} // namespace fusing
