/* What the submission window's source files share (window.h): window.cpp,
 * window_placement.cpp and window_flush.cpp.  Not installed; nothing
 * outside SubmissionWindow includes it. */
#ifndef STARPU_FUSING_SUBMISSION_WINDOW_INTERNAL_H
#define STARPU_FUSING_SUBMISSION_WINDOW_INTERNAL_H

namespace fusing {

/* See deferrable() (window.cpp): about ten times what StarPU spends on one
 * task of its own (measured: ~10,000 instructions, a few µs; doc/notebook.md,
 * instructions per task).  Also what makes a group worth running now while
 * a worker waits (place, flush_worth_running_locked,
 * holds_unrequested_work). */
constexpr double kWorthRunningAlone_us = 50.0;

} // namespace fusing

#endif
