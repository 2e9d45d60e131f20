/* Stand-ins terminating deferred tasks given end dependencies; see
 * end_dependency_stand_in.h. */
#include "submission/end_dependency_stand_in.h"

#include "core/current_member.h"
#include "core/merged_task_buffers.h"
#include "core/starpu_functions.h"
#include "submission/access_modes.h"

#include <algorithm>

namespace fusing {
namespace {

struct StandInCodelet {
	struct starpu_codelet cl;
	StandInCodelet()
	{
		starpu_codelet_init(&cl);
		/* No work and no transfer: StarPU takes its data locks in
		 * program order and terminates it once its end dependencies are
		 * released (_starpu_fetch_nowhere_task_input, coherency.c). */
		cl.where = STARPU_NOWHERE;
		cl.nbuffers = STARPU_VARIABLE_NBUFFERS;
		/* StarPU switches no plan for it: it follows its member, which
		 * needed none (partition_trees.h). */
		cl.flags = STARPU_CODELET_NOPLANS;
		cl.name = "fusing_end_dependency_stand_in";
	}
};

StandInCodelet &stand_in_codelet()
{
	static StandInCodelet codelet;
	return codelet;
}

/* The stand-in's callback, in the thread that terminates it: the member
 * terminates now, as StarPU would have terminated it, with
 * starpu_task_get_current() answering the member (current_member.h). */
void terminate_member(void *arg)
{
	struct starpu_task *member = static_cast<struct starpu_task *>(arg);
	/* Read first: a kept member's callback may submit it again. */
	const bool destroy = member->destroy;
	void (*callback)(void *) = member->callback_func ? member->callback_func : member->cl->callback_func;
	if (callback) {
		RunningMemberScope running(member, 1, nullptr, starpu_task_get_current());
		callback(member->callback_arg);
	}
	/* Deferred tasks are detached: StarPU refuses to destroy such a task
	 * with destroy = 1, and would have freed it now. */
	if (destroy) {
		member->destroy = 0;
		starpu_task_destroy(member);
	}
}

} // namespace

struct starpu_task *make_end_dependency_stand_in(struct starpu_task *member)
{
	struct starpu_task *stand_in = starpu_task_create();
	stand_in->cl = &stand_in_codelet().cl;
	stand_in->sched_ctx = member->sched_ctx;
	stand_in->priority = member->priority;
	stand_in->callback_func = terminate_member;
	stand_in->callback_arg = member;
	stand_in->name = member->name ? member->name : member->cl->name;
	if (!member->destroy) {
		stand_in->detach = 0;
		stand_in->destroy = 0;
	}
	starpu_own_task_end_dep_add(stand_in, 1);
	return stand_in;
}

void give_member_accesses(struct starpu_task *stand_in, const std::vector<starpu_data_handle_t> &handles,
			  const std::vector<enum starpu_data_access_mode> &modes)
{
	std::vector<starpu_data_handle_t> merged_handles;
	std::vector<enum starpu_data_access_mode> merged_modes;
	for (std::size_t u = 0; u < handles.size(); u++) {
		/* What follows the member on data it wrote (or reduced) reads its
		 * result: it must follow the stand-in as a writer. */
		const bool writes = changes_data(modes[u]);
		const auto mode = writes ? STARPU_RW : STARPU_R;
		auto found = std::find(merged_handles.begin(), merged_handles.end(), handles[u]);
		if (found == merged_handles.end()) {
			merged_handles.push_back(handles[u]);
			merged_modes.push_back(mode);
		} else if (writes) {
			merged_modes[static_cast<std::size_t>(found - merged_handles.begin())] = STARPU_RW;
		}
	}
	give_buffers(stand_in, merged_handles, merged_modes);
}

void discard_end_dependency_stand_in(struct starpu_task *stand_in)
{
	stand_in->destroy = 0;
	stand_in->callback_func = nullptr;
	starpu_task_destroy(stand_in);
}

void member_ran_for_stand_in(struct starpu_task *stand_in)
{
	starpu_own_task_end_dep_release(stand_in);
}

} // namespace fusing
