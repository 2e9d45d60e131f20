/* starpu_task_submit, defined by the preloaded library: while
 * submission-time fusion runs, every task the program submits goes through
 * the window (submission/window.h); otherwise straight to StarPU's.
 * starpu_task_insert, starpu_insert_task, starpu_task_submit_to_ctx and
 * starpu_mpi_task_insert all reach this symbol (doc/design.md, section 12). */
#include "core/starpu_functions.h"
#include "submission/window.h"
#include "ready/merged_task.h"
#include "starpu_fusing.h"

extern "C" FUSING_PUBLIC int starpu_task_submit(struct starpu_task *task)
{
	fusing::SubmissionWindow *window = fusing::active_submission_window();
	/* Ready-time batches have sequential consistency off: they enter no
	 * dependency graph and need not wait for the window. */
	if (!window || fusing::InsideStarpuScope::active() || fusing::is_merged_task(task))
		return fusing::starpu_own_task_submit(task);
	return window->submit(task);
}
