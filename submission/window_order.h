/* Grouping a window of deferred tasks into merged tasks without reordering
 * conflicting accesses: the order rule of submission-time fusion
 * (doc/design.md, section 12, with its proof).
 *
 * Tasks are placed one at a time, in submission order.  Groups are numbered
 * in the order they were opened, and are handed to StarPU in that order; a
 * group's members run in the order they were placed.  StarPU then derives
 * each merged task's dependencies from its data, in submission order.  That
 * is the same as running the tasks one by one if, for any two conflicting
 * tasks A placed before B, A's group is B's group or was opened before it.
 * The rule that guarantees it: a task may join group G only if none of its
 * accesses conflicts with an access of a group opened after G.  Two
 * accesses conflict when they touch the same handle and one of them writes.
 *
 * Which allowed group a task joins is the caller's choice (allowed_groups):
 * a group of its own codelet for a batched kernel, or the group of the task
 * it consumes from (vertical fusion).
 *
 * Pure: no StarPU, no clock, no threads (the window's lock is the caller's);
 * Handle is any hashable key (tests use ints).  tests/test_window_order.cpp. */
#ifndef STARPU_FUSING_SUBMISSION_WINDOW_ORDER_H
#define STARPU_FUSING_SUBMISSION_WINDOW_ORDER_H

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace fusing {

template <typename Handle>
struct Access {
	Handle handle;
	bool writes; /* W, RW (and anything else that is not a plain read) */
};

template <typename Handle>
class WindowOrder {
public:
	/* The lowest group number a task with these accesses may join: every
	 * group from there on, among those still open, is allowed (0 when
	 * nothing placed conflicts with it). */
	std::size_t first_allowed_group(const std::vector<Access<Handle>> &accesses) const
	{
		const long latest = latest_conflicting_group(accesses);
		return latest < 0 ? 0 : static_cast<std::size_t>(latest);
	}

	/* The highest group holding an access that conflicts with one of
	 * these, -1 when none does. */
	long latest_conflicting_group(const std::vector<Access<Handle>> &accesses) const
	{
		long latest = -1;
		for (const Access<Handle> &access : accesses) {
			const Last *last = find(access.handle);
			if (!last)
				continue;
			/* A read conflicts with writes, a write with every access. */
			const long conflicting = access.writes ? last->any : last->writer;
			if (conflicting > latest)
				latest = conflicting;
		}
		return latest;
	}

	/* The highest group holding an access of handle, -1 when none does. */
	long last_access_group(const Handle &handle) const
	{
		const Last *last = find(handle);
		return last ? last->any : -1;
	}

	/* Opens a group for a task with these accesses; returns its number. */
	std::size_t open(const std::vector<Access<Handle>> &accesses)
	{
		std::size_t group = opened_++;
		record(group, accesses);
		return group;
	}

	/* Places a task in group, which must be allowed
	 * (first_allowed_group(accesses) <= group < groups_opened()).
	 * Returns false, placing nothing, when it is not. */
	bool join(std::size_t group, const std::vector<Access<Handle>> &accesses)
	{
		if (group >= opened_ || group < first_allowed_group(accesses))
			return false;
		record(group, accesses);
		return true;
	}

	std::size_t groups_opened() const { return opened_; }
	/* Handles with an access recorded since the last clear(). */
	std::size_t handles_recorded() const { return used_; }

	/* After every group so far was handed to StarPU: StarPU orders what
	 * follows after them by itself, so the window starts afresh (group
	 * numbers start again at 0).  O(1): entries of older windows are told
	 * apart by their window number. */
	void clear()
	{
		opened_ = 0;
		used_ = 0;
		window_++;
	}

private:
	/* Per handle, in an open-addressing table (a window is cleared often;
	 * a node-based map would allocate every handle again each time). */
	struct Last {
		Handle handle{};
		std::uint64_t window = 0; /* the entry is live when window == window_ */
		long writer = -1;         /* highest group holding a write of the handle */
		long any = -1;            /* highest group holding any access of it */
	};

	std::size_t slot_of(const Handle &handle) const
	{
		return (std::hash<Handle>()(handle) * 0x9E3779B97F4A7C15ull >> 7) & (slots_.size() - 1);
	}

	const Last *find(const Handle &handle) const
	{
		if (slots_.empty())
			return nullptr;
		for (std::size_t slot = slot_of(handle);; slot = (slot + 1) & (slots_.size() - 1)) {
			const Last &last = slots_[slot];
			if (last.window != window_)
				return nullptr;
			if (last.handle == handle)
				return &last;
		}
	}

	Last &find_or_add(const Handle &handle)
	{
		if (2 * (used_ + 1) > slots_.size())
			grow();
		for (std::size_t slot = slot_of(handle);; slot = (slot + 1) & (slots_.size() - 1)) {
			Last &last = slots_[slot];
			if (last.window != window_) {
				last = Last{handle, window_, -1, -1};
				used_++;
				return last;
			}
			if (last.handle == handle)
				return last;
		}
	}

	void grow()
	{
		std::vector<Last> old;
		old.swap(slots_);
		slots_.assign(old.empty() ? 64 : 2 * old.size(), Last{});
		used_ = 0;
		const std::uint64_t current = window_;
		for (const Last &last : old)
			if (last.window == current) {
				Last &moved = find_or_add(last.handle);
				moved.writer = last.writer;
				moved.any = last.any;
			}
	}

	void record(std::size_t group, const std::vector<Access<Handle>> &accesses)
	{
		const long g = static_cast<long>(group);
		for (const Access<Handle> &access : accesses) {
			Last &last = find_or_add(access.handle);
			if (g > last.any)
				last.any = g;
			if (access.writes && g > last.writer)
				last.writer = g;
		}
	}

	std::vector<Last> slots_;  /* size a power of two, at most half used */
	std::size_t used_ = 0;     /* live entries */
	std::uint64_t window_ = 1; /* slots_ start at window 0: none live */
	std::size_t opened_ = 0;
};

} // namespace fusing

#endif
