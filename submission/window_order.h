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
 * accesses conflict when one of them writes and they touch the same handle,
 * or handles of one partition tree where one is the other's ancestor (their
 * data overlap; sibling children do not).
 *
 * Partition calls the program submits are placed too, between groups
 * (place_call): after the groups holding a task they conflict with, before
 * the group of any task placed later that conflicts with them.  StarPU then
 * sees each call, as each merged task, after everything it conflicts with
 * that the program submitted before it.
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
#include <functional> /* std::hash */
#include <utility>
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
	/* Where data is partitioned (doc/design.md, section 12): sets parent to
	 * the handle handle is a child of and returns true, false for a handle
	 * that is no one's child.  An access to a handle then conflicts with
	 * accesses to its ancestors and descendants as to itself (their data
	 * overlap), not with accesses to its siblings.  A handle's children
	 * must all come from one plan (the caller's rule: siblings of two plans
	 * overlap).  Without it, handles are unrelated.  A plain function and
	 * its context, not a std::function: it is called for every access
	 * placed or checked, once per ancestor. */
	using ParentOf = bool (*)(const void *context, const Handle &handle, Handle &parent);
	void set_parent_of(ParentOf parent_of, const void *context)
	{
		parent_of_ = parent_of;
		parent_of_context_ = context;
	}

	/* The lowest group number a task with these accesses may join: every
	 * group from there on, among those still open, is allowed (0 when
	 * nothing placed conflicts with it). */
	std::size_t first_allowed_group(const std::vector<Access<Handle>> &accesses) const
	{
		const long latest = latest_conflicting_group(accesses);
		return latest < 0 ? 0 : static_cast<std::size_t>(latest);
	}

	/* The highest group holding an access that conflicts with one of
	 * these, or a call placed before it; -1 when none does. */
	long latest_conflicting_group(const std::vector<Access<Handle>> &accesses) const
	{
		return conflicts(accesses).any;
	}

	/* The highest group holding a task's access to handle, -1 when none
	 * does. */
	long last_access_group(const Handle &handle) const
	{
		const Last *last = find(handle);
		return last ? last->own.task_any : -1;
	}

	/* Opens a group for a task with these accesses; returns its number. */
	std::size_t open(const std::vector<Access<Handle>> &accesses)
	{
		std::size_t group = opened_++;
		record(group, accesses, true);
		return group;
	}

	/* Places a task in group, which must be allowed
	 * (first_allowed_group(accesses) <= group < groups_opened()).
	 * Returns false, placing nothing, when it is not. */
	bool join(std::size_t group, const std::vector<Access<Handle>> &accesses)
	{
		if (group >= opened_ || group < first_allowed_group(accesses))
			return false;
		record(group, accesses, true);
		return true;
	}

	/* Calls that are not tasks (a partition or unpartition the program
	 * submits) run just before a group's tasks: position p means after
	 * every group below p and the calls placed before p so far, before
	 * group p's tasks (p == groups_opened(): before the next group, or
	 * at the end of the window).  The lowest position a call with these
	 * accesses may take: after the groups holding a conflicting task, and
	 * no earlier than a conflicting call. */
	std::size_t call_position(const std::vector<Access<Handle>> &accesses) const
	{
		const Conflicts found = conflicts(accesses);
		const long after_tasks = found.task + 1;
		const long position = after_tasks > found.any ? after_tasks : found.any;
		return position < 0 ? 0 : static_cast<std::size_t>(position);
	}

	/* Places a call at position (call_position(accesses) <= position <=
	 * groups_opened()); returns false, placing nothing, otherwise.  A task
	 * conflicting with it may then join group position or a later one. */
	bool place_call(std::size_t position, const std::vector<Access<Handle>> &accesses)
	{
		if (position > opened_ || position < call_position(accesses))
			return false;
		record(position, accesses, false);
		return true;
	}

	std::size_t groups_opened() const { return opened_; }

	/* After every group and call so far was handed to StarPU: StarPU
	 * orders what follows after them by itself, so the window starts
	 * afresh (group numbers start again at 0).  O(1): entries of older
	 * windows are told apart by their window number. */
	void clear()
	{
		opened_ = 0;
		used_ = 0;
		window_++;
	}

private:
	/* Highest positions holding accesses: of tasks and calls together
	 * (writer, any), of tasks alone (task_writer, task_any). */
	struct Highest {
		long writer = -1;
		long any = -1;
		long task_writer = -1;
		long task_any = -1;

		void note(long position, bool writes, bool task)
		{
			if (position > any)
				any = position;
			if (writes && position > writer)
				writer = position;
			if (task && position > task_any)
				task_any = position;
			if (task && writes && position > task_writer)
				task_writer = position;
		}
	};

	/* Per handle, in an open-addressing table (a window is cleared often;
	 * a node-based map would allocate every handle again each time). */
	struct Last {
		Handle handle{};
		std::uint64_t window = 0; /* the entry is live when window == window_ */
		Highest own;              /* accesses to the handle itself */
		Highest subtree;          /* to it or any of its descendants */
	};

	struct Conflicts {
		long any = -1;  /* highest position of a conflicting task or call */
		long task = -1; /* highest group of a conflicting task */

		void note(const Highest &highest, bool writes)
		{
			/* A read conflicts with writes, a write with every access. */
			const long any_conflict = writes ? highest.any : highest.writer;
			const long task_conflict = writes ? highest.task_any : highest.task_writer;
			if (any_conflict > any)
				any = any_conflict;
			if (task_conflict > task)
				task = task_conflict;
		}
	};

	Conflicts conflicts(const std::vector<Access<Handle>> &accesses) const
	{
		Conflicts found;
		for (const Access<Handle> &access : accesses) {
			if (const Last *last = find(access.handle))
				found.note(last->subtree, access.writes);
			if (!parent_of_)
				continue;
			Handle ancestor;
			for (Handle child = access.handle; parent_of_(parent_of_context_, child, ancestor); child = ancestor)
				if (const Last *last = find(ancestor))
					found.note(last->own, access.writes);
		}
		return found;
	}

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
				last = Last{handle, window_, Highest{}, Highest{}};
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
				moved.own = last.own;
				moved.subtree = last.subtree;
			}
	}

	void record(std::size_t position, const std::vector<Access<Handle>> &accesses, bool task)
	{
		const long p = static_cast<long>(position);
		for (const Access<Handle> &access : accesses) {
			Last &last = find_or_add(access.handle);
			last.own.note(p, access.writes, task);
			last.subtree.note(p, access.writes, task);
			if (!parent_of_)
				continue;
			Handle ancestor;
			for (Handle child = access.handle; parent_of_(parent_of_context_, child, ancestor); child = ancestor)
				find_or_add(ancestor).subtree.note(p, access.writes, task);
		}
	}

	ParentOf parent_of_ = nullptr;
	const void *parent_of_context_ = nullptr;
	std::vector<Last> slots_;  /* size a power of two, at most half used */
	std::size_t used_ = 0;     /* live entries */
	std::uint64_t window_ = 1; /* slots_ start at window 0: none live */
	std::size_t opened_ = 0;
};

} // namespace fusing

#endif
