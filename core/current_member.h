/* Which member a worker thread is running inside a proxy.
 *
 * Codelet bodies of real programs call starpu_task_get_current() to read
 * their own task (handles, cl_arg, to declare end dependencies): inside a
 * batch StarPU would answer with the proxy.  The library therefore defines
 * starpu_task_get_current() itself and answers with the member while one runs.
 * This takes effect for every caller bound to our definition: programs run
 * with the library preloaded (the launcher always preloads it), programs
 * linked with it, and StarPU's own internal calls made through its PLT. */
#ifndef STARPU_FUSING_CORE_CURRENT_MEMBER_H
#define STARPU_FUSING_CORE_CURRENT_MEMBER_H

#include <starpu.h>

#include <cstddef>
#include <cstdint>

namespace fusing {

/* Marks member as running on this thread, in a batch of batch_size tasks,
 * until the object is destroyed.  merged_buffer_of[b], when given, is the
 * merged task's buffer that member's buffer b is (for
 * starpu_task_get_current_data_node); stands_for is the merged task StarPU
 * knows in member's place when StarPU never saw member (a task deferred at
 * submission), else null.  Runs in a worker thread, in a proxy (or in the
 * thread StarPU runs the proxy's prologue or callback in). */
class RunningMemberScope {
public:
	RunningMemberScope(struct starpu_task *member, std::size_t batch_size, const unsigned *merged_buffer_of = nullptr,
			   struct starpu_task *stands_for = nullptr);
	~RunningMemberScope();
	RunningMemberScope(const RunningMemberScope &) = delete;
	RunningMemberScope &operator=(const RunningMemberScope &) = delete;

private:
	/* Scopes nest (a member's callback runs while its group's prologue
	 * scope is gone, but a prologue may submit, and StarPU may run
	 * another prologue inside): the enclosing one is restored. */
	struct starpu_task *outer_member_;
	std::size_t outer_batch_size_;
	const unsigned *outer_buffer_of_;
	struct starpu_task *outer_stands_for_;
};

/* How many times, on this thread, a running member's code asked
 * starpu_task_get_current() (and got the member): the kernel pack's
 * verification tells a codelet that reads its own task by it
 * (kernels/kernel_binding.h). */
std::uint64_t current_task_reads_by_members();

/* The merged task StarPU knows in task's place when task is the member
 * running on this thread and StarPU never saw it; else null. */
struct starpu_task *merged_task_standing_for(const struct starpu_task *task);

/* While an object of this class lives, starpu_task_get_current() answers
 * as StarPU would, with the merged task: for StarPU's own checks of the
 * current task (a dependency declared on it, its data nodes). */
class StarpuViewOfCurrentTask {
public:
	StarpuViewOfCurrentTask();
	~StarpuViewOfCurrentTask();
	StarpuViewOfCurrentTask(const StarpuViewOfCurrentTask &) = delete;
	StarpuViewOfCurrentTask &operator=(const StarpuViewOfCurrentTask &) = delete;

private:
	struct starpu_task *member_;
};

} // namespace fusing

#endif
