/* Collecting batches; see batch_collector.h. */
#include "ready/batch_collector.h"

#include <chrono>
#include <cmath>
#include <limits>

namespace fusing {
namespace {

double now_us()
{
	using namespace std::chrono;
	return duration<double, std::micro>(steady_clock::now().time_since_epoch()).count();
}

} // namespace

BatchCollector::BatchCollector(const Targets &targets, double max_delay_us, const DataCaps &caps, const ContextLoad &load,
			       CodeletObservations &observations,
			       std::function<std::string(const struct starpu_codelet *)> name_of, double cpu_relative_speedup)
	: targets_(targets), caps_(caps), load_(load), observations_(observations), name_of_(std::move(name_of)),
	  cpu_relative_speedup_(cpu_relative_speedup), buffers_(targets.max_members, max_delay_us)
{
}

Family *BatchCollector::family_locked(const FamilyKey &key)
{
	if (last_family_ && last_family_->key == key)
		return last_family_;
	auto it = families_.find(key);
	if (it == families_.end()) {
		it = families_.emplace(key, std::make_unique<Family>(key, name_of_(key.codelet))).first;
		it->second->cpu_relative_speedup = cpu_relative_speedup_;
	}
	last_family_ = it->second.get();
	return last_family_;
}

void BatchCollector::close_locked(Buffers::Batch &&batch, bool split, std::vector<ClosedBatch> &closed)
{
	batch.family->open_working_set.clear();
	batch.family->open_bytes_bound = 0;
	if (!split) {
		observations_.record_batch_members(batch.family->key.codelet, batch.members.size());
		closed.push_back(ClosedBatch{batch.family, std::move(batch.members)});
		return;
	}
	unsigned cpu_workers = load_.cpu_workers[batch.family->key.sched_ctx].load(std::memory_order_relaxed);
	auto member = batch.members.begin();
	for (std::size_t size : split_for_workers(batch.members.size(), cpu_workers)) {
		observations_.record_batch_members(batch.family->key.codelet, size);
		closed.push_back(ClosedBatch{batch.family, std::vector<BorrowedTask *>(member, member + size)});
		member += size;
	}
}

void BatchCollector::add(BorrowedTask &task, const FamilyKey &key, double predicted_us, std::uint64_t bytes)
{
	bool wake = false;
	{
		std::lock_guard<std::mutex> lock(mutex_);
		bool was_empty = buffers_.buffered() == 0;
		Family *family = family_locked(key);
		family->predicted_member_us.store(predicted_us, std::memory_order_relaxed);
		std::size_t limit = batch_size_for(predicted_us, targets_);
		/* A cap reached closes the batch with this member (limit 1). */
		family->open_bytes_bound += bytes;
		if (caps_.close_at_bytes > 0 && family->open_bytes_bound >= caps_.close_at_bytes) {
			limit = 1;
			memory_closes_.fetch_add(1, std::memory_order_relaxed);
		}
		if (caps_.working_set_bytes > 0) {
			family->open_working_set.add(task);
			if (family->open_working_set.bytes >= caps_.working_set_bytes) {
				limit = 1;
				working_set_closes_.fetch_add(1, std::memory_order_relaxed);
			}
		}
		auto full = buffers_.add(family, &task, now_us, limit);
		if (full) {
			close_locked(std::move(*full), std::isnan(predicted_us), closed_);
			wake = true;
		}
		/* The flusher sleeps without deadline while nothing is open. */
		wake = wake || was_empty;
		buffered_.store(buffers_.buffered(), std::memory_order_relaxed);
	}
	if (wake)
		flusher_wakeup_.notify_one();
}

void BatchCollector::request_flush(unsigned sched_ctx)
{
	/* Nothing buffered, nothing to close: the flusher is not woken.  A
	 * program waiting for all its tasks after every operation (NNTile,
	 * ~420 waits per training iteration) woke it each time, a futex call
	 * and often a preemption on a machine whose cores the program's thread
	 * and the workers fill.  A task buffered just after this read asks
	 * again itself when a worker waits (Engine::on_task_ready), and its
	 * batch's delay bounds its wait otherwise. */
	if (buffered() == 0)
		return;
	{
		std::lock_guard<std::mutex> lock(mutex_);
		flush_requested_.set(sched_ctx);
	}
	flusher_wakeup_.notify_one();
}

bool BatchCollector::wait_for_closed_batches(std::vector<ClosedBatch> &closed)
{
	std::unique_lock<std::mutex> lock(mutex_);
	for (;;) {
		closed = std::move(closed_);
		closed_.clear();
		if (flush_requested_.any()) {
			auto requested = flush_requested_;
			flush_requested_.reset();
			/* Workers ran out of work: one part per worker, so that none
			 * of them stays idle while another runs the whole batch. */
			for (auto &batch : buffers_.take_all([&](Family *f) { return requested.test(f->key.sched_ctx); }))
				close_locked(std::move(batch), true, closed);
		}
		for (auto &batch : buffers_.take_expired(now_us())) {
			bool unpredicted = std::isnan(batch.family->predicted_member_us.load(std::memory_order_relaxed));
			close_locked(std::move(batch), unpredicted, closed);
		}
		buffered_.store(buffers_.buffered(), std::memory_order_relaxed);

		if (!closed.empty())
			return true;
		if (stopping_)
			return false;
		double deadline_us = buffers_.next_deadline_us();
		if (deadline_us == std::numeric_limits<double>::infinity())
			flusher_wakeup_.wait(lock);
		else
			flusher_wakeup_.wait_for(lock, std::chrono::duration<double, std::micro>(deadline_us - now_us()));
	}
}

void BatchCollector::stop()
{
	{
		std::lock_guard<std::mutex> lock(mutex_);
		stopping_ = true;
	}
	flusher_wakeup_.notify_one();
}

std::size_t BatchCollector::families() const
{
	std::lock_guard<std::mutex> lock(mutex_);
	return families_.size();
}

} // namespace fusing
