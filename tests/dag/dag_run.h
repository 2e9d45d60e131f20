/* Running a generated program (dag_program.h) on StarPU and checking it
 * against its oracle.  StarPU must be initialised by the caller. */
#ifndef STARPU_FUSING_TESTS_DAG_RUN_H
#define STARPU_FUSING_TESTS_DAG_RUN_H

#include "tests/dag/dag_program.h"

#include <string>
#include <vector>

namespace dag {

struct RunReport {
	std::vector<std::string> problems; /* empty: the run matched the oracle */
	long tasks_in_batches = 0;         /* bodies that ran inside a batch */
};

/* Submits program as its steps say, waits for everything, and compares. */
RunReport run_and_check(const Program &program);

} // namespace dag

#endif
