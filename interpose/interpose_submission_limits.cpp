/* StarPU 1.4 lets a program turn submission throttling on while it runs
 * (starpu_set_limit_min/max_submitted_tasks), which cannot work with fusion
 * for the reason sched/config.cpp refuses STARPU_LIMIT_MAX/MIN_SUBMITTED_TASKS at
 * initialisation.  Preloaded (the launcher preloads the library on 1.4
 * too), these definitions come first: a call that would leave both limits
 * set while fusion runs stops the program with one line; any other call
 * goes on to StarPU. */
#include "sched/fusing_policy.h"
#include "starpu_fusing.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace {

/* StarPU's two limits as StarPU holds them: read from the environment as
 * StarPU does at initialisation, then updated by each call; guarded by
 * limits_mutex. */
std::mutex limits_mutex;
bool limits_known = false;
int limit_min = -1, limit_max = -1;

int environment_limit(const char *name)
{
	const char *text = std::getenv(name);
	return text ? std::atoi(text) : -1;
}

void set_limit(const char *function, int *limit, int value)
{
	using Setter = void (*)(int);
	{
		std::lock_guard<std::mutex> lock(limits_mutex);
		if (!limits_known) {
			limit_min = environment_limit("STARPU_LIMIT_MIN_SUBMITTED_TASKS");
			limit_max = environment_limit("STARPU_LIMIT_MAX_SUBMITTED_TASKS");
			limits_known = true;
		}
		*limit = value;
		if (limit_min >= 0 && limit_max >= 0 && fusing::fusion_is_running()) {
			std::fprintf(stderr, "starpu-fusing: %s(%d) would make StarPU throttle submission, which cannot work "
				     "with fusion (tasks waiting for a batch count as submitted, and StarPU would block the "
				     "submission of their batch); run with STARPU_FUSING=0 to use it\n", function, value);
			std::exit(EXIT_FAILURE);
		}
	}
	Setter real = reinterpret_cast<Setter>(dlsym(RTLD_NEXT, function));
	if (!real) {
		std::fprintf(stderr, "starpu-fusing: cannot find StarPU's %s: %s\n", function, dlerror());
		std::exit(EXIT_FAILURE);
	}
	real(value);
}

} // namespace

extern "C" {

FUSING_PUBLIC void starpu_set_limit_min_submitted_tasks(int limit)
{
	set_limit("starpu_set_limit_min_submitted_tasks", &limit_min, limit);
}

FUSING_PUBLIC void starpu_set_limit_max_submitted_tasks(int limit)
{
	set_limit("starpu_set_limit_max_submitted_tasks", &limit_max, limit);
}

} // extern "C"
