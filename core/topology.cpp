/* Machine topology from hwloc; see topology.h. */
#include "core/topology.h"

#include <starpu.h>

#include <string>

namespace fusing {

namespace {

WorkerPlace place_of(hwloc_topology_t topology, hwloc_const_cpuset_t cpuset)
{
	WorkerPlace place;
	if (!cpuset || hwloc_bitmap_iszero(cpuset))
		return place;
	/* NUMA nodes are memory children in hwloc 2, outside the CPU tree:
	 * compare cpusets. */
	int nodes_touched = 0;
	for (hwloc_obj_t node = hwloc_get_next_obj_by_type(topology, HWLOC_OBJ_NUMANODE, nullptr); node;
	     node = hwloc_get_next_obj_by_type(topology, HWLOC_OBJ_NUMANODE, node))
		if (hwloc_bitmap_intersects(node->cpuset, cpuset)) {
			nodes_touched++;
			place.numa_node = static_cast<int>(node->os_index);
		}
	if (nodes_touched != 1)
		place.numa_node = -1;
	/* Caches above the smallest object covering the whole binding: a worker
	 * bound to one PU gets its core's L2 and L3; an unbound one none. */
	for (hwloc_obj_t obj = hwloc_get_obj_covering_cpuset(topology, cpuset); obj; obj = obj->parent) {
		if (obj->type == HWLOC_OBJ_L2CACHE && place.l2_bytes == 0)
			place.l2_bytes = obj->attr->cache.size;
		if (obj->type == HWLOC_OBJ_L3CACHE && place.l3_bytes == 0)
			place.l3_bytes = obj->attr->cache.size;
	}
	return place;
}

} // namespace

std::vector<unsigned> Topology::workers_of_node(int numa_node) const
{
	std::vector<unsigned> ids;
	for (unsigned w = 0; w < workers.size(); w++)
		if (workers[w].numa_node == numa_node)
			ids.push_back(w);
	return ids;
}

std::uint64_t Topology::smallest_cache(int level, const std::vector<unsigned> &worker_ids) const
{
	std::uint64_t smallest = 0;
	for (unsigned w : worker_ids) {
		if (w >= workers.size())
			return 0;
		std::uint64_t size = level == 2 ? workers[w].l2_bytes : workers[w].l3_bytes;
		if (size == 0)
			return 0;
		if (smallest == 0 || size < smallest)
			smallest = size;
	}
	return smallest;
}

Topology describe_topology(hwloc_topology_t topology, const std::vector<hwloc_const_cpuset_t> &worker_cpusets)
{
	Topology result;
	result.cores = static_cast<unsigned>(hwloc_get_nbobjs_by_type(topology, HWLOC_OBJ_CORE));
	int nodes = hwloc_get_nbobjs_by_type(topology, HWLOC_OBJ_NUMANODE);
	result.numa_nodes = nodes > 0 ? static_cast<unsigned>(nodes) : 1;
	for (hwloc_const_cpuset_t cpuset : worker_cpusets)
		result.workers.push_back(place_of(topology, cpuset));
	return result;
}

Topology describe_this_machine()
{
	hwloc_topology_t topology;
	if (hwloc_topology_init(&topology) != 0)
		return Topology{};
	if (hwloc_topology_load(topology) != 0) {
		hwloc_topology_destroy(topology);
		return Topology{};
	}
	std::vector<hwloc_cpuset_t> owned;
	std::vector<hwloc_const_cpuset_t> cpusets;
	for (unsigned w = 0; w < starpu_worker_get_count(); w++) {
		/* StarPU returns a copy (hwloc_bitmap_dup) of the worker's
		 * binding; bitmaps hold OS indexes, valid in our topology too. */
		hwloc_cpuset_t cpuset = starpu_worker_get_type(static_cast<int>(w)) == STARPU_CPU_WORKER
						? starpu_worker_get_hwloc_cpuset(static_cast<int>(w))
						: nullptr;
		owned.push_back(cpuset);
		cpusets.push_back(cpuset);
	}
	Topology result = describe_topology(topology, cpusets);
	for (hwloc_cpuset_t cpuset : owned)
		if (cpuset)
			hwloc_bitmap_free(cpuset);
	hwloc_topology_destroy(topology);
	return result;
}

void print_topology(FILE *stream, const Topology &topology)
{
	std::fprintf(stream, "[starpu-fusing] topology: %u cores, %u NUMA node(s)\n", topology.cores, topology.numa_nodes);
	for (unsigned w = 0; w < topology.workers.size(); w++) {
		const WorkerPlace &place = topology.workers[w];
		char name[64];
		starpu_worker_get_name(static_cast<int>(w), name, sizeof(name));
		std::fprintf(stream, "[starpu-fusing]   %-22s NUMA node %-3s L2 %6llu KiB  L3 %6llu KiB\n", name,
			     place.numa_node < 0 ? "?" : std::to_string(place.numa_node).c_str(),
			     (unsigned long long)(place.l2_bytes / 1024), (unsigned long long)(place.l3_bytes / 1024));
	}
}

} // namespace fusing
