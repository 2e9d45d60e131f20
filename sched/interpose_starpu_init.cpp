/* Selecting `fusing` with STARPU_SCHED on StarPU 1.3, which cannot load
 * policies from a library.
 *
 * Preloaded (LD_PRELOAD), this definition of starpu_initialize() comes before
 * StarPU's; starpu_init() reaches it through StarPU's PLT.  When STARPU_SCHED
 * is "fusing" it hands StarPU a copy of the program's configuration whose
 * sched_policy is ours.  STARPU_SCHED is hidden during the real call: StarPU
 * looks the name up before sched_policy (_starpu_select_sched_policy in
 * src/core/sched_policy.c) and would print "scheduling policy 'fusing' was
 * not found".  Runs in the thread calling starpu_init, before StarPU starts
 * any thread, so changing the environment is safe. */
#include "sched/policy_selection.h"
#include "starpu_fusing.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

extern "C" FUSING_PUBLIC int starpu_initialize(struct starpu_conf *user_conf, int *argc, char ***argv)
{
	using Initialize = int (*)(struct starpu_conf *, int *, char ***);
	Initialize real_initialize = reinterpret_cast<Initialize>(dlsym(RTLD_NEXT, "starpu_initialize"));
	if (!real_initialize) {
		std::fprintf(stderr, "starpu-fusing: cannot find StarPU's starpu_initialize: %s\n", dlerror());
		std::exit(EXIT_FAILURE);
	}

	const char *requested = std::getenv("STARPU_SCHED");
	if (requested && std::strcmp(requested, "help") == 0) {
		std::fprintf(stderr, "\n(policies added by starpu-fusing)\n");
		fusing::print_policy_help_line(stderr);
	}
	if (!requested || std::strcmp(requested, "fusing") != 0)
		return real_initialize(user_conf, argc, argv);

	struct starpu_conf conf;
	if (user_conf)
		conf = *user_conf;
	else
		starpu_conf_init(&conf);
	conf.sched_policy = fusing::policy_from_environment_or_exit();
	conf.sched_policy_name = nullptr;

	std::string saved(requested);
	unsetenv("STARPU_SCHED");
	int ret = real_initialize(&conf, argc, argv);
	setenv("STARPU_SCHED", saved.c_str(), 1);
	return ret;
}
