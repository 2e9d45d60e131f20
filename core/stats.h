/* Counters behind STARPU_FUSING_STATS=1, printed at shutdown.
 *
 * Only touched when statistics were asked for, so that the default path pays
 * nothing.  Every method takes mutex_; callers hold no other lock of ours. */
#ifndef STARPU_FUSING_CORE_STATS_H
#define STARPU_FUSING_CORE_STATS_H

#include "core/eligibility.h"

#include <starpu.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <atomic>
#include <map>
#include <mutex>
#include <string>

namespace fusing {

class Statistics {
public:
	/* A task of codelet cl, known as name (codelet_name.h), was submitted
	 * (any thread). */
	void record_submitted(const struct starpu_codelet *cl, const std::string &name);
	/* It will run unfused, for reason (submitting or readying thread). */
	void record_unfused(const struct starpu_codelet *cl, UnfusedReason reason);
	/* A batch of size members of cl ran in exec_us, predicted at
	 * predicted_us (NaN: no prediction) (proxy callback thread). */
	void record_batch(const struct starpu_codelet *cl, std::size_t size, double exec_us, double predicted_us);

	/* Writes one table, one row per codelet. */
	void print(FILE *stream) const;

private:
	struct PerCodelet {
		std::string name;
		std::uint64_t submitted = 0;
		std::uint64_t fused = 0;
		std::uint64_t batches = 0;
		std::uint64_t largest_batch = 0;
		double batch_exec_us = 0.0;
		std::uint64_t predicted_batches = 0;
		double predicted_batch_us = 0.0;  /* over predicted batches only */
		double measured_predicted_us = 0.0; /* measured time of those batches */
		std::array<std::uint64_t, static_cast<std::size_t>(UnfusedReason::count_)> unfused{};
	};

	mutable std::mutex mutex_;
	std::map<const struct starpu_codelet *, PerCodelet> per_codelet_; /* guarded by mutex_ */
};

} // namespace fusing

#endif
