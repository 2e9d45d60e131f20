/* Running an API fuzzer program (api_program.h) on StarPU and checking it
 * against its oracle.  StarPU must be initialised by the caller. */
#ifndef STARPU_FUSING_TESTS_DAG_API_RUN_H
#define STARPU_FUSING_TESTS_DAG_API_RUN_H

#include "tests/dag/api_program.h"
#include "tests/dag/dag_run.h"

namespace api {

/* Runs every agent's operations (agents 1.. in threads of their own), waits
 * for everything, and compares. */
dag::RunReport run_and_check(const ApiProgram &program);

} // namespace api

#endif
