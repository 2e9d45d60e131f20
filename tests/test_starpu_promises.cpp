/* Promises StarPU makes about a task that a deferred or batched task must
 * keep too (doc/design.md, section 12: what deferral must not change).
 * Each test is a small program correct under StarPU's own policies, with
 * its assertion on StarPU's documented behaviour, never on time:
 *  - an end dependency added to a task after its submission holds back its
 *    termination (its callback, its dependents) until released, whether the
 *    task is still in the window or its group already went to StarPU;
 *  - starpu_task_wait_for_n_submitted(n) returns only once at most n of the
 *    tasks submitted are not terminated, and starpu_task_nsubmitted counts
 *    every task submitted and not terminated;
 *  - starpu_data_wont_use followed by starpu_data_invalidate_submit and a
 *    write leaves StarPU's data consistent;
 *  - a task of higher priority than the work queued or running starts
 *    before that work, as far as the base honours priorities: no more
 *    low-priority tasks start between its submission and its start than
 *    there are workers.
 *
 * Usage: test_starpu_promises [native-]BASE[-when-busy][.promises], with
 * STARPU_FUSING_MODE from the environment ("both" unless set). */
#include "program_api.hpp"
#include "test_codelets.hpp"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace program_api;

namespace {

std::string tested_base;

/* Every codelet here has a model predicting a few µs: the default hold
 * (when-busy) defers predicted tasks only. */
double a_few_us(struct starpu_task *, unsigned)
{
	return 5.0;
}
struct starpu_perfmodel few_us_model = make_cost_model(a_few_us, "promises_a_few_us");

double fifty_us(struct starpu_task *, unsigned)
{
	return 50.0;
}
struct starpu_perfmodel fifty_us_model = make_cost_model(fifty_us, "promises_fifty_us");

/* StarPU loads a codelet's model at its first task, which is never deferred
 * (window.cpp): one task of each codelet first. */
void load_models(std::initializer_list<struct starpu_codelet *> codelets)
{
	Variable scratch;
	scratch.reg(0);
	for (struct starpu_codelet *cl : codelets) {
		struct starpu_task *task = starpu_task_create();
		task->cl = cl;
		for (int b = 0; b < cl->nbuffers; b++)
			task->handles[b] = scratch.handle;
		assert_int_equal(starpu_task_submit(task), 0);
	}
	starpu_task_wait_for_all();
	starpu_data_unregister(scratch.handle);
}

/* ------------------------------------ 1. end dependencies added after submission */

std::atomic<bool> end_dependency_released{false};
std::atomic<bool> loading_models{false};
std::atomic<int> callback_saw_release{-1};
std::atomic<int> dependent_saw_release{-1};

void note_callback(void *)
{
	if (!loading_models)
		callback_saw_release = end_dependency_released ? 1 : 0;
}

void add_one_noting_release(void **buffers, void *)
{
	if (!loading_models)
		dependent_saw_release = end_dependency_released ? 1 : 0;
	value_of(buffers[0]) += 1;
}

void release_end_dependency_of(void *task)
{
	if (loading_models)
		return;
	end_dependency_released = true;
	starpu_task_end_dep_release(static_cast<struct starpu_task *>(task));
}

void add_one_modelled(void **buffers, void *)
{
	value_of(buffers[0]) += 1;
}

struct starpu_codelet add_one_modelled_cl = make_test_codelet(add_one_modelled, "promises_add_one", {STARPU_RW}, &few_us_model);
struct starpu_codelet dependent_cl = make_test_codelet(add_one_noting_release, "promises_dependent", {STARPU_RW}, &few_us_model);
/* A blocker on data: what follows on it cannot run before unblock(). */
struct starpu_codelet data_blocker_cl = make_test_codelet(block, "promises_data_blocker", {STARPU_RW});

/* Every blocker spins until the next unblock(). */
struct starpu_task *block_data(starpu_data_handle_t handle)
{
	blocker_running = false;
	struct starpu_task *blocker = starpu_task_create();
	blocker->cl = &data_blocker_cl;
	blocker->handles[0] = handle;
	blocker->detach = 0; /* waited for: never deferred */
	assert_int_equal(starpu_task_submit(blocker), 0);
	while (!blocker_running)
		sched_yield();
	return blocker;
}

struct starpu_task *task_on(struct starpu_codelet *cl, starpu_data_handle_t handle, void (*callback)(void *),
			    void *callback_arg)
{
	struct starpu_task *task = starpu_task_create();
	task->cl = cl;
	task->handles[0] = handle;
	task->callback_func = callback;
	task->callback_arg = callback_arg;
	return task;
}

/* T (a task on x, behind a blocker on x) gets an end dependency after its
 * submission, which a task on other data releases: S from its callback,
 * or R, named in a declaration, by ending.  D, on x, depends on T.  T's
 * callback and D come after the release.  Each scenario submits them in
 * its own order around the dependency, and lets the blocker go.  S, which
 * may be submitted before the dependency is added, runs only once it is
 * (StarPU would otherwise terminate T on S's release). */
std::atomic<bool> dependency_added{false};
void add_one_after_the_dependency(void **buffers, void *)
{
	while (!loading_models && !dependency_added)
		sched_yield();
	value_of(buffers[0]) += 1;
}
struct starpu_codelet after_the_dependency_cl =
	make_test_codelet(add_one_after_the_dependency, "promises_after_the_dependency", {STARPU_RW}, &few_us_model);

struct EndDependencyProgram {
	Variable x, y;
	struct starpu_task *blocker = nullptr;
	struct starpu_task *t = nullptr;
	struct starpu_task *s() { return task_on(&after_the_dependency_cl, y.handle, release_end_dependency_of, t); }
	struct starpu_task *d() { return task_on(&dependent_cl, x.handle, nullptr, nullptr); }
};

/* Notes the release while it runs: StarPU releases the task R ends before
 * R's callback. */
void note_release_while_running(void **buffers, void *)
{
	if (!loading_models)
		end_dependency_released = true;
	value_of(buffers[0]) += 1;
}
struct starpu_codelet releaser_cl = make_test_codelet(note_release_while_running, "promises_releaser", {STARPU_RW}, &few_us_model);

/* A codelet with a can_execute hook: nothing fuses its tasks. */
int can_always_execute(unsigned, struct starpu_task *, unsigned)
{
	return 1;
}
struct starpu_codelet unfusable_add_one_cl = [] {
	struct starpu_codelet cl = make_test_codelet(add_one_modelled, "promises_unfusable_add_one", {STARPU_RW}, &few_us_model);
	cl.can_execute = can_always_execute;
	return cl;
}();

void run_end_dependency_program(const char *test, void (*scenario)(EndDependencyProgram &))
{
	start(test, 2);
	loading_models = true;
	load_models({&add_one_modelled_cl, &dependent_cl, &releaser_cl, &after_the_dependency_cl, &unfusable_add_one_cl});
	loading_models = false;
	dependency_added = false;
	end_dependency_released = false;
	callback_saw_release = dependent_saw_release = -1;
	EndDependencyProgram program;
	program.x.reg(0);
	program.y.reg(0);
	release_blocker = false;
	program.blocker = block_data(program.x.handle);
	program.t = task_on(&add_one_modelled_cl, program.x.handle, note_callback, nullptr);
	scenario(program);
	starpu_task_wait_for_all();
	starpu_data_unregister(program.x.handle);
	starpu_data_unregister(program.y.handle);
	assert_int_equal(program.x.value, 2);
	assert_int_equal(program.y.value, 1);
	assert_int_equal(callback_saw_release.load(), 1);
	assert_int_equal(dependent_saw_release.load(), 1);
	finish();
}

/* Right after T's submission: T's group is still in the window. */
void promises_end_dependency_added_in_the_window(void **)
{
	run_end_dependency_program("promises_end_dependency_added_in_the_window", [](EndDependencyProgram &p) {
		assert_int_equal(starpu_task_submit(p.t), 0);
		starpu_task_end_dep_add(p.t, 1);
		dependency_added = true;
		assert_int_equal(starpu_task_submit(p.s()), 0);
		assert_int_equal(starpu_task_submit(p.d()), 0);
		unblock(p.blocker);
	});
}

/* After T's group, with S in it after T, went to StarPU. */
void promises_end_dependency_added_after_hand_over(void **)
{
	run_end_dependency_program("promises_end_dependency_added_after_hand_over", [](EndDependencyProgram &p) {
		assert_int_equal(starpu_task_submit(p.t), 0);
		assert_int_equal(starpu_task_submit(p.s()), 0);
		starpu_do_schedule(); /* a flush barrier: the window hands T's group to StarPU */
		starpu_task_end_dep_add(p.t, 1);
		dependency_added = true;
		assert_int_equal(starpu_task_submit(p.d()), 0);
		unblock(p.blocker);
	});
}

/* After S and D were submitted: StarPU runs S while T waits, so a merged
 * task holding S must not wait for T's release (it would wait forever: S
 * is what releases it). */
void promises_end_dependency_added_after_later_tasks(void **)
{
	run_end_dependency_program("promises_end_dependency_added_after_later_tasks", [](EndDependencyProgram &p) {
		assert_int_equal(starpu_task_submit(p.t), 0);
		assert_int_equal(starpu_task_submit(p.s()), 0);
		assert_int_equal(starpu_task_submit(p.d()), 0);
		starpu_task_end_dep_add(p.t, 1);
		dependency_added = true;
		unblock(p.blocker);
	});
}

/* T's codelet has a can_execute hook, so StarPU has T (nothing fuses such
 * a task), and nothing else makes the window wait for T; S and D come
 * after the dependency.  A merged task of S and D would wait for T, which
 * waits for S's callback. */
void promises_end_dependency_on_a_task_starpu_has(void **)
{
	run_end_dependency_program("promises_end_dependency_on_a_task_starpu_has", [](EndDependencyProgram &p) {
		p.t->cl = &unfusable_add_one_cl;
		assert_int_equal(starpu_task_submit(p.t), 0);
		starpu_task_end_dep_add(p.t, 1);
		dependency_added = true;
		assert_int_equal(starpu_task_submit(p.s()), 0);
		assert_int_equal(starpu_task_submit(p.d()), 0);
		unblock(p.blocker);
	});
}

/* Through a declaration after T's submission: T terminates after R, a
 * task on other data submitted last. */
void promises_end_dependency_declared_after_submission(void **)
{
	run_end_dependency_program("promises_end_dependency_declared_after_submission", [](EndDependencyProgram &p) {
		assert_int_equal(starpu_task_submit(p.t), 0);
		struct starpu_task *r = task_on(&releaser_cl, p.y.handle, nullptr, nullptr);
		starpu_task_declare_end_deps(p.t, 1, r);
		assert_int_equal(starpu_task_submit(p.d()), 0);
		unblock(p.blocker);
		assert_int_equal(starpu_task_submit(r), 0);
	});
}

/* ------------------------------------ 2. starpu_task_wait_for_n_submitted */

std::atomic<int> terminated{0};
void count_termination(void *)
{
	terminated++;
}

void spin_20us(void **, void *)
{
	spin_for_us(20.0);
}
struct starpu_codelet spin_20us_cl = make_test_codelet(spin_20us, "promises_spin_20us", {STARPU_RW}, &few_us_model);

void promises_wait_for_n_submitted_counts_every_task(void **)
{
	start("promises_wait_for_n_submitted_counts_every_task", 2);
	load_models({&spin_20us_cl});
	const int count = 200, left = 20;
	std::vector<Variable> data(count);
	for (Variable &v : data)
		v.reg(0);
	terminated = 0;
	for (Variable &v : data)
		assert_int_equal(submit_on(&spin_20us_cl, v.handle, count_termination), 0);
	/* A task's callback runs before StarPU stops counting it: read in this
	 * order, the two cover every task submitted. */
	const int not_terminated = starpu_task_nsubmitted();
	assert_true(not_terminated + terminated.load() >= count);
	assert_int_equal(starpu_task_wait_for_n_submitted(left), 0);
	const int terminated_at_return = terminated.load();
	starpu_task_wait_for_all();
	for (Variable &v : data)
		starpu_data_unregister(v.handle);
	assert_in_range(terminated_at_return, count - left, count);
	finish();
}

/* ------------------------------------ 3. wont_use, then invalidate_submit */

void set_to_seven(void **buffers, void *)
{
	value_of(buffers[0]) = 7;
}
void accumulate(void **buffers, void *)
{
	value_of(buffers[1]) += value_of(buffers[0]);
}
struct starpu_codelet add_one_few_us_cl = make_test_codelet(add_one_modelled, "promises_update", {STARPU_RW}, &few_us_model);
struct starpu_codelet set_cl = make_test_codelet(set_to_seven, "promises_set", {STARPU_W}, &few_us_model);
struct starpu_codelet accumulate_cl = make_test_codelet(accumulate, "promises_accumulate", {STARPU_R, STARPU_RW}, &few_us_model);

/* Each round: a task updates h, the program says it will not use h,
 * invalidates it, and tasks write it anew and read it into y.  StarPU
 * evicts or prefetches h for wont_use from a callback after the update,
 * while the invalidation waits for it. */
void wont_use_then_invalidate(const char *test, unsigned ncpus, bool blocked)
{
	start(test, ncpus);
	load_models({&add_one_few_us_cl, &set_cl, &accumulate_cl});
	const int rounds = 50;
	Variable h, y;
	h.reg(0);
	y.reg(0);
	for (int round = 0; round < rounds; round++) {
		/* The update cannot run before the round's calls are made: the
		 * window holds it meanwhile, as a program's slower thread would. */
		release_blocker = false;
		struct starpu_task *blocker = blocked ? block_data(h.handle) : nullptr;
		assert_int_equal(submit_on(&add_one_few_us_cl, h.handle), 0);
		starpu_data_wont_use(h.handle);
		starpu_data_invalidate_submit(h.handle);
		assert_int_equal(submit_on(&set_cl, h.handle), 0);
		struct starpu_task *acc = starpu_task_create();
		acc->cl = &accumulate_cl;
		acc->handles[0] = h.handle;
		acc->handles[1] = y.handle;
		assert_int_equal(starpu_task_submit(acc), 0);
		if (blocker)
			unblock(blocker);
	}
	starpu_task_wait_for_all();
	starpu_data_unregister(h.handle);
	starpu_data_unregister(y.handle);
	assert_int_equal(y.value, 7 * rounds);
	finish();
}

void promises_wont_use_then_invalidate(void **)
{
	wont_use_then_invalidate("promises_wont_use_then_invalidate", 1, true);
}

/* Without the blocker, StarPU 1.3 alone aborts the program now and then:
 * its wont_use callback prefetches through starpu_data_idle_prefetch_on_node,
 * which asserts that the handle is initialized, a flag that
 * starpu_data_invalidate_submit clears at the call (1 abort in 10 runs under
 * lws alone).  1.4 prefetches through an internal function without that
 * check. */
void promises_wont_use_then_invalidate_unblocked(void **)
{
	if (STARPU_MAJOR_VERSION == 1 && STARPU_MINOR_VERSION < 4)
		skip();
	wont_use_then_invalidate("promises_wont_use_then_invalidate_unblocked", 2, false);
}

/* ------------------------------------ 4. priorities */

std::atomic<int> low_started{0};
std::atomic<int> low_started_before_high{-1};
std::atomic<int> low_started_at_readiness{-1};
void run_low(void **, void *)
{
	low_started++;
	spin_for_us(50.0);
}
void run_high(void **, void *)
{
	low_started_before_high = low_started.load();
}
/* The gate's function: StarPU makes the high-priority task that follows it
 * on its data ready when it terminates, in the same thread. */
void open_the_gate(void **, void *)
{
	low_started_at_readiness = low_started.load();
}
struct starpu_codelet low_cl = make_test_codelet(run_low, "promises_low", {STARPU_RW}, &fifty_us_model);
struct starpu_codelet high_cl = make_test_codelet(run_high, "promises_high", {STARPU_RW}, &few_us_model);
struct starpu_codelet gate_cl = make_test_codelet(open_the_gate, "promises_gate", {STARPU_RW}, &few_us_model);
/* The gate's prologue: StarPU calls it when the gate becomes ready, inside
 * its submission when its data is free.  Deferred, it would not be yet. */
std::atomic<bool> gate_ready{false};
void note_gate_ready(void *)
{
	gate_ready = true;
}

/* Bases that start a ready task of higher priority first.  StarPU's eager,
 * ws and random queue in order; dmda places each task on a worker's queue
 * by expected end, not priority (274 to 389 of the 400 low tasks started
 * before the high one under dmda alone), and modular-heft's worker
 * components hold tasks pushed ahead (2 to 3 under modular-heft alone). */
bool base_honours_priorities()
{
	for (const char *base : {"lws", "prio", "dmdas"})
		if (tested_base == base || tested_base == std::string("native-") + base)
			return true;
	return false;
}

/* One round: count low-priority tasks, then a gate and the task after it
 * on the same data, both at the highest priority.  Returns how many low
 * ones started between the gate's end, when the high-priority task became
 * ready, and that task's start, or -1 when the gate was not ready at its
 * submission. */
int low_tasks_started_before_high_one(int count)
{
	std::vector<Variable> data(count + 1);
	for (Variable &v : data)
		v.reg(0);
	low_started = 0;
	low_started_before_high = low_started_at_readiness = -1;
	for (int i = 0; i < count; i++) {
		struct starpu_task *task = task_on(&low_cl, data[i].handle, nullptr, nullptr);
		task->priority = starpu_sched_get_min_priority();
		assert_int_equal(starpu_task_submit(task), 0);
	}
	gate_ready = false;
	bool gate_ready_at_submission = false;
	for (struct starpu_codelet *cl : {&gate_cl, &high_cl}) {
		struct starpu_task *task = task_on(cl, data[count].handle, nullptr, nullptr);
		task->priority = starpu_sched_get_max_priority();
		if (cl == &gate_cl)
			task->prologue_callback_func = note_gate_ready;
		assert_int_equal(starpu_task_submit(task), 0);
		if (cl == &gate_cl)
			gate_ready_at_submission = gate_ready;
	}
	starpu_task_wait_for_all();
	for (Variable &v : data)
		starpu_data_unregister(v.handle);
	return gate_ready_at_submission ? low_started_before_high.load() - low_started_at_readiness.load() : -1;
}

/* One worker: the high-priority task becomes ready in that worker, when the
 * gate ends, and StarPU gives it the worker next; no low task may start in
 * between, whatever else the system runs.  (With two workers, one the
 * system preempts with the task in its queue lets the other start low
 * tasks, under StarPU alone too: 15 once in 40 runs under lws alone.) */
void promises_high_priority_task_overtakes_queued_work(void **)
{
	start("promises_high_priority_task_overtakes_queued_work", 1);
	if (!base_honours_priorities()) {
		finish();
		skip();
	}
	load_models({&low_cl, &high_cl, &gate_cl});
	std::vector<int> overtaken;
	for (int round = 0; round < 5; round++)
		overtaken.push_back(low_tasks_started_before_high_one(400));
	std::printf("low-priority tasks started between the high-priority task's readiness and its start: %d %d %d %d %d\n",
		    overtaken[0], overtaken[1], overtaken[2], overtaken[3], overtaken[4]);
	for (int started : overtaken)
		assert_int_equal(started, 0);
	finish();
}

} // namespace

int main(int argc, char **argv)
{
	if (argc != 2) {
		std::fprintf(stderr, "usage: %s [native-]BASE[-when-busy][.promises]\n", argv[0]);
		return 99;
	}
	configure_program_test(argv[1], ".promises");
	tested_base = tested_policy_from_file(argv[1], ".promises").base;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(promises_end_dependency_added_in_the_window),
		cmocka_unit_test(promises_end_dependency_added_after_hand_over),
		cmocka_unit_test(promises_end_dependency_added_after_later_tasks),
		cmocka_unit_test(promises_end_dependency_declared_after_submission),
		cmocka_unit_test(promises_end_dependency_on_a_task_starpu_has),
		cmocka_unit_test(promises_wait_for_n_submitted_counts_every_task),
		cmocka_unit_test(promises_wont_use_then_invalidate),
		cmocka_unit_test(promises_wont_use_then_invalidate_unblocked),
		cmocka_unit_test(promises_high_priority_task_overtakes_queued_work),
	};
	if (const char *only = getenv("PROMISES_TEST"))
		cmocka_set_test_filter(only);
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
