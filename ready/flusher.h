/* The flusher thread: the only thread that submits merged tasks.
 *
 * It sleeps in BatchCollector::wait_for_closed_batches and submits each
 * batch that closed, holding no lock of ours (starpu_task_submit may take
 * scheduler locks, and may block: see the README on
 * STARPU_LIMIT_MAX_SUBMITTED_TASKS).  Submitting from a thread of our own,
 * never from a StarPU callback or a worker's scheduling operation, is what
 * keeps the program's threads and StarPU's workers free of our submissions. */
#ifndef STARPU_FUSING_READY_FLUSHER_H
#define STARPU_FUSING_READY_FLUSHER_H

#include "ready/batch_collector.h"
#include "ready/merged_task.h"

#include <thread>

namespace fusing {

class Flusher {
public:
	/* Starts the thread. */
	Flusher(BatchCollector &collector, const MergedTaskReports &reports);
	/* Stops the collector and joins the thread. */
	~Flusher();

	Flusher(const Flusher &) = delete;
	Flusher &operator=(const Flusher &) = delete;

private:
	void run();

	BatchCollector &collector_;
	const MergedTaskReports reports_;
	std::thread thread_;
};

} // namespace fusing

#endif
