/* Turning the environment into the `fusing` policy, once per process.
 *
 * Shared by every way a program reaches the policy: the StarPU 1.4 plugin
 * entry points (sched_lib_entry.cpp), the StarPU 1.3 interposer
 * (interpose/interpose_starpu_init.cpp) and the public starpu_fusing_policy(). */
#ifndef STARPU_FUSING_SCHED_POLICY_SELECTION_H
#define STARPU_FUSING_SCHED_POLICY_SELECTION_H

#include <starpu.h>

#include <string>

namespace fusing {

/* The policy configured by STARPU_FUSING_*, built on first call and the same
 * afterwards; nullptr with *error set to one line when a variable is invalid
 * or the base policy is unknown. */
struct starpu_sched_policy *policy_from_environment(std::string *error);

/* Like policy_from_environment(), but a configuration error stops the
 * program: for selection by STARPU_SCHED, where returning nothing would make
 * StarPU fall back silently to its default policy. */
struct starpu_sched_policy *policy_from_environment_or_exit();

/* One line for STARPU_SCHED=help lists, in StarPU's own format. */
void print_policy_help_line(FILE *stream);

} // namespace fusing

#endif
