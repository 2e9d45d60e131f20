/* The execution-time proportion of each worker, for STARPU_FUSING_STATS=1.
 *
 * Read from StarPU's worker profiling (the numbers STARPU_PROFILING=1 and
 * starpu_profiling_worker_get_info give, which StarPU users already read):
 * executing, sleeping, and the rest of the worker's time, which is
 * scheduling overhead (push, pop, data fetch, termination).  The engine
 * turns profiling on at start when statistics are asked for. */
#ifndef STARPU_FUSING_SCHED_WORKER_REPORT_H
#define STARPU_FUSING_SCHED_WORKER_REPORT_H

#include <cstdint>
#include <cstdio>

namespace fusing {

/* Prints one line per worker, then, when workers slept while no task was
 * waiting for a batch, one plain line saying that the program does not give
 * the workers enough ready tasks (no scheduler can fix that).
 * StarPU resets a worker's counters whenever the program reads them
 * (starpu_profiling_worker_get_info): when the counters cover much less
 * than session_us, the lines are labelled as covering only the period since
 * that reset and no conclusion is drawn from them.
 * session_us: time since profiling was turned on; idle_with_nothing_held:
 * how often a worker found no work while nothing was held.  Runs in the
 * thread calling starpu_shutdown. */
void print_worker_report(FILE *stream, double session_us, std::uint64_t idle_with_nothing_held);

/* One line: the process's CPU time so far (user and system, every thread:
 * getrusage), beside session_us of wall time since the policy started:
 * what a run costs in CPU-seconds, the energy half of a comparison. */
void print_cpu_time(FILE *stream, double session_us);

} // namespace fusing

#endif
