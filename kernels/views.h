/* Typed views of StarPU data interfaces, for the batched kernels.
 *
 * A kernel gets each task's buffers as StarPU interface structures (what a
 * codelet function gets).  Every StarPU interface structure starts with its
 * enum starpu_data_interface_id (starpu_data_interfaces.h, 1.3 and 1.4),
 * which is how a view tells a matrix from a block.  Views carry strides in
 * elements, as StarPU's ld fields do. */
#ifndef STARPU_FUSING_KERNELS_VIEWS_H
#define STARPU_FUSING_KERNELS_VIEWS_H

#include <starpu.h>

#include <cstddef>
#include <tuple>

namespace fusing {
namespace kernels {

inline enum starpu_data_interface_id interface_id_of(void *interface)
{
	return *static_cast<enum starpu_data_interface_id *>(interface);
}

/* The interfaces kernels read, as bits of a set (pack.h). */
enum InterfaceBit : unsigned {
	kVectorInterface = 1u << 0,
	kMatrixInterface = 1u << 1,
	kBlockInterface = 1u << 2,
	kVariableInterface = 1u << 3,
};

/* Its bit, or 0 for an interface no kernel reads. */
inline unsigned interface_bit_of(void *interface)
{
	switch (interface_id_of(interface)) {
	case STARPU_VECTOR_INTERFACE_ID: return kVectorInterface;
	case STARPU_MATRIX_INTERFACE_ID: return kMatrixInterface;
	case STARPU_BLOCK_INTERFACE_ID: return kBlockInterface;
	case STARPU_VARIABLE_INTERFACE_ID: return kVariableInterface;
	default: return 0;
	}
}

/* visit(the interface as its own structure type) for the interfaces
 * interface_bit_of() knows (their structures share the fields ptr,
 * dev_handle, offset, elemsize); otherwise for others. */
template <typename Visit, typename Result>
Result with_known_interface(void *interface, Visit visit, Result otherwise)
{
	switch (interface_id_of(interface)) {
	case STARPU_VECTOR_INTERFACE_ID: return visit(static_cast<struct starpu_vector_interface *>(interface));
	case STARPU_MATRIX_INTERFACE_ID: return visit(static_cast<struct starpu_matrix_interface *>(interface));
	case STARPU_BLOCK_INTERFACE_ID: return visit(static_cast<struct starpu_block_interface *>(interface));
	case STARPU_VARIABLE_INTERFACE_ID: return visit(static_cast<struct starpu_variable_interface *>(interface));
	default: return otherwise;
	}
}

/* The size of one element of an interface interface_bit_of() knows, else 0. */
inline std::size_t element_size_of(void *interface)
{
	return with_known_interface(interface, [](auto *known) -> std::size_t { return known->elemsize; }, std::size_t(0));
}

/* A 3-D grid of T: x fastest, then y (stride ldy), then z (stride ldz).
 * A StarPU block, or a StarPU matrix as one plane (nz = 1). */
template <typename T>
struct Grid {
	T *ptr;
	unsigned nx, ny, nz;
	std::size_t ldy, ldz;

	T &at(unsigned z, unsigned y, unsigned x) const { return ptr[z * ldz + y * ldy + x]; }
};

/* interface: a STARPU_MATRIX or STARPU_BLOCK interface holding Ts. */
template <typename T>
Grid<T> grid_of(void *interface)
{
	if (interface_id_of(interface) == STARPU_MATRIX_INTERFACE_ID) {
		const struct starpu_matrix_interface *m = static_cast<struct starpu_matrix_interface *>(interface);
		return Grid<T>{reinterpret_cast<T *>(m->ptr), m->nx, m->ny, 1, m->ld, std::size_t(m->ld) * m->ny};
	}
	const struct starpu_block_interface *b = static_cast<struct starpu_block_interface *>(interface);
	return Grid<T>{reinterpret_cast<T *>(b->ptr), b->nx, b->ny, b->nz, b->ldy, b->ldz};
}

/* What tells two grids apart in memory: pointer, shape and strides (views
 * of one buffer share its pointer).  Ordered, for task_groups.h. */
template <typename T>
auto grid_key(const Grid<T> &grid)
{
	return std::make_tuple(static_cast<const void *>(grid.ptr), grid.nx, grid.ny, grid.nz, grid.ldy, grid.ldz);
}

/* A contiguous run of n Ts: a STARPU_VECTOR. */
template <typename T>
struct Vector {
	T *ptr;
	unsigned n;
};

template <typename T>
Vector<T> vector_of(void *interface)
{
	const struct starpu_vector_interface *v = static_cast<struct starpu_vector_interface *>(interface);
	return Vector<T>{reinterpret_cast<T *>(v->ptr), v->nx};
}

/* The bytes an interface interface_bit_of() knows spans, from its first
 * element to the end of its last (padding between rows included);
 * begin == end when it holds no element. */
struct MemoryRange {
	uintptr_t begin, end;
	bool overlaps(const MemoryRange &other) const { return begin < other.end && other.begin < end; }
};

inline MemoryRange memory_range_of(void *interface)
{
	const std::size_t element = element_size_of(interface);
	std::size_t elements = 0; /* offset of the last element, plus one */
	switch (interface_id_of(interface)) {
	case STARPU_VECTOR_INTERFACE_ID: elements = static_cast<struct starpu_vector_interface *>(interface)->nx; break;
	case STARPU_MATRIX_INTERFACE_ID:
	case STARPU_BLOCK_INTERFACE_ID: {
		const Grid<char> grid = grid_of<char>(interface);
		if (grid.nx && grid.ny && grid.nz)
			elements = (grid.nz - 1) * grid.ldz + (grid.ny - 1) * grid.ldy + grid.nx;
		break;
	}
	case STARPU_VARIABLE_INTERFACE_ID: elements = 1; break;
	default: break;
	}
	const uintptr_t begin = with_known_interface(interface, [](auto *known) { return known->ptr; }, uintptr_t(0));
	return MemoryRange{begin, begin + elements * element};
}

} // namespace kernels
} // namespace fusing

#endif
