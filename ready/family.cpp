/* Families of tasks; see family.h. */
#include "ready/family.h"

#include "ready/merged_task.h"

namespace fusing {

Family::Family(const FamilyKey &family_key, const std::string &codelet_name)
	: key(family_key), name("fused:" + codelet_name)
{
	init_merged_codelet(*this);
}

FamilyKey family_of(const BorrowedTask &task, int numa_node)
{
	std::uint64_t signature = 1469598103934665603ull; /* FNV-1a */
	for (unsigned i = 0; i < task.nbuffers(); i++) {
		signature ^= static_cast<std::uint64_t>(task.mode(i));
		signature *= 1099511628211ull;
	}
	const struct starpu_task *t = task.task();
	return FamilyKey{t->cl, t->sched_ctx, priority_bucket(t->priority), task.nbuffers(), signature, numa_node};
}

} // namespace fusing
