/* STARPU_FUSING_TRACE: one CSV line per merged task that ran, written at
 * shutdown, so that its batches can be drawn over StarPU's per-task
 * profiling (examples/bench/plot.sh does).  Times are starpu_timing_now()
 * microseconds, the clock StarPU's profiling_info times are taken with
 * (_starpu_clock_gettime).
 *
 *   worker,start_us,end_us,members,kind,name
 *
 * kind: "ready" (a ready-time batch of one codelet, name "fused:<codelet>")
 * or "submission" (a group merged at submission, name the distinct names
 * of its members' codelets, as codelet_name.h gives them, joined by '+').
 *
 * record() runs in the worker that ran the merged task; mutex_ guards
 * records_.  write() runs once, at shutdown, after every merged task
 * ended. */
#ifndef STARPU_FUSING_CORE_BATCH_TRACE_H
#define STARPU_FUSING_CORE_BATCH_TRACE_H

#include <cstddef>
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

namespace fusing {

class BatchTrace {
public:
	/* Takes the open file; write() closes it. */
	explicit BatchTrace(std::FILE *file) : file_(file) {}
	BatchTrace(const BatchTrace &) = delete;
	BatchTrace &operator=(const BatchTrace &) = delete;

	void record(int worker, double start_us, double end_us, std::size_t members, const char *kind, std::string name);
	/* Writes every record, in the order they were made, and closes the
	 * file; returns false (errno set) when writing failed. */
	bool write();

private:
	struct Record {
		int worker;
		double start_us, end_us;
		std::size_t members;
		const char *kind;
		std::string name;
	};
	std::FILE *file_;
	std::mutex mutex_;
	std::vector<Record> records_;
};

} // namespace fusing

#endif
