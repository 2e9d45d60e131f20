/* Proxy tasks; see proxy_task.h. */
#include "fusion/proxy_task.h"

#include "fusion/batched_registry.h"
#include "fusion/buffer_merge.h"
#include "fusion/current_member.h"
#include "fusion/engine.h"
#include "fusion/stats.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

namespace fusing {
namespace {

struct RunningBatch;

/* What a member lends the batch until it terminates. */
struct LentMember {
	struct starpu_task *task;
	std::int32_t where_before_batching;
	void (*callback)(void *);
	void *callback_arg;
	unsigned callback_arg_free;
	RunningBatch *batch;
};

/* Everything a proxy needs from submission until its last member has
 * terminated.  References: one per member (dropped in member_terminated)
 * and one for the proxy (dropped at the end of finish_batch), because a
 * member may terminate in finish_batch's thread, or later in the thread of
 * StarPU's NOWHERE path (see engine.h, step 3). */
struct RunningBatch {
	Family *family;
	std::vector<LentMember> members; /* never resized after submission */
	std::vector<unsigned> buffer_of_use; /* member m's buffer b is the proxy's buffer_of_use[m * nbuffers + b] */
	std::optional<struct starpu_fusing_batched_implementation> batched; /* copied at submission */
	Statistics *stats;
	double predicted_us;             /* NaN when unknown; read by StarPU through proxy_model */
	double exec_us = 0.0;            /* written by run_batch, read by finish_batch */
	std::atomic<std::size_t> references;

	void release()
	{
		if (references.fetch_sub(1, std::memory_order_acq_rel) == 1)
			delete this;
	}
};

/* Folds member_us into the family's online estimate (for codelets StarPU
 * has no model for) and marks the family measured; the running worker. */
void record_measurement(const RunningBatch &batch, double member_us)
{
	if (Engine *engine = active_engine.load(std::memory_order_acquire))
		engine->observations().record_member_us(batch.family->key.codelet, member_us);
	batch.family->batch_measured.store(true, std::memory_order_relaxed);
}

/* The proxy's CPU function.  Runs in the worker thread that popped the
 * proxy, after StarPU fetched every member's data; holds no lock of ours.
 * Calls the codelet's batched implementation once, or else each member's own
 * CPU function with its slice of the buffers, in the order the members
 * became ready. */
void run_batch(void *buffers[], void *arg)
{
	RunningBatch *batch = static_cast<RunningBatch *>(arg);
	const unsigned nbuffers = batch->family->key.nbuffers;
	const std::size_t ntasks = batch->members.size();
	double start_us = starpu_timing_now();
	if (batch->batched) {
		/* One call for the whole batch: per-task views of the buffers. */
		std::vector<void *> flat(ntasks * nbuffers);
		std::vector<void **> task_buffers(ntasks);
		std::vector<void *> task_args(ntasks);
		for (std::size_t i = 0; i < ntasks; i++) {
			for (unsigned b = 0; b < nbuffers; b++)
				flat[i * nbuffers + b] = buffers[batch->buffer_of_use[i * nbuffers + b]];
			task_buffers[i] = flat.data() + i * nbuffers;
			task_args[i] = batch->members[i].task->cl_arg;
		}
		batch->batched->cpu_func(static_cast<unsigned>(ntasks), task_buffers.data(), task_args.data(), batch->batched->batch_arg);
	} else {
		std::vector<void *> member_buffers(nbuffers);
		for (std::size_t i = 0; i < ntasks; i++) {
			for (unsigned b = 0; b < nbuffers; b++)
				member_buffers[b] = buffers[batch->buffer_of_use[i * nbuffers + b]];
			struct starpu_task *member = batch->members[i].task;
			RunningMemberScope running(member, ntasks);
			member->cl->cpu_funcs[0](member_buffers.data(), member->cl_arg);
			/* The family's very first member measured: batches still being
			 * formed need it now, not after the whole batch (a program
			 * submitting hundreds of 1 ms tasks would have them all batched
			 * before a whole first batch ends). */
			if (i == 0 && !batch->family->batch_measured.load(std::memory_order_relaxed))
				record_measurement(*batch, starpu_timing_now() - start_us);
		}
	}
	batch->exec_us = starpu_timing_now() - start_us;
	record_measurement(*batch, batch->exec_us / double(ntasks));
}

/* The proxy codelet's STARPU_COMMON cost function: StarPU asks it (from the
 * base policy's push, any thread) how long a proxy will run. */
double predicted_batch_us(struct starpu_task *proxy, unsigned nimpl)
{
	(void)nimpl;
	RunningBatch *batch = static_cast<RunningBatch *>(proxy->cl_arg);
	return batch->predicted_us * batch->family->cpu_relative_speedup;
}

/* Stands in for a member's callback, so that it runs inside the member's
 * termination.  By then StarPU has already decided the member was a
 * NOWHERE task (no post_exec_hook for a task the base never saw: the check
 * in _starpu_handle_job_termination reads task->where), and nothing reads
 * `where` again until the program resubmits the task, so this is the place
 * to give the program its task back as it submitted it. */
void member_terminated(void *arg)
{
	LentMember *lent = static_cast<LentMember *>(arg);
	struct starpu_task *task = lent->task;
	task->where = lent->where_before_batching;
	task->callback_func = lent->callback;
	task->callback_arg = lent->callback_arg;
	task->callback_arg_free = lent->callback_arg_free;
	/* StarPU falls back to the codelet's callback when the task has none. */
	void (*callback)(void *) = lent->callback ? lent->callback : task->cl->callback_func;
	void *callback_arg = lent->callback_arg;
	lent->batch->release();
	if (callback)
		callback(callback_arg);
}

/* The proxy's callback.  StarPU runs it in the thread terminating the proxy
 * (usually the worker that ran it), after the proxy released its data, with
 * no scheduler lock held.  Releasing a member's end dependency may terminate
 * it right here (member_terminated runs, its successors are released). */
void finish_batch(void *arg)
{
	RunningBatch *batch = static_cast<RunningBatch *>(arg);
	if (batch->stats)
		batch->stats->record_batch(batch->family->key.codelet, batch->members.size(), batch->exec_us,
					   batch->predicted_us);
	for (LentMember &lent : batch->members)
		starpu_task_end_dep_release(lent.task);
	batch->release();
}

} // namespace

void init_proxy_codelet(Family &family)
{
	struct starpu_codelet &cl = family.proxy_codelet;
	starpu_codelet_init(&cl);
	cl.where = STARPU_CPU;
	cl.cpu_funcs[0] = run_batch;
	cl.nbuffers = STARPU_VARIABLE_NBUFFERS;
	/* The members were submitted with the partition plans they needed;
	 * re-checking plans for the proxy would submit (un)partitioning that
	 * the application ordered after them. */
	cl.flags = STARPU_CODELET_NOPLANS;
	cl.name = family.proxy_name.c_str();
	/* A cost function, not a history: StarPU must not record a batch's
	 * time anywhere, nor try to calibrate the proxy. */
	std::memset(&family.proxy_model, 0, sizeof(family.proxy_model));
	family.proxy_model.type = STARPU_COMMON;
	family.proxy_model.cost_function = predicted_batch_us;
	family.proxy_model.symbol = family.proxy_name.c_str();
	/* Batches without a prediction get no model at all: a model answering
	 * "unknown" makes dmda-like bases calibrate, i.e. spread tasks without
	 * regard to load (measured: 400 tasks of 1 ms under dmda, 0.21-0.27 s
	 * with the model, against 0.20 s for dmda alone). */
	family.proxy_codelet_without_prediction = cl;
	cl.model = &family.proxy_model;
}

bool is_proxy_task(const struct starpu_task *task)
{
	return task->cl && task->cl->cpu_funcs[0] == run_batch;
}

void submit_proxy(Family &family, std::vector<Member> members, Statistics *stats)
{
	const unsigned nbuffers = family.key.nbuffers;
	const std::size_t total = members.size() * nbuffers;

	double predicted_member_us = family.predicted_member_us.load(std::memory_order_relaxed);
	RunningBatch *batch = new RunningBatch{&family, {}, {}, std::nullopt, stats, predicted_member_us * double(members.size()),
					       0.0, {members.size() + 1}};
	batch->members.reserve(members.size());
	for (const Member &member : members) {
		struct starpu_task *task = member.task;
		batch->members.push_back(LentMember{task, member.where_before_batching, task->callback_func,
						    task->callback_arg, task->callback_arg_free, batch});
	}
	/* Only now that the vector is final can members point into it. */
	for (LentMember &lent : batch->members) {
		lent.task->callback_func = member_terminated;
		lent.task->callback_arg = &lent;
		lent.task->callback_arg_free = 0;
	}

	std::vector<starpu_data_handle_t> use_handles(total);
	std::vector<enum starpu_data_access_mode> use_modes(total);
	for (std::size_t m = 0; m < members.size(); m++)
		for (unsigned b = 0; b < nbuffers; b++) {
			use_handles[m * nbuffers + b] = STARPU_TASK_GET_HANDLE(members[m].task, b);
			use_modes[m * nbuffers + b] = STARPU_TASK_GET_MODE(members[m].task, b);
		}
	auto merged = merge_buffers(use_handles, use_modes);
	batch->buffer_of_use = std::move(merged.index_of_use);
	batch->batched = batched_implementation_for(family.key.codelet);
	const std::size_t nhandles = merged.handles.size();

	struct starpu_task *proxy = starpu_task_create();
	proxy->cl = std::isnan(batch->predicted_us) ? &family.proxy_codelet_without_prediction : &family.proxy_codelet;
	proxy->name = family.proxy_name.c_str();
	proxy->nbuffers = static_cast<int>(nhandles);
	/* StarPU frees dyn_handles and dyn_modes with free() when it destroys
	 * the task (starpu_task_clean). */
	proxy->dyn_handles = static_cast<starpu_data_handle_t *>(std::malloc(nhandles * sizeof(starpu_data_handle_t)));
	proxy->dyn_modes = static_cast<enum starpu_data_access_mode *>(std::malloc(nhandles * sizeof(enum starpu_data_access_mode)));
	if (!proxy->dyn_handles || !proxy->dyn_modes) {
		std::fprintf(stderr, "starpu-fusing: out of memory building a batch of %zu tasks\n", members.size());
		std::abort();
	}
	std::copy(merged.handles.begin(), merged.handles.end(), proxy->dyn_handles);
	std::copy(merged.modes.begin(), merged.modes.end(), proxy->dyn_modes);
	proxy->sequential_consistency = 0;
	proxy->priority = family.key.priority;
	proxy->sched_ctx = family.key.sched_ctx;
	proxy->detach = 1;
	proxy->destroy = 1;
	proxy->cl_arg = batch;
	proxy->callback_func = finish_batch;
	proxy->callback_arg = batch;

	int ret = starpu_task_submit(proxy);
	if (ret != 0) {
		std::fprintf(stderr, "starpu-fusing: StarPU refused the batch task %s of %zu tasks (error %d: %s); "
			     "its tasks cannot run, stopping\n",
			     family.proxy_name.c_str(), members.size(), ret, std::strerror(-ret));
		std::abort();
	}
}

} // namespace fusing
