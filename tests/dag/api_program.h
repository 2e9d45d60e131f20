/* Seeded random programs that use StarPU's API the way real programs do,
 * and their oracle (no StarPU here): the API fuzzer of the DAG suite
 * (tests/test_api_fuzz.cpp runs them, api_run.h).
 *
 * Several agents submit at once: the main thread and up to two other
 * threads, each running its own list of operations; tasks' callbacks and
 * prologues submit more.  Operations: tasks (kept or not, waited or not,
 * with callbacks), blocking and asynchronous acquisitions, acquisitions of
 * other data while holding one with tasks queued behind it, explicit
 * dependencies declared on tasks already submitted (kept ones) and on tasks
 * not submitted yet, tag dependencies, waits on tasks and on everything
 * (main thread), pause/resume with submissions in between (main thread),
 * partition plans (read-write and read-only), tasks on a whole unit while
 * it is partitioned or on a piece while it is not (StarPU switches plans for
 * them by itself), data registered mid-run and
 * given back with starpu_data_unregister_submit, starpu_data_invalidate_submit,
 * chains submitted link by link from callbacks, kept tasks resubmitted from
 * their own callback, prologues that submit; and (drawn apart, so that the
 * programs above stay what they were for each seed) priorities, end
 * dependencies added right after a task's submission and released a few
 * operations later, starpu_task_wait_for_n_submitted with n > 0, and
 * starpu_data_wont_use on units never invalidated.
 *
 * Each agent owns its data (units), so that what every access must see
 * follows from its agent's order alone, whatever the interleaving: the
 * oracle runs each agent's operations in order on host copies (dag::fold,
 * as the DAG suite), and records for every task access the element versions
 * it must see and for every acquisition the elements it must find.  Work
 * submitted by callbacks and prologues touches units of its own.  Explicit
 * and tag dependencies name tasks on dedicated units (which wait for
 * nothing), so that none can close a cycle with data dependencies. */
#ifndef STARPU_FUSING_TESTS_DAG_API_PROGRAM_H
#define STARPU_FUSING_TESTS_DAG_API_PROGRAM_H

#include "tests/dag/dag_program.h"

#include <cstdint>
#include <vector>

namespace api {

using dag::Access;
using dag::Element;

struct TaskAccess {
	int unit;
	int piece; /* -1: the whole unit */
	Access access;
	std::vector<std::int64_t> expected_versions; /* per element, when the task runs */
};

struct ApiTask {
	int id;
	int agent;
	std::vector<TaskAccess> buffers;
	bool kept = false;     /* destroy = 0: destroyed by the runner at the end */
	bool waited = false;   /* detach = 0: a later wait_task operation waits for it */
	bool callback = false; /* counts its runs */
	/* Explicit dependencies, checked when the task runs: on kept tasks
	 * submitted before it (declared after their submission), and on one
	 * task submitted after it (declared before). */
	std::vector<int> after_submitted;
	int after_future = -1;
	int after_tag = -1;    /* a tag dependency on this (tagged) task */
	bool tagged = false;
	/* Its callback submits a chain of chain_links tasks on chain_unit,
	 * each link's callback the next; each link adds 1 (value and version). */
	int chain_links = 0;
	int chain_unit = -1;
	/* Kept, and resubmitted from its own callback until it ran runs
	 * times; its only buffer is a unit of its own, to which each run adds 1
	 * (value and version). */
	int runs = 1;
	/* Its prologue submits one task adding 1 to prologue_unit. */
	int prologue_unit = -1;
	/* -1: StarPU's lowest priority, 1: its highest, 0: the default. */
	int priority_level = 0;
	/* An end dependency is added right after its submission and released
	 * by the callback of a releasing task its agent submits a few
	 * operations later (a worker's thread: dmda's post_exec_hook, which
	 * StarPU calls in the releasing thread, asserts in a program's, under
	 * dmda alone too); it reads the unit of a gate task first, which spins
	 * until the dependency was added (the task could have terminated
	 * before otherwise). */
	bool end_dependency = false;
	int gate_of = -1;  /* a gate: spins until task gate_of got its end dependency */
	int releases = -1; /* its callback releases task releases' end dependency */
	/* Tasks with an end dependency, submitted before it, that it conflicts
	 * with, released after its submission: it must run after each release. */
	std::vector<int> after_release;
};

enum class OpKind {
	task,             /* submit task */
	acquire,          /* starpu_data_acquire(unit, R or RW), check, write if RW, release */
	acquire_cb,       /* the same in an acquisition callback */
	hold_and_acquire, /* acquire unit RW; submit tasks (some on unit, some on other); acquire other R; release both */
	wait_task,        /* starpu_task_wait(task) */
	wait_all,         /* starpu_task_wait_for_all (main thread) */
	wait_submitted,   /* starpu_task_wait_for_n_submitted(0) (main thread) */
	pause,            /* starpu_pause (main thread): tasks and declarations until resume */
	resume,
	partition,        /* starpu_data_partition_submit or _readonly_submit (unit) */
	unpartition,      /* starpu_data_unpartition_submit (unit) */
	register_unit,    /* starpu_vector_data_register (unit registered mid-run) */
	invalidate,       /* starpu_data_invalidate_submit (unit) */
	unregister_submit,/* starpu_data_unregister_submit (unit) */
	replan,           /* starpu_data_partition_clean then _plan again (unit): the pieces are new handles */
	wait_some,        /* starpu_task_wait_for_n_submitted(count) (main thread) */
	wont_use,         /* starpu_data_wont_use (unit) */
};

struct Op {
	OpKind kind;
	int task = -1;            /* task, wait_task */
	std::vector<int> tasks;   /* hold_and_acquire: submitted while holding */
	int unit = -1;
	int other_unit = -1;      /* hold_and_acquire: acquired while holding unit */
	bool write = false;       /* acquisitions: RW (the host folds a new value in) */
	bool read_only = false;   /* partition: _readonly_submit */
	int host_id = 0;          /* acquisitions that write: the id folded in */
	unsigned count = 0;       /* wait_some */
	std::vector<Element> expected;       /* acquisitions: unit as the oracle has it */
	std::vector<Element> other_expected; /* hold_and_acquire: other_unit */
};

struct Agent {
	std::vector<Op> ops;
};

struct ApiProgram {
	std::uint64_t seed;
	int elements = 4;  /* per unit */
	int pieces = 2;    /* per planned unit */
	int units = 0;     /* all units: agents', dedicated, chains', prologues' */
	std::vector<bool> planned;            /* per unit: has a partition plan */
	std::vector<bool> registered_mid_run; /* per unit: by a register_unit operation */
	std::vector<Agent> agents;        /* agents[0]: the main thread */
	std::vector<ApiTask> tasks;
	std::vector<std::vector<Element>> expected_final; /* per unit; empty: undefined (invalidated) */
};

/* resubmit_from_callbacks: whether kept tasks may resubmit themselves from
 * their callback (StarPU 1.4's dm* policies assert on that, without fusing
 * too: "Prefetching was already requested for this task", 1.4.12). */
ApiProgram generate_api_program(std::uint64_t seed, bool resubmit_from_callbacks);

} // namespace api

#endif
