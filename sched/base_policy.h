/* Finding the StarPU policy that `fusing` is layered over.
 *
 * Only StarPU's predefined policies can be a base: they are the ones every
 * user's StarPU has, and looking them up needs no dlopen. */
#ifndef STARPU_FUSING_SCHED_BASE_POLICY_H
#define STARPU_FUSING_SCHED_BASE_POLICY_H

#include <starpu.h>
#include <starpu_scheduler.h>

#include <string>

namespace fusing {

/* Returns StarPU's predefined policy called name, or nullptr. */
struct starpu_sched_policy *find_base_policy(const std::string &name);

/* Comma-separated names of the policies accepted as a base, for messages. */
std::string accepted_base_policy_names();

/* Policies that cannot be a base: ours (it would layer over itself) and
 * StarPU's parallel-task policies, whose combined workers run one task on
 * several cores, which a batch of sequential members cannot use. */
bool is_rejected_base_policy(const std::string &name);

} // namespace fusing

#endif
