/* Entry points for StarPU 1.4's STARPU_SCHED_LIB.
 *
 * StarPU 1.4 dlopens the library named by STARPU_SCHED_LIB and looks up these
 * two functions (find_sched_policy_from_name and display_sched_help_message
 * in src/core/sched_policy.c).  They run in the thread calling starpu_init. */
#include "sched/policy_selection.h"
#include "starpu_fusing.h"

#include <cstring>

extern "C" {

FUSING_PUBLIC struct starpu_sched_policy *starpu_get_sched_lib_policy(const char *name)
{
	if (!name || std::strcmp(name, "fusing") != 0)
		return nullptr;
	return fusing::policy_from_environment_or_exit();
}

FUSING_PUBLIC struct starpu_sched_policy **starpu_get_sched_lib_policies(void)
{
	static struct starpu_sched_policy *policies[2];
	policies[0] = fusing::policy_from_environment_or_exit();
	policies[1] = nullptr;
	return policies;
}

} // extern "C"
