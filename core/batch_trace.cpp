/* The merged-task trace; see batch_trace.h. */
#include "core/batch_trace.h"

#include <utility>

namespace fusing {

void BatchTrace::record(int worker, double start_us, double end_us, std::size_t members, const char *kind, std::string name)
{
	std::lock_guard<std::mutex> lock(mutex_);
	records_.push_back({worker, start_us, end_us, members, kind, std::move(name)});
}

bool BatchTrace::write()
{
	std::lock_guard<std::mutex> lock(mutex_);
	bool written = std::fputs("worker,start_us,end_us,members,kind,name\n", file_) >= 0;
	for (const Record &r : records_)
		written = written && std::fprintf(file_, "%d,%.3f,%.3f,%zu,%s,%s\n", r.worker, r.start_us, r.end_us, r.members,
						   r.kind, r.name.c_str()) >= 0;
	written = std::fclose(file_) == 0 && written;
	file_ = nullptr;
	return written;
}

} // namespace fusing
