/* What the flush barrier's entry points call (barrier_entry.S.inc): flush
 * the window unless this thread is inside StarPU's own code (a scheduling
 * callback, a StarPU call this library makes, or StarPU calling one of its
 * exported functions itself: submission/starpu_code.h), then hand back StarPU's
 * definition of the function.  Runs in whatever thread called the StarPU
 * function, before StarPU's code. */
#include "core/starpu_functions.h"
#include "submission/window.h"

#include <atomic>
#include <memory>

extern "C" {
/* Generated from flush_barrier.rules (classify_exports.sh --assembly). */
extern const char *const fusing_barrier_names[];
extern const unsigned fusing_barrier_count;

void *fusing_flush_before_starpu_call(unsigned index, const void *caller);
}

namespace {

std::atomic<void *> *starpu_definitions()
{
	/* One slot per entry point, filled on first use (a race between two
	 * first calls stores the same address twice). */
	static std::unique_ptr<std::atomic<void *>[]> slots(new std::atomic<void *>[fusing_barrier_count]());
	return slots.get();
}

} // namespace

void *fusing_flush_before_starpu_call(unsigned index, const void *caller)
{
	if (fusing::SubmissionWindow *window = fusing::active_submission_window())
		fusing::flush_before_program_call(*window, caller);
	std::atomic<void *> &slot = starpu_definitions()[index];
	void *function = slot.load(std::memory_order_acquire);
	if (!function) {
		function = fusing::starpu_own_function(fusing_barrier_names[index]);
		slot.store(function, std::memory_order_release);
	}
	return function;
}
