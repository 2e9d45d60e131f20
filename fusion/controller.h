/* The granularity controller: which ready tasks wait for a batch, and how
 * many members a batch gets, from predicted durations.
 *
 * The rule (README, "How batches are sized"):
 *  - a task predicted to last at least the target runs unfused: it is coarse
 *    enough already;
 *  - a task waits for a batch only while every worker of its context has
 *    queued work (admission.h), unless STARPU_FUSING_HOLD=always;
 *  - a batch closes when its predicted work reaches the target, but never
 *    below min_members nor above max_members; with no prediction yet, the
 *    family's first batch closes at probe_members (it measures the family
 *    quickly instead of packing possibly long tasks into one batch) and
 *    later ones at max_members (the program submitted faster than the probe
 *    could run: the tasks are short);
 *  - a batch closed because workers ran out of work is split so that every
 *    worker of the context gets a part: a batch never takes work that idle
 *    workers could run in parallel.
 * Pure functions: no StarPU, no clock; tests/test_controller.cpp. */
#ifndef STARPU_FUSING_FUSION_CONTROLLER_H
#define STARPU_FUSING_FUSION_CONTROLLER_H

#include "fusion/eligibility.h"

#include <cmath>
#include <cstddef>
#include <vector>

namespace fusing {

struct Targets {
	double target_us;        /* STARPU_FUSING_TARGET */
	std::size_t min_members; /* STARPU_FUSING_MIN_BATCH */
	std::size_t max_members; /* STARPU_FUSING_MAX_BATCH */
};

/* predicted_us: NaN when nothing predicts the task yet. */
inline UnfusedReason decide_hold(double predicted_us, const Targets &targets, bool every_worker_busy, bool hold_always)
{
	if (!std::isnan(predicted_us) && predicted_us >= targets.target_us)
		return UnfusedReason::predicted_above_target;
	if (!hold_always && !every_worker_busy)
		return UnfusedReason::worker_was_idle;
	return UnfusedReason::none;
}

/* Batch size while a family has no prediction yet. */
constexpr std::size_t probe_members = 4;

/* How many members close a batch of tasks predicted at predicted_us each;
 * first_batch: the family has not formed a batch yet. */
inline std::size_t batch_size_for(double predicted_us, const Targets &targets, bool first_batch)
{
	std::size_t size = targets.max_members;
	if (std::isnan(predicted_us)) {
		if (first_batch)
			size = probe_members;
	}
	else if (predicted_us > 0.0) {
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
