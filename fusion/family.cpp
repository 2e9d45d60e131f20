/* Families of tasks; see family.h. */
#include "fusion/family.h"

#include "fusion/proxy_task.h"

namespace fusing {

Family::Family(const FamilyKey &family_key, const char *member_name)
	: key(family_key), proxy_name(std::string("fused:") + (member_name ? member_name : "unnamed"))
{
	init_proxy_codelet(*this);
}

FamilyKey family_of(const struct starpu_task *task, int numa_node)
{
	const unsigned nbuffers = STARPU_TASK_GET_NBUFFERS(task);
	std::uint64_t signature = 1469598103934665603ull; /* FNV-1a */
	for (unsigned i = 0; i < nbuffers; i++) {
		signature ^= static_cast<std::uint64_t>(STARPU_TASK_GET_MODE(task, i));
		signature *= 1099511628211ull;
	}
	return FamilyKey{task->cl, task->sched_ctx, task->priority, nbuffers, signature, numa_node};
}

} // namespace fusing
