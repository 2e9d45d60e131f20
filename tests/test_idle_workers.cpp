/* Idle workers wake for every way StarPU hands them a task
 * (sched/idle_workers.h; doc/design.md, section 3).
 *
 * Each test starts StarPU with two CPU workers under fusing, and repeats one
 * path kRounds times: it waits until both workers rest (the library's
 * statistics say so; the program's thread spins), then gives a worker a
 * task that way, and waits for it.  It asserts the task's result and, from
 * the statistics, that no rest ended by its safety net while a task was
 * known to be waiting (a missed wake-up; with the safety net the program
 * would only have been slow) and that wake-ups did end rests.  Where
 * StarPU's drivers sleep by themselves (a build with blocking drivers) or
 * STARPU_FUSING_IDLE_WORKERS=poll, no worker rests through the policy: the
 * tests then check results only.
 *
 * Usage: test_idle_workers BASE[.idle] */
#include "cmocka.hpp"
#include "policy_test.hpp"
#include "starpu_fusing.h"

#include <starpu.h>

#include <sched.h>
#include <semaphore.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

const unsigned kWorkers = 2;
std::string tested_base; /* from the test file's name */
const long kRounds = 20;

void increment(void **buffers, void *)
{
	long *value = reinterpret_cast<long *>(STARPU_VARIABLE_GET_PTR(buffers[0]));
	(*value)++;
}

struct starpu_codelet one_buffer_codelet(void (*function)(void **, void *), enum starpu_data_access_mode mode, const char *name)
{
	struct starpu_codelet cl;
	starpu_codelet_init(&cl);
	cl.cpu_funcs[0] = function;
	cl.nbuffers = 1;
	cl.modes[0] = mode;
	cl.name = name;
	return cl;
}
struct starpu_codelet increment_cl = one_buffer_codelet(increment, STARPU_RW, "increment");

/* Fills a vector with the index its cl_arg points to (its handle's place
 * in the test's list: the value the test reads back). */
std::vector<starpu_data_handle_t> *filled_vectors = nullptr;
void fill(void **buffers, void *arg)
{
	long *values = reinterpret_cast<long *>(STARPU_VECTOR_GET_PTR(buffers[0]));
	const long index = static_cast<starpu_data_handle_t *>(arg) - filled_vectors->data();
	for (unsigned i = 0; i < STARPU_VECTOR_GET_NX(buffers[0]); i++)
		values[i] = index;
}
struct starpu_codelet fill_cl = one_buffer_codelet(fill, STARPU_W, "fill");

struct starpu_fusing_idle_statistics idle_statistics()
{
	struct starpu_fusing_idle_statistics statistics = {};
	statistics.size = sizeof(statistics);
	const int ret = starpu_fusing_get_idle_statistics(&statistics);
	if (ret == -ENOENT)
		statistics = {}; /* no worker rests through the policy */
	else
		assert_int_equal(ret, 0);
	return statistics;
}

/* Workers rest through the policy in this run. */
bool workers_rest()
{
	struct starpu_fusing_idle_statistics statistics = {};
	statistics.size = sizeof(statistics);
	return starpu_fusing_get_idle_statistics(&statistics) == 0 && !statistics.drivers_sleep;
}

/* StarPU with two workers and one counter. */
struct Session {
	long value = 0;
	starpu_data_handle_t handle = nullptr;

	explicit Session(const char *test)
	{
		watchdog_arm(test, 120);
		struct starpu_conf conf;
		starpu_conf_init(&conf);
		conf.sched_policy = starpu_fusing_policy();
		assert_int_equal(starpu_init(&conf), 0);
		assert_int_equal(starpu_cpu_worker_get_count(), kWorkers);
		starpu_variable_data_register(&handle, STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(&value), sizeof(value));
	}

	/* Until `resting` workers rest at once.  A worker polls for about a
	 * wake-up's cost before it rests, and its safety net ends a rest
	 * every 500 us: this returns within a few such periods.  Before the
	 * first rest the statistics cannot tell whether StarPU's drivers
	 * sleep by themselves, so the wait also ends once they say so. */
	void wait_until_workers_rest(unsigned resting = kWorkers) const
	{
		for (;;) {
			struct starpu_fusing_idle_statistics statistics = {};
			statistics.size = sizeof(statistics);
			if (starpu_fusing_get_idle_statistics(&statistics) != 0 || statistics.drivers_sleep ||
			    statistics.resting_now >= resting)
				return;
			sched_yield();
		}
	}

	struct starpu_task *increment_task() const
	{
		struct starpu_task *task = starpu_task_create();
		task->cl = &increment_cl;
		task->handles[0] = handle;
		return task;
	}

	/* Checks the counter and the wake-ups (that some rest ended by one,
	 * unless woken_expected is false), and stops StarPU. */
	void finish(long expected, bool woken_expected = true)
	{
		starpu_task_wait_for_all();
		const struct starpu_fusing_idle_statistics statistics = idle_statistics();
		const bool rested = workers_rest();
		starpu_data_unregister(handle);
		starpu_shutdown();
		std::printf("value %ld; rests %llu, ended by a wake-up %llu, by the safety net %llu, stalled %llu\n", value,
			    statistics.rests, statistics.woken, statistics.safety_net, statistics.stalled);
		assert_int_equal(value, expected);
		assert_int_equal(statistics.stalled, 0);
		if (rested && woken_expected)
			assert_true(statistics.woken > 0);
		watchdog_disarm();
	}
};

/* A task pushed through the policy (deferred first under
 * STARPU_FUSING_MODE=both: the window's flush pushes it). */
void idle_worker_wakes_for_a_pushed_task(void **)
{
	Session session("idle_worker_wakes_for_a_pushed_task");
	for (long round = 0; round < kRounds; round++) {
		session.wait_until_workers_rest();
		assert_int_equal(starpu_task_submit(session.increment_task()), 0);
		starpu_task_wait_for_all();
	}
	session.finish(kRounds);
}

/* execute_on_a_specific_worker: StarPU queues it on the worker without
 * the policy's push_task (_starpu_push_local_task). */
void idle_worker_wakes_for_a_task_pinned_to_it(void **)
{
	Session session("idle_worker_wakes_for_a_task_pinned_to_it");
	for (long round = 0; round < kRounds; round++) {
		session.wait_until_workers_rest();
		struct starpu_task *task = session.increment_task();
		task->execute_on_a_specific_worker = 1;
		task->workerid = static_cast<unsigned>(round % kWorkers);
		assert_int_equal(starpu_task_submit(task), 0);
		starpu_task_wait_for_all();
	}
	session.finish(kRounds);
}

/* workerids: the task may run on one worker only.  StarPU 1.3.10's
 * modular-heft aborts on such a task by itself (STARPU_SCHED=modular-heft
 * alone: "cpu_func or cpu_funcs has to be defined", driver_cpu.c), so that
 * base skips it. */
void idle_worker_wakes_for_a_task_limited_to_it(void **)
{
	if (tested_base.compare(0, 8, "modular-") == 0)
		skip();
	Session session("idle_worker_wakes_for_a_task_limited_to_it");
	uint32_t only[kWorkers] = {};
	for (long round = 0; round < kRounds; round++) {
		session.wait_until_workers_rest();
		struct starpu_task *task = session.increment_task();
		only[0] = 1u << (round % kWorkers);
		task->workerids = only;
		task->workerids_len = 1;
		assert_int_equal(starpu_task_submit(task), 0);
		starpu_task_wait_for_all();
	}
	session.finish(kRounds);
}

/* A task submitted to a second context of fusing holding one worker. */
void idle_worker_wakes_for_a_task_of_another_context(void **)
{
	Session session("idle_worker_wakes_for_a_task_of_another_context");
	int second_worker[] = {1};
	const unsigned context = starpu_sched_ctx_create(second_worker, 1, "second", STARPU_SCHED_CTX_POLICY_STRUCT,
							 starpu_fusing_policy(), 0);
	for (long round = 0; round < kRounds; round++) {
		session.wait_until_workers_rest();
		assert_int_equal(starpu_task_submit_to_ctx(session.increment_task(), context), 0);
		starpu_task_wait_for_all_in_ctx(context);
	}
	starpu_sched_ctx_delete(context);
	session.finish(kRounds);
}

/* A worker also in a context of another policy (eager) keeps polling:
 * that policy's pushes would not wake it.  The other worker rests, but the
 * polling one may take every task of the first context: no wake-up is
 * required. */
void idle_worker_of_a_context_of_another_policy_polls(void **)
{
	Session session("idle_worker_of_a_context_of_another_policy_polls");
	int second_worker[] = {1};
	const unsigned context = starpu_sched_ctx_create(second_worker, 1, "eager", STARPU_SCHED_CTX_POLICY_NAME, "eager", 0);
	for (long round = 0; round < kRounds; round++) {
		session.wait_until_workers_rest(1);
		assert_int_equal(starpu_task_submit_to_ctx(session.increment_task(), context), 0);
		starpu_task_wait_for_all_in_ctx(context);
		session.wait_until_workers_rest(1);
		assert_int_equal(starpu_task_submit(session.increment_task()), 0);
		starpu_task_wait_for_all();
	}
	starpu_sched_ctx_delete(context);
	session.finish(2 * kRounds, false);
}

/* A task waiting for a tag the program notifies. */
void idle_worker_wakes_for_a_task_a_tag_releases(void **)
{
	Session session("idle_worker_wakes_for_a_task_a_tag_releases");
	for (long round = 0; round < kRounds; round++) {
		const starpu_tag_t tag = 1000 + round;
		struct starpu_task *task = session.increment_task();
		task->use_tag = 1;
		task->tag_id = tag + kRounds;
		starpu_tag_declare_deps(task->tag_id, 1, tag);
		assert_int_equal(starpu_task_submit(task), 0);
		session.wait_until_workers_rest();
		starpu_tag_notify_from_apps(tag);
		assert_int_equal(starpu_tag_wait(task->tag_id), 0);
	}
	session.finish(kRounds);
}

/* A task waiting for data the program holds, until it releases it. */
void idle_worker_wakes_for_a_task_released_data_readies(void **)
{
	Session session("idle_worker_wakes_for_a_task_released_data_readies");
	for (long round = 0; round < kRounds; round++) {
		assert_int_equal(starpu_data_acquire(session.handle, STARPU_RW), 0);
		assert_int_equal(starpu_task_submit(session.increment_task()), 0);
		session.wait_until_workers_rest();
		starpu_data_release(session.handle);
		starpu_task_wait_for_all();
	}
	session.finish(kRounds);
}

/* Tasks submitted while StarPU is paused, run once it resumes. */
void idle_worker_wakes_after_a_pause(void **)
{
	Session session("idle_worker_wakes_after_a_pause");
	for (long round = 0; round < kRounds; round++) {
		session.wait_until_workers_rest();
		starpu_pause();
		assert_int_equal(starpu_task_submit(session.increment_task()), 0);
		starpu_resume();
		starpu_task_wait_for_all();
	}
	session.finish(kRounds);
}

/* A task one worker's callback submits, pinned to the other worker. */
void pin_to_other_worker(struct starpu_task *task, unsigned from)
{
	task->execute_on_a_specific_worker = 1;
	task->workerid = (from + 1) % kWorkers;
}
Session *chained_session = nullptr;
long chain_left = 0;
void submit_next_link(void *arg)
{
	const unsigned from = static_cast<unsigned>(reinterpret_cast<uintptr_t>(arg));
	if (--chain_left <= 0)
		return;
	struct starpu_task *task = chained_session->increment_task();
	pin_to_other_worker(task, from);
	task->callback_func = submit_next_link;
	task->callback_arg = reinterpret_cast<void *>(static_cast<uintptr_t>(task->workerid));
	assert_int_equal(starpu_task_submit(task), 0);
}
void idle_worker_wakes_for_a_task_a_callback_submits(void **)
{
	Session session("idle_worker_wakes_for_a_task_a_callback_submits");
	chained_session = &session;
	chain_left = 200;
	session.wait_until_workers_rest();
	struct starpu_task *task = session.increment_task();
	pin_to_other_worker(task, 1);
	task->callback_func = submit_next_link;
	task->callback_arg = reinterpret_cast<void *>(uintptr_t{0});
	assert_int_equal(starpu_task_submit(task), 0);
	starpu_task_wait_for_all();
	session.finish(200);
}

/* starpu_shutdown while both workers rest: StarPU wakes them to stop
 * (the watchdog turns a hang into a failure).  The statistics are read
 * before that wake-up. */
void idle_workers_stop_at_shutdown(void **)
{
	Session session("idle_workers_stop_at_shutdown");
	assert_int_equal(starpu_task_submit(session.increment_task()), 0);
	starpu_task_wait_for_all();
	session.wait_until_workers_rest();
	session.finish(1, false);
}

/* Contexts created and deleted while workers idle: StarPU changes a
 * worker's list of contexts from the program's thread, the worker being
 * kept out of scheduling operations only (notify_workers_about_changing_
 * ctx_pending, core/sched_ctx.c), so an idle worker deciding whether to
 * rest must not read that list outside one (two_cpu_contexts, a StarPU
 * example, crashed in 2% of its runs doing so).  Each round also gives the
 * new context's worker a task, which it must run. */
void idle_workers_survive_contexts_changing_under_them(void **)
{
	Session session("idle_workers_survive_contexts_changing_under_them");
	const long rounds = 400;
	for (long round = 0; round < rounds; round++) {
		int both[] = {0, 1};
		const unsigned context =
			round % 2 == 0
				? starpu_sched_ctx_create(both, 2, "eager", STARPU_SCHED_CTX_POLICY_NAME, "eager", 0)
				: starpu_sched_ctx_create(both, 2, "fusing", STARPU_SCHED_CTX_POLICY_STRUCT, starpu_fusing_policy(), 0);
		assert_int_equal(starpu_task_submit_to_ctx(session.increment_task(), context), 0);
		starpu_task_wait_for_all_in_ctx(context);
		starpu_sched_ctx_delete(context);
	}
	session.finish(rounds, false);
}

/* ------------------------------------------ where workers must not rest
 * Out-of-core data: with a disk node, requests between it and the main
 * memory progress only while a worker of the main memory polls, and posting
 * one wakes nobody in a non-blocking build: no worker rests (an
 * acquisition waited for the 500 us safety net).  Vectors written by tasks,
 * far more than the 1 MB StarPU may keep in memory, then read back by
 * acquisitions whose callbacks the program waits for. */
sem_t acquired;
void note_acquired(void *)
{
	sem_post(&acquired);
}

void idle_workers_poll_where_data_moves_between_memory_nodes(void **)
{
	char swap[] = "/tmp/test_idle_workers.XXXXXX";
	assert_non_null(mkdtemp(swap));
	setenv("STARPU_LIMIT_CPU_MEM", "1", 1);
	setenv("STARPU_DISK_SWAP", swap, 1);
	setenv("STARPU_DISK_SWAP_BACKEND", "unistd", 1);
	setenv("STARPU_DISK_SWAP_SIZE", "200", 1);
	Session session("idle_workers_poll_where_data_moves_between_memory_nodes");
	unsetenv("STARPU_LIMIT_CPU_MEM");
	unsetenv("STARPU_DISK_SWAP");
	unsetenv("STARPU_DISK_SWAP_BACKEND");
	unsetenv("STARPU_DISK_SWAP_SIZE");
	assert_true(starpu_memory_nodes_get_count() > 1);
	constexpr unsigned kVectors = 32, kElements = 64 * 1024 / sizeof(long);
	std::vector<starpu_data_handle_t> vectors(kVectors);
	filled_vectors = &vectors;
	for (starpu_data_handle_t &vector : vectors) {
		starpu_vector_data_register(&vector, -1, 0, kElements, sizeof(long));
		struct starpu_task *task = starpu_task_create();
		task->cl = &fill_cl;
		task->handles[0] = vector;
		task->cl_arg = &vector;
		assert_int_equal(starpu_task_submit(task), 0);
	}
	starpu_task_wait_for_all();
	/* A worker may have rested once during starpu_init, before StarPU
	 * added the disk node (_starpu_swap_init runs after the drivers
	 * start); every decision since the tasks above saw two nodes. */
	const unsigned long long rests_before = idle_statistics().rests;
	sem_init(&acquired, 0, 0);
	for (unsigned round = 0; round < 4 * kVectors; round++) {
		starpu_data_handle_t vector = vectors[round % kVectors];
		assert_int_equal(starpu_data_acquire_cb(vector, STARPU_R, note_acquired, nullptr), 0);
		sem_wait(&acquired);
		const long *values = reinterpret_cast<const long *>(starpu_vector_get_local_ptr(vector));
		assert_int_equal(values[kElements - 1], long(round % kVectors));
		starpu_data_release(vector);
	}
	sem_destroy(&acquired);
	const struct starpu_fusing_idle_statistics statistics = idle_statistics();
	for (starpu_data_handle_t vector : vectors)
		starpu_data_unregister(vector);
	std::printf("%u memory nodes: rests %llu\n", starpu_memory_nodes_get_count(), statistics.rests - rests_before);
	assert_int_equal(statistics.rests, rests_before);
	session.finish(0, false);
	rmdir(swap);
}

/* A program's progression hook that returns 0 asks StarPU's drivers not to
 * block (a program polling an external event from it); no worker rests
 * while it is registered. */
std::atomic<long> hook_calls{0};
unsigned poll_an_event(void *)
{
	hook_calls++;
	return 0;
}

void idle_workers_honour_a_hook_that_forbids_blocking(void **)
{
	Session session("idle_workers_honour_a_hook_that_forbids_blocking");
	session.wait_until_workers_rest();
	const int hook = starpu_progression_hook_register(poll_an_event, nullptr);
	assert_true(hook >= 0);
	/* Until both workers went through the hook at least once more, a rest
	 * begun before it may still run out. */
	for (long round = 0; round < kRounds; round++) {
		assert_int_equal(starpu_task_submit(session.increment_task()), 0);
		starpu_task_wait_for_all();
	}
	const unsigned long long rests_before = idle_statistics().rests;
	const long calls_before = hook_calls;
	while (hook_calls < calls_before + 1000)
		sched_yield();
	const unsigned long long rests_after = idle_statistics().rests;
	starpu_progression_hook_deregister(hook);
	std::printf("hook called %ld times; rests while it was registered %llu\n", hook_calls.load(), rests_after - rests_before);
	assert_int_equal(rests_after, rests_before);
	session.finish(kRounds, false);
}

/* Work the submission window holds while the workers rest: a group worth
 * running now (5 tasks predicted at 20 us each) goes to StarPU at once, as
 * a polling worker's empty pop would have asked; with
 * STARPU_FUSING_MAX_DELAY at 10 s, nothing else would hand it over before a
 * rest ended by its safety net (counted as stalled).  The program waits for
 * the tasks' callbacks, not for StarPU (whose waits flush the window). */
double twenty_us(struct starpu_task *, unsigned)
{
	return 20.0;
}
struct starpu_perfmodel twenty_us_model = [] {
	struct starpu_perfmodel model = {};
	model.type = STARPU_COMMON;
	model.cost_function = twenty_us;
	model.symbol = "twenty_us";
	return model;
}();
struct starpu_codelet predicted_increment_cl = [] {
	struct starpu_codelet cl = one_buffer_codelet(increment, STARPU_RW, "predicted_increment");
	cl.model = &twenty_us_model;
	return cl;
}();
sem_t task_done;
void note_task_done(void *)
{
	sem_post(&task_done);
}

void idle_worker_wakes_for_work_the_window_holds(void **)
{
	setenv("STARPU_FUSING_MAX_DELAY", "10s", 1);
	Session session("idle_worker_wakes_for_work_the_window_holds");
	unsetenv("STARPU_FUSING_MAX_DELAY");
	constexpr unsigned kTasks = 5;
	std::vector<long> values(kTasks, 0);
	std::vector<starpu_data_handle_t> handles(kTasks);
	for (unsigned t = 0; t < kTasks; t++)
		starpu_variable_data_register(&handles[t], STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(&values[t]), sizeof(long));
	sem_init(&task_done, 0, 0);
	for (long round = 0; round < kRounds; round++) {
		session.wait_until_workers_rest();
		for (unsigned t = 0; t < kTasks; t++) {
			struct starpu_task *task = starpu_task_create();
			task->cl = &predicted_increment_cl;
			task->handles[0] = handles[t];
			task->callback_func = note_task_done;
			assert_int_equal(starpu_task_submit(task), 0);
		}
		for (unsigned t = 0; t < kTasks; t++)
			sem_wait(&task_done);
	}
	sem_destroy(&task_done);
	for (unsigned t = 0; t < kTasks; t++) {
		starpu_data_unregister(handles[t]);
		assert_int_equal(values[t], kRounds);
	}
	session.finish(0);
}

} // namespace

int main(int argc, char **argv)
{
	if (argc != 2) {
		std::fprintf(stderr, "usage: %s BASE[.idle]\n", argv[0]);
		return 99;
	}
	const TestedPolicy tested = tested_policy_from_file(argv[1], ".idle");
	tested_base = tested.base;
	configure_tested_policy(tested);
	setenv("STARPU_NCPU", "2", 1);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(idle_worker_wakes_for_a_pushed_task),
		cmocka_unit_test(idle_worker_wakes_for_a_task_pinned_to_it),
		cmocka_unit_test(idle_worker_wakes_for_a_task_limited_to_it),
		cmocka_unit_test(idle_worker_wakes_for_a_task_of_another_context),
		cmocka_unit_test(idle_worker_of_a_context_of_another_policy_polls),
		cmocka_unit_test(idle_worker_wakes_for_a_task_a_tag_releases),
		cmocka_unit_test(idle_worker_wakes_for_a_task_released_data_readies),
		cmocka_unit_test(idle_worker_wakes_after_a_pause),
		cmocka_unit_test(idle_worker_wakes_for_a_task_a_callback_submits),
		cmocka_unit_test(idle_workers_stop_at_shutdown),
		cmocka_unit_test(idle_workers_survive_contexts_changing_under_them),
		cmocka_unit_test(idle_workers_poll_where_data_moves_between_memory_nodes),
		cmocka_unit_test(idle_workers_honour_a_hook_that_forbids_blocking),
		cmocka_unit_test(idle_worker_wakes_for_work_the_window_holds),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
