/* Member-aware starpu_task_get_current(); see current_member.h. */
#include "fusion/current_member.h"

#include "starpu_fusing.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace fusing {
namespace {

/* Written and read only by the thread running the batch. */
thread_local struct starpu_task *running_member = nullptr;
thread_local std::size_t running_batch_size = 0;

using GetCurrentFunction = struct starpu_task *(*)(void);

GetCurrentFunction starpu_own_get_current()
{
	/* Resolved once; every thread would find the same address, so a race
	 * between two first calls only stores the same value twice. */
	static std::atomic<GetCurrentFunction> resolved{nullptr};
	GetCurrentFunction function = resolved.load(std::memory_order_acquire);
	if (!function) {
		function = reinterpret_cast<GetCurrentFunction>(dlsym(RTLD_NEXT, "starpu_task_get_current"));
		if (!function) {
			std::fprintf(stderr, "starpu-fusing: cannot find StarPU's starpu_task_get_current: %s\n", dlerror());
			std::abort();
		}
		resolved.store(function, std::memory_order_release);
	}
	return function;
}

} // namespace

RunningMemberScope::RunningMemberScope(struct starpu_task *member, std::size_t batch_size)
{
	running_member = member;
	running_batch_size = batch_size;
}

RunningMemberScope::~RunningMemberScope()
{
	running_member = nullptr;
	running_batch_size = 0;
}

} // namespace fusing

extern "C" {

FUSING_PUBLIC struct starpu_task *starpu_task_get_current(void)
{
	if (fusing::running_member)
		return fusing::running_member;
	return fusing::starpu_own_get_current()();
}

FUSING_PUBLIC unsigned starpu_fusing_current_batch_size(void)
{
	return static_cast<unsigned>(fusing::running_batch_size);
}

} // extern "C"
