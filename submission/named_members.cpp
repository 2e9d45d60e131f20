/* Deferred tasks a program may name; see named_members.h. */
#include "submission/named_members.h"

#include "core/starpu_functions.h"

namespace fusing {
namespace {

/* StarPU's own definitions: this library's starpu_task_destroy forgets
 * names, and starpu_task_finished is a barrier of the window. */
StarpuFunction<void (*)(struct starpu_task *)> starpu_destroy("starpu_task_destroy");
StarpuFunction<int (*)(struct starpu_task *)> starpu_finished("starpu_task_finished");

} // namespace

void NamedMembers::deferred(struct starpu_task *task, std::size_t group)
{
	std::lock_guard<std::mutex> lock(mutex_);
	Place &place = places_[task];
	place.known = true;
	place.merged = nullptr;
	place.group = group;
	any_.store(true, std::memory_order_relaxed);
}

bool NamedMembers::any_kept(const std::vector<struct starpu_task *> &members)
{
	for (const struct starpu_task *member : members)
		if (!member->destroy)
			return true;
	return false;
}

void NamedMembers::submitted(const std::vector<struct starpu_task *> &members, struct starpu_task *merged)
{
	std::lock_guard<std::mutex> lock(mutex_);
	std::size_t named = 0;
	for (struct starpu_task *member : members) {
		auto place = places_.find(member);
		/* A kept member the program forgot while it waited in the window
		 * (no valid program does) is named by nothing. */
		if (member->destroy || place == places_.end() || place->second.merged)
			continue;
		place->second.merged = merged;
		named++;
	}
	if (named > 0)
		names_left_[merged] = named;
	else
		retired_.push_back(merged);
}

void NamedMembers::stand_in(struct starpu_task *task, struct starpu_task *stand_in)
{
	std::lock_guard<std::mutex> lock(mutex_);
	auto place = places_.find(task);
	if (place == places_.end())
		return;
	struct starpu_task *merged = place->second.merged;
	auto left = merged ? names_left_.find(merged) : names_left_.end();
	if (left != names_left_.end() && --left->second == 0) {
		names_left_.erase(left);
		retired_.push_back(merged);
	}
	place->second.merged = stand_in;
	names_left_[stand_in]++;
}

NamedMembers::Place NamedMembers::find(struct starpu_task *task) const
{
	if (!any_.load(std::memory_order_relaxed))
		return Place{};
	std::lock_guard<std::mutex> lock(mutex_);
	auto place = places_.find(task);
	return place == places_.end() ? Place{} : place->second;
}

void NamedMembers::forget(struct starpu_task *task)
{
	if (!any_.load(std::memory_order_relaxed))
		return;
	std::vector<struct starpu_task *> done;
	{
		std::lock_guard<std::mutex> lock(mutex_);
		auto place = places_.find(task);
		if (place != places_.end()) {
			struct starpu_task *merged = place->second.merged;
			places_.erase(place);
			auto left = merged ? names_left_.find(merged) : names_left_.end();
			if (left != names_left_.end() && --left->second == 0) {
				names_left_.erase(left);
				retired_.push_back(merged);
			}
		}
		take_finished_locked(done);
	}
	for (struct starpu_task *merged : done)
		starpu_destroy.get()(merged);
}

void NamedMembers::destroy_finished()
{
	std::vector<struct starpu_task *> done;
	{
		std::lock_guard<std::mutex> lock(mutex_);
		for (auto &left : names_left_)
			retired_.push_back(left.first);
		names_left_.clear();
		places_.clear();
		take_finished_locked(done);
	}
	for (struct starpu_task *merged : done)
		starpu_destroy.get()(merged);
}

void NamedMembers::take_finished_locked(std::vector<struct starpu_task *> &done)
{
	for (std::size_t i = 0; i < retired_.size();) {
		if (starpu_finished.get()(retired_[i])) {
			done.push_back(retired_[i]);
			retired_[i] = retired_.back();
			retired_.pop_back();
		} else {
			i++;
		}
	}
}

} // namespace fusing
