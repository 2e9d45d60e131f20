/* Which NUMA node a task's data lives on, so that a batch groups members of
 * one node (the engine adds the node to the family key on machines with
 * several nodes; on one node nothing is looked up and batching is
 * unchanged).
 *
 * Where the data lives: the NUMA memory node StarPU keeps a handle's home
 * copy on when StarPU manages NUMA nodes (STARPU_USE_NUMA=1), otherwise the
 * node of the home copy's first page as the kernel reports it (libnuma's
 * numa_move_pages with no target: a query).  A task's node is the one
 * holding most of its bytes. */
#ifndef STARPU_FUSING_CORE_NUMA_NODE_H
#define STARPU_FUSING_CORE_NUMA_NODE_H

#include <starpu.h>

#include <cstddef>
#include <functional>
#include <vector>

namespace fusing {

struct DataPiece {
	int numa_node;     /* OS index, -1 unknown */
	std::size_t bytes;
};

/* The node holding most bytes among pieces of known node (the lowest on a
 * tie), -1 when none is known.  Pure. */
int node_holding_most_bytes(const std::vector<DataPiece> &pieces);

/* The node of the page holding address (OS index), -1 when unknown (not
 * yet touched, or no NUMA support).  Any thread; one system call. */
int node_of_address(const void *address);

/* The NUMA node of task's data (see above); node_of_page answers for plain
 * memory (tests inject one).  Runs where tasks become ready. */
int numa_node_of_task(const struct starpu_task *task, const std::function<int(const void *)> &node_of_page);

} // namespace fusing

#endif
