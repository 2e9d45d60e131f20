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
 *    codelet is bound.
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
	const std::string line = "kernel pack entry 'cross_correlation' does not compute what codelet 'convolution_2d' computes (largest difference";
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
		unsetenv("STARPU_FUSING_KERNELS");
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
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
