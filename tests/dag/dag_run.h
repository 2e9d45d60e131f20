/* Running a generated program (dag_program.h) on StarPU and checking it
 * against its oracle.  StarPU must be initialised by the caller. */
#ifndef STARPU_FUSING_TESTS_DAG_RUN_H
#define STARPU_FUSING_TESTS_DAG_RUN_H

#include "tests/dag/dag_program.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace dag {

struct RunReport {
	std::vector<std::string> problems; /* empty: the run matched the oracle */
	long tasks_in_batches = 0;         /* bodies that ran inside a batch */
};

/* What a run's task bodies, callbacks and threads observe (shared with the
 * API fuzzer, api_run.h): counters per task are atomics, problems are
 * guarded by mutex. */
struct RunObservations {
	std::mutex mutex; /* guards problems */
	std::vector<std::string> problems;
	std::unique_ptr<std::atomic<int>[]> executions, callbacks, done;
	std::atomic<long> in_batches{0};

	/* Before a run of ntasks tasks. */
	void reset(std::size_t ntasks);
	/* Keeps the first 20. */
	void problem(const std::string &text);
	RunReport report();
};

/* Submits program as its steps say, waits for everything, and compares. */
RunReport run_and_check(const Program &program);

} // namespace dag

#endif
