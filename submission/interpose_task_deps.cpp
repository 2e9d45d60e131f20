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

void declare(DeclareArray &starpu_function, struct starpu_task *task, unsigned ndeps, struct starpu_task *deps[])
{
	auto starpu_declare = starpu_function.get();
	fusing::SubmissionWindow *window = fusing::active_submission_window();
	if (!window || fusing::InsideStarpuScope::active())
		return starpu_declare(task, ndeps, deps);
	window->flush();
	std::vector<struct starpu_task *> kept;
	kept.reserve(ndeps);
	for (unsigned i = 0; i < ndeps; i++)
		if (!window->live().was_deferred(deps[i]))
			kept.push_back(deps[i]);
	starpu_declare(task, static_cast<unsigned>(kept.size()), kept.data());
}

void declare_listed(DeclareArray &array_function, struct starpu_task *task, unsigned ndeps, va_list args)
{
	std::vector<struct starpu_task *> deps(ndeps);
	for (unsigned i = 0; i < ndeps; i++)
		deps[i] = va_arg(args, struct starpu_task *);
	declare(array_function, task, ndeps, deps.data());
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
	declare(starpu_declare_deps_array, task, ndeps, task_array);
}

FUSING_PUBLIC void starpu_task_declare_deps(struct starpu_task *task, unsigned ndeps, ...)
{
	va_list args;
	va_start(args, ndeps);
	declare_listed(starpu_declare_deps_array, task, ndeps, args);
	va_end(args);
}

FUSING_PUBLIC void starpu_task_declare_end_deps_array(struct starpu_task *task, unsigned ndeps, struct starpu_task *task_array[])
{
	declare(starpu_declare_end_deps_array, task, ndeps, task_array);
}

FUSING_PUBLIC void starpu_task_declare_end_deps(struct starpu_task *task, unsigned ndeps, ...)
{
	va_list args;
	va_start(args, ndeps);
	declare_listed(starpu_declare_end_deps_array, task, ndeps, args);
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
