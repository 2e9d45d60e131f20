/* The StarPU task that runs one group of deferred tasks (doc/design.md,
 * section 12).
 *
 * Unlike a ready-time batch (fusion/merged_task.h), a group's members were
 * never given to StarPU: the merged task is submitted with sequential
 * consistency on, and StarPU derives its dependencies from its handles
 * (each once, modes OR-ed) exactly as it would have for the members, in
 * the order the window submits groups.  Members may be of different
 * codelets (vertical fusion).  Threads:
 *  - submit_group: the thread flushing the window, window lock held;
 *  - the prologue (members' ready prologues, in order): the thread that
 *    made the merged task ready, inside StarPU's push;
 *  - the CPU function: the worker; runs each member on its own buffers, in
 *    order, or a registered batched implementation once when every member
 *    has the same codelet;
 *  - the callback: the worker, after StarPU released the merged task's
 *    data: each member's callback in order, then the member is destroyed
 *    as StarPU would have destroyed it (destroy = 1) and leaves the
 *    window's live set. */
#ifndef STARPU_FUSING_SUBMISSION_MERGED_GROUP_H
#define STARPU_FUSING_SUBMISSION_MERGED_GROUP_H

#include <starpu.h>

#include <vector>

namespace fusing {

class CodeletObservations;
class LiveMembers;
class Statistics;

struct GroupReports {
	CodeletObservations *observations;
	Statistics *stats; /* null when STARPU_FUSING_STATS is off */
	LiveMembers *live;
};

using SubmitFunction = int (*)(struct starpu_task *);

/* Submits members (in order, at least one, all of context sched_ctx) as one
 * task through real_submit; predicted_us is NaN when unknown.  A refused
 * submission stops the program with a message: the members could not run. */
void submit_group(std::vector<struct starpu_task *> members, unsigned sched_ctx, double predicted_us,
		  const GroupReports &reports, SubmitFunction real_submit);

/* True when task is a group's merged task. */
bool is_group_task(const struct starpu_task *task);

} // namespace fusing

#endif
