/* Batches fit in limited memory (the memory cap, sched/engine.h).
 *
 * StarPU may keep less data in RAM than a program registers: with
 * STARPU_LIMIT_CPU_MEM and a disk memory node it evicts data out of core.
 * A batch needs all its members' data in RAM at once, so a batch larger
 * than the limit would wait for memory forever (StarPU 1.4's own
 * disk/mem_reclaim hung under fusing).  Here 2 MiB of data live under a
 * 1 MiB limit; every fusable task waits for a batch (STARPU_FUSING_HOLD=
 * always); the run must end, with the right values, and with batches.
 *
 * Usage: test_memory_cap BASE[.memory] (tests/policy_test.hpp). */
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem> /* before cmocka.h, whose macros its headers would meet */
#include <string>
#include <vector>

/* StarPU 1.3's starpu_disk.h lacks the extern "C" its other headers have. */
extern "C" {
#include <starpu_disk.h>
}
#include <starpu.h>

#include "starpu_fusing.h"
#include "tests/cmocka.hpp"
#include "tests/policy_test.hpp"

namespace {

constexpr unsigned handles_count = 32;
constexpr unsigned handle_bytes = 2 * 1024 * 1024 / handles_count;
constexpr unsigned increments = 256;

std::string disk_directory;
std::atomic<long> runs_in_batch{0};

void set_zero(void *buffers[], void *)
{
	*reinterpret_cast<unsigned *>(STARPU_VECTOR_GET_PTR(buffers[0])) = 0;
}

void increment(void *buffers[], void *)
{
	if (starpu_fusing_current_batch_size() > 0)
		runs_in_batch++;
	(*reinterpret_cast<unsigned *>(STARPU_VECTOR_GET_PTR(buffers[0])))++;
}

void read_value(void *buffers[], void *cl_arg)
{
	*static_cast<unsigned *>(cl_arg) = *reinterpret_cast<unsigned *>(STARPU_VECTOR_GET_PTR(buffers[0]));
}

struct starpu_codelet make(void (*function)(void **, void *), enum starpu_data_access_mode mode, const char *name)
{
	struct starpu_codelet cl;
	starpu_codelet_init(&cl);
	cl.cpu_funcs[0] = function;
	cl.nbuffers = 1;
	cl.modes[0] = mode;
	cl.name = name;
	return cl;
}

struct starpu_codelet zero_cl = make(set_zero, STARPU_W, "zero");
struct starpu_codelet increment_cl = make(increment, STARPU_RW, "increment");
struct starpu_codelet read_cl = make(read_value, STARPU_R, "read");

void memory_cap_batches_fit_under_a_memory_limit(void **)
{
	watchdog_arm("memory_cap_batches_fit_under_a_memory_limit", 120);
	struct starpu_conf conf;
	starpu_conf_init(&conf);
	conf.sched_policy = starpu_fusing_policy();
	assert_non_null(conf.sched_policy);
	assert_int_equal(starpu_init(&conf), 0);
	int disk = starpu_disk_register(&starpu_disk_unistd_ops, const_cast<char *>(disk_directory.c_str()), STARPU_DISK_SIZE_MIN);
	assert_true(disk >= 0);

	std::vector<starpu_data_handle_t> handles(handles_count);
	for (starpu_data_handle_t &handle : handles) {
		starpu_vector_data_register(&handle, -1, 0, handle_bytes, sizeof(char));
		assert_int_equal(starpu_task_insert(&zero_cl, STARPU_W, handle, 0), 0);
	}
	std::vector<unsigned> expected(handles_count, 0);
	unsigned seed = 1;
	for (unsigned i = 0; i < increments; i++) {
		seed = seed * 1103515245u + 12345u;
		unsigned j = (seed >> 16) % handles_count;
		expected[j]++;
		assert_int_equal(starpu_task_insert(&increment_cl, STARPU_RW, handles[j], 0), 0);
	}
	std::vector<unsigned> seen(handles_count, ~0u);
	for (unsigned j = 0; j < handles_count; j++) {
		assert_int_equal(starpu_task_insert(&read_cl, STARPU_R, handles[j], STARPU_CL_ARGS_NFREE, &seen[j], sizeof(unsigned), 0), 0);
		starpu_data_unregister(handles[j]);
	}
	starpu_shutdown();
	watchdog_disarm();
	for (unsigned j = 0; j < handles_count; j++)
		assert_int_equal(seen[j], expected[j]);
	assert_true(runs_in_batch.load() > 0);
}

} // namespace

int main(int argc, char **argv)
{
	if (argc != 2) {
		std::fprintf(stderr, "usage: %s BASE[.memory]\n", argv[0]);
		return 99;
	}
	configure_tested_policy(tested_policy_from_file(argv[1], ".memory"));
	setenv("STARPU_LIMIT_CPU_MEM", "1", 1); /* MiB */
	char directory[] = "/tmp/test_memory_cap-XXXXXX";
	if (!mkdtemp(directory))
		return 99;
	disk_directory = directory;
	const struct CMUnitTest tests[] = {cmocka_unit_test(memory_cap_batches_fit_under_a_memory_limit)};
	int failures = cmocka_run_group_tests(tests, nullptr, nullptr);
	std::error_code ignored;
	std::filesystem::remove_all(directory, ignored);
	return failures;
}
