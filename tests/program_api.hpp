/* What the tests of programs using StarPU's API share (test_program_api,
 * test_starpu_promises): one-variable codelets, a registered long, starting
 * StarPU under fusing or under the base alone ("native"), and a worker kept
 * busy until the test lets it go.
 *
 * Each program using these is a small StarPU program that is correct under
 * StarPU's own policies: run "native-BASE", its expectations are StarPU's;
 * under fusing it must meet the same ones. */
#ifndef STARPU_FUSING_TESTS_PROGRAM_API_HPP
#define STARPU_FUSING_TESTS_PROGRAM_API_HPP

#include "cmocka.hpp"
#include "policy_test.hpp"
#include "starpu_fusing.h"

#include <starpu.h>

#include <sched.h>

#include <atomic>
#include <initializer_list>
#include <string>

namespace program_api {

inline bool native = false; /* StarPU's base alone, no fusing */

inline long &value_of(void *buffer)
{
	return *reinterpret_cast<long *>(STARPU_VARIABLE_GET_PTR(buffer));
}

inline void add_one(void **buffers, void *)
{
	value_of(buffers[0]) += 1;
}

inline std::atomic<bool> release_blocker{false};
inline std::atomic<bool> blocker_running{false};
/* Spins until release_blocker (the test's thread sets it). */
inline void block(void **, void *)
{
	blocker_running = true;
	while (!release_blocker)
		sched_yield();
}

/* A CPU codelet of nbuffers buffers, each STARPU_RW. */
inline struct starpu_codelet codelet(void (*function)(void **, void *), int nbuffers, const char *name)
{
	struct starpu_codelet cl;
	starpu_codelet_init(&cl);
	cl.cpu_funcs[0] = function;
	cl.nbuffers = nbuffers;
	for (int b = 0; b < nbuffers; b++)
		cl.modes[b] = STARPU_RW;
	cl.name = name;
	return cl;
}

/* A codelet with one buffer per mode given. */
inline struct starpu_codelet codelet(void (*function)(void **, void *), const char *name,
				     std::initializer_list<enum starpu_data_access_mode> modes)
{
	struct starpu_codelet cl = codelet(function, static_cast<int>(modes.size()), name);
	int b = 0;
	for (enum starpu_data_access_mode mode : modes)
		cl.modes[b++] = mode;
	return cl;
}

/* Keeps the calling worker busy for us microseconds. */
inline void spin_for_us(double us)
{
	const double started_us = starpu_timing_now();
	while (starpu_timing_now() - started_us < us)
		;
}

inline struct starpu_codelet add_one_cl = codelet(add_one, 1, "add_one");
inline struct starpu_codelet blocker_cl = codelet(block, 0, "blocker");

struct Variable {
	long value = 0;
	starpu_data_handle_t handle = nullptr;
	void reg(long initial)
	{
		value = initial;
		starpu_variable_data_register(&handle, STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(&value), sizeof(value));
	}
};

/* Starts StarPU with ncpus CPU workers under fusing (or the base alone when
 * native), the watchdog armed with the test's name. */
inline void start(const char *test, unsigned ncpus)
{
	watchdog_arm(test, 60);
	setenv("STARPU_NCPU", std::to_string(ncpus).c_str(), 1);
	struct starpu_conf conf;
	starpu_conf_init(&conf);
	if (!native)
		conf.sched_policy = starpu_fusing_policy();
	assert_int_equal(starpu_init(&conf), 0);
}

inline void finish()
{
	starpu_shutdown();
	watchdog_disarm();
}

/* Occupies a worker until unblock(): while every worker is busy, nothing
 * makes the window hand its groups over before the program's next call. */
inline struct starpu_task *occupy_a_worker()
{
	release_blocker = blocker_running = false;
	struct starpu_task *blocker = starpu_task_create();
	blocker->cl = &blocker_cl;
	blocker->detach = 0; /* waited for: never deferred */
	assert_int_equal(starpu_task_submit(blocker), 0);
	while (!blocker_running)
		sched_yield();
	return blocker;
}

inline void unblock(struct starpu_task *blocker)
{
	release_blocker = true;
	assert_int_equal(starpu_task_wait(blocker), 0);
}

inline int submit_on(struct starpu_codelet *cl, starpu_data_handle_t handle, void (*callback)(void *) = nullptr,
		     void *callback_arg = nullptr)
{
	struct starpu_task *task = starpu_task_create();
	task->cl = cl;
	task->handles[0] = handle;
	task->callback_func = callback;
	task->callback_arg = callback_arg;
	return starpu_task_submit(task);
}

/* The program's main: argv[1] names the configuration, [native-]BASE[-when-busy][-poll][.extension];
 * under fusing, STARPU_FUSING_MODE is "both" unless set, and groups are
 * handed over by the program's calls and idle workers, not by a delay. */
inline void configure_program_test(const char *file, const char *extension)
{
	TestedPolicy tested = tested_policy_from_file(file, extension);
	const std::string native_prefix = "native-";
	if (tested.base.compare(0, native_prefix.size(), native_prefix) == 0) {
		native = true;
		setenv("STARPU_SCHED", tested.base.substr(native_prefix.size()).c_str(), 1);
	} else {
		configure_tested_policy(tested);
		if (!getenv("STARPU_FUSING_MODE"))
			setenv("STARPU_FUSING_MODE", "both", 1);
		setenv("STARPU_FUSING_MAX_DELAY", "10s", 1);
	}
}

} // namespace program_api

#endif
