#include "submission/retired_members.h"

namespace fusing {

bool RetiredMembers::hand_over(std::vector<struct starpu_task *> &tasks)
{
	if (tasks.empty())
		return true;
	std::lock_guard<std::mutex> lock(mutex_);
	if (waiting_.size() + tasks.size() > kMostWaiting)
		return false;
	if (waiting_.empty())
		waiting_.swap(tasks);
	else
		waiting_.insert(waiting_.end(), tasks.begin(), tasks.end());
	tasks.clear();
	count_.store(waiting_.size(), std::memory_order_relaxed);
	return true;
}

void RetiredMembers::free_waiting()
{
	if (count_.load(std::memory_order_relaxed) == 0)
		return;
	std::vector<struct starpu_task *> tasks;
	{
		std::lock_guard<std::mutex> lock(mutex_);
		tasks.swap(waiting_);
		count_.store(0, std::memory_order_relaxed);
	}
	for (struct starpu_task *task : tasks)
		starpu_task_destroy(task);
}

} // namespace fusing
