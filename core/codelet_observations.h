/* What the engine has observed of each codelet's batches: the mean member
 * duration (the online estimate for codelets StarPU has no calibrated model
 * for) and how many members its batches actually get.
 *
 * An open-addressing table of codelets, written by the worker that ran a
 * batch (or the thread that closed it) and read by every thread that
 * readies or submits a task, without locks: a codelet claims a slot once
 * (compare-and-swap on an empty one, probing linearly from its hash) and
 * keeps it for the run.  It used to be direct-mapped, two codelets hashing
 * to one slot taking turns and each takeover forgetting the other's
 * durations and batch sizes: a convolution's conv2d and bias_add, 0x220
 * bytes apart in the program, shared a slot in 4 runs of 12 (addresses
 * move with ASLR), and each forgot the other's measurement so often that
 * neither was predicted: the window stopped deferring them and the layer
 * ran in 0.10-0.12 s instead of 0.05-0.06 (2,304 px, both mode).  Once
 * every slot is claimed, further codelets are not observed (unknown, as a
 * codelet never measured), said once on stderr. */
#ifndef STARPU_FUSING_CORE_CODELET_OBSERVATIONS_H
#define STARPU_FUSING_CORE_CODELET_OBSERVATIONS_H

#include <starpu.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>

namespace fusing {

class CodeletObservations {
public:
	/* Below this many members per batch on average, holding a family's
	 * tasks only delays them.  Measured on periodic 1-D stencils on 2
	 * workers, 10 us tasks: 8 cells wide, batches of 1.3 members made the
	 * run 2.6 x slower than the base policy alone; 16 wide, batches of 2.7
	 * to 2.9 still cost 1.4 x (0.27-0.29 s vs 0.19 s) — with 4 here it runs
	 * as fast as the base (0.21-0.24 s vs 0.20-0.25 s). */
	static constexpr double min_useful_members = 4.0;
	/* Batches observed before concluding: the first ones are often
	 * single tasks flushed for an idle worker at the start of a graph (a
	 * 16-sample convolution layer was left unfused on one of them). */
	static constexpr long batches_before_judging = 8;
	/* After this many tasks readied without holding, a family's batch
	 * sizes are forgotten and holding is tried again (the graph may have
	 * widened); each retry that finds batches still too small doubles the
	 * wait, up to max_tasks_between_retries (a graph that stays narrow pays
	 * the latency of a retry less and less often). */
	static constexpr long tasks_between_retries = 256;
	static constexpr long max_tasks_between_retries = 8192;
	/* A new measurement counts for at most this many times the estimate:
	 * a worker preempted for a few milliseconds (2 cores, 4 threads) made a
	 * 10 us stencil task look like 1 ms and left it unfused. */
	static constexpr double max_rise = 4.0;
	/* Codelets observed in a run; later ones are not (said once). */
	static constexpr unsigned slot_bits = 8;
	static constexpr std::size_t max_codelets = std::size_t(1) << slot_bits;

	/* Mean member duration of codelet in µs, NaN when not measured. */
	double member_us(const struct starpu_codelet *codelet) const
	{
		const Slot *slot = find(codelet);
		return slot ? slot->member_us.load(std::memory_order_relaxed) : NAN;
	}

	/* Folds in a batch whose members took member_us each on average
	 * (moving average, weight 1/4 for the newest batch, rises capped at
	 * max_rise times the estimate). */
	void record_member_us(const struct starpu_codelet *codelet, double member_us)
	{
		Slot *slot = claim(codelet);
		if (!slot)
			return;
		double previous = slot->member_us.load(std::memory_order_relaxed);
		slot->member_us.store(std::isnan(previous) ? member_us : 0.75 * previous + 0.25 * std::min(member_us, max_rise * previous),
				      std::memory_order_relaxed);
	}

	/* Folds in the size of a batch of codelet that was closed (moving
	 * average, weight 1/4). */
	void record_batch_members(const struct starpu_codelet *codelet, std::size_t members)
	{
		Slot *slot = claim(codelet);
		if (!slot)
			return;
		double previous = slot->members_per_batch.load(std::memory_order_relaxed);
		double size = static_cast<double>(members);
		slot->members_per_batch.store(std::isnan(previous) ? size : 0.75 * previous + 0.25 * size,
					      std::memory_order_relaxed);
		slot->batches_seen.fetch_add(1, std::memory_order_relaxed);
	}

	/* Whether a ready task of codelet should wait for a batch: no while the
	 * codelet's recent batches (once batches_before_judging were seen)
	 * averaged under min_useful_members, until the retry interval's tasks
	 * have been let through. */
	bool worth_holding(const struct starpu_codelet *codelet)
	{
		Slot *found = find(codelet);
		if (!found)
			return true;
		Slot &slot = *found;
		if (slot.batches_seen.load(std::memory_order_relaxed) < batches_before_judging)
			return true;
		if (slot.members_per_batch.load(std::memory_order_relaxed) >= min_useful_members) {
			slot.retry_interval.store(tasks_between_retries, std::memory_order_relaxed);
			return true;
		}
		const long interval = slot.retry_interval.load(std::memory_order_relaxed);
		if (slot.tasks_not_held.fetch_add(1, std::memory_order_relaxed) + 1 < interval)
			return false;
		slot.tasks_not_held.store(0, std::memory_order_relaxed);
		slot.retry_interval.store(std::min(2 * interval, max_tasks_between_retries), std::memory_order_relaxed);
		slot.members_per_batch.store(NAN, std::memory_order_relaxed);
		slot.batches_seen.store(0, std::memory_order_relaxed);
		return true;
	}

	/* The base policy predicted a task of codelet (StarPU set its
	 * `predicted`): the base consults the codelet's performance model, so
	 * asking that model too prints or forces nothing the base would not.
	 * Asking an uncalibrated model makes StarPU force calibration for the
	 * whole run, and its "Too big deviation" warnings follow: over lws,
	 * which never asks, DAHL's tests printed 23 to 33 StarPU warnings with
	 * fusing (3 runs, StarPU 1.4.12), none without. */
	void note_base_predicts(const struct starpu_codelet *codelet)
	{
		if (Slot *slot = claim(codelet))
			slot->base_predicts.store(true, std::memory_order_relaxed);
	}
	bool base_predicts(const struct starpu_codelet *codelet) const
	{
		const Slot *slot = find(codelet);
		return slot && slot->base_predicts.load(std::memory_order_relaxed);
	}

private:
	struct Slot {
		std::atomic<const struct starpu_codelet *> codelet{nullptr};
		std::atomic<double> member_us{NAN};
		std::atomic<double> members_per_batch{NAN};
		std::atomic<long> tasks_not_held{0};
		std::atomic<long> batches_seen{0};
		std::atomic<long> retry_interval{tasks_between_retries};
		std::atomic<bool> base_predicts{false};
	};

	static std::size_t home(const struct starpu_codelet *codelet)
	{
		/* The product's top slot_bits bits (Fibonacci hashing). */
		return (reinterpret_cast<std::uintptr_t>(codelet) >> 4) * 0x9E3779B97F4A7C15ull >> (64 - slot_bits);
	}

	/* codelet's slot, or null if it has none.  Slots are claimed for good,
	 * in probe order, so the first empty slot ends the search. */
	const Slot *find(const struct starpu_codelet *codelet) const
	{
		for (std::size_t probe = 0, i = home(codelet); probe < max_codelets; probe++, i = (i + 1) % max_codelets) {
			const struct starpu_codelet *owner = slots_[i].codelet.load(std::memory_order_acquire);
			if (owner == codelet)
				return &slots_[i];
			if (!owner)
				return nullptr;
		}
		return nullptr;
	}
	Slot *find(const struct starpu_codelet *codelet)
	{
		return const_cast<Slot *>(static_cast<const CodeletObservations *>(this)->find(codelet));
	}

	/* codelet's slot, claimed now if it has none; null once every slot is
	 * claimed (said once). */
	Slot *claim(const struct starpu_codelet *codelet)
	{
		for (std::size_t probe = 0, i = home(codelet); probe < max_codelets; probe++, i = (i + 1) % max_codelets) {
			const struct starpu_codelet *owner = slots_[i].codelet.load(std::memory_order_acquire);
			if (!owner && slots_[i].codelet.compare_exchange_strong(owner, codelet, std::memory_order_acq_rel))
				return &slots_[i];
			if (owner == codelet) /* found, or claimed by another thread just now */
				return &slots_[i];
		}
		if (!full_said_.exchange(true, std::memory_order_relaxed))
			std::fprintf(stderr, "[starpu-fusing] more than %zu codelets: codelet %s and later ones get no duration or "
					     "batch-size estimate (without a StarPU model, not deferred at submission)\n",
				     max_codelets, codelet->name ? codelet->name : "(unnamed)");
		return nullptr;
	}

	std::array<Slot, max_codelets> slots_;
	std::atomic<bool> full_said_{false};
};

} // namespace fusing

#endif
