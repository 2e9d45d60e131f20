/* The program's fetches and prefetches while tasks are deferred
 * (flush_barrier.rules "own").
 *
 * A fetch or prefetch is a barrier: it moves data deferred tasks write, so
 * the window is flushed first (unless StarPU itself calls it:
 * submission/starpu_code.h).  And StarPU switches plans for it as for a read
 * (_starpu_prefetch_data_on_node_with_mode calls
 * _starpu_data_check_initialized, datawizard/user_interactions.c, 1.3 and
 * 1.4): a handle partitioned read-write is unpartitioned, a child of an
 * inactive plan partitioned for.  The window follows that switch
 * (submission/window.h, follow_acquisition_switch) whoever calls: without it, a
 * vector fetched while partitioned was unpartitioned behind the window,
 * which deferred the next task on a half as if still partitioned, and
 * StarPU asserted "Handle ... is not initialized"
 * (api_plan_switched_for_a_fetch_stays_followed).  The calling thread. */
#include "core/starpu_functions.h"
#include "submission/window.h"
#include "starpu_fusing.h"

namespace {

/* Before StarPU's fetch of handle from the call at caller. */
void before_fetch(starpu_data_handle_t handle, const void *caller)
{
	fusing::SubmissionWindow *window = fusing::active_submission_window();
	if (!window || fusing::InsideStarpuScope::active())
		return;
	fusing::flush_before_program_call(*window, caller);
	window->follow_acquisition_switch(handle, STARPU_R);
}

using Fetch = int (*)(starpu_data_handle_t, unsigned, unsigned);
using FetchWithPriority = int (*)(starpu_data_handle_t, unsigned, unsigned, int);

fusing::StarpuFunction<Fetch> starpu_fetch("starpu_data_fetch_on_node");
fusing::StarpuFunction<Fetch> starpu_prefetch("starpu_data_prefetch_on_node");
fusing::StarpuFunction<FetchWithPriority> starpu_prefetch_prio("starpu_data_prefetch_on_node_prio");
fusing::StarpuFunction<Fetch> starpu_idle_prefetch("starpu_data_idle_prefetch_on_node");
fusing::StarpuFunction<FetchWithPriority> starpu_idle_prefetch_prio("starpu_data_idle_prefetch_on_node_prio");

} // namespace

extern "C" {

FUSING_PUBLIC int starpu_data_fetch_on_node(starpu_data_handle_t handle, unsigned node, unsigned async)
{
	before_fetch(handle, __builtin_return_address(0));
	return starpu_fetch.get()(handle, node, async);
}

FUSING_PUBLIC int starpu_data_prefetch_on_node(starpu_data_handle_t handle, unsigned node, unsigned async)
{
	before_fetch(handle, __builtin_return_address(0));
	return starpu_prefetch.get()(handle, node, async);
}

FUSING_PUBLIC int starpu_data_prefetch_on_node_prio(starpu_data_handle_t handle, unsigned node, unsigned async, int prio)
{
	before_fetch(handle, __builtin_return_address(0));
	return starpu_prefetch_prio.get()(handle, node, async, prio);
}

FUSING_PUBLIC int starpu_data_idle_prefetch_on_node(starpu_data_handle_t handle, unsigned node, unsigned async)
{
	before_fetch(handle, __builtin_return_address(0));
	return starpu_idle_prefetch.get()(handle, node, async);
}

FUSING_PUBLIC int starpu_data_idle_prefetch_on_node_prio(starpu_data_handle_t handle, unsigned node, unsigned async, int prio)
{
	before_fetch(handle, __builtin_return_address(0));
	return starpu_idle_prefetch_prio.get()(handle, node, async, prio);
}

} // extern "C"
