/* How the submission window reads StarPU's access modes (doc/design.md,
 * section 12).  Pure; any thread. */
#ifndef STARPU_FUSING_SUBMISSION_ACCESS_MODES_H
#define STARPU_FUSING_SUBMISSION_ACCESS_MODES_H

#include <starpu.h>

namespace fusing {

/* An access that changes the handle: W, RW, and STARPU_REDUX, whose
 * contribution StarPU combines into the handle before any other access
 * reaches it.  Two accesses to a handle conflict when one changes it; the
 * order rule counts two reductions of a handle as conflicting too (they
 * stay in submission order, which StarPU does not need but allows). */
inline bool changes_data(enum starpu_data_access_mode mode)
{
	return (mode & (STARPU_W | STARPU_REDUX)) != 0;
}

inline bool reduces(enum starpu_data_access_mode mode)
{
	return (mode & STARPU_REDUX) != 0;
}

/* Whether StarPU's automatic plan switching for a task's access
 * (_starpu_task_submit, core/task.c) counts it as a write: W, and
 * STARPU_REDUX on 1.4 but not on 1.3. */
inline bool plan_switch_writes(enum starpu_data_access_mode mode)
{
#if STARPU_MAJOR_VERSION == 1 && STARPU_MINOR_VERSION == 3
	return (mode & STARPU_W) != 0;
#else
	return (mode & (STARPU_W | STARPU_REDUX)) != 0;
#endif
}

} // namespace fusing

#endif
