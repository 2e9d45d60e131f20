/* Whether STARPU_FUSING_ONLY/EXCLUDE let a codelet's tasks be fused,
 * remembered per codelet.
 *
 * Deciding means naming the codelet (CodeletNames: a mutex and a hash
 * lookup) and comparing the name with the lists; both submission hooks ask
 * for every task, which cost an excluded no-op chain ~400 instructions per
 * task (callgrind, 1 worker, eager base).  The answer is kept in a small
 * direct-mapped table of words packing the codelet's address with the
 * answer in its lowest bit (a codelet is at least pointer-aligned), so one
 * atomic load answers, without locks, on any thread.  Two codelets hashing
 * to one slot take turns; a slot holding another codelet means "decide
 * again". */
#ifndef STARPU_FUSING_CORE_CODELET_SELECTION_H
#define STARPU_FUSING_CORE_CODELET_SELECTION_H

#include <starpu.h>

#include <array>
#include <atomic>
#include <cstdint>

namespace fusing {

class CodeletSelection {
public:
	/* decide(cl) -> bool runs when the table does not hold cl's answer;
	 * it must give the same answer for the same codelet every time. */
	template <class Decide>
	bool selected(const struct starpu_codelet *cl, Decide decide)
	{
		const std::uintptr_t address = reinterpret_cast<std::uintptr_t>(cl);
		std::atomic<std::uintptr_t> &slot = slots_[(address >> 6) % slots_.size()];
		const std::uintptr_t known = slot.load(std::memory_order_relaxed);
		if ((known & ~selected_bit) == address)
			return (known & selected_bit) != 0;
		const bool answer = decide(cl);
		slot.store(address | (answer ? selected_bit : 0), std::memory_order_relaxed);
		return answer;
	}

private:
	static constexpr std::uintptr_t selected_bit = 1;
	static_assert(alignof(struct starpu_codelet) > selected_bit, "the lowest bit of a codelet's address is free");
	std::array<std::atomic<std::uintptr_t>, 64> slots_{};
};

} // namespace fusing

#endif
