/* The granularity controller: which ready tasks wait for a batch, and how
 * many members a batch gets, from predicted durations.
 *
 * The rule (doc/how_it_works.md, "How batches are sized"):
 *  - a task predicted to last at least the target runs unfused: it is coarse
 *    enough already;
 *  - a task predicted to last longer than max_generic_task_us runs unfused
 *    unless its codelet has a batched implementation: run one after another
 *    in a proxy, it would save a few microseconds of StarPU's per-task cost
 *    (under 1% of a 500 us task) and risk leaving workers idle at the end
 *    of the graph while one runs a long batch; a batched kernel gains
 *    compute as well, so those families are fused up to the target;
 *  - a task waits for a batch only while every worker of its context has
 *    queued work (admission.h) and its codelet's recent batches got at
 *    least four members (codelet_observations.h: in a narrow graph, holding
 *    only delays the critical path), unless STARPU_FUSING_HOLD=always;
 *  - a batch closes when its predicted work reaches the target, but never
 *    below min_members nor above max_members (max_members with no
 *    prediction);
 *  - while nothing predicts a family's tasks (no calibrated model, none of
 *    its members measured yet), every batch it closes is split like a batch
 *    closed for idle workers (below): a program can submit all its tasks before
 *    the first one ends, and whole batches of unknown tasks left workers
 *    idle at the end (60 tasks of 10 ms: 76% efficiency with batches of 4,
 *    8, 16 and 32), while small probe batches of no-op tasks cost 50% more
 *    instructions per task;
 *  - a batch closed because workers ran out of work is split so that every
 *    worker of the context gets a part: a batch never takes work that idle
 *    workers could run in parallel.
 * Pure functions: no StarPU, no clock; tests/test_controller.cpp. */
#ifndef STARPU_FUSING_READY_CONTROLLER_H
#define STARPU_FUSING_READY_CONTROLLER_H

#include "core/eligibility.h"

#include <cmath>
#include <cstddef>
#include <vector>

namespace fusing {

struct Targets {
	double target_us;        /* STARPU_FUSING_TARGET */
	std::size_t min_members; /* STARPU_FUSING_MIN_BATCH */
	std::size_t max_members; /* STARPU_FUSING_MAX_BATCH */
	double max_generic_task_us; /* STARPU_FUSING_MAX_TASK */
};

/* Whether a task predicted at predicted_us (NaN: unknown) is too long to
 * gain from generic execution; the caller then looks up whether its codelet
 * has a batched implementation (a lookup worth sparing short tasks). */
inline bool too_long_for_generic_execution(double predicted_us, const Targets &targets)
{
	return !std::isnan(predicted_us) && predicted_us > targets.max_generic_task_us;
}

/* One in remeasure_period tasks too long for generic execution is fused
 * anyway: only batches update a family's measured estimate, so without it a
 * single slow batch (a worker preempted in the middle of a one-member batch)
 * would keep a family of short tasks unfused for the rest of the run. */
constexpr unsigned remeasure_period = 16;

/* predicted_us: NaN when nothing predicts the task yet;
 * fuse_even_if_long: the codelet has a batched implementation, or it is this
 * task's turn to re-measure its family (only read when
 * too_long_for_generic_execution); batches_form: the codelet's recent
 * batches were worth waiting for. */
inline UnfusedReason decide_hold(double predicted_us, const Targets &targets, bool fuse_even_if_long, bool batches_form,
				 bool every_worker_busy, bool hold_always)
{
	if (!std::isnan(predicted_us) && predicted_us >= targets.target_us)
		return UnfusedReason::predicted_above_target;
	if (too_long_for_generic_execution(predicted_us, targets) && !fuse_even_if_long)
		return UnfusedReason::predicted_above_max_task;
	if (!hold_always && !every_worker_busy)
		return UnfusedReason::worker_was_idle;
	if (!hold_always && !batches_form)
		return UnfusedReason::batches_too_small;
	return UnfusedReason::none;
}

/* How many members close a batch of tasks predicted at predicted_us each
 * (NaN: unknown). */
inline std::size_t batch_size_for(double predicted_us, const Targets &targets)
{
	std::size_t size = targets.max_members;
	if (!std::isnan(predicted_us) && predicted_us > 0.0) {
		double for_target = std::ceil(targets.target_us / predicted_us);
		if (for_target < static_cast<double>(size))
			size = static_cast<std::size_t>(for_target);
	}
	if (size < targets.min_members)
		size = targets.min_members;
	if (size > targets.max_members)
		size = targets.max_members;
	return size < 1 ? 1 : size;
}

/* Sizes of the parts a batch of members is split into when it closes
 * because workers ran out of work: one part per worker, as even as possible,
 * none empty. */
inline std::vector<std::size_t> split_for_workers(std::size_t members, unsigned nworkers)
{
	std::size_t parts = nworkers == 0 ? 1 : (members < nworkers ? members : nworkers);
	std::vector<std::size_t> sizes;
	for (std::size_t p = 0; p < parts; p++)
		sizes.push_back(members / parts + (p < members % parts ? 1 : 0));
	return sizes;
}

} // namespace fusing

#endif
