/* Ensures a codelet is known by its name, else its performance model's
 * symbol (DAHL's codelets have only that), else its CPU function's symbol
 * when the dynamic linker knows it, else "unnamed" (core/codelet_name.h),
 * and that CodeletNames keeps a name once given. */
#include "core/codelet_name.h"
#include "tests/cmocka.hpp"

#include <starpu.h>

using namespace fusing;

namespace {

void local_function(void **, void *) {}

struct starpu_codelet codelet_with(void (*function)(void **, void *), const char *name, struct starpu_perfmodel *model)
{
	struct starpu_codelet cl;
	starpu_codelet_init(&cl);
	cl.cpu_funcs[0] = function;
	cl.name = name;
	cl.model = model;
	return cl;
}

void codelet_name_prefers_the_codelet_name(void **)
{
	struct starpu_perfmodel model = {};
	model.symbol = "model_symbol";
	struct starpu_codelet cl = codelet_with(local_function, "conv2d", &model);
	assert_string_equal(codelet_family_name(&cl).c_str(), "conv2d");
}

void codelet_name_falls_back_to_the_model_symbol(void **)
{
	struct starpu_perfmodel model = {};
	model.symbol = "matrix_cross_correlation";
	struct starpu_codelet cl = codelet_with(local_function, nullptr, &model);
	assert_string_equal(codelet_family_name(&cl).c_str(), "matrix_cross_correlation");
}

void codelet_name_falls_back_to_the_cpu_function_symbol(void **)
{
	/* A function of a shared library: the dynamic linker knows its name
	 * (never called; cast through void (*)(void), the generic function type). */
	auto generic = reinterpret_cast<void (*)(void)>(&starpu_task_create);
	struct starpu_codelet cl = codelet_with(reinterpret_cast<void (*)(void **, void *)>(generic), nullptr, nullptr);
	assert_string_equal(codelet_family_name(&cl).c_str(), "starpu_task_create");
}

void codelet_name_says_unnamed_otherwise(void **)
{
	struct starpu_codelet cl = codelet_with(local_function, nullptr, nullptr);
	assert_string_equal(codelet_family_name(&cl).c_str(), "unnamed");
	assert_string_equal(codelet_family_name(nullptr).c_str(), "(no codelet)");
}

void codelet_names_keep_the_first_name(void **)
{
	CodeletNames names;
	struct starpu_codelet cl = codelet_with(local_function, "first", nullptr);
	const std::string &name = names.of(&cl);
	cl.name = "second"; /* the codelet may be changed or freed afterwards */
	assert_string_equal(names.of(&cl).c_str(), "first");
	assert_ptr_equal(&names.of(&cl), &name);
	assert_int_equal(names.all().size(), 1);
}

} // namespace

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(codelet_name_prefers_the_codelet_name),
		cmocka_unit_test(codelet_name_falls_back_to_the_model_symbol),
		cmocka_unit_test(codelet_name_falls_back_to_the_cpu_function_symbol),
		cmocka_unit_test(codelet_name_says_unnamed_otherwise),
		cmocka_unit_test(codelet_names_keep_the_first_name),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
