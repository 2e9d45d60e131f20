/* Ensures kernel pack entries bind to a program's own codelets under
 * StarPU, as an unmodified DAHL binary would have them:
 *  - a codelet declared as DAHL declares convolution_2d (no cl->name, a
 *    regression model of that symbol, DAHL's loops) gets the batched kernel:
 *    some tasks never run its own function, and the results agree with
 *    DAHL's loops within the verification's bound;
 *  - a codelet with that name and shape but other arithmetic (a
 *    convolution) is caught in its first batch: every task runs its own
 *    function, results are its own exactly, and one line names it and the
 *    largest difference;
 *  - a batched implementation the program registers wins over the pack;
 *  - with STARPU_FUSING_KERNELS=off (files named BASE-kernels-off), no
 *    codelet is bound; the other files set auto (the default is off).
 * Run once per file tests/kernel_binding/BASE[-kernels-off].binding, with
 * every fusable task held (STARPU_FUSING_HOLD=always) in batches of at most
 * 8, so that a run of 32 tasks has several batches. */
/* The streams first: cmocka defines a macro named fail. */
#include <fstream>
#include <sstream>

#include "starpu_fusing.h"
#include "tests/cmocka.hpp"
#include "tests/dahl_loops.hpp"
#include "tests/policy_test.hpp"

#include <starpu.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

bool kernels_off = false;

std::atomic<long> own_calls{0};
std::atomic<long> registered_calls{0};

void dahl_convolution_2d_cpu(void *buffers[], void *)
{
	own_calls++;
	dahl_convolution_2d<double>(buffers);
}

void convolution_cpu(void *buffers[], void *)
{
	own_calls++;
	convolution_not_correlation<double>(buffers);
}

/* As DAHL's DEFINE_STARPU_CODELET(convolution_2d, 3, ..., R, R, W). */
struct starpu_perfmodel dahl_model = [] {
	struct starpu_perfmodel model = {};
	model.type = STARPU_REGRESSION_BASED;
	model.symbol = "convolution_2d";
	return model;
}();

struct starpu_codelet codelet_like_dahls(void (*function)(void **, void *), struct starpu_perfmodel *model, const char *name)
{
	struct starpu_codelet cl;
	starpu_codelet_init(&cl);
	cl.cpu_funcs[0] = function;
	cl.nbuffers = 3;
	cl.modes[0] = STARPU_R;
	cl.modes[1] = STARPU_R;
	cl.modes[2] = STARPU_W;
	cl.model = model;
	cl.name = name;
	return cl;
}

struct starpu_codelet dahl_convolution = codelet_like_dahls(dahl_convolution_2d_cpu, &dahl_model, nullptr);
struct starpu_codelet planted_convolution = codelet_like_dahls(convolution_cpu, nullptr, "convolution_2d");
struct starpu_codelet registered_convolution = codelet_like_dahls(dahl_convolution_2d_cpu, nullptr, "convolution_2d");

/* 8 images of 28x28 (DAHL's basic_cnn), 4 filters of 3x3, one task per
 * (image, filter), as DAHL's forward pass submits them; the outputs after
 * StarPU ran them, and the same computed by reference on the host. */
struct Run {
	static constexpr unsigned images = 8, filters = 4, size = 28, kernel = 3, out = size - kernel + 1;
	std::vector<std::vector<double>> image_data, filter_data, outputs, expected;
	std::string messages; /* what the library printed meanwhile */
};

std::vector<double> random_values(std::size_t n, unsigned seed)
{
	std::vector<double> values(n);
	for (std::size_t i = 0; i < n; i++)
		values[i] = std::sin(double(seed * 7919 + i)); /* deterministic, in [-1, 1] */
	return values;
}

/* Reads everything written to stderr between start() and stop(). */
class CapturedStderr {
public:
	void start()
	{
		std::fflush(stderr);
		saved_ = dup(2);
		std::snprintf(path_, sizeof(path_), "/tmp/test_kernel_binding.XXXXXX");
		int fd = mkstemp(path_);
		dup2(fd, 2);
		close(fd);
	}
	std::string stop()
	{
		std::fflush(stderr);
		dup2(saved_, 2);
		close(saved_);
		std::ifstream file(path_);
		std::stringstream text;
		text << file.rdbuf();
		unlink(path_);
		return text.str();
	}

private:
	int saved_ = -1;
	char path_[64] = {};
};

void run_convolutions(struct starpu_codelet *cl, void (*reference)(void **), Run &run)
{
	run.image_data.clear();
	run.filter_data.clear();
	for (unsigned i = 0; i < Run::images; i++)
		run.image_data.push_back(random_values(Run::size * Run::size, i));
	for (unsigned f = 0; f < Run::filters; f++)
		run.filter_data.push_back(random_values(Run::kernel * Run::kernel, 100 + f));
	run.outputs.assign(Run::images * Run::filters, std::vector<double>(Run::out * Run::out, 0.0));
	run.expected = run.outputs;

	CapturedStderr captured;
	captured.start();
	struct starpu_conf conf;
	starpu_conf_init(&conf);
	conf.sched_policy = starpu_fusing_policy();
	assert_non_null(conf.sched_policy);
	assert_int_equal(starpu_init(&conf), 0);
	std::vector<starpu_data_handle_t> images(Run::images), filters(Run::filters), outputs(Run::images * Run::filters);
	for (unsigned i = 0; i < Run::images; i++)
		starpu_block_data_register(&images[i], STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(run.image_data[i].data()), Run::size,
					   Run::size * Run::size, Run::size, Run::size, 1, sizeof(double));
	for (unsigned f = 0; f < Run::filters; f++)
		starpu_block_data_register(&filters[f], STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(run.filter_data[f].data()), Run::kernel,
					   Run::kernel * Run::kernel, Run::kernel, Run::kernel, 1, sizeof(double));
	for (unsigned t = 0; t < outputs.size(); t++)
		starpu_matrix_data_register(&outputs[t], STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(run.outputs[t].data()), Run::out, Run::out,
					    Run::out, sizeof(double));
	for (unsigned i = 0; i < Run::images; i++)
		for (unsigned f = 0; f < Run::filters; f++)
			assert_int_equal(starpu_task_insert(cl, STARPU_R, images[i], STARPU_R, filters[f], STARPU_W, outputs[i * Run::filters + f], 0), 0);
	starpu_task_wait_for_all();
	for (starpu_data_handle_t handle : images)
		starpu_data_unregister(handle);
	for (starpu_data_handle_t handle : filters)
		starpu_data_unregister(handle);
	for (starpu_data_handle_t handle : outputs)
		starpu_data_unregister(handle);
	starpu_shutdown();
	run.messages = captured.stop();

	for (unsigned i = 0; i < Run::images; i++)
		for (unsigned f = 0; f < Run::filters; f++) {
			struct starpu_block_interface image = {}, filter = {};
			struct starpu_matrix_interface output = {};
			image.id = filter.id = STARPU_BLOCK_INTERFACE_ID;
			image.ptr = reinterpret_cast<uintptr_t>(run.image_data[i].data());
			image.nx = image.ny = image.ldy = Run::size;
			image.ldz = Run::size * Run::size;
			image.nz = 1;
			filter.ptr = reinterpret_cast<uintptr_t>(run.filter_data[f].data());
			filter.nx = filter.ny = filter.ldy = Run::kernel;
			filter.ldz = Run::kernel * Run::kernel;
			filter.nz = 1;
			output.id = STARPU_MATRIX_INTERFACE_ID;
			output.ptr = reinterpret_cast<uintptr_t>(run.expected[i * Run::filters + f].data());
			output.nx = output.ny = output.ld = Run::out;
			void *buffers[] = {&image, &filter, &output};
			reference(buffers);
		}
}

/* Largest |output - expected| relative to the largest |expected|. */
double relative_difference(const Run &run)
{
	double largest = 0.0, difference = 0.0;
	for (std::size_t t = 0; t < run.outputs.size(); t++)
		for (std::size_t i = 0; i < run.outputs[t].size(); i++) {
			largest = std::max(largest, std::fabs(run.expected[t][i]));
			difference = std::max(difference, std::fabs(run.outputs[t][i] - run.expected[t][i]));
		}
	return difference / largest;
}

unsigned count_lines_with(const std::string &text, const std::string &needle)
{
	unsigned count = 0;
	std::istringstream lines(text);
	for (std::string line; std::getline(lines, line);)
		count += line.find(needle) != std::string::npos;
	return count;
}

const long ntasks = Run::images * Run::filters;

void binding_runs_dahls_convolution_in_the_kernel(void **)
{
	own_calls = 0;
	Run run;
	run_convolutions(&dahl_convolution, dahl_convolution_2d<double>, run);
	/* Double precision, the verification's bound for it. */
	assert_true(relative_difference(run) <= 1e-9);
	if (kernels_off) {
		assert_int_equal(own_calls.load(), ntasks);
		return;
	}
	/* The first batches ran both ways; later ones in the kernel only. */
	assert_true(own_calls.load() >= 1);
	assert_true(own_calls.load() < ntasks);
	assert_int_equal(count_lines_with(run.messages, "does not compute"), 0);
}

void binding_catches_a_codelet_computing_something_else(void **)
{
	own_calls = 0;
	Run run;
	run_convolutions(&planted_convolution, convolution_not_correlation<double>, run);
	/* Every result is the codelet's own, to the bit. */
	assert_true(relative_difference(run) == 0.0);
	assert_int_equal(own_calls.load(), ntasks);
	const std::string line = "kernel pack entry 'cross_correlation' cannot stand in for codelet 'convolution_2d': it does not compute what the codelet computes (largest difference";
	assert_int_equal(count_lines_with(run.messages, line), kernels_off ? 0 : 1);
}

void registered_batch(unsigned ntasks_in_batch, void **task_buffers[], void *[], void *)
{
	registered_calls++;
	for (unsigned t = 0; t < ntasks_in_batch; t++)
		dahl_convolution_2d<double>(task_buffers[t]);
}

void binding_yields_to_a_registered_implementation(void **)
{
	own_calls = 0;
	registered_calls = 0;
	struct starpu_fusing_batched_implementation implementation = {};
	implementation.size = sizeof(implementation);
	implementation.cpu_func = registered_batch;
	assert_int_equal(starpu_fusing_register_batched(&registered_convolution, &implementation), 0);
	Run run;
	run_convolutions(&registered_convolution, dahl_convolution_2d<double>, run);
	assert_int_equal(starpu_fusing_unregister_batched(&registered_convolution), 0);
	assert_true(relative_difference(run) == 0.0);
	assert_int_equal(own_calls.load(), 0);
	assert_true(registered_calls.load() >= 1);
}

/* An image and, through a read-only partition plan, its first half (the
 * same pointer, fewer rows), each correlated with 2 filters in one batch:
 * every task's output has its own image's shape (grouped by pointer alone,
 * the kernel wrote the half's outputs past their end). */
struct starpu_codelet matrix_correlation = codelet_like_dahls(dahl_convolution_2d_cpu, nullptr, "matrix_cross_correlation");

void binding_keeps_views_of_one_image_apart(void **)
{
	constexpr unsigned size = 12, half = size / 2, kernel = 3, filters = 2;
	std::vector<double> image = random_values(size * size, 7);
	std::vector<std::vector<double>> filter_data, outputs;
	for (unsigned f = 0; f < filters; f++)
		filter_data.push_back(random_values(kernel * kernel, 50 + f));
	/* Outputs of the whole image, then of its half, each followed by a
	 * guard of 64 elements. */
	const double guard = 12345.0;
	for (unsigned view = 0; view < 2; view++)
		for (unsigned f = 0; f < filters; f++)
			outputs.push_back(std::vector<double>((size - kernel + 1) * ((view ? half : size) - kernel + 1) + 64, guard));
	CapturedStderr captured;
	captured.start();
	struct starpu_conf conf;
	starpu_conf_init(&conf);
	conf.sched_policy = starpu_fusing_policy();
	assert_int_equal(starpu_init(&conf), 0);
	starpu_data_handle_t image_handle, halves[2];
	starpu_matrix_data_register(&image_handle, STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(image.data()), size, size, size, sizeof(double));
	struct starpu_data_filter by_rows = {};
	by_rows.filter_func = starpu_matrix_filter_vertical_block;
	by_rows.nchildren = 2;
	starpu_data_partition_plan(image_handle, &by_rows, halves);
	starpu_data_partition_readonly_submit(image_handle, 2, halves);
	std::vector<starpu_data_handle_t> filter_handles(filters), output_handles;
	for (unsigned f = 0; f < filters; f++)
		starpu_matrix_data_register(&filter_handles[f], STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(filter_data[f].data()), kernel, kernel,
					    kernel, sizeof(double));
	output_handles.resize(2 * filters);
	/* Interleaved, so that a batch (of 4 here: 8 spread over 2 workers)
	 * holds both views. */
	for (unsigned f = 0; f < filters; f++)
		for (unsigned view = 0; view < 2; view++) {
			const unsigned rows = (view ? half : size) - kernel + 1;
			starpu_data_handle_t output;
			starpu_matrix_data_register(&output, STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(outputs[view * filters + f].data()),
						    size - kernel + 1, size - kernel + 1, rows, sizeof(double));
			output_handles[view * filters + f] = output;
			assert_int_equal(starpu_task_insert(&matrix_correlation, STARPU_R, view ? halves[0] : image_handle, STARPU_R, filter_handles[f],
							    STARPU_W, output, 0), 0);
		}
	starpu_task_wait_for_all();
	starpu_data_unpartition_submit(image_handle, 2, halves, STARPU_MAIN_RAM);
	starpu_data_partition_clean(image_handle, 2, halves);
	starpu_data_unregister(image_handle);
	for (starpu_data_handle_t handle : filter_handles)
		starpu_data_unregister(handle);
	for (starpu_data_handle_t handle : output_handles)
		starpu_data_unregister(handle);
	starpu_shutdown();
	const std::string messages = captured.stop();
	assert_int_equal(count_lines_with(messages, "does not compute"), 0);
	for (unsigned view = 0; view < 2; view++)
		for (unsigned f = 0; f < filters; f++) {
			const unsigned width = size - kernel + 1, rows = (view ? half : size) - kernel + 1;
			const std::vector<double> &out = outputs[view * filters + f];
			for (std::size_t i = std::size_t(width) * rows; i < out.size(); i++)
				assert_true(out[i] == guard);
			for (unsigned y = 0; y < rows; y++)
				for (unsigned x = 0; x < width; x++) {
					double expected = 0.0;
					for (unsigned v = 0; v < kernel; v++)
						for (unsigned u = 0; u < kernel; u++)
							expected += image[(y + v) * size + x + u] * filter_data[f][v * kernel + u];
					assert_true(std::fabs(out[y * width + x] - expected) <= 1e-9 * 10);
				}
		}
}

/* ----------------------------------------------- what a batch can show
 * A codelet named as DAHL names its dense forward product, computing
 * out += scale * matrix x vector: the pack's entry computes it for scale 1
 * only.  The scale comes from the task's cl_arg when it has one, else from
 * codelet_scale.  Rounds of kSamples tasks sharing one matrix; each round's
 * outputs are compared with the host's. */
std::atomic<double> codelet_scale{1.0};

thread_local double sign_of_scale = 1.0; /* set by subtracting_product_cpu */

void scaled_product_cpu(void *buffers[], void *cl_arg)
{
	own_calls++;
	double scale = sign_of_scale * codelet_scale;
	if (cl_arg)
		starpu_codelet_unpack_args(cl_arg, &scale);
	const unsigned rows = STARPU_MATRIX_GET_NY(buffers[0]), columns = STARPU_MATRIX_GET_NX(buffers[0]);
	const unsigned ld = STARPU_MATRIX_GET_LD(buffers[0]);
	const double *matrix = reinterpret_cast<const double *>(STARPU_MATRIX_GET_PTR(buffers[0]));
	const double *vector = reinterpret_cast<const double *>(STARPU_VECTOR_GET_PTR(buffers[1]));
	double *out = reinterpret_cast<double *>(STARPU_VECTOR_GET_PTR(buffers[2]));
	for (unsigned y = 0; y < rows; y++)
		for (unsigned x = 0; x < columns; x++)
			out[y] += scale * matrix[y * ld + x] * vector[x];
}

/* R, R, W, as DAHL declares its products. */
struct starpu_codelet scaled_product = codelet_like_dahls(scaled_product_cpu, nullptr, "matrix_vector_product");

enum class Vectors { random, zero, nan };

struct Round {
	double scale;       /* what the codelet multiplies by */
	bool scale_as_arg;  /* passed in cl_arg, else codelet_scale */
	Vectors vectors;
	/* The program set the codelet's CPU function to one subtracting the
	 * product (out -= scale * matrix x vector) before this round. */
	bool subtracting_function = false;
};

void subtracting_product_cpu(void *buffers[], void *cl_arg)
{
	sign_of_scale = -1.0;
	scaled_product_cpu(buffers, cl_arg);
	sign_of_scale = 1.0;
}

/* Runs the rounds in one StarPU session; returns each round's largest
 * relative error (0 for rounds with NaN), and what the library printed. */
std::vector<double> run_dense_rounds(const std::vector<Round> &rounds, std::string &messages)
{
	constexpr unsigned kSamples = 8, kColumns = 24, kRows = 6;
	CapturedStderr captured;
	captured.start();
	struct starpu_conf conf;
	starpu_conf_init(&conf);
	conf.sched_policy = starpu_fusing_policy();
	assert_non_null(conf.sched_policy);
	assert_int_equal(starpu_init(&conf), 0);
	std::vector<double> errors(rounds.size(), 0.0);
	for (std::size_t r = 0; r < rounds.size(); r++) {
		const Round &round = rounds[r];
		codelet_scale = round.scale;
		scaled_product.cpu_funcs[0] = round.subtracting_function ? subtracting_product_cpu : scaled_product_cpu;
		std::vector<double> matrix = random_values(kColumns * kRows, 1000 + static_cast<unsigned>(r));
		std::vector<std::vector<double>> vectors, outputs(kSamples, std::vector<double>(kRows, 0.0));
		for (unsigned s = 0; s < kSamples; s++) {
			vectors.push_back(random_values(kColumns, 2000 + static_cast<unsigned>(r * kSamples + s)));
			if (round.vectors == Vectors::zero)
				std::fill(vectors[s].begin(), vectors[s].end(), 0.0);
			if (round.vectors == Vectors::nan)
				vectors[s][s % kColumns] = NAN;
		}
		starpu_data_handle_t matrix_handle;
		starpu_matrix_data_register(&matrix_handle, STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(matrix.data()), kColumns, kColumns, kRows,
					    sizeof(double));
		std::vector<starpu_data_handle_t> handles;
		for (unsigned s = 0; s < kSamples; s++) {
			starpu_data_handle_t vector_handle, output_handle;
			starpu_vector_data_register(&vector_handle, STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(vectors[s].data()), kColumns, sizeof(double));
			starpu_vector_data_register(&output_handle, STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(outputs[s].data()), kRows, sizeof(double));
			handles.push_back(vector_handle);
			handles.push_back(output_handle);
			if (round.scale_as_arg)
				assert_int_equal(starpu_task_insert(&scaled_product, STARPU_R, matrix_handle, STARPU_R, vector_handle, STARPU_W, output_handle,
								    STARPU_VALUE, &round.scale, sizeof(round.scale), 0), 0);
			else
				assert_int_equal(starpu_task_insert(&scaled_product, STARPU_R, matrix_handle, STARPU_R, vector_handle, STARPU_W, output_handle, 0),
						 0);
		}
		starpu_task_wait_for_all();
		starpu_data_unregister(matrix_handle);
		for (starpu_data_handle_t handle : handles)
			starpu_data_unregister(handle);
		if (round.vectors == Vectors::nan)
			continue;
		double largest = 0.0, difference = 0.0;
		for (unsigned s = 0; s < kSamples; s++)
			for (unsigned y = 0; y < kRows; y++) {
				double expected = 0.0;
				for (unsigned x = 0; x < kColumns; x++)
					expected += (round.subtracting_function ? -1.0 : 1.0) * round.scale * matrix[y * kColumns + x] * vectors[s][x];
				largest = std::max(largest, std::fabs(expected));
				difference = std::max(difference, std::fabs(outputs[s][y] - expected));
			}
		errors[r] = largest > 0.0 ? difference / largest : difference;
	}
	starpu_shutdown();
	messages = captured.stop();
	scaled_product.cpu_funcs[0] = scaled_product_cpu;
	return errors;
}

double largest_of(const std::vector<double> &errors)
{
	return *std::max_element(errors.begin(), errors.end());
}

const std::string dense_mismatch =
	"kernel pack entry 'matrix_vector_product' cannot stand in for codelet 'matrix_vector_product': it does not compute what the codelet computes";

/* A task with a cl_arg never runs in the kernel: the argument may change
 * what the codelet computes (here its scale, 1 in the first rounds). */
void binding_runs_no_task_with_an_argument_in_the_kernel(void **)
{
	std::vector<Round> rounds(2, Round{1.0, true, Vectors::random});
	rounds.insert(rounds.end(), 4, Round{2.0, true, Vectors::random});
	std::string messages;
	assert_true(largest_of(run_dense_rounds(rounds, messages)) <= 1e-9);
	assert_int_equal(count_lines_with(messages, dense_mismatch), 0);
}

/* A first batch whose results cannot tell the codelet from the entry (zero
 * vectors: the outputs stay 0; NaN: NaN both ways) verifies nothing; the
 * next round's batch shows the codelet scales by 2. */
void binding_trusts_no_batch_that_cannot_tell(void **)
{
	for (Vectors first : {Vectors::zero, Vectors::nan}) {
		std::vector<Round> rounds = {Round{2.0, false, first}};
		rounds.insert(rounds.end(), 4, Round{2.0, false, Vectors::random});
		std::string messages;
		assert_true(largest_of(run_dense_rounds(rounds, messages)) <= 1e-9);
		assert_int_equal(count_lines_with(messages, dense_mismatch), kernels_off ? 0 : 1);
	}
}

/* Verified shapes are checked again every KernelBinding::kRecheckPeriod
 * batches: a codelet that agrees with the entry on its first rounds only
 * (its scale turns to 2) is caught, and the rounds after that keep its own
 * results. */
void binding_rechecks_verified_shapes(void **)
{
	std::vector<Round> rounds(3, Round{1.0, false, Vectors::random});
	rounds.insert(rounds.end(), 48, Round{2.0, false, Vectors::random});
	std::string messages;
	const std::vector<double> errors = run_dense_rounds(rounds, messages);
	assert_int_equal(count_lines_with(messages, dense_mismatch), kernels_off ? 0 : 1);
	assert_true(errors.back() <= 1e-9);
}

/* The program changes the codelet's CPU function after its binding was
 * verified (to one subtracting the product): StarPU would run the new
 * function, and so must every later task, whatever batch it is in.  The
 * entry is verified again against the new function, which catches it. */
void binding_follows_a_changed_cpu_function(void **)
{
	std::vector<Round> rounds(4, Round{1.0, false, Vectors::random});
	Round subtracting{1.0, false, Vectors::random};
	subtracting.subtracting_function = true;
	rounds.insert(rounds.end(), 10, subtracting);
	std::string messages;
	const std::vector<double> errors = run_dense_rounds(rounds, messages);
	for (double error : errors)
		assert_true(error <= 1e-9);
	if (!kernels_off)
		assert_int_equal(count_lines_with(messages, "has another CPU function than when kernel pack entry"), 1);
}

/* ------------------------------------------- what the kernels must not take
 * Integers: a codelet named as DAHL names its dense product, on int32 or
 * int64 elements (4 and 8 bytes, the sizes the entry runs as float and
 * double), small non-negative values.  Read as floating-point numbers they
 * are subnormal: no batch may verify the entry, and every output is exact. */
template <typename T>
void integer_product_cpu(void *buffers[], void *)
{
	own_calls++;
	const unsigned rows = STARPU_MATRIX_GET_NY(buffers[0]), columns = STARPU_MATRIX_GET_NX(buffers[0]);
	const unsigned ld = STARPU_MATRIX_GET_LD(buffers[0]);
	const T *matrix = reinterpret_cast<const T *>(STARPU_MATRIX_GET_PTR(buffers[0]));
	const T *vector = reinterpret_cast<const T *>(STARPU_VECTOR_GET_PTR(buffers[1]));
	T *out = reinterpret_cast<T *>(STARPU_VECTOR_GET_PTR(buffers[2]));
	for (unsigned y = 0; y < rows; y++)
		for (unsigned x = 0; x < columns; x++)
			out[y] += matrix[y * ld + x] * vector[x];
}

template <typename T>
long wrong_integer_products(unsigned rounds)
{
	struct starpu_codelet cl = codelet_like_dahls(integer_product_cpu<T>, nullptr, "matrix_vector_product");
	constexpr unsigned kSamples = 8, kColumns = 16, kRows = 8;
	struct starpu_conf conf;
	starpu_conf_init(&conf);
	conf.sched_policy = starpu_fusing_policy();
	assert_int_equal(starpu_init(&conf), 0);
	long wrong = 0;
	for (unsigned r = 0; r < rounds; r++) {
		std::vector<T> matrix(kColumns * kRows);
		for (std::size_t i = 0; i < matrix.size(); i++)
			matrix[i] = T((i * 7 + r) % 10);
		std::vector<std::vector<T>> vectors(kSamples, std::vector<T>(kColumns)), outputs(kSamples, std::vector<T>(kRows, 0));
		starpu_data_handle_t matrix_handle;
		starpu_matrix_data_register(&matrix_handle, STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(matrix.data()), kColumns, kColumns, kRows,
					    sizeof(T));
		std::vector<starpu_data_handle_t> handles;
		for (unsigned s = 0; s < kSamples; s++) {
			for (unsigned x = 0; x < kColumns; x++)
				vectors[s][x] = T((x * 3 + s + r) % 10);
			starpu_data_handle_t vector_handle, output_handle;
			starpu_vector_data_register(&vector_handle, STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(vectors[s].data()), kColumns, sizeof(T));
			starpu_vector_data_register(&output_handle, STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(outputs[s].data()), kRows, sizeof(T));
			handles.push_back(vector_handle);
			handles.push_back(output_handle);
			assert_int_equal(starpu_task_insert(&cl, STARPU_R, matrix_handle, STARPU_R, vector_handle, STARPU_W, output_handle, 0), 0);
		}
		starpu_task_wait_for_all();
		starpu_data_unregister(matrix_handle);
		for (starpu_data_handle_t handle : handles)
			starpu_data_unregister(handle);
		for (unsigned s = 0; s < kSamples; s++)
			for (unsigned y = 0; y < kRows; y++) {
				T expected = 0;
				for (unsigned x = 0; x < kColumns; x++)
					expected += matrix[y * kColumns + x] * vectors[s][x];
				wrong += outputs[s][y] != expected;
			}
	}
	starpu_shutdown();
	return wrong;
}

void binding_verifies_nothing_on_integers(void **)
{
	assert_int_equal(wrong_integer_products<int32_t>(6), 0);
	assert_int_equal(wrong_integer_products<int64_t>(6), 0);
}

/* A task whose output is also one of its inputs: the codelet's loops read
 * what they have just written, the kernels read every input first.  Such a
 * task never runs in a kernel: the results are the codelet's own, exactly.
 * A first round of one task (a batch of one runs the kernel's plain loops,
 * in the codelet's order, and would verify the shape), then rounds of 8
 * tasks sharing one matrix (batches of several: the kernel's grouped
 * path), each task's vector being its own output (the same handle twice);
 * the same with a cross-correlation whose filter is its output. */
void product_into_its_input_cpu(void *buffers[], void *cl_arg)
{
	scaled_product_cpu(buffers, cl_arg);
}
struct starpu_codelet product_into_its_input = codelet_like_dahls(product_into_its_input_cpu, nullptr, "matrix_vector_product");
struct starpu_codelet correlation_into_its_filter = codelet_like_dahls(dahl_convolution_2d_cpu, nullptr, "convolution_2d");

void binding_runs_no_task_whose_output_is_an_input(void **)
{
	constexpr unsigned kMostSamples = 8, kSize = 6, kFilter = 3;
	codelet_scale = 1.0;
	struct starpu_conf conf;
	starpu_conf_init(&conf);
	conf.sched_policy = starpu_fusing_policy();
	assert_int_equal(starpu_init(&conf), 0);
	double worst = 0.0;
	for (unsigned r = 0; r < 6; r++) {
		const unsigned kSamples = r == 0 ? 1 : kMostSamples;
		/* out += M out, on the same handle */
		std::vector<double> matrix = random_values(kSize * kSize, 300 + r);
		std::vector<std::vector<double>> vectors, expected;
		for (unsigned s = 0; s < kSamples; s++)
			vectors.push_back(random_values(kSize, 400 + r * kSamples + s));
		expected = vectors;
		starpu_data_handle_t matrix_handle;
		starpu_matrix_data_register(&matrix_handle, STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(matrix.data()), kSize, kSize, kSize,
					    sizeof(double));
		std::vector<starpu_data_handle_t> handles(kSamples);
		for (unsigned s = 0; s < kSamples; s++) {
			starpu_vector_data_register(&handles[s], STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(vectors[s].data()), kSize, sizeof(double));
			assert_int_equal(starpu_task_insert(&product_into_its_input, STARPU_R, matrix_handle, STARPU_R, handles[s], STARPU_W, handles[s], 0), 0);
		}
		starpu_task_wait_for_all();
		starpu_data_unregister(matrix_handle);
		for (starpu_data_handle_t handle : handles)
			starpu_data_unregister(handle);
		for (unsigned s = 0; s < kSamples; s++) {
			struct starpu_matrix_interface m = {};
			struct starpu_vector_interface v = {};
			m.id = STARPU_MATRIX_INTERFACE_ID;
			m.ptr = reinterpret_cast<uintptr_t>(matrix.data());
			m.nx = m.ny = m.ld = kSize;
			m.elemsize = sizeof(double);
			v.id = STARPU_VECTOR_INTERFACE_ID;
			v.ptr = reinterpret_cast<uintptr_t>(expected[s].data());
			v.nx = kSize;
			v.elemsize = sizeof(double);
			void *buffers[] = {&m, &v, &v};
			scaled_product_cpu(buffers, nullptr);
			for (unsigned i = 0; i < kSize; i++)
				worst = std::max(worst, std::fabs(vectors[s][i] - expected[s][i]));
		}
		/* out = image * filter, on the filter's handle: a 5x5 image makes a
		 * 3x3 output, the filter's shape. */
		const unsigned image_size = kFilter + kFilter - 1;
		std::vector<double> image = random_values(image_size * image_size, 500 + r);
		std::vector<std::vector<double>> filters, expected_filters;
		for (unsigned s = 0; s < kSamples; s++)
			filters.push_back(random_values(kFilter * kFilter, 600 + r * kSamples + s));
		expected_filters = filters;
		starpu_data_handle_t image_handle;
		starpu_matrix_data_register(&image_handle, STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(image.data()), image_size, image_size,
					    image_size, sizeof(double));
		for (unsigned s = 0; s < kSamples; s++) {
			starpu_matrix_data_register(&handles[s], STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(filters[s].data()), kFilter, kFilter, kFilter,
						    sizeof(double));
			assert_int_equal(starpu_task_insert(&correlation_into_its_filter, STARPU_R, image_handle, STARPU_R, handles[s], STARPU_W, handles[s], 0),
					 0);
		}
		starpu_task_wait_for_all();
		starpu_data_unregister(image_handle);
		for (starpu_data_handle_t handle : handles)
			starpu_data_unregister(handle);
		for (unsigned s = 0; s < kSamples; s++) {
			struct starpu_matrix_interface in = {}, filter = {};
			in.id = filter.id = STARPU_MATRIX_INTERFACE_ID;
			in.ptr = reinterpret_cast<uintptr_t>(image.data());
			in.nx = in.ny = in.ld = image_size;
			filter.ptr = reinterpret_cast<uintptr_t>(expected_filters[s].data());
			filter.nx = filter.ny = filter.ld = kFilter;
			in.elemsize = filter.elemsize = sizeof(double);
			void *buffers[] = {&in, &filter, &filter};
			dahl_convolution_2d<double>(buffers);
			for (unsigned i = 0; i < kFilter * kFilter; i++)
				worst = std::max(worst, std::fabs(filters[s][i] - expected_filters[s][i]));
		}
	}
	starpu_shutdown();
	assert_true(worst == 0.0);
}

} // namespace

int main(int argc, char **argv)
{
	std::string file = argc > 1 ? argv[1] : "lws.binding";
	const std::string off = "-kernels-off.binding";
	if (file.size() > off.size() && file.compare(file.size() - off.size(), off.size(), off) == 0) {
		kernels_off = true;
		file.replace(file.size() - off.size(), off.size(), ".binding");
		setenv("STARPU_FUSING_KERNELS", "off", 1);
	} else {
		setenv("STARPU_FUSING_KERNELS", "auto", 1);
	}
	configure_tested_policy(tested_policy_from_file(file, ".binding"));
	setenv("STARPU_FUSING_HOLD", "always", 1);
	setenv("STARPU_FUSING_MAX_BATCH", "8", 1);
	/* Tasks not predicted yet are fused too. */
	setenv("STARPU_FUSING_MAX_TASK", "100s", 1);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(binding_runs_dahls_convolution_in_the_kernel),
		cmocka_unit_test(binding_catches_a_codelet_computing_something_else),
		cmocka_unit_test(binding_yields_to_a_registered_implementation),
		cmocka_unit_test(binding_keeps_views_of_one_image_apart),
		cmocka_unit_test(binding_runs_no_task_with_an_argument_in_the_kernel),
		cmocka_unit_test(binding_trusts_no_batch_that_cannot_tell),
		cmocka_unit_test(binding_rechecks_verified_shapes),
		cmocka_unit_test(binding_follows_a_changed_cpu_function),
		cmocka_unit_test(binding_verifies_nothing_on_integers),
		cmocka_unit_test(binding_runs_no_task_whose_output_is_an_input),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
