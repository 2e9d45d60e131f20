/* The policy from the environment; see policy_selection.h. */
#include "sched/policy_selection.h"

#include "kernels/pack.h"
#include "sched/base_policy.h"
#include "sched/config.h"
#include "sched/fusing_policy.h"
#include "starpu_fusing.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace fusing {
namespace {

struct Selection {
	struct starpu_sched_policy *policy = nullptr;
	std::string error;
};

Selection select_from_environment()
{
	Selection selection;
	selection.error = check_variable_names(process_fusing_variable_names());
	if (!selection.error.empty())
		return selection;
	ConfigResult parsed = parse_config(process_environment());
	if (!parsed.error.empty()) {
		selection.error = parsed.error;
		return selection;
	}
	struct starpu_sched_policy *base = find_base_policy(parsed.config.base_policy);
	if (!base) {
		const std::string &name = parsed.config.base_policy;
		std::string why = is_rejected_base_policy(name)
			? "fusing cannot layer over itself or over parallel-task policies (pheft, peager, modular-pheft); "
			: "";
		selection.error = "starpu-fusing: invalid STARPU_FUSING_BASE='" + name + "': " + why +
				  "expected one of StarPU's predefined policies: " + accepted_base_policy_names();
		return selection;
	}
	if (parsed.config.kernel_entries)
		for (const std::string &name : *parsed.config.kernel_entries)
			if (!kernels::pack_entry_named(name)) {
				std::string entries;
				for (const kernels::PackEntry &entry : kernels::kernel_pack())
					entries += (entries.empty() ? "" : ", ") + std::string(entry.name);
				selection.error = "starpu-fusing: invalid STARPU_FUSING_KERNELS: '" + name +
						  "' is no kernel pack entry; expected auto, off, or a comma-separated list of: " + entries;
				return selection;
			}
	selection.policy = build_fusing_policy(base, parsed.config);
	return selection;
}

} // namespace

struct starpu_sched_policy *policy_from_environment(std::string *error)
{
	static std::once_flag once;
	static Selection selection;
	std::call_once(once, [] { selection = select_from_environment(); });
	if (!selection.policy && error)
		*error = selection.error;
	return selection.policy;
}

struct starpu_sched_policy *policy_from_environment_or_exit()
{
	std::string error;
	struct starpu_sched_policy *policy = policy_from_environment(&error);
	if (!policy) {
		std::fprintf(stderr, "%s\n", error.c_str());
		std::exit(EXIT_FAILURE);
	}
	return policy;
}

void print_policy_help_line(FILE *stream)
{
	/* Same format as StarPU's display_sched_help_message(). */
	std::fprintf(stream, "%-30s\t-> %s\n", "fusing", fusing_policy_description);
}

} // namespace fusing

extern "C" FUSING_PUBLIC struct starpu_sched_policy *starpu_fusing_policy(void)
{
	std::string error;
	struct starpu_sched_policy *policy = fusing::policy_from_environment(&error);
	if (!policy)
		std::fprintf(stderr, "%s\n", error.c_str());
	return policy;
}
