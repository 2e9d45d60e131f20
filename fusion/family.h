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

	bool operator<(const FamilyKey &other) const
	{
		return std::tie(codelet, sched_ctx, priority, nbuffers, modes_signature) <
		       std::tie(other.codelet, other.sched_ctx, other.priority, other.nbuffers, other.modes_signature);
	}
};

/* Reads the family of a task (any thread; reads only the task). */
FamilyKey family_of(const struct starpu_task *task);

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
};

/* A task taken into a batch, with what must be restored before it terminates. */
struct Member {
	struct starpu_task *task;
	std::int32_t where_before_batching;
};

} // namespace fusing

#endif
