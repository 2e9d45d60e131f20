/* The kernel pack: batched kernels described by what they compute and by
 * the codelets they can stand in for, so that a program's own codelets get
 * a batched implementation without the program asking
 * (kernels/kernel_binding.h binds them, and verifies each before trusting
 * it; doc/design.md, section 13).
 *
 * An entry may stand in for a codelet when one of the codelet's names (its
 * cl->name, its performance model's symbol, its CPU function's symbol) is
 * in known_as, it has buffers.size() buffers, and its tasks were submitted
 * with the entry's modes.  It runs a task of that codelet when each buffer
 * has one of the interfaces the entry lists for it, all of them hold
 * elements of 4 bytes (run as float) or all of 8 bytes (run as double),
 * layout_accepted says the shapes fit, no buffer's rows overlap (ld at
 * least the row length: BLAS refuses less), no buffer it writes overlaps
 * another of its buffers in memory (the same handle twice, or views of one
 * memory: the kernels read every input of a group before writing any
 * output, where the codelet's loops may read what they just wrote, and
 * the two orders give different results), and, when it runs, every buffer
 * the entry only writes (STARPU_W) holds zeros (an entry accumulating into
 * it and a codelet overwriting it agree on zeros only).  The batch's other
 * tasks run the codelet's own function.  Element sizes cannot tell a double from an
 * int64_t: that, and any other difference between what the codelet
 * computes and what the entry computes, is for the verification to find. */
#ifndef STARPU_FUSING_KERNELS_PACK_H
#define STARPU_FUSING_KERNELS_PACK_H

#include <starpu.h>

#include <string>
#include <vector>

namespace fusing {
namespace kernels {

struct PackBuffer {
	unsigned interfaces; /* InterfaceBit set (views.h) */
	enum starpu_data_access_mode mode;
};

struct PackEntry {
	const char *name;     /* in STARPU_FUSING_KERNELS and the statistics */
	const char *computes; /* what, in one line */
	std::vector<std::string> known_as;
	std::vector<PackBuffer> buffers;
	/* The shape relations between one task's buffers the kernel needs,
	 * once interfaces and element sizes are known to fit; pure. */
	bool (*layout_accepted)(void **buffers);
	/* Run accepted tasks, all of one element size (starpu_fusing.h's
	 * task_buffers); any CPU worker. */
	void (*run_float)(unsigned ntasks, void **task_buffers[]);
	void (*run_double)(unsigned ntasks, void **task_buffers[]);
};

/* Every entry, in a fixed order. */
const std::vector<PackEntry> &kernel_pack();

/* The entry called name, or null. */
const PackEntry *pack_entry_named(const std::string &name);

/* Whether entry runs a task with these buffers (interfaces, element
 * sizes, layout, no written buffer over another); pure. */
bool task_accepted(const PackEntry &entry, void **buffers);

/* Whether every buffer entry only writes (STARPU_W) holds zeros now, in a
 * task it accepts; reads them.  The worker about to run the task. */
bool written_buffers_start_at_zero(const PackEntry &entry, void **buffers);

/* Runs tasks entry accepted, each through run_float or run_double by its
 * element size. */
void run_accepted_tasks(const PackEntry &entry, unsigned ntasks, void **task_buffers[]);

} // namespace kernels
} // namespace fusing

#endif
