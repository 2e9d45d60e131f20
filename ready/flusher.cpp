/* The flusher thread; see flusher.h. */
#include "ready/flusher.h"

namespace fusing {

Flusher::Flusher(BatchCollector &collector, const MergedTaskReports &reports)
	: collector_(collector), reports_(reports), thread_([this] { run(); })
{
}

Flusher::~Flusher()
{
	collector_.stop();
	thread_.join();
}

void Flusher::run()
{
	std::vector<ClosedBatch> closed;
	while (collector_.wait_for_closed_batches(closed))
		for (ClosedBatch &batch : closed)
			submit_merged_task(*batch.family, std::move(batch.members), reports_);
}

} // namespace fusing
