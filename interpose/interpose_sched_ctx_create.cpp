/* Contexts created by policy name on StarPU 1.3.
 *
 * Programs often create scheduling contexts with the policy the user chose:
 *     starpu_sched_ctx_create(ids, n, "ctx", STARPU_SCHED_CTX_POLICY_NAME,
 *                             getenv("STARPU_SCHED"), 0);
 * (StarPU's examples/sched_ctx/sched_ctx.c does).  StarPU 1.3 cannot find
 * "fusing" by name: it prints "scheduling policy 'fusing' was not found" and
 * falls back to the policy given at starpu_init.  Preloaded, this definition
 * comes first; it rewrites a POLICY_NAME "fusing" into POLICY_STRUCT with our
 * policy and calls StarPU's function with the same arguments otherwise.
 *
 * starpu_sched_ctx_create is variadic with no va_list twin, so the call is
 * rebuilt with libffi, each argument with the type StarPU reads it as
 * (starpu_sched_ctx_create's va_arg loop, src/core/sched_ctx.c).  Every call
 * is re-issued this way, whatever STARPU_SCHED says: a variadic call cannot
 * be passed on without knowing its arguments.  This build knows every tag of
 * the StarPU line it was built for; on any other tag StarPU itself aborts
 * ("Unrecognized argument"), and so does this, saying so, rather than guess
 * the argument's type. */
#include "sched/policy_selection.h"
#include "starpu_fusing.h"

#include <dlfcn.h>
#include <ffi.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

/* One argument of the call, with the libffi type it is passed as. */
struct Argument {
	ffi_type *type;
	union {
		int as_int;
		unsigned as_unsigned;
		void *as_pointer;
	} value;
};

Argument int_argument(int value)
{
	Argument argument{&ffi_type_sint, {}};
	argument.value.as_int = value;
	return argument;
}

Argument unsigned_argument(unsigned value)
{
	Argument argument{&ffi_type_uint, {}};
	argument.value.as_unsigned = value;
	return argument;
}

Argument pointer_argument(void *value)
{
	Argument argument{&ffi_type_pointer, {}};
	argument.value.as_pointer = value;
	return argument;
}

} // namespace

extern "C" FUSING_PUBLIC unsigned starpu_sched_ctx_create(int *workerids_ctx, int nworkers_ctx, const char *sched_ctx_name, ...)
{
	void *real = dlsym(RTLD_NEXT, "starpu_sched_ctx_create");
	if (!real) {
		std::fprintf(stderr, "starpu-fusing: cannot find StarPU's starpu_sched_ctx_create: %s\n", dlerror());
		std::exit(EXIT_FAILURE);
	}

	std::vector<Argument> arguments = {pointer_argument(workerids_ctx), int_argument(nworkers_ctx),
					   pointer_argument(const_cast<char *>(sched_ctx_name))};
	va_list varg_list;
	va_start(varg_list, sched_ctx_name);
	int tag;
	while ((tag = va_arg(varg_list, int)) != 0) {
		if (tag == STARPU_SCHED_CTX_POLICY_NAME) {
			const char *name = va_arg(varg_list, const char *);
			if (name && std::strcmp(name, "fusing") == 0) {
				arguments.push_back(int_argument(STARPU_SCHED_CTX_POLICY_STRUCT));
				arguments.push_back(pointer_argument(fusing::policy_from_environment_or_exit()));
			} else {
				arguments.push_back(int_argument(tag));
				arguments.push_back(pointer_argument(const_cast<char *>(name)));
			}
			continue;
		}
		arguments.push_back(int_argument(tag));
		switch (tag) {
		case STARPU_SCHED_CTX_POLICY_STRUCT:
		case STARPU_SCHED_CTX_USER_DATA:
			arguments.push_back(pointer_argument(va_arg(varg_list, void *)));
			break;
		case STARPU_SCHED_CTX_POLICY_INIT:
			arguments.push_back(pointer_argument(reinterpret_cast<void *>(va_arg(varg_list, void (*)(unsigned)))));
			break;
		case STARPU_SCHED_CTX_POLICY_MIN_PRIO:
		case STARPU_SCHED_CTX_POLICY_MAX_PRIO:
		case STARPU_SCHED_CTX_CUDA_NSMS:
			arguments.push_back(int_argument(va_arg(varg_list, int)));
			break;
		case STARPU_SCHED_CTX_HIERARCHY_LEVEL:
		case STARPU_SCHED_CTX_NESTED:
			arguments.push_back(unsigned_argument(va_arg(varg_list, unsigned)));
			break;
		case STARPU_SCHED_CTX_AWAKE_WORKERS:
			break;
		case STARPU_SCHED_CTX_SUB_CTXS:
			arguments.push_back(pointer_argument(va_arg(varg_list, int *)));
			arguments.push_back(int_argument(va_arg(varg_list, int)));
			break;
		default:
			std::fprintf(stderr, "starpu-fusing: starpu_sched_ctx_create(\"%s\"): unrecognized argument tag %d "
				     "(StarPU aborts on it as well)\n", sched_ctx_name ? sched_ctx_name : "", tag);
			std::abort();
		}
	}
	va_end(varg_list);
	arguments.push_back(int_argument(0));

	std::vector<ffi_type *> types;
	std::vector<void *> values;
	for (Argument &argument : arguments) {
		types.push_back(argument.type);
		values.push_back(&argument.value);
	}
	ffi_cif cif;
	if (ffi_prep_cif_var(&cif, FFI_DEFAULT_ABI, 3, static_cast<unsigned>(types.size()), &ffi_type_uint,
			     types.data()) != FFI_OK) {
		std::fprintf(stderr, "starpu-fusing: libffi cannot describe the call to starpu_sched_ctx_create\n");
		std::exit(EXIT_FAILURE);
	}
	ffi_arg result = 0;
	ffi_call(&cif, reinterpret_cast<void (*)(void)>(real), &result, values.data());
	return static_cast<unsigned>(result);
}
