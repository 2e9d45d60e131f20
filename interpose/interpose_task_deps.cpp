/* Explicit dependencies while tasks are deferred (part of the flush
 * barrier, flush_barrier.rules "own").
 *
 * A task with declared dependencies, or named as one before its submission,
 * has a job in StarPU and is never deferred (submission/window.cpp).  What remains is a
 * dependency declared on a task the window deferred, which StarPU never
 * sees: the declaration names the merged task that runs it instead
 * (SubmissionWindow::task_for_dependency, submission/named_members.h) and returns at
 * once, as StarPU's does.  The current member is named by its merged task
 * with starpu_task_get_current() answering as StarPU would, since StarPU
 * accepts a dependency on a submitted task it destroys itself only when that
 * task is the current one (_starpu_task_declare_deps_array, task_deps.c).
 * The declaring thread: the program's, a callback's, a codelet's, or
 * StarPU's own (reductions on 1.3; starpu_task_insert's
 * STARPU_TASK_DEPS_ARRAY), which names no deferred task.
 *
 * End dependencies a member adds to itself while it runs (StarPU's
 * task_end_dep_add example: starpu_task_end_dep_add on
 * starpu_task_get_current(), released by the callback of a task it
 * submits): StarPU would delay the task's termination (its callback, its
 * dependents, its destruction) until the last release.  StarPU never saw
 * the member, so its merged task carries them: the addition goes to the
 * merged task, and each release of the member releases it instead
 * (CarriedEndDependencies below).  Members merged after it into the same
 * task have run by then (doc/design.md, section 12, limits).
 *
 * End dependencies the program adds to a deferred task from elsewhere after
 * submitting it (starpu_task_end_dep_add, or starpu_task_declare_end_deps,
 * right after starpu_task_submit for instance): the window gives the task a
 * stand-in that terminates it (SubmissionWindow::stand_in_for_end_dependencies)
 * and carries them.  Before, StarPU got them on a task it never ran: its
 * callback and dependents came before the release (2 of 30 dependents and
 * 1 of 15 callbacks over 10 runs at 7783284; every time in
 * promises_end_dependency_added_in_the_window).  StarPU's own calls (the
 * STARPU_TASK_END_DEP of starpu_task_insert, before submission;
 * starpu_task_declare_end_deps_array adding its count) pass.
 *
 * Also here: starpu_task_destroy, starpu_task_clean and starpu_task_init,
 * after which a task's address may name another task. */
#include "core/current_member.h"
#include "core/starpu_functions.h"
#include "submission/starpu_code.h"
#include "submission/window.h"
#include "starpu_fusing.h"

#include <atomic>
#include <cstdarg>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace {

using DeclareArray = fusing::StarpuFunction<void (*)(struct starpu_task *, unsigned, struct starpu_task *[])>;
DeclareArray starpu_declare_deps_array("starpu_task_declare_deps_array");
DeclareArray starpu_declare_end_deps_array("starpu_task_declare_end_deps_array");
fusing::StarpuFunction<void (*)(struct starpu_task *)> starpu_destroy("starpu_task_destroy");
fusing::StarpuFunction<void (*)(struct starpu_task *)> starpu_clean("starpu_task_clean");
fusing::StarpuFunction<void (*)(struct starpu_task *)> starpu_own_task_init("starpu_task_init");

/* Members whose end dependencies their merged task carries, with how many
 * are still to be released.  Any thread (the member's worker adds, any
 * thread releases); mutex_ guards the map, and StarPU is called without it.
 * Every member a merged task destroys passes through forget(): until a
 * member first carries one, nothing takes the lock. */
class CarriedEndDependencies {
public:
	void carry(struct starpu_task *member, struct starpu_task *merged, int count)
	{
		std::lock_guard<std::mutex> lock(mutex_);
		Carried &carried = carried_[member];
		carried.merged = merged;
		carried.outstanding += count;
		any_.store(true, std::memory_order_release);
	}
	/* The task carrying member's end dependencies while some are still
	 * to be released, else null. */
	struct starpu_task *carrier_of(struct starpu_task *member)
	{
		if (!any_.load(std::memory_order_acquire))
			return nullptr;
		std::lock_guard<std::mutex> lock(mutex_);
		auto found = carried_.find(member);
		return found == carried_.end() ? nullptr : found->second.merged;
	}
	/* The merged task to release in member's place, or null when member
	 * carries none (StarPU knows it). */
	struct starpu_task *take_one(struct starpu_task *member)
	{
		if (!any_.load(std::memory_order_acquire))
			return nullptr;
		std::lock_guard<std::mutex> lock(mutex_);
		auto found = carried_.find(member);
		if (found == carried_.end())
			return nullptr;
		struct starpu_task *merged = found->second.merged;
		if (--found->second.outstanding <= 0)
			carried_.erase(found);
		return merged;
	}
	void forget(struct starpu_task *task)
	{
		if (!any_.load(std::memory_order_acquire))
			return;
		std::lock_guard<std::mutex> lock(mutex_);
		carried_.erase(task);
	}

private:
	struct Carried {
		struct starpu_task *merged = nullptr;
		int outstanding = 0;
	};
	std::mutex mutex_;
	std::unordered_map<struct starpu_task *, Carried> carried_; /* guarded by mutex_ */
	std::atomic<bool> any_{false}; /* carried_ was ever non-empty */
};

CarriedEndDependencies &carried_end_dependencies()
{
	static CarriedEndDependencies carried;
	return carried;
}

/* Who carries task's end dependencies: its merged task when task is the
 * member running on this thread, the task carrying some already (a
 * stand-in, or that merged task), else task itself. */
struct starpu_task *end_dependency_carrier(struct starpu_task *task)
{
	if (struct starpu_task *merged = fusing::merged_task_standing_for(task))
		return merged;
	struct starpu_task *carrier = carried_end_dependencies().carrier_of(task);
	return carrier ? carrier : task;
}

/* Whether StarPU has task, submitted and not terminated (deferred tasks
 * stay STARPU_TASK_INIT; _starpu_task_submit_head, core/task.c). */
bool submitted_to_starpu(const struct starpu_task *task)
{
	return task->status != STARPU_TASK_INIT && task->status != STARPU_TASK_FINISHED && task->status != STARPU_TASK_STOPPED;
}

/* The window, when a program's call at caller may name a deferred task:
 * not StarPU's own calls, nor this library's (the fault-tolerance prologue
 * adds an end dependency to its meta task, whose callback StarPU then
 * requires to be unset: interpose_fault_tolerance.cpp). */
fusing::SubmissionWindow *window_for_program_call(const void *caller)
{
	fusing::SubmissionWindow *window = fusing::active_submission_window();
	if (!window || fusing::InsideStarpuScope::active() || fusing::called_from_starpu(caller) ||
	    fusing::called_from_this_library(caller))
		return nullptr;
	return window;
}

void declare(DeclareArray &starpu_function, struct starpu_task *task, unsigned ndeps, struct starpu_task *deps[])
{
	auto starpu_declare = starpu_function.get();
	fusing::SubmissionWindow *window = fusing::active_submission_window();
	if (!window || fusing::InsideStarpuScope::active())
		return starpu_declare(task, ndeps, deps);
	std::vector<struct starpu_task *> named(deps, deps + ndeps);
	for (struct starpu_task *&dep : named)
		dep = window->task_for_dependency(dep);
	fusing::StarpuViewOfCurrentTask starpu_view;
	starpu_declare(task, ndeps, named.data());
}

/* End dependencies declared on task: on its stand-in when the window
 * deferred it (before StarPU has the stand-in), else on its carrier.  The
 * tasks depended on are named first: naming one may hand task's group
 * over, which the stand-in then follows. */
void declare_end_deps(struct starpu_task *task, unsigned ndeps, struct starpu_task *deps[], const void *caller)
{
	struct starpu_task *carrier = end_dependency_carrier(task);
	fusing::SubmissionWindow *window = window_for_program_call(caller);
	if (carrier != task || ndeps == 0 || !window)
		return declare(starpu_declare_end_deps_array, carrier, ndeps, deps);
	std::vector<struct starpu_task *> named(deps, deps + ndeps);
	for (struct starpu_task *&dep : named)
		dep = window->task_for_dependency(dep);
	auto starpu_declare = starpu_declare_end_deps_array.get();
	auto declare_named = [&](struct starpu_task *target) {
		fusing::StarpuViewOfCurrentTask starpu_view;
		starpu_declare(target, ndeps, named.data());
	};
	if (window->stand_in_for_end_dependencies(task, declare_named))
		return;
	if (submitted_to_starpu(task))
		window->end_dependencies_added_to_submitted(task);
	declare_named(task);
}

std::vector<struct starpu_task *> listed(unsigned ndeps, va_list args)
{
	std::vector<struct starpu_task *> deps(ndeps);
	for (unsigned i = 0; i < ndeps; i++)
		deps[i] = va_arg(args, struct starpu_task *);
	return deps;
}

void forget(struct starpu_task *task)
{
	carried_end_dependencies().forget(task);
	if (fusing::SubmissionWindow *window = fusing::active_submission_window())
		window->forget(task);
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
	std::vector<struct starpu_task *> deps = listed(ndeps, args);
	va_end(args);
	declare(starpu_declare_deps_array, task, ndeps, deps.data());
}

FUSING_PUBLIC void starpu_task_declare_end_deps_array(struct starpu_task *task, unsigned ndeps, struct starpu_task *task_array[])
{
	declare_end_deps(task, ndeps, task_array, __builtin_return_address(0));
}

FUSING_PUBLIC void starpu_task_declare_end_deps(struct starpu_task *task, unsigned ndeps, ...)
{
	va_list args;
	va_start(args, ndeps);
	std::vector<struct starpu_task *> deps = listed(ndeps, args);
	va_end(args);
	declare_end_deps(task, ndeps, deps.data(), __builtin_return_address(0));
}

FUSING_PUBLIC void starpu_task_end_dep_add(struct starpu_task *task, int nb_deps)
{
	struct starpu_task *carrier = end_dependency_carrier(task);
	fusing::SubmissionWindow *window = window_for_program_call(__builtin_return_address(0));
	if (carrier == task && nb_deps > 0 && window) {
		if (window->stand_in_for_end_dependencies(task, [&](struct starpu_task *stand_in) {
			    carried_end_dependencies().carry(task, stand_in, nb_deps);
			    fusing::starpu_own_task_end_dep_add(stand_in, nb_deps);
		    }))
			return;
		if (submitted_to_starpu(task))
			window->end_dependencies_added_to_submitted(task);
	}
	if (carrier != task)
		carried_end_dependencies().carry(task, carrier, nb_deps);
	fusing::starpu_own_task_end_dep_add(carrier, nb_deps);
}

FUSING_PUBLIC void starpu_task_end_dep_release(struct starpu_task *task)
{
	if (struct starpu_task *merged = carried_end_dependencies().take_one(task))
		task = merged;
	fusing::starpu_own_task_end_dep_release(task);
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

FUSING_PUBLIC void starpu_task_init(struct starpu_task *task)
{
	forget(task);
	starpu_own_task_init.get()(task);
}

} // extern "C"
