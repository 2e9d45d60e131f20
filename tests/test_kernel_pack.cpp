/* Ensures each kernel pack entry (kernels/pack.h) computes what the codelets
 * it stands in for compute: DAHL's own loops (github PhoqueEberlue/dahl,
 * src/tasks/cpu/{ml,matrix,vector}.c, transcribed below), on random data
 * of several shapes, strides and batch compositions, in float and double,
 * within the bound the verification uses (kernels/kernel_verification.h);
 * that entries refuse tasks whose shapes they cannot run; and that the
 * verification's copies catch a kernel computing something else, also when
 * a task reads the buffer it writes. */
#include "kernels/kernel_verification.h"
#include "kernels/pack.h"
#include "kernels/views.h"
#include "tests/cmocka.hpp"
#include "tests/dahl_loops.hpp"

#include <starpu.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <vector>

namespace {

using fusing::Comparison;
using fusing::WrittenBufferCopies;
using fusing::kernels::Grid;
using fusing::kernels::PackEntry;

/* Owns data and StarPU interface structures built by hand, as StarPU would
 * give them to a codelet function on the CPU. */
class Buffers {
public:
	explicit Buffers(unsigned seed) : random_(seed) {}

	/* nx x ny x nz elements of element_size bytes, rows padded by pad
	 * elements, planes by one more row. */
	void *block(std::size_t element_size, unsigned nx, unsigned ny, unsigned nz, unsigned pad)
	{
		struct starpu_block_interface b = {};
		b.id = STARPU_BLOCK_INTERFACE_ID;
		b.nx = nx;
		b.ny = ny;
		b.nz = nz;
		b.ldy = nx + pad;
		b.ldz = b.ldy * (ny + (pad ? 1 : 0));
		b.elemsize = element_size;
		b.ptr = fill(element_size, std::size_t(b.ldz) * nz);
		return keep(&b, sizeof(b));
	}

	void *matrix(std::size_t element_size, unsigned nx, unsigned ny, unsigned pad)
	{
		struct starpu_matrix_interface m = {};
		m.id = STARPU_MATRIX_INTERFACE_ID;
		m.nx = nx;
		m.ny = ny;
		m.ld = nx + pad;
		m.elemsize = element_size;
		m.ptr = fill(element_size, std::size_t(m.ld) * ny);
		return keep(&m, sizeof(m));
	}

	void *vector(std::size_t element_size, unsigned nx)
	{
		struct starpu_vector_interface v = {};
		v.id = STARPU_VECTOR_INTERFACE_ID;
		v.nx = nx;
		v.elemsize = element_size;
		v.ptr = fill(element_size, nx);
		return keep(&v, sizeof(v));
	}

	/* A view of parent's first nx x ny elements (a partition plan's
	 * first child): the same pointer and strides, another shape. */
	void *view(void *parent, unsigned nx, unsigned ny)
	{
		unsigned char *child = keep(parent, kInterfaceBytes);
		if (*static_cast<enum starpu_data_interface_id *>(parent) == STARPU_MATRIX_INTERFACE_ID) {
			reinterpret_cast<struct starpu_matrix_interface *>(child)->nx = nx;
			reinterpret_cast<struct starpu_matrix_interface *>(child)->ny = ny;
		} else {
			reinterpret_cast<struct starpu_block_interface *>(child)->nx = nx;
			reinterpret_cast<struct starpu_block_interface *>(child)->ny = ny;
		}
		return child;
	}

	/* Whether every byte past the end of every buffer's data still holds
	 * the guard pattern: nothing wrote out of bounds. */
	bool guards_intact() const
	{
		for (const auto &data : data_)
			for (std::size_t i = data->size() - kGuardBytes; i < data->size(); i++)
				if ((*data)[i] != kGuardByte)
					return false;
		return true;
	}

	/* A copy of interface with its own copy of the data. */
	void *clone(void *interface)
	{
		unsigned char *copy = keep(interface, kInterfaceBytes);
		std::vector<unsigned char> &data = *data_.emplace_back(guarded(data_bytes(interface)));
		std::memcpy(data.data(), reinterpret_cast<void *>(pointer(interface)), data_bytes(interface));
		pointer(copy) = reinterpret_cast<uintptr_t>(data.data());
		return copy;
	}

	static uintptr_t &pointer(void *interface)
	{
		/* ptr follows the id in every interface used here. */
		switch (*static_cast<enum starpu_data_interface_id *>(interface)) {
		case STARPU_BLOCK_INTERFACE_ID: return static_cast<struct starpu_block_interface *>(interface)->ptr;
		case STARPU_MATRIX_INTERFACE_ID: return static_cast<struct starpu_matrix_interface *>(interface)->ptr;
		default: return static_cast<struct starpu_vector_interface *>(interface)->ptr;
		}
	}

private:
	/* Room for any interface structure used here. */
	static constexpr std::size_t kInterfaceBytes = 256;
	static_assert(sizeof(struct starpu_block_interface) <= kInterfaceBytes, "interfaces fit");

	static std::size_t data_bytes(void *interface)
	{
		switch (*static_cast<enum starpu_data_interface_id *>(interface)) {
		case STARPU_BLOCK_INTERFACE_ID: {
			auto *b = static_cast<struct starpu_block_interface *>(interface);
			return std::size_t(b->ldz) * b->nz * b->elemsize;
		}
		case STARPU_MATRIX_INTERFACE_ID: {
			auto *m = static_cast<struct starpu_matrix_interface *>(interface);
			return std::size_t(m->ld) * m->ny * m->elemsize;
		}
		default: {
			auto *v = static_cast<struct starpu_vector_interface *>(interface);
			return std::size_t(v->nx) * v->elemsize;
		}
		}
	}

	/* bytes, then kGuardBytes of kGuardByte. */
	static constexpr std::size_t kGuardBytes = 256;
	static constexpr unsigned char kGuardByte = 0xa5;
	static std::unique_ptr<std::vector<unsigned char>> guarded(std::size_t bytes)
	{
		auto data = std::make_unique<std::vector<unsigned char>>(bytes + kGuardBytes, 0);
		std::fill(data->begin() + static_cast<std::ptrdiff_t>(bytes), data->end(), kGuardByte);
		return data;
	}

	uintptr_t fill(std::size_t element_size, std::size_t count)
	{
		std::vector<unsigned char> &data = *data_.emplace_back(guarded(count * element_size));
		std::uniform_real_distribution<double> value(-1.0, 1.0);
		for (std::size_t i = 0; i < count; i++) {
			if (element_size == sizeof(float))
				reinterpret_cast<float *>(data.data())[i] = float(value(random_));
			else if (element_size == sizeof(double))
				reinterpret_cast<double *>(data.data())[i] = value(random_);
			else
				for (std::size_t byte = 0; byte < element_size; byte++)
					data[i * element_size + byte] = static_cast<unsigned char>(random_());
		}
		return reinterpret_cast<uintptr_t>(data.data());
	}

	unsigned char *keep(const void *interface, std::size_t size)
	{
		auto &kept = *interfaces_.emplace_back(std::make_unique<std::vector<unsigned char>>(kInterfaceBytes, 0));
		std::memcpy(kept.data(), interface, size);
		return kept.data();
	}

	std::mt19937 random_;
	std::vector<std::unique_ptr<std::vector<unsigned char>>> data_, interfaces_;
};

/* ----------------------------------------------------------- the harness */

const PackEntry &entry(const char *name)
{
	const PackEntry *found = fusing::kernels::pack_entry_named(name);
	assert_non_null(found);
	return *found;
}

/* One batch: each task's buffers for the kernel, and the same with its
 * written buffers cloned, for the reference. */
struct Batch {
	std::vector<std::vector<void *>> kernel, reference;
	void add(Buffers &buffers, std::vector<void *> task, const PackEntry &e)
	{
		kernel.push_back(task);
		for (std::size_t b = 0; b < task.size(); b++)
			if (e.buffers[b].mode & STARPU_W)
				task[b] = buffers.clone(task[b]);
		reference.push_back(task);
	}
};

/* Largest |kernel - reference| over a written buffer, relative to the
 * largest |reference| in it. */
template <typename T>
double relative_difference(void *kernel, void *reference)
{
	Dahl<T> k(kernel), r(reference);
	double largest = 0.0, difference = 0.0;
	for (unsigned z = 0; z < r.nz; z++)
		for (unsigned y = 0; y < r.ny; y++)
			for (unsigned x = 0; x < r.nx; x++) {
				const std::size_t at = std::size_t(z) * r.ldz + std::size_t(y) * r.ldy + x;
				largest = std::max(largest, std::fabs(double(r.p[at])));
				difference = std::max(difference, std::fabs(double(k.p[at]) - double(r.p[at])));
			}
	return largest > 0.0 ? difference / largest : difference;
}

/* The bound a kernel's result must meet against the codelet's loops,
 * written here rather than read from the code under test (the pack's own
 * verification uses the same figures, kernels/kernel_verification.cpp):
 * relative 1e-3 in single precision, 1e-9 in double. */
double tolerance_for(bool is_float)
{
	return is_float ? 1e-3 : 1e-9;
}

/* Runs reference on every task of the batch one by one, and the entry on
 * all of them at once (every task must be accepted); then every written
 * element must agree within the verification's bound.  Returns the largest
 * relative difference seen. */
double run_and_compare(Buffers &buffers, Batch &batch, const PackEntry &e, void (*reference)(void **))
{
	std::vector<void **> tasks;
	for (auto &task : batch.kernel) {
		assert_true(fusing::kernels::task_accepted(e, task.data()));
		tasks.push_back(task.data());
	}
	for (auto &task : batch.reference)
		reference(task.data());
	fusing::kernels::run_accepted_tasks(e, static_cast<unsigned>(tasks.size()), tasks.data());
	assert_true(buffers.guards_intact());
	double worst = 0.0;
	for (std::size_t t = 0; t < tasks.size(); t++)
		for (std::size_t b = 0; b < e.buffers.size(); b++) {
			if (!(e.buffers[b].mode & STARPU_W))
				continue;
			void *kernel = batch.kernel[t][b], *expected = batch.reference[t][b];
			const bool is_float = fusing::kernels::element_size_of(kernel) == sizeof(float);
			const double relative = is_float ? relative_difference<float>(kernel, expected) : relative_difference<double>(kernel, expected);
			assert_true(relative <= tolerance_for(is_float));
			worst = std::max(worst, relative);
		}
	return worst;
}

/* ------------------------------------------------------------- the tests */

struct ImageShape {
	unsigned width, height, channels, kw, kh, pad;
};

const ImageShape image_shapes[] = {
	{28, 28, 1, 3, 3, 0},  /* DAHL's basic_cnn: 28x28 images, 3x3 filters */
	{13, 9, 3, 4, 2, 3},   /* channels, rectangular filters, padded rows */
	{64, 48, 1, 5, 5, 1},  /* the convolution experiment's 5x5 filters */
	{6, 5, 2, 6, 5, 0},    /* a filter as large as the image: one output pixel */
};

/* nimages images, each correlated with nfilters filters, plus one image
 * with a lone filter (the plain-loop path), tasks interleaved by filter so
 * that a batch's tasks on one image are not consecutive. */
void pack_cross_correlation_matches_dahl(void **)
{
	const PackEntry &e = entry("cross_correlation");
	for (std::size_t element : {sizeof(float), sizeof(double)})
		for (const ImageShape &s : image_shapes)
			for (bool as_matrices : {false, true}) {
				if (as_matrices && s.channels != 1)
					continue;
				Buffers buffers(7);
				auto grid = [&](unsigned nx, unsigned ny, unsigned nz, unsigned pad) {
					return as_matrices ? buffers.matrix(element, nx, ny, pad) : buffers.block(element, nx, ny, nz, pad);
				};
				const unsigned nimages = 3, nfilters = 4;
				std::vector<void *> images, filters;
				for (unsigned i = 0; i < nimages + 1; i++)
					images.push_back(grid(s.width, s.height, s.channels, s.pad));
				for (unsigned f = 0; f < nfilters; f++)
					filters.push_back(grid(s.kw, s.kh, s.channels, f % 2));
				Batch batch;
				for (unsigned f = 0; f < nfilters; f++)
					for (unsigned i = 0; i < nimages; i++)
						batch.add(buffers, {images[i], filters[f], buffers.matrix(element, s.width - s.kw + 1, s.height - s.kh + 1, i % 2)}, e);
				batch.add(buffers, {images[nimages], filters[0], buffers.matrix(element, s.width - s.kw + 1, s.height - s.kh + 1, 0)}, e);
				run_and_compare(buffers, batch, e, element == sizeof(float) ? dahl_convolution_2d<float> : dahl_convolution_2d<double>);
			}
}

void pack_filter_gradient_matches_dahl(void **)
{
	const PackEntry &e = entry("filter_gradient");
	struct GradientShape {
		unsigned width, height, channels, gw, gh, pad;
	};
	const GradientShape shapes[] = {
		{28, 28, 1, 26, 26, 0}, /* basic_cnn: 3x3 filters' gradients */
		{10, 12, 2, 7, 8, 2},   /* channels, padding */
		{90, 70, 1, 86, 66, 1}, /* a gradient wider than one tile of rows (4096 elements) */
	};
	for (std::size_t element : {sizeof(float), sizeof(double)})
		for (const GradientShape &s : shapes) {
			Buffers buffers(11);
			const unsigned nimages = 2, nfilters = 4;
			std::vector<void *> images;
			for (unsigned i = 0; i < nimages + 1; i++)
				images.push_back(buffers.block(element, s.width, s.height, s.channels, s.pad));
			Batch batch;
			for (unsigned i = 0; i < nimages + 1; i++)
				for (unsigned f = 0; f < (i < nimages ? nfilters : 1); f++)
					/* The outputs start non-zero: the codelet accumulates. */
					batch.add(buffers, {images[i], buffers.matrix(element, s.gw, s.gh, f % 2),
							    buffers.block(element, s.width - s.gw + 1, s.height - s.gh + 1, s.channels, f % 2)}, e);
			run_and_compare(buffers, batch, e,
					element == sizeof(float) ? dahl_convolution_2d_backward_filters<float> : dahl_convolution_2d_backward_filters<double>);
		}
}

/* A dense layer: every sample's vector against one weight matrix (padded
 * rows), and a task against a matrix of its own (the plain-loop path);
 * outputs start non-zero: the codelets accumulate. */
void pack_dense_products_match_dahl(void **)
{
	for (std::size_t element : {sizeof(float), sizeof(double)})
		for (unsigned pad : {0u, 5u}) {
			Buffers buffers(13);
			const unsigned inputs = 676, classes = 10, samples = 6;
			void *weights = buffers.matrix(element, inputs, classes, pad);
			void *other_weights = buffers.matrix(element, inputs, classes, 0);
			const PackEntry &forward = entry("matrix_vector_product");
			Batch forward_batch;
			for (unsigned t = 0; t < samples; t++)
				forward_batch.add(buffers, {weights, buffers.vector(element, inputs), buffers.vector(element, classes)}, forward);
			forward_batch.add(buffers, {other_weights, buffers.vector(element, inputs), buffers.vector(element, classes)}, forward);
			run_and_compare(buffers, forward_batch, forward,
					element == sizeof(float) ? dahl_matrix_vector_product<float> : dahl_matrix_vector_product<double>);
			const PackEntry &backward = entry("vector_matrix_product");
			Batch backward_batch;
			for (unsigned t = 0; t < samples; t++)
				backward_batch.add(buffers, {buffers.vector(element, classes), weights, buffers.vector(element, inputs)}, backward);
			backward_batch.add(buffers, {buffers.vector(element, classes), other_weights, buffers.vector(element, inputs)}, backward);
			run_and_compare(buffers, backward_batch, backward,
					element == sizeof(float) ? dahl_vector_matrix_product<float> : dahl_vector_matrix_product<double>);
		}
}

/* An image and views of it that share its pointer (a read-only partition
 * plan's first child, by rows and by columns), each correlated with two
 * filters: every task is computed on its own image's shape and writes only
 * its own output (grouped by pointer alone, the views' outputs were sized
 * from the image's and written past their end). */
void pack_views_sharing_a_pointer_keep_their_own_shapes(void **)
{
	for (bool as_blocks : {false, true}) {
		Buffers buffers(37);
		const std::size_t element = sizeof(float);
		void *image = as_blocks ? buffers.block(element, 12, 10, 1, 2) : buffers.matrix(element, 12, 10, 2);
		std::vector<void *> images = {image, buffers.view(image, 12, 5), buffers.view(image, 6, 10), buffers.view(image, 6, 5)};
		const PackEntry &correlation = entry("cross_correlation");
		Batch batch;
		for (void *source : images) {
			const Grid<char> shape = fusing::kernels::grid_of<char>(source);
			for (unsigned f = 0; f < 2; f++)
				batch.add(buffers, {source, buffers.matrix(element, 3, 3, 0), buffers.matrix(element, shape.nx - 2, shape.ny - 2, 0)},
					  correlation);
		}
		run_and_compare(buffers, batch, correlation, dahl_convolution_2d<float>);
		const PackEntry &gradient = entry("filter_gradient");
		Batch gradients;
		for (void *source : images) {
			const Grid<char> shape = fusing::kernels::grid_of<char>(source);
			for (unsigned f = 0; f < 2; f++)
				gradients.add(buffers, {source, buffers.matrix(element, shape.nx - 2, shape.ny - 2, 0), buffers.block(element, 3, 3, 1, 0)},
					      gradient);
		}
		run_and_compare(buffers, gradients, gradient, dahl_convolution_2d_backward_filters<float>);
	}
}

/* A batch mixing float and double tasks of one codelet runs each in its
 * own type. */
void pack_runs_mixed_element_sizes_in_their_types(void **)
{
	const PackEntry &e = entry("cross_correlation");
	Buffers buffers(17);
	Batch batch;
	for (std::size_t element : {sizeof(float), sizeof(double), sizeof(float)}) {
		void *image = buffers.block(element, 12, 10, 1, 0);
		for (unsigned f = 0; f < 3; f++)
			batch.add(buffers, {image, buffers.block(element, 3, 3, 1, 0), buffers.matrix(element, 10, 8, 0)}, e);
	}
	std::vector<void **> tasks;
	for (auto &task : batch.kernel)
		tasks.push_back(task.data());
	for (std::size_t t = 0; t < batch.reference.size(); t++) {
		const bool is_float = static_cast<struct starpu_block_interface *>(batch.reference[t][0])->elemsize == sizeof(float);
		(is_float ? dahl_convolution_2d<float> : dahl_convolution_2d<double>)(batch.reference[t].data());
	}
	fusing::kernels::run_accepted_tasks(e, static_cast<unsigned>(tasks.size()), tasks.data());
	for (std::size_t t = 0; t < tasks.size(); t++) {
		const bool is_float = static_cast<struct starpu_block_interface *>(batch.reference[t][0])->elemsize == sizeof(float);
		const double relative = is_float ? relative_difference<float>(batch.kernel[t][2], batch.reference[t][2])
						 : relative_difference<double>(batch.kernel[t][2], batch.reference[t][2]);
		assert_true(relative <= tolerance_for(is_float));
	}
}

/* Tasks whose shapes an entry cannot run are refused (they run the
 * codelet's own function). */
void pack_refuses_shapes_it_cannot_run(void **)
{
	Buffers buffers(19);
	const PackEntry &correlation = entry("cross_correlation");
	void *image = buffers.block(sizeof(double), 10, 10, 2, 0);
	void *filter = buffers.block(sizeof(double), 3, 3, 2, 0);
	std::vector<void *> fits = {image, filter, buffers.matrix(sizeof(double), 8, 8, 0)};
	assert_true(fusing::kernels::task_accepted(correlation, fits.data()));
	std::vector<void *> wrong_output = {image, filter, buffers.matrix(sizeof(double), 8, 7, 0)};
	assert_false(fusing::kernels::task_accepted(correlation, wrong_output.data()));
	std::vector<void *> wrong_channels = {image, buffers.block(sizeof(double), 3, 3, 1, 0), buffers.matrix(sizeof(double), 8, 8, 0)};
	assert_false(fusing::kernels::task_accepted(correlation, wrong_channels.data()));
	std::vector<void *> mixed_sizes = {image, buffers.block(sizeof(float), 3, 3, 2, 0), buffers.matrix(sizeof(double), 8, 8, 0)};
	assert_false(fusing::kernels::task_accepted(correlation, mixed_sizes.data()));
	std::vector<void *> filter_too_large = {image, buffers.block(sizeof(double), 11, 3, 2, 0), buffers.matrix(sizeof(double), 0, 8, 0)};
	assert_false(fusing::kernels::task_accepted(correlation, filter_too_large.data()));
	std::vector<void *> vector_output = {image, filter, buffers.vector(sizeof(double), 64)};
	assert_false(fusing::kernels::task_accepted(correlation, vector_output.data()));
	const PackEntry &product = entry("matrix_vector_product");
	void *weights = buffers.matrix(sizeof(double), 6, 4, 0);
	std::vector<void *> product_fits = {weights, buffers.vector(sizeof(double), 6), buffers.vector(sizeof(double), 4)};
	assert_true(fusing::kernels::task_accepted(product, product_fits.data()));
	std::vector<void *> short_vector = {weights, buffers.vector(sizeof(double), 5), buffers.vector(sizeof(double), 4)};
	assert_false(fusing::kernels::task_accepted(product, short_vector.data()));
	/* Elements of another size (half floats, say) are no type it computes in. */
	std::vector<void *> half = {buffers.matrix(2, 6, 4, 0), buffers.vector(2, 6), buffers.vector(2, 4)};
	assert_false(fusing::kernels::task_accepted(product, half.data()));
}

/* ------------------------------------------------ the verification's copies */

/* The copies keep the codelet's results in the real buffers and the
 * kernel's in the copies: an agreeing pair is within the bound, a
 * convolution standing for a correlation is not, with a difference of the
 * results' own size. */
void verification_tells_agreeing_from_different_arithmetic(void **)
{
	const PackEntry &e = entry("cross_correlation");
	for (auto own : {dahl_convolution_2d<double>, convolution_not_correlation<double>}) {
		Buffers buffers(23);
		void *image = buffers.matrix(sizeof(double), 20, 16, 2);
		std::vector<std::vector<void *>> tasks;
		for (unsigned f = 0; f < 4; f++)
			tasks.push_back({image, buffers.matrix(sizeof(double), 3, 3, 0), buffers.matrix(sizeof(double), 18, 14, 1)});
		std::vector<void **> task_buffers;
		for (auto &task : tasks)
			task_buffers.push_back(task.data());
		WrittenBufferCopies copies(task_buffers, {STARPU_R, STARPU_R, STARPU_W});
		for (void **task : task_buffers)
			own(task);
		fusing::kernels::run_accepted_tasks(e, 4, copies.task_buffers());
		const Comparison comparison = copies.compare();
		if (own == dahl_convolution_2d<double>) {
			assert_true(comparison.within_bound);
			assert_true(comparison.largest_difference <= comparison.bound);
		} else {
			assert_false(comparison.within_bound);
			assert_true(comparison.largest_difference > 1e-3);
		}
		/* The real outputs hold the codelet's own results either way. */
		std::vector<void *> check = {image, tasks[0][1], buffers.clone(tasks[0][2])};
		own(check.data());
		assert_true(relative_difference<double>(tasks[0][2], check[2]) == 0.0);
	}
}

/* Rows that cancel: 1e30, 1, -1e30, 1e-30, over and over, times ones
 * (float).  The loop in order gives 1e-30; the kernel's GEMM sums in blocks
 * (2e-30 at 512 columns here, OpenBLAS) and may give anything within a
 * reordering's error of the sum of the absolute terms (2.6e32): it computes
 * the same product, and the verification bounded by the terms says so,
 * where one bounded by the results (all tiny) called it wrong.  On random
 * rows, a codelet computing twice the product still fails the terms'
 * bound, and the product itself passes it. */
void double_product(void **buffers)
{
	dahl_matrix_vector_product<float>(buffers);
	dahl_matrix_vector_product<float>(buffers);
}

void verification_bounds_each_element_by_its_terms(void **)
{
	const PackEntry &e = entry("matrix_vector_product");
	const float cancelling[4] = {1e30f, 1.0f, -1e30f, 1e-30f};
	struct Case {
		void (*own)(void **);
		bool cancelling_rows;
	};
	for (const Case &c : {Case{dahl_matrix_vector_product<float>, true}, Case{dahl_matrix_vector_product<float>, false},
			      Case{double_product, false}}) {
		Buffers buffers(29);
		constexpr unsigned kRows = 16, kColumns = 512;
		void *matrix = buffers.matrix(sizeof(float), kColumns, kRows, 0); /* random values */
		float *m = reinterpret_cast<float *>(STARPU_MATRIX_GET_PTR(matrix));
		if (c.cancelling_rows)
			for (unsigned i = 0; i < kRows * kColumns; i++)
				m[i] = cancelling[i % 4];
		std::vector<std::vector<void *>> tasks;
		for (unsigned t = 0; t < 2; t++) {
			void *vector = buffers.vector(sizeof(float), kColumns);
			std::fill_n(reinterpret_cast<float *>(STARPU_VECTOR_GET_PTR(vector)), kColumns, 1.0f);
			void *out = buffers.vector(sizeof(float), kRows);
			std::fill_n(reinterpret_cast<float *>(STARPU_VECTOR_GET_PTR(out)), kRows, 0.0f);
			tasks.push_back({matrix, vector, out});
		}
		std::vector<void **> task_buffers;
		for (auto &task : tasks)
			task_buffers.push_back(task.data());
		WrittenBufferCopies copies(task_buffers, {STARPU_R, STARPU_R, STARPU_W});
		fusing::TermMagnitudes magnitudes(task_buffers, 3);
		for (void **task : task_buffers)
			c.own(task);
		fusing::kernels::run_accepted_tasks(e, 2, copies.task_buffers());
		fusing::kernels::run_accepted_tasks(e, 2, magnitudes.task_buffers());
		const Comparison by_terms = copies.compare(&magnitudes);
		if (c.own == double_product) {
			assert_false(by_terms.within_bound);
			continue;
		}
		assert_true(by_terms.within_bound);
		if (!c.cancelling_rows)
			continue;
		const float loop = reinterpret_cast<float *>(STARPU_VECTOR_GET_PTR(tasks[0][2]))[0];
		const float kernel = reinterpret_cast<const float *>(STARPU_VECTOR_GET_PTR(copies.task_buffers()[0][2]))[0];
		std::printf("a cancelling row: the loop gives %g, the kernel %g\n", double(loop), double(kernel));
		/* The kernel did sum in another order: bounded by the results,
		 * the same kernel was called wrong. */
		assert_true(loop != kernel);
		assert_false(copies.compare().within_bound);
	}
}

/* out = in + 1 on one handle passed twice (DAHL's "self" operations): the
 * kernel must read the copy, which still holds the input, not the real
 * buffer the codelet's function already changed. */
void add_one(void **buffers)
{
	Dahl<double> in(buffers[0]), out(buffers[1]);
	for (unsigned x = 0; x < in.nx; x++)
		out.p[x] = in.p[x] + 1.0;
}

void verification_copies_a_buffer_read_and_written_by_one_task(void **)
{
	Buffers buffers(29);
	void *self = buffers.vector(sizeof(double), 50);
	std::vector<void *> task = {self, self};
	std::vector<void **> task_buffers = {task.data()};
	WrittenBufferCopies copies(task_buffers, {STARPU_R, STARPU_W});
	void **redirected = copies.task_buffers()[0];
	assert_ptr_equal(redirected[0], redirected[1]);
	assert_ptr_not_equal(redirected[0], self);
	add_one(task.data());
	add_one(redirected);
	assert_true(copies.compare().within_bound);
}

/* NaN agrees only with NaN; elements of other sizes byte for byte. */
void verification_compares_nan_and_other_sizes(void **)
{
	Buffers buffers(31);
	void *out = buffers.vector(sizeof(double), 4);
	std::vector<void *> task = {out};
	std::vector<void **> task_buffers = {task.data()};
	WrittenBufferCopies copies(task_buffers, {STARPU_W});
	double *own = reinterpret_cast<double *>(Buffers::pointer(out));
	double *kernel = reinterpret_cast<double *>(Buffers::pointer(copies.task_buffers()[0][0]));
	own[1] = kernel[1] = NAN;
	assert_true(copies.compare().within_bound);
	kernel[2] = NAN;
	const Comparison nan_on_one_side = copies.compare();
	assert_false(nan_on_one_side.within_bound);
	assert_true(std::isinf(nan_on_one_side.largest_difference));

	void *bytes = buffers.vector(2, 8);
	std::vector<void *> byte_task = {bytes};
	std::vector<void **> byte_buffers = {byte_task.data()};
	WrittenBufferCopies byte_copies(byte_buffers, {STARPU_W});
	assert_true(byte_copies.compare().within_bound);
	reinterpret_cast<unsigned char *>(Buffers::pointer(byte_copies.task_buffers()[0][0]))[3] ^= 1;
	assert_false(byte_copies.compare().within_bound);
}

/* A batch verifies only when its results could tell two computations
 * apart: matrix-vector products on random data could; on zero vectors the
 * accumulated outputs do not change whatever the arithmetic; a NaN input
 * gives NaN on both sides. */
void verification_trusts_only_informative_results(void **)
{
	const PackEntry &e = entry("matrix_vector_product");
	enum class Inputs { random, zero, nan };
	for (Inputs inputs : {Inputs::random, Inputs::zero, Inputs::nan}) {
		Buffers buffers(41);
		void *weights = buffers.matrix(sizeof(double), 12, 5, 0);
		std::vector<std::vector<void *>> tasks;
		for (unsigned t = 0; t < 3; t++) {
			void *vector = buffers.vector(sizeof(double), 12);
			double *values = reinterpret_cast<double *>(Buffers::pointer(vector));
			if (inputs == Inputs::zero)
				std::fill(values, values + 12, 0.0);
			if (inputs == Inputs::nan)
				values[t] = NAN;
			tasks.push_back({weights, vector, buffers.vector(sizeof(double), 5)});
		}
		std::vector<void **> task_buffers;
		for (auto &task : tasks)
			task_buffers.push_back(task.data());
		WrittenBufferCopies copies(task_buffers, {STARPU_R, STARPU_R, STARPU_W});
		for (void **task : task_buffers)
			dahl_matrix_vector_product<double>(task);
		fusing::kernels::run_accepted_tasks(e, 3, copies.task_buffers());
		const Comparison comparison = copies.compare();
		assert_true(comparison.within_bound);
		assert_true(comparison.informative == (inputs == Inputs::random));
	}
}

/* Three correlations of image by random filters into outputs that hold
 * `outputs_before` (random when absent), run task by task and by the
 * pack's batched kernel, compared as verification compares them. */
Comparison compare_three_correlations(Buffers &buffers, void *image, std::optional<float> outputs_before)
{
	const PackEntry &e = entry("cross_correlation");
	std::vector<std::vector<void *>> tasks;
	for (unsigned f = 0; f < 3; f++) {
		void *output = buffers.matrix(sizeof(float), 8, 8, 0);
		if (outputs_before)
			std::fill_n(reinterpret_cast<float *>(Buffers::pointer(output)), 64, *outputs_before);
		tasks.push_back({image, buffers.matrix(sizeof(float), 3, 3, 0), output});
	}
	std::vector<void **> task_buffers;
	for (auto &task : tasks)
		task_buffers.push_back(task.data());
	WrittenBufferCopies copies(task_buffers, {STARPU_R, STARPU_R, STARPU_W});
	for (void **task : task_buffers)
		dahl_convolution_2d<float>(task);
	fusing::kernels::run_accepted_tasks(e, 3, copies.task_buffers());
	return copies.compare();
}

/* A buffer only written may hold anything before, NaN bit patterns
 * included (DAHL's arena does not clear what it hands out): a correlation
 * replacing NaN outputs with its results can tell. */
void verification_counts_outputs_replacing_nan(void **)
{
	Buffers buffers(43);
	const Comparison comparison = compare_three_correlations(buffers, buffers.matrix(sizeof(float), 10, 10, 0), NAN);
	assert_true(comparison.within_bound);
	assert_true(comparison.informative);
}

/* Over finite values a buffer only written held before (DAHL's arena):
 * a correlation of an all-zero image writes zero everywhere, which any
 * arithmetic gives, so the batch cannot tell.  Counting each element's
 * change from the old value made it informative (the old values differ). */
void verification_ignores_what_an_only_written_buffer_held(void **)
{
	Buffers buffers(47);
	void *image = buffers.matrix(sizeof(float), 10, 10, 0);
	std::fill_n(reinterpret_cast<float *>(Buffers::pointer(image)), 100, 0.0f);
	const Comparison comparison = compare_three_correlations(buffers, image, std::nullopt);
	assert_true(comparison.within_bound);
	assert_false(comparison.informative);
}

} // namespace

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(pack_cross_correlation_matches_dahl),
		cmocka_unit_test(pack_filter_gradient_matches_dahl),
		cmocka_unit_test(pack_dense_products_match_dahl),
		cmocka_unit_test(pack_views_sharing_a_pointer_keep_their_own_shapes),
		cmocka_unit_test(pack_runs_mixed_element_sizes_in_their_types),
		cmocka_unit_test(pack_refuses_shapes_it_cannot_run),
		cmocka_unit_test(verification_tells_agreeing_from_different_arithmetic),
		cmocka_unit_test(verification_bounds_each_element_by_its_terms),
		cmocka_unit_test(verification_copies_a_buffer_read_and_written_by_one_task),
		cmocka_unit_test(verification_compares_nan_and_other_sizes),
		cmocka_unit_test(verification_trusts_only_informative_results),
		cmocka_unit_test(verification_ignores_what_an_only_written_buffer_held),
		cmocka_unit_test(verification_counts_outputs_replacing_nan),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
