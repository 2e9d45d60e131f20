/* Batched implementations registered by applications (starpu_fusing.h).
 *
 * A process-wide table, independent of StarPU's lifetime (programs may
 * register before starpu_init).  registry_mutex guards it; the flusher
 * thread looks a family's implementation up once per proxy, and the proxy
 * keeps a copy, so unregistering never pulls one from under a running batch. */
#ifndef STARPU_FUSING_CORE_BATCHED_REGISTRY_H
#define STARPU_FUSING_CORE_BATCHED_REGISTRY_H

#include "starpu_fusing.h"

#include <optional>

namespace fusing {

/* The implementation registered for cl, if any; any thread. */
std::optional<struct starpu_fusing_batched_implementation> batched_implementation_for(const struct starpu_codelet *cl);

} // namespace fusing

#endif
