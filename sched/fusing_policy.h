/* The `fusing` policy: a layer over a base policy.
 *
 * Every callback of the base that StarPU may call is forwarded, and a
 * callback the base leaves NULL stays NULL in the layer unless fusion needs
 * it, because StarPU treats NULL specially (no push_task_notify, no
 * post_exec_hook...).  With fusion off (STARPU_FUSING=0) the layer adds
 * nothing but the forwarding, so `fusing` behaves exactly like its base.
 *
 * StarPU copies the policy structure into each scheduling context that uses
 * it (load_sched_policy in src/core/sched_policy.c) and the base keeps its
 * per-context data in starpu_sched_ctx_{get,set}_policy_data, so the layer
 * keeps no per-context data of its own there. */
#ifndef STARPU_FUSING_SCHED_FUSING_POLICY_H
#define STARPU_FUSING_SCHED_FUSING_POLICY_H

#include "sched/config.h"

#include <starpu.h>
#include <starpu_scheduler.h>

namespace fusing {

/* What STARPU_SCHED=help and the policy structure say about `fusing`. */
extern const char *const fusing_policy_description;

/* Builds the process's `fusing` policy over base with config.  Called once,
 * before StarPU initialises (the result is what StarPU copies). */
struct starpu_sched_policy *build_fusing_policy(struct starpu_sched_policy *base, const Config &config);

/* Whether a context of `fusing` runs with fusion on now; any thread. */
bool fusion_is_running();

} // namespace fusing

#endif
