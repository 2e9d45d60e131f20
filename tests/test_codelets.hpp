/* Building test codelets in one expression. */
#ifndef STARPU_FUSING_TESTS_TEST_CODELETS_HPP
#define STARPU_FUSING_TESTS_TEST_CODELETS_HPP

#include <starpu.h>

#include <initializer_list>

/* A STARPU_COMMON model: StarPU asks cost_function for each task's duration. */
inline struct starpu_perfmodel make_cost_model(double (*cost_function)(struct starpu_task *, unsigned), const char *symbol)
{
	struct starpu_perfmodel model = {};
	model.type = STARPU_COMMON;
	model.cost_function = cost_function;
	model.symbol = symbol;
	return model;
}

/* A sequential CPU codelet with one mode per buffer; with no modes,
 * STARPU_VARIABLE_NBUFFERS (each task gives its own count and modes). */
inline struct starpu_codelet make_test_codelet(void (*function)(void **, void *), const char *name,
					       std::initializer_list<enum starpu_data_access_mode> modes,
					       struct starpu_perfmodel *model = nullptr)
{
	struct starpu_codelet cl;
	starpu_codelet_init(&cl);
	cl.cpu_funcs[0] = function;
	cl.nbuffers = modes.size() == 0 ? STARPU_VARIABLE_NBUFFERS : static_cast<int>(modes.size());
	int b = 0;
	for (enum starpu_data_access_mode mode : modes)
		cl.modes[b++] = mode;
	cl.model = model;
	cl.name = name;
	return cl;
}

#endif
