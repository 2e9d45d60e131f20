/* NUMA node of a task's data; see numa_node.h. */
#include "core/numa_node.h"

#include <numaif.h>

#include <cstdint>
#include <map>

namespace fusing {

int node_holding_most_bytes(const std::vector<DataPiece> &pieces)
{
	std::map<int, std::size_t> bytes_by_node;
	for (const DataPiece &piece : pieces)
		if (piece.numa_node >= 0)
			bytes_by_node[piece.numa_node] += piece.bytes;
	int best = -1;
	std::size_t most = 0;
	for (const auto &entry : bytes_by_node)
		if (best < 0 || entry.second > most) {
			best = entry.first;
			most = entry.second;
		}
	return best;
}

int node_of_address(const void *address)
{
	if (!address)
		return -1;
	/* move_pages with no target nodes only reports where each page is. */
	void *page = const_cast<void *>(address);
	int status = -1;
	if (move_pages(0, 1, &page, nullptr, &status, 0) != 0 || status < 0)
		return -1;
	return status;
}

int numa_node_of_task(const struct starpu_task *task, const std::function<int(const void *)> &node_of_page)
{
	const bool starpu_manages_numa = starpu_memory_nodes_get_numa_count() > 1;
	std::vector<DataPiece> pieces;
	for (unsigned i = 0; i < STARPU_TASK_GET_NBUFFERS(task); i++) {
		starpu_data_handle_t handle = STARPU_TASK_GET_HANDLE(task, i);
		int node = -1;
		int home = starpu_data_get_home_node(handle);
		if (starpu_manages_numa) {
			if (home >= 0 && starpu_node_get_kind(static_cast<unsigned>(home)) == STARPU_CPU_RAM)
				node = starpu_memory_nodes_numa_devid_to_id(static_cast<unsigned>(home));
		} else if (home == STARPU_MAIN_RAM) {
			node = node_of_page(starpu_data_handle_to_pointer(handle, STARPU_MAIN_RAM));
		}
		pieces.push_back(DataPiece{node, starpu_data_get_size(handle)});
	}
	return node_holding_most_bytes(pieces);
}

} // namespace fusing
