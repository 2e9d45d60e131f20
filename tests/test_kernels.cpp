/* Ensures each batched convolution kernel (kernels/conv2d.h), and each
 * per-task codelet function, computes the cross-correlation the header
 * defines, on random inputs of several shapes, strides and batch
 * compositions.  The reference is computed here by plain loops over the
 * arrays (plain_reference), sharing no code with the kernels.  Bound: for
 * every output element, |computed - reference| <= 1e-4 * (1 + |reference|)
 * (single precision, the GEMM sums in another order than the loops). */
#include "kernels/conv2d.h"
#include "tests/cmocka.hpp"

#include <cmath>
#include <random>
#include <vector>

namespace {

struct Shape {
	unsigned width, height, channels, kw, kh;
	unsigned pad; /* extra elements per image row, to test strides */
};

struct Problem {
	std::vector<std::vector<float>> images, filters, outputs, expected;
	std::vector<float> biases;
	std::vector<starpu_block_interface> image_if, filter_if;
	std::vector<starpu_matrix_interface> output_if, expected_if;
	std::vector<starpu_variable_interface> bias_if;
};

starpu_block_interface block(std::vector<float> &data, unsigned nx, unsigned ny, unsigned nz, unsigned ldy)
{
	starpu_block_interface b = {};
	b.id = STARPU_BLOCK_INTERFACE_ID;
	b.ptr = reinterpret_cast<uintptr_t>(data.data());
	b.nx = nx;
	b.ny = ny;
	b.nz = nz;
	b.ldy = ldy;
	b.ldz = ldy * ny;
	b.elemsize = sizeof(float);
	return b;
}

starpu_matrix_interface matrix(std::vector<float> &data, unsigned nx, unsigned ny)
{
	starpu_matrix_interface m = {};
	m.id = STARPU_MATRIX_INTERFACE_ID;
	m.ptr = reinterpret_cast<uintptr_t>(data.data());
	m.nx = nx;
	m.ny = ny;
	m.ld = nx;
	m.elemsize = sizeof(float);
	return m;
}

/* nimages images x nfilters filters, random values in [-1, 1]. */
void build(Problem &p, const Shape &s, unsigned nimages, unsigned nfilters, std::mt19937 &random)
{
	std::uniform_real_distribution<float> value(-1.0f, 1.0f);
	unsigned ldy = s.width + s.pad, out_w = s.width - s.kw + 1, out_h = s.height - s.kh + 1;
	p.images.assign(nimages, std::vector<float>(std::size_t(ldy) * s.height * s.channels));
	p.filters.assign(nfilters, std::vector<float>(std::size_t(s.kw) * s.kh * s.channels));
	p.biases.resize(nfilters);
	for (auto &image : p.images)
		for (float &v : image)
			v = value(random);
	for (auto &filter : p.filters)
		for (float &v : filter)
			v = value(random);
	for (float &b : p.biases)
		b = value(random);
	p.outputs.assign(std::size_t(nimages) * nfilters, std::vector<float>(std::size_t(out_w) * out_h, 0.0f));
	p.expected = p.outputs;
	p.image_if.clear();
	p.filter_if.clear();
	p.output_if.clear();
	p.expected_if.clear();
	p.bias_if.clear();
	for (auto &image : p.images)
		p.image_if.push_back(block(image, s.width, s.height, s.channels, ldy));
	for (auto &filter : p.filters)
		p.filter_if.push_back(block(filter, s.kw, s.kh, s.channels, s.kw));
	for (std::size_t t = 0; t < p.outputs.size(); t++) {
		p.output_if.push_back(matrix(p.outputs[t], out_w, out_h));
		p.expected_if.push_back(matrix(p.expected[t], out_w, out_h));
	}
	for (float &b : p.biases) {
		starpu_variable_interface v = {};
		v.id = STARPU_VARIABLE_INTERFACE_ID;
		v.ptr = reinterpret_cast<uintptr_t>(&b);
		v.elemsize = sizeof(float);
		p.bias_if.push_back(v);
	}
}

void expect_close(const std::vector<std::vector<float>> &computed, const std::vector<std::vector<float>> &reference, const char *what)
{
	for (std::size_t t = 0; t < computed.size(); t++)
		for (std::size_t i = 0; i < computed[t].size(); i++) {
			const float want = reference[t][i], got = computed[t][i];
			if (!(std::fabs(got - want) <= 1e-4f * (1.0f + std::fabs(want)))) {
				print_error("task %zu element %zu: %s %g, reference %g\n", t, i, what, got, want);
				fail();
			}
		}
}

/* What task (image i, filter f) must write, by the header's definition:
 * out[y][x] = sum_c sum_v sum_u image[c][y + v][x + u] * filter[c][v][u]
 * (+ the filter's bias when with_bias), for every task of p (task
 * i * nfilters + f). */
std::vector<std::vector<float>> plain_reference(const Problem &p, const Shape &s, unsigned nimages, unsigned nfilters, bool with_bias)
{
	const unsigned ldy = s.width + s.pad, out_w = s.width - s.kw + 1, out_h = s.height - s.kh + 1;
	std::vector<std::vector<float>> reference(std::size_t(nimages) * nfilters, std::vector<float>(std::size_t(out_w) * out_h));
	for (unsigned i = 0; i < nimages; i++)
		for (unsigned f = 0; f < nfilters; f++)
			for (unsigned y = 0; y < out_h; y++)
				for (unsigned x = 0; x < out_w; x++) {
					double sum = with_bias ? p.biases[f] : 0.0;
					for (unsigned c = 0; c < s.channels; c++)
						for (unsigned v = 0; v < s.kh; v++)
							for (unsigned u = 0; u < s.kw; u++)
								sum += double(p.images[i][(std::size_t(c) * s.height + y + v) * ldy + x + u]) *
								       double(p.filters[f][(std::size_t(c) * s.kh + v) * s.kw + u]);
					reference[std::size_t(i) * nfilters + f][y * out_w + x] = float(sum);
				}
	return reference;
}

/* The batch's outputs and the per-task function's both match the plain
 * reference. */
void expect_both_match(const Problem &p, const std::vector<std::vector<float>> &reference)
{
	expect_close(p.outputs, reference, "batched");
	expect_close(p.expected, reference, "per-task function");
}

const Shape shapes[] = {
	{8, 8, 1, 3, 3, 0},    /* tiny, single channel */
	{28, 28, 3, 5, 5, 0},  /* MNIST-like with channels */
	{17, 9, 2, 4, 2, 3},   /* odd sizes, padded rows */
	{64, 48, 4, 3, 3, 1},
	{101, 130, 1, 3, 3, 2}, /* several GEMM tiles of whole rows, the last one partial */
};

/* Tasks in an interleaved order, as a batch would see them. */
template <typename MakeBuffers>
void run_all(Problem &p, unsigned nimages, unsigned nfilters, MakeBuffers make, void (*reference)(void **, void *),
	     void (*batched)(unsigned, void **[], void *[], void *))
{
	std::vector<std::vector<void *>> ref_buffers, batch_buffers;
	for (unsigned f = 0; f < nfilters; f++)
		for (unsigned i = 0; i < nimages; i++) {
			std::size_t t = std::size_t(i) * nfilters + f;
			ref_buffers.push_back(make(i, f, &p.expected_if[t]));
			batch_buffers.push_back(make(i, f, &p.output_if[t]));
		}
	for (auto &buffers : ref_buffers)
		reference(buffers.data(), nullptr);
	std::vector<void **> task_buffers;
	std::vector<void *> args(batch_buffers.size(), nullptr);
	for (auto &buffers : batch_buffers)
		task_buffers.push_back(buffers.data());
	batched(static_cast<unsigned>(task_buffers.size()), task_buffers.data(), args.data(), nullptr);
}

void kernels_conv2d_batched_matches_reference(void **)
{
	std::mt19937 random(1);
	for (const Shape &s : shapes) {
		Problem p;
		build(p, s, 3, 9, random); /* 9 filters per image: the GEMM path */
		run_all(p, 3, 9, [&](unsigned i, unsigned f, starpu_matrix_interface *out) {
			return std::vector<void *>{&p.image_if[i], &p.filter_if[f], out};
		}, conv2d_codelet.cpu_funcs[0], conv2d_batched);
		expect_both_match(p, plain_reference(p, s, 3, 9, false));
	}
}

/* DAHL's layout: one-channel images and filters as StarPU matrices. */
void kernels_conv2d_batched_matches_reference_on_matrices(void **)
{
	std::mt19937 random(4);
	for (const Shape &s : shapes) {
		if (s.channels != 1)
			continue;
		Problem p;
		build(p, s, 3, 6, random);
		std::vector<starpu_matrix_interface> images, filters;
		for (std::size_t i = 0; i < p.images.size(); i++) {
			images.push_back(matrix(p.images[i], s.width, s.height));
			images.back().ld = p.image_if[i].ldy; /* padded rows */
		}
		for (auto &filter : p.filters)
			filters.push_back(matrix(filter, s.kw, s.kh));
		run_all(p, 3, 6, [&](unsigned i, unsigned f, starpu_matrix_interface *out) {
			return std::vector<void *>{&images[i], &filters[f], out};
		}, conv2d_matrix_codelet.cpu_funcs[0], conv2d_batched);
		expect_both_match(p, plain_reference(p, s, 3, 6, false));
	}
}

void kernels_conv2d_bias_batched_matches_reference(void **)
{
	std::mt19937 random(2);
	for (const Shape &s : shapes) {
		for (unsigned nfilters : {5u, 1u}) { /* the GEMM path, and a lone filter's loop path */
			Problem p;
			build(p, s, 2, nfilters, random);
			run_all(p, 2, nfilters, [&](unsigned i, unsigned f, starpu_matrix_interface *out) {
				return std::vector<void *>{&p.image_if[i], &p.filter_if[f], &p.bias_if[f], out};
			}, conv2d_bias_codelet.cpu_funcs[0], conv2d_bias_batched);
			expect_both_match(p, plain_reference(p, s, 2, nfilters, true));
		}
	}
}

void kernels_bias_add_batched_matches_reference(void **)
{
	std::mt19937 random(3);
	Problem p;
	build(p, shapes[1], 2, 3, random);
	std::vector<std::vector<float>> reference = p.outputs;
	for (std::size_t t = 0; t < p.outputs.size(); t++)
		for (std::size_t i = 0; i < p.outputs[t].size(); i++) {
			p.outputs[t][i] = p.expected[t][i] = float(i % 7) - 3.0f;
			reference[t][i] = p.outputs[t][i] + p.biases[t % 3]; /* task t: image t / 3, filter t % 3 */
		}
	run_all(p, 2, 3, [&](unsigned, unsigned f, starpu_matrix_interface *out) {
		return std::vector<void *>{out, &p.bias_if[f]};
	}, bias_add_codelet.cpu_funcs[0], bias_add_batched);
	expect_both_match(p, reference);
}

} // namespace

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(kernels_conv2d_batched_matches_reference),
		cmocka_unit_test(kernels_conv2d_batched_matches_reference_on_matrices),
		cmocka_unit_test(kernels_conv2d_bias_batched_matches_reference),
		cmocka_unit_test(kernels_bias_add_batched_matches_reference),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
