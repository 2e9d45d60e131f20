/* Reduction methods while tasks are deferred (flush_barrier.rules "own").
 *
 * Setting a handle's methods is a barrier: deferred tasks reducing the
 * handle go to StarPU first, with the methods they were submitted under.
 * Tasks on the handle are deferred afterwards like any other, their
 * STARPU_REDUX accesses combined in their merged task (doc/design.md,
 * section 12, reductions).  The thread setting the methods.
 *
 * StarPU ends a reduction with tasks of its own (_starpu_data_end_reduction_mode,
 * datawizard/reduction.c).  StarPU 1.3 submits them through
 * starpu_task_submit, in the thread that made the next access to the
 * handle ready (a worker releasing the data, or a submitting thread), after
 * releasing the handle's lock ("Temporarily unlock the handle"); they reach
 * the window, which follows them as any task it does not defer.  1.4 calls
 * its own internal symbol. */
#include "build_config.h"
#include "core/starpu_functions.h"
#include "submission/window.h"
#include "starpu_fusing.h"

namespace {

/* caller: the call's return address (StarPU's own calls do not flush:
 * submission/starpu_code.h). */
void flush_window(const void *caller)
{
	if (fusing::SubmissionWindow *window = fusing::active_submission_window())
		fusing::flush_before_program_call(*window, caller);
}

fusing::StarpuFunction<void (*)(starpu_data_handle_t, struct starpu_codelet *, struct starpu_codelet *)>
	starpu_set_methods("starpu_data_set_reduction_methods");

} // namespace

extern "C" {

FUSING_PUBLIC void starpu_data_set_reduction_methods(starpu_data_handle_t handle, struct starpu_codelet *redux_cl,
						     struct starpu_codelet *init_cl)
{
	flush_window(__builtin_return_address(0));
	starpu_set_methods.get()(handle, redux_cl, init_cl);
}

#if HAVE_DECL_STARPU_DATA_SET_REDUCTION_METHODS_WITH_ARGS
FUSING_PUBLIC void starpu_data_set_reduction_methods_with_args(starpu_data_handle_t handle, struct starpu_codelet *redux_cl,
							       void *redux_cl_arg, struct starpu_codelet *init_cl, void *init_cl_arg)
{
	static fusing::StarpuFunction<void (*)(starpu_data_handle_t, struct starpu_codelet *, void *, struct starpu_codelet *, void *)>
		starpu_set_methods_with_args("starpu_data_set_reduction_methods_with_args");
	flush_window(__builtin_return_address(0));
	starpu_set_methods_with_args.get()(handle, redux_cl, redux_cl_arg, init_cl, init_cl_arg);
}
#endif

} // extern "C"
