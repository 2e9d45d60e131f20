/* The registry of batched implementations; see batched_registry.h. */
#include "core/batched_registry.h"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <map>
#include <mutex>

namespace fusing {
namespace {

std::mutex registry_mutex; /* guards registry */
std::map<const struct starpu_codelet *, struct starpu_fusing_batched_implementation> registry;
/* Set once registry is not empty: most programs register nothing, and the
 * submission window asks for every task. */
std::atomic<bool> any_registered{false};

const char *name_of(const struct starpu_codelet *cl)
{
	return cl && cl->name ? cl->name : "(unnamed codelet)";
}

/* Why tasks of cl can never be fused, or nullptr: the codelet-level part of
 * check_fusable() (eligibility.cpp). */
const char *codelet_cannot_be_fused(const struct starpu_codelet *cl)
{
	if (!cl->cpu_funcs[0])
		return "it has no CPU function";
	if (STARPU_MAXIMPLEMENTATIONS > 1 && cl->cpu_funcs[1])
		return "it has several CPU functions";
	if (cl->can_execute)
		return "it has a can_execute function";
	if (cl->type != STARPU_SEQ)
		return "it is a parallel (SPMD/FORKJOIN) codelet";
	if (cl->specific_nodes)
		return "it has specific_nodes";
	return nullptr;
}

} // namespace

std::optional<struct starpu_fusing_batched_implementation> batched_implementation_for(const struct starpu_codelet *cl)
{
	if (!any_registered.load(std::memory_order_acquire))
		return std::nullopt;
	std::lock_guard<std::mutex> lock(registry_mutex);
	auto it = registry.find(cl);
	if (it == registry.end())
		return std::nullopt;
	return it->second;
}

} // namespace fusing

extern "C" FUSING_PUBLIC int starpu_fusing_register_batched(struct starpu_codelet *cl, const struct starpu_fusing_batched_implementation *implementation)
{
	using namespace fusing;
	if (!cl || !implementation || !implementation->cpu_func ||
	    implementation->size != sizeof(struct starpu_fusing_batched_implementation)) {
		std::fprintf(stderr, "starpu-fusing: starpu_fusing_register_batched(%s): expected a codelet and an implementation "
			     "with size = sizeof(struct starpu_fusing_batched_implementation) and a non-NULL cpu_func\n", name_of(cl));
		return -EINVAL;
	}
	if (const char *why = codelet_cannot_be_fused(cl)) {
		std::fprintf(stderr, "starpu-fusing: starpu_fusing_register_batched(%s): its tasks are never fused: %s\n", name_of(cl), why);
		return -EINVAL;
	}
	std::lock_guard<std::mutex> lock(registry_mutex);
	if (!registry.emplace(cl, *implementation).second) {
		std::fprintf(stderr, "starpu-fusing: starpu_fusing_register_batched(%s): already registered; unregister it first\n", name_of(cl));
		return -EEXIST;
	}
	any_registered.store(true, std::memory_order_release);
	return 0;
}

extern "C" FUSING_PUBLIC int starpu_fusing_unregister_batched(struct starpu_codelet *cl)
{
	std::lock_guard<std::mutex> lock(fusing::registry_mutex);
	return fusing::registry.erase(cl) ? 0 : -ENOENT;
}
