/* The name a codelet's tasks are known by: in the statistics, in merged
 * tasks' names ("fused:<name>") and in STARPU_FUSING_ONLY/EXCLUDE.
 *
 * cl->name when the codelet has one; else its performance model's symbol
 * (DAHL's codelets have only that); else the symbol of its CPU function
 * when the dynamic linker knows it (a function of a shared library, or of a
 * program linked with -rdynamic); else "unnamed". */
#ifndef STARPU_FUSING_CORE_CODELET_NAME_H
#define STARPU_FUSING_CORE_CODELET_NAME_H

#include <starpu.h>

#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace fusing {

/* Reads the codelet (it must be alive); any thread. */
std::string codelet_family_name(const struct starpu_codelet *cl);

/* Every name the codelet has, of the three above (cl->name, its model's
 * symbol, its CPU function's symbol), in that order: what a program may
 * be known to define a computation under (kernels/pack.h). */
std::vector<std::string> codelet_known_names(const struct starpu_codelet *cl);

/* Each codelet's name, computed the first time it is asked for (while the
 * codelet is alive: at its first task's submission) and kept, so that
 * codelets freed before shutdown still have a name in the statistics.  Any
 * thread; mutex_ guards names_. */
class CodeletNames {
public:
	/* The reference stays valid until the object is destroyed. */
	const std::string &of(const struct starpu_codelet *cl);
	/* Every name given so far. */
	std::vector<std::string> all() const;

private:
	mutable std::mutex mutex_;
	std::unordered_map<const struct starpu_codelet *, std::string> names_;
};

} // namespace fusing

#endif
