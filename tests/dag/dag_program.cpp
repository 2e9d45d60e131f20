/* Generator and oracle of random task graphs; see dag_program.h. */
#include "tests/dag/dag_program.h"

#include <algorithm>
#include <random>

namespace dag {

std::int64_t fold(std::int64_t old_value, std::int64_t inputs, int task_id)
{
	const std::uint64_t mask = (std::uint64_t(1) << 61) - 1;
	return static_cast<std::int64_t>((static_cast<std::uint64_t>(old_value) * 1000003u +
					  static_cast<std::uint64_t>(inputs) * 31u + static_cast<std::uint64_t>(task_id) + 1u) & mask);
}

std::int64_t add_input(std::int64_t inputs, const Element &element)
{
	return static_cast<std::int64_t>(static_cast<std::uint64_t>(inputs) + static_cast<std::uint64_t>(element.value) +
					 7u * static_cast<std::uint64_t>(element.version));
}

void range_bounds(const Program &program, const Range &range, int &begin, int &end)
{
	const int elements = program.knobs.elements;
	if (range.piece < 0) {
		begin = 0;
		end = elements;
		return;
	}
	const int per_piece = elements / program.knobs.pieces;
	begin = range.piece * per_piece;
	end = begin + per_piece;
}

GeneratorKnobs knobs_for_seed(std::uint64_t seed, int workers)
{
	std::mt19937_64 random(seed * 7919 + 17);
	GeneratorKnobs knobs;
	knobs.workers = workers;
	/* Alternate narrow/deep and wide/shallow graphs, small and larger ones. */
	knobs.tasks = 60 + static_cast<int>(random() % 400);
	knobs.units = 2 + static_cast<int>(random() % 24);
	knobs.max_buffers = 1 + static_cast<int>(random() % 4);
	knobs.codelets = 1 + static_cast<int>(random() % 3);
	knobs.read_fraction = 0.2 + 0.6 * std::uniform_real_distribution<double>(0, 1)(random);
	knobs.partitioned_fraction = (seed % 3 == 0) ? 0.0 : 0.3;
	knobs.filtered_fraction = (seed % 4 == 1) ? 0.0 : 0.2;
	knobs.extra_dependency_rate = (seed % 5 == 2) ? 0.0 : 0.08;
	knobs.tag_rate = (seed % 5 == 3) ? 0.0 : 0.06;
	knobs.special_rate = (seed % 6 == 4) ? 0.0 : 0.1;
	knobs.wait_rate = 0.02;
	knobs.acquire_rate = 0.02;
	return knobs;
}

namespace {

struct Generator {
	Program program;
	std::mt19937_64 random;
	std::vector<std::vector<Element>> state;  /* the oracle's data */
	std::vector<bool> partitioned;            /* planned units: current state */
	std::vector<int> pending_waits;           /* waited tasks not yet waited */
	std::vector<bool> already_waited;         /* per task: its wait step is emitted */
	std::vector<int> tagged_tasks;

	explicit Generator(std::uint64_t seed, const GeneratorKnobs &knobs) : random(seed)
	{
		program.seed = seed;
		program.knobs = knobs;
		program.total_units = knobs.units;
		for (int u = 0; u < knobs.units; u++) {
			double pick = uniform();
			program.filtered.push_back(pick < knobs.filtered_fraction);
			program.planned.push_back(!program.filtered.back() && pick < knobs.filtered_fraction + knobs.partitioned_fraction);
			partitioned.push_back(false);
			state.push_back(initial_unit(u));
		}
	}

	std::vector<Element> initial_unit(int unit)
	{
		std::vector<Element> elements(program.knobs.elements);
		for (int e = 0; e < program.knobs.elements; e++)
			elements[e] = Element{unit * 1000 + e, 0};
		return elements;
	}

	double uniform() { return std::uniform_real_distribution<double>(0, 1)(random); }
	int below(int n) { return static_cast<int>(random() % static_cast<std::uint64_t>(n)); }

	void toggle_partition(int unit, bool want_partitioned)
	{
		if (partitioned[unit] == want_partitioned)
			return;
		Step step;
		step.kind = want_partitioned ? StepKind::partition : StepKind::unpartition;
		step.unit = unit;
		program.steps.push_back(step);
		partitioned[unit] = want_partitioned;
	}

	Range pick_range(int unit)
	{
		if (program.filtered[unit])
			return Range{unit, below(program.knobs.pieces)};
		if (program.planned[unit]) {
			toggle_partition(unit, uniform() < 0.5 ? !partitioned[unit] : partitioned[unit]);
			return Range{unit, partitioned[unit] ? below(program.knobs.pieces) : -1};
		}
		return Range{unit, -1};
	}

	Access pick_access()
	{
		if (uniform() < program.knobs.read_fraction)
			return Access::read;
		return uniform() < 0.5 ? Access::write : Access::read_write;
	}

	/* The oracle: what the task sees and leaves, in submission order. */
	void run_on_oracle(TaskSpec &task)
	{
		std::int64_t inputs = 0;
		for (BufferUse &use : task.buffers) {
			int begin, end;
			range_bounds(program, use.range, begin, end);
			std::vector<Element> &unit = state[use.range.unit];
			for (int e = begin; e < end; e++) {
				use.expected_versions.push_back(unit[e].version);
				if (use.access != Access::write)
					inputs = add_input(inputs, unit[e]);
			}
		}
		for (const BufferUse &use : task.buffers) {
			if (use.access == Access::read)
				continue;
			int begin, end;
			range_bounds(program, use.range, begin, end);
			std::vector<Element> &unit = state[use.range.unit];
			for (int e = begin; e < end; e++) {
				unit[e].value = fold(use.access == Access::write ? 0 : unit[e].value, inputs, task.id);
				unit[e].version++;
			}
		}
	}

	void add_task(int id)
	{
		const GeneratorKnobs &knobs = program.knobs;
		TaskSpec task;
		task.id = id;
		task.codelet = below(knobs.codelets);
		task.priority = below(knobs.max_priority + 1);
		task.callback = uniform() < knobs.callback_rate;
		if (uniform() < knobs.special_rate) {
			task.special = static_cast<Special>(1 + below(6));
		}
		switch (task.special) {
		case Special::commute:
			program.expected_commute++;
			break;
		case Special::redux:
			program.expected_redux++;
			break;
		case Special::redux_read:
			task.expected_accumulator = program.expected_redux;
			break;
		case Special::no_sequential_consistency: {
			/* Its own unit: nothing else orders accesses to it. */
			int unit = program.total_units++;
			program.filtered.push_back(false);
			program.planned.push_back(false);
			partitioned.push_back(false);
			state.push_back(initial_unit(unit));
			task.buffers.push_back(BufferUse{Range{unit, -1}, Access::read_write, {}});
			break;
		}
		default: {
			if (task.special == Special::pinned)
				task.pinned_worker = below(knobs.workers);
			task.scratch = task.special == Special::scratch;
			int nbuffers = 1 + below(std::min(knobs.max_buffers, knobs.units));
			std::vector<int> units(knobs.units);
			for (int u = 0; u < knobs.units; u++)
				units[u] = u;
			std::shuffle(units.begin(), units.end(), random);
			for (int b = 0; b < nbuffers; b++)
				task.buffers.push_back(BufferUse{pick_range(units[b]), pick_access(), {}});
			break;
		}
		}
		already_waited.push_back(false);
		int before = id > 0 ? below(id) : -1;
		if (before >= 0 && !already_waited[before] && uniform() < knobs.extra_dependency_rate) {
			/* A task others depend on explicitly is kept attached
			 * (StarPU may free the job of a terminated detached task)
			 * and is waited for at the end, not in the middle. */
			task.after.push_back(before);
			TaskSpec &target = program.tasks[before];
			if (!target.waited) {
				target.waited = true;
				pending_waits.push_back(before);
			}
		}
		if (uniform() < knobs.tag_rate) {
			task.tagged = true;
			if (!tagged_tasks.empty())
				task.after_tags.push_back(tagged_tasks[below(static_cast<int>(tagged_tasks.size()))]);
			tagged_tasks.push_back(id);
		}
		if (uniform() < knobs.wait_rate) {
			task.waited = true;
			pending_waits.push_back(id);
		}
		run_on_oracle(task);
		program.tasks.push_back(task);
		Step step;
		step.kind = StepKind::task;
		step.task = id;
		program.steps.push_back(step);
	}

	void maybe_wait_or_acquire()
	{
		const GeneratorKnobs &knobs = program.knobs;
		if (!pending_waits.empty() && uniform() < 3 * knobs.wait_rate) {
			int index = below(static_cast<int>(pending_waits.size()));
			Step step;
			step.kind = StepKind::wait_task;
			step.task = pending_waits[index];
			program.steps.push_back(step);
			already_waited[step.task] = true;
			pending_waits.erase(pending_waits.begin() + index);
		}
		if (uniform() < knobs.acquire_rate) {
			int unit = below(knobs.units);
			if (!program.filtered[unit] && !(program.planned[unit] && partitioned[unit])) {
				Step step;
				step.kind = StepKind::acquire;
				step.unit = unit;
				step.expected = state[unit];
				program.steps.push_back(step);
			}
		}
		if (uniform() < knobs.wait_rate / 2) {
			Step step;
			step.kind = StepKind::wait_all;
			program.steps.push_back(step);
		}
	}

	void finish()
	{
		for (int id : pending_waits) {
			Step step;
			step.kind = StepKind::wait_task;
			step.task = id;
			program.steps.push_back(step);
		}
		for (int u = 0; u < program.knobs.units; u++)
			if (program.planned[u])
				toggle_partition(u, false);
		program.expected_final = state;
	}
};

} // namespace

Program generate(std::uint64_t seed, const GeneratorKnobs &knobs)
{
	Generator generator(seed, knobs);
	for (int id = 0; id < knobs.tasks; id++) {
		generator.maybe_wait_or_acquire();
		generator.add_task(id);
	}
	generator.finish();
	return generator.program;
}

} // namespace dag
