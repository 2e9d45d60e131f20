/* The machine as hwloc sees it and where each StarPU worker runs: cores,
 * NUMA nodes, and the L2/L3 cache sizes and NUMA node of every worker's
 * binding.  Read once when the policy starts; used by
 * STARPU_FUSING_STATS=1 (print_topology), the working-set cap
 * (STARPU_FUSING_CACHE_CAP) and the NUMA grouping of batches (numa.h).
 *
 * describe_topology() is a pure function of an hwloc topology and the
 * workers' cpusets, so tests inject synthetic topologies
 * (hwloc_topology_set_synthetic) for machines this one is not. */
#ifndef STARPU_FUSING_CORE_TOPOLOGY_H
#define STARPU_FUSING_CORE_TOPOLOGY_H

#include <hwloc.h>

#include <cstdint>
#include <cstdio>
#include <vector>

namespace fusing {

struct WorkerPlace {
	int numa_node = -1;         /* OS index (as libnuma numbers nodes); -1: unknown, or the binding spans several */
	std::uint64_t l2_bytes = 0; /* the L2 cache covering the whole binding; 0: none or unknown */
	std::uint64_t l3_bytes = 0; /* the same for L3 */
};

struct Topology {
	unsigned cores = 0;
	unsigned numa_nodes = 0;
	std::vector<WorkerPlace> workers; /* indexed by StarPU worker id */

	/* Workers whose binding lies in NUMA node numa_node. */
	std::vector<unsigned> workers_of_node(int numa_node) const;
	/* The smallest L2 (level 2) or L3 (level 3) cache of the given workers
	 * in bytes, 0 when one of them has none known. */
	std::uint64_t smallest_cache(int level, const std::vector<unsigned> &worker_ids) const;
};

/* worker_cpusets[i]: the PUs StarPU worker i may run on; nullptr: unknown. */
Topology describe_topology(hwloc_topology_t topology, const std::vector<hwloc_const_cpuset_t> &worker_cpusets);

/* This machine, with the bindings of StarPU's current workers.  Runs in the
 * thread initialising the policy (workers exist, none runs tasks yet). */
Topology describe_this_machine();

/* One line for the machine, one per worker (STARPU_FUSING_STATS=1). */
void print_topology(FILE *stream, const Topology &topology);

} // namespace fusing

#endif
