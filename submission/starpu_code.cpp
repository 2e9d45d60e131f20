/* StarPU's code ranges; see starpu_code.h. */
#include "submission/starpu_code.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>

#include <cstdint>
#include <cstring>
#include <mutex>
#include <vector>

namespace fusing {
namespace {

struct CodeRange {
	std::uintptr_t begin, end;
	bool contains(const void *address) const
	{
		const std::uintptr_t a = reinterpret_cast<std::uintptr_t>(address);
		return a >= begin && a < end;
	}
};

/* The executable segments of the loaded object info describes. */
void add_executable_segments(const struct dl_phdr_info *info, std::vector<CodeRange> &ranges)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) &segment = info->dlpi_phdr[i];
		if (segment.p_type == PT_LOAD && (segment.p_flags & PF_X))
			ranges.push_back({info->dlpi_addr + segment.p_vaddr, info->dlpi_addr + segment.p_vaddr + segment.p_memsz});
	}
}

/* The executable segments of libstarpu-1.x. */
int collect_starpu_code(struct dl_phdr_info *info, std::size_t, void *data)
{
	const char *slash = info->dlpi_name ? std::strrchr(info->dlpi_name, '/') : nullptr;
	const char *file = slash ? slash + 1 : info->dlpi_name;
	if (!file || std::strncmp(file, "libstarpu-1.", 12) != 0)
		return 0;
	add_executable_segments(info, *static_cast<std::vector<CodeRange> *>(data));
	return 0;
}

const std::vector<CodeRange> &starpu_code()
{
	static std::vector<CodeRange> ranges;
	static std::once_flag once;
	std::call_once(once, [] { dl_iterate_phdr(collect_starpu_code, &ranges); });
	return ranges;
}

/* The executable segments of the object loaded at the base address in
 * data (this library's). */
struct OwnCode {
	std::uintptr_t base;
	std::vector<CodeRange> ranges;
};

int collect_own_code(struct dl_phdr_info *info, std::size_t, void *data)
{
	auto *own = static_cast<OwnCode *>(data);
	if (info->dlpi_addr != own->base)
		return 0;
	add_executable_segments(info, own->ranges);
	return 1;
}

const std::vector<CodeRange> &own_code()
{
	static OwnCode own;
	static std::once_flag once;
	std::call_once(once, [] {
		Dl_info info;
		if (dladdr(reinterpret_cast<const void *>(&collect_own_code), &info) != 0) {
			own.base = reinterpret_cast<std::uintptr_t>(info.dli_fbase);
			dl_iterate_phdr(collect_own_code, &own);
		}
	});
	return own.ranges;
}

bool in_ranges(const std::vector<CodeRange> &ranges, const void *address)
{
	for (const CodeRange &range : ranges)
		if (range.contains(address))
			return true;
	return false;
}

} // namespace

bool called_from_this_library(const void *return_address)
{
	return in_ranges(own_code(), return_address);
}

bool called_from_starpu(const void *return_address)
{
	return in_ranges(starpu_code(), return_address);
}

} // namespace fusing
