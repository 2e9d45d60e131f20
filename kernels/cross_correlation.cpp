/* Cross-correlations as im2col + GEMM; see cross_correlation.h. */
#include "kernels/cross_correlation.h"

#include "kernels/blas.h"
#include "kernels/task_groups.h"

#include <algorithm>
#include <cstring>
#include <tuple>

namespace fusing {
namespace kernels {
namespace {

/* How many elements of im2col copy one product works on: the copy and its
 * product stay in cache.  A whole 600-kilopixel image would need a 25x
 * larger copy of itself, and ran slower than the plain loops (measured on
 * this project's 2-core machine, batched conv2d + bias layer). */
constexpr std::size_t kColumnTileElements = 4096;

} // namespace

template <typename T>
void correlate_with_filters(const Grid<T> &image, const std::vector<Grid<T>> &filters, const std::vector<Grid<T>> &outputs,
			    const std::vector<T> &biases)
{
	keep_blas_to_one_thread();
	const Grid<T> &first_filter = filters.front();
	const unsigned kw = first_filter.nx, kh = first_filter.ny, channels = first_filter.nz;
	const unsigned out_w = outputs.front().nx, out_h = outputs.front().ny;
	const unsigned k = kw * kh * channels, nfilters = static_cast<unsigned>(filters.size());

	/* Output rows are processed in tiles of whole rows: every im2col and
	 * output copy is then a contiguous run (per-pixel index arithmetic
	 * cost more than the product on 48x48 images). */
	const unsigned tile_rows = std::max(1u, static_cast<unsigned>(kColumnTileElements / out_w));
	const std::size_t tile = std::size_t(std::min(tile_rows, out_h)) * out_w;
	/* Thread-local scratch: one worker runs one batch at a time. */
	thread_local std::vector<T> columns, weights, products;
	columns.resize(std::size_t(k) * tile);
	weights.resize(std::size_t(nfilters) * k);
	products.resize(std::size_t(nfilters) * tile);
	for (unsigned f = 0; f < nfilters; f++)
		for (unsigned c = 0; c < channels; c++)
			for (unsigned v = 0; v < kh; v++)
				for (unsigned u = 0; u < kw; u++)
					weights[std::size_t(f) * k + (c * kh + v) * kw + u] = filters[f].at(c, v, u);
	for (unsigned first_row = 0; first_row < out_h; first_row += tile_rows) {
		const unsigned rows = std::min(tile_rows, out_h - first_row);
		const unsigned count = rows * out_w;
		for (unsigned c = 0; c < channels; c++)
			for (unsigned v = 0; v < kh; v++)
				for (unsigned u = 0; u < kw; u++) {
					T *column = &columns[std::size_t((c * kh + v) * kw + u) * count];
					for (unsigned r = 0; r < rows; r++)
						std::memcpy(&column[std::size_t(r) * out_w], &image.at(c, first_row + r + v, u), out_w * sizeof(T));
				}
		gemm(false, false, static_cast<int>(nfilters), static_cast<int>(count), static_cast<int>(k), T(1), weights.data(),
		     static_cast<int>(k), columns.data(), static_cast<int>(count), T(0), products.data(), static_cast<int>(count));
		for (unsigned f = 0; f < nfilters; f++) {
			const T bias = biases.empty() ? T(0) : biases[f];
			const T *product = &products[std::size_t(f) * count];
			for (unsigned r = 0; r < rows; r++) {
				T *out_row = &outputs[f].at(0, first_row + r, 0);
				const T *product_row = &product[std::size_t(r) * out_w];
				for (unsigned x = 0; x < out_w; x++)
					out_row[x] = product_row[x] + bias;
			}
		}
	}
}

template <typename T>
void accumulate_filter_gradients(const Grid<T> &image, const std::vector<Grid<T>> &gradients, const std::vector<Grid<T>> &outputs)
{
	keep_blas_to_one_thread();
	/* Per channel, the gradient of filter f at (j, i) is the dot product of
	 * gradients[f] with the image window at (j, i): with the windows as
	 * rows (im2col, the window being the gradient's size), a (windows x K)
	 * by (K x filters) product, K = gradient pixels.  K is large (the
	 * layer's output size) and windows few (the filter size): the product
	 * is tiled over gradient rows, accumulating. */
	const unsigned gw = gradients.front().nx, gh = gradients.front().ny;
	const unsigned out_w = outputs.front().nx, out_h = outputs.front().ny;
	const unsigned windows = out_w * out_h, nfilters = static_cast<unsigned>(gradients.size());
	const unsigned tile_rows = std::max(1u, std::min(gh, static_cast<unsigned>(kColumnTileElements / gw)));
	thread_local std::vector<T> rows_of_windows, packed_gradients, products;
	rows_of_windows.resize(std::size_t(windows) * tile_rows * gw);
	packed_gradients.resize(std::size_t(nfilters) * tile_rows * gw);
	products.resize(std::size_t(windows) * nfilters);
	for (unsigned c = 0; c < image.nz; c++) {
		std::fill(products.begin(), products.end(), T(0));
		for (unsigned first_row = 0; first_row < gh; first_row += tile_rows) {
			const unsigned rows = std::min(tile_rows, gh - first_row);
			const unsigned k = rows * gw;
			for (unsigned j = 0; j < out_h; j++)
				for (unsigned i = 0; i < out_w; i++)
					for (unsigned m = 0; m < rows; m++)
						std::memcpy(&rows_of_windows[std::size_t(j * out_w + i) * k + std::size_t(m) * gw],
							    &image.at(c, first_row + m + j, i), gw * sizeof(T));
			for (unsigned f = 0; f < nfilters; f++)
				for (unsigned m = 0; m < rows; m++)
					std::memcpy(&packed_gradients[std::size_t(f) * k + std::size_t(m) * gw], &gradients[f].at(0, first_row + m, 0),
						    gw * sizeof(T));
			gemm(false, true, static_cast<int>(windows), static_cast<int>(nfilters), static_cast<int>(k), T(1),
			     rows_of_windows.data(), static_cast<int>(k), packed_gradients.data(), static_cast<int>(k), T(1), products.data(),
			     static_cast<int>(nfilters));
		}
		for (unsigned f = 0; f < nfilters; f++)
			for (unsigned j = 0; j < out_h; j++)
				for (unsigned i = 0; i < out_w; i++)
					outputs[f].at(c, j, i) += products[std::size_t(j * out_w + i) * nfilters + f];
	}
}

template <typename T>
void correlate(const Grid<T> &image, const Grid<T> &filter, const Grid<T> &output, T bias)
{
	for (unsigned y = 0; y < output.ny; y++)
		for (unsigned x = 0; x < output.nx; x++) {
			T sum = bias;
			for (unsigned c = 0; c < filter.nz; c++)
				for (unsigned v = 0; v < filter.ny; v++)
					for (unsigned u = 0; u < filter.nx; u++)
						sum += image.at(c, y + v, x + u) * filter.at(c, v, u);
			output.at(0, y, x) = sum;
		}
}

template <typename T>
void accumulate_filter_gradient(const Grid<T> &image, const Grid<T> &gradient, const Grid<T> &output)
{
	for (unsigned c = 0; c < output.nz; c++)
		for (unsigned j = 0; j < output.ny; j++)
			for (unsigned i = 0; i < output.nx; i++) {
				T sum = T(0);
				for (unsigned m = 0; m < gradient.ny; m++)
					for (unsigned l = 0; l < gradient.nx; l++)
						sum += image.at(c, m + j, l + i) * gradient.at(0, m, l);
				output.at(c, j, i) += sum;
			}
}

template <typename T>
void correlate_tasks(unsigned ntasks, void **task_buffers[], int image_index, int filter_index, int bias_index, int output_index)
{
	auto image_of = [&](unsigned t) { return grid_of<T>(task_buffers[t][image_index]); };
	auto filter_of = [&](unsigned t) { return grid_of<T>(task_buffers[t][filter_index]); };
	auto output_of = [&](unsigned t) { return grid_of<T>(task_buffers[t][output_index]); };
	auto bias_of = [&](unsigned t) {
		return bias_index < 0 ? T(0) : *reinterpret_cast<T *>(STARPU_VARIABLE_GET_PTR(task_buffers[t][bias_index]));
	};
	/* One product per image and filter shape, which fix the outputs'
	 * shape.  The image is its whole view: a partition plan's children
	 * share their parent's pointer with other shapes. */
	auto groups = group_tasks(ntasks, [&](unsigned t) {
		const Grid<T> filter = filter_of(t);
		return std::make_tuple(grid_key(image_of(t)), filter.nx, filter.ny, filter.nz);
	});
	for (const std::vector<unsigned> &group : groups) {
		if (group.size() < kSmallestSharedProduct) {
			for (unsigned t : group)
				correlate(image_of(t), filter_of(t), output_of(t), bias_of(t));
			continue;
		}
		std::vector<Grid<T>> filters, outputs;
		std::vector<T> biases;
		for (unsigned t : group) {
			filters.push_back(filter_of(t));
			outputs.push_back(output_of(t));
			if (bias_index >= 0)
				biases.push_back(bias_of(t));
		}
		correlate_with_filters(image_of(group.front()), filters, outputs, biases);
	}
}

template <typename T>
void accumulate_filter_gradient_tasks(unsigned ntasks, void **task_buffers[], int image_index, int gradient_index, int output_index)
{
	auto image_of = [&](unsigned t) { return grid_of<T>(task_buffers[t][image_index]); };
	auto gradient_of = [&](unsigned t) { return grid_of<T>(task_buffers[t][gradient_index]); };
	auto output_of = [&](unsigned t) { return grid_of<T>(task_buffers[t][output_index]); };
	auto groups = group_tasks(ntasks, [&](unsigned t) {
		const Grid<T> gradient = gradient_of(t);
		return std::make_tuple(grid_key(image_of(t)), gradient.nx, gradient.ny);
	});
	for (const std::vector<unsigned> &group : groups) {
		if (group.size() < kSmallestSharedProduct) {
			for (unsigned t : group)
				accumulate_filter_gradient(image_of(t), gradient_of(t), output_of(t));
			continue;
		}
		std::vector<Grid<T>> gradients, outputs;
		for (unsigned t : group) {
			gradients.push_back(gradient_of(t));
			outputs.push_back(output_of(t));
		}
		accumulate_filter_gradients(image_of(group.front()), gradients, outputs);
	}
}

#define FUSING_INSTANTIATE(T)                                                                                                \
	template void correlate_with_filters<T>(const Grid<T> &, const std::vector<Grid<T>> &, const std::vector<Grid<T>> &,  \
						const std::vector<T> &);                                                     \
	template void accumulate_filter_gradients<T>(const Grid<T> &, const std::vector<Grid<T>> &, const std::vector<Grid<T>> &); \
	template void correlate<T>(const Grid<T> &, const Grid<T> &, const Grid<T> &, T);                                     \
	template void accumulate_filter_gradient<T>(const Grid<T> &, const Grid<T> &, const Grid<T> &);                       \
	template void correlate_tasks<T>(unsigned, void **[], int, int, int, int);                                            \
	template void accumulate_filter_gradient_tasks<T>(unsigned, void **[], int, int, int);
FUSING_INSTANTIATE(float)
FUSING_INSTANTIATE(double)
#undef FUSING_INSTANTIATE

} // namespace kernels
} // namespace fusing
