/* The proxy task that runs one batch.
 *
 * A proxy carries the members' handles end to end (dyn_handles) with
 * sequential consistency off: it must not enter the implicit dependency
 * graph, where the members already hold their places.  StarPU schedules it
 * through the base policy and fetches its data like any task's.  Its CPU
 * function runs each member's CPU function on that member's slice of the
 * buffers; its callback lets each member terminate (DESIGN.md §3). */
#ifndef STARPU_FUSING_FUSION_PROXY_TASK_H
#define STARPU_FUSING_FUSION_PROXY_TASK_H

#include "fusion/family.h"

#include <vector>

namespace fusing {

class Statistics;

/* Prepares family.proxy_codelet (called once per family). */
void init_proxy_codelet(Family &family);

/* True when task is one of our proxies (its codelet runs batches). */
bool is_proxy_task(const struct starpu_task *task);

/* Submits one proxy for members (never empty).  Runs in the flusher thread
 * with no lock held: starpu_task_submit may take scheduler locks.  stats may
 * be null.  A refused submission stops the program with a message: the
 * members could not run otherwise. */
void submit_proxy(Family &family, std::vector<Member> members, Statistics *stats);

} // namespace fusing

#endif
