/* Fusion statistics; see stats.h. */
#include "core/stats.h"

#include <cmath>

namespace fusing {

void Statistics::record_submitted(const struct starpu_codelet *cl, const std::string &name)
{
	std::lock_guard<std::mutex> lock(mutex_);
	PerCodelet &entry = per_codelet_[cl];
	if (entry.name.empty())
		entry.name = name;
	entry.submitted++;
}

void Statistics::record_unfused(const struct starpu_codelet *cl, UnfusedReason reason)
{
	std::lock_guard<std::mutex> lock(mutex_);
	per_codelet_[cl].unfused[static_cast<std::size_t>(reason)]++;
}

void Statistics::record_batch(const struct starpu_codelet *cl, std::size_t size, double exec_us, double predicted_us)
{
	std::lock_guard<std::mutex> lock(mutex_);
	PerCodelet &entry = per_codelet_[cl];
	entry.fused += size;
	entry.batches++;
	if (size > entry.largest_batch)
		entry.largest_batch = size;
	entry.batch_exec_us += exec_us;
	if (!std::isnan(predicted_us)) {
		entry.predicted_batches++;
		entry.predicted_batch_us += predicted_us;
		entry.measured_predicted_us += exec_us;
	}
}

void Statistics::print(FILE *stream) const
{
	std::lock_guard<std::mutex> lock(mutex_);
	std::fprintf(stream, "[starpu-fusing] %-24s %10s %10s %8s %10s %9s %14s\n",
		     "codelet", "submitted", "fused", "batches", "mean/batch", "max/batch", "mean batch us");
	for (const auto &entry : per_codelet_) {
		const PerCodelet &c = entry.second;
		double mean_size = c.batches ? double(c.fused) / double(c.batches) : 0.0;
		double mean_us = c.batches ? c.batch_exec_us / double(c.batches) : 0.0;
		std::fprintf(stream, "[starpu-fusing] %-24s %10llu %10llu %8llu %10.1f %9llu %14.1f\n",
			     c.name.c_str(), (unsigned long long)c.submitted, (unsigned long long)c.fused,
			     (unsigned long long)c.batches, mean_size, (unsigned long long)c.largest_batch, mean_us);
		if (c.predicted_batches)
			std::fprintf(stream, "[starpu-fusing]   %llu predicted batches: mean predicted %.1f us, measured %.1f us\n",
				     (unsigned long long)c.predicted_batches, c.predicted_batch_us / double(c.predicted_batches),
				     c.measured_predicted_us / double(c.predicted_batches));
		for (std::size_t reason = 1; reason < c.unfused.size(); reason++)
			if (c.unfused[reason])
				std::fprintf(stream, "[starpu-fusing]   unfused, %s: %llu\n",
					     unfused_reason_text(static_cast<UnfusedReason>(reason)),
					     (unsigned long long)c.unfused[reason]);
	}
}

} // namespace fusing
