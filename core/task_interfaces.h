/* task->interfaces as StarPU fills them at submission (public fields of
 * struct starpu_task): each handle's interface on its home node
 * (_starpu_task_submit, core/task.c, 1.3 and 1.4: "Provide the home
 * interface for now if any, for can_execute hooks").  Performance models
 * read them: a multiple regression model's parameters function (StarPU's
 * examples/mlr reads STARPU_VECTOR_GET_PTR(task->interfaces[0])), a cost
 * function.  The window asks a task's model before StarPU's submission,
 * and StarPU never sees a deferred task, so they are filled here first:
 * StarPU's mlr example crashed (1 run in 20, 1.4, dmdas) when the window
 * asked its model about a task StarPU had not filled.
 *
 * Limit: StarPU sets them again when the task runs, to the interfaces its
 * function gets (_starpu_fetch_task_input); a member keeps its home ones.
 * On a memory node of its own (another NUMA node) a model reading them
 * while StarPU calibrates it then reads the home node's.  The thread
 * deferring the task. */
#ifndef STARPU_FUSING_CORE_TASK_INTERFACES_H
#define STARPU_FUSING_CORE_TASK_INTERFACES_H

#include <starpu.h>

#include <cstdlib>

namespace fusing {

/* Returns false when a task with more buffers than STARPU_NMAXBUFS
 * (dyn_handles) could not get its interface array. */
inline bool set_task_interface(struct starpu_task *task, unsigned i, void *interface)
{
	if (!task->dyn_handles) {
		task->interfaces[i] = interface;
		return true;
	}
	if (!task->dyn_interfaces) {
		/* StarPU allocates it at submission, and starpu_task_clean
		 * frees it (core/task.c, 1.3 and 1.4). */
		task->dyn_interfaces = static_cast<void **>(std::calloc(STARPU_TASK_GET_NBUFFERS(task), sizeof(void *)));
		if (!task->dyn_interfaces)
			return false;
	}
	task->dyn_interfaces[i] = interface;
	return true;
}

/* As StarPU at submission: each handle's interface on its home node, when
 * it has one. */
inline void give_home_interfaces(struct starpu_task *task)
{
	const unsigned nbuffers = STARPU_TASK_GET_NBUFFERS(task);
	for (unsigned i = 0; i < nbuffers; i++) {
		starpu_data_handle_t handle = STARPU_TASK_GET_HANDLE(task, i);
		const int home = starpu_data_get_home_node(handle);
		if (home >= 0 && !set_task_interface(task, i, starpu_data_get_interface_on_node(handle, static_cast<unsigned>(home))))
			return;
	}
}

} // namespace fusing

#endif
