/* StarPU's own definitions; see starpu_functions.h. */
#include "core/starpu_functions.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

extern "C" int starpu_task_submit(struct starpu_task *task);

namespace fusing {

void *starpu_own_function(const char *name)
{
	/* After this library in the search order when it is preloaded (its
	 * definition comes first); otherwise (loaded after libstarpu, as
	 * StarPU 1.4 loads STARPU_SCHED_LIB) the first definition is StarPU's. */
	void *function = dlsym(RTLD_NEXT, name);
	if (!function) {
		Dl_info found{}, ours{};
		function = dlsym(RTLD_DEFAULT, name);
		if (function && dladdr(function, &found) && dladdr(reinterpret_cast<void *>(&starpu_own_function), &ours) &&
		    found.dli_fbase == ours.dli_fbase)
			function = nullptr;
	}
	if (!function) {
		std::fprintf(stderr, "starpu-fusing: cannot find StarPU's %s: %s\n", name, dlerror());
		std::abort();
	}
	return function;
}

int starpu_own_task_submit(struct starpu_task *task)
{
	static StarpuFunction<int (*)(struct starpu_task *)> submit("starpu_task_submit");
	return submit.get()(task);
}

void starpu_own_task_end_dep_add(struct starpu_task *task, int nb_deps)
{
	static StarpuFunction<void (*)(struct starpu_task *, int)> add("starpu_task_end_dep_add");
	add.get()(task, nb_deps);
}

void starpu_own_task_end_dep_release(struct starpu_task *task)
{
	static StarpuFunction<void (*)(struct starpu_task *)> release("starpu_task_end_dep_release");
	release.get()(task);
}

bool submissions_reach_this_library()
{
	Dl_info global{}, ours{};
	void *global_submit = dlsym(RTLD_DEFAULT, "starpu_task_submit");
	return global_submit && dladdr(global_submit, &global) &&
	       dladdr(reinterpret_cast<void *>(&starpu_own_function), &ours) && global.dli_fbase == ours.dli_fbase;
}

} // namespace fusing
