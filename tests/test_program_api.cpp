/* Submission-time fusion under programs that use more of StarPU's API than
 * plain submissions: submissions from callbacks and prologues (during waits,
 * inside the program's own StarPU call, at shutdown), acquisitions held
 * while tasks are submitted, dependencies declared on deferred tasks, kept
 * tasks resubmitted or reinitialised, and StarPU's per-buffer queries inside
 * a member (doc/design.md, section 12).  Each test is a small program that
 * is correct under StarPU's own policies; under fusing it must compute the
 * same result and end.  The watchdog turns a hang into a failure naming the
 * test.
 *
 * Usage: test_program_api BASE[-when-busy][.api].  "native-BASE" runs the
 * same programs under StarPU's BASE alone: the expectations are StarPU's. */
#include "program_api.hpp"
#include "test_codelets.hpp"

#include <starpu.h>

#include <malloc.h>
#include <sched.h>
#include <pthread.h>
#include <time.h>

#include <atomic>
#include <cerrno>
#include <functional>
#include <initializer_list>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

using namespace program_api;

namespace {

std::string tested_base;

/* ------------------------------------------------------------ codelets */

void double_it(void **buffers, void *)
{
	value_of(buffers[0]) *= 2;
}

/* Writes 1 + what its second buffer holds into its first. */
void copy_plus_one(void **buffers, void *)
{
	value_of(buffers[0]) = value_of(buffers[1]) + 1;
}

/* Reports the memory node StarPU gives for each of its buffers. */
std::atomic<int> nodes_seen[2];
void record_data_nodes(void **, void *)
{
	for (unsigned i = 0; i < 2; i++)
		nodes_seen[i] = starpu_task_get_current_data_node(i);
}

struct starpu_codelet double_cl = codelet(double_it, 1, "double_it");
struct starpu_codelet copy_plus_one_cl = codelet(copy_plus_one, "copy_plus_one", {STARPU_W, STARPU_R});
struct starpu_codelet data_nodes_cl = codelet(record_data_nodes, "data_nodes", {STARPU_R, STARPU_R});
/* A control task on data: StarPU runs nothing and terminates it as soon as
 * it is ready, inside the submission when it is ready at once (1.3). */
struct starpu_codelet nowhere_cl = [] {
	struct starpu_codelet cl = codelet(nullptr, 1, "nowhere");
	cl.where = STARPU_NOWHERE;
	cl.modes[0] = STARPU_R;
	return cl;
}();

/* ------------------------------------------------ 1. submissions during waits
 * A chain where each task's callback submits the next: StarPU counts the
 * next task before the current one terminates, so a wait for the count to
 * drop sees the whole chain. */
const long kChainLength = 40;
struct Chain {
	Variable data;
	std::atomic<long> ran{0};
};
Chain chain;

void submit_next_link(void *)
{
	if (chain.ran.fetch_add(1) + 1 < kChainLength)
		assert_int_equal(submit_on(&add_one_cl, chain.data.handle, submit_next_link), 0);
}

void start_chain(const char *test)
{
	start(test, 2);
	chain.ran = 0;
	chain.data.reg(0);
	assert_int_equal(submit_on(&add_one_cl, chain.data.handle, submit_next_link), 0);
}

void api_callback_chain_during_wait_for_all(void **)
{
	start_chain("api_callback_chain_during_wait_for_all");
	starpu_task_wait_for_all();
	assert_int_equal(chain.ran.load(), kChainLength);
	starpu_data_unregister(chain.data.handle);
	assert_int_equal(chain.data.value, kChainLength);
	finish();
}

void api_callback_chain_during_wait_for_n_submitted(void **)
{
	start_chain("api_callback_chain_during_wait_for_n_submitted");
	starpu_task_wait_for_n_submitted(0);
	assert_int_equal(chain.ran.load(), kChainLength);
	starpu_data_unregister(chain.data.handle);
	assert_int_equal(chain.data.value, kChainLength);
	finish();
}

/* No wait: starpu_shutdown waits for the chain itself (the data stays
 * registered: the chain submits on it until its last link). */
void api_callback_chain_at_shutdown(void **)
{
	start_chain("api_callback_chain_at_shutdown");
	finish();
	assert_int_equal(chain.ran.load(), kChainLength);
	assert_int_equal(chain.data.value, kChainLength);
}

/* ------------------------------ 2. submissions from inside a StarPU call
 * StarPU 1.3 terminates a control task that is ready at once inside its
 * starpu_task_submit, and runs its callback there; a prologue runs where
 * its task becomes ready, inside the submission too.  What they submit
 * follows, on its data, what the program submitted before. */
Variable ordered;

void submit_add_one_to_ordered(void *)
{
	assert_int_equal(submit_on(&add_one_cl, ordered.handle), 0);
}

void api_callback_inside_submit_keeps_program_order(void **)
{
	start("api_callback_inside_submit_keeps_program_order", 1);
	ordered.reg(3);
	Variable other;
	other.reg(0);
	struct starpu_task *blocker = occupy_a_worker();
	assert_int_equal(submit_on(&double_cl, ordered.handle), 0);
	/* Its callback adds one to `ordered`, after the doubling. */
	assert_int_equal(submit_on(&nowhere_cl, other.handle, submit_add_one_to_ordered), 0);
	unblock(blocker);
	starpu_task_wait_for_all();
	starpu_data_unregister(ordered.handle);
	starpu_data_unregister(other.handle);
	assert_int_equal(ordered.value, 3 * 2 + 1);
	finish();
}

void api_prologue_submits(bool prologue_task_waited_for, const char *test)
{
	start(test, 1);
	ordered.reg(3);
	Variable other;
	other.reg(0);
	struct starpu_task *blocker = occupy_a_worker();
	assert_int_equal(submit_on(&double_cl, ordered.handle), 0);
	struct starpu_task *task = starpu_task_create();
	task->cl = &add_one_cl;
	task->handles[0] = other.handle;
	task->prologue_callback_func = submit_add_one_to_ordered;
	task->detach = prologue_task_waited_for ? 0 : 1;
	assert_int_equal(starpu_task_submit(task), 0);
	unblock(blocker);
	if (prologue_task_waited_for)
		assert_int_equal(starpu_task_wait(task), 0);
	starpu_task_wait_for_all();
	starpu_data_unregister(ordered.handle);
	starpu_data_unregister(other.handle);
	assert_int_equal(ordered.value, 3 * 2 + 1);
	assert_int_equal(other.value, 1);
	finish();
}

/* The prologue of a task StarPU has (not deferred: waited for). */
void api_prologue_of_a_task_submits(void **)
{
	api_prologue_submits(true, "api_prologue_of_a_task_submits");
}

/* The prologue of a deferred task, run when its merged task is ready. */
void api_prologue_of_a_member_submits(void **)
{
	api_prologue_submits(false, "api_prologue_of_a_member_submits");
}

/* ------------------------------------------------ 3. no false dependency
 * The program holds `held`; a task on it waits for the release, a task on
 * other data does not, and the program acquires that other data before it
 * releases `held`. */
void api_acquire_while_holding_other_data(void **)
{
	start("api_acquire_while_holding_other_data", 1);
	Variable held, free_data;
	held.reg(0);
	free_data.reg(0);
	struct starpu_task *blocker = occupy_a_worker();
	assert_int_equal(starpu_data_acquire(held.handle, STARPU_RW), 0);
	assert_int_equal(submit_on(&add_one_cl, held.handle), 0);
	assert_int_equal(submit_on(&add_one_cl, free_data.handle), 0);
	unblock(blocker);
	assert_int_equal(starpu_data_acquire(free_data.handle, STARPU_R), 0);
	assert_int_equal(free_data.value, 1);
	starpu_data_release(free_data.handle);
	starpu_data_release(held.handle);
	starpu_task_wait_for_all();
	starpu_data_unregister(held.handle);
	starpu_data_unregister(free_data.handle);
	assert_int_equal(held.value, 1);
	finish();
}

/* The same without a blocking call: the release comes from the callback of
 * an asynchronous acquisition of the other data. */
Variable held_until_callback;
std::atomic<bool> acquire_callback_ran{false};
void release_held(void *arg)
{
	starpu_data_handle_t acquired = static_cast<starpu_data_handle_t>(arg);
	starpu_data_release(acquired);
	starpu_data_release(held_until_callback.handle);
	acquire_callback_ran = true;
}

void api_acquire_cb_releases_held_data(void **)
{
	start("api_acquire_cb_releases_held_data", 1);
	acquire_callback_ran = false;
	Variable free_data;
	held_until_callback.reg(0);
	free_data.reg(0);
	struct starpu_task *blocker = occupy_a_worker();
	assert_int_equal(starpu_data_acquire(held_until_callback.handle, STARPU_RW), 0);
	assert_int_equal(submit_on(&add_one_cl, held_until_callback.handle), 0);
	assert_int_equal(submit_on(&add_one_cl, free_data.handle), 0);
	assert_int_equal(starpu_data_acquire_cb(free_data.handle, STARPU_R, release_held, free_data.handle), 0);
	unblock(blocker);
	starpu_task_wait_for_all();
	assert_true(acquire_callback_ran.load());
	starpu_data_unregister(held_until_callback.handle);
	starpu_data_unregister(free_data.handle);
	assert_int_equal(held_until_callback.value, 1);
	assert_int_equal(free_data.value, 1);
	finish();
}

/* The program holds `held`; a task reading it writes `between`, so a task
 * on `between` waits for the release too, and must not take a task on other
 * data with it. */
void api_acquire_held_through_a_task(void **)
{
	start("api_acquire_held_through_a_task", 1);
	Variable held, between, free_data;
	held.reg(5);
	between.reg(0);
	free_data.reg(0);
	struct starpu_task *blocker = occupy_a_worker();
	assert_int_equal(starpu_data_acquire(held.handle, STARPU_RW), 0);
	struct starpu_task *copy = starpu_task_create();
	copy->cl = &copy_plus_one_cl;
	copy->handles[0] = between.handle;
	copy->handles[1] = held.handle;
	assert_int_equal(starpu_task_submit(copy), 0);
	assert_int_equal(submit_on(&add_one_cl, between.handle), 0);
	assert_int_equal(submit_on(&add_one_cl, free_data.handle), 0);
	unblock(blocker);
	assert_int_equal(starpu_data_acquire(free_data.handle, STARPU_R), 0);
	assert_int_equal(free_data.value, 1);
	starpu_data_release(free_data.handle);
	held.value = 6;
	starpu_data_release(held.handle);
	starpu_task_wait_for_all();
	starpu_data_unregister(held.handle);
	starpu_data_unregister(between.handle);
	starpu_data_unregister(free_data.handle);
	assert_int_equal(between.value, 8);
	finish();
}

/* A task waits for a tag the program notifies only after it acquired other
 * data; a task after it on its data must not take a task on that other data
 * with it. */
void api_tag_notified_after_an_acquisition(void **)
{
	start("api_tag_notified_after_an_acquisition", 1);
	Variable tagged, free_data;
	tagged.reg(0);
	free_data.reg(0);
	const starpu_tag_t trigger = 0x7a61, tagged_task_tag = 0x7a62;
	starpu_tag_declare_deps(tagged_task_tag, 1, trigger);
	struct starpu_task *blocker = occupy_a_worker();
	struct starpu_task *waits_for_tag = starpu_task_create();
	waits_for_tag->cl = &add_one_cl;
	waits_for_tag->handles[0] = tagged.handle;
	waits_for_tag->use_tag = 1;
	waits_for_tag->tag_id = tagged_task_tag;
	assert_int_equal(starpu_task_submit(waits_for_tag), 0);
	assert_int_equal(submit_on(&double_cl, tagged.handle), 0);
	assert_int_equal(submit_on(&add_one_cl, free_data.handle), 0);
	unblock(blocker);
	assert_int_equal(starpu_data_acquire(free_data.handle, STARPU_R), 0);
	assert_int_equal(free_data.value, 1);
	starpu_data_release(free_data.handle);
	starpu_tag_notify_from_apps(trigger);
	starpu_task_wait_for_all();
	starpu_tag_remove(trigger);
	starpu_tag_remove(tagged_task_tag);
	starpu_data_unregister(tagged.handle);
	starpu_data_unregister(free_data.handle);
	assert_int_equal(tagged.value, 2);
	finish();
}

/* ---------------------------- 4. dependencies declared on deferred tasks
 * A kept task (destroy = 0) may be named after its submission; the
 * declaration returns at once, as StarPU's does, and the dependent runs
 * after it. */
Variable first;

struct starpu_task *kept_task_on(starpu_data_handle_t handle)
{
	struct starpu_task *task = starpu_task_create();
	task->cl = &add_one_cl;
	task->handles[0] = handle;
	task->destroy = 0;
	return task;
}

/* second = first + 1: the dependent, declared on the task adding one to
 * first (they share no data). */
struct starpu_task *dependent_on(struct starpu_task *dependency, starpu_data_handle_t target, starpu_data_handle_t source)
{
	struct starpu_task *task = starpu_task_create();
	task->cl = &copy_plus_one_cl;
	task->handles[0] = target;
	task->handles[1] = source;
	task->sequential_consistency = 0; /* ordered by the declaration only */
	starpu_task_declare_deps_array(task, 1, &dependency);
	return task;
}

void api_dependency_declared_while_paused(void **)
{
	start("api_dependency_declared_while_paused", 2);
	first.reg(10);
	starpu_pause();
	struct starpu_task *kept = kept_task_on(first.handle);
	assert_int_equal(starpu_task_submit(kept), 0);
	Variable copy;
	copy.reg(0);
	struct starpu_task *dependent = dependent_on(kept, copy.handle, first.handle);
	starpu_resume();
	assert_int_equal(starpu_task_submit(dependent), 0);
	starpu_task_wait_for_all();
	starpu_task_destroy(kept);
	starpu_data_unregister(first.handle);
	starpu_data_unregister(copy.handle);
	assert_int_equal(copy.value, 12);
	finish();
}

void api_dependency_declared_behind_held_data(void **)
{
	start("api_dependency_declared_behind_held_data", 2);
	first.reg(10);
	Variable copy;
	copy.reg(0);
	assert_int_equal(starpu_data_acquire(first.handle, STARPU_RW), 0);
	struct starpu_task *kept = kept_task_on(first.handle);
	assert_int_equal(starpu_task_submit(kept), 0);
	struct starpu_task *dependent = dependent_on(kept, copy.handle, first.handle);
	assert_int_equal(starpu_task_submit(dependent), 0);
	starpu_data_release(first.handle);
	starpu_task_wait_for_all();
	starpu_task_destroy(kept);
	starpu_data_unregister(first.handle);
	starpu_data_unregister(copy.handle);
	assert_int_equal(copy.value, 12);
	finish();
}

/* The callback of one task declares a dependency on a later task it was
 * merged with (a chain on one handle), kept by the program. */
struct starpu_task *later_link = nullptr;
Variable link_copy;
void declare_on_later_link(void *)
{
	assert_int_equal(starpu_task_submit(dependent_on(later_link, link_copy.handle, first.handle)), 0);
}

void api_callback_declares_on_its_own_group(void **)
{
	start("api_callback_declares_on_its_own_group", 1);
	first.reg(10);
	link_copy.reg(0);
	struct starpu_task *blocker = occupy_a_worker();
	later_link = kept_task_on(first.handle);
	assert_int_equal(submit_on(&add_one_cl, first.handle, declare_on_later_link), 0);
	assert_int_equal(starpu_task_submit(later_link), 0);
	unblock(blocker);
	starpu_task_wait_for_all();
	starpu_task_destroy(later_link);
	starpu_data_unregister(first.handle);
	starpu_data_unregister(link_copy.handle);
	assert_int_equal(first.value, 12);
	assert_int_equal(link_copy.value, 13);
	finish();
}

/* ------------------------------------------------ 5. kept tasks and queries */
const long kResubmissions = 5;
std::atomic<long> resubmitted_runs{0};
void resubmit_itself(void *arg)
{
	struct starpu_task *task = static_cast<struct starpu_task *>(arg);
	if (resubmitted_runs.fetch_add(1) + 1 < kResubmissions)
		assert_int_equal(starpu_task_submit(task), 0);
}

/* A kept task resubmitted from its own callback (StarPU refuses
 * dependencies declared on it after its first resubmission). */
void api_kept_task_resubmitted_from_its_callback(void **)
{
#if STARPU_MAJOR_VERSION == 1 && STARPU_MINOR_VERSION >= 4
	/* StarPU 1.4's dm* policies assert on such a task, under dmda alone
	 * too ("Prefetching was already requested for this task", seen with
	 * 1.4.12): not a program StarPU runs. */
	if (tested_base.compare(0, 2, "dm") == 0)
		skip();
#endif
	start("api_kept_task_resubmitted_from_its_callback", 2);
	resubmitted_runs = 0;
	first.reg(0);
	struct starpu_task *kept = kept_task_on(first.handle);
	kept->callback_func = resubmit_itself;
	kept->callback_arg = kept;
	assert_int_equal(starpu_task_submit(kept), 0);
	starpu_task_wait_for_all();
	assert_int_equal(resubmitted_runs.load(), kResubmissions);
	starpu_task_destroy(kept);
	starpu_data_unregister(first.handle);
	assert_int_equal(first.value, kResubmissions);
	finish();
}

/* A repeated subgraph A -> {B, C} -> D (StarPU's tests/main/
 * subgraph_repeat_regenerate, with a callback on A): B, C and D are
 * regenerated by StarPU, A is resubmitted from D's callback.  A's dependents
 * run as soon as A notified them, before StarPU calls A's callback: A may be
 * submitted again, from another worker, while its previous termination has
 * yet to call its callback.  Every run of A must still call its callback
 * once, with its argument. */
const unsigned kSubgraphRounds = 20000;
struct RepeatedSubgraph {
	struct starpu_task a, b, c, d;
	std::atomic<unsigned> a_callbacks{0}, b_rounds{0}, c_rounds{0}, d_rounds{0};
	std::atomic<unsigned> a_wrong_argument{0};
	pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_t done = PTHREAD_COND_INITIALIZER;
};
RepeatedSubgraph subgraph;

void count_a(void *arg)
{
	if (arg != &subgraph.a_callbacks)
		subgraph.a_wrong_argument++;
	subgraph.a_callbacks++;
}
void end_round_of_b(void *)
{
	if (++subgraph.b_rounds == kSubgraphRounds)
		subgraph.b.regenerate = 0;
}
void end_round_of_c(void *)
{
	if (++subgraph.c_rounds == kSubgraphRounds)
		subgraph.c.regenerate = 0;
}
void end_round_of_d(void *)
{
	pthread_mutex_lock(&subgraph.mutex);
	const unsigned rounds = ++subgraph.d_rounds;
	if (rounds == kSubgraphRounds) {
		subgraph.d.regenerate = 0;
		pthread_cond_signal(&subgraph.done);
	}
	pthread_mutex_unlock(&subgraph.mutex);
	if (rounds < kSubgraphRounds)
		assert_int_equal(starpu_task_submit(&subgraph.a), 0);
}

void api_task_resubmitted_before_its_callback_ran(void **)
{
	start("api_task_resubmitted_before_its_callback_ran", 2);
	first.reg(0);
	/* Regenerated tasks cannot have implicit dependencies (StarPU's test). */
	starpu_data_set_sequential_consistency_flag(first.handle, 0);
	struct starpu_task *tasks[] = {&subgraph.a, &subgraph.b, &subgraph.c, &subgraph.d};
	void (*callbacks[])(void *) = {count_a, end_round_of_b, end_round_of_c, end_round_of_d};
	for (unsigned i = 0; i < 4; i++) {
		starpu_task_init(tasks[i]);
		tasks[i]->cl = &add_one_cl;
		tasks[i]->handles[0] = first.handle;
		tasks[i]->callback_func = callbacks[i];
		tasks[i]->regenerate = i > 0;
	}
	subgraph.a.callback_arg = &subgraph.a_callbacks;
	starpu_task_declare_deps(&subgraph.b, 1, &subgraph.a);
	starpu_task_declare_deps(&subgraph.c, 1, &subgraph.a);
	starpu_task_declare_deps(&subgraph.d, 2, &subgraph.b, &subgraph.c);
	for (struct starpu_task *task : tasks)
		assert_int_equal(starpu_task_submit(task), 0);
	pthread_mutex_lock(&subgraph.mutex);
	while (subgraph.d_rounds < kSubgraphRounds)
		pthread_cond_wait(&subgraph.done, &subgraph.mutex);
	pthread_mutex_unlock(&subgraph.mutex);
	starpu_task_wait_for_all();
	for (struct starpu_task *task : tasks)
		starpu_task_clean(task);
	starpu_data_unregister(first.handle);
	assert_int_equal(first.value, 4 * kSubgraphRounds);
	assert_int_equal(subgraph.a_callbacks.load(), kSubgraphRounds);
	assert_int_equal(subgraph.a_wrong_argument.load(), 0);
	finish();
}

/* StarPU 1.4's fault tolerance: a task whose prologue is
 * starpu_task_ft_prologue runs copies of itself until one does not call
 * starpu_task_ft_failed; each copy's callback submits the next.  The copies
 * run while the thread that made the task ready is still in its prologue
 * (StarPU's tests/fault-tolerance/retry, several rounds). */
#if STARPU_MAJOR_VERSION == 1 && STARPU_MINOR_VERSION >= 4
const unsigned kFailuresPerTask = 10;
std::atomic<unsigned> failures_left{0};
void fail_until_retried_enough(void **buffers, void *)
{
	value_of(buffers[1]) = value_of(buffers[0]) + 1;
	if (failures_left.load() > 0) {
		failures_left--;
		starpu_task_ft_failed(starpu_task_get_current());
	}
}
struct starpu_codelet fails_cl = codelet(fail_until_retried_enough, "fails", {STARPU_R, STARPU_W});
#endif

void api_fault_tolerant_task_retried(void **)
{
#if STARPU_MAJOR_VERSION == 1 && STARPU_MINOR_VERSION >= 4
	start("api_fault_tolerant_task_retried", 2);
	const unsigned rounds = 20;
	for (unsigned round = 0; round < rounds; round++) {
		Variable source, target;
		source.reg(round);
		target.reg(0);
		failures_left = kFailuresPerTask;
		assert_int_equal(starpu_task_insert(&fails_cl, STARPU_PROLOGUE_CALLBACK, starpu_task_ft_prologue,
						    STARPU_R, source.handle, STARPU_W, target.handle, 0),
				 0);
		starpu_task_wait_for_all();
		starpu_data_unregister(source.handle);
		starpu_data_unregister(target.handle);
		assert_int_equal(target.value, round + 1);
		assert_int_equal(failures_left.load(), 0);
	}
	finish();
#else
	skip(); /* no fault tolerance before StarPU 1.4 */
#endif
}

/* starpu_task_init on the address of a kept task that ran: a new task,
 * which a dependency declared before its submission must wait for. */
void api_task_init_reuses_an_address(void **)
{
	start("api_task_init_reuses_an_address", 2);
	first.reg(0);
	Variable copy;
	copy.reg(0);
	static struct starpu_task reused;
	starpu_task_init(&reused);
	reused.cl = &add_one_cl;
	reused.handles[0] = first.handle;
	assert_int_equal(starpu_task_submit(&reused), 0);
	starpu_task_wait_for_all();
	/* Reinitialised without starpu_task_clean (StarPU only leaks the
	 * first use's bookkeeping). */
	starpu_task_init(&reused);
	reused.cl = &add_one_cl;
	reused.handles[0] = first.handle;
	struct starpu_task *dependent = dependent_on(&reused, copy.handle, first.handle);
	assert_int_equal(starpu_task_submit(dependent), 0);
	assert_int_equal(starpu_task_submit(&reused), 0);
	starpu_task_wait_for_all();
	starpu_task_clean(&reused);
	starpu_data_unregister(first.handle);
	starpu_data_unregister(copy.handle);
	assert_int_equal(first.value, 2);
	assert_int_equal(copy.value, 3);
	finish();
}

/* starpu_task_get_current_data_node inside a task merged with another on
 * the same data: StarPU answers for the task's own buffers. */
void api_current_data_node_in_a_member(void **)
{
	start("api_current_data_node_in_a_member", 1);
	Variable a, b;
	a.reg(0);
	b.reg(0);
	nodes_seen[0] = nodes_seen[1] = -2;
	struct starpu_task *blocker = occupy_a_worker();
	for (int i = 0; i < 2; i++) {
		struct starpu_task *task = starpu_task_create();
		task->cl = &data_nodes_cl;
		task->handles[0] = i == 0 ? a.handle : b.handle;
		task->handles[1] = a.handle;
		assert_int_equal(starpu_task_submit(task), 0);
	}
	unblock(blocker);
	starpu_task_wait_for_all();
	starpu_data_unregister(a.handle);
	starpu_data_unregister(b.handle);
	assert_int_equal(nodes_seen[0].load(), STARPU_MAIN_RAM);
	assert_int_equal(nodes_seen[1].load(), STARPU_MAIN_RAM);
	finish();
}

/* A task that adds an end dependency to itself while it runs and submits
 * the task whose callback releases it (StarPU's task_end_dep_add example):
 * its own callback, and a wait for its data, come after that release. */
std::atomic<bool> end_dependency_released{false};
std::atomic<int> released_before_callback{-1};
void release_end_dependency(void *arg)
{
	end_dependency_released = true;
	starpu_task_end_dep_release(static_cast<struct starpu_task *>(arg));
}

void add_one_until_released(void **buffers, void *)
{
	struct starpu_task *self = starpu_task_get_current();
	starpu_task_end_dep_add(self, 1);
	struct starpu_task *releaser = starpu_task_create();
	releaser->cl = &blocker_cl; /* no data; submitted after unblock() */
	releaser->callback_func = release_end_dependency;
	releaser->callback_arg = self;
	assert_int_equal(starpu_task_submit(releaser), 0);
	value_of(buffers[0]) += 1;
}
struct starpu_codelet add_one_until_released_cl = codelet(add_one_until_released, 1, "add_one_until_released");

/* The same through a declaration: its end waits for the task it submits
 * (StarPU releases it before that task's callback, so that task notes it
 * while it runs). */
void note_release(void **, void *)
{
	end_dependency_released = true;
}
struct starpu_codelet note_release_cl = codelet(note_release, 0, "note_release");

void add_one_until_submitted_task_ends(void **buffers, void *)
{
	struct starpu_task *releaser = starpu_task_create();
	releaser->cl = &note_release_cl;
	starpu_task_declare_end_deps(starpu_task_get_current(), 1, releaser);
	assert_int_equal(starpu_task_submit(releaser), 0);
	value_of(buffers[0]) += 1;
}
struct starpu_codelet add_one_until_submitted_task_ends_cl =
	codelet(add_one_until_submitted_task_ends, 1, "add_one_until_submitted_task_ends");

void note_release_seen(void *)
{
	released_before_callback = end_dependency_released ? 1 : 0;
}

void member_adds_an_end_dependency_to_itself(const char *test, struct starpu_codelet *member_cl)
{
	start(test, 1);
	first.reg(0);
	end_dependency_released = false;
	released_before_callback = -1;
	struct starpu_task *blocker = occupy_a_worker();
	for (int i = 0; i < 2; i++)
		assert_int_equal(submit_on(&add_one_cl, first.handle), 0);
	assert_int_equal(submit_on(member_cl, first.handle, note_release_seen), 0);
	unblock(blocker);
	starpu_data_acquire(first.handle, STARPU_R);
	const bool released_before_acquisition = end_dependency_released;
	starpu_data_release(first.handle);
	starpu_task_wait_for_all();
	starpu_data_unregister(first.handle);
	assert_int_equal(first.value, 3);
	assert_true(released_before_acquisition);
	assert_int_equal(released_before_callback.load(), 1);
	finish();
}

void api_member_adds_an_end_dependency_to_itself(void **)
{
	member_adds_an_end_dependency_to_itself("api_member_adds_an_end_dependency_to_itself", &add_one_until_released_cl);
}

void api_member_declares_an_end_dependency_of_its_own(void **)
{
	member_adds_an_end_dependency_to_itself("api_member_declares_an_end_dependency_of_its_own",
						&add_one_until_submitted_task_ends_cl);
}

/* ------------------------------------------------ 6. partition plans
 * Tasks on the children of partition plans are deferred like any other,
 * and the program's partition calls are placed between the groups
 * (doc/design.md, section 12).  One vector of kElements longs, halves
 * (the children) and quarters (the children of the first half). */
const unsigned kElements = 8;

long *elements_of(void *buffer, unsigned &count)
{
	count = STARPU_VECTOR_GET_NX(buffer);
	return reinterpret_cast<long *>(STARPU_VECTOR_GET_PTR(buffer));
}

std::atomic<int> vector_tasks_handed{0};
void note_vector_task_handed(void *)
{
	vector_tasks_handed++;
}

void vector_add_one(void **buffers, void *)
{
	unsigned n;
	long *v = elements_of(buffers[0], n);
	for (unsigned i = 0; i < n; i++)
		v[i] += 1 + static_cast<long>(i);
}

void vector_double(void **buffers, void *)
{
	unsigned n;
	long *v = elements_of(buffers[0], n);
	for (unsigned i = 0; i < n; i++)
		v[i] *= 2;
}

/* Adds the sum of its first buffer to the variable in its second. */
void vector_sum_into(void **buffers, void *)
{
	unsigned n;
	long *v = elements_of(buffers[0], n);
	for (unsigned i = 0; i < n; i++)
		value_of(buffers[1]) += v[i];
}

struct starpu_codelet vector_add_one_cl = codelet(vector_add_one, 1, "vector_add_one");
struct starpu_codelet vector_double_cl = codelet(vector_double, 1, "vector_double");
struct starpu_codelet vector_sum_into_cl = codelet(vector_sum_into, "vector_sum_into", {STARPU_R, STARPU_RW});

void submit_vector_task(struct starpu_codelet *cl, starpu_data_handle_t vector, starpu_data_handle_t variable = nullptr)
{
	struct starpu_task *task = starpu_task_create();
	task->cl = cl;
	task->handles[0] = vector;
	task->handles[1] = variable;
	task->prologue_callback_func = note_vector_task_handed;
	assert_int_equal(starpu_task_submit(task), 0);
}

/* The host's version of the same operations, on a range of the vector,
 * from PlannedVector's initial values. */
struct HostVector {
	long values[kElements];
	HostVector()
	{
		for (unsigned i = 0; i < kElements; i++)
			values[i] = static_cast<long>(i);
	}
	void add_one(unsigned first, unsigned count)
	{
		for (unsigned i = 0; i < count; i++)
			values[first + i] += 1 + static_cast<long>(i);
	}
	void times_two(unsigned first, unsigned count)
	{
		for (unsigned i = 0; i < count; i++)
			values[first + i] *= 2;
	}
	long sum(unsigned first, unsigned count) const
	{
		long total = 0;
		for (unsigned i = 0; i < count; i++)
			total += values[first + i];
		return total;
	}
};

struct PlannedVector {
	long values[kElements];
	starpu_data_handle_t whole = nullptr;
	starpu_data_handle_t halves[2] = {};
	starpu_data_handle_t quarters[2] = {}; /* of halves[0] */

	void reg()
	{
		for (unsigned i = 0; i < kElements; i++)
			values[i] = static_cast<long>(i);
		starpu_vector_data_register(&whole, STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(values), kElements, sizeof(long));
		struct starpu_data_filter halve;
		std::memset(&halve, 0, sizeof(halve));
		halve.filter_func = starpu_vector_filter_block;
		halve.nchildren = 2;
		starpu_data_partition_plan(whole, &halve, halves);
		starpu_data_partition_plan(halves[0], &halve, quarters);
	}
	/* Gives the data back and checks it holds the host's values. */
	void unreg_and_check(const long *expected)
	{
		starpu_data_partition_clean(halves[0], 2, quarters);
		starpu_data_partition_clean(whole, 2, halves);
		starpu_data_unregister(whole);
		for (unsigned i = 0; i < kElements; i++)
			assert_int_equal(values[i], expected[i]);
	}
};

/* Tasks on children between the program's own partition calls: with the
 * worker busy and STARPU_FUSING_HOLD=always, the window holds them all
 * (their prologues have not run) until the program waits, and the results
 * are the host's. */
void api_tasks_on_plan_children_are_deferred(void **)
{
	start("api_tasks_on_plan_children_are_deferred", 1);
	PlannedVector vector;
	vector.reg();
	HostVector host;
	Variable total;
	total.reg(0);
	vector_tasks_handed = 0;
	struct starpu_task *blocker = occupy_a_worker();

	starpu_data_partition_submit(vector.whole, 2, vector.halves);
	for (int round = 0; round < 3; round++) {
		submit_vector_task(&vector_add_one_cl, vector.halves[0]);
		submit_vector_task(&vector_double_cl, vector.halves[1]);
		host.add_one(0, kElements / 2);
		host.times_two(kElements / 2, kElements / 2);
	}
	starpu_data_unpartition_submit(vector.whole, 2, vector.halves, STARPU_MAIN_RAM);
	submit_vector_task(&vector_sum_into_cl, vector.whole, total.handle);
	const long expected_total = host.sum(0, kElements);
	if (!native && getenv("STARPU_FUSING_HOLD"))
		assert_int_equal(vector_tasks_handed.load(), 0);

	unblock(blocker);
	starpu_task_wait_for_all();
	assert_int_equal(vector_tasks_handed.load(), 7);
	starpu_data_unregister(total.handle);
	vector.unreg_and_check(host.values);
	assert_int_equal(total.value, expected_total);
	finish();
}

/* Every partition call in a nested plan, read-only partitions and tasks on
 * the parent between them, on two workers: the results are the host's. */
void api_partition_calls_keep_program_order(void **)
{
	start("api_partition_calls_keep_program_order", 2);
	for (int run = 0; run < 20; run++) {
		PlannedVector vector;
		vector.reg();
		HostVector host;
		Variable total, first, second;
		total.reg(0);
		first.reg(0);
		second.reg(0);
		const unsigned half = kElements / 2, quarter = kElements / 4;

		submit_vector_task(&vector_double_cl, vector.whole);
		host.times_two(0, kElements);
		starpu_data_partition_submit(vector.whole, 2, vector.halves);
		submit_vector_task(&vector_add_one_cl, vector.halves[0]);
		submit_vector_task(&vector_double_cl, vector.halves[1]);
		host.add_one(0, half);
		host.times_two(half, half);
		starpu_data_partition_submit(vector.halves[0], 2, vector.quarters);
		submit_vector_task(&vector_double_cl, vector.quarters[0]);
		submit_vector_task(&vector_add_one_cl, vector.quarters[1]);
		submit_vector_task(&vector_add_one_cl, vector.halves[1]);
		host.times_two(0, quarter);
		host.add_one(quarter, quarter);
		host.add_one(half, half);
		starpu_data_unpartition_submit(vector.halves[0], 2, vector.quarters, STARPU_MAIN_RAM);
		submit_vector_task(&vector_add_one_cl, vector.halves[0]);
		host.add_one(0, half);
		starpu_data_unpartition_submit(vector.whole, 2, vector.halves, STARPU_MAIN_RAM);
		submit_vector_task(&vector_sum_into_cl, vector.whole, total.handle);
		const long expected_total = host.sum(0, kElements);
		starpu_data_partition_readonly_submit(vector.whole, 2, vector.halves);
		submit_vector_task(&vector_sum_into_cl, vector.halves[0], first.handle);
		submit_vector_task(&vector_sum_into_cl, vector.halves[1], second.handle);
		submit_vector_task(&vector_sum_into_cl, vector.whole, total.handle);
		const long expected_first = host.sum(0, half), expected_second = host.sum(half, half);
		starpu_data_partition_readwrite_upgrade_submit(vector.whole, 2, vector.halves);
		submit_vector_task(&vector_double_cl, vector.halves[1]);
		host.times_two(half, half);
		starpu_data_unpartition_submit(vector.whole, 2, vector.halves, STARPU_MAIN_RAM);
		submit_vector_task(&vector_add_one_cl, vector.whole);
		host.add_one(0, kElements);

		starpu_task_wait_for_all();
		for (Variable *v : {&total, &first, &second})
			starpu_data_unregister(v->handle);
		vector.unreg_and_check(host.values);
		assert_int_equal(total.value, 2 * expected_total);
		assert_int_equal(first.value, expected_first);
		assert_int_equal(second.value, expected_second);
	}
	finish();
}

/* Two children of a vector, a quarter each, at its start and its middle:
 * the rest of the vector belongs to no child. */
void pick_two_quarters(void *parent_interface, void *child_interface, struct starpu_data_filter *, unsigned id, unsigned)
{
	const auto *parent = static_cast<const struct starpu_vector_interface *>(parent_interface);
	auto *child = static_cast<struct starpu_vector_interface *>(child_interface);
	*child = *parent;
	child->nx = parent->nx / 4;
	const std::size_t offset = id * (parent->nx / 2) * parent->elemsize;
	if (parent->ptr)
		child->ptr = parent->ptr + offset;
	child->dev_handle = parent->dev_handle;
	child->offset = parent->offset + offset;
}

/* Whether a task on a plan's child got an interface other than StarPU's own
 * for that child (saved before the plan is cleaned: the codelet reads no
 * handle): the window elided the plan and built it from the parent's. */
std::atomic<unsigned> children_served_from_parent{0};
void *starpu_child_interfaces[2];
void vector_add_one_noting_view(void **buffers, void *arg)
{
	if (buffers[0] != starpu_child_interfaces[0] && buffers[0] != starpu_child_interfaces[1])
		children_served_from_parent++;
	vector_add_one(buffers, arg);
}
struct starpu_codelet vector_add_one_noting_view_cl = codelet(vector_add_one_noting_view, 1, "vector_add_one_noting_view");

/* A partition, tasks on its children and the unpartition, all in the
 * window, then the plan cleaned while the worker is busy: the window elides
 * the partition and the unpartition (doc/design.md, section 12), and the
 * merged task runs on the parent after the clean unregistered the children.
 * The children cover half of the vector: the other half keeps its values.
 * Under ASan, building the children's interfaces from the handles the clean
 * had freed was a heap-use-after-free. */
void api_elided_plan_cleaned_before_its_tasks_ran(void **)
{
	start("api_elided_plan_cleaned_before_its_tasks_ran", 1);
	long values[kElements];
	HostVector host;
	for (unsigned i = 0; i < kElements; i++)
		values[i] = host.values[i];
	starpu_data_handle_t whole, quarters[2];
	starpu_vector_data_register(&whole, STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(values), kElements, sizeof(long));
	struct starpu_data_filter pick;
	std::memset(&pick, 0, sizeof(pick));
	pick.filter_func = pick_two_quarters;
	pick.nchildren = 2;
	starpu_data_partition_plan(whole, &pick, quarters);
	for (unsigned q = 0; q < 2; q++)
		starpu_child_interfaces[q] = starpu_data_get_interface_on_node(quarters[q], STARPU_MAIN_RAM);
	children_served_from_parent = 0;
	struct starpu_task *blocker = occupy_a_worker();

	starpu_data_partition_submit(whole, 2, quarters);
	for (int round = 0; round < 2; round++)
		for (unsigned q = 0; q < 2; q++) {
			submit_vector_task(&vector_add_one_noting_view_cl, quarters[q]);
			host.add_one(q * kElements / 2, kElements / 4);
		}
	starpu_data_unpartition_submit(whole, 2, quarters, STARPU_MAIN_RAM);
	starpu_data_partition_clean(whole, 2, quarters);

	unblock(blocker);
	starpu_task_wait_for_all();
	starpu_data_unregister(whole);
	for (unsigned i = 0; i < kElements; i++)
		assert_int_equal(values[i], host.values[i]);
	if (native)
		assert_int_equal(children_served_from_parent.load(), 0);
	else if (getenv("STARPU_FUSING_HOLD") && strcmp(getenv("STARPU_FUSING_PLAN_ELISION") ?: "on", "on") == 0)
		assert_int_equal(children_served_from_parent.load(), 4);
	finish();
}

/* A plan whose children StarPU saw, cleaned while a task on a child still
 * waits behind the busy worker: StarPU's clean must wait for it.  The
 * window unregisters at once only the children of plans StarPU never saw
 * (every partition elided; doc/design.md, section 12), and StarPU sees
 * them here through a task the window does not defer (a tagged one), the
 * program's acquisition of a child, or the partition StarPU makes by
 * itself for a task on a child of a plan not partitioned.  Unregistered at
 * once, the child would be gone under its queued task (StarPU aborts, or
 * the values differ). */
void api_cleaning_a_plan_starpu_saw_waits_for_its_tasks(void **)
{
	start("api_cleaning_a_plan_starpu_saw_waits_for_its_tasks", 1);
	const unsigned half = kElements / 2;
	for (int how = 0; how < 3; how++) {
		PlannedVector vector;
		vector.reg();
		HostVector host;
		struct starpu_task *blocker = nullptr;
		if (how == 2) {
			/* No partition call: StarPU partitions for the task. */
			blocker = occupy_a_worker();
			submit_vector_task(&vector_double_cl, vector.halves[1]);
			host.times_two(half, half);
		} else {
			starpu_data_partition_submit(vector.whole, 2, vector.halves);
			if (how == 1) {
				assert_int_equal(starpu_data_acquire(vector.halves[0], STARPU_RW), 0);
				starpu_data_release(vector.halves[0]);
			}
			blocker = occupy_a_worker();
			if (how == 0) {
				struct starpu_task *tagged = starpu_task_create();
				tagged->cl = &vector_add_one_cl;
				tagged->handles[0] = vector.halves[0];
				tagged->use_tag = 1;
				tagged->tag_id = 4343;
				assert_int_equal(starpu_task_submit(tagged), 0);
			} else {
				submit_vector_task(&vector_add_one_cl, vector.halves[0]);
			}
			host.add_one(0, half);
			submit_vector_task(&vector_double_cl, vector.halves[1]);
			host.times_two(half, half);
			starpu_data_unpartition_submit(vector.whole, 2, vector.halves, STARPU_MAIN_RAM);
		}
		starpu_data_partition_clean(vector.halves[0], 2, vector.quarters);
		starpu_data_partition_clean(vector.whole, 2, vector.halves);
		/* After the children's tasks, through the clean's unpartition. */
		submit_vector_task(&vector_add_one_cl, vector.whole);
		host.add_one(0, kElements);
		unblock(blocker);
		starpu_task_wait_for_all();
		if (how == 0)
			starpu_tag_remove(4343);
		starpu_data_unregister(vector.whole);
		for (unsigned i = 0; i < kElements; i++)
			assert_int_equal(vector.values[i], host.values[i]);
	}
	finish();
}

/* Reductions (STARPU_REDUX) of deferred tasks: a group combines its
 * members' reductions of a handle into one access, which StarPU gives the
 * per-worker contribution each member would have added to on that worker;
 * a task reading or writing the reduced handle goes to a later group, after
 * which StarPU ends the reduction (doc/design.md, section 12, reductions).
 * Three rounds of eight reductions, each followed by a doubling (RW) and a
 * copy (R): the results are the host's, and under fusing with the suite's
 * STARPU_FUSING_HOLD the reductions ran in merged tasks, several at once. */
void set_to_zero(void **buffers, void *)
{
	value_of(buffers[0]) = 0;
}
void add_second_into_first(void **buffers, void *)
{
	value_of(buffers[0]) += value_of(buffers[1]);
}
/* Raises largest to the size of the batch or group running the caller
 * (0 outside one). */
void note_group_size(std::atomic<unsigned> &largest)
{
	unsigned seen = largest.load();
	const unsigned size = starpu_fusing_current_batch_size();
	while (size > seen && !largest.compare_exchange_weak(seen, size))
		;
}
std::atomic<unsigned> largest_reduction_group{0};
void add_value(void **buffers, void *cl_arg)
{
	long value;
	starpu_codelet_unpack_args(cl_arg, &value);
	value_of(buffers[0]) += value;
	note_group_size(largest_reduction_group);
}
struct starpu_codelet set_to_zero_cl = codelet(set_to_zero, "set_to_zero", {STARPU_W});
struct starpu_codelet add_second_into_first_cl = codelet(add_second_into_first, "add_second_into_first", {STARPU_RW, STARPU_R});
struct starpu_codelet reduce_add_value_cl = codelet(add_value, "reduce_add_value", {STARPU_REDUX});

void api_reductions_of_deferred_tasks_are_combined(void **)
{
	start("api_reductions_of_deferred_tasks_are_combined", 1);
	largest_reduction_group = 0;
	Variable sum;
	sum.reg(1000);
	starpu_data_set_reduction_methods(sum.handle, &add_second_into_first_cl, &set_to_zero_cl);
	const int kRounds = 3, kReductions = 8;
	Variable copies[kRounds];
	for (Variable &copy : copies)
		copy.reg(0);
	long host = 1000, host_copies[kRounds];
	struct starpu_task *blocker = occupy_a_worker();
	for (int round = 0; round < kRounds; round++) {
		for (long i = 0; i < kReductions; i++) {
			long value = 10 * round + i;
			assert_int_equal(starpu_task_insert(&reduce_add_value_cl, STARPU_REDUX, sum.handle, STARPU_VALUE, &value,
							    sizeof(value), 0),
					 0);
			host += value;
		}
		assert_int_equal(submit_on(&double_cl, sum.handle), 0);
		host *= 2;
		assert_int_equal(starpu_task_insert(&copy_plus_one_cl, STARPU_W, copies[round].handle, STARPU_R, sum.handle, 0), 0);
		host_copies[round] = host + 1;
	}
	unblock(blocker);
	starpu_task_wait_for_all();
	starpu_data_unregister(sum.handle);
	for (Variable &copy : copies)
		starpu_data_unregister(copy.handle);
	assert_int_equal(sum.value, host);
	for (int round = 0; round < kRounds; round++)
		assert_int_equal(copies[round].value, host_copies[round]);
	if (native)
		assert_int_equal(largest_reduction_group.load(), 0);
	else if (getenv("STARPU_FUSING_HOLD"))
		assert_int_equal(largest_reduction_group.load(), kReductions);
	finish();
}

/* A task on a partitioned parent: StarPU unpartitions the parent by itself
 * when the task is submitted (_starpu_data_partition_access_submit).  The
 * window follows that switch (partition_trees.h, follow_switch) and keeps
 * deferring the tree's tasks: in DAHL, the SGD update of the filters
 * (any_sub_self, read-write on a parent partitioned for the convolutions)
 * stopped deferral of every later convolution, 399 tasks per epoch handed
 * to StarPU one by one.  Three rounds of a partition, a read-write chain on
 * one child and a task on the parent: the results are the host's, and from
 * the second round on (after StarPU's first switch) each chain runs as one
 * merged task under the suite's STARPU_FUSING_HOLD.  Before, the tree was
 * no longer deferred: largest group 0. */
std::atomic<unsigned> largest_chain_after_switch{0};
void vector_add_one_noting_group(void **buffers, void *cl_arg)
{
	vector_add_one(buffers, cl_arg);
	note_group_size(largest_chain_after_switch);
}
struct starpu_codelet vector_add_one_noting_group_cl = codelet(vector_add_one_noting_group, 1, "vector_add_one_noting_group");

void api_plan_switched_by_starpu_stays_followed(void **)
{
	start("api_plan_switched_by_starpu_stays_followed", 1);
	const int kChain = 4;
	largest_chain_after_switch = 0;
	PlannedVector vector;
	vector.reg();
	HostVector host;
	/* The worker stays busy while the program submits: an idle worker
	 * asks the window for a group, which would take a chain's first task
	 * alone (a group nothing predicts is worth running at once). */
	struct starpu_task *blocker = occupy_a_worker();
	for (int round = 0; round < 3; round++) {
		starpu_data_partition_submit(vector.whole, 2, vector.halves);
		for (int i = 0; i < kChain; i++) {
			submit_vector_task(round == 0 ? &vector_add_one_cl : &vector_add_one_noting_group_cl, vector.halves[0]);
			host.add_one(0, kElements / 2);
		}
		submit_vector_task(&vector_double_cl, vector.whole);
		host.times_two(0, kElements);
	}
	unblock(blocker);
	starpu_task_wait_for_all();
	vector.unreg_and_check(host.values);
	if (native)
		assert_int_equal(largest_chain_after_switch.load(), 0);
	else if (getenv("STARPU_FUSING_HOLD"))
		assert_int_equal(largest_chain_after_switch.load(), kChain);
	finish();
}

/* The same switch made by an acquisition: StarPU unpartitions a
 * partitioned handle the program acquires for writing
 * (_starpu_data_check_initialized, datawizard/user_interactions.c), and
 * partitions again for the next task on a child.  The window follows both
 * (begin_acquisition, then the task's own switch): without the first, it
 * took the child for still partitioned and deferred the next task on it,
 * whose merged task (which never switches plans) then accessed a child
 * StarPU had unpartitioned.  After each round of
 * run_chains_switched_between_rounds, an acquisition of the whole vector
 * that doubles it (round 1 by a callback). */
std::atomic<bool> acquisition_callback_done{false};
void double_whole_and_release(void *arg)
{
	PlannedVector &vector = *static_cast<PlannedVector *>(arg);
	for (long &value : vector.values)
		value *= 2;
	starpu_data_release(vector.whole);
	acquisition_callback_done = true;
}

/* Three rounds of a read-write chain of 4 on the first half of a vector
 * partitioned read-write, the worker kept busy while the program submits
 * the chain; after each round (number round), after_round makes StarPU
 * switch plans and may change the host's values.  StarPU partitions again
 * for the next chain's first task, which reaches it alone: from round 1
 * on, under the suite's STARPU_FUSING_HOLD, the other three run as one
 * merged task, and the results are the host's. */
void run_chains_switched_between_rounds(const char *test, const std::function<void(int, PlannedVector &, HostVector &)> &after_round)
{
	start(test, 1);
	const int kChain = 4;
	largest_chain_after_switch = 0;
	PlannedVector vector;
	vector.reg();
	HostVector host;
	starpu_data_partition_submit(vector.whole, 2, vector.halves);
	for (int round = 0; round < 3; round++) {
		struct starpu_task *blocker = occupy_a_worker();
		for (int i = 0; i < kChain; i++) {
			submit_vector_task(round == 0 ? &vector_add_one_cl : &vector_add_one_noting_group_cl, vector.halves[0]);
			host.add_one(0, kElements / 2);
		}
		unblock(blocker);
		after_round(round, vector, host);
	}
	starpu_task_wait_for_all();
	vector.unreg_and_check(host.values);
	if (native)
		assert_int_equal(largest_chain_after_switch.load(), 0);
	else if (getenv("STARPU_FUSING_HOLD"))
		assert_int_equal(largest_chain_after_switch.load(), kChain - 1);
	finish();
}

void api_plan_switched_for_an_acquisition_stays_followed(void **)
{
	run_chains_switched_between_rounds("api_plan_switched_for_an_acquisition_stays_followed",
					   [](int round, PlannedVector &vector, HostVector &host) {
						   if (round == 1) {
							   acquisition_callback_done = false;
							   assert_int_equal(starpu_data_acquire_cb(vector.whole, STARPU_RW,
												   double_whole_and_release, &vector),
									    0);
							   while (!acquisition_callback_done)
								   sched_yield();
						   } else {
							   assert_int_equal(starpu_data_acquire(vector.whole, STARPU_RW), 0);
							   double_whole_and_release(&vector);
						   }
						   host.times_two(0, kElements);
					   });
}

/* And one made for an attempt: starpu_data_acquire_try switches plans
 * before it tries (datawizard/user_interactions.c), whether it then
 * succeeds or not.  The program tries until the attempt succeeds, waiting
 * for its tasks in between. */
void api_plan_switched_for_an_attempt_stays_followed(void **)
{
	run_chains_switched_between_rounds("api_plan_switched_for_an_attempt_stays_followed",
					   [](int round, PlannedVector &vector, HostVector &host) {
						   /* starpu_data_acquire_try forwards to the other
						    * (user_interactions.c, 1.3), through this
						    * library's symbol. */
						   while ((round == 1 ? starpu_data_acquire_try(vector.whole, STARPU_RW)
								      : starpu_data_acquire_on_node_try(vector.whole, STARPU_MAIN_RAM,
													STARPU_RW)) != 0)
							   starpu_task_wait_for_all();
						   double_whole_and_release(&vector);
						   host.times_two(0, kElements);
					   });
}

/* And one made for an invalidation: starpu_data_invalidate_submit acquires
 * the data for writing (datawizard/interfaces/data_interface.c), so StarPU
 * unpartitions a partitioned handle the program invalidates, and
 * partitions it again for the next task on a child.  The program writes
 * the invalidated halves again, then a chain on the first half. */
void vector_set(void **buffers, void *)
{
	unsigned n;
	long *v = elements_of(buffers[0], n);
	for (unsigned i = 0; i < n; i++)
		v[i] = 100 + static_cast<long>(i);
}
struct starpu_codelet vector_set_cl = codelet(vector_set, "vector_set", {STARPU_W});

void api_plan_switched_for_an_invalidation_stays_followed(void **)
{
	start("api_plan_switched_for_an_invalidation_stays_followed", 1);
	const int kChain = 4;
	largest_chain_after_switch = 0;
	PlannedVector vector;
	vector.reg();
	HostVector host;
	starpu_data_partition_submit(vector.whole, 2, vector.halves);
	for (int round = 0; round < 3; round++) {
		struct starpu_task *blocker = occupy_a_worker();
		for (int half = 0; half < 2; half++) {
			submit_vector_task(&vector_set_cl, vector.halves[half]);
			for (unsigned i = 0; i < kElements / 2; i++)
				host.values[half * (kElements / 2) + i] = 100 + static_cast<long>(i);
		}
		for (int i = 0; i < kChain; i++) {
			submit_vector_task(round == 0 ? &vector_add_one_cl : &vector_add_one_noting_group_cl, vector.halves[0]);
			host.add_one(0, kElements / 2);
		}
		unblock(blocker);
		if (round < 2)
			starpu_data_invalidate_submit(vector.whole);
	}
	/* The whole, read after the last round: StarPU unpartitions it for
	 * the task, which must find it holding the halves' values. */
	Variable total;
	total.reg(0);
	submit_vector_task(&vector_sum_into_cl, vector.whole, total.handle);
	starpu_task_wait_for_all();
	starpu_data_unregister(total.handle);
	assert_int_equal(total.value, host.sum(0, kElements));
	vector.unreg_and_check(host.values);
	if (native)
		assert_int_equal(largest_chain_after_switch.load(), 0);
	finish();
}

/* And one made for a prefetch: starpu_data_prefetch_on_node and the other
 * fetches switch plans as a read does (_starpu_prefetch_data_on_node_with_mode,
 * datawizard/user_interactions.c), so StarPU unpartitions the vector
 * partitioned read-write, and partitions it again for the next chain.
 * Asynchronous prefetches only, and on StarPU 1.3 only: a fetch does not
 * wait for the unpartition StarPU submits for it, so StarPU alone asserts
 * that the whole has no valid copy for a synchronous fetch on 1.3.10, and
 * for these prefetches too on 1.4.12 (datawizard/coherency.c, native-lws
 * and lws-when-busy aborted); 1.3.10 runs them (15 of 15 native runs). */
void api_plan_switched_for_a_fetch_stays_followed(void **)
{
#if STARPU_MAJOR_VERSION == 1 && STARPU_MINOR_VERSION >= 4
	skip();
#endif
	run_chains_switched_between_rounds("api_plan_switched_for_a_fetch_stays_followed",
					   [](int round, PlannedVector &vector, HostVector &) {
						   if (round == 1)
							   assert_int_equal(starpu_data_idle_prefetch_on_node(vector.whole, STARPU_MAIN_RAM, 1), 0);
						   else
							   assert_int_equal(starpu_data_prefetch_on_node(vector.whole, STARPU_MAIN_RAM, 1), 0);
					   });
}

/* task->interfaces, which StarPU fills at submission (home interfaces) and
 * when the task runs (the interfaces its function gets), and which
 * performance models read (StarPU's examples/mlr: its parameters function
 * reads task->interfaces[0]; it crashed under fusing, 1.4, when the window
 * asked the model about a task StarPU had not filled).  Here a cost function
 * and the codelet read them: a cost function never meets an unfilled
 * interface (16 did before), and a running task's interfaces are the
 * buffers it got (on one memory node, its home interfaces are). */
std::atomic<int> unfilled_interfaces_seen{0};
std::atomic<int> interfaces_other_than_buffers{0};
double cost_reading_interfaces(struct starpu_task *task, unsigned)
{
	if (!task->interfaces[0])
		unfilled_interfaces_seen++;
	return 5.0; /* µs: small enough to be deferred */
}
void add_one_checking_interfaces(void **buffers, void *)
{
	if (starpu_task_get_current()->interfaces[0] != buffers[0])
		interfaces_other_than_buffers++;
	value_of(buffers[0]) += 1;
}
struct starpu_perfmodel interfaces_model = make_cost_model(cost_reading_interfaces, "api_interfaces_model");
struct starpu_codelet add_one_checking_interfaces_cl = [] {
	struct starpu_codelet cl = codelet(add_one_checking_interfaces, 1, "add_one_checking_interfaces");
	cl.model = &interfaces_model;
	return cl;
}();

void api_models_and_members_see_task_interfaces(void **)
{
	start("api_models_and_members_see_task_interfaces", 1);
	unfilled_interfaces_seen = interfaces_other_than_buffers = 0;
	const int kTasks = 8;
	Variable values[kTasks];
	for (Variable &value : values)
		value.reg(10);
	/* The first task of the codelet reaches StarPU, which loads its model;
	 * the others may be deferred. */
	assert_int_equal(submit_on(&add_one_checking_interfaces_cl, values[0].handle), 0);
	starpu_task_wait_for_all();
	struct starpu_task *blocker = occupy_a_worker();
	for (int round = 0; round < 2; round++)
		for (Variable &value : values)
			assert_int_equal(submit_on(&add_one_checking_interfaces_cl, value.handle), 0);
	unblock(blocker);
	starpu_task_wait_for_all();
	for (int i = 0; i < kTasks; i++) {
		starpu_data_unregister(values[i].handle);
		assert_int_equal(values[i].value, i == 0 ? 13 : 12);
	}
	assert_int_equal(unfilled_interfaces_seen.load(), 0);
	assert_int_equal(interfaces_other_than_buffers.load(), 0);
	finish();
}

/* A codelet with a batched implementation is grouped only with its own
 * tasks (kernel groups, doc/design.md section 12); a task consuming one of
 * their outputs (a bias added to a convolution's output) has no chain to
 * continue in that group and shares a group with the other consumers, as
 * on new data.  Before, each consumer opened a group of its own (largest
 * consumer group 1, not 4). */
/* Gives cl the batched implementation function (starpu_fusing.h). */
void register_batched(struct starpu_codelet *cl, starpu_fusing_batched_cpu_func_t function)
{
	struct starpu_fusing_batched_implementation batched = {};
	batched.size = sizeof(batched);
	batched.cpu_func = function;
	assert_int_equal(starpu_fusing_register_batched(cl, &batched), 0);
}

std::atomic<unsigned> largest_consumer_group{0};
void produce_batch(unsigned ntasks, void **task_buffers[], void *[], void *)
{
	for (unsigned t = 0; t < ntasks; t++)
		value_of(task_buffers[t][0]) = 5;
}
void produce_one(void **buffers, void *)
{
	value_of(buffers[0]) = 5;
}
void consume(void **buffers, void *)
{
	value_of(buffers[0]) += 1;
	note_group_size(largest_consumer_group);
}
struct starpu_codelet produce_cl = codelet(produce_one, "produce", {STARPU_W});
struct starpu_codelet consume_cl = codelet(consume, 1, "consume");

void api_consumers_of_a_kernel_group_share_groups(void **)
{
	start("api_consumers_of_a_kernel_group_share_groups", 1);
	largest_consumer_group = 0;
	register_batched(&produce_cl, produce_batch);
	const int kOutputs = 4;
	Variable outputs[kOutputs];
	for (Variable &output : outputs)
		output.reg(0);
	struct starpu_task *blocker = occupy_a_worker();
	for (Variable &output : outputs) {
		assert_int_equal(submit_on(&produce_cl, output.handle), 0);
		assert_int_equal(submit_on(&consume_cl, output.handle), 0);
	}
	unblock(blocker);
	starpu_task_wait_for_all();
	for (Variable &output : outputs) {
		starpu_data_unregister(output.handle);
		assert_int_equal(output.value, 6);
	}
	assert_int_equal(starpu_fusing_unregister_batched(&produce_cl), 0);
	if (native)
		assert_int_equal(largest_consumer_group.load(), 0);
	else if (getenv("STARPU_FUSING_HOLD") && strcmp(getenv("STARPU_FUSING_MODE"), "ready") != 0)
		assert_int_equal(largest_consumer_group.load(), kOutputs);
	finish();
}

/* A worker waits: a task whose codelet has a batched implementation runs
 * through it as a batch of one, not through the codelet's own function (the
 * batched kernels' gain is per member: a conv2d at 600 kpx took ~8 ms alone,
 * ~1.4 ms batched).  Each task is submitted while the worker is idle. */
std::atomic<long> produced_alone{0}, produced_in_batches{0};
void produce_seven_alone(void **buffers, void *)
{
	produced_alone++;
	value_of(buffers[0]) = 7;
}
void produce_seven_in_batch(unsigned ntasks, void **task_buffers[], void *[], void *)
{
	produced_in_batches += ntasks;
	for (unsigned t = 0; t < ntasks; t++)
		value_of(task_buffers[t][0]) = 7;
}
struct starpu_codelet produce_seven_cl = codelet(produce_seven_alone, "produce_seven", {STARPU_W});

void api_idle_worker_runs_the_batched_implementation(void **)
{
	start("api_idle_worker_runs_the_batched_implementation", 1);
	produced_alone = produced_in_batches = 0;
	register_batched(&produce_seven_cl, produce_seven_in_batch);
	const int kTasks = 5;
	Variable outputs[kTasks];
	for (Variable &output : outputs) {
		output.reg(0);
		assert_int_equal(submit_on(&produce_seven_cl, output.handle), 0);
		starpu_task_wait_for_all();
	}
	for (Variable &output : outputs) {
		starpu_data_unregister(output.handle);
		assert_int_equal(output.value, 7);
	}
	assert_int_equal(starpu_fusing_unregister_batched(&produce_seven_cl), 0);
	assert_int_equal(produced_alone.load(), native ? kTasks : 0);
	assert_int_equal(produced_in_batches.load(), native ? 0 : kTasks);
	finish();
}

/* A chain of in-place tasks of a codelet with a batched implementation: the
 * implementation may read every task's input before writing any output (as
 * an im2col and a matrix product do), so the tasks it gets together must be
 * independent; a kernel group holding the whole chain computed x * 2 for
 * three doublings of x.  The codelet's first task is measured alone, so that
 * the chain is deferred in every hold mode. */
void double_in_place(void **buffers, void *)
{
	value_of(buffers[0]) *= 2;
}
void double_in_place_batch(unsigned ntasks, void **task_buffers[], void *[], void *)
{
	std::vector<long> inputs(ntasks);
	for (unsigned t = 0; t < ntasks; t++)
		inputs[t] = value_of(task_buffers[t][0]);
	for (unsigned t = 0; t < ntasks; t++)
		value_of(task_buffers[t][0]) = 2 * inputs[t];
}
struct starpu_codelet double_in_place_cl = codelet(double_in_place, 1, "double_in_place");

void api_kernel_group_takes_no_dependent_task(void **)
{
	start("api_kernel_group_takes_no_dependent_task", 1);
	register_batched(&double_in_place_cl, double_in_place_batch);
	Variable warm_up, x;
	warm_up.reg(1);
	x.reg(1);
	assert_int_equal(submit_on(&double_in_place_cl, warm_up.handle), 0);
	starpu_task_wait_for_all();
	for (int doubling = 0; doubling < 3; doubling++)
		assert_int_equal(submit_on(&double_in_place_cl, x.handle), 0);
	starpu_task_wait_for_all();
	starpu_data_unregister(warm_up.handle);
	starpu_data_unregister(x.handle);
	assert_int_equal(starpu_fusing_unregister_batched(&double_in_place_cl), 0);
	assert_int_equal(x.value, 8);
	finish();
}

/* A light task consuming a kernel group member's output (a bias added to a
 * convolution's output), both codelets with a batched implementation, runs
 * in the producer's merged task, in a later phase (doc/design.md section 12,
 * kernel groups): one merged task and one access per output instead of two.
 * Before, each consumer went to a group of its own codelet, a second merged
 * task per group.  The batched calls note the StarPU task they run in. */
const int kProducedPairs = 8;
Variable produced_pairs[kProducedPairs];
struct starpu_task *producing_task[kProducedPairs], *consuming_task[kProducedPairs];
int pair_of(void *buffer)
{
	for (int i = 0; i < kProducedPairs; i++)
		if (&value_of(buffer) == &produced_pairs[i].value)
			return i;
	return -1;
}
void produce_five_batch(unsigned ntasks, void **task_buffers[], void *[], void *)
{
	for (unsigned t = 0; t < ntasks; t++) {
		value_of(task_buffers[t][0]) = 5;
		if (int i = pair_of(task_buffers[t][0]); i >= 0)
			producing_task[i] = starpu_task_get_current();
	}
}
void add_one_batch(unsigned ntasks, void **task_buffers[], void *[], void *)
{
	for (unsigned t = 0; t < ntasks; t++) {
		value_of(task_buffers[t][0]) += 1;
		if (int i = pair_of(task_buffers[t][0]); i >= 0)
			consuming_task[i] = starpu_task_get_current();
	}
}
double heavier_cost(struct starpu_task *, unsigned) { return 20.0; }
double lighter_cost(struct starpu_task *, unsigned) { return 2.0; }
struct starpu_perfmodel heavier_model = make_cost_model(heavier_cost, "api_heavier_model");
struct starpu_perfmodel lighter_model = make_cost_model(lighter_cost, "api_lighter_model");
struct starpu_codelet heavy_producer_cl = make_test_codelet(produce_one, "heavy_producer", {STARPU_W}, &heavier_model);
struct starpu_codelet light_consumer_cl = make_test_codelet(add_one, "light_consumer", {STARPU_RW}, &lighter_model);

/* Runs kProducedPairs producer and consumer pairs while the one worker is
 * busy; returns how many consumers ran in their producer's StarPU task. */
int consumers_in_their_producers_task(struct starpu_codelet *consumer_cl)
{
	register_batched(&heavy_producer_cl, produce_five_batch);
	register_batched(consumer_cl, add_one_batch);
	/* StarPU loads a codelet's model with its first task (never deferred). */
	Variable warm_up;
	warm_up.reg(0);
	assert_int_equal(submit_on(&heavy_producer_cl, warm_up.handle), 0);
	assert_int_equal(submit_on(consumer_cl, warm_up.handle), 0);
	starpu_task_wait_for_all();
	for (Variable &pair : produced_pairs)
		pair.reg(0);
	struct starpu_task *blocker = occupy_a_worker();
	for (Variable &pair : produced_pairs) {
		assert_int_equal(submit_on(&heavy_producer_cl, pair.handle), 0);
		assert_int_equal(submit_on(consumer_cl, pair.handle), 0);
	}
	unblock(blocker);
	starpu_task_wait_for_all();
	starpu_data_unregister(warm_up.handle);
	for (Variable &pair : produced_pairs)
		starpu_data_unregister(pair.handle);
	assert_int_equal(starpu_fusing_unregister_batched(&heavy_producer_cl), 0);
	assert_int_equal(starpu_fusing_unregister_batched(consumer_cl), 0);
	int together = 0;
	for (int i = 0; i < kProducedPairs; i++) {
		assert_int_equal(produced_pairs[i].value, 6);
		together += consuming_task[i] == producing_task[i];
	}
	return together;
}

void api_light_consumer_runs_in_its_producers_merged_task(void **)
{
	start("api_light_consumer_runs_in_its_producers_merged_task", 1);
	const int together = consumers_in_their_producers_task(&light_consumer_cl);
	if (!native && strcmp(getenv("STARPU_FUSING_MODE"), "ready") != 0)
		assert_int_equal(together, kProducedPairs);
	finish();
}

/* A consumer as long as its producer (the next step of a stencil) joins the
 * producer's group only while that group is small (unless
 * STARPU_FUSING_HOLD=always): its later ones run apart. */
struct starpu_codelet heavy_consumer_cl = make_test_codelet(add_one, "heavy_consumer", {STARPU_RW}, &heavier_model);

void api_heavy_consumer_runs_apart_from_its_producer(void **)
{
	start("api_heavy_consumer_runs_apart_from_its_producer", 1);
	const int together = consumers_in_their_producers_task(&heavy_consumer_cl);
	if (!native && strcmp(getenv("STARPU_FUSING_MODE"), "ready") != 0 && !getenv("STARPU_FUSING_HOLD"))
		assert_true(together < kProducedPairs);
	finish();
}

/* With the only worker busy and the program making no StarPU call, the
 * window hands a deferred task over STARPU_FUSING_MAX_DELAY after its group
 * opened, by itself: the blocker occupying the worker waits for the task's
 * prologue, which StarPU runs when it gets the merged task.  The second
 * round defers its task right after the first one's hand-over, while the
 * closer may still be watching the window without being woken for it
 * (SubmissionWindow::close_periodically); a closer that neither watched
 * nor was woken would leave the program spinning until the watchdog. */
void release_the_blocker(void *)
{
	release_blocker = true;
}

void api_window_hands_over_after_max_delay(void **)
{
	setenv("STARPU_FUSING_MAX_DELAY", "2ms", 1);
	start("api_window_hands_over_after_max_delay", 1);
	/* StarPU loads the codelet's model with its first task (never deferred). */
	Variable warm_up;
	warm_up.reg(0);
	assert_int_equal(submit_on(&heavy_producer_cl, warm_up.handle), 0);
	starpu_task_wait_for_all();
	Variable values[2];
	for (Variable &value : values) {
		value.reg(0);
		struct starpu_task *blocker = occupy_a_worker();
		struct starpu_task *task = starpu_task_create();
		task->cl = &heavy_producer_cl;
		task->handles[0] = value.handle;
		task->prologue_callback_func = release_the_blocker;
		assert_int_equal(starpu_task_submit(task), 0);
		while (!release_blocker)
			sched_yield();
		assert_int_equal(starpu_task_wait(blocker), 0);
	}
	starpu_task_wait_for_all();
	starpu_data_unregister(warm_up.handle);
	for (Variable &value : values) {
		starpu_data_unregister(value.handle);
		assert_int_equal(value.value, 5);
	}
	finish();
	setenv("STARPU_FUSING_MAX_DELAY", "10s", 1);
}

/* Deferred tasks that StarPU would destroy are freed by the program's thread
 * (submission/retired_members.h): they must not outlive what the program
 * could see.  Every task carries a cl_arg StarPU frees with it
 * (cl_arg_free).  They all end after the program's last submission (the
 * only worker is held meanwhile): at most RetiredMembers::kMostWaiting of
 * them may still be allocated once StarPU counts none, and none once a wait
 * for all tasks returns.  Measured as the heap in use (mallinfo2; zero
 * under ASan and valgrind, whose allocators it does not see). */
const int kRetiredTasks = 12000;
const std::size_t kRetiredArgBytes = 4096;
std::atomic<unsigned> largest_retired_group{0};
void add_one_to_retire(void **buffers, void *)
{
	value_of(buffers[0]) += 1;
	note_group_size(largest_retired_group);
}
struct starpu_codelet add_one_to_retire_cl = codelet(add_one_to_retire, 1, "add_one_to_retire");

double heap_in_use_mb()
{
	const struct mallinfo2 info = mallinfo2();
	return double(info.uordblks + info.hblkhd) / (1024.0 * 1024.0);
}

void api_ended_members_are_freed_by_the_next_wait(void **)
{
	start("api_ended_members_are_freed_by_the_next_wait", 1);
	largest_retired_group = 0;
	Variable values[16];
	for (Variable &value : values)
		value.reg(0);
	assert_int_equal(submit_on(&add_one_to_retire_cl, values[0].handle), 0);
	starpu_task_wait_for_all();
	const double before_mb = heap_in_use_mb();
	struct starpu_task *blocker = occupy_a_worker();
	for (int t = 0; t < kRetiredTasks; t++) {
		struct starpu_task *task = starpu_task_create();
		task->cl = &add_one_to_retire_cl;
		task->handles[0] = values[t % 16].handle;
		task->cl_arg = std::calloc(1, kRetiredArgBytes);
		task->cl_arg_size = kRetiredArgBytes;
		task->cl_arg_free = 1;
		assert_int_equal(starpu_task_submit(task), 0);
	}
	const double all_args_mb = double(kRetiredTasks) * double(kRetiredArgBytes) / (1024.0 * 1024.0);
	release_blocker = true;
	while (starpu_task_nsubmitted() != 0)
		sched_yield();
	const double ended_mb = heap_in_use_mb() - before_mb;
	starpu_task_wait_for_all();
	const double waited_mb = heap_in_use_mb() - before_mb;
	assert_int_equal(starpu_task_wait(blocker), 0);
	std::fprintf(stderr, "tasks' arguments %.1f MiB; heap grown by %.1f MiB once all ended, %.1f after the wait\n",
		     all_args_mb, ended_mb, waited_mb);
	assert_true(ended_mb < 0.6 * all_args_mb);
	assert_true(waited_mb < 0.1 * all_args_mb);
	long total = 1;
	for (Variable &value : values) {
		starpu_data_unregister(value.handle);
		total += value.value;
	}
	assert_int_equal(total, kRetiredTasks + 2);
	if (!native && strcmp(getenv("STARPU_FUSING_MODE"), "ready") != 0)
		assert_true(largest_retired_group.load() > 1);
	finish();
}

/* A generation of tasks that each depend on a group still in the window (the
 * next step of a stencil: each task writes a cell the previous step read)
 * is spread over one group per CPU worker (doc/design.md section 12,
 * placement).  Before, each such task found the previous step's group as
 * its chain, could not join it (too much predicted work for a task that
 * depends on it) and opened a group of its own: groups of one.  Hold when
 * busy only: under STARPU_FUSING_HOLD=always a task joins its chain's group
 * whatever it holds. */
const unsigned kStencilWidth = 8;
std::atomic<unsigned> largest_step_group[3];
std::atomic<unsigned> blockers_running{0};
void counted_block(void **, void *)
{
	blockers_running++;
	while (!release_blocker)
		sched_yield();
}
struct starpu_codelet counted_blocker_cl = codelet(counted_block, 0, "counted_blocker");
/* Both CPU workers busy, one blocker bound to each (a base policy could
 * queue two on one worker), until release(). */
struct WorkersOccupied {
	struct starpu_task *blockers[2];
	WorkersOccupied()
	{
		release_blocker = false;
		blockers_running = 0;
		for (int worker = 0; worker < 2; worker++) {
			blockers[worker] = starpu_task_create();
			blockers[worker]->cl = &counted_blocker_cl;
			blockers[worker]->detach = 0;
			blockers[worker]->execute_on_a_specific_worker = 1;
			blockers[worker]->workerid = worker;
			assert_int_equal(starpu_task_submit(blockers[worker]), 0);
		}
		while (blockers_running < 2)
			sched_yield();
	}
	void release()
	{
		release_blocker = true;
		for (struct starpu_task *blocker : blockers)
			assert_int_equal(starpu_task_wait(blocker), 0);
	}
};
/* STARPU_FUSING_HOLD=always: the configurations without -when-busy. */
bool hold_always()
{
	const char *hold = getenv("STARPU_FUSING_HOLD");
	return hold && strcmp(hold, "always") == 0;
}

/* Each step task lasts at least 10 us, so that the window's measure of the
 * codelet puts 8 of them above the 50 us a dependent task may join. */
void stencil_step(void **buffers, void *cl_arg)
{
	spin_for_us(10.0);
	unsigned t;
	starpu_codelet_unpack_args(cl_arg, &t);
	value_of(buffers[0]) = value_of(buffers[1]) + value_of(buffers[2]) + value_of(buffers[3]);
	note_group_size(largest_step_group[t]);
}
struct starpu_codelet stencil_step_cl = codelet(stencil_step, "stencil_step", {STARPU_W, STARPU_R, STARPU_R, STARPU_R});

void api_stencil_steps_spread_over_workers(void **)
{
	start("api_stencil_steps_spread_over_workers", 2);
	Variable cells[2][kStencilWidth];
	for (unsigned row = 0; row < 2; row++)
		for (unsigned i = 0; i < kStencilWidth; i++)
			cells[row][i].reg(row == 0 ? i : 0);
	auto step = [&](unsigned t, unsigned i) {
		Variable *in = cells[t % 2], *out = cells[(t + 1) % 2];
		return starpu_task_insert(&stencil_step_cl, STARPU_W, out[i].handle, STARPU_R, in[(i + kStencilWidth - 1) % kStencilWidth].handle,
					  STARPU_R, in[i].handle, STARPU_R, in[(i + 1) % kStencilWidth].handle, STARPU_VALUE, &t,
					  sizeof(t), 0);
	};
	/* The codelet's first task goes to StarPU, which measures it: the
	 * window defers only tasks it can predict. */
	assert_int_equal(step(0, 0), 0);
	starpu_task_wait_for_all();
	for (std::atomic<unsigned> &largest : largest_step_group)
		largest = 0;
	/* Both workers busy: nothing hands the groups over before the
	 * blockers end. */
	WorkersOccupied blockers;
	for (unsigned t = 1; t <= 2; t++)
		for (unsigned i = 0; i < kStencilWidth; i++)
			assert_int_equal(step(t, i), 0);
	blockers.release();
	starpu_task_wait_for_all();
	long expected[2][kStencilWidth];
	for (unsigned i = 0; i < kStencilWidth; i++) {
		expected[0][i] = i;
		expected[1][i] = 0;
	}
	for (unsigned t = 0; t <= 2; t++)
		for (unsigned i = 0; i < kStencilWidth; i++) {
			const long *in = expected[t % 2];
			if (t > 0 || i == 0)
				expected[(t + 1) % 2][i] = in[(i + kStencilWidth - 1) % kStencilWidth] + in[i] + in[(i + 1) % kStencilWidth];
		}
	/* Step 0 wrote only cell 0 (the model's first task). */
	for (unsigned row = 0; row < 2; row++)
		for (unsigned i = 0; i < kStencilWidth; i++) {
			starpu_data_unregister(cells[row][i].handle);
			assert_int_equal(cells[row][i].value, expected[row][i]);
		}
	finish();
	if (native) {
		assert_int_equal(largest_step_group[2].load(), 0);
	} else if (strcmp(getenv("STARPU_FUSING_MODE"), "ready") != 0) {
		if (hold_always()) {
			/* Every task joins a group while a worker waits too,
			 * dependent ones included (window.cpp, place): both
			 * steps in one group. */
			assert_int_equal(largest_step_group[1].load(), 2 * kStencilWidth);
			assert_int_equal(largest_step_group[2].load(), 2 * kStencilWidth);
		} else {
			/* Step 1 reads data no open group has: one group of 8
			 * (80 us or more); step 2 depends on it, may not join
			 * it (a group of dependent tasks worth running alone),
			 * and is spread over 2 groups of 4, one per worker. */
			assert_int_equal(largest_step_group[1].load(), kStencilWidth);
			assert_int_equal(largest_step_group[2].load(), kStencilWidth / 2);
		}
	}
}

/* Tasks whose codelet StarPU's model predicts are deferred like others.
 * Asking the model creates the task's job in StarPU (its expected-length
 * functions call _starpu_get_job_associated_to_task), which the window took
 * for a task StarPU already knew: none was deferred, and each was held as
 * one that may wait for the program.  A chain of read-write tasks is merged
 * only at submission (ready-time batches see one ready task at a time). */
std::atomic<unsigned> largest_modelled_group{0};
void add_one_noting_group(void **buffers, void *)
{
	value_of(buffers[0]) += 1;
	note_group_size(largest_modelled_group);
}
double ten_us(struct starpu_task *, unsigned)
{
	return 10.0;
}
struct starpu_perfmodel ten_us_model = make_cost_model(ten_us, "api_ten_us");
struct starpu_codelet modelled_add_one_cl = [] {
	struct starpu_codelet cl = codelet(add_one_noting_group, 1, "modelled_add_one");
	cl.model = &ten_us_model;
	return cl;
}();

void api_tasks_predicted_by_a_model_are_deferred(void **)
{
	/* Hold when busy, a chain joins its group only while it holds under
	 * 50 us: the test needs hold always. */
	const char *hold = getenv("STARPU_FUSING_HOLD");
	if (!native && !(hold && strcmp(hold, "always") == 0))
		skip();
	start("api_tasks_predicted_by_a_model_are_deferred", 1);
	first.reg(0);
	/* StarPU loads the model with the codelet's first task. */
	assert_int_equal(submit_on(&modelled_add_one_cl, first.handle), 0);
	starpu_task_wait_for_all();
	largest_modelled_group = 0;
	const unsigned kChain = 8;
	struct starpu_task *blocker = occupy_a_worker();
	for (unsigned i = 0; i < kChain; i++)
		assert_int_equal(submit_on(&modelled_add_one_cl, first.handle), 0);
	unblock(blocker);
	starpu_task_wait_for_all();
	starpu_data_unregister(first.handle);
	finish();
	assert_int_equal(first.value, kChain + 1);
	if (native)
		assert_int_equal(largest_modelled_group.load(), 0);
	else if (strcmp(getenv("STARPU_FUSING_MODE"), "ready") != 0)
		assert_int_equal(largest_modelled_group.load(), kChain);
}

/* Reductions that follow a group still in the window share the newest group
 * reducing their handle: they may join no earlier one, and spreading them
 * over the workers as other tasks (api_stencil_steps_spread_over_workers)
 * opened a group per task.  Hold when busy, as that test. */
std::atomic<unsigned> largest_following_reduction_group{0};
void write_five_slowly(void **buffers, void *)
{
	spin_for_us(10.0);
	value_of(buffers[0]) = 5;
}
void add_first_into_second(void **buffers, void *)
{
	value_of(buffers[1]) += value_of(buffers[0]);
	note_group_size(largest_following_reduction_group);
}
struct starpu_codelet write_five_cl = codelet(write_five_slowly, "write_five", {STARPU_W});
struct starpu_codelet reduce_read_value_cl = codelet(add_first_into_second, "reduce_read_value", {STARPU_R, STARPU_REDUX});

void api_reductions_following_an_open_group_share_one(void **)
{
	start("api_reductions_following_an_open_group_share_one", 2);
	Variable sum;
	sum.reg(0);
	starpu_data_set_reduction_methods(sum.handle, &add_second_into_first_cl, &set_to_zero_cl);
	const unsigned kValues = 8;
	Variable values[kValues];
	for (Variable &value : values)
		value.reg(0);
	/* Each codelet's first task goes to StarPU, which measures it. */
	assert_int_equal(submit_on(&write_five_cl, values[0].handle), 0);
	struct starpu_task *first_reduction = starpu_task_create();
	first_reduction->cl = &reduce_read_value_cl;
	first_reduction->handles[0] = values[0].handle;
	first_reduction->handles[1] = sum.handle;
	assert_int_equal(starpu_task_submit(first_reduction), 0);
	starpu_task_wait_for_all();
	largest_following_reduction_group = 0;
	WorkersOccupied blockers;
	/* The writers share a group of 80 us or more, which the reductions
	 * depend on and so may not join. */
	for (Variable &value : values)
		assert_int_equal(submit_on(&write_five_cl, value.handle), 0);
	for (Variable &value : values) {
		struct starpu_task *reduction = starpu_task_create();
		reduction->cl = &reduce_read_value_cl;
		reduction->handles[0] = value.handle;
		reduction->handles[1] = sum.handle;
		assert_int_equal(starpu_task_submit(reduction), 0);
	}
	blockers.release();
	starpu_task_wait_for_all();
	for (Variable &value : values)
		starpu_data_unregister(value.handle);
	starpu_data_unregister(sum.handle);
	finish();
	assert_int_equal(sum.value, 5 * (kValues + 1));
	if (native)
		assert_int_equal(largest_following_reduction_group.load(), 0);
	else if (strcmp(getenv("STARPU_FUSING_MODE"), "ready") != 0)
		/* With STARPU_FUSING_HOLD=always, the reductions join the
		 * writers' group; otherwise they share one group after it. */
		assert_int_equal(largest_following_reduction_group.load(), hold_always() ? 2 * kValues : kValues);
}

/* The idle rests the policy counted so far; false when it rests no worker
 * (StarPU's base alone, or STARPU_FUSING_IDLE_WORKERS=poll). */
bool idle_statistics(struct starpu_fusing_idle_statistics &statistics)
{
	statistics = {};
	statistics.size = sizeof(statistics);
	const int ret = starpu_fusing_get_idle_statistics(&statistics);
	if (ret != 0)
		assert_int_equal(ret, -ENOENT);
	return ret == 0;
}

/* While the program has nothing for them, the two workers rest on StarPU's
 * condition instead of polling (STARPU_FUSING_IDLE_WORKERS=sleep, the
 * default; sched/idle_workers.h): over 200 ms in which the program's thread
 * sleeps, rests begin (each worker rests again whenever the safety net ends
 * one) and none stalls.  A StarPU built with blocking drivers (its
 * starpu_config.h without STARPU_NON_BLOCKING_DRIVERS) sleeps by itself:
 * the policy must say so and rest no worker.  With
 * STARPU_FUSING_IDLE_WORKERS=poll, or StarPU's base alone, no worker rests
 * through the policy: its statistics say so. */
void api_idle_workers_leave_their_cores(void **)
{
	start("api_idle_workers_leave_their_cores", 2);
	const char *idle_setting = getenv("STARPU_FUSING_IDLE_WORKERS");
	const bool rests_expected = !native && (!idle_setting || strcmp(idle_setting, "sleep") == 0);
	starpu_task_wait_for_all();
	struct starpu_fusing_idle_statistics before, after;
	assert_int_equal(idle_statistics(before), rests_expected);
	struct timespec idle = {0, 200 * 1000 * 1000};
	while (nanosleep(&idle, &idle) != 0) {
	}
	assert_int_equal(idle_statistics(after), rests_expected);
	if (rests_expected) {
		std::printf("rests during 0.200 s of idleness: %llu (%llu ended by the safety net)\n", after.rests - before.rests,
			    after.safety_net - before.safety_net);
#ifdef STARPU_NON_BLOCKING_DRIVERS
		const bool drivers_block = false;
#else
		const bool drivers_block = true;
#endif
		assert_int_equal(after.drivers_sleep, drivers_block);
		if (drivers_block)
			assert_int_equal(after.rests, 0);
		else
			assert_true(after.rests - before.rests >= 2);
		assert_int_equal(after.stalled, 0);
	}
	finish();
}

/* A flush hands over a group whose member's prologue, run by StarPU inside
 * that submission, submits a task the window defers: it opens the group
 * the unpartition waiting at the end of the window was placed before.  The
 * task that made the window flush (tagged: never deferred) reads the whole
 * vector, and must find it unpartitioned, as the program left it: StarPU
 * would otherwise unpartition by itself, and then the program's
 * unpartition would find no partition (found by the API fuzzer, seed 419). */
void api_prologue_during_a_flush_keeps_partition_calls(void **)
{
	start("api_prologue_during_a_flush_keeps_partition_calls", 1);
	PlannedVector vector;
	vector.reg();
	HostVector host;
	ordered.reg(3);
	Variable total;
	total.reg(0);
	starpu_data_partition_submit(vector.whole, 2, vector.halves);
	starpu_task_wait_for_all(); /* the partition is done: the next task is ready at once */
	struct starpu_task *blocker = occupy_a_worker();
	struct starpu_task *task = starpu_task_create();
	task->cl = &vector_add_one_cl;
	task->handles[0] = vector.halves[0];
	task->prologue_callback_func = submit_add_one_to_ordered;
	assert_int_equal(starpu_task_submit(task), 0);
	host.add_one(0, kElements / 2);
	starpu_data_unpartition_submit(vector.whole, 2, vector.halves, STARPU_MAIN_RAM);
	struct starpu_task *reader = starpu_task_create();
	reader->cl = &vector_sum_into_cl;
	reader->handles[0] = vector.whole;
	reader->handles[1] = total.handle;
	reader->use_tag = 1;
	reader->tag_id = 4242;
	assert_int_equal(starpu_task_submit(reader), 0);
	unblock(blocker);
	starpu_task_wait_for_all();
	starpu_data_unregister(ordered.handle);
	starpu_data_unregister(total.handle);
	vector.unreg_and_check(host.values);
	assert_int_equal(total.value, host.sum(0, kElements));
	assert_int_equal(ordered.value, 4);
	finish();
}

/* No partition call at all: StarPU partitions and unpartitions by itself
 * for each task (automatic partitioning), which touches siblings the order
 * rule considers free.  The window stops deferring that tree; results are
 * the host's. */
void api_automatic_partitioning_keeps_results(void **)
{
	start("api_automatic_partitioning_keeps_results", 2);
	for (int run = 0; run < 20; run++) {
		PlannedVector vector;
		vector.reg();
		HostVector host;
		Variable total;
		total.reg(0);
		long expected_total = 0;
		const unsigned half = kElements / 2, quarter = kElements / 4;
		for (int round = 0; round < 3; round++) {
			submit_vector_task(&vector_add_one_cl, vector.halves[1]);
			submit_vector_task(&vector_double_cl, vector.quarters[1]);
			submit_vector_task(&vector_sum_into_cl, vector.halves[0], total.handle);
			submit_vector_task(&vector_add_one_cl, vector.whole);
			host.add_one(half, half);
			host.times_two(quarter, quarter);
			expected_total += host.sum(0, half);
			host.add_one(0, kElements);
		}
		starpu_task_wait_for_all();
		starpu_data_unregister(total.handle);
		vector.unreg_and_check(host.values);
		assert_int_equal(total.value, expected_total);
	}
	finish();
}

} // namespace

int main(int argc, char **argv)
{
	if (argc != 2) {
		std::fprintf(stderr, "usage: %s [native-]BASE[-when-busy][.api]\n", argv[0]);
		return 99;
	}
	configure_program_test(argv[1], ".api");
	tested_base = tested_policy_from_file(argv[1], ".api").base;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(api_callback_chain_during_wait_for_all),
		cmocka_unit_test(api_callback_chain_during_wait_for_n_submitted),
		cmocka_unit_test(api_callback_chain_at_shutdown),
		cmocka_unit_test(api_callback_inside_submit_keeps_program_order),
		cmocka_unit_test(api_prologue_of_a_task_submits),
		cmocka_unit_test(api_prologue_of_a_member_submits),
		cmocka_unit_test(api_acquire_while_holding_other_data),
		cmocka_unit_test(api_acquire_cb_releases_held_data),
		cmocka_unit_test(api_acquire_held_through_a_task),
		cmocka_unit_test(api_tag_notified_after_an_acquisition),
		cmocka_unit_test(api_dependency_declared_while_paused),
		cmocka_unit_test(api_dependency_declared_behind_held_data),
		cmocka_unit_test(api_callback_declares_on_its_own_group),
		cmocka_unit_test(api_kept_task_resubmitted_from_its_callback),
		cmocka_unit_test(api_task_resubmitted_before_its_callback_ran),
		cmocka_unit_test(api_fault_tolerant_task_retried),
		cmocka_unit_test(api_task_init_reuses_an_address),
		cmocka_unit_test(api_current_data_node_in_a_member),
		cmocka_unit_test(api_member_adds_an_end_dependency_to_itself),
		cmocka_unit_test(api_member_declares_an_end_dependency_of_its_own),
		cmocka_unit_test(api_tasks_on_plan_children_are_deferred),
		cmocka_unit_test(api_partition_calls_keep_program_order),
		cmocka_unit_test(api_automatic_partitioning_keeps_results),
		cmocka_unit_test(api_prologue_during_a_flush_keeps_partition_calls),
		cmocka_unit_test(api_elided_plan_cleaned_before_its_tasks_ran),
		cmocka_unit_test(api_cleaning_a_plan_starpu_saw_waits_for_its_tasks),
		cmocka_unit_test(api_plan_switched_by_starpu_stays_followed),
		cmocka_unit_test(api_plan_switched_for_an_acquisition_stays_followed),
		cmocka_unit_test(api_plan_switched_for_an_attempt_stays_followed),
		cmocka_unit_test(api_plan_switched_for_an_invalidation_stays_followed),
		cmocka_unit_test(api_plan_switched_for_a_fetch_stays_followed),
		cmocka_unit_test(api_reductions_of_deferred_tasks_are_combined),
		cmocka_unit_test(api_models_and_members_see_task_interfaces),
		cmocka_unit_test(api_consumers_of_a_kernel_group_share_groups),
		cmocka_unit_test(api_idle_worker_runs_the_batched_implementation),
		cmocka_unit_test(api_kernel_group_takes_no_dependent_task),
		cmocka_unit_test(api_light_consumer_runs_in_its_producers_merged_task),
		cmocka_unit_test(api_heavy_consumer_runs_apart_from_its_producer),
		cmocka_unit_test(api_window_hands_over_after_max_delay),
		cmocka_unit_test(api_ended_members_are_freed_by_the_next_wait),
		cmocka_unit_test(api_stencil_steps_spread_over_workers),
		cmocka_unit_test(api_tasks_predicted_by_a_model_are_deferred),
		cmocka_unit_test(api_reductions_following_an_open_group_share_one),
		cmocka_unit_test(api_idle_workers_leave_their_cores),
	};
	if (const char *only = getenv("API_TEST"))
		cmocka_set_test_filter(only);
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
