/* Invalidations while tasks are deferred (part of the flush barrier,
 * flush_barrier.rules "own").
 *
 * starpu_data_invalidate_submit (and 1.4's starpu_data_deinitialize_submit)
 * is a barrier: deferred tasks on the handle reach StarPU first.  It also
 * leaves a handle without a value until its next writer has written, and
 * StarPU's own requests on the handle meanwhile must queue behind that
 * writer: StarPU takes a ready task's data locks as soon as it is ready
 * (_starpu_submit_job_enforce_data_deps), in the thread that released it,
 * so under StarPU alone the writer holds the handle from the moment the
 * invalidation ends.  A writer still in the window is not there yet: the
 * idle prefetch that starpu_data_wont_use makes after its release
 * (_starpu_data_wont_use, datawizard/user_interactions.c) then found no
 * valid copy and aborted in _starpu_fetch_data_on_node ("no handle
 * initialization function"; `upd(h); wont_use(h); invalidate_submit(h);
 * set(h); acc(h)`: 2 aborts in 10 runs over lws on 1.4.12 with
 * STARPU_FUSING_HOLD=always, 0 under lws alone).  So the next task on the
 * handle goes to StarPU as it is submitted
 * (SubmissionWindow::note_invalidation), and is not held at readiness
 * either (sched/engine.cpp, on_task_ready).  The invalidating thread. */
#include "build_config.h"
#include "core/starpu_functions.h"
#include "submission/starpu_code.h"
#include "submission/window.h"
#include "starpu_fusing.h"

namespace {

/* caller: the call's return address (StarPU's own calls pass: submission/starpu_code.h). */
template <typename Invalidate>
void invalidate(starpu_data_handle_t handle, const void *caller, Invalidate starpu_invalidate)
{
	fusing::SubmissionWindow *window = fusing::active_submission_window();
	if (window && !fusing::InsideStarpuScope::active() && !fusing::called_from_starpu(caller)) {
		window->flush();
		window->note_invalidation(handle);
	}
	starpu_invalidate();
}

fusing::StarpuFunction<void (*)(starpu_data_handle_t)> starpu_invalidate_submit("starpu_data_invalidate_submit");

} // namespace

extern "C" {

FUSING_PUBLIC void starpu_data_invalidate_submit(starpu_data_handle_t handle)
{
	invalidate(handle, __builtin_return_address(0), [&] { starpu_invalidate_submit.get()(handle); });
}

#if HAVE_DECL_STARPU_DATA_DEINITIALIZE_SUBMIT
FUSING_PUBLIC void starpu_data_deinitialize_submit(starpu_data_handle_t handle)
{
	static fusing::StarpuFunction<void (*)(starpu_data_handle_t)> starpu_deinitialize_submit("starpu_data_deinitialize_submit");
	invalidate(handle, __builtin_return_address(0), [&] { starpu_deinitialize_submit.get()(handle); });
}
#endif

} // extern "C"
