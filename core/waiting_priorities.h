/* The priorities of the ready work: tasks pushed to the base policy or held
 * at readiness for a batch that have not started, and tasks running
 * (doc/design.md, section 6, priorities).
 *
 * StarPU's promise as far as the base honours priorities: a task of higher
 * priority than the ready work starts before it.  A task deferred into the
 * window or held for a batch waits for the group or batch to close, and
 * a merged task runs its members one after another: 400 tasks of 50 us at
 * the lowest priority, then one at the highest, saw 78 to 248 of the low
 * tasks start before it over lws (2 under lws alone;
 * promises_high_priority_task_overtakes_queued_work).  So a task outranking
 * ready work is neither deferred nor held, and a merged task running
 * members hands the rest to a continuation when a task of higher priority
 * waits (submission/merged_group.cpp, ready/merged_task.cpp).
 *
 * Priorities from -64 to 64 are told apart, those beyond compare as -64 or
 * 64 (StarPU's default range is -5 to 5).  Any thread: the policy's
 * push_task and pre_exec_hook, a readying thread, a merged task's worker.
 * Counts and hints are atomics, no lock. */
#ifndef STARPU_FUSING_CORE_WAITING_PRIORITIES_H
#define STARPU_FUSING_CORE_WAITING_PRIORITIES_H

#include <atomic>

namespace fusing {

/* 0 for priority 0, else ±(1 + floor(log2 |priority|)): at most 64 buckets
 * over the whole int range, and priorities 2^k .. 2^(k+1)-1 share one.
 * Tasks of one bucket may share a batch or a group, whose merged task runs
 * at the highest of their priorities.  Pure. */
inline int priority_bucket(int priority)
{
	if (priority == 0)
		return 0;
	/* |INT_MIN| does not fit an int: widen first. */
	long long magnitude = priority < 0 ? -static_cast<long long>(priority) : priority;
	int bucket = 1;
	while (magnitude >>= 1)
		bucket++;
	return priority < 0 ? -bucket : bucket;
}

/* How many tasks of each priority. */
class PriorityCounts {
public:
	void add(int priority)
	{
		const int level = clamp(priority);
		count_[level - kLowest].fetch_add(1, std::memory_order_seq_cst);
		int highest = highest_hint_.load(std::memory_order_relaxed);
		while (level > highest && !highest_hint_.compare_exchange_weak(highest, level, std::memory_order_seq_cst))
			;
		int lowest = lowest_hint_.load(std::memory_order_relaxed);
		while (level < lowest && !lowest_hint_.compare_exchange_weak(lowest, level, std::memory_order_seq_cst))
			;
	}
	void remove(int priority) { count_[clamp(priority) - kLowest].fetch_sub(1, std::memory_order_seq_cst); }
	/* Some task counted has a priority above (below) priority. */
	bool any_above(int priority) { return any_beyond(clamp(priority), +1); }
	bool any_below(int priority) { return any_beyond(clamp(priority), -1); }

private:
	static constexpr int kLowest = -64, kHighest = 64;
	static int clamp(int priority) { return priority < kLowest ? kLowest : priority > kHighest ? kHighest : priority; }
	/* The highest (lowest) level ever added bounds the levels worth
	 * looking at: a program using priorities from -5 to 5 looks at ten at
	 * most, one of a single priority at none.  Never brought back: a hint
	 * lowered after a look could hide a task added during it. */
	bool any_beyond(int level, int direction)
	{
		const int bound = (direction > 0 ? highest_hint_ : lowest_hint_).load(std::memory_order_seq_cst);
		for (int l = level + direction; (bound - l) * direction >= 0; l += direction)
			if (count_[l - kLowest].load(std::memory_order_seq_cst) > 0)
				return true;
		return false;
	}

	std::atomic<long> count_[kHighest - kLowest + 1] = {};
	std::atomic<int> highest_hint_{kLowest - 1}; /* none added yet */
	std::atomic<int> lowest_hint_{kHighest + 1};
};

/* The engine's: what a merged task asks before each member, and what a task
 * asks before it is deferred or held. */
struct ReadyWorkPriorities {
	PriorityCounts waiting; /* pushed to the base or held for a batch, not started */
	PriorityCounts running; /* started, not ended */
	/* A task of this priority, deferred or held, would wait while work of
	 * lower priority runs or starts first. */
	bool lower_priority_work(int priority) { return waiting.any_below(priority) || running.any_below(priority); }
	/* A merged task of this priority running members should let a worker
	 * take what outranks it. */
	bool higher_priority_waits(int priority) { return waiting.any_above(priority); }
};

} // namespace fusing

#endif
