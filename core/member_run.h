/* Running one member's CPU function inside a merged task, as StarPU would
 * have run it: starpu_task_get_current() answers with the member
 * (current_member.h), and a codelet model StarPU is calibrating still gets
 * the member's duration.  Shared by ready-time batches (merged_task.cpp)
 * and submission-time groups (submission/merged_group.cpp); runs in the
 * worker running the merged task. */
#ifndef STARPU_FUSING_CORE_MEMBER_RUN_H
#define STARPU_FUSING_CORE_MEMBER_RUN_H

#include "core/current_member.h"

#include <starpu.h>

#include <cstddef>
#include <cstdlib>
#include <ctime>

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

/* StarPU's per-task profiling (STARPU_PROFILING=1 or
 * starpu_profiling_status_set): StarPU's driver writes a task's start and
 * end times and worker into task->profiling_info when it runs the task
 * (_starpu_driver_start_job, _starpu_driver_end_job, driver_common.c, 1.3
 * and 1.4); a member never reaches that code, so that a program reading
 * them in its callback sees when its task really ran, they are written
 * here.  StarPU allocates profiling_info at submission while profiling is
 * on; a task deferred at submission never got there, so it is allocated
 * here (calloc, as StarPU does; starpu_task_clean frees it).  Other fields
 * (submission, push and pop times) stay as StarPU left them: zero for a
 * deferred task. */
inline bool starpu_profiles(const struct starpu_task *member)
{
	return member->profiling_info || starpu_profiling_status_get();
}

inline void record_in_starpu_profiling(struct starpu_task *member, double start_us, double end_us)
{
	if (!member->profiling_info) {
		member->profiling_info =
			static_cast<struct starpu_profiling_task_info *>(std::calloc(1, sizeof(struct starpu_profiling_task_info)));
		if (!member->profiling_info)
			return;
	}
	auto to_timespec = [](double us, struct timespec *ts) {
		ts->tv_sec = static_cast<time_t>(us / 1e6);
		ts->tv_nsec = static_cast<long>((us - static_cast<double>(ts->tv_sec) * 1e6) * 1e3);
	};
	to_timespec(start_us, &member->profiling_info->start_time);
	to_timespec(end_us, &member->profiling_info->end_time);
	member->profiling_info->workerid = starpu_worker_get_id();
}

/* Runs member's CPU function on buffers; batch_size is what
 * starpu_fusing_current_batch_size() answers meanwhile; merged_buffer_of
 * and stands_for as RunningMemberScope's. */
inline void run_member(struct starpu_task *member, void **buffers, std::size_t batch_size,
		       const unsigned *merged_buffer_of = nullptr, struct starpu_task *stands_for = nullptr,
		       bool handles_registered = true)
{
	/* StarPU's model reads the member's handles (their sizes and
	 * footprints): not when some may be unregistered already (a child of
	 * an elided plan the program cleaned; submission/merged_group.h). */
	const bool calibrating = handles_registered && starpu_calibrates(member);
	const bool profiled = starpu_profiles(member);
	const double start_us = calibrating || profiled ? starpu_timing_now() : 0.0;
	{
		RunningMemberScope running(member, batch_size, merged_buffer_of, stands_for);
		member->cl->cpu_funcs[0](buffers, member->cl_arg);
	}
	if (calibrating || profiled) {
		const double end_us = starpu_timing_now();
		if (calibrating)
			record_in_starpu_model(member, end_us - start_us);
		if (profiled)
			record_in_starpu_profiling(member, start_us, end_us);
	}
}

} // namespace fusing

#endif
