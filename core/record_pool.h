/* Records of one type, made in chunks and used again: taking one allocates
 * only when every record made so far is in use.  For records that come and
 * go with each task (held tasks' records, held_data.h).
 *
 * Not thread-safe: the owner's lock guards it.  A record given back keeps
 * whatever it held; the taker sets it. */
#ifndef STARPU_FUSING_CORE_RECORD_POOL_H
#define STARPU_FUSING_CORE_RECORD_POOL_H

#include <deque>
#include <vector>

namespace fusing {

template <typename Record>
class RecordPool {
public:
	Record *take()
	{
		if (spare_.empty()) {
			made_.emplace_back(); /* a deque keeps the others in place */
			return &made_.back();
		}
		Record *record = spare_.back();
		spare_.pop_back();
		return record;
	}
	void give(Record *record) { spare_.push_back(record); }

private:
	std::deque<Record> made_;
	std::vector<Record *> spare_;
};

} // namespace fusing

#endif
