/* A codelet family: the ready tasks that may share one batch.
 *
 * Members of one family have the same codelet, the same buffer count and
 * access modes, the same priority and the same scheduling context, so that
 * the batch is scheduled exactly as each of them would have been and a
 * batched kernel sees a uniform layout. */
#ifndef STARPU_FUSING_FUSION_FAMILY_H
#define STARPU_FUSING_FUSION_FAMILY_H

#include <starpu.h>

#include <atomic>
#include <unordered_set>
#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>

namespace fusing {

struct FamilyKey {
	const struct starpu_codelet *codelet;
	unsigned sched_ctx;
	int priority;
	unsigned nbuffers;
	std::uint64_t modes_signature; /* hash of the access modes, in order */
	int numa_node;                 /* where the data lives (numa_node.h); -1 on one-node machines */

	bool operator<(const FamilyKey &other) const
	{
		return std::tie(codelet, sched_ctx, priority, nbuffers, modes_signature, numa_node) <
		       std::tie(other.codelet, other.sched_ctx, other.priority, other.nbuffers, other.modes_signature,
				other.numa_node);
	}
};

/* Reads the family of a task whose data lives on numa_node (any thread;
 * reads only the task). */
FamilyKey family_of(const struct starpu_task *task, int numa_node);

/* The distinct data of a family's open batch, for the working-set cap
 * (STARPU_FUSING_CACHE_CAP); guarded by the engine's mutex_. */
struct WorkingSet {
	std::unordered_set<starpu_data_handle_t> handles;
	std::size_t bytes = 0;

	void add(const struct starpu_task *task)
	{
		for (unsigned i = 0; i < STARPU_TASK_GET_NBUFFERS(task); i++) {
			starpu_data_handle_t handle = STARPU_TASK_GET_HANDLE(task, i);
			if (handles.insert(handle).second)
				bytes += starpu_data_get_size(handle);
		}
	}
	void clear()
	{
		handles.clear();
		bytes = 0;
	}
};

/* One per FamilyKey, created on first use and kept until the engine stops,
 * because proxies point at proxy_codelet and proxy_name. */
struct Family {
	explicit Family(const FamilyKey &key, const char *member_name);

	FamilyKey key;
	std::string proxy_name;            /* "fused:<codelet>", shown in traces */
	struct starpu_codelet proxy_codelet;                    /* with proxy_model */
	struct starpu_codelet proxy_codelet_without_prediction; /* no model */
	/* Gives the base policy the batch's predicted duration (dmda & co). */
	struct starpu_perfmodel proxy_model;

	/* The prediction used for the family's latest held task (StarPU's
	 * model when calibrated, else the measured estimate); written under
	 * the engine's mutex_, read when a proxy is built: a hint. */
	std::atomic<double> predicted_member_us{NAN};
	/* StarPU divides a STARPU_COMMON cost by the architecture's relative
	 * speedup (common_task_expected_perf in src/core/perfmodel/perfmodel.c);
	 * member predictions are already for the CPU, so the proxy's cost
	 * function multiplies it back.  Set once, at creation. */
	double cpu_relative_speedup = 1.0;
	/* Set by the worker that ran one of the family's batches, once its
	 * duration is measured; read when batches are sized (controller.h). */
	std::atomic<bool> batch_measured{false};
	/* Only filled when the working-set cap is on. */
	WorkingSet open_working_set;
};

/* A task taken into a batch, with what must be restored before it terminates. */
struct Member {
	struct starpu_task *task;
	std::int32_t where_before_batching;
};

} // namespace fusing

#endif
