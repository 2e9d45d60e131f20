/* The program's acquisitions and releases of data (part of the flush
 * barrier, flush_barrier.rules "own").
 *
 * An acquisition observes the data of deferred tasks: the window is flushed
 * first.  From the call until the matching release the handle is held
 * (submission/held_data.h): no task conflicting with it is deferred, so no merged task
 * makes other tasks wait for the program's release.  StarPU-MPI acquires the
 * data it sends and receives through these functions too.
 *
 * StarPU's own calls (starpu_data_acquire calling starpu_data_acquire_on_node
 * on 1.3, starpu_data_release calling starpu_data_release_on_node,
 * starpu_data_invalidate_submit acquiring what it invalidates) hold
 * nothing: the program's outer call counted, or held nothing.  Any
 * acquisition may make StarPU switch plans, which the window follows
 * whoever calls (follow_switch_of_other_acquisition).  The acquiring or releasing
 * thread: the program's, a callback's (an acquisition's callback releases),
 * or StarPU-MPI's. */
#include "submission/starpu_code.h"
#include "core/starpu_functions.h"
#include "submission/window.h"
#include "starpu_fusing.h"

#include <starpu_config.h>

namespace {

/* The window, when the call at caller is the program's: not StarPU's, nor
 * StarPU forwarding one of these calls to another (submission/starpu_code.h).  Without
 * the second test, under an -O1 build with ASan, StarPU's automatic
 * unpartition (its invalidation of the children,
 * _starpu_data_invalidate_submit_noplan, calling
 * starpu_data_acquire_on_node_cb, which forwards) reached the window as
 * the program's acquisition of each child, never released: no later task
 * on the children was deferred. */
fusing::SubmissionWindow *window_for_program_call(const void *caller)
{
	fusing::SubmissionWindow *window = fusing::active_submission_window();
	if (!window || fusing::InsideStarpuScope::active() || fusing::called_from_starpu(caller) ||
	    fusing::called_from_this_library(caller))
		return nullptr;
	return window;
}

/* An acquisition that is not the program's still switches plans (submission/window.h,
 * follow_acquisition_switch): StarPU's starpu_data_invalidate_submit
 * acquires the data it invalidates through these functions, and a
 * partitioned handle the program invalidated was unpartitioned behind the
 * window, which deferred the next task on a child as if still partitioned
 * (test api_plan_switched_for_an_invalidation_stays_followed: StarPU
 * asserted "Handle ... is not initialized").  Not from StarPU's scheduling
 * code, which never acquires data without STARPU_NOPLAN anyway. */
void follow_switch_of_other_acquisition(starpu_data_handle_t handle, enum starpu_data_access_mode mode)
{
	fusing::SubmissionWindow *window = fusing::active_submission_window();
	if (window && !fusing::InsideStarpuScope::active())
		window->follow_acquisition_switch(handle, mode);
}

/* StarPU's acquisition (starpu_acquire), which returns 0 on success, as
 * the program's. */
template <typename Acquire>
int acquire(starpu_data_handle_t handle, enum starpu_data_access_mode mode, const void *caller, Acquire starpu_acquire)
{
	fusing::SubmissionWindow *window = window_for_program_call(caller);
	if (!window) {
		follow_switch_of_other_acquisition(handle, mode);
		return starpu_acquire();
	}
	window->begin_acquisition(handle, mode);
	const int ret = starpu_acquire();
	if (ret != 0)
		window->held().released(handle);
	return ret;
}

/* The same for an attempt, which holds nothing unless it succeeds. */
template <typename Acquire>
int try_acquire(starpu_data_handle_t handle, enum starpu_data_access_mode mode, const void *caller, Acquire starpu_acquire)
{
	fusing::SubmissionWindow *window = window_for_program_call(caller);
	if (!window) {
		follow_switch_of_other_acquisition(handle, mode);
		return starpu_acquire();
	}
	window->flush();
	/* StarPU switches plans before it tries (user_interactions.c). */
	window->follow_acquisition_switch(handle, mode);
	const int ret = starpu_acquire();
	if (ret == 0)
		window->held().acquired(handle, mode);
	return ret;
}

/* StarPU's release (starpu_release) down to down_to_mode, STARPU_NONE
 * for a whole release, as the program's. */
template <typename Release>
void release(starpu_data_handle_t handle, enum starpu_data_access_mode down_to_mode, const void *caller, Release starpu_release)
{
	starpu_release();
	if (fusing::SubmissionWindow *window = window_for_program_call(caller)) {
		if (down_to_mode == STARPU_NONE)
			window->held().released(handle);
		else
			window->held().downgraded(handle);
	}
}

using Callback = void (*)(void *);

fusing::StarpuFunction<int (*)(starpu_data_handle_t, enum starpu_data_access_mode)> starpu_acquire_plain("starpu_data_acquire");
fusing::StarpuFunction<int (*)(starpu_data_handle_t, int, enum starpu_data_access_mode)> starpu_acquire_on_node("starpu_data_acquire_on_node");
fusing::StarpuFunction<int (*)(starpu_data_handle_t, enum starpu_data_access_mode, Callback, void *)> starpu_acquire_cb("starpu_data_acquire_cb");
fusing::StarpuFunction<int (*)(starpu_data_handle_t, int, enum starpu_data_access_mode, Callback, void *)> starpu_acquire_on_node_cb(
	"starpu_data_acquire_on_node_cb");
fusing::StarpuFunction<int (*)(starpu_data_handle_t, enum starpu_data_access_mode, Callback, void *, int)> starpu_acquire_cb_sc(
	"starpu_data_acquire_cb_sequential_consistency");
fusing::StarpuFunction<int (*)(starpu_data_handle_t, int, enum starpu_data_access_mode, Callback, void *, int)> starpu_acquire_on_node_cb_sc(
	"starpu_data_acquire_on_node_cb_sequential_consistency");
fusing::StarpuFunction<int (*)(starpu_data_handle_t, enum starpu_data_access_mode)> starpu_acquire_try("starpu_data_acquire_try");
fusing::StarpuFunction<int (*)(starpu_data_handle_t, int, enum starpu_data_access_mode)> starpu_acquire_on_node_try(
	"starpu_data_acquire_on_node_try");
fusing::StarpuFunction<void (*)(starpu_data_handle_t)> starpu_release_plain("starpu_data_release");
fusing::StarpuFunction<void (*)(starpu_data_handle_t, int)> starpu_release_on_node("starpu_data_release_on_node");

} // namespace

extern "C" {

FUSING_PUBLIC int starpu_data_acquire(starpu_data_handle_t handle, enum starpu_data_access_mode mode)
{
	return acquire(handle, mode, __builtin_return_address(0), [&] { return starpu_acquire_plain.get()(handle, mode); });
}

FUSING_PUBLIC int starpu_data_acquire_on_node(starpu_data_handle_t handle, int node, enum starpu_data_access_mode mode)
{
	return acquire(handle, mode, __builtin_return_address(0), [&] { return starpu_acquire_on_node.get()(handle, node, mode); });
}

FUSING_PUBLIC int starpu_data_acquire_cb(starpu_data_handle_t handle, enum starpu_data_access_mode mode, Callback callback, void *arg)
{
	return acquire(handle, mode, __builtin_return_address(0),
		       [&] { return starpu_acquire_cb.get()(handle, mode, callback, arg); });
}

FUSING_PUBLIC int starpu_data_acquire_on_node_cb(starpu_data_handle_t handle, int node, enum starpu_data_access_mode mode,
						 Callback callback, void *arg)
{
	return acquire(handle, mode, __builtin_return_address(0),
		       [&] { return starpu_acquire_on_node_cb.get()(handle, node, mode, callback, arg); });
}

FUSING_PUBLIC int starpu_data_acquire_cb_sequential_consistency(starpu_data_handle_t handle, enum starpu_data_access_mode mode,
								Callback callback, void *arg, int sequential_consistency)
{
	return acquire(handle, mode, __builtin_return_address(0),
		       [&] { return starpu_acquire_cb_sc.get()(handle, mode, callback, arg, sequential_consistency); });
}

FUSING_PUBLIC int starpu_data_acquire_on_node_cb_sequential_consistency(starpu_data_handle_t handle, int node,
									enum starpu_data_access_mode mode, Callback callback,
									void *arg, int sequential_consistency)
{
	return acquire(handle, mode, __builtin_return_address(0),
		       [&] { return starpu_acquire_on_node_cb_sc.get()(handle, node, mode, callback, arg, sequential_consistency); });
}

#if STARPU_MAJOR_VERSION == 1 && STARPU_MINOR_VERSION == 3
FUSING_PUBLIC int starpu_data_acquire_on_node_cb_sequential_consistency_quick(starpu_data_handle_t handle, int node,
									      enum starpu_data_access_mode mode, Callback callback,
									      void *arg, int sequential_consistency, int quick)
{
	static fusing::StarpuFunction<int (*)(starpu_data_handle_t, int, enum starpu_data_access_mode, Callback, void *, int, int)> starpu_quick(
		"starpu_data_acquire_on_node_cb_sequential_consistency_quick");
	return acquire(handle, mode, __builtin_return_address(0),
		       [&] { return starpu_quick.get()(handle, node, mode, callback, arg, sequential_consistency, quick); });
}

FUSING_PUBLIC int starpu_data_acquire_on_node_cb_sequential_consistency_sync_jobids(starpu_data_handle_t handle, int node,
										    enum starpu_data_access_mode mode, Callback callback,
										    void *arg, int sequential_consistency, int quick,
										    long *pre_sync_jobid, long *post_sync_jobid)
{
	static fusing::StarpuFunction<int (*)(starpu_data_handle_t, int, enum starpu_data_access_mode, Callback, void *, int, int, long *, long *)>
		starpu_sync_jobids("starpu_data_acquire_on_node_cb_sequential_consistency_sync_jobids");
	return acquire(handle, mode, __builtin_return_address(0), [&] {
		return starpu_sync_jobids.get()(handle, node, mode, callback, arg, sequential_consistency, quick, pre_sync_jobid,
						post_sync_jobid);
	});
}
#else
FUSING_PUBLIC int starpu_data_acquire_on_node_cb_sequential_consistency_sync_jobids(
	starpu_data_handle_t handle, int node, enum starpu_data_access_mode mode,
	void (*callback_acquired)(void *arg, int *node, enum starpu_data_access_mode mode), Callback callback, void *arg,
	int sequential_consistency, int quick, long *pre_sync_jobid, long *post_sync_jobid, int prio)
{
	static fusing::StarpuFunction<int (*)(starpu_data_handle_t, int, enum starpu_data_access_mode,
					      void (*)(void *, int *, enum starpu_data_access_mode), Callback, void *, int, int,
					      long *, long *, int)>
		starpu_sync_jobids("starpu_data_acquire_on_node_cb_sequential_consistency_sync_jobids");
	return acquire(handle, mode, __builtin_return_address(0), [&] {
		return starpu_sync_jobids.get()(handle, node, mode, callback_acquired, callback, arg, sequential_consistency, quick,
						pre_sync_jobid, post_sync_jobid, prio);
	});
}

FUSING_PUBLIC void starpu_data_release_to(starpu_data_handle_t handle, enum starpu_data_access_mode down_to_mode)
{
	static fusing::StarpuFunction<void (*)(starpu_data_handle_t, enum starpu_data_access_mode)> starpu_release_to("starpu_data_release_to");
	release(handle, down_to_mode, __builtin_return_address(0), [&] { starpu_release_to.get()(handle, down_to_mode); });
}

FUSING_PUBLIC void starpu_data_release_to_on_node(starpu_data_handle_t handle, enum starpu_data_access_mode down_to_mode, int node)
{
	static fusing::StarpuFunction<void (*)(starpu_data_handle_t, enum starpu_data_access_mode, int)> starpu_release_to_on_node(
		"starpu_data_release_to_on_node");
	release(handle, down_to_mode, __builtin_return_address(0),
		[&] { starpu_release_to_on_node.get()(handle, down_to_mode, node); });
}
#endif

FUSING_PUBLIC int starpu_data_acquire_try(starpu_data_handle_t handle, enum starpu_data_access_mode mode)
{
	return try_acquire(handle, mode, __builtin_return_address(0), [&] { return starpu_acquire_try.get()(handle, mode); });
}

FUSING_PUBLIC int starpu_data_acquire_on_node_try(starpu_data_handle_t handle, int node, enum starpu_data_access_mode mode)
{
	return try_acquire(handle, mode, __builtin_return_address(0),
			   [&] { return starpu_acquire_on_node_try.get()(handle, node, mode); });
}

FUSING_PUBLIC void starpu_data_release(starpu_data_handle_t handle)
{
	release(handle, STARPU_NONE, __builtin_return_address(0), [&] { starpu_release_plain.get()(handle); });
}

FUSING_PUBLIC void starpu_data_release_on_node(starpu_data_handle_t handle, int node)
{
	release(handle, STARPU_NONE, __builtin_return_address(0), [&] { starpu_release_on_node.get()(handle, node); });
}

} // extern "C"
