/* Merged tasks; see merged_task.h. */
#include "ready/merged_task.h"

#include "core/batch_trace.h"
#include "core/batched_registry.h"
#include "core/buffer_merge.h"
#include "core/codelet_observations.h"
#include "kernels/kernel_binding.h"
#include "core/member_run.h"
#include "core/merged_task_buffers.h"
#include "core/stats.h"
#include "core/starpu_functions.h"
#include "core/waiting_priorities.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

namespace fusing {
namespace {

/* Everything a merged task needs from its submission (flusher thread) to
 * the end of its callback (the worker that ran it), where it is freed:
 * every member terminates inside that callback (borrowed_task.h, step 4). */
struct RunningBatch {
	Family *family;
	std::vector<BorrowedTask *> members;
	std::vector<unsigned> buffer_of_use; /* member m's buffer b is the merged task's buffer_of_use[m * nbuffers + b] */
	std::optional<struct starpu_fusing_batched_implementation> batched; /* copied at submission */
	MergedTaskReports reports;
	double predicted_us;  /* NaN when unknown; read by StarPU through merged_model */
	double exec_us = 0.0; /* written by run_batch, read by finish_batch */
	KernelBinding *kernel = nullptr; /* without batched: a kernel pack entry bound to the codelet */
	int priority = 0;     /* the merged task's */
	bool started = false; /* some run_batch began: its members no longer wait (ReadyWorkPriorities) */
};

using Submit = int (*)(struct starpu_task *);
void submit_batch(RunningBatch *batch, Submit submit);

/* Folds member_us into the family's online estimate (for codelets StarPU
 * has no model for) and marks the family measured; the running worker. */
void record_measurement(const RunningBatch &batch, double member_us)
{
	batch.reports.observations->record_member_us(batch.family->key.codelet, member_us);
	batch.family->batch_measured.store(true, std::memory_order_relaxed);
}

/* Per-task views of a merged task's buffers: task i's buffer b is
 * task_buffers[i][b], as the codelet's own function gets them. */
struct TaskBufferViews {
	std::vector<void *> flat;
	std::vector<void **> task_buffers;
	std::vector<void *> task_args;

	TaskBufferViews(const RunningBatch &batch, void *buffers[])
	{
		const unsigned nbuffers = batch.family->key.nbuffers;
		const std::size_t ntasks = batch.members.size();
		flat.resize(ntasks * nbuffers);
		for (std::size_t i = 0; i < ntasks; i++) {
			for (unsigned b = 0; b < nbuffers; b++)
				flat[i * nbuffers + b] = buffers[batch.buffer_of_use[i * nbuffers + b]];
			task_args.push_back(batch.members[i]->task()->cl_arg);
		}
		for (std::size_t i = 0; i < ntasks; i++)
			task_buffers.push_back(flat.data() + i * nbuffers);
	}
};

/* The merged task's CPU function.  Runs in the worker thread that popped
 * it, after StarPU fetched every member's data; holds no lock of ours.
 * Calls the codelet's batched implementation once, or the bound kernel,
 * or else each member's own CPU function with its buffers, in the order
 * the members became ready. */
/* A task of higher priority than the batch waits: members [next, end) go
 * to a batch of their own, which StarPU schedules like any task, and this
 * one ends after member next - 1 (waiting_priorities.h).  The members are
 * StarPU's tasks, held: each terminates when its own batch's callback
 * releases it.  The worker, between two members. */
void continue_in_another_batch(RunningBatch *batch, std::size_t next)
{
	const std::size_t count = batch->members.size();
	RunningBatch *rest = new RunningBatch{batch->family,
					      std::vector<BorrowedTask *>(batch->members.begin() + static_cast<long>(next), batch->members.end()),
					      {}, std::nullopt, batch->reports, batch->predicted_us * double(count - next) / double(count)};
	rest->kernel = batch->kernel;
	rest->priority = batch->priority;
	rest->started = true;
	batch->members.resize(next);
	submit_batch(rest, starpu_own_task_submit);
}

void run_batch(void *buffers[], void *arg)
{
	RunningBatch *batch = static_cast<RunningBatch *>(arg);
	std::size_t ntasks = batch->members.size();
	for (BorrowedTask *member : batch->members)
		member->await_handover();
	if (!batch->started) {
		batch->started = true;
		for (BorrowedTask *member : batch->members)
			batch->reports.priorities->waiting.remove(member->task()->priority);
	}
	double start_us = starpu_timing_now();
	if (batch->batched) {
		/* One call for the whole batch: per-task views of the buffers. */
		TaskBufferViews views(*batch, buffers);
		batch->batched->cpu_func(static_cast<unsigned>(ntasks), views.task_buffers.data(), views.task_args.data(),
					 batch->batched->batch_arg);
	} else if (batch->kernel) {
		TaskBufferViews views(*batch, buffers);
		const KernelRun ran = batch->kernel->run(batch->family->key.codelet, static_cast<unsigned>(ntasks), views.task_buffers.data(),
							 views.task_args.data(), [&](unsigned i) {
			run_member(batch->members[i]->task(), views.task_buffers[i], ntasks, &batch->buffer_of_use[i * batch->family->key.nbuffers]);
		});
		for (unsigned i : ran.tasks)
			if (starpu_profiles(batch->members[i]->task()))
				record_in_starpu_profiling(batch->members[i]->task(), ran.start_us, ran.end_us);
	} else {
		std::vector<void *> member_buffers(batch->family->key.nbuffers);
		for (std::size_t i = 0; i < ntasks; i++) {
			if (i > 0 && batch->reports.priorities->higher_priority_waits(batch->priority)) {
				continue_in_another_batch(batch, i);
				ntasks = i;
				break;
			}
			for (unsigned b = 0; b < member_buffers.size(); b++)
				member_buffers[b] = buffers[batch->buffer_of_use[i * member_buffers.size() + b]];
			run_member(batch->members[i]->task(), member_buffers.data(), ntasks, &batch->buffer_of_use[i * member_buffers.size()]);
			/* The family's very first member measured: batches still being
			 * formed need it now, not after the whole batch (a program
			 * submitting hundreds of 1 ms tasks would have them all batched
			 * before a whole first batch ends). */
			if (i == 0 && !batch->family->batch_measured.load(std::memory_order_relaxed))
				record_measurement(*batch, starpu_timing_now() - start_us);
		}
	}
	const double end_us = starpu_timing_now();
	batch->exec_us = end_us - start_us;
	record_measurement(*batch, batch->exec_us / double(ntasks));
	/* Every member ran inside the one batched call. */
	if (batch->batched)
		for (BorrowedTask *member : batch->members)
			if (starpu_profiles(member->task()))
				record_in_starpu_profiling(member->task(), start_us, end_us);
	if (batch->reports.trace)
		batch->reports.trace->record(starpu_worker_get_id(), start_us, end_us, ntasks, "ready", batch->family->name);
}

/* The merged codelet's STARPU_COMMON cost function: StarPU asks it (from
 * the base policy's push, any thread) how long a merged task will run. */
double predicted_batch_us(struct starpu_task *merged, unsigned nimpl)
{
	(void)nimpl;
	RunningBatch *batch = static_cast<RunningBatch *>(merged->cl_arg);
	return batch->predicted_us * batch->family->cpu_relative_speedup;
}

/* The merged task's callback.  StarPU runs it in the thread terminating
 * the merged task (the worker that ran it), after the merged task released
 * its data, with no scheduler lock held.  Each release terminates that
 * member here (unless it holds end dependencies of its own): its callback
 * runs, its successors are released. */
void finish_batch(void *arg)
{
	RunningBatch *batch = static_cast<RunningBatch *>(arg);
	if (batch->reports.stats)
		batch->reports.stats->record_batch(batch->family->key.codelet, batch->members.size(), batch->exec_us,
						   batch->predicted_us);
	for (BorrowedTask *member : batch->members)
		member->release();
	delete batch;
}

} // namespace

void init_merged_codelet(Family &family)
{
	struct starpu_codelet &cl = family.merged_codelet;
	starpu_codelet_init(&cl);
	cl.where = STARPU_CPU;
	cl.cpu_funcs[0] = run_batch;
	cl.nbuffers = STARPU_VARIABLE_NBUFFERS;
	/* The members were submitted with the partition plans they needed;
	 * re-checking plans for the merged task would submit (un)partitioning
	 * that the application ordered after them. */
	cl.flags = STARPU_CODELET_NOPLANS;
	cl.name = family.name.c_str();
	/* A cost function, not a history: StarPU must not record a batch's
	 * time anywhere, nor try to calibrate the merged task. */
	std::memset(&family.merged_model, 0, sizeof(family.merged_model));
	family.merged_model.type = STARPU_COMMON;
	family.merged_model.cost_function = predicted_batch_us;
	family.merged_model.symbol = family.name.c_str();
	/* Batches without a prediction get no model at all: a model answering
	 * "unknown" makes dmda-like bases calibrate, i.e. spread tasks without
	 * regard to load (measured: 400 tasks of 1 ms under dmda, 0.21-0.27 s
	 * with the model, against 0.20 s for dmda alone). */
	family.merged_codelet_without_prediction = cl;
	cl.model = &family.merged_model;
}

bool is_merged_task(const struct starpu_task *task)
{
	return task->cl && task->cl->cpu_funcs[0] == run_batch;
}

void submit_merged_task(Family &family, std::vector<BorrowedTask *> members, const MergedTaskReports &reports)
{
	double predicted_member_us = family.predicted_member_us.load(std::memory_order_relaxed);
	const std::size_t count = members.size();
	RunningBatch *batch = new RunningBatch{&family, std::move(members), {}, std::nullopt, reports, predicted_member_us * double(count)};
	batch->priority = batch->members.front()->task()->priority;
	for (BorrowedTask *member : batch->members) {
		member->lend_callback();
		batch->priority = std::max(batch->priority, member->task()->priority);
	}
	batch->batched = batched_implementation_for(family.key.codelet);
	if (!batch->batched && reports.kernels) {
		std::vector<enum starpu_data_access_mode> modes(family.key.nbuffers);
		for (unsigned b = 0; b < family.key.nbuffers; b++)
			modes[b] = batch->members.front()->mode(b);
		batch->kernel = reports.kernels->binding_for(family.key.codelet, modes);
	}
	submit_batch(batch, starpu_task_submit);
}

namespace {

/* Gives batch its task (its members' buffers, each handle once) and submits
 * it through submit: the program's starpu_task_submit from the flusher, or
 * StarPU's own from a worker handing a batch's last members on. */
void submit_batch(RunningBatch *batch, Submit submit)
{
	Family &family = *batch->family;
	const unsigned nbuffers = family.key.nbuffers;
	const std::size_t total = batch->members.size() * nbuffers;
	std::vector<starpu_data_handle_t> use_handles(total);
	std::vector<enum starpu_data_access_mode> use_modes(total);
	for (std::size_t m = 0; m < batch->members.size(); m++) {
		BorrowedTask *member = batch->members[m];
		for (unsigned b = 0; b < nbuffers; b++) {
			use_handles[m * nbuffers + b] = member->handle(b);
			use_modes[m * nbuffers + b] = member->mode(b);
		}
	}
	auto merged = merge_buffers(use_handles, use_modes);
	batch->buffer_of_use = std::move(merged.index_of_use);

	struct starpu_task *task = starpu_task_create();
	task->cl = std::isnan(batch->predicted_us) ? &family.merged_codelet_without_prediction : &family.merged_codelet;
	task->name = family.name.c_str();
	give_buffers(task, merged.handles, merged.modes);
	task->sequential_consistency = 0;
	task->priority = batch->priority;
	task->sched_ctx = family.key.sched_ctx;
	task->detach = 1;
	task->destroy = 1;
	task->cl_arg = batch;
	task->callback_func = finish_batch;
	task->callback_arg = batch;

	int ret = submit(task);
	if (ret != 0) {
		std::fprintf(stderr, "starpu-fusing: StarPU refused the batch task %s of %zu tasks (error %d: %s); "
			     "its tasks cannot run, stopping\n",
			     family.name.c_str(), batch->members.size(), ret, std::strerror(-ret));
		std::abort();
	}
}

} // namespace

} // namespace fusing
