/* The program's partition plans as the window sees them (doc/design.md,
 * section 12): which handle is a child of which, and which plans are
 * active, in the order the program submitted its partition calls.
 *
 * The window defers tasks on the children of partition plans
 * (starpu_data_partition_plan) and places the program's partition and
 * unpartition calls between its groups (window_order.h).  Two things make
 * that safe, and both are this class's:
 *  - the order rule needs each handle's parent (parent_of), and a handle's
 *    children must come from one plan: children of two plans of one handle
 *    overlap, which parent_of cannot tell;
 *  - StarPU switches plans by itself when a task or an acquisition
 *    accesses a handle whose plan is not the active one (automatic
 *    partitioning, _starpu_data_partition_access_submit, 1.3 and 1.4): the
 *    switch it submits then accesses siblings the order rule considered
 *    free.  switches_plans() tells, from the state the program's calls left
 *    (mirroring StarPU's _starpu_data_partition_access_look_up), whether
 *    StarPU would switch; the window then stops deferring tasks on that
 *    tree (excluded()).  Merged tasks never switch plans (their codelet
 *    has STARPU_CODELET_NOPLANS): every member was checked.
 *
 * Not thread-safe: the window's mutex_ guards it.  Calls no StarPU
 * function: it follows only what the program's calls said. */
#ifndef STARPU_FUSING_SUBMISSION_PARTITION_TREES_H
#define STARPU_FUSING_SUBMISSION_PARTITION_TREES_H

#include "core/handle_table.h"

#include <starpu.h>

#include <cstddef>
#include <memory>
#include <unordered_map>
#include <vector>

namespace fusing {

class PartitionTrees {
public:
	using Handle = starpu_data_handle_t;

	enum class Call {
		partition,          /* starpu_data_partition_submit */
		partition_readonly, /* starpu_data_partition_readonly_submit */
		upgrade_readwrite,  /* starpu_data_partition_readwrite_upgrade_submit */
		unpartition,        /* starpu_data_unpartition_submit */
	};

	bool any() const { return !nodes_.empty(); }
	bool in_tree(Handle handle) const { return nodes_.count(handle) != 0; }
	/* The handle handle is a child of: see WindowOrder::ParentOf. */
	bool parent_of(Handle handle, Handle &parent) const;
	/* The same, with handle's place in its parent's plan. */
	bool child_of_plan(Handle handle, Handle &parent, unsigned &index) const;
	/* Whether one is the other's ancestor (not the same handle). */
	bool related(Handle a, Handle b) const;
	bool same_tree(Handle a, Handle b) const { return root_of(a) == root_of(b); }

	/* starpu_data_partition_plan(parent, filter, ...) made these
	 * children.  A second plan on one handle excludes its tree. */
	void add_plan(Handle parent, const Handle *children, std::size_t count, const struct starpu_data_filter &filter);
	/* parent's plan: its children in the plan's order and a copy of its
	 * filter (null when parent has no plan). */
	const std::vector<Handle> &plan_children(Handle parent) const;
	const std::shared_ptr<const struct starpu_data_filter> &plan_filter(Handle parent) const;
	/* starpu_data_partition_clean: the children are unregistered. */
	void clean_plan(Handle parent, const Handle *children, std::size_t count);
	/* A partition call of parent's plan reached StarPU: from now on
	 * StarPU may hold accesses to its children. */
	void note_reached_starpu(Handle parent);
	/* Whether these are parent's plan's children, in a followed tree,
	 * and no partition of that plan ever reached StarPU (every one was
	 * elided, note_reached_starpu), nor did StarPU switch plans anywhere
	 * in the tree: no task, acquisition or switch task StarPU knows of
	 * names a child, since each needs the child's plan active in StarPU
	 * (automatic partitioning, which follow_switch records). */
	bool never_reached_starpu(Handle parent, const Handle *children, std::size_t count) const;
	/* A call the program submitted, in program order. */
	void apply(Call call, Handle parent, const Handle *children, std::size_t count);
	/* Whether StarPU, seeing an access to handle now (writes: W or
	 * REDUX), would submit partition or unpartition calls of its own. */
	bool switches_plans(Handle handle, bool writes) const;
	/* StarPU saw that access and switched plans for it: the calls it
	 * submitted are applied, as _starpu_data_partition_access_submit
	 * makes them (datawizard/filters.c, the same in 1.3 and 1.4): the
	 * ancestors that are not active for the access are made so from the
	 * top, and handle, when partitioned in a way the access cannot keep,
	 * is unpartitioned with everything partitioned below it.  writes as
	 * StarPU counts them: W, and REDUX on 1.4.  Not for an excluded
	 * tree, whose plans are not followed. */
	void follow_switch(Handle handle, bool writes);
	/* From now on, nothing in handle's tree is deferred: the root and
	 * every descendant, including children of plans made later. */
	void exclude_tree(Handle handle);
	bool excluded(Handle handle) const;

private:
	struct Node {
		Handle parent = nullptr;
		std::vector<Handle> children; /* of its plan */
		std::shared_ptr<const struct starpu_data_filter> filter; /* of its plan */
		unsigned plans = 0;
		unsigned partitioned = 0; /* active partitions (StarPU's partitioned) */
		bool readonly = false;    /* its active partitions are read-only */
		bool active = false;      /* a child whose plan is active */
		bool active_readonly = false;
		bool excluded = false;
		bool children_reached_starpu = false; /* of its plan: never_reached_starpu() */
	};

	Handle root_of(Handle handle) const;
	void make_ready_for(Handle ancestor, Handle target, bool writes);
	void unpartition_recursively(Handle handle);
	void mark_excluded(Handle handle);
	void forget_subtree(Handle handle);
	void mark_reached_starpu(Handle handle);

	std::unordered_map<Handle, Node> nodes_;
	/* Each child's parent and place in its plan, as nodes_ has them: the
	 * order rule asks for a handle's parent for every access it places or
	 * checks, up to the root (window_order.h), and an open-addressing
	 * lookup there costs a fraction of a node map's (DAHL's main thread
	 * spent 4% of its instructions in those lookups, callgrind, 2 epochs
	 * at 28x28). */
	struct ParentEntry {
		Handle parent = nullptr;
		unsigned index_in_plan = 0;
	};
	HandleTable<Handle, ParentEntry> parents_;
};

} // namespace fusing

#endif
