/* The library refuses to run in a process that loads a StarPU line it was
 * not built for.
 *
 * The library's interposed functions (starpu_task_submit, the flush
 * barrier's entries) and its policy structure follow the headers of the
 * StarPU it was built against; a program linked with another line (1.3
 * against 1.4: the layouts of starpu_task and starpu_sched_policy differ)
 * would crash or compute wrong results, and preloading the library makes
 * the loader bring in the library's own libstarpu beside the program's.
 * So at load time, before the program's main or StarPU's dlopen returns,
 * every loaded object named libstarpu-MAJOR.MINOR.so is compared with the
 * line of this build (configure's FUSING_STARPU_LINE).  This replaces the
 * launcher's ldd of the program, which started the dynamic loader a
 * second time on every run (20-60 ms; issue 40).
 *
 * Runs once, in the thread loading the library. */
#include "build_config.h"

#include <dlfcn.h>
#include <link.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace fusing {
namespace {

/* "1.4" for ".../libstarpu-1.4.so.3", "" for anything else (libstarpumpi,
 * libstarpu-fusing). */
std::string starpu_line_of(const char *path)
{
	const char *name = std::strrchr(path, '/');
	name = name ? name + 1 : path;
	const char prefix[] = "libstarpu-";
	if (std::strncmp(name, prefix, sizeof(prefix) - 1) != 0)
		return "";
	const char *line = name + sizeof(prefix) - 1;
	const char *so = std::strstr(line, ".so");
	if (!so || so == line)
		return "";
	for (const char *c = line; c < so; c++)
		if (!(*c == '.' || (*c >= '0' && *c <= '9')))
			return "";
	return std::string(line, so);
}

struct LoadedObject {
	std::string path, line;
};

int note_starpu(struct dl_phdr_info *info, size_t, void *data)
{
	const std::string line = info->dlpi_name ? starpu_line_of(info->dlpi_name) : "";
	if (!line.empty())
		static_cast<std::vector<LoadedObject> *>(data)->push_back({info->dlpi_name, line});
	return 0;
}

__attribute__((constructor)) void refuse_another_starpu_line()
{
	std::vector<LoadedObject> starpus;
	dl_iterate_phdr(note_starpu, &starpus);
	for (const LoadedObject &loaded : starpus) {
		if (loaded.line == FUSING_STARPU_LINE)
			continue;
		Dl_info self;
		const char *library = dladdr(reinterpret_cast<void *>(&refuse_another_starpu_line), &self) && self.dli_fname
					      ? self.dli_fname
					      : "libstarpu-fusing";
		std::fprintf(stderr, "starpu-fusing: this process loads StarPU %s (%s), but %s was built for StarPU %s: "
			     "use a build of starpu-fusing for StarPU %s\n",
			     loaded.line.c_str(), loaded.path.c_str(), library, FUSING_STARPU_LINE, loaded.line.c_str());
		std::exit(EXIT_FAILURE);
	}
}

} // namespace
} // namespace fusing
