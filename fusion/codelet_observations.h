/* What the engine has observed of each codelet's batches: the mean member
 * duration (the online estimate for codelets StarPU has no calibrated model
 * for) and how many members its batches actually get.
 *
 * A small direct-mapped table, written by the worker that ran a batch (or
 * the thread that closed it) and read by every thread that readies a task,
 * without locks: it holds hints for sizing and holding, never needed for
 * correctness.  Two codelets hashing to one slot take turns (the newer one
 * takes the slot and starts afresh); a reader that finds another codelet in
 * the slot gets "unknown". */
#ifndef STARPU_FUSING_FUSION_CODELET_OBSERVATIONS_H
#define STARPU_FUSING_FUSION_CODELET_OBSERVATIONS_H

#include <starpu.h>

#include <array>
#include <atomic>
#include <cmath>
#include <cstdint>

namespace fusing {

class CodeletObservations {
public:
	/* Below this many members per batch on average, holding a family's
	 * tasks only delays them: measured on a periodic 1-D stencil 8 cells
	 * wide on 2 workers, 10 us tasks, batches of 1.3 members made the run
	 * 2.6 x slower than the base policy alone. */
	static constexpr double min_useful_members = 2.0;
	/* Batches observed before concluding: the first ones are often
	 * single tasks flushed for an idle worker at the start of a graph (a
	 * 16-sample convolution layer was left unfused on one of them). */
	static constexpr long batches_before_judging = 8;
	/* After this many tasks readied without holding, a family's batch
	 * sizes are forgotten and holding is tried again (the graph may have
	 * widened). */
	static constexpr long tasks_between_retries = 256;

	/* Mean member duration of codelet in µs, NaN when not measured. */
	double member_us(const struct starpu_codelet *codelet) const
	{
		const Slot &slot = slots_[index(codelet)];
		if (slot.codelet.load(std::memory_order_acquire) != codelet)
			return NAN;
		return slot.member_us.load(std::memory_order_relaxed);
	}

	/* Folds in a batch whose members took member_us each on average
	 * (moving average, weight 1/4 for the newest batch). */
	void record_member_us(const struct starpu_codelet *codelet, double member_us)
	{
		Slot &slot = owned_slot(codelet);
		double previous = slot.member_us.load(std::memory_order_relaxed);
		slot.member_us.store(std::isnan(previous) ? member_us : 0.75 * previous + 0.25 * member_us,
				     std::memory_order_relaxed);
	}

	/* Folds in the size of a batch of codelet that was closed (moving
	 * average, weight 1/4). */
	void record_batch_members(const struct starpu_codelet *codelet, std::size_t members)
	{
		Slot &slot = owned_slot(codelet);
		double previous = slot.members_per_batch.load(std::memory_order_relaxed);
		double size = static_cast<double>(members);
		slot.members_per_batch.store(std::isnan(previous) ? size : 0.75 * previous + 0.25 * size,
					     std::memory_order_relaxed);
		slot.batches_seen.fetch_add(1, std::memory_order_relaxed);
	}

	/* Whether a ready task of codelet should wait for a batch: no while the
	 * codelet's recent batches (once batches_before_judging were seen)
	 * averaged under min_useful_members, until tasks_between_retries tasks
	 * have been let through. */
	bool worth_holding(const struct starpu_codelet *codelet)
	{
		Slot &slot = slots_[index(codelet)];
		if (slot.codelet.load(std::memory_order_acquire) != codelet)
			return true;
		double members = slot.members_per_batch.load(std::memory_order_relaxed);
		if (slot.batches_seen.load(std::memory_order_relaxed) < batches_before_judging || members >= min_useful_members)
			return true;
		if (slot.tasks_not_held.fetch_add(1, std::memory_order_relaxed) + 1 < tasks_between_retries)
			return false;
		slot.tasks_not_held.store(0, std::memory_order_relaxed);
		slot.members_per_batch.store(NAN, std::memory_order_relaxed);
		slot.batches_seen.store(0, std::memory_order_relaxed);
		return true;
	}

private:
	struct Slot {
		std::atomic<const struct starpu_codelet *> codelet{nullptr};
		std::atomic<double> member_us{NAN};
		std::atomic<double> members_per_batch{NAN};
		std::atomic<long> tasks_not_held{0};
		std::atomic<long> batches_seen{0};
	};

	static std::size_t index(const struct starpu_codelet *codelet)
	{
		return (reinterpret_cast<std::uintptr_t>(codelet) >> 4) * 0x9E3779B97F4A7C15ull >> 58;
	}

	/* codelet's slot, taken over (and cleared) if another codelet had it. */
	Slot &owned_slot(const struct starpu_codelet *codelet)
	{
		Slot &slot = slots_[index(codelet)];
		if (slot.codelet.load(std::memory_order_acquire) != codelet) {
			slot.member_us.store(NAN, std::memory_order_relaxed);
			slot.members_per_batch.store(NAN, std::memory_order_relaxed);
			slot.tasks_not_held.store(0, std::memory_order_relaxed);
			slot.batches_seen.store(0, std::memory_order_relaxed);
			slot.codelet.store(codelet, std::memory_order_release);
		}
		return slot;
	}

	std::array<Slot, 64> slots_;
};

} // namespace fusing

#endif
