/* Members StarPU does not count; see uncounted_members.h. */
#include "submission/uncounted_members.h"

namespace fusing {

void UncountedMembers::add(unsigned ctx, std::size_t members)
{
	if (members <= 1)
		return;
	per_context_[ctx].fetch_add(members - 1, std::memory_order_seq_cst);
	total_.fetch_add(members - 1, std::memory_order_seq_cst);
}

void UncountedMembers::remove(unsigned ctx, std::size_t members)
{
	if (members <= 1)
		return;
	per_context_[ctx].fetch_sub(members - 1, std::memory_order_seq_cst);
	total_.fetch_sub(members - 1, std::memory_order_seq_cst);
	/* Either the waiter counted itself before the decrement and is
	 * notified (under mutex_, so not between its test and its wait), or
	 * it counts itself after it and its test sees the decrement. */
	if (waiters_.load(std::memory_order_seq_cst) != 0) {
		{ std::lock_guard<std::mutex> lock(mutex_); }
		ended_.notify_all();
	}
}

void UncountedMembers::wait_until_at_most(bool every_context, unsigned ctx, std::size_t n)
{
	auto count = [&] { return every_context ? total() : in(ctx); };
	if (count() <= n)
		return;
	std::unique_lock<std::mutex> lock(mutex_);
	waiters_.fetch_add(1, std::memory_order_seq_cst);
	ended_.wait(lock, [&] { return count() <= n; });
	waiters_.fetch_sub(1, std::memory_order_seq_cst);
}

} // namespace fusing
