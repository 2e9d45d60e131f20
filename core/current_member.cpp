/* Member-aware starpu_task_get_current(); see current_member.h. */
#include "core/current_member.h"

#include "starpu_fusing.h"
#include "core/starpu_functions.h"

namespace fusing {
namespace {

/* Written and read only by the thread running the batch. */
thread_local struct starpu_task *running_member = nullptr;
thread_local std::size_t running_batch_size = 0;
thread_local const unsigned *running_buffer_of = nullptr;
thread_local struct starpu_task *running_stands_for = nullptr;
/* starpu_task_get_current() calls answered with a member, on this thread. */
thread_local std::uint64_t member_task_reads = 0;

/* StarPU's own definitions of the two functions defined below. */
StarpuFunction<struct starpu_task *(*)(void)> starpu_get_current("starpu_task_get_current");
StarpuFunction<int (*)(unsigned)> starpu_current_data_node("starpu_task_get_current_data_node");

} // namespace

RunningMemberScope::RunningMemberScope(struct starpu_task *member, std::size_t batch_size, const unsigned *merged_buffer_of,
				       struct starpu_task *stands_for)
	: outer_member_(running_member), outer_batch_size_(running_batch_size), outer_buffer_of_(running_buffer_of),
	  outer_stands_for_(running_stands_for)
{
	running_member = member;
	running_batch_size = batch_size;
	running_buffer_of = merged_buffer_of;
	running_stands_for = stands_for;
}

RunningMemberScope::~RunningMemberScope()
{
	running_member = outer_member_;
	running_batch_size = outer_batch_size_;
	running_buffer_of = outer_buffer_of_;
	running_stands_for = outer_stands_for_;
}

struct starpu_task *merged_task_standing_for(const struct starpu_task *task)
{
	return task && task == running_member ? running_stands_for : nullptr;
}

std::uint64_t current_task_reads_by_members()
{
	return member_task_reads;
}

StarpuViewOfCurrentTask::StarpuViewOfCurrentTask() : member_(running_member)
{
	running_member = nullptr;
}

StarpuViewOfCurrentTask::~StarpuViewOfCurrentTask()
{
	running_member = member_;
}

} // namespace fusing

extern "C" {

FUSING_PUBLIC struct starpu_task *starpu_task_get_current(void)
{
	if (fusing::running_member) {
		fusing::member_task_reads++;
		return fusing::running_member;
	}
	return fusing::starpu_get_current.get()();
}

/* StarPU answers for the buffers of its current task, the merged task
 * (core/task.c); a member's buffer i is the merged task's
 * running_buffer_of[i]. */
FUSING_PUBLIC int starpu_task_get_current_data_node(unsigned i)
{
	if (fusing::running_member && fusing::running_buffer_of) {
		const unsigned merged_buffer = fusing::running_buffer_of[i];
		fusing::StarpuViewOfCurrentTask starpu_view;
		return fusing::starpu_current_data_node.get()(merged_buffer);
	}
	return fusing::starpu_current_data_node.get()(i);
}

FUSING_PUBLIC unsigned starpu_fusing_current_batch_size(void)
{
	return static_cast<unsigned>(fusing::running_batch_size);
}

} // extern "C"
