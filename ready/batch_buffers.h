/* Open batches, one per family, and the rules that close them.
 *
 * This is the pure part of the fusion engine: no StarPU, no threads, no
 * clock.  The engine (engine.cpp) owns one BatchBuffers and calls it with its
 * lock held; the unit tests (tests/test_batch_buffers.cpp) drive it with plain
 * integers.
 *
 * A batch closes when
 *   - it reaches the size limit given to add() (add() returns it at once),
 *   - it has been open for max_delay_us (take_expired()),
 *   - the engine decides every open batch must go, because a worker is out
 *     of work or the application waits (take_all()). */
#ifndef STARPU_FUSING_READY_BATCH_BUFFERS_H
#define STARPU_FUSING_READY_BATCH_BUFFERS_H

#include <cstddef>
#include <limits>
#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace fusing {

template <typename Family, typename Member>
class BatchBuffers {
public:
	struct Batch {
		Family family;
		std::vector<Member> members;
	};

	BatchBuffers(std::size_t max_members, double max_delay_us)
		: max_members_(max_members), max_delay_us_(max_delay_us) {}

	/* Appends member to its family's open batch, opening one at time
	 * now_us() if none (the clock is read only then).  Returns the batch if
	 * this made it reach limit members (at most max_members). */
	template <typename Clock>
	std::optional<Batch> add(const Family &family, Member member, Clock now_us, std::size_t limit)
	{
		Open &open = open_[family];
		if (open.members.empty())
			open.opened_at_us = now_us();
		open.members.push_back(std::move(member));
		buffered_++;
		if (open.members.size() < limit && open.members.size() < max_members_)
			return std::nullopt;
		return close(open_.find(family));
	}

	/* Closes and returns every batch open for max_delay_us or longer. */
	std::vector<Batch> take_expired(double now_us)
	{
		std::vector<Batch> closed;
		for (auto it = open_.begin(); it != open_.end();) {
			auto next = std::next(it);
			if (now_us - it->second.opened_at_us >= max_delay_us_)
				closed.push_back(close(it));
			it = next;
		}
		return closed;
	}

	/* Closes and returns every open batch whose family satisfies select. */
	template <typename Select>
	std::vector<Batch> take_all(Select select)
	{
		std::vector<Batch> closed;
		for (auto it = open_.begin(); it != open_.end();) {
			auto next = std::next(it);
			if (select(it->first))
				closed.push_back(close(it));
			it = next;
		}
		return closed;
	}

	/* Time at which the oldest open batch expires; +infinity when none. */
	double next_deadline_us() const
	{
		double deadline = std::numeric_limits<double>::infinity();
		for (const auto &entry : open_)
			if (entry.second.opened_at_us + max_delay_us_ < deadline)
				deadline = entry.second.opened_at_us + max_delay_us_;
		return deadline;
	}

	/* Members waiting in open batches. */
	std::size_t buffered() const { return buffered_; }

private:
	struct Open {
		std::vector<Member> members;
		double opened_at_us = 0.0;
	};

	/* Closed batches leave the map: the flusher scans it on every wake-up,
	 * and a program can have many families that each batch only now and
	 * then. */
	Batch close(typename std::map<Family, Open>::iterator it)
	{
		Batch batch{it->first, std::move(it->second.members)};
		buffered_ -= batch.members.size();
		open_.erase(it);
		return batch;
	}

	std::size_t max_members_;
	double max_delay_us_;
	std::map<Family, Open> open_;
	std::size_t buffered_ = 0;
};

} // namespace fusing

#endif
