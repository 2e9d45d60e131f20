/* Valid 2-D cross-correlations of one image with many filters, as one
 * im2col copy and one matrix product (blas.h), for float and double.
 *
 * Convolution layers are written one task per (image, filter); a batch of
 * such tasks holds several filters per image.  Correlating an image with F
 * filters of K = kw * kh * channels weights is an (F x K) by (K x pixels)
 * matrix product once the image's windows are laid out as columns
 * (im2col): one copy of the image serves every filter.
 *
 * Forward:    out_f[y][x]     = bias_f + sum_c sum_v sum_u image[c][y + v][x + u] * filter_f[c][v][u]
 * Gradient:   out_f[c][j][i] += sum_m sum_l image[c][m + j][l + i] * gradient_f[m][l]
 *             (the filters' gradient of a convolution layer, per channel)
 *
 * Both sum in another order than the plain loops: results differ from them
 * by rounding only.  Filters, gradients and outputs of one call all have
 * the same shape; images and outputs are grids (views.h) with any strides. */
#ifndef STARPU_FUSING_KERNELS_CROSS_CORRELATION_H
#define STARPU_FUSING_KERNELS_CROSS_CORRELATION_H

#include "kernels/views.h"

#include <vector>

namespace fusing {
namespace kernels {

/* outputs[f] (planes: nz = 1) = image * filters[f] + biases[f]; biases
 * empty means 0.  Needs outputs' size = image's - filter's + 1 and the
 * filters' channel count = the image's. */
template <typename T>
void correlate_with_filters(const Grid<T> &image, const std::vector<Grid<T>> &filters, const std::vector<Grid<T>> &outputs,
			    const std::vector<T> &biases);

/* outputs[f] (blocks with image.nz planes) += the per-channel correlation
 * of image with gradients[f] (planes).  Needs outputs' size = image's -
 * gradient's + 1. */
template <typename T>
void accumulate_filter_gradients(const Grid<T> &image, const std::vector<Grid<T>> &gradients, const std::vector<Grid<T>> &outputs);

/* The same for one filter, in plain loops summing in the order of the
 * formulas above (channels, then rows, then columns): for a lone filter
 * on an image the im2col copy would not pay. */
template <typename T>
void correlate(const Grid<T> &image, const Grid<T> &filter, const Grid<T> &output, T bias);
template <typename T>
void accumulate_filter_gradient(const Grid<T> &image, const Grid<T> &gradient, const Grid<T> &output);

/* A batch of tasks (starpu_fusing.h's task_buffers), each correlating one
 * image with one filter; buffer indices name the task's image, filter,
 * bias (a STARPU variable; -1: none) and output.  Tasks sharing an image
 * and a filter shape run as one correlate_with_filters, the others in
 * plain loops. */
template <typename T>
void correlate_tasks(unsigned ntasks, void **task_buffers[], int image_index, int filter_index, int bias_index, int output_index);

/* A batch of filter-gradient tasks (image, gradient, output), grouped the
 * same way. */
template <typename T>
void accumulate_filter_gradient_tasks(unsigned ntasks, void **task_buffers[], int image_index, int gradient_index, int output_index);

} // namespace kernels
} // namespace fusing

#endif
