/* Partitioning while tasks are deferred (part of the flush barrier,
 * flush_barrier.rules "own").
 *
 * A partitioned handle and its children are different handles over the same
 * data, which the order rule cannot see (doc/design.md, section 12): each of
 * these functions flushes the window, lets StarPU partition, and marks the
 * root and every child so that tasks touching them are never deferred.  The
 * partitioning thread. */
#include "build_config.h"
#include "core/starpu_functions.h"
#include "submission/window.h"
#include "starpu_fusing.h"

#include <cstdarg>

namespace {

/* caller: the partitioning call's return address.  StarPU's own calls
 * (starpu_code.h: plan transitions it inserts) do not flush; their handles
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

/* Partitioning is rare: a lookup per call costs nothing that matters. */
template <typename Function>
Function starpu_definition(const char *name)
{
	return reinterpret_cast<Function>(fusing::starpu_own_function(name));
}

} // namespace

extern "C" {

FUSING_PUBLIC void starpu_data_partition(starpu_data_handle_t initial_handle, struct starpu_data_filter *f)
{
	fusing::SubmissionWindow *window = flush_window(__builtin_return_address(0));
	starpu_definition<void (*)(starpu_data_handle_t, struct starpu_data_filter *)>("starpu_data_partition")(initial_handle, f);
	if (window)
		mark_tree(window, initial_handle);
}

FUSING_PUBLIC void starpu_data_partition_plan(starpu_data_handle_t initial_handle, struct starpu_data_filter *f,
					      starpu_data_handle_t *children)
{
	fusing::SubmissionWindow *window = flush_window(__builtin_return_address(0));
	starpu_definition<void (*)(starpu_data_handle_t, struct starpu_data_filter *, starpu_data_handle_t *)>(
		"starpu_data_partition_plan")(initial_handle, f, children);
	if (window) {
		/* Plans do not list their children in the root. */
		const unsigned nparts = f->get_nchildren ? f->get_nchildren(f, initial_handle) : f->nchildren;
		window->exclude_from_deferral(initial_handle);
		for (unsigned i = 0; i < nparts; i++)
			mark_tree(window, children[i]);
	}
}

FUSING_PUBLIC void starpu_data_vmap_filters(starpu_data_handle_t root_data, unsigned nfilters, va_list pa)
{
	fusing::SubmissionWindow *window = flush_window(__builtin_return_address(0));
	starpu_definition<void (*)(starpu_data_handle_t, unsigned, va_list)>("starpu_data_vmap_filters")(root_data, nfilters, pa);
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
	starpu_definition<void (*)(starpu_data_handle_t, int, struct starpu_data_filter *)>("starpu_data_map_filters_array")(
		root_handle, nfilters, filters);
	if (window)
		mark_tree(window, root_handle);
}

FUSING_PUBLIC void starpu_data_map_filters_parray(starpu_data_handle_t root_handle, int nfilters, struct starpu_data_filter **filters)
{
	fusing::SubmissionWindow *window = flush_window(__builtin_return_address(0));
	starpu_definition<void (*)(starpu_data_handle_t, int, struct starpu_data_filter **)>("starpu_data_map_filters_parray")(
		root_handle, nfilters, filters);
	if (window)
		mark_tree(window, root_handle);
}
#endif

} // extern "C"
