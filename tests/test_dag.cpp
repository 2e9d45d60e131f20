/* The synthetic-DAG regression suite: random task graphs (tests/dag/) run
 * under `fusing` and checked against their oracle, and the API fuzzer's
 * random programs (tests/dag/api_program.h: several submitting threads,
 * callbacks, acquisitions, declared dependencies, pause, partition plans...).
 *
 *   test_dag BASE[-unfused|-api].dag          make check: the fixed seeds
 *   test_dag --base B --seeds FIRST COUNT [--workers N] [--hold always|when-busy] [--fusion 0|1] [--programs dag|api]
 *
 * A failing seed prints what went wrong, naming the task, and one command
 * that replays exactly that seed. */
#include "starpu_fusing.h"
#include "tests/dag/api_program.h"
#include "tests/dag/api_run.h"
#include "tests/dag/dag_program.h"
#include "tests/dag/dag_run.h"

#include <starpu.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace {

struct Options {
	std::string base = "lws";
	std::string hold = "always";
	std::string fusion = "1";
	std::string programs = "dag";
	std::uint64_t first_seed = 1;
	std::uint64_t seeds = 12;
	int workers = 2;
};

long tasks_in_batches = 0;

int run_seed(const char *program_name, const Options &options, std::uint64_t seed)
{
	struct starpu_conf conf;
	starpu_conf_init(&conf);
	conf.sched_policy = starpu_fusing_policy();
	if (!conf.sched_policy)
		return 99;
	conf.ncpus = options.workers;
	conf.precedence_over_environment_variables = 1;
	if (starpu_init(&conf) != 0) {
		std::fprintf(stderr, "starpu_init failed\n");
		return 99;
	}
	int workers = static_cast<int>(starpu_worker_get_count());
	dag::RunReport report;
	std::string size;
	if (options.programs == "api") {
		const bool dm_base_on_1_4 = STARPU_MINOR_VERSION >= 4 && options.base.compare(0, 2, "dm") == 0;
		const api::ApiProgram program = api::generate_api_program(seed, !dm_base_on_1_4);
		report = api::run_and_check(program);
		size = std::to_string(program.tasks.size()) + " tasks, " + std::to_string(program.agents.size()) + " submitting threads";
	} else {
		const dag::Program program = dag::generate(seed, dag::knobs_for_seed(seed, workers));
		report = dag::run_and_check(program);
		size = std::to_string(program.knobs.tasks) + " tasks, " + std::to_string(program.total_units) + " units";
	}
	starpu_shutdown();
	tasks_in_batches += report.tasks_in_batches;
	if (report.problems.empty())
		return 0;
	std::printf("FAIL %s seed %llu (%s) over %s, hold %s, fusion %s, %d workers:\n", options.programs.c_str(),
		    (unsigned long long)seed, size.c_str(), options.base.c_str(), options.hold.c_str(), options.fusion.c_str(), workers);
	for (const std::string &problem : report.problems)
		std::printf("    %s\n", problem.c_str());
	std::printf("  replay: %s --base %s --hold %s --fusion %s --workers %d --programs %s --seeds %llu 1\n", program_name,
		    options.base.c_str(), options.hold.c_str(), options.fusion.c_str(), options.workers, options.programs.c_str(),
		    (unsigned long long)seed);
	return 1;
}

} // namespace

int main(int argc, char **argv)
{
	Options options;
	for (int i = 1; i < argc; i++) {
		std::string arg = argv[i];
		if (arg == "--base" && i + 1 < argc) options.base = argv[++i];
		else if (arg == "--hold" && i + 1 < argc) options.hold = argv[++i];
		else if (arg == "--fusion" && i + 1 < argc) options.fusion = argv[++i];
		else if (arg == "--workers" && i + 1 < argc) options.workers = std::atoi(argv[++i]);
		else if (arg == "--programs" && i + 1 < argc && (std::strcmp(argv[i + 1], "dag") == 0 || std::strcmp(argv[i + 1], "api") == 0))
			options.programs = argv[++i];
		else if (arg == "--seeds" && i + 2 < argc) {
			options.first_seed = std::strtoull(argv[++i], nullptr, 10);
			options.seeds = std::strtoull(argv[++i], nullptr, 10);
		} else if (arg[0] != '-') {
			/* make check: tests/dag/BASE.dag, or BASE-unfused.dag */
			std::string base = arg.substr(arg.find_last_of('/') + 1);
			if (base.size() > 4 && base.compare(base.size() - 4, 4, ".dag") == 0)
				base.resize(base.size() - 4);
			if (base.size() > 4 && base.compare(base.size() - 4, 4, "-api") == 0) {
				base.resize(base.size() - 4);
				options.programs = "api";
			}
			if (base.size() > 8 && base.compare(base.size() - 8, 8, "-unfused") == 0) {
				base.resize(base.size() - 8);
				options.fusion = "0";
			}
			options.base = base;
		} else {
			std::fprintf(stderr, "usage: %s BASE[-unfused|-api][.dag] | --base B --seeds FIRST COUNT [--workers N] [--hold always|when-busy] "
				     "[--fusion 0|1] [--programs dag|api]\n", argv[0]);
			return 99;
		}
	}
	unsetenv("STARPU_SCHED");
	/* More workers than cores (the stress runs use 1 to 4): no binding,
	 * or StarPU warns at every start. */
	if (options.workers > static_cast<int>(std::thread::hardware_concurrency()))
		setenv("STARPU_WORKERS_NOBIND", "1", 1);
	setenv("STARPU_FUSING_BASE", options.base.c_str(), 1);
	setenv("STARPU_FUSING_HOLD", options.hold.c_str(), 1);
	setenv("STARPU_FUSING", options.fusion.c_str(), 1);
	/* Fusion off, a mechanism named is refused (sched/config.cpp). */
	if (options.fusion == "0")
		unsetenv("STARPU_FUSING_MODE");
	setenv("STARPU_FUSING_MAX_BATCH", "16", 1);

	int failures = 0;
	for (std::uint64_t seed = options.first_seed; seed < options.first_seed + options.seeds; seed++) {
		int status = run_seed(argv[0], options, seed);
		if (status == 99)
			return 99;
		failures += status;
	}
	std::printf("%s: %llu passed, %d failed (%ld task bodies ran inside batches)\n", options.programs.c_str(),
		    (unsigned long long)(options.seeds - failures), failures, tasks_in_batches);
	if (options.fusion == "1" && options.hold == "always" && tasks_in_batches == 0) {
		std::printf("FAIL: no task was fused\n");
		return 1;
	}
	if (options.fusion == "0" && tasks_in_batches != 0) {
		std::printf("FAIL: tasks were fused with fusion off\n");
		return 1;
	}
	return failures == 0 ? 0 : 1;
}
