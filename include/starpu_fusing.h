/* starpu-fusing: a StarPU scheduling policy that fuses small ready tasks.
 *
 * Most programs need nothing from this header: run them with
 *     starpu-fusing-run ./program args...
 * (or STARPU_SCHED=fusing plus LD_PRELOAD on StarPU 1.3, STARPU_SCHED_LIB on
 * StarPU 1.4; see README.md).  This header is for programs that link
 * libstarpu-fusing and select the policy themselves:
 *
 *     struct starpu_conf conf;
 *     starpu_conf_init(&conf);
 *     conf.sched_policy = starpu_fusing_policy();
 *     if (!conf.sched_policy) return 1;   // the error was printed
 *     starpu_init(&conf);
 */
#ifndef STARPU_FUSING_H
#define STARPU_FUSING_H

#include <starpu.h>

#if defined(__GNUC__)
#define FUSING_PUBLIC __attribute__((visibility("default")))
#else
#define FUSING_PUBLIC
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The `fusing` policy configured from the STARPU_FUSING_* environment
 * variables, layered over STARPU_FUSING_BASE (default lws).  Returns NULL,
 * after printing one line naming the variable and what it accepts, when a
 * variable is invalid.  The same policy object is returned on every call. */
FUSING_PUBLIC struct starpu_sched_policy *starpu_fusing_policy(void);

/* Inside a codelet function: the number of tasks in the batch this task runs
 * in, or 0 when it runs unfused (or outside any task). */
FUSING_PUBLIC unsigned starpu_fusing_current_batch_size(void);

#ifdef __cplusplus
}
#endif

#endif
