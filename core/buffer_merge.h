/* Merging the members' buffers into the proxy's buffer list.
 *
 * Members of a batch often share a handle (weights read by every task of a
 * layer).  Giving StarPU each handle once spares it sorting and locking the
 * same handle again and again (measured: with 64 readers of one handle, the
 * sort alone cost ~150 instructions per member).  Two members of one batch
 * never conflict on a handle: a task that writes a handle another member
 * uses depends on that member's termination, which waits for the batch, so
 * it cannot be ready in the same batch.  Merged modes are therefore R with R,
 * or a handle used twice by the same member; modes are OR-ed either way.
 *
 * Pure, no StarPU calls: Handle is any pointer-like key (tests use ints). */
#ifndef STARPU_FUSING_CORE_BUFFER_MERGE_H
#define STARPU_FUSING_CORE_BUFFER_MERGE_H

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace fusing {

template <typename Handle, typename Mode>
struct MergedBuffers {
	std::vector<Handle> handles;        /* each handle once, in first-use order */
	std::vector<Mode> modes;            /* OR of the modes it is used with */
	std::vector<unsigned> index_of_use; /* use i -> position in handles */
};

/* uses: the members' handles and modes laid end to end. */
template <typename Handle, typename Mode>
MergedBuffers<Handle, Mode> merge_buffers(const std::vector<Handle> &use_handles, const std::vector<Mode> &use_modes)
{
	MergedBuffers<Handle, Mode> merged;
	const std::size_t uses = use_handles.size();
	merged.index_of_use.resize(uses);
	/* Open addressing, at most half full; slot holds position + 1. */
	std::size_t capacity = 16;
	while (capacity < 2 * uses)
		capacity *= 2;
	std::vector<unsigned> slots(capacity, 0);
	for (std::size_t i = 0; i < uses; i++) {
		std::size_t slot = std::hash<Handle>()(use_handles[i]) * 0x9E3779B97F4A7C15ull >> 7 & (capacity - 1);
		while (slots[slot] != 0 && merged.handles[slots[slot] - 1] != use_handles[i])
			slot = (slot + 1) & (capacity - 1);
		if (slots[slot] == 0) {
			merged.handles.push_back(use_handles[i]);
			merged.modes.push_back(use_modes[i]);
			slots[slot] = static_cast<unsigned>(merged.handles.size());
		} else {
			Mode &mode = merged.modes[slots[slot] - 1];
			mode = static_cast<Mode>(mode | use_modes[i]);
		}
		merged.index_of_use[i] = slots[slot] - 1;
	}
	return merged;
}

} // namespace fusing

#endif
