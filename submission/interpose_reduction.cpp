/* Reduction methods while tasks are deferred (flush_barrier.rules "own").
 *
 * StarPU ends a reduction with tasks of its own: StarPU 1.3 submits them
 * through starpu_task_submit from the worker that satisfied the next
 * access's dependencies, holding the handle's lock
 * (_starpu_data_end_reduction_mode, datawizard/reduction.c).  A deferred
 * task on that handle would conflict with them, so that worker would flush
 * the window and submit a merged task on the handle whose lock it holds.
 * Tasks on a handle given reduction methods are therefore never deferred
 * (SubmissionWindow::exclude_from_deferral), as tasks on partitioned data
 * are not.  Setting the methods is a barrier, as before: deferred tasks on
 * the handle go to StarPU first.  The thread setting the methods. */
#include "build_config.h"
#include "core/starpu_functions.h"
#include "submission/window.h"
#include "starpu_fusing.h"

namespace {

/* caller: the call's return address (StarPU's own calls do not flush:
 * starpu_code.h).  The window to mark the handle in, or null. */
fusing::SubmissionWindow *flush_window(const void *caller)
{
	fusing::SubmissionWindow *window = fusing::active_submission_window();
	if (window)
		fusing::flush_before_program_call(*window, caller);
	return window;
}

fusing::StarpuFunction<void (*)(starpu_data_handle_t, struct starpu_codelet *, struct starpu_codelet *)>
	starpu_set_methods("starpu_data_set_reduction_methods");

} // namespace

extern "C" {

FUSING_PUBLIC void starpu_data_set_reduction_methods(starpu_data_handle_t handle, struct starpu_codelet *redux_cl,
						     struct starpu_codelet *init_cl)
{
	fusing::SubmissionWindow *window = flush_window(__builtin_return_address(0));
	starpu_set_methods.get()(handle, redux_cl, init_cl);
	if (window)
		window->exclude_from_deferral(handle);
}

#if HAVE_DECL_STARPU_DATA_SET_REDUCTION_METHODS_WITH_ARGS
FUSING_PUBLIC void starpu_data_set_reduction_methods_with_args(starpu_data_handle_t handle, struct starpu_codelet *redux_cl,
							       void *redux_cl_arg, struct starpu_codelet *init_cl, void *init_cl_arg)
{
	static fusing::StarpuFunction<void (*)(starpu_data_handle_t, struct starpu_codelet *, void *, struct starpu_codelet *, void *)>
		starpu_set_methods_with_args("starpu_data_set_reduction_methods_with_args");
	fusing::SubmissionWindow *window = flush_window(__builtin_return_address(0));
	starpu_set_methods_with_args.get()(handle, redux_cl, redux_cl_arg, init_cl, init_cl_arg);
	if (window)
		window->exclude_from_deferral(handle);
}
#endif

} // extern "C"
