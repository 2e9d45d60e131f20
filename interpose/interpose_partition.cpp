/* Partitioning while tasks are deferred (part of the flush barrier,
 * flush_barrier.rules "own"; doc/design.md, section 12).
 *
 * Partition plans (starpu_data_partition_plan) are followed: the window
 * learns each plan's children (submission/partition_trees.h), defers tasks on them as
 * on any data, and places the program's partition and unpartition calls
 * between its groups (SubmissionWindow::record_partition_call) instead of
 * flushing.  The other partition functions run at once after what they
 * could observe (run_partition_change); those the window does not follow
 * (sequential-consistency and read-only-downgrade forms) stop deferral on
 * their tree.  Synchronous partitioning (starpu_data_partition, map
 * filters) makes children that alias their parent outside any plan: the
 * window flushes and never defers tasks on them.
 *
 * StarPU's own calls (its automatic partitioning, from inside a
 * submission or an acquisition; submission/starpu_code.h) go straight to StarPU.  The
 * program's thread, or a callback's. */
#include "build_config.h"
#include "core/starpu_functions.h"
#include "submission/starpu_code.h"
#include "submission/window.h"
#include "starpu_fusing.h"

#include <cstdarg>
#include <vector>

namespace {

/* caller: the partitioning call's return address.  StarPU's own calls
 * (submission/starpu_code.h: plan transitions it inserts) do not flush; their handles
 * are marked all the same. */
fusing::SubmissionWindow *flush_window(const void *caller)
{
	fusing::SubmissionWindow *window = fusing::active_submission_window();
	if (!window || fusing::InsideStarpuScope::active())
		return nullptr;
	fusing::flush_before_program_call(*window, caller);
	return window;
}

/* root and, recursively, the children StarPU now lists for it. */
void mark_tree(fusing::SubmissionWindow *window, starpu_data_handle_t root)
{
	window->exclude_from_deferral(root);
	const int children = starpu_data_get_nb_children(root);
	for (int i = 0; i < children; i++)
		mark_tree(window, starpu_data_get_child(root, static_cast<unsigned>(i)));
}

/* StarPU's definition of a function this file defines, looked up once per
 * call site (each lambda below has its own static): DAHL calls partition
 * functions tens of thousands of times per epoch, and a dlsym each time was
 * 1% of its main thread's instructions. */
#define STARPU_DEFINITION(Function, name) \
	([]() -> Function { \
		static fusing::StarpuFunction<Function> definition(name); \
		return definition.get(); \
	}())

/* The window the program's call goes through, or null for StarPU's own
 * calls and without submission-time fusion. */
fusing::SubmissionWindow *window_for(const void *caller)
{
	fusing::SubmissionWindow *window = fusing::active_submission_window();
	if (!window || fusing::InsideStarpuScope::active() || fusing::called_from_starpu(caller))
		return nullptr;
	return window;
}

using PartitionCallFunction = void (*)(starpu_data_handle_t, unsigned, starpu_data_handle_t *);

/* A partition call the window places: starpu_call(children) calls StarPU's
 * function on the children, a copy of them when the window hands it over
 * later (the program may reuse its array once the call returned). */
template <typename StarpuCall>
void record(const void *caller, fusing::PartitionTrees::Call call, starpu_data_handle_t parent, unsigned nparts,
	    starpu_data_handle_t *children, StarpuCall starpu_call)
{
	fusing::SubmissionWindow *window = window_for(caller);
	if (!window) {
		if (fusing::SubmissionWindow *active = fusing::active_submission_window())
			active->note_partition_outside_window(parent);
		starpu_call(children);
		return;
	}
	std::vector<starpu_data_handle_t> copied(children, children + nparts);
	window->record_partition_call(call, parent, nparts, children,
				      [starpu_call, copied]() mutable { starpu_call(copied.data()); });
}

/* The same for StarPU's functions taking the parent and the children only. */
void record(const void *caller, fusing::PartitionTrees::Call call, PartitionCallFunction starpu_function, starpu_data_handle_t parent,
	    unsigned nparts, starpu_data_handle_t *children)
{
	record(caller, call, parent, nparts, children,
	       [starpu_function, parent, nparts](starpu_data_handle_t *parts) { starpu_function(parent, nparts, parts); });
}

/* A partition function that runs at once, after what it could observe
 * (SubmissionWindow::run_partition_change). */
template <typename StarpuCall>
void change(const void *caller, fusing::SubmissionWindow::PartitionChange kind, starpu_data_handle_t parent, unsigned nparts,
	    starpu_data_handle_t *children, StarpuCall starpu_call)
{
	fusing::SubmissionWindow *window = window_for(caller);
	if (!window)
		starpu_call();
	else
		window->run_partition_change(kind, parent, nparts, children, starpu_call);
}

/* A partition function the window does not follow: everything deferred
 * goes first, and its tree is no longer deferred. */
template <typename StarpuCall>
void unfollowed(const void *caller, starpu_data_handle_t parent, unsigned nparts, starpu_data_handle_t *children, StarpuCall starpu_call)
{
	change(caller, fusing::SubmissionWindow::PartitionChange::unfollowed, parent, nparts, children, starpu_call);
}

} // namespace

extern "C" {

FUSING_PUBLIC void starpu_data_partition(starpu_data_handle_t initial_handle, struct starpu_data_filter *f)
{
	fusing::SubmissionWindow *window = flush_window(__builtin_return_address(0));
	STARPU_DEFINITION(void (*)(starpu_data_handle_t, struct starpu_data_filter *), "starpu_data_partition")(initial_handle, f);
	if (window)
		mark_tree(window, initial_handle);
}

FUSING_PUBLIC void starpu_data_partition_plan(starpu_data_handle_t initial_handle, struct starpu_data_filter *f,
					      starpu_data_handle_t *children)
{
	auto starpu_call = [&] {
		STARPU_DEFINITION(void (*)(starpu_data_handle_t, struct starpu_data_filter *, starpu_data_handle_t *), "starpu_data_partition_plan")(initial_handle, f, children);
	};
	fusing::SubmissionWindow *window = window_for(__builtin_return_address(0));
	if (!window) {
		starpu_call();
		return;
	}
	/* The number of children, as StarPU computes it. */
	const unsigned nparts = f->get_nchildren ? f->get_nchildren(f, initial_handle) : f->nchildren;
	/* The children exist only once StarPU made them: the window reads
	 * them after the call. */
	window->run_partition_change(fusing::SubmissionWindow::PartitionChange::plan, initial_handle, nparts, children, starpu_call, f);
}

FUSING_PUBLIC void starpu_data_partition_submit(starpu_data_handle_t initial_handle, unsigned nparts, starpu_data_handle_t *children)
{
	static fusing::StarpuFunction<PartitionCallFunction> starpu_function("starpu_data_partition_submit");
	record(__builtin_return_address(0), fusing::PartitionTrees::Call::partition, starpu_function.get(), initial_handle, nparts, children);
}

FUSING_PUBLIC void starpu_data_partition_readonly_submit(starpu_data_handle_t initial_handle, unsigned nparts,
							 starpu_data_handle_t *children)
{
	static fusing::StarpuFunction<PartitionCallFunction> starpu_function("starpu_data_partition_readonly_submit");
	record(__builtin_return_address(0), fusing::PartitionTrees::Call::partition_readonly, starpu_function.get(), initial_handle, nparts, children);
}

FUSING_PUBLIC void starpu_data_partition_readwrite_upgrade_submit(starpu_data_handle_t initial_handle, unsigned nparts,
								  starpu_data_handle_t *children)
{
	static fusing::StarpuFunction<PartitionCallFunction> starpu_function("starpu_data_partition_readwrite_upgrade_submit");
	record(__builtin_return_address(0), fusing::PartitionTrees::Call::upgrade_readwrite, starpu_function.get(), initial_handle, nparts, children);
}

FUSING_PUBLIC void starpu_data_unpartition_submit(starpu_data_handle_t initial_handle, unsigned nparts, starpu_data_handle_t *children,
						  int gather_node)
{
	using Function = void (*)(starpu_data_handle_t, unsigned, starpu_data_handle_t *, int);
	static fusing::StarpuFunction<Function> starpu_function("starpu_data_unpartition_submit");
	Function starpu_call = starpu_function.get();
	record(__builtin_return_address(0), fusing::PartitionTrees::Call::unpartition, initial_handle, nparts, children,
	       [starpu_call, initial_handle, nparts, gather_node](starpu_data_handle_t *parts) {
		       starpu_call(initial_handle, nparts, parts, gather_node);
	       });
}

FUSING_PUBLIC void starpu_data_partition_clean(starpu_data_handle_t root_handle, unsigned nparts, starpu_data_handle_t *children)
{
	auto starpu_call = [&] {
		STARPU_DEFINITION(void (*)(starpu_data_handle_t, unsigned, starpu_data_handle_t *), "starpu_data_partition_clean")(
			root_handle, nparts, children);
	};
	change(__builtin_return_address(0), fusing::SubmissionWindow::PartitionChange::clean, root_handle, nparts, children, starpu_call);
}

#if HAVE_DECL_STARPU_DATA_PARTITION_CLEAN_NODE
FUSING_PUBLIC void starpu_data_partition_clean_node(starpu_data_handle_t root_handle, unsigned nparts, starpu_data_handle_t *children,
						    int gather_node)
{
	auto starpu_call = [&] {
		STARPU_DEFINITION(void (*)(starpu_data_handle_t, unsigned, starpu_data_handle_t *, int), "starpu_data_partition_clean_node")(
			root_handle, nparts, children, gather_node);
	};
	change(__builtin_return_address(0), fusing::SubmissionWindow::PartitionChange::clean, root_handle, nparts, children, starpu_call);
}
#endif

FUSING_PUBLIC void starpu_data_partition_submit_sequential_consistency(starpu_data_handle_t initial_handle, unsigned nparts,
								       starpu_data_handle_t *children, int sequential_consistency)
{
	unfollowed(__builtin_return_address(0), initial_handle, nparts, children, [&] {
		STARPU_DEFINITION(void (*)(starpu_data_handle_t, unsigned, starpu_data_handle_t *, int), "starpu_data_partition_submit_sequential_consistency")(initial_handle, nparts, children, sequential_consistency);
	});
}

FUSING_PUBLIC void starpu_data_unpartition_submit_sequential_consistency(starpu_data_handle_t initial_handle, unsigned nparts,
									 starpu_data_handle_t *children, int gather_node,
									 int sequential_consistency)
{
	unfollowed(__builtin_return_address(0), initial_handle, nparts, children, [&] {
		STARPU_DEFINITION(void (*)(starpu_data_handle_t, unsigned, starpu_data_handle_t *, int, int), "starpu_data_unpartition_submit_sequential_consistency")(initial_handle, nparts, children, gather_node,
										 sequential_consistency);
	});
}

FUSING_PUBLIC void starpu_data_unpartition_submit_sequential_consistency_cb(starpu_data_handle_t initial_handle, unsigned nparts,
									    starpu_data_handle_t *children, int gather_node,
									    int sequential_consistency, void (*callback_func)(void *),
									    void *callback_arg)
{
	unfollowed(__builtin_return_address(0), initial_handle, nparts, children, [&] {
		STARPU_DEFINITION(void (*)(starpu_data_handle_t, unsigned, starpu_data_handle_t *, int, int, void (*)(void *), void *), "starpu_data_unpartition_submit_sequential_consistency_cb")(initial_handle, nparts, children, gather_node,
										    sequential_consistency, callback_func, callback_arg);
	});
}

FUSING_PUBLIC void starpu_data_unpartition_readonly_submit(starpu_data_handle_t initial_handle, unsigned nparts,
							   starpu_data_handle_t *children, int gather_node)
{
	unfollowed(__builtin_return_address(0), initial_handle, nparts, children, [&] {
		STARPU_DEFINITION(void (*)(starpu_data_handle_t, unsigned, starpu_data_handle_t *, int), "starpu_data_unpartition_readonly_submit")(initial_handle, nparts, children, gather_node);
	});
}

#if HAVE_DECL_STARPU_DATA_PARTITION_READONLY_DOWNGRADE_SUBMIT
FUSING_PUBLIC void starpu_data_partition_readonly_downgrade_submit(starpu_data_handle_t initial_handle, unsigned nparts,
								   starpu_data_handle_t *children)
{
	unfollowed(__builtin_return_address(0), initial_handle, nparts, children, [&] {
		STARPU_DEFINITION(PartitionCallFunction, "starpu_data_partition_readonly_downgrade_submit")(initial_handle, nparts, children);
	});
}
#endif

#if HAVE_DECL_STARPU_DATA_PARTITION_READONLY_SUBMIT_SEQUENTIAL_CONSISTENCY
FUSING_PUBLIC void starpu_data_partition_readonly_submit_sequential_consistency(starpu_data_handle_t initial_handle, unsigned nparts,
										starpu_data_handle_t *children, int sequential_consistency)
{
	unfollowed(__builtin_return_address(0), initial_handle, nparts, children, [&] {
		STARPU_DEFINITION(void (*)(starpu_data_handle_t, unsigned, starpu_data_handle_t *, int), "starpu_data_partition_readonly_submit_sequential_consistency")(initial_handle, nparts, children,
											sequential_consistency);
	});
}
#endif

FUSING_PUBLIC void starpu_data_vmap_filters(starpu_data_handle_t root_data, unsigned nfilters, va_list pa)
{
	fusing::SubmissionWindow *window = flush_window(__builtin_return_address(0));
	STARPU_DEFINITION(void (*)(starpu_data_handle_t, unsigned, va_list), "starpu_data_vmap_filters")(root_data, nfilters, pa);
	if (window)
		mark_tree(window, root_data);
}

FUSING_PUBLIC void starpu_data_map_filters(starpu_data_handle_t root_data, unsigned nfilters, ...)
{
	va_list pa;
	va_start(pa, nfilters);
	starpu_data_vmap_filters(root_data, nfilters, pa);
	va_end(pa);
}

#if HAVE_DECL_STARPU_DATA_MAP_FILTERS_ARRAY
FUSING_PUBLIC void starpu_data_map_filters_array(starpu_data_handle_t root_handle, int nfilters, struct starpu_data_filter *filters)
{
	fusing::SubmissionWindow *window = flush_window(__builtin_return_address(0));
	STARPU_DEFINITION(void (*)(starpu_data_handle_t, int, struct starpu_data_filter *), "starpu_data_map_filters_array")(
		root_handle, nfilters, filters);
	if (window)
		mark_tree(window, root_handle);
}

FUSING_PUBLIC void starpu_data_map_filters_parray(starpu_data_handle_t root_handle, int nfilters, struct starpu_data_filter **filters)
{
	fusing::SubmissionWindow *window = flush_window(__builtin_return_address(0));
	STARPU_DEFINITION(void (*)(starpu_data_handle_t, int, struct starpu_data_filter **), "starpu_data_map_filters_parray")(
		root_handle, nfilters, filters);
	if (window)
		mark_tree(window, root_handle);
}
#endif

} // extern "C"
