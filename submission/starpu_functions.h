/* StarPU's own definitions of the functions this library defines in its
 * place, found with dlsym(RTLD_NEXT) on first use.  Any thread. */
#ifndef STARPU_FUSING_SUBMISSION_STARPU_FUNCTIONS_H
#define STARPU_FUSING_SUBMISSION_STARPU_FUNCTIONS_H

#include <starpu.h>

namespace fusing {

/* StarPU's definition of name; stops the program with a message naming it
 * when StarPU has none. */
void *starpu_own_function(const char *name);

int starpu_own_task_submit(struct starpu_task *task);

/* Whether the process's starpu_task_submit is this library's, i.e. the
 * library was preloaded (or linked before libstarpu): submission-time
 * fusion sees the program's tasks only then. */
bool submissions_reach_this_library();

} // namespace fusing

#endif
