/* Ensures the batched-implementation API (starpu_fusing.h) rejects misuse
 * clearly and, once registered, runs whole batches in one call instead of
 * the codelet's own function, with every task's buffers and arguments. */
#include "starpu_fusing.h"
#include "tests/cmocka.hpp"
#include "tests/test_codelets.hpp"

#include <starpu.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <vector>

namespace {

std::atomic<long> own_function_calls{0};
std::atomic<long> batched_calls{0};
std::atomic<long> batched_tasks{0};
std::atomic<long> wrong_arguments{0};
std::atomic<long> own_function_calls_in_batch{0};

/* out = in * factor, factor in cl_arg */
void scale_one(void *buffers[], void *cl_arg)
{
	own_function_calls++;
	if (starpu_fusing_current_batch_size() > 0)
		own_function_calls_in_batch++;
	long factor = *static_cast<long *>(cl_arg);
	*reinterpret_cast<long *>(STARPU_VARIABLE_GET_PTR(buffers[1])) = *reinterpret_cast<long *>(STARPU_VARIABLE_GET_PTR(buffers[0])) * factor;
}

void scale_batch(unsigned ntasks, void **task_buffers[], void *task_args[], void *batch_arg)
{
	if (batch_arg != &batched_calls)
		wrong_arguments++;
	batched_calls++;
	batched_tasks += ntasks;
	for (unsigned i = 0; i < ntasks; i++) {
		long factor = *static_cast<long *>(task_args[i]);
		*reinterpret_cast<long *>(STARPU_VARIABLE_GET_PTR(task_buffers[i][1])) =
			*reinterpret_cast<long *>(STARPU_VARIABLE_GET_PTR(task_buffers[i][0])) * factor;
	}
}

struct starpu_codelet scale_codelet = make_test_codelet(scale_one, "scale", {STARPU_R, STARPU_W});

/* The same computation, predicted at 2 ms a task: above the default
 * STARPU_FUSING_MAX_TASK (500 us), below the default target (100 ms). */
double two_milliseconds(struct starpu_task *, unsigned)
{
	return 2000.0;
}

struct starpu_perfmodel two_milliseconds_model = make_cost_model(two_milliseconds, "test_batched_two_milliseconds");

struct starpu_codelet long_scale_codelet =
	make_test_codelet(scale_one, "long_scale", {STARPU_R, STARPU_W}, &two_milliseconds_model);

int can_run_anywhere(unsigned, struct starpu_task *, unsigned)
{
	return 1;
}

struct starpu_fusing_batched_implementation implementation()
{
	struct starpu_fusing_batched_implementation impl = {};
	impl.size = sizeof(impl);
	impl.cpu_func = scale_batch;
	impl.batch_arg = &batched_calls;
	return impl;
}

void batched_rejects_misuse(void **)
{
	struct starpu_fusing_batched_implementation impl = implementation();
	assert_int_equal(starpu_fusing_register_batched(nullptr, &impl), -EINVAL);
	assert_int_equal(starpu_fusing_register_batched(&scale_codelet, nullptr), -EINVAL);
	struct starpu_fusing_batched_implementation no_function = impl;
	no_function.cpu_func = nullptr;
	assert_int_equal(starpu_fusing_register_batched(&scale_codelet, &no_function), -EINVAL);
	struct starpu_fusing_batched_implementation wrong_size = impl;
	wrong_size.size = 1;
	assert_int_equal(starpu_fusing_register_batched(&scale_codelet, &wrong_size), -EINVAL);
	struct starpu_codelet never_fused = scale_codelet;
	never_fused.can_execute = can_run_anywhere;
	assert_int_equal(starpu_fusing_register_batched(&never_fused, &impl), -EINVAL);
	assert_int_equal(starpu_fusing_register_batched(&scale_codelet, &impl), 0);
	assert_int_equal(starpu_fusing_register_batched(&scale_codelet, &impl), -EEXIST);
	assert_int_equal(starpu_fusing_unregister_batched(&scale_codelet), 0);
	assert_int_equal(starpu_fusing_unregister_batched(&scale_codelet), -ENOENT);
}

/* One StarPU session under fusing: n tasks out[i] = 3 * i, results checked. */
void run_scale_tasks(struct starpu_codelet *codelet, long n)
{
	struct starpu_conf conf;
	starpu_conf_init(&conf);
	conf.sched_policy = starpu_fusing_policy();
	assert_non_null(conf.sched_policy);
	assert_int_equal(starpu_init(&conf), 0);
	long input = 3;
	std::vector<long> outputs(n, 0);
	starpu_data_handle_t input_handle;
	starpu_variable_data_register(&input_handle, STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(&input), sizeof(long));
	std::vector<long> factors(n);
	std::vector<starpu_data_handle_t> output_handles(n);
	for (long i = 0; i < n; i++) {
		factors[i] = i;
		starpu_variable_data_register(&output_handles[i], STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(&outputs[i]), sizeof(long));
		struct starpu_task *task = starpu_task_create();
		task->cl = codelet;
		task->handles[0] = input_handle;
		task->handles[1] = output_handles[i];
		task->cl_arg = &factors[i];
		assert_int_equal(starpu_task_submit(task), 0);
	}
	starpu_task_wait_for_all();
	for (long i = 0; i < n; i++)
		starpu_data_unregister(output_handles[i]);
	starpu_data_unregister(input_handle);
	starpu_shutdown();
	for (long i = 0; i < n; i++)
		assert_int_equal(outputs[i], 3 * i);
}

void batched_runs_whole_batches_in_one_call(void **)
{
	struct starpu_fusing_batched_implementation impl = implementation();
	assert_int_equal(starpu_fusing_register_batched(&scale_codelet, &impl), 0);
	const long n = 300;
	run_scale_tasks(&scale_codelet, n);
	/* STARPU_FUSING_HOLD=always: every task in a batch, none alone. */
	assert_int_equal(own_function_calls.load(), 0);
	assert_int_equal(batched_tasks.load(), n);
	assert_true(batched_calls.load() < n);
	assert_int_equal(wrong_arguments.load(), 0);

	/* Unregistered: back to one call of the codelet's function per task. */
	assert_int_equal(starpu_fusing_unregister_batched(&scale_codelet), 0);
	run_scale_tasks(&scale_codelet, n);
	assert_int_equal(own_function_calls.load(), n);
	assert_int_equal(batched_tasks.load(), n);
}

/* Tasks predicted above STARPU_FUSING_MAX_TASK: run one by one unless a
 * batched implementation is registered (then it gains compute, not just
 * scheduling cost).  Unregistered, one in remeasure_period (16) of them is
 * still fused, so that a batch re-measures the family. */
void batched_kernels_fuse_tasks_too_long_for_generic_execution(void **)
{
	own_function_calls = own_function_calls_in_batch = batched_calls = batched_tasks = 0;
	const long n = 64;
	run_scale_tasks(&long_scale_codelet, n);
	assert_int_equal(own_function_calls.load(), n);
	assert_int_equal(own_function_calls_in_batch.load(), (n + 15) / 16);

	struct starpu_fusing_batched_implementation impl = implementation();
	assert_int_equal(starpu_fusing_register_batched(&long_scale_codelet, &impl), 0);
	run_scale_tasks(&long_scale_codelet, n);
	assert_int_equal(starpu_fusing_unregister_batched(&long_scale_codelet), 0);
	assert_int_equal(own_function_calls.load(), n); /* none more */
	assert_int_equal(batched_tasks.load(), n);
}

} // namespace

int main(void)
{
	unsetenv("STARPU_SCHED");
	setenv("STARPU_FUSING_HOLD", "always", 1);
	setenv("STARPU_FUSING_MAX_BATCH", "32", 1);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(batched_rejects_misuse),
		cmocka_unit_test(batched_runs_whole_batches_in_one_call),
		cmocka_unit_test(batched_kernels_fuse_tasks_too_long_for_generic_execution),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
