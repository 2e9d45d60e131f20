/* The task that terminates a deferred task in its place once the program has
 * added end dependencies to it after its submission (doc/design.md, section
 * 12, end dependencies added after submission).
 *
 * StarPU's promise: a task given end dependencies (starpu_task_end_dep_add,
 * starpu_task_declare_end_deps) terminates, i.e. its dependents start and
 * its callback runs, only once they are released.  A deferred task runs
 * inside a merged task, which terminates it with the others; StarPU never
 * saw it, so the dependencies cannot hold it back there.  Instead the merged
 * task running it hands its termination to a stand-in: a task StarPU knows,
 * with no work (STARPU_NOWHERE), accessing the member's data as the member
 * did (read where it only read, else read-write), so that what follows on
 * that data in program order follows the stand-in, and with end
 * dependencies of its own: one that the merged task releases once the
 * member has run, and the program's (CarriedEndDependencies releases the
 * stand-in when the program releases the member;
 * interpose/interpose_task_deps.cpp).  The stand-in's callback runs the
 * member's callback and frees it as StarPU would, where StarPU would: in
 * the thread that releases the last dependency.
 *
 * Threads: made and submitted under the window's lock by the thread adding
 * the dependency (SubmissionWindow::stand_in_for_end_dependencies); its
 * callback runs in whichever thread terminates it. */
#ifndef STARPU_FUSING_SUBMISSION_END_DEPENDENCY_STAND_IN_H
#define STARPU_FUSING_SUBMISSION_END_DEPENDENCY_STAND_IN_H

#include <starpu.h>

#include <vector>

namespace fusing {

/* A stand-in for member (not submitted): detached unless member is kept
 * (destroy = 0: the program may still name it, and the stand-in with it:
 * named_members.h), with the one end dependency its merged task releases. */
struct starpu_task *make_end_dependency_stand_in(struct starpu_task *member);
/* Gives stand_in the member's accesses, its uses (handle, mode) as the
 * window recorded them when it deferred the member. */
void give_member_accesses(struct starpu_task *stand_in, const std::vector<starpu_data_handle_t> &handles,
			  const std::vector<enum starpu_data_access_mode> &modes);
/* Frees a stand-in that was not needed (never submitted, dependencies
 * never released: its member was not deferred after all). */
void discard_end_dependency_stand_in(struct starpu_task *stand_in);
/* The merged task running member has run it: the stand-in may terminate
 * once the program's dependencies are released.  The worker, in the
 * merged task's callback. */
void member_ran_for_stand_in(struct starpu_task *stand_in);

} // namespace fusing

#endif
