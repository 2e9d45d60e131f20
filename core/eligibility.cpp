/* Eligibility of tasks for fusion; see eligibility.h. */
#include "core/eligibility.h"

#include "build_config.h" /* configure's findings, not sched/config.h */

namespace fusing {

const char *unfused_reason_text(UnfusedReason reason)
{
	switch (reason) {
	case UnfusedReason::none: return "fusable";
	case UnfusedReason::no_codelet: return "no codelet (control task)";
	case UnfusedReason::no_data: return "no data handles";
	case UnfusedReason::no_cpu_implementation: return "no CPU implementation";
	case UnfusedReason::several_cpu_implementations: return "several CPU implementations";
	case UnfusedReason::can_execute_hook: return "codelet has can_execute";
	case UnfusedReason::parallel_codelet: return "parallel (SPMD/FORKJOIN) codelet";
	case UnfusedReason::specific_nodes: return "codelet has specific_nodes";
	case UnfusedReason::pinned_to_worker: return "pinned to a worker";
	case UnfusedReason::regenerate: return "regenerate";
	case UnfusedReason::synchronous: return "synchronous";
	case UnfusedReason::bundle: return "in a bundle";
	case UnfusedReason::pop_prologue: return "has prologue_callback_pop_func";
	case UnfusedReason::sequential_consistency_off: return "sequential consistency off";
	case UnfusedReason::redux_access: return "STARPU_REDUX access";
	case UnfusedReason::commute_access: return "STARPU_COMMUTE access";
	case UnfusedReason::scratch_access: return "STARPU_SCRATCH access";
	case UnfusedReason::multiformat_data: return "multiformat data";
	case UnfusedReason::transaction: return "in a transaction";
	case UnfusedReason::end_dependencies: return "has end dependencies";
	case UnfusedReason::no_cpu_worker_in_context: return "no CPU worker in its context";
	case UnfusedReason::data_too_large_for_memory: return "data too large for its share of memory";
	case UnfusedReason::worker_was_idle: return "ready while a worker was idle";
	case UnfusedReason::batches_too_small: return "recent batches under 4 tasks, holding would only delay";
	case UnfusedReason::predicted_above_target: return "predicted at or above the target";
	case UnfusedReason::predicted_above_max_task: return "predicted above STARPU_FUSING_MAX_TASK, no batched kernel";
	case UnfusedReason::family_not_selected: return "excluded by STARPU_FUSING_ONLY/EXCLUDE";
	case UnfusedReason::writes_data_without_value: return "writes data that has no valid value yet";
	case UnfusedReason::outranks_ready_work: return "ready work of lower priority waited";
	case UnfusedReason::count_: break;
	}
	return "?";
}

UnfusedReason check_fusable(const struct starpu_task *task, ReduxAccesses redux)
{
	const struct starpu_codelet *cl = task->cl;
	if (!cl)
		return UnfusedReason::no_codelet;
	if (!(task->where & STARPU_CPU) || !cl->cpu_funcs[0])
		return UnfusedReason::no_cpu_implementation;
	if (STARPU_MAXIMPLEMENTATIONS > 1 && cl->cpu_funcs[1])
		return UnfusedReason::several_cpu_implementations;
	if (cl->can_execute)
		return UnfusedReason::can_execute_hook;
	if (cl->type != STARPU_SEQ)
		return UnfusedReason::parallel_codelet;
	if (cl->specific_nodes)
		return UnfusedReason::specific_nodes;
	if (task->execute_on_a_specific_worker || task->workerids)
		return UnfusedReason::pinned_to_worker;
	if (task->regenerate)
		return UnfusedReason::regenerate;
	if (task->synchronous)
		return UnfusedReason::synchronous;
	if (task->bundle)
		return UnfusedReason::bundle;
	if (task->prologue_callback_pop_func)
		return UnfusedReason::pop_prologue;
	if (!task->sequential_consistency)
		return UnfusedReason::sequential_consistency_off;
	/* A task whose termination waits for another (STARPU_TASK_END_DEPS) is
	 * typically submitted from inside that other task, and the program may
	 * then rely on the order in which data requests queue up (StarPU's
	 * examples/dependency/task_end_dep.c does, after turning sequential
	 * consistency off).  A held member gives its data back until its batch
	 * runs, which would let such a request overtake it. */
	if (task->nb_termination_call_required)
		return UnfusedReason::end_dependencies;
#ifdef HAVE_STRUCT_STARPU_TASK_TRANSACTION
	if (task->transaction)
		return UnfusedReason::transaction;
#endif
	unsigned nbuffers = STARPU_TASK_GET_NBUFFERS(task);
	if (nbuffers == 0)
		return UnfusedReason::no_data;
	for (unsigned i = 0; i < nbuffers; i++) {
		starpu_data_handle_t handle = STARPU_TASK_GET_HANDLE(task, i);
		enum starpu_data_access_mode mode = STARPU_TASK_GET_MODE(task, i);
		if ((mode & STARPU_REDUX) && redux == ReduxAccesses::unfused)
			return UnfusedReason::redux_access;
		if (mode & STARPU_COMMUTE)
			return UnfusedReason::commute_access;
		if (mode & STARPU_SCRATCH)
			return UnfusedReason::scratch_access;
		if (!starpu_data_get_sequential_consistency_flag(handle))
			return UnfusedReason::sequential_consistency_off;
		if (starpu_data_get_interface_id(handle) == STARPU_MULTIFORMAT_INTERFACE_ID)
			return UnfusedReason::multiformat_data;
	}
	return UnfusedReason::none;
}

} // namespace fusing
