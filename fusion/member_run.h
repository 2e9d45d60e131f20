/* Running one member's CPU function inside a merged task, as StarPU would
 * have run it: starpu_task_get_current() answers with the member
 * (current_member.h), and a codelet model StarPU is calibrating still gets
 * the member's duration.  Shared by ready-time batches (merged_task.cpp)
 * and submission-time groups (submission/merged_group.cpp); runs in the
 * worker running the merged task. */
#ifndef STARPU_FUSING_FUSION_MEMBER_RUN_H
#define STARPU_FUSING_FUSION_MEMBER_RUN_H

#include "fusion/current_member.h"

#include <starpu.h>

#include <cstddef>

namespace fusing {

/* StarPU adds a task's duration to its codelet's history or regression
 * model while that model is being calibrated (model->benchmarking: the test
 * in _starpu_driver_update_job_feedback, driver_common.c, 1.3 and 1.4); a
 * member run in a merged task never reaches that code, so the same test and
 * the public equivalent of that record are made here. */
inline bool starpu_calibrates(const struct starpu_task *member)
{
	return member->cl->model && member->cl->model->benchmarking;
}

inline void record_in_starpu_model(struct starpu_task *member, double member_us)
{
	const int worker = starpu_worker_get_id();
	struct starpu_perfmodel_arch *arch = starpu_worker_get_perf_archtype(worker, member->sched_ctx);
	starpu_perfmodel_update_history(member->cl->model, member, arch, static_cast<unsigned>(starpu_worker_get_devid(worker)), 0,
					member_us);
}

/* Runs member's CPU function on buffers; batch_size is what
 * starpu_fusing_current_batch_size() answers meanwhile. */
inline void run_member(struct starpu_task *member, void **buffers, std::size_t batch_size)
{
	const bool calibrating = starpu_calibrates(member);
	const double start_us = calibrating ? starpu_timing_now() : 0.0;
	{
		RunningMemberScope running(member, batch_size);
		member->cl->cpu_funcs[0](buffers, member->cl_arg);
	}
	if (calibrating)
		record_in_starpu_model(member, starpu_timing_now() - start_us);
}

} // namespace fusing

#endif
