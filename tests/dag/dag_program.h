/* Seeded random task graphs and their host-side oracle (no StarPU here).
 *
 * A program is a list of steps in submission order: tasks, waits, and
 * (un)partitioning of data.  Data are "units": vectors of Element, each
 * element carrying a value and a version.  A task reads and writes ranges
 * of elements (a whole unit, or one piece of a partitioned unit); writing
 * folds the task's inputs and id into each value and increments each
 * version.  The oracle runs the program in submission order on the host:
 * the expected final elements, and, for every access of every task, the
 * versions the elements must have when the task runs.  A task that runs
 * twice, is skipped or runs out of dependency order therefore meets
 * unexpected versions, and the runner names it (dag_run.h).
 *
 * Knobs (GeneratorKnobs) cover size, width (units), fan-in (buffers per
 * task), extra dependencies (tags, explicit), priorities, callbacks, waits
 * in the middle of submission, partitioned units (filters and asynchronous
 * partition plans), tasks that must not be fused (COMMUTE accumulations,
 * SCRATCH buffers, sequential consistency off, pinned), and REDUX
 * accumulations, which only submission-time groups fuse, with readers of
 * the accumulator between them. */
#ifndef STARPU_FUSING_TESTS_DAG_PROGRAM_H
#define STARPU_FUSING_TESTS_DAG_PROGRAM_H

#include <cstdint>
#include <string>
#include <vector>

namespace dag {

struct Element {
	std::int64_t value;
	std::int64_t version;
};

enum class Access { read, write, read_write };

/* A unit, or one piece of it when partitioned. */
struct Range {
	int unit;
	int piece; /* -1: the whole unit */
};

struct BufferUse {
	Range range;
	Access access;
	std::vector<std::int64_t> expected_versions; /* per element, when the task runs */
};

enum class Special {
	none,
	commute,          /* STARPU_RW|STARPU_COMMUTE on the commute accumulator */
	redux,            /* STARPU_REDUX on the reduction accumulator */
	scratch,          /* an extra STARPU_SCRATCH buffer */
	no_sequential_consistency, /* on its own private unit only */
	pinned,           /* execute_on_a_specific_worker */
	redux_read,       /* STARPU_R on the reduction accumulator: sees every earlier redux task */
};

struct TaskSpec {
	int id;
	int codelet;      /* 0..ncodelets-1: different families, durations */
	int priority;
	Special special = Special::none;
	int pinned_worker = 0;
	std::vector<BufferUse> buffers;
	std::vector<int> after;      /* explicit dependencies (task ids) */
	std::vector<int> after_tags; /* tag dependencies (task ids, tagged) */
	bool tagged = false;
	bool callback = false;
	bool waited = false;         /* detach = 0, waited by a later step */
	bool scratch = false;        /* gets an extra STARPU_SCRATCH buffer */
	std::int64_t expected_accumulator = 0; /* redux_read: the redux tasks before it */
};

enum class StepKind {
	task,
	wait_task,        /* starpu_task_wait(task) */
	acquire,          /* starpu_data_acquire(unit, R) then check, release */
	wait_all,         /* starpu_task_wait_for_all */
	partition,        /* starpu_data_partition_submit(unit) */
	unpartition,      /* starpu_data_unpartition_submit(unit) */
};

struct Step {
	StepKind kind;
	int task = -1;    /* task and wait_task */
	int unit = -1;    /* acquire, (un)partition */
	std::vector<Element> expected; /* acquire: the unit as the oracle has it */
};

struct GeneratorKnobs {
	int tasks = 200;
	int units = 12;          /* width: distinct data */
	int elements = 8;        /* per unit */
	int pieces = 4;          /* per partitioned unit */
	int max_buffers = 3;     /* fan-in */
	int codelets = 3;
	double partitioned_fraction = 0.25; /* of units, with asynchronous plans */
	double filtered_fraction = 0.15;    /* of units, partitioned once with a filter */
	double read_fraction = 0.5;         /* of accesses */
	double extra_dependency_rate = 0.05;
	double tag_rate = 0.05;
	double callback_rate = 0.3;
	double wait_rate = 0.02;
	double acquire_rate = 0.02;
	double special_rate = 0.08;
	int max_priority = 3;
	int workers = 2;          /* for pinned tasks */
};

struct Program {
	std::uint64_t seed;
	GeneratorKnobs knobs;
	int total_units = 0;              /* knobs.units plus private units */
	std::vector<bool> filtered;       /* per unit: partitioned by a filter for the whole run */
	std::vector<bool> planned;        /* per unit: asynchronous partition plan */
	std::vector<TaskSpec> tasks;
	std::vector<Step> steps;
	std::vector<std::vector<Element>> expected_final; /* per unit */
	std::int64_t expected_commute = 0; /* tasks adding 1 in COMMUTE mode */
	std::int64_t expected_redux = 0;   /* tasks adding 1 in REDUX mode */
};

/* Knobs derived from the seed (every feature appears across a few seeds). */
GeneratorKnobs knobs_for_seed(std::uint64_t seed, int workers);

/* The program for seed and knobs, with its oracle filled in. */
Program generate(std::uint64_t seed, const GeneratorKnobs &knobs);

/* Adds an element read by a task to its inputs (wrapping arithmetic). */
std::int64_t add_input(std::int64_t inputs, const Element &element);

/* What a task writes into an element: a fold of its inputs and its id. */
std::int64_t fold(std::int64_t old_value, std::int64_t inputs, int task_id);

/* Elements [begin, end) of a unit covered by range. */
void range_bounds(const Program &program, const Range &range, int &begin, int &end);

} // namespace dag

#endif
