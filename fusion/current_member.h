/* Which member a worker thread is running inside a proxy.
 *
 * Codelet bodies of real programs call starpu_task_get_current() to read
 * their own task (handles, cl_arg, to declare end dependencies): inside a
 * batch StarPU would answer with the proxy.  The library therefore defines
 * starpu_task_get_current() itself and answers with the member while one runs.
 * This takes effect for every caller bound to our definition: programs run
 * with the library preloaded (the launcher always preloads it), programs
 * linked with it, and StarPU's own internal calls made through its PLT. */
#ifndef STARPU_FUSING_FUSION_CURRENT_MEMBER_H
#define STARPU_FUSING_FUSION_CURRENT_MEMBER_H

#include <starpu.h>

#include <cstddef>

namespace fusing {

/* Marks member as running on this thread, in a batch of batch_size tasks,
 * until the object is destroyed.  Runs in a worker thread, in a proxy. */
class RunningMemberScope {
public:
	RunningMemberScope(struct starpu_task *member, std::size_t batch_size);
	~RunningMemberScope();
	RunningMemberScope(const RunningMemberScope &) = delete;
	RunningMemberScope &operator=(const RunningMemberScope &) = delete;
};

} // namespace fusing

#endif
