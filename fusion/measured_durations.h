/* Measured member durations per codelet: the online estimate for codelets
 * StarPU has no calibrated model for.
 *
 * A small direct-mapped table, written by the worker that ran a batch and
 * read by every thread that readies a task, without locks: it is a hint for
 * sizing batches, never needed for correctness.  Two codelets hashing to one
 * slot take turns (the newer measurement wins); a reader that finds another
 * codelet in the slot gets "unknown". */
#ifndef STARPU_FUSING_FUSION_MEASURED_DURATIONS_H
#define STARPU_FUSING_FUSION_MEASURED_DURATIONS_H

#include <starpu.h>

#include <array>
#include <atomic>
#include <cmath>
#include <cstdint>

namespace fusing {

class MeasuredDurations {
public:
	/* Mean member duration of codelet in µs, NaN when not measured. */
	double get(const struct starpu_codelet *codelet) const
	{
		const Slot &slot = slots_[index(codelet)];
		if (slot.codelet.load(std::memory_order_acquire) != codelet)
			return NAN;
		return slot.member_us.load(std::memory_order_relaxed);
	}

	/* Folds in a batch whose members took member_us each on average
	 * (moving average, weight 1/4 for the newest batch). */
	void record(const struct starpu_codelet *codelet, double member_us)
	{
		Slot &slot = slots_[index(codelet)];
		double previous = get(codelet);
		double updated = std::isnan(previous) ? member_us : 0.75 * previous + 0.25 * member_us;
		slot.member_us.store(updated, std::memory_order_relaxed);
		slot.codelet.store(codelet, std::memory_order_release);
	}

private:
	struct Slot {
		std::atomic<const struct starpu_codelet *> codelet{nullptr};
		std::atomic<double> member_us{NAN};
	};

	static std::size_t index(const struct starpu_codelet *codelet)
	{
		return (reinterpret_cast<std::uintptr_t>(codelet) >> 4) * 0x9E3779B97F4A7C15ull >> 58;
	}

	std::array<Slot, 64> slots_;
};

} // namespace fusing

#endif
