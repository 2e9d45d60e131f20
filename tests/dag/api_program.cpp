/* Generator and oracle of the API fuzzer; see api_program.h. */
#include "tests/dag/api_program.h"

#include <algorithm>
#include <random>

namespace api {
namespace {

/* Acquisitions that write fold this plus the operation's number in. */
constexpr int kHostIdBase = 1000000;

Op op_of(OpKind kind)
{
	Op op;
	op.kind = kind;
	return op;
}

struct Generator {
	ApiProgram program;
	std::mt19937_64 random;
	/* Draws for the accesses StarPU switches plans for (access_to), apart
	 * so that the rest of a seed's program stays what it was. */
	std::mt19937_64 switch_random;
	/* Draws for priorities, end dependencies, waits for counts and
	 * wont_use, apart too. */
	std::mt19937_64 feature_random;
	/* Tasks of the agent being generated with an end dependency not
	 * released yet. */
	std::vector<int> unreleased;
	std::vector<std::vector<Element>> state; /* the oracle's copy of every unit */
	std::vector<bool> partitioned;           /* per planned unit, in its agent's order */
	std::vector<bool> read_only;             /* partitioned read-only */
	std::vector<bool> invalid;               /* contents undefined until written */
	int host_ids = 0;
	bool resubmit_from_callbacks = true;

	/* What one agent generates with. */
	struct AgentState {
		int index = 0;
		std::vector<int> units;        /* registered and not given back */
		/* Kept tasks that may be named after their submission: StarPU
		 * 1.4 aborts when a dependency is declared on a task terminating
		 * at that moment (_starpu_notify_cg, cg.c:237, without fusing
		 * too), so only those known not to be running: submitted while
		 * StarPU is paused (until the resume), or before a wait for
		 * everything (for good). */
		std::vector<int> nameable;
		std::vector<int> kept_since_wait; /* may still be running */
		bool paused = false;
		std::vector<int> pending_waits;
		std::vector<int> temporary;    /* registered mid-run, still live */
	};

	explicit Generator(std::uint64_t seed)
		: random(seed * 6364136223846793005ull + 1442695040888963407ull), switch_random(seed ^ 0x5eed5c17c4ull),
		  feature_random(seed ^ 0xfea7d5e5ull)
	{
		program.seed = seed;
	}

	double uniform() { return std::uniform_real_distribution<double>(0, 1)(random); }
	double feature_draw() { return std::uniform_real_distribution<double>(0, 1)(feature_random); }
	int below(int n) { return static_cast<int>(random() % static_cast<std::uint64_t>(n)); }

	int new_unit(bool planned)
	{
		const int unit = program.units++;
		std::vector<Element> elements(program.elements);
		for (int e = 0; e < program.elements; e++)
			elements[e] = Element{unit * 1000 + e, 0};
		state.push_back(elements);
		program.planned.push_back(planned);
		program.registered_mid_run.push_back(false);
		partitioned.push_back(false);
		read_only.push_back(false);
		invalid.push_back(false);
		return unit;
	}

	void piece_bounds(int piece, int &begin, int &end) const
	{
		const int per_piece = program.elements / program.pieces;
		begin = piece < 0 ? 0 : piece * per_piece;
		end = piece < 0 ? program.elements : begin + per_piece;
	}

	/* The oracle runs task: records the versions each access sees, then
	 * applies its writes (as dag::Generator::run_on_oracle). */
	void run_on_oracle(ApiTask &task)
	{
		std::int64_t inputs = 0;
		for (TaskAccess &use : task.buffers) {
			int begin, end;
			piece_bounds(use.piece, begin, end);
			for (int e = begin; e < end; e++) {
				use.expected_versions.push_back(state[use.unit][e].version);
				if (use.access != Access::write)
					inputs = dag::add_input(inputs, state[use.unit][e]);
			}
		}
		for (const TaskAccess &use : task.buffers) {
			if (use.access == Access::read)
				continue;
			invalid[use.unit] = false;
			int begin, end;
			piece_bounds(use.piece, begin, end);
			for (int e = begin; e < end; e++) {
				Element &element = state[use.unit][e];
				element.value = dag::fold(use.access == Access::write ? 0 : element.value, inputs, task.id);
				element.version++;
			}
		}
	}

	/* n runs of a task adding 1 to each element of unit (chain links, a
	 * task resubmitting itself, a prologue's task: api_run.cpp). */
	void bump(int unit, int n)
	{
		for (Element &element : state[unit]) {
			element.value += n;
			element.version += n;
		}
	}

	/* The host's write during an acquisition. */
	void host_write(int unit, int host_id)
	{
		for (Element &element : state[unit]) {
			element.value = dag::fold(element.value, 0, host_id);
			element.version++;
		}
	}

	ApiTask &new_task(AgentState &agent)
	{
		ApiTask task;
		task.id = static_cast<int>(program.tasks.size());
		task.agent = agent.index;
		program.tasks.push_back(task);
		return program.tasks.back();
	}

	/* An access to unit as its partition state allows. */
	TaskAccess access_to(int unit, bool may_write, bool may_switch = false)
	{
		Access access = Access::read;
		if (may_write && !(partitioned[unit] && read_only[unit]))
			access = invalid[unit] ? Access::write : (uniform() < 0.4 ? Access::read : (uniform() < 0.5 ? Access::write : Access::read_write));
		if (invalid[unit] && access == Access::read)
			access = Access::write; /* nothing defined to read (only whole units are invalidated) */
		int piece = partitioned[unit] ? below(program.pieces) : -1;
		/* Now and then against the unit's partition state: StarPU
		 * switches plans for the task by itself when it is submitted
		 * (_starpu_data_partition_access_submit), which the window must
		 * follow; follow_switches() keeps the generator's state. */
		if (may_switch && program.planned[unit] && !invalid[unit] &&
		    std::uniform_real_distribution<double>(0, 1)(switch_random) < 0.08)
			piece = partitioned[unit] ? -1 : static_cast<int>(switch_random() % static_cast<std::uint64_t>(program.pieces));
		return TaskAccess{unit, piece, access, {}};
	}

	/* The plans StarPU switches for task's accesses: the whole of a unit
	 * partitioned read-write, or written, is unpartitioned (a read of one
	 * partitioned read-only needs no switch); a piece of one not
	 * partitioned is partitioned for it, read-only for a read. */
	void follow_switches(const ApiTask &task)
	{
		for (const TaskAccess &buffer : task.buffers) {
			const int unit = buffer.unit;
			if (!program.planned[unit])
				continue;
			const bool writes = buffer.access != Access::read;
			if (buffer.piece >= 0 && !partitioned[unit]) {
				partitioned[unit] = true;
				read_only[unit] = !writes;
			} else if (buffer.piece < 0 && partitioned[unit] && (writes || !read_only[unit])) {
				partitioned[unit] = false;
			}
		}
	}

	static bool overlap(const TaskAccess &a, const TaskAccess &b)
	{
		return a.unit == b.unit && (a.piece < 0 || b.piece < 0 || a.piece == b.piece) &&
		       (a.access != Access::read || b.access != Access::read);
	}

	void submit(AgentState &agent, ApiTask &task)
	{
		for (int held : unreleased) {
			bool conflicts = false;
			for (const TaskAccess &mine : task.buffers)
				for (const TaskAccess &its : program.tasks[held].buffers)
					conflicts = conflicts || overlap(mine, its);
			if (conflicts)
				task.after_release.push_back(held);
		}
		task.priority_level = feature_draw() < 0.15 ? (feature_draw() < 0.5 ? -1 : 1) : 0;
		follow_switches(task);
		run_on_oracle(task);
		Op op;
		op.kind = OpKind::task;
		op.task = task.id;
		program.agents[agent.index].ops.push_back(op);
	}

	/* A task on one dedicated unit, which waits for nothing: a target of
	 * dependencies declared before its submission. */
	int dedicated_task(AgentState &agent, bool tagged)
	{
		ApiTask &task = new_task(agent);
		task.buffers.push_back(TaskAccess{new_unit(false), -1, Access::read_write, {}});
		task.tagged = tagged;
		return task.id;
	}

	void add_task(AgentState &agent, bool simple)
	{
		ApiTask *task = &new_task(agent);
		const int nbuffers = 1 + below(std::min<int>(3, static_cast<int>(agent.units.size())));
		std::vector<int> units = agent.units;
		std::shuffle(units.begin(), units.end(), random);
		for (int b = 0; b < nbuffers; b++)
			task->buffers.push_back(access_to(units[b], true, true));
		task->callback = uniform() < 0.3;
		if (!agent.nameable.empty() && uniform() < (agent.paused ? 0.5 : 0.1))
			task->after_submitted.push_back(agent.nameable[below(static_cast<int>(agent.nameable.size()))]);
		const double pick = uniform();
		if (pick < 0.2) {
			task->kept = true;
			(agent.paused ? agent.nameable : agent.kept_since_wait).push_back(task->id);
		}
		if (simple) {
			submit(agent, *task);
			return;
		}
		if (!task->kept && pick < 0.3) {
			task->waited = true;
			agent.pending_waits.push_back(task->id);
		}
		int future = -1;
		const double extra = uniform();
		if (extra < 0.05) {
			const int id = task->id;
			future = dedicated_task(agent, false);
			task = &program.tasks[id];
			task->after_future = future;
		} else if (extra < 0.10) {
			const int id = task->id;
			future = dedicated_task(agent, true);
			task = &program.tasks[id];
			task->tagged = true;
			task->after_tag = future;
		} else if (extra < 0.15) {
			task->chain_unit = new_unit(false);
			task->chain_links = 1 + below(5);
			task->callback = true;
		} else if (extra < 0.19) {
			task->prologue_unit = new_unit(false);
		} else if (extra < 0.23 && !task->waited && resubmit_from_callbacks) {
			/* Resubmitted from its own callback: one access to a unit of
			 * its own, not named by dependencies (StarPU refuses them
			 * after a resubmission). */
			task->buffers.assign(1, TaskAccess{new_unit(false), -1, Access::read_write, {}});
			task->kept = true;
			task->runs = 2 + below(3);
			task->after_submitted.clear();
			agent.kept_since_wait.erase(std::remove(agent.kept_since_wait.begin(), agent.kept_since_wait.end(), task->id),
						    agent.kept_since_wait.end());
		}
		const bool end_dependency = future < 0 && prepare_end_dependency(agent, task);
		if (task->runs > 1) {
			Op op;
			op.kind = OpKind::task;
			op.task = task->id;
			program.agents[agent.index].ops.push_back(op);
			bump(task->buffers[0].unit, task->runs);
		} else {
			submit(agent, *task);
		}
		if (task->chain_unit >= 0)
			bump(task->chain_unit, task->chain_links);
		if (task->prologue_unit >= 0)
			bump(task->prologue_unit, 1);
		if (future >= 0)
			submit(agent, program.tasks[future]); /* right after: the agent may block next */
		if (end_dependency)
			follow_end_dependency(agent, task->id);
	}

	/* Whether task, about to be submitted, gets an end dependency right
	 * after its submission: then a gate task on a unit of its own goes
	 * first, and task reads that unit first. */
	bool prepare_end_dependency(AgentState &agent, ApiTask *&task)
	{
		if (task->kept || task->waited || task->tagged || task->after_future >= 0 || task->after_tag >= 0 || task->runs != 1 ||
		    task->chain_links != 0 || task->prologue_unit >= 0 || !task->after_submitted.empty() || feature_draw() >= 0.1)
			return false;
		const int id = task->id;
		const int gate = dedicated_task(agent, false);
		task = &program.tasks[id];
		program.tasks[gate].gate_of = id;
		submit(agent, program.tasks[gate]);
		task->end_dependency = true;
		task->callback = true;
		task->buffers.insert(task->buffers.begin(), TaskAccess{program.tasks[gate].buffers[0].unit, -1, Access::read, {}});
		return true;
	}

	/* After task id's submission: a few tasks (a blocking operation could
	 * wait for what waits for the release), then the releasing task. */
	void follow_end_dependency(AgentState &agent, int id)
	{
		unreleased.push_back(id);
		const int later = static_cast<int>(feature_random() % 3);
		for (int t = 0; t < later; t++)
			add_task(agent, true);
		unreleased.erase(std::remove(unreleased.begin(), unreleased.end(), id), unreleased.end());
		const int releaser = dedicated_task(agent, false);
		program.tasks[releaser].releases = id;
		program.tasks[releaser].callback = true;
		submit(agent, program.tasks[releaser]);
	}

	/* Only on a unit that is never invalidated: wont_use's callback
	 * prefetches the handle, and StarPU alone aborts when an invalidation
	 * came first and no writer holds the handle yet (1.3 asserts the
	 * handle is initialized, 1.4 that it has a valid copy; lws-unfused-api
	 * on 1.4.12).  tests/test_starpu_promises.cpp has the invalidation
	 * right after, with the next writer. */
	void add_wont_use(AgentState &agent)
	{
		const int unit = whole_unit(agent);
		if (unit < 0 || invalid[unit] || program.planned[unit] || program.registered_mid_run[unit])
			return;
		Op op;
		op.kind = OpKind::wont_use;
		op.unit = unit;
		program.agents[agent.index].ops.push_back(op);
	}

	/* A whole unit of the agent that is not partitioned, or -1. */
	int whole_unit(AgentState &agent, int except = -1)
	{
		std::vector<int> candidates;
		for (int unit : agent.units)
			if (!partitioned[unit] && unit != except)
				candidates.push_back(unit);
		return candidates.empty() ? -1 : candidates[below(static_cast<int>(candidates.size()))];
	}

	/* A partitioned unit of the agent, drawn from switch_random, or -1. */
	int partitioned_unit(AgentState &agent)
	{
		std::vector<int> candidates;
		for (int unit : agent.units)
			if (partitioned[unit])
				candidates.push_back(unit);
		if (candidates.empty())
			return -1;
		return candidates[switch_random() % candidates.size()];
	}

	void add_acquisition(AgentState &agent, bool asynchronous)
	{
		int unit = whole_unit(agent);
		/* Now and then the whole of a partitioned unit: StarPU
		 * unpartitions it for the acquisition by itself
		 * (_starpu_data_check_initialized, datawizard/user_interactions.c),
		 * unless it is only read while partitioned read-only; the window
		 * must follow that switch as it follows a task's. */
		const int switching = partitioned_unit(agent);
		if (switching >= 0 && std::uniform_real_distribution<double>(0, 1)(switch_random) < 0.15)
			unit = switching;
		if (unit < 0 || invalid[unit])
			return;
		Op op;
		op.kind = asynchronous ? OpKind::acquire_cb : OpKind::acquire;
		op.unit = unit;
		op.write = uniform() < 0.5;
		if (partitioned[unit] && (op.write || !read_only[unit]))
			partitioned[unit] = false;
		op.expected = state[unit];
		if (op.write) {
			op.host_id = kHostIdBase + host_ids++;
			host_write(unit, op.host_id);
		}
		program.agents[agent.index].ops.push_back(op);
	}

	void add_hold_and_acquire(AgentState &agent)
	{
		const int held = whole_unit(agent);
		const int other = held < 0 ? -1 : whole_unit(agent, held);
		if (held < 0 || other < 0 || invalid[held] || invalid[other])
			return;
		Op op;
		op.kind = OpKind::hold_and_acquire;
		op.unit = held;
		op.other_unit = other;
		op.write = true;
		op.expected = state[held];
		op.host_id = kHostIdBase + host_ids++;
		host_write(held, op.host_id);
		/* Tasks on the held unit run after the release; tasks on the other
		 * unit before the acquisition of it. */
		for (int unit : {held, other}) {
			const int count = 1 + below(2);
			for (int t = 0; t < count; t++) {
				ApiTask &task = new_task(agent);
				task.buffers.push_back(access_to(unit, true));
				task.callback = uniform() < 0.3;
				run_on_oracle(task);
				op.tasks.push_back(task.id);
			}
		}
		op.other_expected = state[other];
		program.agents[agent.index].ops.push_back(op);
	}

	void add_partition_toggle(AgentState &agent)
	{
		std::vector<int> planned;
		for (int unit : agent.units)
			if (program.planned[unit] && !invalid[unit])
				planned.push_back(unit);
		if (planned.empty())
			return;
		Op op;
		op.unit = planned[below(static_cast<int>(planned.size()))];
		/* Now and then the unit is invalidated instead: StarPU acquires it
		 * for writing (starpu_data_invalidate_submit), unpartitioning it
		 * when partitioned, a switch the window follows.  Only its whole
		 * is written next (access_to): writing its pieces after an
		 * invalidation failed with fusion off (23 to 30 of 200 seeds per
		 * base: a task saw a later version), probably because a
		 * partition of an uninitialised parent submits no switch task
		 * (datawizard/filters.c) to order the pieces after it. */
		const double draw = std::uniform_real_distribution<double>(0, 1)(switch_random);
		if (draw < 0.1) {
			op.kind = OpKind::invalidate;
			invalid[op.unit] = true;
			partitioned[op.unit] = false;
		} else if (draw < 0.3) {
			/* The plan cleaned (StarPU unpartitions first when it is
			 * active) and made again, while tasks on its pieces may
			 * still be deferred or queued: the window cleans a plan
			 * StarPU never saw without StarPU's synchronisation. */
			op.kind = OpKind::replan;
			partitioned[op.unit] = false;
		} else if (partitioned[op.unit]) {
			op.kind = OpKind::unpartition;
			partitioned[op.unit] = false;
		} else {
			op.kind = OpKind::partition;
			op.read_only = uniform() < 0.4;
			partitioned[op.unit] = true;
			read_only[op.unit] = op.read_only;
		}
		program.agents[agent.index].ops.push_back(op);
	}

	void add_temporary_unit(AgentState &agent)
	{
		Op op;
		if (!agent.temporary.empty() && uniform() < 0.5) {
			op.unit = agent.temporary[below(static_cast<int>(agent.temporary.size()))];
			if (uniform() < 0.5) {
				op.kind = OpKind::invalidate;
				invalid[op.unit] = true;
			} else {
				give_back(agent, op.unit);
				return;
			}
		} else {
			op.kind = OpKind::register_unit;
			op.unit = new_unit(false);
			program.registered_mid_run[op.unit] = true;
			agent.units.push_back(op.unit);
			agent.temporary.push_back(op.unit);
		}
		program.agents[agent.index].ops.push_back(op);
	}

	void give_back(AgentState &agent, int unit)
	{
		Op op;
		op.kind = OpKind::unregister_submit;
		op.unit = unit;
		program.agents[agent.index].ops.push_back(op);
		agent.units.erase(std::remove(agent.units.begin(), agent.units.end(), unit), agent.units.end());
		agent.temporary.erase(std::remove(agent.temporary.begin(), agent.temporary.end(), unit), agent.temporary.end());
		/* An invalidated unit given back holds nothing defined. */
		if (invalid[unit])
			state[unit].clear();
	}

	void add_wait(AgentState &agent)
	{
		if (agent.pending_waits.empty())
			return;
		const int index = below(static_cast<int>(agent.pending_waits.size()));
		Op op;
		op.kind = OpKind::wait_task;
		op.task = agent.pending_waits[index];
		agent.pending_waits.erase(agent.pending_waits.begin() + index);
		program.agents[agent.index].ops.push_back(op);
	}

	void add_pause_block(AgentState &agent)
	{
		program.agents[agent.index].ops.push_back(op_of(OpKind::pause));
		agent.paused = true;
		const std::size_t nameable_before = agent.nameable.size();
		const int count = 1 + below(4);
		for (int t = 0; t < count; t++)
			add_task(agent, true);
		program.agents[agent.index].ops.push_back(op_of(OpKind::resume));
		agent.paused = false;
		/* Named only while paused: they may run from now on. */
		agent.kept_since_wait.insert(agent.kept_since_wait.end(), agent.nameable.begin() + static_cast<std::ptrdiff_t>(nameable_before),
					     agent.nameable.end());
		agent.nameable.resize(nameable_before);
	}

	void add_wait_for_everything(AgentState &agent, OpKind kind)
	{
		program.agents[agent.index].ops.push_back(op_of(kind));
		/* Every task of the agent has ended (only the main thread waits
		 * so, and the other agents' tasks are theirs). */
		agent.nameable.insert(agent.nameable.end(), agent.kept_since_wait.begin(), agent.kept_since_wait.end());
		agent.kept_since_wait.clear();
	}

	void generate_agent(AgentState &agent, int operations)
	{
		for (int u = 0; u < 2 + below(3); u++)
			agent.units.push_back(new_unit(u == 0 || uniform() < 0.3));
		const bool main_thread = agent.index == 0;
		for (int i = 0; i < operations; i++) {
			const double pick = uniform();
			if (pick < 0.55)
				add_task(agent, false);
			else if (pick < 0.62)
				add_acquisition(agent, false);
			else if (pick < 0.68)
				add_acquisition(agent, true);
			else if (pick < 0.73)
				add_hold_and_acquire(agent);
			else if (pick < 0.80)
				add_wait(agent);
			else if (pick < 0.87)
				add_partition_toggle(agent);
			else if (pick < 0.92)
				add_temporary_unit(agent);
			else if (main_thread && pick < 0.95)
				add_pause_block(agent);
			else if (main_thread && pick < 0.975)
				add_wait_for_everything(agent, OpKind::wait_all);
			else if (main_thread)
				add_wait_for_everything(agent, OpKind::wait_submitted);
			const double feature = feature_draw();
			if (feature < 0.03) {
				add_wont_use(agent);
			} else if (feature < 0.05 && main_thread) {
				Op op;
				op.kind = OpKind::wait_some;
				op.count = 1 + static_cast<unsigned>(feature_random() % 20);
				program.agents[agent.index].ops.push_back(op);
			}
		}
		/* Every agent ends with its data whole, its waits done and its
		 * temporary units given back. */
		for (int unit : agent.units)
			if (partitioned[unit]) {
				Op op;
				op.kind = OpKind::unpartition;
				op.unit = unit;
				program.agents[agent.index].ops.push_back(op);
				partitioned[unit] = false;
			}
		while (!agent.pending_waits.empty())
			add_wait(agent);
		while (!agent.temporary.empty())
			give_back(agent, agent.temporary.back());
		/* A unit invalidated and not written since holds nothing defined. */
		for (int unit : agent.units)
			if (invalid[unit])
				state[unit].clear();
	}
};

} // namespace

ApiProgram generate_api_program(std::uint64_t seed, bool resubmit_from_callbacks)
{
	Generator generator(seed);
	generator.resubmit_from_callbacks = resubmit_from_callbacks;
	const int nagents = 1 + static_cast<int>(seed % 3);
	generator.program.agents.resize(nagents);
	for (int a = 0; a < nagents; a++) {
		Generator::AgentState agent;
		agent.index = a;
		generator.generate_agent(agent, 20 + generator.below(40));
	}
	generator.program.expected_final = generator.state;
	return generator.program;
}

} // namespace api
