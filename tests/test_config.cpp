/* Ensures STARPU_FUSING_* parsing accepts exactly the documented values and
 * names the variable, the value and what is accepted otherwise. */
#include "sched/config.h"
#include "tests/cmocka.hpp"

#include <cstring>
#include <map>
#include <string>

using namespace fusing;

static EnvLookup env(std::map<std::string, std::string> values)
{
	return [values](const std::string &name) -> std::optional<std::string> {
		auto it = values.find(name);
		if (it == values.end())
			return std::nullopt;
		return it->second;
	};
}

static void config_defaults_when_unset(void **)
{
	ConfigResult r = parse_config(env({}));
	assert_true(r.error.empty());
	assert_true(r.config.fusion_enabled);
	assert_string_equal(r.config.base_policy.c_str(), "lws");
	assert_int_equal(r.config.max_batch_tasks, 128);
	assert_true(r.config.max_delay_us == 1000.0);
	assert_true(r.config.max_generic_task_us == 500.0);
	assert_int_equal(r.config.cache_cap_level, 0);
	assert_false(r.config.print_stats);
	assert_true(r.config.hold == Config::Hold::when_busy);
	assert_true(r.config.trace_path.empty());
}

static void config_reads_every_variable(void **)
{
	ConfigResult r = parse_config(env({{"STARPU_FUSING", "0"}, {"STARPU_FUSING_BASE", "eager"},
					   {"STARPU_FUSING_MAX_BATCH", "100"}, {"STARPU_FUSING_MAX_DELAY", "250us"}, {"STARPU_FUSING_MAX_TASK", "2ms"},
					   {"STARPU_FUSING_CACHE_CAP", "l3"},
					   {"STARPU_FUSING_STATS", "1"}, {"STARPU_FUSING_HOLD", "always"},
					   {"STARPU_FUSING_TRACE", "batches.csv"}, {"STARPU_FUSING_PLAN_ELISION", "off"},
					   {"STARPU_FUSING_IDLE_WORKERS", "poll"}}));
	assert_true(r.error.empty());
	assert_false(r.config.elide_plans);
	assert_false(r.config.idle_workers_sleep);
	assert_false(r.config.fusion_enabled);
	assert_string_equal(r.config.base_policy.c_str(), "eager");
	assert_int_equal(r.config.max_batch_tasks, 100);
	assert_true(r.config.max_delay_us == 250.0);
	assert_true(r.config.max_generic_task_us == 2000.0);
	assert_int_equal(r.config.cache_cap_level, 3);
	assert_true(r.config.print_stats);
	assert_true(r.config.hold == Config::Hold::always);
	assert_string_equal(r.config.trace_path.c_str(), "batches.csv");
}

/* StarPU blocks starpu_task_submit when both limits are set, which the
 * flusher's submission of a batch cannot survive: refused, unless fusion is
 * off; one limit alone does not throttle (StarPU needs both). */
static void config_refuses_submission_throttling(void **)
{
	ConfigResult r = parse_config(env({{"STARPU_LIMIT_MAX_SUBMITTED_TASKS", "100"}, {"STARPU_LIMIT_MIN_SUBMITTED_TASKS", "50"}}));
	assert_non_null(std::strstr(r.error.c_str(), "STARPU_LIMIT_MAX_SUBMITTED_TASKS='100'"));
	assert_non_null(std::strstr(r.error.c_str(), "STARPU_FUSING=0"));
	assert_null(std::strchr(r.error.c_str(), '\n'));
	r = parse_config(env({{"STARPU_LIMIT_MAX_SUBMITTED_TASKS", "100"}, {"STARPU_LIMIT_MIN_SUBMITTED_TASKS", "50"}, {"STARPU_FUSING", "0"}}));
	assert_true(r.error.empty());
	r = parse_config(env({{"STARPU_LIMIT_MAX_SUBMITTED_TASKS", "100"}}));
	assert_true(r.error.empty());
}

/* Fusion off, a mechanism asked for cannot run: refused.  Tuning values
 * are kept (config_reads_every_variable), and STARPU_FUSING_KERNELS=off
 * asks for nothing. */
static void config_refuses_a_mechanism_with_fusion_off(void **)
{
	ConfigResult r = parse_config(env({{"STARPU_FUSING", "0"}, {"STARPU_FUSING_MODE", "submission"}}));
	assert_non_null(std::strstr(r.error.c_str(), "STARPU_FUSING=0"));
	assert_non_null(std::strstr(r.error.c_str(), "STARPU_FUSING_MODE='submission'"));
	assert_null(std::strchr(r.error.c_str(), '\n'));
	r = parse_config(env({{"STARPU_FUSING", "0"}, {"STARPU_FUSING_KERNELS", "auto"}}));
	assert_non_null(std::strstr(r.error.c_str(), "STARPU_FUSING_KERNELS='auto'"));
	r = parse_config(env({{"STARPU_FUSING", "0"}, {"STARPU_FUSING_KERNELS", "off"}}));
	assert_true(r.error.empty());
	r = parse_config(env({{"STARPU_FUSING", "1"}, {"STARPU_FUSING_MODE", "submission"}}));
	assert_true(r.error.empty());
}

/* A list naming an entry twice was most likely meant to name another. */
static void config_refuses_a_name_listed_twice(void **)
{
	ConfigResult r = parse_config(env({{"STARPU_FUSING_KERNELS", "cross_correlation,cross_correlation"}}));
	assert_non_null(std::strstr(r.error.c_str(), "STARPU_FUSING_KERNELS"));
	assert_non_null(std::strstr(r.error.c_str(), "'cross_correlation' is named twice"));
	r = parse_config(env({{"STARPU_FUSING_ONLY", "conv,bias,conv"}}));
	assert_non_null(std::strstr(r.error.c_str(), "'conv' is named twice"));
	r = parse_config(env({{"STARPU_FUSING_EXCLUDE", "relu,relu"}}));
	assert_non_null(std::strstr(r.error.c_str(), "STARPU_FUSING_EXCLUDE"));
	r = parse_config(env({{"STARPU_FUSING_KERNELS", "cross_correlation,filter_gradient"}}));
	assert_true(r.error.empty());
}

static void config_refuses_a_codelet_both_selected_and_excluded(void **)
{
	ConfigResult r = parse_config(env({{"STARPU_FUSING_ONLY", "conv,bias"}, {"STARPU_FUSING_EXCLUDE", "relu,bias"}}));
	assert_non_null(std::strstr(r.error.c_str(), "'bias' is in both STARPU_FUSING_ONLY and STARPU_FUSING_EXCLUDE"));
	r = parse_config(env({{"STARPU_FUSING_ONLY", "conv"}, {"STARPU_FUSING_EXCLUDE", "relu"}}));
	assert_true(r.error.empty());
}

static void expect_error(const char *variable, const char *value, const char *accepted_fragment)
{
	ConfigResult r = parse_config(env({{variable, value}}));
	assert_false(r.error.empty());
	std::string expected_head = std::string("starpu-fusing: invalid ") + variable + "='" + value + "': expected ";
	assert_int_equal(r.error.compare(0, expected_head.size(), expected_head), 0);
	assert_non_null(std::strstr(r.error.c_str(), accepted_fragment));
	assert_null(std::strchr(r.error.c_str(), '\n'));
}

static void config_rejects_malformed_values(void **)
{
	expect_error("STARPU_FUSING", "yes", "0 (pass every task");
	expect_error("STARPU_FUSING", "", "0 (pass every task");
	expect_error("STARPU_FUSING_BASE", "", "predefined policies");
	expect_error("STARPU_FUSING_MAX_BATCH", "0", "from 1 to 4096");
	expect_error("STARPU_FUSING_MAX_BATCH", "-3", "from 1 to 4096");
	expect_error("STARPU_FUSING_MAX_BATCH", "12x", "from 1 to 4096");
	expect_error("STARPU_FUSING_MAX_BATCH", "99999999999999999999999", "from 1 to 4096");
	expect_error("STARPU_FUSING_MAX_DELAY", "100", "with a unit");
	expect_error("STARPU_FUSING_MAX_DELAY", "0us", "from 1us to 10s");
	expect_error("STARPU_FUSING_MAX_DELAY", "20s", "from 1us to 10s");
	expect_error("STARPU_FUSING_MAX_DELAY", "1e3us", "with a unit");
	expect_error("STARPU_FUSING_MAX_TASK", "0us", "from 1us to 100s");
	expect_error("STARPU_FUSING_MAX_TASK", "big", "with a unit");
	expect_error("STARPU_FUSING_STATS", "true", "0 or 1");
	expect_error("STARPU_FUSING_HOLD", "sometimes", "when-busy (hold");
	expect_error("STARPU_FUSING_MODE", "eager", "ready (batch ready tasks), submission");
	expect_error("STARPU_FUSING_TRACE", "", "a file name");
	expect_error("STARPU_FUSING_PLAN_ELISION", "1", "on (run the tasks between a partition");
	expect_error("STARPU_FUSING_IDLE_WORKERS", "yield", "sleep (a CPU worker that found no task");
	expect_error("STARPU_FUSING_CACHE_CAP", "l4", "off, l2 or l3");
	expect_error("STARPU_FUSING_CACHE_CAP", "L2", "off, l2 or l3");
	expect_error("STARPU_FUSING_TARGET", "fast", "from 1us to 100s");
	expect_error("STARPU_FUSING_TARGET", "200s", "from 1us to 100s");
	expect_error("STARPU_FUSING_MIN_BATCH", "0", "from 1 to STARPU_FUSING_MAX_BATCH (128)");
	expect_error("STARPU_FUSING_ONLY", "conv, add", "comma-separated codelet names");
	expect_error("STARPU_FUSING_EXCLUDE", "conv,", "comma-separated codelet names");
	expect_error("STARPU_FUSING_KERNELS", "", "auto (every kernel pack entry), off, or comma-separated entry names");
	expect_error("STARPU_FUSING_KERNELS", "cross_correlation, filter_gradient", "auto (every kernel pack entry), off");
}

/* STARPU_FUSING_KERNELS: auto lets every entry bind, unset and off none, a
 * list those (whether the pack has them is checked at start, where the
 * pack is: tests/e2e/selection.sh). */
static void config_reads_the_kernel_pack_selection(void **)
{
	auto unset = parse_config(env({})).config.kernel_entries;
	assert_true(unset.has_value() && unset->empty());
	assert_false(parse_config(env({{"STARPU_FUSING_KERNELS", "auto"}})).config.kernel_entries.has_value());
	auto off = parse_config(env({{"STARPU_FUSING_KERNELS", "off"}})).config.kernel_entries;
	assert_true(off.has_value() && off->empty());
	auto listed = parse_config(env({{"STARPU_FUSING_KERNELS", "cross_correlation,filter_gradient"}})).config.kernel_entries;
	assert_true(listed.has_value());
	assert_int_equal(listed->size(), 2);
	assert_string_equal((*listed)[1].c_str(), "filter_gradient");
}

static void config_reads_the_fusion_mode(void **)
{
	assert_true(parse_config(env({})).config.mode == Config::Mode::both);
	assert_false(parse_config(env({})).config.mode_set);
	assert_true(parse_config(env({{"STARPU_FUSING_MODE", "both"}})).config.mode_set);
	assert_true(parse_config(env({})).config.elide_plans);
	assert_true(parse_config(env({})).config.idle_workers_sleep);
	assert_true(parse_config(env({{"STARPU_FUSING_MODE", "ready"}})).config.mode == Config::Mode::ready);
	assert_true(parse_config(env({{"STARPU_FUSING_MODE", "submission"}})).config.mode == Config::Mode::submission);
	assert_true(parse_config(env({{"STARPU_FUSING_MODE", "both"}})).config.mode == Config::Mode::both);
}

static void config_selects_codelets_by_name(void **)
{
	ConfigResult r = parse_config(env({{"STARPU_FUSING_ONLY", "conv2d,bias_add"},
					   {"STARPU_FUSING_TARGET", "250us"}, {"STARPU_FUSING_MIN_BATCH", "4"}}));
	assert_true(r.error.empty());
	assert_true(codelet_selected(r.config, "conv2d"));
	assert_true(codelet_selected(r.config, "bias_add"));
	assert_false(codelet_selected(r.config, "relu"));
	assert_false(codelet_selected(r.config, nullptr));
	ConfigResult excluding = parse_config(env({{"STARPU_FUSING_EXCLUDE", "bias_add"}}));
	assert_true(codelet_selected(excluding.config, "conv2d"));
	assert_false(codelet_selected(excluding.config, "bias_add"));
	assert_true(r.config.target_us == 250.0);
	assert_int_equal(r.config.min_batch_tasks, 4);
	ConfigResult defaults = parse_config(env({}));
	assert_true(codelet_selected(defaults.config, nullptr));
	assert_true(defaults.config.target_us == 100000.0);
	/* MIN_BATCH relative to a smaller MAX_BATCH */
	ConfigResult small = parse_config(env({{"STARPU_FUSING_MAX_BATCH", "1"}}));
	assert_int_equal(small.config.min_batch_tasks, 1);
}

static void config_parses_durations_with_units(void **)
{
	assert_true(*parse_duration_us("250us") == 250.0);
	assert_true(*parse_duration_us("100ms") == 100000.0);
	assert_true(*parse_duration_us("1s") == 1e6);
	assert_true(*parse_duration_us("1.5ms") == 1500.0);
	assert_false(parse_duration_us("ms").has_value());
	assert_false(parse_duration_us("5").has_value());
	assert_false(parse_duration_us("5 ms").has_value());
	assert_false(parse_duration_us("5min").has_value());
}

static void config_rejects_unknown_variable_names(void **)
{
	assert_true(check_variable_names({"STARPU_FUSING", "STARPU_FUSING_BASE", "STARPU_FUSING_STATS"}).empty());
	std::string error = check_variable_names({"STARPU_FUSING_BASE", "STARPU_FUSING_MAXBATCH"});
	assert_non_null(std::strstr(error.c_str(), "unknown variable STARPU_FUSING_MAXBATCH"));
	assert_non_null(std::strstr(error.c_str(), "STARPU_FUSING_MAX_BATCH"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(config_defaults_when_unset),
		cmocka_unit_test(config_reads_every_variable),
		cmocka_unit_test(config_refuses_submission_throttling),
		cmocka_unit_test(config_refuses_a_codelet_both_selected_and_excluded),
		cmocka_unit_test(config_refuses_a_mechanism_with_fusion_off),
		cmocka_unit_test(config_refuses_a_name_listed_twice),
		cmocka_unit_test(config_rejects_malformed_values),
		cmocka_unit_test(config_parses_durations_with_units),
		cmocka_unit_test(config_reads_the_fusion_mode),
		cmocka_unit_test(config_reads_the_kernel_pack_selection),
		cmocka_unit_test(config_selects_codelets_by_name),
		cmocka_unit_test(config_rejects_unknown_variable_names),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
