/* Convolution kernels; see conv2d.h. */
#include "kernels/conv2d.h"

#include "starpu_fusing.h"

#include <cblas.h>

#include <cstring>
#include <map>
#include <vector>

namespace {

/* An image or a filter: a StarPU block (channels along z) or, for one
 * channel, a StarPU matrix (DAHL's layout); both interfaces start with their
 * id. */
struct Grid {
	const float *ptr;
	unsigned nx, ny, nz;
	std::size_t ldy, ldz;
};

Grid grid_of(void *buffer)
{
	if (*static_cast<enum starpu_data_interface_id *>(buffer) == STARPU_MATRIX_INTERFACE_ID) {
		const struct starpu_matrix_interface *m = static_cast<struct starpu_matrix_interface *>(buffer);
		return Grid{reinterpret_cast<const float *>(m->ptr), m->nx, m->ny, 1, m->ld, std::size_t(m->ld) * m->ny};
	}
	const struct starpu_block_interface *b = static_cast<struct starpu_block_interface *>(buffer);
	return Grid{reinterpret_cast<const float *>(b->ptr), b->nx, b->ny, b->nz, b->ldy, b->ldz};
}

/* bias of task t, 0 when the codelet has none. */
float bias_of(void **task_buffers[], unsigned t, int bias_index)
{
	return bias_index < 0 ? 0.0f : *reinterpret_cast<float *>(STARPU_VARIABLE_GET_PTR(task_buffers[t][bias_index]));
}

/* Plain loops: the per-task codelet functions and the reference. */
void convolve(const Grid &image, const Grid &filter, const struct starpu_matrix_interface *output, float bias)
{
	float *out = reinterpret_cast<float *>(output->ptr);
	for (unsigned y = 0; y < output->ny; y++)
		for (unsigned x = 0; x < output->nx; x++) {
			float sum = bias;
			for (unsigned c = 0; c < filter.nz; c++)
				for (unsigned v = 0; v < filter.ny; v++)
					for (unsigned u = 0; u < filter.nx; u++)
						sum += image.ptr[c * image.ldz + (y + v) * image.ldy + x + u] *
						       filter.ptr[c * filter.ldz + v * filter.ldy + u];
			out[y * output->ld + x] = sum;
		}
}

void conv2d_cpu(void *buffers[], void *)
{
	convolve(grid_of(buffers[0]), grid_of(buffers[1]), static_cast<struct starpu_matrix_interface *>(buffers[2]), 0.0f);
}

void bias_add_cpu(void *buffers[], void *)
{
	const struct starpu_matrix_interface *output = static_cast<struct starpu_matrix_interface *>(buffers[0]);
	float bias = *reinterpret_cast<float *>(STARPU_VARIABLE_GET_PTR(buffers[1]));
	float *out = reinterpret_cast<float *>(output->ptr);
	for (unsigned y = 0; y < output->ny; y++)
		for (unsigned x = 0; x < output->nx; x++)
			out[y * output->ld + x] += bias;
}

void conv2d_bias_cpu(void *buffers[], void *)
{
	convolve(grid_of(buffers[0]), grid_of(buffers[1]), static_cast<struct starpu_matrix_interface *>(buffers[3]),
		 *reinterpret_cast<float *>(STARPU_VARIABLE_GET_PTR(buffers[2])));
}

struct starpu_codelet make_codelet(void (*function)(void **, void *), const char *name,
				   std::initializer_list<enum starpu_data_access_mode> modes)
{
	struct starpu_codelet cl;
	starpu_codelet_init(&cl);
	cl.cpu_funcs[0] = function;
	cl.nbuffers = static_cast<int>(modes.size());
	int b = 0;
	for (enum starpu_data_access_mode mode : modes)
		cl.modes[b++] = mode;
	cl.name = name;
	return cl;
}

/* The GEMM path for tasks [first, ...) sharing one image: im2col once,
 * then (filters x K) * (K x pixels).  bias_index: buffer of the bias, or -1. */
void convolve_group(const std::vector<unsigned> &tasks, void **task_buffers[], int image_index, int filter_index,
		    int bias_index, int output_index)
{
	const Grid image = grid_of(task_buffers[tasks[0]][image_index]);
	const Grid filter0 = grid_of(task_buffers[tasks[0]][filter_index]);
	const struct starpu_matrix_interface *output0 = static_cast<struct starpu_matrix_interface *>(task_buffers[tasks[0]][output_index]);
	const unsigned kw = filter0.nx, kh = filter0.ny, channels = filter0.nz;
	const unsigned out_w = output0->nx, out_h = output0->ny;
	const unsigned k = kw * kh * channels, nfilters = static_cast<unsigned>(tasks.size());

	/* Output rows are processed in tiles of whole rows, so that the im2col
	 * tile (K x tile floats) stays in cache: a whole 600-kilopixel image
	 * would need a 25 x larger copy of itself and ran slower than the plain
	 * loops.  Whole rows make every im2col and output copy a contiguous run
	 * (per-pixel index arithmetic cost more than the GEMM on 48x48 images). */
	const unsigned tile_rows = out_w >= 4096 ? 1 : 4096 / out_w;
	const unsigned tile = tile_rows * out_w;
	/* Thread-local scratch: one worker runs one batch at a time. */
	thread_local std::vector<float> columns, filters, products;
	columns.resize(std::size_t(k) * tile);
	filters.resize(std::size_t(nfilters) * k);
	products.resize(std::size_t(nfilters) * tile);
	for (unsigned t = 0; t < nfilters; t++) {
		const Grid filter = grid_of(task_buffers[tasks[t]][filter_index]);
		for (unsigned c = 0; c < channels; c++)
			for (unsigned v = 0; v < kh; v++)
				for (unsigned u = 0; u < kw; u++)
					filters[std::size_t(t) * k + (c * kh + v) * kw + u] = filter.ptr[c * filter.ldz + v * filter.ldy + u];
	}
	for (unsigned first_row = 0; first_row < out_h; first_row += tile_rows) {
		const unsigned rows = out_h - first_row < tile_rows ? out_h - first_row : tile_rows;
		const unsigned count = rows * out_w;
		for (unsigned c = 0; c < channels; c++)
			for (unsigned v = 0; v < kh; v++)
				for (unsigned u = 0; u < kw; u++) {
					float *column = &columns[std::size_t((c * kh + v) * kw + u) * count];
					for (unsigned r = 0; r < rows; r++)
						std::memcpy(&column[std::size_t(r) * out_w], &image.ptr[c * image.ldz + (first_row + r + v) * image.ldy + u],
							    out_w * sizeof(float));
				}
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(nfilters), static_cast<int>(count),
			    static_cast<int>(k), 1.0f, filters.data(), static_cast<int>(k), columns.data(), static_cast<int>(count), 0.0f,
			    products.data(), static_cast<int>(count));
		for (unsigned t = 0; t < nfilters; t++) {
			const struct starpu_matrix_interface *output = static_cast<struct starpu_matrix_interface *>(task_buffers[tasks[t]][output_index]);
			const float bias = bias_of(task_buffers, tasks[t], bias_index);
			float *out = reinterpret_cast<float *>(output->ptr);
			const float *product = &products[std::size_t(t) * count];
			for (unsigned r = 0; r < rows; r++) {
				float *out_row = &out[std::size_t(first_row + r) * output->ld];
				const float *product_row = &product[std::size_t(r) * out_w];
				for (unsigned x = 0; x < out_w; x++)
					out_row[x] = product_row[x] + bias;
			}
		}
	}
}

void convolve_batch(unsigned ntasks, void **task_buffers[], int image_index, int filter_index, int bias_index, int output_index)
{
	/* Group by image (and shape, which the image fixes together with the
	 * filter size: tasks of one codelet in a DAHL layer share it). */
	std::map<const void *, std::vector<unsigned>> by_image;
	for (unsigned t = 0; t < ntasks; t++) {
		const Grid image = grid_of(task_buffers[t][image_index]);
		const Grid filter = grid_of(task_buffers[t][filter_index]);
		auto &group = by_image[image.ptr];
		if (!group.empty()) {
			const Grid first = grid_of(task_buffers[group[0]][filter_index]);
			if (first.nx != filter.nx || first.ny != filter.ny || first.nz != filter.nz) {
				/* Mixed filter shapes on one image: plain loops for this one. */
				convolve(image, filter, static_cast<struct starpu_matrix_interface *>(task_buffers[t][output_index]),
					 bias_of(task_buffers, t, bias_index));
				continue;
			}
		}
		group.push_back(t);
	}
	/* The GEMM pays for its im2col copy once two filters share it.
	 * Measured on this project's 2-core machine, batched conv2d+bias
	 * layer, median of 5: with the GEMM from 2 filters up, 48x48 images
	 * 0.025 s (same as from 8 up), 512x512 0.061 s (0.079 s from 8 up),
	 * 775x775 0.099 s (0.129 s). */
	const std::size_t gemm_min_filters = 2;
	for (auto &entry : by_image) {
		if (entry.second.size() >= gemm_min_filters) {
			convolve_group(entry.second, task_buffers, image_index, filter_index, bias_index, output_index);
			continue;
		}
		for (unsigned t : entry.second)
			convolve(grid_of(task_buffers[t][image_index]), grid_of(task_buffers[t][filter_index]),
				 static_cast<struct starpu_matrix_interface *>(task_buffers[t][output_index]), bias_of(task_buffers, t, bias_index));
	}
}

} // namespace

extern "C" {

struct starpu_codelet conv2d_codelet = make_codelet(conv2d_cpu, "conv2d", {STARPU_R, STARPU_R, STARPU_W});
struct starpu_codelet bias_add_codelet = make_codelet(bias_add_cpu, "bias_add", {STARPU_RW, STARPU_R});
struct starpu_codelet conv2d_bias_codelet = make_codelet(conv2d_bias_cpu, "conv2d_bias", {STARPU_R, STARPU_R, STARPU_R, STARPU_W});
struct starpu_codelet conv2d_matrix_codelet = make_codelet(conv2d_cpu, "conv2d_matrix", {STARPU_R, STARPU_R, STARPU_W});

void conv2d_batched(unsigned ntasks, void **task_buffers[], void *[], void *)
{
	convolve_batch(ntasks, task_buffers, 0, 1, -1, 2);
}

void conv2d_bias_batched(unsigned ntasks, void **task_buffers[], void *[], void *)
{
	convolve_batch(ntasks, task_buffers, 0, 1, 2, 3);
}

void bias_add_batched(unsigned ntasks, void **task_buffers[], void *[], void *)
{
	for (unsigned t = 0; t < ntasks; t++)
		bias_add_cpu(task_buffers[t], nullptr);
}

int conv2d_register_batched_kernels(void)
{
	openblas_set_num_threads(1);
	struct {
		struct starpu_codelet *codelet;
		starpu_fusing_batched_cpu_func_t function;
	} kernels[] = {{&conv2d_codelet, conv2d_batched}, {&bias_add_codelet, bias_add_batched}, {&conv2d_bias_codelet, conv2d_bias_batched},
		       {&conv2d_matrix_codelet, conv2d_batched}};
	for (auto &kernel : kernels) {
		struct starpu_fusing_batched_implementation implementation = {};
		implementation.size = sizeof(implementation);
		implementation.cpu_func = kernel.function;
		int ret = starpu_fusing_register_batched(kernel.codelet, &implementation);
		if (ret != 0)
			return ret;
	}
	return 0;
}

int conv2d_unregister_batched_kernels(void)
{
	int ret = 0;
	for (struct starpu_codelet *codelet : {&conv2d_codelet, &bias_add_codelet, &conv2d_bias_codelet, &conv2d_matrix_codelet}) {
		int r = starpu_fusing_unregister_batched(codelet);
		if (r != 0 && ret == 0)
			ret = r;
	}
	return ret;
}

} // extern "C"
