/* Explicit dependencies while tasks are deferred (part of the flush
 * barrier, flush_barrier.rules "own").
 *
 * A task with declared dependencies, or named as one before its submission,
 * has a job in StarPU and is never deferred (window.cpp).  What remains is a
 * dependency declared on a task the window already deferred: StarPU never
 * sees that task terminate, so the declaration flushes the window, waits
 * until the task has run (its group is in StarPU's hands by then), and
 * leaves it out, which is what StarPU does with a dependency on a task that
 * has terminated (live_members.h).  The declaring thread.
 *
 * Also here: starpu_task_destroy and starpu_task_clean, after which a task's
 * address may name another task. */
#include "submission/starpu_code.h"
#include "submission/starpu_functions.h"
#include "submission/window.h"
#include "starpu_fusing.h"

#include <cstdarg>
#include <vector>

namespace {

using DeclareArray = fusing::StarpuFunction<void (*)(struct starpu_task *, unsigned, struct starpu_task *[])>;
DeclareArray starpu_declare_deps_array("starpu_task_declare_deps_array");
DeclareArray starpu_declare_end_deps_array("starpu_task_declare_end_deps_array");
fusing::StarpuFunction<void (*)(struct starpu_task *)> starpu_destroy("starpu_task_destroy");
fusing::StarpuFunction<void (*)(struct starpu_task *)> starpu_clean("starpu_task_clean");

/* caller: the declaration's return address.  StarPU declares
 * dependencies between tasks of its own (reductions,
 * _starpu_data_end_reduction_mode, 1.3), from a worker holding a handle's
 * lock, where a flush must not happen (starpu_code.h); but starpu_task_insert
 * declares the program's (STARPU_TASK_DEPS_ARRAY) from StarPU's code too:
 * a declaration from StarPU's code naming no deferred task passes. */
void declare(DeclareArray &starpu_function, struct starpu_task *task, unsigned ndeps, struct starpu_task *deps[], const void *caller)
{
	auto starpu_declare = starpu_function.get();
	fusing::SubmissionWindow *window = fusing::active_submission_window();
	if (!window || fusing::InsideStarpuScope::active())
		return starpu_declare(task, ndeps, deps);
	if (fusing::called_from_starpu(caller)) {
		bool names_deferred = false;
		for (unsigned i = 0; i < ndeps && !names_deferred; i++)
			names_deferred = window->live().deferred(deps[i]);
		if (!names_deferred)
			return starpu_declare(task, ndeps, deps);
	}
	window->flush();
	std::vector<struct starpu_task *> kept;
	kept.reserve(ndeps);
	for (unsigned i = 0; i < ndeps; i++)
		if (!window->live().was_deferred(deps[i]))
			kept.push_back(deps[i]);
	starpu_declare(task, static_cast<unsigned>(kept.size()), kept.data());
}

void declare_listed(DeclareArray &array_function, struct starpu_task *task, unsigned ndeps, va_list args, const void *caller)
{
	std::vector<struct starpu_task *> deps(ndeps);
	for (unsigned i = 0; i < ndeps; i++)
		deps[i] = va_arg(args, struct starpu_task *);
	declare(array_function, task, ndeps, deps.data(), caller);
}

void forget(struct starpu_task *task)
{
	if (fusing::SubmissionWindow *window = fusing::active_submission_window())
		window->live().forget(task);
}

} // namespace

extern "C" {

FUSING_PUBLIC void starpu_task_declare_deps_array(struct starpu_task *task, unsigned ndeps, struct starpu_task *task_array[])
{
	declare(starpu_declare_deps_array, task, ndeps, task_array, __builtin_return_address(0));
}

FUSING_PUBLIC void starpu_task_declare_deps(struct starpu_task *task, unsigned ndeps, ...)
{
	va_list args;
	va_start(args, ndeps);
	declare_listed(starpu_declare_deps_array, task, ndeps, args, __builtin_return_address(0));
	va_end(args);
}

FUSING_PUBLIC void starpu_task_declare_end_deps_array(struct starpu_task *task, unsigned ndeps, struct starpu_task *task_array[])
{
	declare(starpu_declare_end_deps_array, task, ndeps, task_array, __builtin_return_address(0));
}

FUSING_PUBLIC void starpu_task_declare_end_deps(struct starpu_task *task, unsigned ndeps, ...)
{
	va_list args;
	va_start(args, ndeps);
	declare_listed(starpu_declare_end_deps_array, task, ndeps, args, __builtin_return_address(0));
	va_end(args);
}

FUSING_PUBLIC void starpu_task_destroy(struct starpu_task *task)
{
	forget(task);
	starpu_destroy.get()(task);
}

FUSING_PUBLIC void starpu_task_clean(struct starpu_task *task)
{
	forget(task);
	starpu_clean.get()(task);
}

} // extern "C"
