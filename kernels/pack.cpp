/* The kernel pack's entries; see pack.h. */
#include "kernels/pack.h"

#include "kernels/cross_correlation.h"
#include "kernels/dense.h"
#include "kernels/views.h"

namespace fusing {
namespace kernels {
namespace {

/* The names are DAHL's (github PhoqueEberlue/dahl, src/tasks/codelets.h):
 * its codelets have no cl->name, but a performance model whose symbol is
 * the CPU function's name, and their buffer orders are the ones below. */

/* Shapes only: element types do not matter to them (char views). */
bool correlation_fits(void **buffers)
{
	const Grid<char> image = grid_of<char>(buffers[0]), filter = grid_of<char>(buffers[1]), output = grid_of<char>(buffers[2]);
	return filter.nz == image.nz && filter.nx >= 1 && filter.ny >= 1 && filter.nx <= image.nx && filter.ny <= image.ny &&
	       output.nx == image.nx - filter.nx + 1 && output.ny == image.ny - filter.ny + 1;
}

template <typename T>
void run_correlation(unsigned ntasks, void **task_buffers[])
{
	correlate_tasks<T>(ntasks, task_buffers, 0, 1, -1, 2);
}

bool filter_gradient_fits(void **buffers)
{
	const Grid<char> image = grid_of<char>(buffers[0]), gradient = grid_of<char>(buffers[1]), output = grid_of<char>(buffers[2]);
	return output.nz == image.nz && gradient.nx >= 1 && gradient.ny >= 1 && gradient.nx <= image.nx && gradient.ny <= image.ny &&
	       output.nx == image.nx - gradient.nx + 1 && output.ny == image.ny - gradient.ny + 1;
}

template <typename T>
void run_filter_gradient(unsigned ntasks, void **task_buffers[])
{
	accumulate_filter_gradient_tasks<T>(ntasks, task_buffers, 0, 1, 2);
}

bool matrix_vector_fits(void **buffers)
{
	const Grid<char> matrix = grid_of<char>(buffers[0]);
	return vector_of<char>(buffers[1]).n == matrix.nx && vector_of<char>(buffers[2]).n == matrix.ny;
}

template <typename T>
void run_matrix_vector(unsigned ntasks, void **task_buffers[])
{
	matrix_vector_product_tasks<T>(ntasks, task_buffers, 0, 1, 2);
}

bool vector_matrix_fits(void **buffers)
{
	const Grid<char> matrix = grid_of<char>(buffers[1]);
	return vector_of<char>(buffers[0]).n == matrix.ny && vector_of<char>(buffers[2]).n == matrix.nx;
}

template <typename T>
void run_vector_matrix(unsigned ntasks, void **task_buffers[])
{
	vector_matrix_product_tasks<T>(ntasks, task_buffers, 0, 1, 2);
}

const unsigned kGrid = kMatrixInterface | kBlockInterface;

const std::vector<PackEntry> entries = {
	{"cross_correlation",
	 "out = image * filter, valid 2-D cross-correlation summed over channels (a convolution layer's forward pass)",
	 {"convolution_2d", "matrix_cross_correlation"},
	 {{kGrid, STARPU_R}, {kGrid, STARPU_R}, {kMatrixInterface, STARPU_W}},
	 correlation_fits,
	 run_correlation<float>,
	 run_correlation<double>},
	{"filter_gradient",
	 "out[c] += image[c] * gradient per channel c (a convolution layer's filter gradient)",
	 {"convolution_2d_backward_filters"},
	 {{kGrid, STARPU_R}, {kMatrixInterface, STARPU_R}, {kGrid, STARPU_RW}},
	 filter_gradient_fits,
	 run_filter_gradient<float>,
	 run_filter_gradient<double>},
	{"matrix_vector_product",
	 "out += matrix x vector (a dense layer's forward pass)",
	 {"matrix_vector_product"},
	 {{kMatrixInterface, STARPU_R}, {kVectorInterface, STARPU_R}, {kVectorInterface, STARPU_W}},
	 matrix_vector_fits,
	 run_matrix_vector<float>,
	 run_matrix_vector<double>},
	{"vector_matrix_product",
	 "out += vector x matrix (a dense layer's input gradient)",
	 {"vector_matrix_product"},
	 {{kVectorInterface, STARPU_R}, {kMatrixInterface, STARPU_R}, {kVectorInterface, STARPU_W}},
	 vector_matrix_fits,
	 run_vector_matrix<float>,
	 run_vector_matrix<double>},
};

/* Rows that do not overlap: StarPU accepts a matrix whose ld is below nx
 * (a read-only Hankel matrix, each row one element further), which the
 * kernels' loops read element by element but BLAS refuses (ldb < n).
 * Pure. */
bool rows_apart(void *buffer)
{
	if (!(interface_bit_of(buffer) & (kMatrixInterface | kBlockInterface)))
		return true;
	const Grid<char> grid = grid_of<char>(buffer);
	return grid.nx <= grid.ldy && (grid.nz <= 1 || std::size_t(grid.ldy) * grid.ny <= grid.ldz);
}

/* Every byte of the buffer's elements is 0. */
bool starts_at_zero(void *buffer)
{
	const std::size_t element = element_size_of(buffer);
	auto zero = [](const char *bytes, std::size_t n) {
		for (std::size_t i = 0; i < n; i++)
			if (bytes[i] != 0)
				return false;
		return true;
	};
	if (interface_bit_of(buffer) & (kMatrixInterface | kBlockInterface)) {
		const Grid<char> grid = grid_of<char>(buffer);
		for (unsigned z = 0; z < grid.nz; z++)
			for (unsigned y = 0; y < grid.ny; y++)
				if (!zero(grid.ptr + (z * grid.ldz + y * grid.ldy) * element, std::size_t(grid.nx) * element))
					return false;
		return true;
	}
	const MemoryRange range = memory_range_of(buffer);
	return zero(reinterpret_cast<const char *>(range.begin), range.end - range.begin);
}

bool writes_over_another_buffer(const PackEntry &entry, void **buffers)
{
	for (std::size_t b = 0; b < entry.buffers.size(); b++) {
		if (!(entry.buffers[b].mode & STARPU_W))
			continue;
		const MemoryRange written = memory_range_of(buffers[b]);
		for (std::size_t other = 0; other < entry.buffers.size(); other++)
			if (other != b && written.overlaps(memory_range_of(buffers[other])))
				return true;
	}
	return false;
}

} // namespace

const std::vector<PackEntry> &kernel_pack()
{
	return entries;
}

const PackEntry *pack_entry_named(const std::string &name)
{
	for (const PackEntry &entry : entries)
		if (name == entry.name)
			return &entry;
	return nullptr;
}

/* A buffer the entry only writes (STARPU_W) holds zeros: then a codelet
 * that overwrites it and an entry that accumulates into it (the dense
 * products: out += ..., as DAHL's do on buffers it declares W) agree, as do
 * the other way round; on other contents they differ, and a verification
 * made on zeros would not have seen it. */
bool written_buffers_start_at_zero(const PackEntry &entry, void **buffers)
{
	for (std::size_t b = 0; b < entry.buffers.size(); b++)
		if (entry.buffers[b].mode == STARPU_W && !starts_at_zero(buffers[b]))
			return false;
	return true;
}

bool task_accepted(const PackEntry &entry, void **buffers)
{
	const std::size_t element_size = element_size_of(buffers[0]);
	if (element_size != sizeof(float) && element_size != sizeof(double))
		return false;
	for (std::size_t b = 0; b < entry.buffers.size(); b++)
		if (!(interface_bit_of(buffers[b]) & entry.buffers[b].interfaces) || element_size_of(buffers[b]) != element_size ||
		    !rows_apart(buffers[b]))
			return false;
	return entry.layout_accepted(buffers) && !writes_over_another_buffer(entry, buffers);
}

void run_accepted_tasks(const PackEntry &entry, unsigned ntasks, void **task_buffers[])
{
	std::vector<void **> floats, doubles;
	for (unsigned t = 0; t < ntasks; t++)
		(element_size_of(task_buffers[t][0]) == sizeof(float) ? floats : doubles).push_back(task_buffers[t]);
	if (!floats.empty())
		entry.run_float(static_cast<unsigned>(floats.size()), floats.data());
	if (!doubles.empty())
		entry.run_double(static_cast<unsigned>(doubles.size()), doubles.data());
}

} // namespace kernels
} // namespace fusing
