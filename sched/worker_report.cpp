/* Worker execution-time proportions; see worker_report.h. */
#include "sched/worker_report.h"

#include <starpu.h>

#include <sys/resource.h>

namespace fusing {

void print_worker_report(FILE *stream, double session_us, std::uint64_t idle_with_nothing_held)
{
	double sleeping_total = 0.0, time_total = 0.0;
	unsigned reported = 0;
	std::fprintf(stream, "[starpu-fusing] %-24s %10s %10s %10s %10s\n", "worker", "tasks", "executing", "sleeping", "overhead");
	for (unsigned worker = 0; worker < starpu_worker_get_count(); worker++) {
		struct starpu_profiling_worker_info info;
		if (starpu_profiling_worker_get_info(worker, &info) != 0)
			continue;
		double total = starpu_timing_timespec_to_us(&info.total_time);
		if (total <= 0.0)
			continue;
		double executing = starpu_timing_timespec_to_us(&info.executing_time);
		double sleeping = starpu_timing_timespec_to_us(&info.sleeping_time);
		char name[64];
		starpu_worker_get_name(worker, name, sizeof(name));
		std::fprintf(stream, "[starpu-fusing] %-24s %10d %9.1f%% %9.1f%% %9.1f%%\n", name, info.executed_tasks,
			     100.0 * executing / total, 100.0 * sleeping / total,
			     100.0 * (total - executing - sleeping) / total);
		sleeping_total += sleeping;
		time_total += total;
		reported++;
	}
	if (reported == 0)
		return;
	/* Half the session is far beyond the gap between turning profiling on
	 * and the workers' first measurement, and far below a program's reset. */
	const double covered_us = time_total / reported;
	if (covered_us < 0.5 * session_us) {
		std::fprintf(stream, "[starpu-fusing] these worker figures cover only the last %.1f ms of %.1f ms: the program read "
			     "the counters (starpu_profiling_worker_get_info resets them); use its own figures\n",
			     covered_us / 1000.0, session_us / 1000.0);
		return;
	}
	if (idle_with_nothing_held > 0 && sleeping_total / time_total >= 0.10)
		std::fprintf(stream, "[starpu-fusing] workers slept %.0f%% of the time, %llu times with no task waiting for a batch: "
			     "the program does not give them enough ready tasks (it submits more slowly than they run, "
			     "or its graph has too little parallelism), which no scheduler can fix\n",
			     100.0 * sleeping_total / time_total, (unsigned long long)idle_with_nothing_held);
}

void print_cpu_time(FILE *stream, double session_us)
{
	struct rusage usage;
	if (getrusage(RUSAGE_SELF, &usage) != 0)
		return;
	const double user = double(usage.ru_utime.tv_sec) + double(usage.ru_utime.tv_usec) * 1e-6;
	const double system = double(usage.ru_stime.tv_sec) + double(usage.ru_stime.tv_usec) * 1e-6;
	std::fprintf(stream, "[starpu-fusing] CPU time of the process: %.3f s user + %.3f s system = %.3f CPU-seconds, "
		     "over %.3f s of wall time since the policy started\n", user, system, user + system, session_us * 1e-6);
}

} // namespace fusing
