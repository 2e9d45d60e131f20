/* Selecting `fusing` on StarPU 1.3, which cannot load policies from a
 * library.
 *
 * Preloaded (LD_PRELOAD), this definition of starpu_initialize() comes before
 * StarPU's; starpu_init() reaches it through StarPU's PLT.  When the program
 * asks for `fusing` the way it would ask for a built-in policy — STARPU_SCHED,
 * or else starpu_conf::sched_policy_name — it hands StarPU a copy of the
 * program's configuration whose sched_policy is ours.  That follows StarPU's
 * own precedence (_starpu_conf_check_environment and
 * _starpu_select_sched_policy, src/core/workers.c and sched_policy.c, 1.3
 * and 1.4): a STARPU_SCHED naming a policy StarPU knows wins over the
 * configuration, including over an explicit sched_policy; StarPU 1.4 finds
 * `fusing` by name through STARPU_SCHED_LIB and behaves the same.
 *
 * StarPU would also look the name "fusing" up among its own policies and
 * print "scheduling policy 'fusing' was not found".  It reads STARPU_SCHED
 * through its exported starpu_getenv(), which it calls through its PLT too:
 * the definition below answers "unset" for STARPU_SCHED in the thread
 * running our starpu_initialize, and only while it runs, so the process
 * environment is never changed under other threads' getenv(). */
#include "sched/policy_selection.h"
#include "starpu_fusing.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

/* Set only by the thread inside our starpu_initialize. */
thread_local bool hiding_starpu_sched = false;

template <typename Function>
Function starpu_own(const char *name)
{
	Function function = reinterpret_cast<Function>(dlsym(RTLD_NEXT, name));
	if (!function) {
		std::fprintf(stderr, "starpu-fusing: cannot find StarPU's %s: %s\n", name, dlerror());
		std::exit(EXIT_FAILURE);
	}
	return function;
}

bool names_fusing(const char *name)
{
	return name && std::strcmp(name, "fusing") == 0;
}

} // namespace

extern "C" FUSING_PUBLIC char *starpu_getenv(const char *name)
{
	using Getenv = char *(*)(const char *);
	static const Getenv real_getenv = starpu_own<Getenv>("starpu_getenv");
	if (hiding_starpu_sched && std::strcmp(name, "STARPU_SCHED") == 0)
		return nullptr;
	return real_getenv(name);
}

extern "C" FUSING_PUBLIC int starpu_initialize(struct starpu_conf *user_conf, int *argc, char ***argv)
{
	using Initialize = int (*)(struct starpu_conf *, int *, char ***);
	static const Initialize real_initialize = starpu_own<Initialize>("starpu_initialize");

	const char *requested = std::getenv("STARPU_SCHED");
	if (requested && std::strcmp(requested, "help") == 0) {
		std::fprintf(stderr, "\n(policies added by starpu-fusing)\n");
		fusing::print_policy_help_line(stderr);
	}
	const bool asked = requested ? names_fusing(requested) : (user_conf && names_fusing(user_conf->sched_policy_name));
	if (!asked)
		return real_initialize(user_conf, argc, argv);

	struct starpu_conf conf;
	if (user_conf)
		conf = *user_conf;
	else
		starpu_conf_init(&conf);
	conf.sched_policy = fusing::policy_from_environment_or_exit();
	conf.sched_policy_name = nullptr;

	hiding_starpu_sched = true;
	int ret = real_initialize(&conf, argc, argv);
	hiding_starpu_sched = false;
	return ret;
}
