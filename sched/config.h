/* Settings of the fusing policy, read once from STARPU_FUSING_* variables.
 *
 * Parsing is a pure function of an environment lookup so that it can be unit
 * tested without StarPU and without touching the process environment.  A
 * malformed value is never replaced by a default: the parser returns an error
 * line that names the variable, the value and what is accepted, and the caller
 * stops the program with it (see policy_selection.cpp). */
#ifndef STARPU_FUSING_SCHED_CONFIG_H
#define STARPU_FUSING_SCHED_CONFIG_H

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace fusing {

struct Config {
	bool fusion_enabled = true;           /* STARPU_FUSING */
	std::string base_policy = "lws";      /* STARPU_FUSING_BASE (StarPU's own default) */
	/* STARPU_FUSING_MAX_BATCH.  128 rather than 64: the convolution's kernel
	 * groups at 2,304 px were capped at 64 tasks of ~5 us, and each group
	 * costs the program's thread one merged submission (doc/notebook.md,
	 * the reports of 8c7a0c9). */
	unsigned max_batch_tasks = 128;
	unsigned min_batch_tasks = 2;         /* STARPU_FUSING_MIN_BATCH */
	double target_us = 100000.0;          /* STARPU_FUSING_TARGET: predicted work per batch */
	double max_generic_task_us = 500.0;   /* STARPU_FUSING_MAX_TASK: longer tasks fuse only with a batched kernel */
	std::vector<std::string> only_codelets;    /* STARPU_FUSING_ONLY; empty: all */
	std::vector<std::string> exclude_codelets; /* STARPU_FUSING_EXCLUDE */
	double max_delay_us = 1000.0;         /* STARPU_FUSING_MAX_DELAY */
	int cache_cap_level = 0;              /* STARPU_FUSING_CACHE_CAP: 0 off, 2 L2, 3 L3 */
	bool print_stats = false;             /* STARPU_FUSING_STATS */
	/* STARPU_FUSING_PLAN_ELISION: the window may elide a partition plan's
	 * partition and unpartition, running the tasks on its children in
	 * merged tasks on the parent (doc/design.md, section 12). */
	bool elide_plans = true;
	/* STARPU_FUSING_IDLE_WORKERS: sleep (a CPU worker that found nothing
	 * sleeps until a task is pushed; sched/idle_workers.h) or poll
	 * (StarPU's own behaviour). */
	bool idle_workers_sleep = true;
	std::string trace_path;               /* STARPU_FUSING_TRACE; empty: no trace */
	/* STARPU_FUSING_KERNELS: the kernel pack entries that may bind to a
	 * program's codelets (kernels/pack.h): nullopt for auto (all of
	 * them), empty for off (the default: a codelet reading a global, one
	 * with side effects, or one computing more precisely than its data's
	 * type gets the kernel's results unchecked between two verifications;
	 * doc/design.md, section 13), else those named (checked against the
	 * pack by policy_selection.cpp). */
	std::optional<std::vector<std::string>> kernel_entries = std::vector<std::string>{};
	/* STARPU_FUSING_HOLD: when a ready fusable task waits for a batch.
	 * when_busy (default): only while every worker has queued work.
	 * always: every time, even on an idle machine; it makes batches form
	 * in any DAG, which is what the test suite wants. */
	enum class Hold { when_busy, always } hold = Hold::when_busy;
	/* STARPU_FUSING_MODE: where tasks are fused (doc/design.md, section 12).
	 * ready: ready tasks are held and batched (needs no preload);
	 * submission: tasks are deferred at starpu_task_submit and merged
	 * before StarPU sees them (needs the library preloaded);
	 * both: submission-time fusion, and ready-time fusion of what it did
	 * not defer.  Unset, the mode is both where the program's submissions
	 * reach this library (preloaded: starpu-fusing-run, LD_PRELOAD) and
	 * ready elsewhere (Engine::start_submission_window); set, a mode
	 * that cannot work stops the program.  Issue #22's targets decided
	 * the default (doc/notebook.md). */
	enum class Mode { ready, submission, both } mode = Mode::both;
	bool mode_set = false; /* STARPU_FUSING_MODE was given */
};

/* Returns the value of an environment variable, or nullopt when unset. */
using EnvLookup = std::function<std::optional<std::string>(const std::string &name)>;

struct ConfigResult {
	Config config;
	std::string error; /* empty when every variable was valid */
};

/* Reads every STARPU_FUSING_* setting through lookup.  Stops at the first
 * invalid one.  The base policy name is only checked for syntax here; whether
 * StarPU knows it is checked by base_policy.h. */
ConfigResult parse_config(const EnvLookup &lookup);

/* The process environment, for production use. */
EnvLookup process_environment();

/* Names of the process's environment variables that start with STARPU_FUSING. */
std::vector<std::string> process_fusing_variable_names();

/* Returns an error line for the first name that starts with STARPU_FUSING but
 * is not a variable we read (a misspelling would otherwise be ignored
 * silently), or an empty string. */
std::string check_variable_names(const std::vector<std::string> &names);

/* Whether tasks of the codelet called name may be fused under config's
 * STARPU_FUSING_ONLY / STARPU_FUSING_EXCLUDE (name may be null). */
bool codelet_selected(const Config &config, const char *name);

/* Parses a duration such as "100ms", "250us", "1s", "1.5ms" into
 * microseconds.  A unit is mandatory: a bare number is ambiguous. */
std::optional<double> parse_duration_us(const std::string &text);

} // namespace fusing

#endif
