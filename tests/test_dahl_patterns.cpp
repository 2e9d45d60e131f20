/* DAHL's StarPU patterns without DAHL: what made DAHL abort under `fusing`
 * (StarPU 1.4, "There is no initialisation codelet for the reduction"), and
 * the rest of what a DAHL training step does to StarPU.
 *
 * - dahl_codelet_modes_changed_after_submission: DAHL sets a codelet's
 *   modes[] before each submission (cl_any_add.modes[2] = STARPU_REDUX or
 *   STARPU_RW, src/tasks/tasks.c).  StarPU records each task's modes when it
 *   is submitted; a batch must use those, not the codelet's modes when the
 *   batch is built.  Here held tasks submitted with RW become ready only
 *   after the program switched the codelet to REDUX.
 * - dahl_training_loop: a small integer "training" loop: nested asynchronous
 *   partition plans (depth 2) around every step, read-only partitions,
 *   STARPU_REDUX gradient accumulation with init/redux codelets, the same
 *   codelet switching between RW and REDUX, starpu_data_invalidate_submit,
 *   a NOWHERE codelet, regression performance models, and per-batch buffers
 *   unregistered with starpu_data_unregister_no_coherency and registered
 *   again (DAHL's arena reset).  Integers make the result exact whatever the
 *   reduction order; it is compared with the same loop on the host.
 * - dahl_regression_models_calibrate_under_fusion: see there.
 *
 * Usage: test_dahl_patterns BASE[-when-busy][.dahl] [SKIP_PATTERN]
 *   (tests/policy_test.hpp; tests whose name matches the pattern, with
 *   cmocka's * and ?, are skipped). */
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem> /* before cmocka.h, whose macros its headers would meet */
#include <string>
#include <vector>

#include <starpu.h>

#include "starpu_fusing.h"
#include "tests/cmocka.hpp"
#include "tests/policy_test.hpp"

namespace {

bool hold_always = true;
std::atomic<long> runs_in_batch{0};

void note_run()
{
	if (starpu_fusing_current_batch_size() > 0)
		runs_in_batch++;
}

long *vector_of(void *buffer)
{
	return reinterpret_cast<long *>(STARPU_VECTOR_GET_PTR(buffer));
}

unsigned length_of(void *buffer)
{
	return STARPU_VECTOR_GET_NX(buffer);
}

/* ----------------------------------------------------------- the codelets */

struct starpu_perfmodel regression_model(const char *symbol)
{
	struct starpu_perfmodel model = {};
	model.type = STARPU_REGRESSION_BASED;
	model.symbol = symbol;
	return model;
}

struct starpu_codelet codelet(void (*function)(void **, void *), int nbuffers,
			      std::initializer_list<enum starpu_data_access_mode> modes, struct starpu_perfmodel *model)
{
	struct starpu_codelet cl;
	starpu_codelet_init(&cl);
	cl.cpu_funcs[0] = function;
	cl.nbuffers = nbuffers;
	int b = 0;
	for (enum starpu_data_access_mode mode : modes)
		cl.modes[b++] = mode;
	cl.model = model; /* no cl.name: DAHL's codelets have none */
	return cl;
}

/* c[i] += a[i] + b[i]: DAHL's any_add, used with c in RW or in REDUX
 * (then c is a per-worker copy started by zero_cl, and redux_cl adds it in). */
void add_into(void *buffers[], void *)
{
	note_run();
	long *a = vector_of(buffers[0]), *b = vector_of(buffers[1]), *c = vector_of(buffers[2]);
	for (unsigned i = 0; i < length_of(buffers[2]); i++)
		c[i] += a[i] + b[i];
}

/* out[0] = w . x */
void dot(void *buffers[], void *)
{
	note_run();
	long *w = vector_of(buffers[0]), *x = vector_of(buffers[1]);
	long sum = 0;
	for (unsigned i = 0; i < length_of(buffers[0]); i++)
		sum += w[i] * x[i];
	vector_of(buffers[2])[0] = sum;
}

/* err = out - y */
void subtract(void *buffers[], void *)
{
	note_run();
	long *out = vector_of(buffers[0]), *y = vector_of(buffers[1]), *err = vector_of(buffers[2]);
	for (unsigned i = 0; i < length_of(buffers[2]); i++)
		err[i] = out[i] - y[i];
}

/* grad[k * d + i] += err[k] * x[i] (grad in REDUX) */
void outer(void *buffers[], void *)
{
	note_run();
	long *err = vector_of(buffers[0]), *x = vector_of(buffers[1]), *grad = vector_of(buffers[2]);
	unsigned k_count = length_of(buffers[0]), d = length_of(buffers[1]);
	for (unsigned k = 0; k < k_count; k++)
		for (unsigned i = 0; i < d; i++)
			grad[k * d + i] += err[k] * x[i];
}

/* w -= grad / 64 */
void update(void *buffers[], void *)
{
	note_run();
	long *grad = vector_of(buffers[0]), *w = vector_of(buffers[1]);
	for (unsigned i = 0; i < length_of(buffers[1]); i++)
		w[i] -= grad[i] / 64;
}

void zero(void *buffers[], void *)
{
	long *v = vector_of(buffers[0]);
	for (unsigned i = 0; i < length_of(buffers[0]); i++)
		v[i] = 0;
}

void accumulate(void *buffers[], void *)
{
	long *into = vector_of(buffers[0]), *from = vector_of(buffers[1]);
	for (unsigned i = 0; i < length_of(buffers[0]); i++)
		into[i] += from[i];
}

/* Blocks its worker until release_gate is set. */
std::atomic<bool> release_gate{false};
void gate(void *buffers[], void *)
{
	while (!release_gate.load())
		starpu_sleep(0.0001f);
	vector_of(buffers[0])[0] = 1;
}

struct starpu_perfmodel add_model = regression_model("dahl_patterns_add");
struct starpu_perfmodel dot_model = regression_model("dahl_patterns_dot");
struct starpu_perfmodel subtract_model = regression_model("dahl_patterns_subtract");
struct starpu_perfmodel outer_model = regression_model("dahl_patterns_outer");
struct starpu_codelet add_cl = codelet(add_into, 3, {STARPU_R, STARPU_R, STARPU_RW}, &add_model);
struct starpu_codelet dot_cl = codelet(dot, 3, {STARPU_R, STARPU_R, STARPU_W}, &dot_model);
struct starpu_codelet subtract_cl = codelet(subtract, 3, {STARPU_R, STARPU_R, STARPU_W}, &subtract_model);
struct starpu_codelet outer_cl = codelet(outer, 3, {STARPU_R, STARPU_R, STARPU_REDUX}, &outer_model);
struct starpu_codelet update_cl = codelet(update, 2, {STARPU_R, STARPU_RW}, nullptr);
struct starpu_codelet zero_cl = codelet(zero, 1, {STARPU_W}, nullptr);
struct starpu_codelet accumulate_cl =
	codelet(accumulate, 2, {STARPU_RW, STARPU_R}, nullptr);
struct starpu_codelet gate_cl = codelet(gate, 1, {STARPU_W}, nullptr);
/* DAHL submits tasks of a codelet that runs nowhere, only to order data. */
struct starpu_codelet nowhere_cl = [] {
	struct starpu_codelet cl;
	starpu_codelet_init(&cl);
	cl.where = STARPU_NOWHERE;
	cl.nbuffers = 1;
	cl.modes[0] = STARPU_RW;
	return cl;
}();

/* DAHL's task_add: the output's mode decides the codelet's modes[2]. */
void submit_add(starpu_data_handle_t a, starpu_data_handle_t b, starpu_data_handle_t c, bool c_is_reduction)
{
	add_cl.modes[2] = c_is_reduction ? STARPU_REDUX : STARPU_RW;
	int ret = starpu_task_insert(&add_cl, STARPU_R, a, STARPU_R, b, add_cl.modes[2], c, 0);
	assert_int_equal(ret, 0);
}

starpu_data_handle_t register_vector(std::vector<long> &values)
{
	starpu_data_handle_t handle;
	starpu_vector_data_register(&handle, STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(values.data()),
				    static_cast<uint32_t>(values.size()), sizeof(long));
	return handle;
}

void enable_reduction(starpu_data_handle_t handle)
{
	starpu_data_set_reduction_methods(handle, &accumulate_cl, &zero_cl);
}

/* A plan splitting handle into parts equal blocks, as DAHL's partitions. */
std::vector<starpu_data_handle_t> plan(starpu_data_handle_t handle, unsigned parts)
{
	struct starpu_data_filter filter = {};
	filter.filter_func = starpu_vector_filter_block;
	filter.nchildren = parts;
	std::vector<starpu_data_handle_t> children(parts);
	starpu_data_partition_plan(handle, &filter, children.data());
	return children;
}

int start_starpu_calibrating(void **state, bool calibrate)
{
	watchdog_arm(static_cast<const char *>(*state), 120);
	struct starpu_conf conf;
	starpu_conf_init(&conf);
	conf.calibrate = calibrate ? 1 : 0;
	conf.sched_policy = starpu_fusing_policy();
	if (!conf.sched_policy || starpu_init(&conf) != 0)
		return -1;
	runs_in_batch = 0;
	return 0;
}

int start_starpu(void **state)
{
	return start_starpu_calibrating(state, false);
}

int start_starpu_calibrating_models(void **state)
{
	return start_starpu_calibrating(state, true);
}

int stop_starpu(void **)
{
	starpu_shutdown();
	watchdog_disarm();
	return 0;
}

/* ------------------------------------------------------------------ tests */

void dahl_codelet_modes_changed_after_submission(void **)
{
	const long n = 32, length = 4;
	std::vector<long> gate_value(length, 0), ones(length, 1), zeros(length, 0);
	std::vector<std::vector<long>> plain(n, std::vector<long>(length, 5));
	std::vector<long> reduced(length, 0);
	starpu_data_handle_t gate_handle = register_vector(gate_value);
	starpu_data_handle_t ones_handle = register_vector(ones), zeros_handle = register_vector(zeros);
	starpu_data_handle_t reduced_handle = register_vector(reduced);
	enable_reduction(reduced_handle);
	std::vector<starpu_data_handle_t> plain_handles(n);
	for (long i = 0; i < n; i++)
		plain_handles[i] = register_vector(plain[i]);

	release_gate = false;
	assert_int_equal(starpu_task_insert(&gate_cl, STARPU_W, gate_handle, 0), 0);
	/* Submitted with c in RW (these handles have no reduction methods);
	 * ready only once the gate task ends, after the codelet changed. */
	for (long i = 0; i < n; i++)
		submit_add(gate_handle, ones_handle, plain_handles[i], false);
	for (long i = 0; i < n; i++)
		submit_add(ones_handle, zeros_handle, reduced_handle, true);
	release_gate = true;
	starpu_task_wait_for_all();

	for (long i = 0; i < n; i++)
		starpu_data_unregister(plain_handles[i]);
	for (starpu_data_handle_t handle : {gate_handle, ones_handle, zeros_handle, reduced_handle})
		starpu_data_unregister(handle);
	for (long i = 0; i < n; i++)
		for (long j = 0; j < length; j++)
			assert_int_equal(plain[i][j], j == 0 ? 5 + 1 + 1 : 5 + 0 + 1);
	for (long j = 0; j < length; j++)
		assert_int_equal(reduced[j], n);
	/* Every task is held.  Ready-time batches take the RW ones; groups
	 * merged at submission take the REDUX ones too (they combine
	 * reductions; ready-time batches leave them alone).  With submission
	 * alone, the codelet's first task reaches StarPU unmerged (StarPU
	 * loads its model then); in both, a ready-time batch takes it. */
	const std::string mode = getenv("STARPU_FUSING_MODE") ? getenv("STARPU_FUSING_MODE") : "ready";
	if (hold_always)
		assert_int_equal(runs_in_batch.load(), mode == "ready" ? n : mode == "both" ? 2 * n : 2 * n - 1);
}

struct Sizes {
	unsigned filters = 4, inputs = 8, samples = 16, steps = 4;
};

/* The same step on the host: out = W x, err = out - y, W -= (sum err x^T) / 64,
 * and the bias-like total of the errors. */
void host_training(const Sizes &z, std::vector<long> &w, std::vector<long> &error_total,
		   const std::vector<std::vector<long>> &xs, const std::vector<std::vector<long>> &ys)
{
	for (unsigned step = 0; step < z.steps; step++) {
		std::vector<long> grad(z.filters * z.inputs, 0);
		for (unsigned s = 0; s < z.samples; s++)
			for (unsigned k = 0; k < z.filters; k++) {
				long out = 0;
				for (unsigned i = 0; i < z.inputs; i++)
					out += w[k * z.inputs + i] * xs[step][s * z.inputs + i];
				long err = out - ys[step][s * z.filters + k];
				error_total[k] += err;
				for (unsigned i = 0; i < z.inputs; i++)
					grad[k * z.inputs + i] += err * xs[step][s * z.inputs + i];
			}
		for (unsigned i = 0; i < grad.size(); i++)
			w[i] -= grad[i] / 64;
	}
}

void dahl_training_loop(void **)
{
	const Sizes z;
	std::vector<long> w(z.filters * z.inputs), host_w, grad(z.filters * z.inputs, 0);
	std::vector<long> error_total(z.filters, 0), host_error_total(z.filters, 0), zeros(z.filters, 0);
	for (unsigned i = 0; i < w.size(); i++)
		w[i] = static_cast<long>(i % 5) - 2;
	host_w = w;
	std::vector<std::vector<long>> xs(z.steps), ys(z.steps);
	for (unsigned step = 0; step < z.steps; step++) {
		for (unsigned i = 0; i < z.samples * z.inputs; i++)
			xs[step].push_back(static_cast<long>((i * 7 + step * 3) % 5) - 2);
		for (unsigned i = 0; i < z.samples * z.filters; i++)
			ys[step].push_back(static_cast<long>((i * 3 + step) % 7) - 3);
	}
	host_training(z, host_w, host_error_total, xs, ys);

	starpu_data_handle_t w_handle = register_vector(w), grad_handle = register_vector(grad);
	starpu_data_handle_t total_handle = register_vector(error_total), zeros_handle = register_vector(zeros);
	enable_reduction(grad_handle);
	std::vector<starpu_data_handle_t> w_rows = plan(w_handle, z.filters);

	for (unsigned step = 0; step < z.steps; step++) {
		/* The arena: this step's buffers, registered now, dropped at the end. */
		std::vector<long> out(z.samples * z.filters), err(z.samples * z.filters);
		starpu_data_handle_t x = register_vector(xs[step]), y = register_vector(ys[step]);
		starpu_data_handle_t out_handle = register_vector(out), err_handle = register_vector(err);
		std::vector<starpu_data_handle_t> x_samples = plan(x, z.samples), y_samples = plan(y, z.samples);
		std::vector<starpu_data_handle_t> out_samples = plan(out_handle, z.samples), err_samples = plan(err_handle, z.samples);
		std::vector<std::vector<starpu_data_handle_t>> out_cells(z.samples);
		for (unsigned s = 0; s < z.samples; s++)
			out_cells[s] = plan(out_samples[s], z.filters); /* a plan on a child: depth 2 */

		/* Forward: one task per (sample, filter). */
		starpu_data_partition_readonly_submit(w_handle, z.filters, w_rows.data());
		starpu_data_partition_readonly_submit(x, z.samples, x_samples.data());
		starpu_data_partition_submit(out_handle, z.samples, out_samples.data());
		for (unsigned s = 0; s < z.samples; s++) {
			starpu_data_partition_submit(out_samples[s], z.filters, out_cells[s].data());
			for (unsigned k = 0; k < z.filters; k++)
				assert_int_equal(starpu_task_insert(&dot_cl, STARPU_R, w_rows[k], STARPU_R, x_samples[s], STARPU_W,
								    out_cells[s][k], 0), 0);
			starpu_data_unpartition_submit(out_samples[s], z.filters, out_cells[s].data(), STARPU_MAIN_RAM);
		}
		starpu_data_unpartition_submit(w_handle, z.filters, w_rows.data(), STARPU_MAIN_RAM);

		/* Errors, their total (RW) and the gradient (REDUX), per sample. */
		starpu_data_partition_readonly_submit(y, z.samples, y_samples.data());
		starpu_data_partition_submit(err_handle, z.samples, err_samples.data());
		for (unsigned s = 0; s < z.samples; s++) {
			assert_int_equal(starpu_task_insert(&subtract_cl, STARPU_R, out_samples[s], STARPU_R, y_samples[s],
							    STARPU_W, err_samples[s], 0), 0);
			submit_add(err_samples[s], zeros_handle, total_handle, false);
			assert_int_equal(starpu_task_insert(&outer_cl, STARPU_R, err_samples[s], STARPU_R, x_samples[s],
							    STARPU_REDUX, grad_handle, 0), 0);
		}
		for (auto &parent : {std::make_pair(out_handle, &out_samples), std::make_pair(x, &x_samples),
				     std::make_pair(y, &y_samples), std::make_pair(err_handle, &err_samples)})
			starpu_data_unpartition_submit(parent.first, z.samples, parent.second->data(), STARPU_MAIN_RAM);
		assert_int_equal(starpu_task_insert(&nowhere_cl, STARPU_RW, out_handle, 0), 0);

		/* Update, then drop the gradient's value: the next step's
		 * reduction starts from zero_cl. */
		assert_int_equal(starpu_task_insert(&update_cl, STARPU_R, grad_handle, STARPU_RW, w_handle, 0), 0);
		starpu_data_invalidate_submit(grad_handle);

		/* Arena reset: plans cleaned, buffers dropped without write-back. */
		for (unsigned s = 0; s < z.samples; s++)
			starpu_data_partition_clean(out_samples[s], z.filters, out_cells[s].data());
		starpu_data_partition_clean(out_handle, z.samples, out_samples.data());
		starpu_data_partition_clean(err_handle, z.samples, err_samples.data());
		starpu_data_partition_clean(x, z.samples, x_samples.data());
		starpu_data_partition_clean(y, z.samples, y_samples.data());
		for (starpu_data_handle_t handle : {x, y, out_handle, err_handle})
			starpu_data_unregister_no_coherency(handle);
	}
	starpu_data_partition_clean(w_handle, z.filters, w_rows.data());
	for (starpu_data_handle_t handle : {w_handle, grad_handle, total_handle, zeros_handle})
		starpu_data_unregister(handle);

	for (unsigned i = 0; i < w.size(); i++)
		assert_int_equal(w[i], host_w[i]);
	for (unsigned k = 0; k < z.filters; k++)
		assert_int_equal(error_total[k], host_error_total[k]);
	if (hold_always)
		assert_true(runs_in_batch.load() > 0);
}

/* While StarPU calibrates (STARPU_CALIBRATE=1, as DAHL's users do to build
 * its regression models), every task adds one sample to its codelet's
 * model, fused or not (StarPU 1.4's tests/perfmodels/valid_model checks the
 * same, and failed under fusing with every task held). */
struct starpu_perfmodel calibrated_model = regression_model("dahl_patterns_calibrated");
struct starpu_codelet calibrated_cl = codelet(add_into, 3, {STARPU_R, STARPU_R, STARPU_RW}, &calibrated_model);

unsigned samples_of(struct starpu_perfmodel *model)
{
	int worker = starpu_worker_get_by_type(STARPU_CPU_WORKER, 0);
	struct starpu_perfmodel_per_arch *per_arch =
		starpu_perfmodel_get_model_per_arch(model, starpu_worker_get_perf_archtype(worker, STARPU_NMAX_SCHED_CTXS), 0);
	return per_arch ? per_arch->regression.nsample : 0;
}

void dahl_regression_models_calibrate_under_fusion(void **)
{
	const long n = 96, length = 4;
	std::vector<long> ones(length, 1);
	std::vector<std::vector<long>> outputs(n, std::vector<long>(length, 0));
	starpu_data_handle_t ones_handle = register_vector(ones);
	std::vector<starpu_data_handle_t> handles(n);
	for (long i = 0; i < n; i++)
		handles[i] = register_vector(outputs[i]);
	/* One task first: it loads the model, whose samples are then counted. */
	assert_int_equal(starpu_task_insert(&calibrated_cl, STARPU_R, ones_handle, STARPU_R, ones_handle, STARPU_RW, handles[0], 0), 0);
	starpu_task_wait_for_all();
	const unsigned before = samples_of(&calibrated_model);
	for (long i = 1; i < n; i++)
		assert_int_equal(starpu_task_insert(&calibrated_cl, STARPU_R, ones_handle, STARPU_R, ones_handle, STARPU_RW, handles[i], 0), 0);
	starpu_task_wait_for_all();
	assert_int_equal(samples_of(&calibrated_model), before + n - 1);
	for (starpu_data_handle_t handle : handles)
		starpu_data_unregister(handle);
	starpu_data_unregister(ones_handle);
	/* Over model-aware bases (dmda, dmdas...) a model being calibrated can
	 * predict a task long enough to run unfused by design (controller.h):
	 * what matters is that fused tasks were among those counted. */
	if (hold_always)
		assert_true(runs_in_batch.load() > 0);
}

} // namespace

int main(int argc, char **argv)
{
	if (argc != 2 && argc != 3) {
		std::fprintf(stderr, "usage: %s BASE[-when-busy][.dahl] [SKIP_PATTERN]\n", argv[0]);
		return 99;
	}
	if (argc == 3)
		cmocka_set_skip_filter(argv[2]);
	const TestedPolicy tested = tested_policy_from_file(argv[1], ".dahl");
	configure_tested_policy(tested);
	hold_always = tested.hold_always;
	setenv("STARPU_FUSING_MAX_BATCH", "16", 1);
	/* With every task held, a member preempted in a one-member batch must
	 * not make its codelet look too long to fuse (as in test_fusion). */
	setenv("STARPU_FUSING_MAX_TASK", "100s", 1);
	/* The regression models' files go to a directory of this run. */
	char home[] = "/tmp/test_dahl_patterns-XXXXXX";
	if (!mkdtemp(home))
		return 99;
	setenv("STARPU_HOME", home, 1);

#define DAHL_TEST(name) cmocka_unit_test_prestate_setup_teardown(name, start_starpu, stop_starpu, (void *)#name)
	const struct CMUnitTest tests[] = {
		DAHL_TEST(dahl_codelet_modes_changed_after_submission),
		DAHL_TEST(dahl_training_loop),
		cmocka_unit_test_prestate_setup_teardown(dahl_regression_models_calibrate_under_fusion, start_starpu_calibrating_models,
							 stop_starpu, (void *)"dahl_regression_models_calibrate_under_fusion"),
	};
	std::string group = "DAHL's patterns, fusing over " + tested.base + (tested.hold_always ? " (hold always)" : " (hold when busy)");
	int failures = cmocka_run_group_tests_name(group.c_str(), tests, nullptr, nullptr);
	std::error_code ignored;
	std::filesystem::remove_all(home, ignored);
	return failures;
}
