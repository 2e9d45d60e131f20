/* StarPU's own definitions of the functions this library defines in its
 * place, found with dlsym on first use (the next definition after this
 * library's when it is preloaded, else the first).  Any thread. */
#ifndef STARPU_FUSING_CORE_STARPU_FUNCTIONS_H
#define STARPU_FUSING_CORE_STARPU_FUNCTIONS_H

#include <starpu.h>

#include <atomic>

namespace fusing {

/* StarPU's definition of name; stops the program with a message naming it
 * when StarPU has none.  A dlsym each time: callers keep the answer. */
void *starpu_own_function(const char *name);

/* StarPU's definition of one function, looked up once.  A static object per
 * function; a race between two first calls stores the same address twice. */
template <typename Function>
class StarpuFunction {
public:
	explicit constexpr StarpuFunction(const char *name) : name_(name) {}
	Function get()
	{
		Function function = resolved_.load(std::memory_order_acquire);
		if (!function) {
			function = reinterpret_cast<Function>(starpu_own_function(name_));
			resolved_.store(function, std::memory_order_release);
		}
		return function;
	}

private:
	const char *const name_;
	std::atomic<Function> resolved_{nullptr};
};

int starpu_own_task_submit(struct starpu_task *task);
/* This library defines both for programs (interpose/interpose_task_deps.cpp), handing
 * a running deferred member's to its merged task; its own end dependencies
 * (ready/borrowed_task.cpp) go to StarPU's, also for a task resubmitted from
 * its own callback while it is that member. */
void starpu_own_task_end_dep_add(struct starpu_task *task, int nb_deps);
void starpu_own_task_end_dep_release(struct starpu_task *task);

/* Whether the process's starpu_task_submit is this library's, i.e. the
 * library was preloaded (or linked before libstarpu): submission-time
 * fusion sees the program's tasks only then. */
bool submissions_reach_this_library();

} // namespace fusing

#endif
