/* Collecting held tasks into batches, and handing closed batches to the
 * flusher thread.
 *
 * The collector owns the families and their open batches (batch_buffers.h)
 * behind one mutex.  Readying threads add held tasks; any thread may ask
 * for a context's batches to close (a worker ran out of work, the program
 * waits); the flusher thread takes what closed, waking when something did
 * or when the oldest open batch reaches STARPU_FUSING_MAX_DELAY.
 *
 * Locking: mutex_ guards every field below it.  It is only held for
 * bookkeeping, never while calling StarPU, so no StarPU lock is ever taken
 * under it; callers hold no lock of ours.  A worker thread must not block
 * on it inside a scheduling operation without telling StarPU (see
 * request_flush). */
#ifndef STARPU_FUSING_READY_BATCH_COLLECTOR_H
#define STARPU_FUSING_READY_BATCH_COLLECTOR_H

#include "core/admission.h"
#include "ready/batch_buffers.h"
#include "core/codelet_observations.h"
#include "ready/controller.h"
#include "ready/family.h"

#include <atomic>
#include <bitset>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace fusing {

struct ClosedBatch {
	Family *family;
	std::vector<BorrowedTask *> members;
};

/* What closes a batch besides its size: byte thresholds on the members'
 * data (0: none). */
struct DataCaps {
	/* STARPU_FUSING_CACHE_CAP: distinct data of the open batch. */
	std::uint64_t working_set_bytes = 0;
	/* The memory cap (engine.h): the open batch closes once the sum of its
	 * members' buffer sizes reaches this. */
	std::uint64_t close_at_bytes = 0;
};

class BatchCollector {
public:
	/* name_of gives a codelet's family name (for new families); a new
	 * family's cost function is scaled by cpu_relative_speedup. */
	BatchCollector(const Targets &targets, double max_delay_us, const DataCaps &caps, const ContextLoad &load,
		       CodeletObservations &observations, std::function<std::string(const struct starpu_codelet *)> name_of,
		       double cpu_relative_speedup);

	/* Adds a held task of family key, predicted at predicted_us (NaN when
	 * unknown), whose buffers sum to bytes.  The readying thread. */
	void add(BorrowedTask &task, const FamilyKey &key, double predicted_us, std::uint64_t bytes);

	/* Closes every open batch of sched_ctx, split over its CPU workers.
	 * Any thread; a worker calling from its scheduling operation wraps this
	 * in starpu_worker_relax_on/off (it may block on mutex_). */
	void request_flush(unsigned sched_ctx);

	/* The flusher thread: waits until batches are closed (returns true
	 * with them in closed) or stop() was called (returns false). */
	bool wait_for_closed_batches(std::vector<ClosedBatch> &closed);

	/* After StarPU's last task: nothing can be open then (buffered() says). */
	void stop();

	/* Held tasks in open batches, read without the lock: a hint. */
	std::size_t buffered() const { return buffered_.load(std::memory_order_relaxed); }

	/* Batches closed because their data reached a cap (statistics). */
	std::uint64_t working_set_closes() const { return working_set_closes_.load(std::memory_order_relaxed); }
	std::uint64_t memory_closes() const { return memory_closes_.load(std::memory_order_relaxed); }
	/* Families created so far (statistics). */
	std::size_t families() const;

private:
	using Buffers = BatchBuffers<Family *, BorrowedTask *>;

	Family *family_locked(const FamilyKey &key);
	/* Appends batch to closed, split into one part per CPU worker of its
	 * context when split (controller.h says when), and records the sizes of
	 * what it appended; mutex_ held. */
	void close_locked(Buffers::Batch &&batch, bool split, std::vector<ClosedBatch> &closed);

	const Targets targets_;
	const DataCaps caps_;
	const ContextLoad &load_;
	CodeletObservations &observations_;
	const std::function<std::string(const struct starpu_codelet *)> name_of_;
	const double cpu_relative_speedup_;

	mutable std::mutex mutex_;
	std::condition_variable flusher_wakeup_; /* notified after mutex_ is released */
	Buffers buffers_;
	std::map<FamilyKey, std::unique_ptr<Family>> families_;
	Family *last_family_ = nullptr; /* most tasks follow one of their own family */
	std::vector<ClosedBatch> closed_;
	std::bitset<STARPU_NMAX_SCHED_CTXS> flush_requested_;
	bool stopping_ = false;

	std::atomic<std::size_t> buffered_{0}; /* copy of buffers_.buffered(), written under mutex_ */
	std::atomic<std::uint64_t> working_set_closes_{0};
	std::atomic<std::uint64_t> memory_closes_{0};
};

} // namespace fusing

#endif
