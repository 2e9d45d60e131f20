/* The flush barrier of submission-time fusion (doc/design.md, section 12):
 * one test per family of StarPU functions that can observe deferred work.
 *
 * Every test starts the same way, on one CPU worker: a blocker task occupies
 * the worker, then kIncrements tasks incrementing one vector are submitted
 * and deferred once it runs (the window holds them: the worker never finds
 * itself idle and STARPU_FUSING_MAX_DELAY is 10 s).  Their prologue sets `handed`, which
 * StarPU runs when it gets their merged task; the blocker returns once it is
 * set.  The test asserts that nothing was handed yet, calls the function,
 * and asserts that the window was flushed before StarPU's function ran:
 * `handed` is set when the call returns, and what the function observes
 * includes the increments.  A function that did not flush fails: a blocking
 * call returns without them, or (shutdown) the library reports deferred
 * tasks left behind.
 *
 * Usage: test_flush_barrier BASE[.barrier] */
#include "cmocka.hpp"
#include "policy_test.hpp"
#include "starpu_fusing.h"

#include <starpu.h>

#include <sched.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace {

const long kIncrements = 8;

std::atomic<bool> handed{false};
std::atomic<bool> blocker_started{false};

void note_handed(void *)
{
	handed = true;
}

void block_until_handed(void **, void *)
{
	blocker_started = true;
	while (!handed)
		sched_yield();
}

void increment(void **buffers, void *)
{
	long *values = reinterpret_cast<long *>(STARPU_VECTOR_GET_PTR(buffers[0]));
	values[0]++;
}

/* The dependency and its dependent (barrier_dependency_on_a_deferred_task). */
std::atomic<bool> dependency_ran{false};
std::atomic<bool> dependent_saw_dependency{false};
void increment_as_dependency(void **buffers, void *arg)
{
	increment(buffers, arg);
	dependency_ran = true;
}
void check_dependency_ran(void **, void *)
{
	dependent_saw_dependency = dependency_ran.load();
}

struct starpu_codelet make_codelet(void (*function)(void **, void *), unsigned nbuffers, const char *name)
{
	struct starpu_codelet cl;
	starpu_codelet_init(&cl);
	cl.cpu_funcs[0] = function;
	cl.nbuffers = static_cast<int>(nbuffers);
	cl.modes[0] = STARPU_RW;
	cl.name = name;
	return cl;
}

struct starpu_codelet blocker_cl = make_codelet(block_until_handed, 0, "blocker");
struct starpu_codelet increment_cl = make_codelet(increment, 1, "increment");
struct starpu_codelet dependency_cl = make_codelet(increment_as_dependency, 1, "dependency");
struct starpu_codelet dependent_cl = make_codelet(check_dependency_ran, 1, "dependent");

/* What each test shares. */
struct Run {
	long values[2] = {0, 0};
	starpu_data_handle_t handle = nullptr;
	struct starpu_task *blocker = nullptr;
};
Run run;

struct starpu_task *increment_task()
{
	struct starpu_task *task = starpu_task_create();
	task->cl = &increment_cl;
	task->handles[0] = run.handle;
	task->prologue_callback_func = note_handed;
	return task;
}

/* Starts StarPU, occupies its worker and defers kIncrements tasks. */
void start(const char *test)
{
	watchdog_arm(test, 60);
	handed = blocker_started = false;
	dependency_ran = dependent_saw_dependency = false;
	run = Run();
	struct starpu_conf conf;
	starpu_conf_init(&conf);
	conf.sched_policy = starpu_fusing_policy();
	assert_int_equal(starpu_init(&conf), 0);
	starpu_vector_data_register(&run.handle, STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(run.values), 2, sizeof(long));
	run.blocker = starpu_task_create();
	run.blocker->cl = &blocker_cl;
	run.blocker->detach = 0; /* waited for: never deferred */
	assert_int_equal(starpu_task_submit(run.blocker), 0);
	/* Once it runs, the worker cannot be found idle (which flushes) by a
	 * pop that started before it. */
	while (!blocker_started)
		sched_yield();
	for (long i = 0; i < kIncrements; i++)
		assert_int_equal(starpu_task_submit(increment_task()), 0);
	/* The premise: the window holds them. */
	assert_false(handed.load());
}

void finish(bool registered = true)
{
	assert_int_equal(starpu_task_wait(run.blocker), 0);
	if (registered)
		starpu_data_unregister(run.handle);
	starpu_shutdown();
	assert_int_equal(run.values[0], kIncrements);
	watchdog_disarm();
}

/* ------------------------------------------------------------------ tests */

void barrier_data_acquire(void **)
{
	start("barrier_data_acquire");
	assert_int_equal(starpu_data_acquire(run.handle, STARPU_R), 0);
	assert_true(handed.load());
	assert_int_equal(run.values[0], kIncrements);
	starpu_data_release(run.handle);
	finish();
}

void barrier_data_unregister(void **)
{
	start("barrier_data_unregister");
	starpu_data_unregister(run.handle);
	assert_true(handed.load());
	assert_int_equal(run.values[0], kIncrements);
	finish(false);
}

void barrier_data_invalidate(void **)
{
	start("barrier_data_invalidate");
	starpu_data_invalidate_submit(run.handle);
	assert_true(handed.load());
	assert_int_equal(starpu_task_wait(run.blocker), 0);
	starpu_data_unregister_no_coherency(run.handle);
	starpu_shutdown();
	watchdog_disarm();
}

void barrier_data_partition(void **)
{
	start("barrier_data_partition");
	struct starpu_data_filter halves = {};
	halves.filter_func = starpu_vector_filter_block;
	halves.nchildren = 2;
	starpu_data_partition(run.handle, &halves);
	assert_true(handed.load());
	starpu_data_unpartition(run.handle, STARPU_MAIN_RAM);
	finish();
}

void barrier_data_partition_plan(void **)
{
	start("barrier_data_partition_plan");
	struct starpu_data_filter halves = {};
	halves.filter_func = starpu_vector_filter_block;
	halves.nchildren = 2;
	starpu_data_handle_t children[2];
	starpu_data_partition_plan(run.handle, &halves, children);
	assert_true(handed.load());
	starpu_data_partition_clean(run.handle, 2, children);
	finish();
}

void barrier_data_prefetch(void **)
{
	start("barrier_data_prefetch");
	assert_int_equal(starpu_data_prefetch_on_node(run.handle, STARPU_MAIN_RAM, 1), 0);
	assert_true(handed.load());
	finish();
}

void barrier_sequential_consistency_change(void **)
{
	start("barrier_sequential_consistency_change");
	starpu_data_set_sequential_consistency_flag(run.handle, 0);
	assert_true(handed.load());
	starpu_data_set_sequential_consistency_flag(run.handle, 1);
	finish();
}

void barrier_task_wait_for_all(void **)
{
	start("barrier_task_wait_for_all");
	starpu_task_wait_for_all();
	assert_true(handed.load());
	assert_int_equal(run.values[0], kIncrements);
	finish();
}

void barrier_tags(void **)
{
	start("barrier_tags");
	const starpu_tag_t tag = 0x5eed;
	starpu_tag_notify_from_apps(tag);
	assert_true(handed.load());
	starpu_tag_remove(tag);
	finish();
}

/* A dependency declared on a task the window deferred, which StarPU never
 * sees terminate: the declaration waits for it and leaves it out. */
void barrier_dependency_on_a_deferred_task(void **)
{
	start("barrier_dependency_on_a_deferred_task");
	struct starpu_task *kept = increment_task();
	kept->cl = &dependency_cl;
	kept->destroy = 0; /* the program keeps it, so it may name it later */
	assert_int_equal(starpu_task_submit(kept), 0);
	struct starpu_task *dependent = starpu_task_create();
	dependent->cl = &dependent_cl;
	dependent->handles[0] = run.handle;
	starpu_task_declare_deps_array(dependent, 1, &kept);
	assert_true(handed.load());
	assert_int_equal(starpu_task_submit(dependent), 0);
	starpu_task_wait_for_all();
	assert_true(dependent_saw_dependency.load());
	starpu_task_destroy(kept);
	assert_int_equal(starpu_task_wait(run.blocker), 0);
	starpu_data_unregister(run.handle);
	starpu_shutdown();
	assert_int_equal(run.values[0], kIncrements + 1);
	watchdog_disarm();
}

void barrier_contexts(void **)
{
	start("barrier_contexts");
	unsigned context = starpu_sched_ctx_get_context();
	if (context == STARPU_NMAX_SCHED_CTXS)
		context = 0;
	starpu_sched_ctx_set_context(&context);
	assert_true(handed.load());
	finish();
}

void barrier_pause(void **)
{
	start("barrier_pause");
	starpu_pause();
	assert_true(handed.load());
	starpu_resume();
	finish();
}

void barrier_shutdown(void **)
{
	start("barrier_shutdown");
	struct starpu_task *blocker = run.blocker;
	/* No wait, no unregistration: shutdown itself must flush. */
	starpu_shutdown();
	assert_true(handed.load());
	assert_int_equal(run.values[0], kIncrements);
	starpu_task_destroy(blocker);
	watchdog_disarm();
}

/* A task that is not deferred goes to StarPU after the deferred tasks it
 * conflicts with, and only those: one on other data leaves the window as
 * it is; one on the increments' vector hands them over first. */
void barrier_task_not_deferred_follows_what_it_conflicts_with(void **)
{
	start("barrier_task_not_deferred_follows_what_it_conflicts_with");
	long other_values[1] = {0};
	starpu_data_handle_t other;
	starpu_vector_data_register(&other, STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(other_values), 1, sizeof(long));
	struct starpu_task *elsewhere = starpu_task_create();
	elsewhere->cl = &increment_cl;
	elsewhere->handles[0] = other;
	elsewhere->detach = 0; /* waited for: never deferred */
	assert_int_equal(starpu_task_submit(elsewhere), 0);
	assert_false(handed.load());
	struct starpu_task *same_data = starpu_task_create();
	same_data->cl = &increment_cl;
	same_data->handles[0] = run.handle;
	same_data->detach = 0;
	assert_int_equal(starpu_task_submit(same_data), 0);
	assert_true(handed.load());
	assert_int_equal(starpu_task_wait(elsewhere), 0);
	assert_int_equal(starpu_task_wait(same_data), 0);
	starpu_data_unregister(other);
	assert_int_equal(other_values[0], 1);
	assert_int_equal(starpu_task_wait(run.blocker), 0);
	starpu_data_unregister(run.handle);
	starpu_shutdown();
	assert_int_equal(run.values[0], kIncrements + 1);
	watchdog_disarm();
}

/* StarPU calls some of its exported functions itself, from inside its own
 * code: at the end of a reduction, in the worker releasing the data and
 * holding the handle's lock, _starpu_data_end_reduction_mode_terminate
 * (datawizard/reduction.c, 1.3 and 1.4) calls
 * starpu_data_unregister_no_coherency, a barrier.  Flushing there is
 * StarPU's own call, not the program's: DAHL's basic_cnn hung when the
 * program's thread, flushing, waited in StarPU for that handle's lock and
 * the worker, flushing, waited for the window.  Here the worker reaches
 * that call while increments are deferred: they must stay deferred until
 * the program calls a barrier itself. */
std::atomic<bool> reduction_may_end{false};
std::atomic<bool> reducing_started{false};
std::atomic<bool> reader_ran{false};
std::atomic<bool> handed_before_the_reader{false};

void add_five_when_allowed(void **buffers, void *)
{
	reducing_started = true;
	while (!reduction_may_end)
		sched_yield();
	*reinterpret_cast<long *>(STARPU_VARIABLE_GET_PTR(buffers[0])) += 5;
}
void set_zero(void **buffers, void *)
{
	*reinterpret_cast<long *>(STARPU_VARIABLE_GET_PTR(buffers[0])) = 0;
}
void add_into(void **buffers, void *)
{
	*reinterpret_cast<long *>(STARPU_VARIABLE_GET_PTR(buffers[0])) += *reinterpret_cast<long *>(STARPU_VARIABLE_GET_PTR(buffers[1]));
}
void note_reader_ran(void *)
{
	handed_before_the_reader = handed.load();
	reader_ran = true;
}

void barrier_not_flushed_by_starpus_own_calls(void **)
{
	watchdog_arm("barrier_not_flushed_by_starpus_own_calls", 60);
	handed = reduction_may_end = reducing_started = reader_ran = handed_before_the_reader = false;
	run = Run();
	struct starpu_codelet reduce_cl = make_codelet(add_five_when_allowed, 1, "reduce");
	reduce_cl.modes[0] = STARPU_REDUX;
	struct starpu_codelet init_cl = make_codelet(set_zero, 1, "init");
	init_cl.modes[0] = STARPU_W;
	struct starpu_codelet redux_cl = make_codelet(add_into, 2, "redux");
	redux_cl.modes[1] = STARPU_R;
	struct starpu_codelet read_cl = make_codelet(nullptr, 1, "read");
	read_cl.where = STARPU_NOWHERE;
	read_cl.modes[0] = STARPU_R;
	struct starpu_conf conf;
	starpu_conf_init(&conf);
	conf.sched_policy = starpu_fusing_policy();
	assert_int_equal(starpu_init(&conf), 0);
	long reduced = 1;
	starpu_data_handle_t reduced_handle;
	starpu_variable_data_register(&reduced_handle, STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(&reduced), sizeof(long));
	starpu_data_set_reduction_methods(reduced_handle, &redux_cl, &init_cl);
	starpu_vector_data_register(&run.handle, STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(run.values), 2, sizeof(long));
	/* The reader, a task waited for, is not deferred: the reduction, if
	 * deferred, reaches StarPU before it. */
	assert_int_equal(starpu_task_insert(&reduce_cl, STARPU_REDUX, reduced_handle, 0), 0);
	struct starpu_task *reader = starpu_task_create();
	reader->cl = &read_cl;
	reader->handles[0] = reduced_handle;
	reader->detach = 0;
	reader->callback_func = note_reader_ran;
	assert_int_equal(starpu_task_submit(reader), 0);
	/* The worker is busy with the reduction, so it cannot be found idle
	 * (which flushes) while the increments are deferred. */
	while (!reducing_started)
		sched_yield();
	for (long i = 0; i < kIncrements; i++)
		assert_int_equal(starpu_task_submit(increment_task()), 0);
	assert_false(handed.load());
	reduction_may_end = true;
	/* No StarPU call meanwhile: the reader's callback says whether the
	 * increments reached StarPU before the reduction ended. */
	while (!reader_ran)
		sched_yield();
	assert_false(handed_before_the_reader.load());
	assert_int_equal(starpu_task_wait(reader), 0);
	starpu_data_unregister(reduced_handle);
	starpu_data_unregister(run.handle);
	starpu_shutdown();
	assert_int_equal(reduced, 1 + 5);
	assert_int_equal(run.values[0], kIncrements);
	watchdog_disarm();
}

} // namespace

int main(int argc, char **argv)
{
	if (argc != 2) {
		std::fprintf(stderr, "usage: %s BASE[.barrier]\n", argv[0]);
		return 99;
	}
	configure_tested_policy(tested_policy_from_file(argv[1], ".barrier"));
	setenv("STARPU_NCPU", "1", 1);
	setenv("STARPU_FUSING_MODE", "submission", 1);
	setenv("STARPU_FUSING_MAX_DELAY", "10s", 1);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(barrier_data_acquire),
		cmocka_unit_test(barrier_data_unregister),
		cmocka_unit_test(barrier_data_invalidate),
		cmocka_unit_test(barrier_data_partition),
		cmocka_unit_test(barrier_data_partition_plan),
		cmocka_unit_test(barrier_data_prefetch),
		cmocka_unit_test(barrier_sequential_consistency_change),
		cmocka_unit_test(barrier_task_wait_for_all),
		cmocka_unit_test(barrier_tags),
		cmocka_unit_test(barrier_dependency_on_a_deferred_task),
		cmocka_unit_test(barrier_contexts),
		cmocka_unit_test(barrier_pause),
		cmocka_unit_test(barrier_shutdown),
		cmocka_unit_test(barrier_task_not_deferred_follows_what_it_conflicts_with),
		cmocka_unit_test(barrier_not_flushed_by_starpus_own_calls),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
