/* The merged task that runs one batch.
 *
 * A merged task carries its members' handles end to end (dyn_handles, each
 * handle once with the modes combined) with sequential consistency off: it
 * must not enter the implicit dependency graph, where the members already
 * hold their places.  StarPU schedules it through the base policy and
 * fetches its data like any task's.  Its CPU function runs each member's
 * CPU function on that member's buffers, or the codelet's batched
 * implementation once (the program's own, else a kernel pack entry bound to
 * the codelet: kernel_binding.h); its callback releases every member
 * (borrowed_task.h, step 4). */
#ifndef STARPU_FUSING_READY_MERGED_TASK_H
#define STARPU_FUSING_READY_MERGED_TASK_H

#include "ready/borrowed_task.h"
#include "ready/family.h"

#include <vector>

namespace fusing {

class BatchTrace;
class CodeletObservations;
class KernelBindings;
class Statistics;
struct ReadyWorkPriorities;

/* Where a merged task reports what it measured: the online estimate, and
 * the statistics (null when STARPU_FUSING_STATS is off).  Both outlive
 * every merged task (the engine stops after StarPU's last task). */
struct MergedTaskReports {
	CodeletObservations *observations;
	Statistics *stats; /* null when STARPU_FUSING_STATS is off */
	BatchTrace *trace; /* null without STARPU_FUSING_TRACE */
	KernelBindings *kernels; /* the kernel pack's bindings (none bind with STARPU_FUSING_KERNELS=off) */
	ReadyWorkPriorities *priorities; /* the engine's: ready and running work by priority */
};

/* Prepares family.merged_codelet (called once per family). */
void init_merged_codelet(Family &family);

/* True when task is one of our merged tasks. */
bool is_merged_task(const struct starpu_task *task);

/* Submits one merged task for members (never empty, all held, all of
 * family).  Runs in the flusher thread with no lock of ours held:
 * starpu_task_submit may take scheduler locks.  A refused submission stops
 * the program with a message: the members could not run otherwise. */
void submit_merged_task(Family &family, std::vector<BorrowedTask *> members, const MergedTaskReports &reports);

} // namespace fusing

#endif
