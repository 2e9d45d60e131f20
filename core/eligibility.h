/* Which tasks may be fused, decided once per task at submission.
 *
 * Fusion is correct because a member is only taken once it is ready and its
 * termination is held back until its batch has run (doc/design.md).  That
 * argument needs task-level dependencies on every handle and a plain
 * sequential CPU implementation; anything else runs unfused, and the reason is
 * counted for STARPU_FUSING_STATS. */
#ifndef STARPU_FUSING_CORE_ELIGIBILITY_H
#define STARPU_FUSING_CORE_ELIGIBILITY_H

#include <starpu.h>

namespace fusing {

enum class UnfusedReason {
	none = 0,             /* fusable */
	no_codelet,           /* control task */
	no_data,              /* nothing to fetch, nothing to gain, see engine.cpp */
	no_cpu_implementation,
	several_cpu_implementations,
	can_execute_hook,
	parallel_codelet,
	specific_nodes,
	pinned_to_worker,     /* execute_on_a_specific_worker or workerids */
	regenerate,
	synchronous,
	bundle,
	pop_prologue,         /* StarPU would call it when the task is held, not when it runs */
	sequential_consistency_off,
	redux_access,
	commute_access,
	scratch_access,
	multiformat_data,
	transaction,          /* StarPU 1.4 transactions may cancel the task */
	end_dependencies,     /* see check_fusable() */
	no_cpu_worker_in_context, /* decided at readiness: no worker of its context could run a batch */
	data_too_large_for_memory, /* decided at readiness: see the memory cap, engine.h */
	worker_was_idle,      /* decided at readiness: running it now is faster */
	batches_too_small,    /* decided at readiness: its recent batches averaged under 4 members */
	predicted_above_target, /* decided at readiness: coarse enough already */
	predicted_above_max_task, /* decided at readiness: generic execution would save too little */
	family_not_selected,  /* STARPU_FUSING_ONLY / STARPU_FUSING_EXCLUDE */
	writes_data_without_value, /* decided at readiness: see Engine::on_task_ready */
	outranks_ready_work,  /* decided at submission or readiness: lower-priority ready work waits */
	count_
};

/* Short phrase for the statistics table. */
const char *unfused_reason_text(UnfusedReason reason);

/* What a mechanism does with STARPU_REDUX accesses.  A ready-time batch
 * cannot take them: its held members give their data back to StarPU, and
 * StarPU orders reductions by its own requests, not by the task-level
 * dependencies the hold relies on.  A group merged at submission can: its
 * merged task makes one REDUX access where its members made several, and
 * StarPU gives it the per-worker contribution the members would have
 * accumulated into one after another on that worker (doc/design.md, section
 * 12, reductions). */
enum class ReduxAccesses { unfused, combined };

/* Why task cannot be fused, or UnfusedReason::none.  Runs in the submitting
 * thread (submit_hook, or the submission window); reads only the task and
 * its handles. */
UnfusedReason check_fusable(const struct starpu_task *task, ReduxAccesses redux);

} // namespace fusing

#endif
