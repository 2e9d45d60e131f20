/* StarPU-level tests of fusion: real StarPU, the `fusing` policy from the
 * public API, small DAGs whose results and order are checked, and a check
 * that the tasks really ran inside batches (starpu_fusing_current_batch_size).
 *
 * Usage: test_fusion BASE[.fusion]   (make check passes tests/fusion/BASE.fusion)
 *   BASE is the base policy; a name ending in "-when-busy" keeps the default
 *   STARPU_FUSING_HOLD, where fusion depends on timing, so only results are
 *   checked; otherwise every fusable task must have run in a batch.
 * A watchdog ends a test that hangs (the end-of-DAG deadlock this suite
 * exists to catch) with a message naming it, instead of hanging make check. */
#include "starpu_fusing.h"
#include "tests/cmocka.hpp"
#include "tests/policy_test.hpp"
#include "tests/test_codelets.hpp"

#include <starpu.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

bool every_task_held = true;   /* STARPU_FUSING_HOLD=always */
bool starpu_running = false;

/* Written by codelets in worker threads. */
std::atomic<long> runs{0};
std::atomic<long> runs_in_batch{0};
std::atomic<long> largest_batch{0};
std::atomic<long> violations{0};
std::atomic<long> sequence{0};

void note_run()
{
	runs++;
	long size = starpu_fusing_current_batch_size();
	if (size > 0)
		runs_in_batch++;
	long seen = largest_batch.load();
	while (size > seen && !largest_batch.compare_exchange_weak(seen, size))
		;
	/* Inside a batch, starpu_task_get_current() must be the member. */
	struct starpu_task *current = starpu_task_get_current();
	if (!current || current->cl_arg == nullptr || *static_cast<int *>(current->cl_arg) != 0x5eed)
		violations++;
}

/* cl_arg layout shared by every test codelet: a magic first, so that
 * note_run() can tell the member from a proxy. */
struct Arg {
	int magic = 0x5eed;
	long expected_before = -1; /* value the variable must hold before the task, or -1 */
	long index = 0;
	long *order_slot = nullptr; /* where to write this task's position in time */
};

void increment(void *buffers[], void *cl_arg)
{
	note_run();
	Arg *arg = static_cast<Arg *>(cl_arg);
	long *value = reinterpret_cast<long *>(STARPU_VARIABLE_GET_PTR(buffers[0]));
	if (arg->expected_before >= 0 && *value != arg->expected_before)
		violations++;
	if (arg->order_slot)
		*arg->order_slot = sequence++;
	(*value)++;
}

struct starpu_codelet increment_codelet = make_test_codelet(increment, "increment", {STARPU_RW});

/* out = in + index */
void add_index(void *buffers[], void *cl_arg)
{
	note_run();
	Arg *arg = static_cast<Arg *>(cl_arg);
	long in = *reinterpret_cast<long *>(STARPU_VARIABLE_GET_PTR(buffers[0]));
	*reinterpret_cast<long *>(STARPU_VARIABLE_GET_PTR(buffers[1])) = in + arg->index;
}

struct starpu_codelet add_index_codelet = make_test_codelet(add_index, "add_index", {STARPU_R, STARPU_W});

/* Adds 1 to every element of a vector piece. */
void increment_vector(void *buffers[], void *cl_arg)
{
	note_run();
	(void)cl_arg;
	long *elements = reinterpret_cast<long *>(STARPU_VECTOR_GET_PTR(buffers[0]));
	unsigned n = STARPU_VECTOR_GET_NX(buffers[0]);
	for (unsigned i = 0; i < n; i++)
		elements[i]++;
}

struct starpu_codelet increment_vector_codelet = make_test_codelet(increment_vector, "increment_vector", {STARPU_RW});

/* Reads one variable, writes nothing: a batch of these can start while
 * StarPU is still on its way through the members' NOWHERE path. */
void read_only(void *buffers[], void *cl_arg)
{
	note_run();
	Arg *arg = static_cast<Arg *>(cl_arg);
	if (*reinterpret_cast<long *>(STARPU_VARIABLE_GET_PTR(buffers[0])) != arg->expected_before)
		violations++;
}

struct starpu_codelet read_only_codelet = make_test_codelet(read_only, "read_only", {STARPU_R});

/* A codelet that must never be fused (COMMUTE accumulation). */
void accumulate(void *buffers[], void *cl_arg)
{
	(void)cl_arg;
	runs++;
	if (starpu_fusing_current_batch_size() != 0)
		violations++;
	(*reinterpret_cast<long *>(STARPU_VARIABLE_GET_PTR(buffers[0])))++;
}

struct starpu_codelet accumulate_codelet =
	make_test_codelet(accumulate, "accumulate", {static_cast<enum starpu_data_access_mode>(STARPU_RW | STARPU_COMMUTE)});

int start_starpu(void **state)
{
	watchdog_arm(static_cast<const char *>(*state ? *state : ""), 120);
	struct starpu_conf conf;
	starpu_conf_init(&conf);
	conf.sched_policy = starpu_fusing_policy();
	if (!conf.sched_policy)
		return -1;
	int ret = starpu_init(&conf);
	if (ret != 0)
		return -1;
	starpu_running = true;
	runs = runs_in_batch = largest_batch = violations = sequence = 0;
	return 0;
}

int stop_starpu(void **)
{
	if (starpu_running)
		starpu_shutdown();
	starpu_running = false;
	watchdog_disarm();
	return 0;
}

starpu_data_handle_t register_long(long *value)
{
	starpu_data_handle_t handle;
	starpu_variable_data_register(&handle, STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(value), sizeof(*value));
	return handle;
}

struct starpu_task *make_task(struct starpu_codelet *cl, Arg *arg, std::vector<starpu_data_handle_t> handles)
{
	struct starpu_task *task = starpu_task_create();
	task->cl = cl;
	task->cl_arg = arg;
	for (std::size_t i = 0; i < handles.size(); i++)
		task->handles[i] = handles[i];
	return task;
}

/* n variables at 0, each to be incremented by one task of its own. */
struct IndependentIncrements {
	std::vector<long> values;
	std::vector<starpu_data_handle_t> handles;
	std::vector<Arg> args;

	explicit IndependentIncrements(long n) : values(n, 0), handles(n), args(n)
	{
		for (long i = 0; i < n; i++)
			handles[i] = register_long(&values[i]);
	}
	struct starpu_task *task(long i) { return make_task(&increment_codelet, &args[i], {handles[i]}); }
	/* After the tasks: unregisters each variable, which must hold 1. */
	void expect_each_incremented_once()
	{
		for (std::size_t i = 0; i < values.size(); i++) {
			starpu_data_unregister(handles[i]);
			assert_int_equal(values[i], 1);
		}
	}
};

void submit(struct starpu_task *task)
{
	assert_int_equal(starpu_task_submit(task), 0);
}

/* With STARPU_FUSING_HOLD=always, every fusable task runs in a batch. */
void expect_all_fused(long fusable_tasks)
{
	assert_int_equal(violations.load(), 0);
	if (every_task_held)
		assert_int_equal(runs_in_batch.load(), fusable_tasks);
}

/* ------------------------------------------------------------------ tests */

void fusion_chain_keeps_order(void **)
{
	const long n = 300;
	long value = 0;
	starpu_data_handle_t handle = register_long(&value);
	std::vector<Arg> args(n);
	for (long k = 0; k < n; k++) {
		args[k].expected_before = k;
		submit(make_task(&increment_codelet, &args[k], {handle}));
	}
	starpu_task_wait_for_all();
	starpu_data_unregister(handle);
	assert_int_equal(value, n);
	assert_int_equal(runs.load(), n);
	expect_all_fused(n);
}

void fusion_independent_tasks_form_batches(void **)
{
	const long n = 600;
	IndependentIncrements increments(n);
	for (long i = 0; i < n; i++)
		submit(increments.task(i));
	starpu_task_wait_for_all();
	increments.expect_each_incremented_once();
	assert_int_equal(runs.load(), n);
	expect_all_fused(n);
	if (every_task_held)
		assert_true(largest_batch.load() > 1);
}

void fusion_fan_out_fan_in_with_shared_reads(void **)
{
	const long fan = 100;
	long source = 0, sink = 0;
	std::vector<long> outputs(fan, -1);
	starpu_data_handle_t source_handle = register_long(&source), sink_handle = register_long(&sink);
	std::vector<starpu_data_handle_t> out(fan);
	Arg first;
	first.expected_before = 0;
	submit(make_task(&increment_codelet, &first, {source_handle})); /* source = 1 */
	std::vector<Arg> args(fan);
	for (long i = 0; i < fan; i++) {
		out[i] = register_long(&outputs[i]);
		args[i].index = i;
		submit(make_task(&add_index_codelet, &args[i], {source_handle, out[i]})); /* out_i = 1 + i */
	}
	/* Fan-in: the sink depends on every output through implicit deps. */
	std::vector<Arg> sink_args(fan);
	for (long i = 0; i < fan; i++) {
		sink_args[i].index = 0;
		submit(make_task(&add_index_codelet, &sink_args[i], {out[i], sink_handle}));
	}
	starpu_task_wait_for_all();
	for (long i = 0; i < fan; i++) {
		starpu_data_unregister(out[i]);
		assert_int_equal(outputs[i], 1 + i);
	}
	starpu_data_unregister(source_handle);
	starpu_data_unregister(sink_handle);
	assert_int_equal(source, 1);
	assert_int_equal(sink, fan); /* the last writer of sink copied out_{fan-1} = fan */
	assert_int_equal(runs.load(), 1 + 2 * fan);
	expect_all_fused(1 + 2 * fan);
}

void fusion_partitioned_vector(void **)
{
	const unsigned n = 4096, pieces = 64, rounds = 3;
	std::vector<long> elements(n, 0);
	starpu_data_handle_t vector;
	starpu_vector_data_register(&vector, STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(elements.data()), n, sizeof(long));
	struct starpu_data_filter filter = {};
	filter.filter_func = starpu_vector_filter_block;
	filter.nchildren = pieces;
	starpu_data_partition(vector, &filter);
	Arg arg;
	for (unsigned r = 0; r < rounds; r++)
		for (unsigned p = 0; p < pieces; p++)
			submit(make_task(&increment_vector_codelet, &arg, {starpu_data_get_sub_data(vector, 1, p)}));
	starpu_task_wait_for_all();
	starpu_data_unpartition(vector, STARPU_MAIN_RAM);
	starpu_data_unregister(vector);
	for (unsigned i = 0; i < n; i++)
		assert_int_equal(elements[i], rounds);
	expect_all_fused(long(rounds) * pieces);
}

void fusion_asynchronous_partition_plans(void **)
{
	const unsigned n = 1024, pieces = 16, rounds = 4;
	std::vector<long> elements(n, 0);
	starpu_data_handle_t vector, children[pieces];
	starpu_vector_data_register(&vector, STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(elements.data()), n, sizeof(long));
	struct starpu_data_filter filter = {};
	filter.filter_func = starpu_vector_filter_block;
	filter.nchildren = pieces;
	starpu_data_partition_plan(vector, &filter, children);
	Arg arg;
	/* Alternate between the pieces and the whole vector, without waiting:
	 * StarPU submits the (un)partitioning, which must stay ordered with the
	 * held tasks. */
	for (unsigned r = 0; r < rounds; r++) {
		for (unsigned p = 0; p < pieces; p++)
			submit(make_task(&increment_vector_codelet, &arg, {children[p]}));
		submit(make_task(&increment_vector_codelet, &arg, {vector}));
	}
	starpu_task_wait_for_all();
	starpu_data_partition_clean(vector, pieces, children);
	starpu_data_unregister(vector);
	for (unsigned i = 0; i < n; i++)
		assert_int_equal(elements[i], 2 * rounds);
	expect_all_fused(long(rounds) * (pieces + 1));
}

/* Tasks on distinct handles, ordered only by tags (or explicit deps). */
void check_order(const std::vector<long> &order)
{
	for (std::size_t i = 1; i < order.size(); i++)
		assert_true(order[i - 1] < order[i]);
}

void fusion_tags_order_tasks(void **)
{
	const long n = 100;
	std::vector<long> values(n, 0), order(n, -1);
	std::vector<starpu_data_handle_t> handles(n);
	std::vector<Arg> args(n);
	/* Submitted in reverse, so that only the tags give the order. */
	for (long i = n - 1; i >= 0; i--) {
		handles[i] = register_long(&values[i]);
		args[i].order_slot = &order[i];
		struct starpu_task *task = make_task(&increment_codelet, &args[i], {handles[i]});
		task->use_tag = 1;
		task->tag_id = 1000 + i;
		if (i > 0)
			starpu_tag_declare_deps(1000 + i, 1, (starpu_tag_t)(1000 + i - 1));
		submit(task);
	}
	starpu_task_wait_for_all();
	for (long i = 0; i < n; i++)
		starpu_data_unregister(handles[i]);
	check_order(order);
	expect_all_fused(n);
}

void fusion_explicit_dependencies_order_tasks(void **)
{
	const long n = 100;
	std::vector<long> values(n, 0), order(n, -1);
	std::vector<starpu_data_handle_t> handles(n);
	std::vector<Arg> args(n);
	std::vector<struct starpu_task *> tasks(n);
	for (long i = 0; i < n; i++) {
		handles[i] = register_long(&values[i]);
		args[i].order_slot = &order[i];
		tasks[i] = make_task(&increment_codelet, &args[i], {handles[i]});
		if (i > 0)
			starpu_task_declare_deps_array(tasks[i], 1, &tasks[i - 1]);
	}
	for (long i = n - 1; i >= 0; i--)
		submit(tasks[i]);
	starpu_task_wait_for_all();
	for (long i = 0; i < n; i++)
		starpu_data_unregister(handles[i]);
	check_order(order);
	expect_all_fused(n);
}

struct CallbackRecord {
	long *value;
	std::atomic<int> calls{0};
	std::atomic<int> saw_value{-1};
};

void record_callback(void *arg)
{
	CallbackRecord *record = static_cast<CallbackRecord *>(arg);
	record->calls++;
	record->saw_value = static_cast<int>(*record->value);
}

void fusion_callbacks_run_once_after_the_body(void **)
{
	const long n = 200;
	std::vector<long> values(n, 0);
	std::vector<CallbackRecord> records(n);
	std::vector<starpu_data_handle_t> handles(n);
	std::vector<Arg> args(n);
	for (long i = 0; i < n; i++) {
		handles[i] = register_long(&values[i]);
		records[i].value = &values[i];
		struct starpu_task *task = make_task(&increment_codelet, &args[i], {handles[i]});
		task->callback_func = record_callback;
		task->callback_arg = &records[i];
		submit(task);
	}
	starpu_task_wait_for_all();
	for (long i = 0; i < n; i++) {
		starpu_data_unregister(handles[i]);
		assert_int_equal(records[i].calls.load(), 1);
		assert_int_equal(records[i].saw_value.load(), 1);
	}
	expect_all_fused(n);
}

/* What StarPU's per-task profiling shows a member's callback: when and
 * where the member itself ran (core/member_run.h). */
struct ProfiledRun {
	struct starpu_task *task = nullptr; /* alive until its callback returned */
	std::atomic<int> seen{0};
	double start_us = 0.0, end_us = 0.0;
	int worker = -1;
};

void record_profiled_run(void *arg)
{
	ProfiledRun *run = static_cast<ProfiledRun *>(arg);
	struct starpu_task *task = run->task;
	if (task->profiling_info) {
		run->start_us = starpu_timing_timespec_to_us(&task->profiling_info->start_time);
		run->end_us = starpu_timing_timespec_to_us(&task->profiling_info->end_time);
		run->worker = task->profiling_info->workerid;
	}
	run->seen++;
}

void fusion_members_show_their_runs_in_profiling(void **)
{
	starpu_profiling_status_set(STARPU_PROFILING_ENABLE);
	const long n = 100;
	long value = 0;
	starpu_data_handle_t handle = register_long(&value);
	std::vector<Arg> args(n);
	std::vector<ProfiledRun> profiled(n);
	const double before_us = starpu_timing_now();
	for (long k = 0; k < n; k++) {
		args[k].expected_before = k;
		struct starpu_task *task = make_task(&increment_codelet, &args[k], {handle});
		task->callback_func = record_profiled_run;
		task->callback_arg = &profiled[k];
		profiled[k].task = task;
		submit(task);
	}
	starpu_task_wait_for_all();
	starpu_profiling_status_set(STARPU_PROFILING_DISABLE);
	starpu_data_unregister(handle);
	assert_int_equal(value, n);
	const int workers = static_cast<int>(starpu_worker_get_count());
	for (long k = 0; k < n; k++) {
		assert_int_equal(profiled[k].seen.load(), 1);
		assert_true(profiled[k].start_us >= before_us);
		assert_true(profiled[k].end_us >= profiled[k].start_us);
		assert_true(profiled[k].worker >= 0 && profiled[k].worker < workers);
		/* A chain: each task ran after the previous one ended. */
		if (k > 0)
			assert_true(profiled[k].start_us >= profiled[k - 1].end_us);
	}
	expect_all_fused(n);
}

void fusion_task_wait_on_a_member(void **)
{
	const long n = 50;
	std::vector<long> values(n, 0);
	std::vector<starpu_data_handle_t> handles(n);
	std::vector<Arg> args(n);
	std::vector<struct starpu_task *> tasks(n);
	for (long i = 0; i < n; i++) {
		handles[i] = register_long(&values[i]);
		tasks[i] = make_task(&increment_codelet, &args[i], {handles[i]});
		tasks[i]->detach = 0;
		tasks[i]->destroy = 0;
		submit(tasks[i]);
	}
	for (long i = n - 1; i >= 0; i--) {
		assert_int_equal(starpu_task_wait(tasks[i]), 0);
		/* The program gets its task back as it submitted it. */
		assert_int_equal(tasks[i]->where, STARPU_CPU);
		assert_ptr_equal(tasks[i]->callback_func, nullptr);
		starpu_task_destroy(tasks[i]);
	}
	for (long i = 0; i < n; i++) {
		starpu_data_unregister(handles[i]);
		assert_int_equal(values[i], 1);
	}
	expect_all_fused(n);
}

void fusion_read_only_members(void **)
{
	const long n = 500;
	long value = 41;
	starpu_data_handle_t handle = register_long(&value);
	Arg writer;
	writer.expected_before = 41;
	submit(make_task(&increment_codelet, &writer, {handle})); /* value = 42 */
	std::vector<Arg> args(n);
	std::vector<CallbackRecord> records(n);
	std::vector<struct starpu_task *> tasks(n);
	for (long i = 0; i < n; i++) {
		args[i].expected_before = 42;
		records[i].value = &value;
		tasks[i] = make_task(&read_only_codelet, &args[i], {handle});
		tasks[i]->callback_func = record_callback;
		tasks[i]->callback_arg = &records[i];
		tasks[i]->detach = 0;
		tasks[i]->destroy = 0;
		submit(tasks[i]);
	}
	Arg last;
	last.expected_before = 42; /* after every reader */
	submit(make_task(&increment_codelet, &last, {handle}));
	for (long i = 0; i < n; i++) {
		assert_int_equal(starpu_task_wait(tasks[i]), 0);
		assert_int_equal(tasks[i]->where, STARPU_CPU);
		assert_ptr_equal(tasks[i]->callback_func, record_callback);
		assert_int_equal(records[i].calls.load(), 1);
		starpu_task_destroy(tasks[i]);
	}
	starpu_task_wait_for_all();
	starpu_data_unregister(handle);
	assert_int_equal(value, 43);
	expect_all_fused(n + 2);
}

/* Tasks with as many distinct priorities as tasks still share batches
 * (priorities are bucketed: family.h), and every task runs once.  Submitted
 * from the highest priority down, none outranks ready work: every one may
 * be held (a task of higher priority than work queued, held or running is
 * not: core/waiting_priorities.h, and fusion_rising_priorities_run_once). */
void fusion_distinct_priorities_share_batches(void **)
{
	const long n = 2000;
	IndependentIncrements increments(n);
	for (long i = 0; i < n; i++) {
		struct starpu_task *task = increments.task(i);
		task->priority = static_cast<int>(n / 2) - static_cast<int>(i);
		submit(task);
	}
	starpu_task_wait_for_all();
	increments.expect_each_incremented_once();
	expect_all_fused(n);
	if (every_task_held)
		assert_true(largest_batch.load() >= 2);
}

/* Each task outranks those submitted before it, which may still wait: it
 * runs unheld, so as not to wait behind them, and once. */
void fusion_rising_priorities_run_once(void **)
{
	const long n = 2000;
	IndependentIncrements increments(n);
	for (long i = 0; i < n; i++) {
		struct starpu_task *task = increments.task(i);
		task->priority = static_cast<int>(i) - static_cast<int>(n / 2);
		submit(task);
	}
	starpu_task_wait_for_all();
	increments.expect_each_incremented_once();
	assert_int_equal(violations.load(), 0);
}

void fusion_mixed_with_unfusable_tasks(void **)
{
	const long n = 300;
	long accumulator = 0;
	std::vector<long> values(n, 0);
	std::vector<starpu_data_handle_t> handles(n);
	std::vector<Arg> args(n);
	starpu_data_handle_t accumulator_handle = register_long(&accumulator);
	long fusable = 0;
	for (long i = 0; i < n; i++) {
		handles[i] = register_long(&values[i]);
		if (i % 3 == 0) {
			submit(make_task(&accumulate_codelet, &args[i], {accumulator_handle}));
		} else {
			struct starpu_task *task = make_task(&increment_codelet, &args[i], {handles[i]});
			if (i % 3 == 1) {
				task->execute_on_a_specific_worker = 1; /* pinned: runs unfused */
				task->workerid = 0;
			} else {
				fusable++;
			}
			submit(task);
		}
	}
	starpu_task_wait_for_all();
	starpu_data_unregister(accumulator_handle);
	for (long i = 0; i < n; i++) {
		starpu_data_unregister(handles[i]);
		assert_int_equal(values[i], i % 3 == 0 ? 0 : 1);
	}
	assert_int_equal(accumulator, (n + 2) / 3);
	assert_int_equal(violations.load(), 0);
	if (every_task_held)
		assert_int_equal(runs_in_batch.load(), fusable);
}

/* The end of a DAG: a handful of tasks, fewer than a batch, then nothing
 * more is submitted and every worker sleeps.  Each way of waiting must
 * return. */
void fusion_end_of_dag_wait_for_all(void **)
{
	long values[3] = {0, 0, 0};
	starpu_data_handle_t handles[3];
	Arg args[3];
	for (int i = 0; i < 3; i++) {
		handles[i] = register_long(&values[i]);
		submit(make_task(&increment_codelet, &args[i], {handles[i]}));
	}
	starpu_task_wait_for_all();
	for (int i = 0; i < 3; i++) {
		starpu_data_unregister(handles[i]);
		assert_int_equal(values[i], 1);
	}
	expect_all_fused(3);
}

void fusion_end_of_dag_data_acquire(void **)
{
	long value = 0;
	starpu_data_handle_t handle = register_long(&value);
	Arg args[5];
	for (int i = 0; i < 5; i++)
		submit(make_task(&increment_codelet, &args[i], {handle}));
	assert_int_equal(starpu_data_acquire(handle, STARPU_R), 0);
	assert_int_equal(value, 5);
	starpu_data_release(handle);
	starpu_data_unregister(handle);
	expect_all_fused(5);
}

void fusion_end_of_dag_data_unregister(void **)
{
	long value = 0;
	starpu_data_handle_t handle = register_long(&value);
	Arg args[4];
	for (int i = 0; i < 4; i++)
		submit(make_task(&increment_codelet, &args[i], {handle}));
	starpu_data_unregister(handle);
	assert_int_equal(value, 4);
	expect_all_fused(4);
}

void fusion_end_of_dag_shutdown(void **)
{
	long value = 0;
	starpu_data_handle_t handle = register_long(&value);
	Arg args[6];
	for (int i = 0; i < 6; i++)
		submit(make_task(&increment_codelet, &args[i], {handle}));
	starpu_data_unregister_submit(handle);
	starpu_shutdown(); /* with tasks still held: must run them, then stop */
	starpu_running = false;
	assert_int_equal(value, 6);
	expect_all_fused(6);
}

/* Held tasks terminate in the worker that ran their batch, never inside the
 * program's starpu_task_submit: a program may hold its own lock around
 * starpu_task_submit and take it in a callback, as StarPU allows under every
 * policy.  Readers of one handle are ready as soon as they are submitted, so
 * the submitting thread is where StarPU's NOWHERE path runs for them.  The
 * same task structures are then submitted again without starpu_task_init:
 * StarPU's end-dependency counter must be back to 0 after each termination
 * (had it ended at UINT_MAX, a resubmitted task would never terminate and
 * the watchdog would fire). */
thread_local bool inside_submit = false;
std::atomic<long> callbacks_inside_submit{0};
std::atomic<long> callbacks_run{0};

void callback_checking_thread(void *)
{
	callbacks_run++;
	if (inside_submit)
		callbacks_inside_submit++;
}

void fusion_callbacks_never_run_inside_submit(void **)
{
	const long n = 256, rounds = 80;
	long value = 0;
	starpu_data_handle_t handle = register_long(&value);
	std::vector<Arg> args(n);
	std::vector<struct starpu_task *> tasks(n);
	for (long i = 0; i < n; i++) {
		args[i].expected_before = 0;
		tasks[i] = make_task(&read_only_codelet, &args[i], {handle});
		tasks[i]->callback_func = callback_checking_thread;
		tasks[i]->detach = 0;
		tasks[i]->destroy = 0;
	}
	callbacks_inside_submit = callbacks_run = 0;
	for (long round = 0; round < rounds; round++) {
		for (long i = 0; i < n; i++) {
			inside_submit = true;
			int ret = starpu_task_submit(tasks[i]);
			inside_submit = false;
			assert_int_equal(ret, 0);
		}
		for (long i = 0; i < n; i++) {
			assert_int_equal(starpu_task_wait(tasks[i]), 0);
			assert_int_equal(tasks[i]->nb_termination_call_required, 0);
		}
	}
	for (long i = 0; i < n; i++)
		starpu_task_destroy(tasks[i]);
	starpu_data_unregister(handle);
	assert_int_equal(callbacks_run.load(), n * rounds);
	assert_int_equal(callbacks_inside_submit.load(), 0);
	expect_all_fused(n * rounds);
}

/* A context without CPU workers holds nothing: no worker of it could run a
 * batch (with GPUs only, the batch would never run; this machine has none,
 * so the test uses a context created empty, which gets its workers later). */
void fusion_context_without_cpu_workers_holds_nothing(void **)
{
	unsigned ctx = starpu_sched_ctx_create(nullptr, 0, "no workers yet", STARPU_SCHED_CTX_POLICY_STRUCT,
					       starpu_fusing_policy(), 0);
	const long n = 64;
	IndependentIncrements increments(n);
	for (long i = 0; i < n; i++)
		assert_int_equal(starpu_task_submit_to_ctx(increments.task(i), ctx), 0);
	int workers[STARPU_NMAXWORKERS];
	int nworkers = starpu_worker_get_ids_by_type(STARPU_CPU_WORKER, workers, STARPU_NMAXWORKERS);
	starpu_sched_ctx_add_workers(workers, static_cast<unsigned>(nworkers), ctx);
	starpu_task_wait_for_all_in_ctx(ctx);
	increments.expect_each_incremented_once();
	starpu_sched_ctx_delete(ctx);
	assert_int_equal(violations.load(), 0);
	assert_int_equal(runs_in_batch.load(), 0);
}

} // namespace

int main(int argc, char **argv)
{
	if (argc != 2) {
		std::fprintf(stderr, "usage: %s BASE[.fusion]\n", argv[0]);
		return 99;
	}
	const TestedPolicy tested = tested_policy_from_file(argv[1], ".fusion");
	every_task_held = tested.hold_always;
	configure_tested_policy(tested);
	setenv("STARPU_FUSING_MAX_BATCH", "16", 1);
	if (every_task_held) {
		/* expect_all_fused: a one-member batch of a chain whose worker was
		 * preempted (2 cores, 4 threads) can look longer than the default
		 * STARPU_FUSING_MAX_TASK and leave tasks unfused by design. */
		setenv("STARPU_FUSING_MAX_TASK", "100s", 1);
	}

#define FUSION_TEST(name) cmocka_unit_test_prestate_setup_teardown(name, start_starpu, stop_starpu, (void *)#name)
	const struct CMUnitTest tests[] = {
		FUSION_TEST(fusion_chain_keeps_order),
		FUSION_TEST(fusion_independent_tasks_form_batches),
		FUSION_TEST(fusion_fan_out_fan_in_with_shared_reads),
		FUSION_TEST(fusion_partitioned_vector),
		FUSION_TEST(fusion_asynchronous_partition_plans),
		FUSION_TEST(fusion_tags_order_tasks),
		FUSION_TEST(fusion_explicit_dependencies_order_tasks),
		FUSION_TEST(fusion_callbacks_run_once_after_the_body),
		FUSION_TEST(fusion_members_show_their_runs_in_profiling),
		FUSION_TEST(fusion_task_wait_on_a_member),
		FUSION_TEST(fusion_read_only_members),
		FUSION_TEST(fusion_distinct_priorities_share_batches),
		FUSION_TEST(fusion_rising_priorities_run_once),
		FUSION_TEST(fusion_mixed_with_unfusable_tasks),
		FUSION_TEST(fusion_end_of_dag_wait_for_all),
		FUSION_TEST(fusion_end_of_dag_data_acquire),
		FUSION_TEST(fusion_end_of_dag_data_unregister),
		FUSION_TEST(fusion_end_of_dag_shutdown),
		FUSION_TEST(fusion_callbacks_never_run_inside_submit),
		FUSION_TEST(fusion_context_without_cpu_workers_holds_nothing),
	};
	std::string group = "fusing over " + tested.base + (every_task_held ? " (hold always)" : " (hold when busy)");
	return cmocka_run_group_tests_name(group.c_str(), tests, nullptr, nullptr);
}
