/* Lookup of base policies among StarPU's predefined ones; see base_policy.h. */
#include "sched/base_policy.h"

#include <cstring>

namespace fusing {

bool is_rejected_base_policy(const std::string &name)
{
	return name == "fusing" || name == "pheft" || name == "peager" || name == "modular-pheft";
}

struct starpu_sched_policy *find_base_policy(const std::string &name)
{
	if (is_rejected_base_policy(name))
		return nullptr;
	for (struct starpu_sched_policy **policy = starpu_sched_get_predefined_policies(); *policy; policy++)
		if ((*policy)->policy_name && name == (*policy)->policy_name)
			return *policy;
	return nullptr;
}

std::string accepted_base_policy_names()
{
	std::string names;
	for (struct starpu_sched_policy **policy = starpu_sched_get_predefined_policies(); *policy; policy++) {
		const char *name = (*policy)->policy_name;
		if (!name || is_rejected_base_policy(name))
			continue;
		names += (names.empty() ? "" : ", ") + std::string(name);
	}
	return names;
}

} // namespace fusing
