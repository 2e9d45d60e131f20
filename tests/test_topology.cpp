/* Ensures the topology reading (core/topology.h) and the NUMA grouping of
 * members (core/numa_node.h) work on machines this one is not: hwloc
 * synthetic topologies with two NUMA nodes stand in for them, and a page
 * lookup is injected in place of the kernel's. */
#include "core/numa_node.h"
#include "core/topology.h"
#include "tests/cmocka.hpp"

#include <starpu.h>

#include <vector>

using namespace fusing;

namespace {

/* 2 packages, each one NUMA node with an L3 of 16 MB over 2 cores, each core
 * with its own 1 MB L2: PUs 0-1 on node 0, PUs 2-3 on node 1. */
const char *const two_nodes = "pack:2 numa:1 l3:1(size=16777216) l2:2(size=1048576) core:1 pu:1";

struct SyntheticMachine {
	explicit SyntheticMachine(const char *description)
	{
		assert_int_equal(hwloc_topology_init(&topology), 0);
		assert_int_equal(hwloc_topology_set_synthetic(topology, description), 0);
		assert_int_equal(hwloc_topology_load(topology), 0);
	}
	~SyntheticMachine()
	{
		for (hwloc_bitmap_t set : sets)
			hwloc_bitmap_free(set);
		hwloc_topology_destroy(topology);
	}
	/* A worker bound to the given PUs (OS indexes). */
	hwloc_const_cpuset_t bound_to(std::initializer_list<unsigned> pus)
	{
		hwloc_bitmap_t set = hwloc_bitmap_alloc();
		for (unsigned pu : pus)
			hwloc_bitmap_set(set, pu);
		sets.push_back(set);
		return set;
	}

	hwloc_topology_t topology;
	std::vector<hwloc_bitmap_t> sets;
};

void topology_places_each_bound_worker(void **)
{
	SyntheticMachine machine(two_nodes);
	Topology topology = describe_topology(machine.topology, {machine.bound_to({0}), machine.bound_to({1}),
								 machine.bound_to({2}), machine.bound_to({3})});
	assert_int_equal(topology.cores, 4);
	assert_int_equal(topology.numa_nodes, 2);
	assert_int_equal(topology.workers.size(), 4);
	const int expected_nodes[] = {0, 0, 1, 1};
	for (unsigned w = 0; w < 4; w++) {
		assert_int_equal(topology.workers[w].numa_node, expected_nodes[w]);
		assert_int_equal(topology.workers[w].l2_bytes, 1024 * 1024);
		assert_int_equal(topology.workers[w].l3_bytes, 16 * 1024 * 1024);
	}
	assert_true(topology.workers_of_node(1) == (std::vector<unsigned>{2, 3}));
	assert_int_equal(topology.smallest_cache(2, {0, 3}), 1024 * 1024);
	assert_int_equal(topology.smallest_cache(3, {1, 2}), 16 * 1024 * 1024);
}

void topology_leaves_spanning_or_unknown_bindings_unplaced(void **)
{
	SyntheticMachine machine(two_nodes);
	/* Two cores of one package: node 0, the L3 but no single L2; all PUs:
	 * no node, no cache; no binding at all: nothing known. */
	Topology topology = describe_topology(machine.topology, {machine.bound_to({0, 1}), machine.bound_to({0, 1, 2, 3}), nullptr});
	assert_int_equal(topology.workers[0].numa_node, 0);
	assert_int_equal(topology.workers[0].l2_bytes, 0);
	assert_int_equal(topology.workers[0].l3_bytes, 16 * 1024 * 1024);
	assert_int_equal(topology.workers[1].numa_node, -1);
	assert_int_equal(topology.workers[1].l3_bytes, 0);
	assert_int_equal(topology.workers[2].numa_node, -1);
	/* A cap over workers one of which has no known cache is off. */
	assert_int_equal(topology.smallest_cache(2, {0, 1}), 0);
	assert_true(topology.workers_of_node(1).empty());
}

void topology_of_a_single_node_machine(void **)
{
	SyntheticMachine machine("pack:1 l3:1(size=33554432) l2:2(size=1048576) core:1 pu:1");
	Topology topology = describe_topology(machine.topology, {machine.bound_to({0}), machine.bound_to({1})});
	assert_int_equal(topology.numa_nodes, 1);
	assert_int_equal(topology.workers[0].numa_node, topology.workers[1].numa_node);
}

void numa_node_is_where_most_bytes_live(void **)
{
	assert_int_equal(node_holding_most_bytes({}), -1);
	assert_int_equal(node_holding_most_bytes({{-1, 4096}}), -1);
	assert_int_equal(node_holding_most_bytes({{1, 100}, {0, 60}, {0, 60}}), 0);
	assert_int_equal(node_holding_most_bytes({{1, 100}, {-1, 1000}, {0, 60}}), 1); /* unknown pages do not count */
	assert_int_equal(node_holding_most_bytes({{1, 64}, {0, 64}}), 0);              /* tie: lowest node */
}

/* Through a real StarPU task: vectors whose pages an injected lookup places
 * on nodes 0 and 1 by address. */
void numa_node_of_a_task_from_its_handles(void **)
{
	struct starpu_conf conf;
	starpu_conf_init(&conf);
	conf.ncpus = 1;
	assert_int_equal(starpu_init(&conf), 0);
	static float small[16], large[1024], other[256];
	starpu_data_handle_t handles[3];
	starpu_vector_data_register(&handles[0], STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(small), 16, sizeof(float));
	starpu_vector_data_register(&handles[1], STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(large), 1024, sizeof(float));
	starpu_vector_data_register(&handles[2], STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(other), 256, sizeof(float));
	static struct starpu_codelet three_reads = [] {
		struct starpu_codelet cl;
		starpu_codelet_init(&cl);
		cl.nbuffers = 3;
		cl.modes[0] = cl.modes[1] = cl.modes[2] = STARPU_R;
		return cl;
	}();
	struct starpu_task *task = starpu_task_create(); /* never submitted */
	task->cl = &three_reads;
	for (int i = 0; i < 3; i++)
		task->handles[i] = handles[i];
	auto large_on_node_1 = [&](const void *address) { return address == large ? 1 : 0; };
	auto nothing_known = [](const void *) { return -1; };
	if (starpu_memory_nodes_get_numa_count() <= 1) { /* StarPU does not manage NUMA here: pages decide */
		assert_int_equal(numa_node_of_task(task, large_on_node_1), 1);
		assert_int_equal(numa_node_of_task(task, nothing_known), -1);
	}
	/* The kernel's answer for memory this process touched. */
	assert_true(node_of_address(large) >= 0);
	assert_int_equal(node_of_address(nullptr), -1);
	task->destroy = 0;
	starpu_task_destroy(task);
	for (starpu_data_handle_t handle : handles)
		starpu_data_unregister(handle);
	starpu_shutdown();
}

} // namespace

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(topology_places_each_bound_worker),
		cmocka_unit_test(topology_leaves_spanning_or_unknown_bindings_unplaced),
		cmocka_unit_test(topology_of_a_single_node_machine),
		cmocka_unit_test(numa_node_is_where_most_bytes_live),
		cmocka_unit_test(numa_node_of_a_task_from_its_handles),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
