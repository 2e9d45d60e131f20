/* The program's partition plans as the window sees them; see
 * partition_trees.h.  Under the window's mutex_. */
#include "submission/partition_trees.h"

#include <algorithm>

namespace fusing {

bool PartitionTrees::parent_of(Handle handle, Handle &parent) const
{
	const ParentEntry *entry = parents_.find(handle);
	if (!entry)
		return false;
	parent = entry->parent;
	return true;
}

bool PartitionTrees::child_of_plan(Handle handle, Handle &parent, unsigned &index) const
{
	const ParentEntry *entry = parents_.find(handle);
	if (!entry)
		return false;
	parent = entry->parent;
	index = entry->index_in_plan;
	return true;
}

bool PartitionTrees::related(Handle a, Handle b) const
{
	if (a == b)
		return false;
	Handle ancestor;
	for (Handle h = a; parent_of(h, ancestor); h = ancestor)
		if (ancestor == b)
			return true;
	for (Handle h = b; parent_of(h, ancestor); h = ancestor)
		if (ancestor == a)
			return true;
	return false;
}

PartitionTrees::Handle PartitionTrees::root_of(Handle handle) const
{
	Handle ancestor;
	while (parent_of(handle, ancestor))
		handle = ancestor;
	return handle;
}

void PartitionTrees::add_plan(Handle parent, const Handle *children, std::size_t count, const struct starpu_data_filter &filter)
{
	Node &node = nodes_[parent];
	node.plans++;
	node.filter = std::make_shared<const struct starpu_data_filter>(filter);
	node.children_reached_starpu = false; /* a second plan excludes the tree */
	for (std::size_t i = 0; i < count; i++) {
		Node &child = nodes_[children[i]];
		child = Node{};
		child.parent = parent;
		child.excluded = node.excluded;
		parents_.find_or_add(children[i]) = ParentEntry{parent, static_cast<unsigned>(i)};
		node.children.push_back(children[i]);
	}
	if (node.plans > 1)
		exclude_tree(parent);
}

const std::vector<PartitionTrees::Handle> &PartitionTrees::plan_children(Handle parent) const
{
	static const std::vector<Handle> none;
	auto node = nodes_.find(parent);
	return node == nodes_.end() ? none : node->second.children;
}

const std::shared_ptr<const struct starpu_data_filter> &PartitionTrees::plan_filter(Handle parent) const
{
	static const std::shared_ptr<const struct starpu_data_filter> none;
	auto node = nodes_.find(parent);
	return node == nodes_.end() ? none : node->second.filter;
}

void PartitionTrees::forget_subtree(Handle handle)
{
	auto node = nodes_.find(handle);
	if (node == nodes_.end())
		return;
	std::vector<Handle> children = std::move(node->second.children);
	nodes_.erase(node);
	parents_.erase(handle);
	for (Handle child : children)
		forget_subtree(child);
}

void PartitionTrees::clean_plan(Handle parent, const Handle *children, std::size_t count)
{
	auto node = nodes_.find(parent);
	if (node == nodes_.end())
		return;
	if (count > 0) {
		auto first = nodes_.find(children[0]);
		/* StarPU unpartitions first when the plan is active. */
		if (first != nodes_.end() && first->second.active)
			apply(Call::unpartition, parent, children, count);
	}
	node = nodes_.find(parent);
	Node &p = node->second;
	for (std::size_t i = 0; i < count; i++) {
		for (std::size_t c = 0; c < p.children.size(); c++)
			if (p.children[c] == children[i]) {
				p.children.erase(p.children.begin() + static_cast<long>(c));
				break;
			}
		forget_subtree(children[i]);
	}
	if (p.plans > 0)
		p.plans--;
	if (p.plans == 0)
		p.filter.reset();
	if (p.plans == 0 && !p.parent)
		nodes_.erase(node);
}

void PartitionTrees::note_reached_starpu(Handle parent)
{
	auto node = nodes_.find(parent);
	if (node != nodes_.end())
		node->second.children_reached_starpu = true;
}

bool PartitionTrees::never_reached_starpu(Handle parent, const Handle *children, std::size_t count) const
{
	auto node = nodes_.find(parent);
	if (node == nodes_.end() || node->second.excluded || node->second.children_reached_starpu || node->second.plans != 1)
		return false;
	const std::vector<Handle> &planned = node->second.children;
	return planned.size() == count && std::equal(planned.begin(), planned.end(), children);
}

/* Every plan of handle's subtree. */
void PartitionTrees::mark_reached_starpu(Handle handle)
{
	auto node = nodes_.find(handle);
	if (node == nodes_.end())
		return;
	node->second.children_reached_starpu = true;
	for (Handle child : node->second.children)
		mark_reached_starpu(child);
}

void PartitionTrees::apply(Call call, Handle parent, const Handle *children, std::size_t count)
{
	Node &p = nodes_[parent];
	auto each_child = [&](auto change) {
		for (std::size_t i = 0; i < count; i++)
			change(nodes_[children[i]]);
	};
	switch (call) {
	case Call::partition:
		p.partitioned++;
		each_child([](Node &child) { child.active = true; });
		break;
	case Call::partition_readonly:
		p.partitioned++;
		p.readonly = true;
		each_child([](Node &child) { child.active = child.active_readonly = true; });
		break;
	case Call::upgrade_readwrite:
		p.readonly = false;
		each_child([](Node &child) { child.active_readonly = false; });
		break;
	case Call::unpartition:
		if (p.partitioned > 0)
			p.partitioned--;
		if (p.partitioned == 0)
			p.readonly = false;
		each_child([](Node &child) { child.active = child.active_readonly = false; });
		break;
	}
}

bool PartitionTrees::switches_plans(Handle handle, bool writes) const
{
	auto found = nodes_.find(handle);
	if (found == nodes_.end())
		return false;
	const Node &node = found->second;
	/* Partitioned itself: StarPU unpartitions it, unless only read while
	 * read-only partitioned. */
	if (node.partitioned > 0 && (writes || !node.readonly))
		return true;
	/* A child: its plan must be active, read-write for a write (the root
	 * is always active). */
	return node.parent && (!node.active || (writes && node.active_readonly));
}

void PartitionTrees::follow_switch(Handle handle, bool writes)
{
	/* Which plans StarPU activates is the tree's business: every plan
	 * of the tree counts as seen (never_reached_starpu). */
	mark_reached_starpu(root_of(handle));
	make_ready_for(handle, nullptr, writes);
}

/* _starpu_data_partition_access_look_up(ancestor, target, write).  A
 * followed handle has one plan (a second one excludes its tree): when
 * partitioned, its active children are its plan's, the target's
 * siblings. */
void PartitionTrees::make_ready_for(Handle ancestor, Handle target, bool writes)
{
	/* References into nodes_ stay valid: only rehashing inserts could
	 * move elements, and references survive rehashing. */
	Node &node = nodes_[ancestor];
	const bool active = !node.parent || node.active; /* the root is always active, read-write */
	if (!active || (writes && node.parent && node.active_readonly))
		make_ready_for(node.parent, ancestor, writes);
	const bool unpartition = target ? !writes && !node.readonly : writes || !node.readonly;
	if (node.partitioned > 0 && unpartition)
		unpartition_recursively(ancestor);
	if (!target)
		return;
	/* apply() changes the children's nodes, never node.children. */
	if (node.partitioned > 0)
		apply(writes ? Call::upgrade_readwrite : Call::partition_readonly, ancestor, node.children.data(), node.children.size());
	else
		apply(writes ? Call::partition : Call::partition_readonly, ancestor, node.children.data(), node.children.size());
}

/* starpu_data_unpartition_submit_r: every active partition, the
 * children's own first. */
void PartitionTrees::unpartition_recursively(Handle handle)
{
	Node &node = nodes_[handle];
	while (node.partitioned > 0) {
		for (Handle child : node.children)
			unpartition_recursively(child);
		apply(Call::unpartition, handle, node.children.data(), node.children.size());
	}
}

void PartitionTrees::mark_excluded(Handle handle)
{
	auto node = nodes_.find(handle);
	if (node == nodes_.end())
		return;
	node->second.excluded = true;
	for (Handle child : node->second.children)
		mark_excluded(child);
}

void PartitionTrees::exclude_tree(Handle handle)
{
	mark_excluded(root_of(handle));
}

bool PartitionTrees::excluded(Handle handle) const
{
	auto node = nodes_.find(handle);
	return node != nodes_.end() && node->second.excluded;
}

} // namespace fusing
