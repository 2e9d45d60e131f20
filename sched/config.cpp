/* Parsing of STARPU_FUSING_* variables; see config.h. */
#include "sched/config.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <utility>

extern char **environ;

namespace fusing {
namespace {

std::string invalid(const std::string &name, const std::string &value, const std::string &accepted)
{
	return "starpu-fusing: invalid " + name + "='" + value + "': expected " + accepted;
}

std::optional<bool> parse_switch(const std::string &text)
{
	if (text == "1")
		return true;
	if (text == "0")
		return false;
	return std::nullopt;
}

/* "a,b,c" -> {a, b, c}; nullopt when empty or with an empty item. */
std::optional<std::vector<std::string>> parse_name_list(const std::string &text)
{
	std::vector<std::string> names;
	std::size_t start = 0;
	for (;;) {
		std::size_t comma = text.find(',', start);
		std::string name = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
		if (name.empty() || name.find_first_of(" \t") != std::string::npos)
			return std::nullopt;
		names.push_back(name);
		if (comma == std::string::npos)
			return names;
		start = comma + 1;
	}
}

/* A name listed twice, or empty: a list naming an entry twice was most
 * likely meant to name another. */
std::string twice_listed(const std::vector<std::string> &names)
{
	for (std::size_t i = 0; i < names.size(); i++)
		for (std::size_t j = i + 1; j < names.size(); j++)
			if (names[i] == names[j])
				return names[i];
	return "";
}

std::optional<unsigned long> parse_count(const std::string &text)
{
	if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
		return std::nullopt;
	errno = 0;
	char *end = nullptr;
	unsigned long value = std::strtoul(text.c_str(), &end, 10);
	if (errno != 0 || *end != '\0')
		return std::nullopt;
	return value;
}

/* Every variable the library reads; the launcher's own variable included. */
const char *const known_variables[] = {
	"STARPU_FUSING", "STARPU_FUSING_BASE", "STARPU_FUSING_MAX_BATCH", "STARPU_FUSING_MIN_BATCH",
	"STARPU_FUSING_TARGET", "STARPU_FUSING_ONLY", "STARPU_FUSING_EXCLUDE",
	"STARPU_FUSING_MAX_DELAY", "STARPU_FUSING_MAX_TASK", "STARPU_FUSING_CACHE_CAP", "STARPU_FUSING_STATS", "STARPU_FUSING_HOLD", "STARPU_FUSING_MODE", "STARPU_FUSING_LIBRARY",
	"STARPU_FUSING_TRACE", "STARPU_FUSING_KERNELS", "STARPU_FUSING_PLAN_ELISION", "STARPU_FUSING_IDLE_WORKERS",
};

/* Reads the duration variable name, when set, into *value_us if it lies in
 * [min_us, max_us]; otherwise sets error.  Returns false on error. */
bool read_duration(const EnvLookup &lookup, const char *name, double min_us, double max_us, const char *range_text,
		   double *value_us, std::string &error)
{
	auto text = lookup(name);
	if (!text)
		return true;
	auto duration = parse_duration_us(*text);
	if (!duration || *duration < min_us || *duration > max_us) {
		error = invalid(name, *text, std::string("a duration ") + range_text + " with a unit: us, ms or s (e.g. 500us)");
		return false;
	}
	*value_us = *duration;
	return true;
}

/* Reads the variable name, when set, into *value if its text is one of the
 * choices; otherwise sets error, accepted saying what is.  Returns false on
 * error. */
template <typename Value>
bool read_choice(const EnvLookup &lookup, const char *name, std::initializer_list<std::pair<const char *, Value>> choices,
		 const char *accepted, Value *value, std::string &error)
{
	auto text = lookup(name);
	if (!text)
		return true;
	for (const auto &choice : choices)
		if (*text == choice.first) {
			*value = choice.second;
			return true;
		}
	error = invalid(name, *text, accepted);
	return false;
}

} // namespace

std::optional<double> parse_duration_us(const std::string &text)
{
	struct Unit { const char *suffix; double to_us; };
	/* Longest suffixes first so that "ms" is not read as "s". */
	static const Unit units[] = { { "us", 1.0 }, { "ms", 1e3 }, { "s", 1e6 } };
	for (const Unit &unit : units) {
		std::string suffix(unit.suffix);
		if (text.size() <= suffix.size() || text.compare(text.size() - suffix.size(), suffix.size(), suffix) != 0)
			continue;
		std::string number = text.substr(0, text.size() - suffix.size());
		if (number.find_first_not_of("0123456789.") != std::string::npos)
			return std::nullopt;
		errno = 0;
		char *end = nullptr;
		double value = std::strtod(number.c_str(), &end);
		if (errno != 0 || *end != '\0' || !std::isfinite(value))
			return std::nullopt;
		return value * unit.to_us;
	}
	return std::nullopt;
}

ConfigResult parse_config(const EnvLookup &lookup)
{
	ConfigResult result;
	Config &config = result.config;

	if (auto text = lookup("STARPU_FUSING")) {
		auto enabled = parse_switch(*text);
		if (!enabled) {
			result.error = invalid("STARPU_FUSING", *text, "0 (pass every task to the base policy) or 1 (fuse)");
			return result;
		}
		config.fusion_enabled = *enabled;
	}

	if (auto text = lookup("STARPU_FUSING_BASE")) {
		if (text->empty()) {
			result.error = invalid("STARPU_FUSING_BASE", *text, "the name of one of StarPU's predefined policies, e.g. lws, eager, dmda");
			return result;
		}
		config.base_policy = *text;
	}

	if (auto text = lookup("STARPU_FUSING_MAX_BATCH")) {
		auto count = parse_count(*text);
		if (!count || *count < 1 || *count > 4096) {
			result.error = invalid("STARPU_FUSING_MAX_BATCH", *text, "an integer from 1 to 4096 (tasks per batch)");
			return result;
		}
		config.max_batch_tasks = static_cast<unsigned>(*count);
	}

	if (auto text = lookup("STARPU_FUSING_MIN_BATCH")) {
		auto count = parse_count(*text);
		if (!count || *count < 1 || *count > config.max_batch_tasks) {
			result.error = invalid("STARPU_FUSING_MIN_BATCH", *text,
					       "an integer from 1 to STARPU_FUSING_MAX_BATCH (" + std::to_string(config.max_batch_tasks) + ")");
			return result;
		}
		config.min_batch_tasks = static_cast<unsigned>(*count);
	} else if (config.min_batch_tasks > config.max_batch_tasks) {
		config.min_batch_tasks = config.max_batch_tasks;
	}

	if (!read_duration(lookup, "STARPU_FUSING_TARGET", 1.0, 100e6, "from 1us to 100s", &config.target_us, result.error))
		return result;

	for (const char *name : {"STARPU_FUSING_ONLY", "STARPU_FUSING_EXCLUDE"}) {
		if (auto text = lookup(name)) {
			auto names = parse_name_list(*text);
			if (!names || !twice_listed(*names).empty()) {
				result.error = invalid(name, *text,
						       names ? "each codelet named once ('" + twice_listed(*names) + "' is named twice)"
							     : "comma-separated codelet names, without spaces or empty names (e.g. conv2d,bias_add)");
				return result;
			}
			(std::string(name) == "STARPU_FUSING_ONLY" ? config.only_codelets : config.exclude_codelets) = *names;
		}
	}

	if (!read_duration(lookup, "STARPU_FUSING_MAX_DELAY", 1.0, 10e6, "from 1us to 10s", &config.max_delay_us, result.error))
		return result;

	if (!read_duration(lookup, "STARPU_FUSING_MAX_TASK", 1.0, 100e6, "from 1us to 100s", &config.max_generic_task_us, result.error))
		return result;

	if (!read_choice(lookup, "STARPU_FUSING_CACHE_CAP", {{"off", 0}, {"l2", 2}, {"l3", 3}},
			 "off, l2 or l3 (close a batch once its distinct data reaches that cache of the workers)",
			 &config.cache_cap_level, result.error))
		return result;

	if (!read_choice(lookup, "STARPU_FUSING_HOLD", {{"when-busy", Config::Hold::when_busy}, {"always", Config::Hold::always}},
			 "when-busy (hold ready tasks only while every worker has work) or always", &config.hold, result.error))
		return result;

	if (!read_choice(lookup, "STARPU_FUSING_MODE",
			 {{"ready", Config::Mode::ready}, {"submission", Config::Mode::submission}, {"both", Config::Mode::both}},
			 "ready (batch ready tasks), submission (merge tasks at starpu_task_submit) or both", &config.mode,
			 result.error))
		return result;
	config.mode_set = lookup("STARPU_FUSING_MODE").has_value();

	for (const std::string &name : config.only_codelets)
		for (const std::string &excluded : config.exclude_codelets)
			if (name == excluded) {
				result.error = "starpu-fusing: codelet '" + name + "' is in both STARPU_FUSING_ONLY and STARPU_FUSING_EXCLUDE: "
					       "name it in one of them";
				return result;
			}

	if (auto text = lookup("STARPU_FUSING_STATS")) {
		auto stats = parse_switch(*text);
		if (!stats) {
			result.error = invalid("STARPU_FUSING_STATS", *text, "0 or 1 (print fusion statistics at shutdown)");
			return result;
		}
		config.print_stats = *stats;
	}

	if (!read_choice(lookup, "STARPU_FUSING_PLAN_ELISION", {{"on", true}, {"off", false}},
			 "on (run the tasks between a partition and its unpartition on the parent when both are in the "
			 "submission window) or off",
			 &config.elide_plans, result.error))
		return result;

	if (!read_choice(lookup, "STARPU_FUSING_IDLE_WORKERS", {{"sleep", true}, {"poll", false}},
			 "sleep (a CPU worker that found no task sleeps until one is pushed) or poll (StarPU's own loop)",
			 &config.idle_workers_sleep, result.error))
		return result;

	if (auto text = lookup("STARPU_FUSING_TRACE")) {
		if (text->empty()) {
			result.error = invalid("STARPU_FUSING_TRACE", *text, "a file name (one line per merged task is written to it at shutdown)");
			return result;
		}
		config.trace_path = *text;
	}

	if (auto text = lookup("STARPU_FUSING_KERNELS")) {
		if (*text == "auto") {
			config.kernel_entries = std::nullopt;
		} else if (*text != "off") {
			auto names = parse_name_list(*text);
			if (!names || !twice_listed(*names).empty()) {
				result.error = invalid("STARPU_FUSING_KERNELS", *text,
						       names ? "each entry named once ('" + twice_listed(*names) + "' is named twice)"
							     : "auto (every kernel pack entry), off, or comma-separated entry names without spaces "
							       "(e.g. cross_correlation,filter_gradient)");
				return result;
			}
			config.kernel_entries = *names;
		}
	}

	/* Fusion off, a choice of mechanism cannot take effect; tuning values
	 * are kept so that STARPU_FUSING alone switches a run between fused and
	 * not (README, environment variables). */
	for (const char *mechanism : {"STARPU_FUSING_MODE", "STARPU_FUSING_KERNELS"}) {
		auto text = lookup(mechanism);
		if (!config.fusion_enabled && text && !(std::string(mechanism) == "STARPU_FUSING_KERNELS" && *text == "off")) {
			result.error = std::string("starpu-fusing: STARPU_FUSING=0 passes every task to the base policy, so ") + mechanism +
				       "='" + *text + "' cannot take effect: unset one of them";
			return result;
		}
	}

	/* StarPU throttles submission when both limits are set (1.3 and 1.4,
	 * _starpu_task_submit): starpu_task_submit then waits until few enough
	 * tasks are submitted.  Held tasks count as submitted until their batch
	 * has run, and the flusher submits that batch: it would wait for them,
	 * and they for it. */
	auto max_submitted = lookup("STARPU_LIMIT_MAX_SUBMITTED_TASKS");
	auto min_submitted = lookup("STARPU_LIMIT_MIN_SUBMITTED_TASKS");
	if (config.fusion_enabled && max_submitted && min_submitted) {
		result.error = "starpu-fusing: STARPU_LIMIT_MAX_SUBMITTED_TASKS='" + *max_submitted +
			       "' with STARPU_LIMIT_MIN_SUBMITTED_TASKS='" + *min_submitted +
			       "' cannot work with fusion (tasks waiting for a batch count as submitted, and StarPU would "
			       "block the submission of their batch): unset them, or set STARPU_FUSING=0";
		return result;
	}

	return result;
}

bool codelet_selected(const Config &config, const char *name)
{
	auto listed = [name](const std::vector<std::string> &names) {
		for (const std::string &listed_name : names)
			if (name && listed_name == name)
				return true;
		return false;
	};
	if (!config.only_codelets.empty() && !listed(config.only_codelets))
		return false;
	return !listed(config.exclude_codelets);
}

EnvLookup process_environment()
{
	return [](const std::string &name) -> std::optional<std::string> {
		const char *value = std::getenv(name.c_str());
		if (!value)
			return std::nullopt;
		return std::string(value);
	};
}

} // namespace fusing

namespace fusing {

std::vector<std::string> process_fusing_variable_names()
{
	std::vector<std::string> names;
	for (char **entry = environ; entry && *entry; entry++) {
		if (std::strncmp(*entry, "STARPU_FUSING", 13) != 0)
			continue;
		const char *equal = std::strchr(*entry, '=');
		names.emplace_back(*entry, equal ? static_cast<size_t>(equal - *entry) : std::strlen(*entry));
	}
	return names;
}

std::string check_variable_names(const std::vector<std::string> &names)
{
	for (const std::string &name : names) {
		bool known = false;
		for (const char *variable : known_variables)
			known = known || name == variable;
		if (known)
			continue;
		std::string accepted;
		for (const char *variable : known_variables)
			accepted += (accepted.empty() ? "" : ", ") + std::string(variable);
		return "starpu-fusing: unknown variable " + name + ": the variables read are " + accepted;
	}
	return "";
}

} // namespace fusing
