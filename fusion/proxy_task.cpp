/* Proxy tasks; see proxy_task.h. */
#include "fusion/proxy_task.h"

#include "fusion/current_member.h"
#include "fusion/stats.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>

namespace fusing {
namespace {

/* Everything a proxy needs from submission to its callback.  Owned by the
 * proxy: created in submit_proxy(), deleted in finish_batch(). */
struct RunningBatch {
	Family *family;
	std::vector<Member> members;
	Statistics *stats;
	double exec_us = 0.0; /* written by run_batch, read by finish_batch */
};

/* The proxy's CPU function.  Runs in the worker thread that popped the
 * proxy, after StarPU fetched every member's data; holds no lock of ours.
 * Calls each member's own CPU function with its slice of the buffers, in the
 * order the members became ready. */
void run_batch(void *buffers[], void *arg)
{
	RunningBatch *batch = static_cast<RunningBatch *>(arg);
	const unsigned nbuffers = batch->family->key.nbuffers;
	double start_us = starpu_timing_now();
	for (std::size_t i = 0; i < batch->members.size(); i++) {
		struct starpu_task *member = batch->members[i].task;
		RunningMemberScope running(member, batch->members.size());
		member->cl->cpu_funcs[0](buffers + i * nbuffers, member->cl_arg);
	}
	batch->exec_us = starpu_timing_now() - start_us;
}

/* The proxy's callback.  StarPU runs it in the thread terminating the proxy
 * (usually the worker that ran it), after the proxy released its data, with
 * no scheduler lock held.  Releasing a member's end dependency terminates it:
 * its callback runs and its successors are released, possibly freeing it,
 * so nothing touches a member after its release. */
void finish_batch(void *arg)
{
	RunningBatch *batch = static_cast<RunningBatch *>(arg);
	if (batch->stats)
		batch->stats->record_batch(batch->family->key.codelet, batch->members.size(), batch->exec_us);
	for (const Member &member : batch->members) {
		member.task->where = member.where_before_batching;
		starpu_task_end_dep_release(member.task);
	}
	delete batch;
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
}

bool is_proxy_task(const struct starpu_task *task)
{
	return task->cl && task->cl->cpu_funcs[0] == run_batch;
}

void submit_proxy(Family &family, std::vector<Member> members, Statistics *stats)
{
	const unsigned nbuffers = family.key.nbuffers;
	const std::size_t total = members.size() * nbuffers;

	struct starpu_task *proxy = starpu_task_create();
	proxy->cl = &family.proxy_codelet;
	proxy->name = family.proxy_name.c_str();
	proxy->nbuffers = static_cast<int>(total);
	/* StarPU frees dyn_handles and dyn_modes with free() when it destroys
	 * the task (starpu_task_clean). */
	proxy->dyn_handles = static_cast<starpu_data_handle_t *>(std::malloc(total * sizeof(starpu_data_handle_t)));
	proxy->dyn_modes = static_cast<enum starpu_data_access_mode *>(std::malloc(total * sizeof(enum starpu_data_access_mode)));
	if (!proxy->dyn_handles || !proxy->dyn_modes) {
		std::fprintf(stderr, "starpu-fusing: out of memory building a batch of %zu tasks\n", members.size());
		std::abort();
	}
	for (std::size_t m = 0; m < members.size(); m++)
		for (unsigned b = 0; b < nbuffers; b++) {
			proxy->dyn_handles[m * nbuffers + b] = STARPU_TASK_GET_HANDLE(members[m].task, b);
			proxy->dyn_modes[m * nbuffers + b] = STARPU_TASK_GET_MODE(members[m].task, b);
		}
	proxy->sequential_consistency = 0;
	proxy->priority = family.key.priority;
	proxy->sched_ctx = family.key.sched_ctx;
	proxy->detach = 1;
	proxy->destroy = 1;

	RunningBatch *batch = new RunningBatch{&family, std::move(members), stats};
	proxy->cl_arg = batch;
	proxy->callback_func = finish_batch;
	proxy->callback_arg = batch;

	int ret = starpu_task_submit(proxy);
	if (ret != 0) {
		std::fprintf(stderr, "starpu-fusing: StarPU refused the batch task %s of %zu tasks (error %d: %s); "
			     "its tasks cannot run, stopping\n",
			     family.proxy_name.c_str(), batch->members.size(), ret, std::strerror(-ret));
		std::abort();
	}
}

} // namespace fusing
