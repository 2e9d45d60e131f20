/* A codelet family: the ready tasks that may share one batch.
 *
 * Members of one family have the same codelet, the same buffer count and
 * access modes (as recorded at their submission), a priority in the same
 * bucket, and the same scheduling context, so that the batch is scheduled
 * as each of them would have been and a batched kernel sees a uniform
 * layout.  Priorities are bucketed by magnitude, not kept apart one by one:
 * a program giving every task its own priority (Cholesky-like critical-path
 * priorities) would otherwise get one family, and a batch of one, per task;
 * the batch runs at the highest priority among its members. */
#ifndef STARPU_FUSING_READY_FAMILY_H
#define STARPU_FUSING_READY_FAMILY_H

#include "ready/borrowed_task.h"

#include <starpu.h>

#include <atomic>
#include <cmath>
#include "core/waiting_priorities.h"

#include <cstdint>
#include <string>
#include <tuple>
#include <unordered_set>

namespace fusing {

struct FamilyKey {
	const struct starpu_codelet *codelet;
	unsigned sched_ctx;
	int priority_bucket;
	unsigned nbuffers;
	std::uint64_t modes_signature; /* hash of the access modes, in order */
	int numa_node;                 /* where the data lives (numa_node.h); -1 on one-node machines */

	bool operator<(const FamilyKey &other) const
	{
		return std::tie(codelet, sched_ctx, priority_bucket, nbuffers, modes_signature, numa_node) <
		       std::tie(other.codelet, other.sched_ctx, other.priority_bucket, other.nbuffers, other.modes_signature,
				other.numa_node);
	}
	bool operator==(const FamilyKey &other) const
	{
		return codelet == other.codelet && sched_ctx == other.sched_ctx && priority_bucket == other.priority_bucket &&
		       nbuffers == other.nbuffers && modes_signature == other.modes_signature && numa_node == other.numa_node;
	}
};

/* The family of a task whose data lives on numa_node (any thread; reads
 * the task's codelet, context and priority and the modes recorded at its
 * submission). */
FamilyKey family_of(const BorrowedTask &task, int numa_node);

/* The distinct data of a family's open batch, for the working-set cap
 * (STARPU_FUSING_CACHE_CAP); guarded by the collector's mutex. */
struct WorkingSet {
	std::unordered_set<starpu_data_handle_t> handles;
	std::size_t bytes = 0;

	void add(const BorrowedTask &task)
	{
		for (unsigned i = 0; i < task.nbuffers(); i++) {
			starpu_data_handle_t handle = task.handle(i);
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
 * because merged tasks point at merged_codelet and name until StarPU
 * destroys them, which nothing tells us about. */
struct Family {
	Family(const FamilyKey &key, const std::string &codelet_name);

	FamilyKey key;
	std::string name;                  /* "fused:<codelet family name>", shown in traces */
	struct starpu_codelet merged_codelet;                    /* with merged_model */
	struct starpu_codelet merged_codelet_without_prediction; /* no model */
	/* Gives the base policy the batch's predicted duration (dmda & co). */
	struct starpu_perfmodel merged_model;

	/* The prediction used for the family's latest held task (StarPU's
	 * model when calibrated, else the measured estimate); written under
	 * the collector's mutex, read when a merged task is built: a hint. */
	std::atomic<double> predicted_member_us{NAN};
	/* StarPU divides a STARPU_COMMON cost by the architecture's relative
	 * speedup (common_task_expected_perf in src/core/perfmodel/perfmodel.c);
	 * member predictions are already for the CPU, so the merged task's cost
	 * function multiplies it back.  Set once, at creation. */
	double cpu_relative_speedup = 1.0;
	/* Set by the worker that ran one of the family's batches, once its
	 * duration is measured; read when batches are sized (controller.h). */
	std::atomic<bool> batch_measured{false};
	/* The open batch's data, guarded by the collector's mutex: distinct
	 * handles only when the working-set cap is on; the sum of the members'
	 * buffer sizes (shared handles counted each time, an upper bound)
	 * always, for the memory cap. */
	WorkingSet open_working_set;
	std::uint64_t open_bytes_bound = 0;
};

} // namespace fusing

#endif
