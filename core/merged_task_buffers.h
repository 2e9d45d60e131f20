/* Giving a merged task its buffers: each handle once, with its merged mode
 * (buffer_merge.h).  Shared by ready-time batches (merged_task.cpp) and
 * submission-time groups (submission/merged_group.cpp); the thread building
 * the merged task, before it is submitted. */
#ifndef STARPU_FUSING_CORE_MERGED_TASK_BUFFERS_H
#define STARPU_FUSING_CORE_MERGED_TASK_BUFFERS_H

#include <starpu.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace fusing {

/* Stops the program when memory runs out: the members could not run. */
inline void give_buffers(struct starpu_task *task, const std::vector<starpu_data_handle_t> &handles,
			 const std::vector<enum starpu_data_access_mode> &modes)
{
	const std::size_t nhandles = handles.size();
	task->nbuffers = static_cast<int>(nhandles);
	/* StarPU frees dyn_handles and dyn_modes with free() when it destroys
	 * the task (starpu_task_clean). */
	task->dyn_handles = static_cast<starpu_data_handle_t *>(std::malloc(nhandles * sizeof(starpu_data_handle_t)));
	task->dyn_modes = static_cast<enum starpu_data_access_mode *>(std::malloc(nhandles * sizeof(enum starpu_data_access_mode)));
	if (!task->dyn_handles || !task->dyn_modes) {
		std::fprintf(stderr, "starpu-fusing: out of memory giving a merged task its %zu buffers\n", nhandles);
		std::abort();
	}
	std::copy(handles.begin(), handles.end(), task->dyn_handles);
	std::copy(modes.begin(), modes.end(), task->dyn_modes);
}

} // namespace fusing

#endif
