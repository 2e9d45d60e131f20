/* Runs API fuzzer programs on StarPU; see api_run.h.
 *
 * Threads: the main thread runs agent 0's operations and starts one thread
 * per other agent; task bodies, callbacks and prologues run wherever StarPU
 * (or the fusing policy) runs them.  What they observe goes to
 * dag::RunObservations.  Each agent's tasks and data are touched only by
 * that agent and by StarPU. */
#include "tests/dag/api_run.h"

#include "starpu_fusing.h"
#include "tests/test_codelets.hpp"

#include <starpu.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace api {
namespace {

using dag::Element;

const starpu_tag_t kTagBase = 2000000;

dag::RunObservations observations;
/* Per task with an end dependency: added, released (run_and_check sizes them). */
std::unique_ptr<std::atomic<bool>[]> end_dependency_added, end_dependency_released;

std::string name_of(const ApiTask &task)
{
	return "task " + std::to_string(task.id) + " (agent " + std::to_string(task.agent) + ")";
}

void count_batch()
{
	if (starpu_fusing_current_batch_size() > 0)
		observations.in_batches++;
}

/* Adds 1 to every element after checking they are at version expected. */
void bump_elements(void *buffer, std::int64_t expected, const std::string &who)
{
	Element *elements = reinterpret_cast<Element *>(STARPU_VECTOR_GET_PTR(buffer));
	for (unsigned e = 0; e < STARPU_VECTOR_GET_NX(buffer); e++) {
		if (elements[e].version != expected)
			observations.problem(who + " saw version " + std::to_string(elements[e].version) + ", expected " + std::to_string(expected));
		elements[e].value++;
		elements[e].version++;
	}
}

/* The body of every task of the program. */
void program_body(void *buffers[], void *cl_arg)
{
	const ApiTask &task = *static_cast<const ApiTask *>(cl_arg);
	count_batch();
	if (task.gate_of >= 0)
		while (!end_dependency_added[task.gate_of])
			std::this_thread::yield();
	for (int held : task.after_release)
		if (!end_dependency_released[held])
			observations.problem(name_of(task) + " ran before the release of task " + std::to_string(held) +
					     "'s end dependency, added after its submission");
	const int run = observations.executions[task.id]++;
	if (task.runs > 1) {
		bump_elements(buffers[0], run, name_of(task) + " run " + std::to_string(run));
		observations.done[task.id] = 1;
		return;
	}
	if (run != 0)
		observations.problem(name_of(task) + " ran twice");
	for (int before : task.after_submitted)
		if (!observations.done[before])
			observations.problem(name_of(task) + " ran before task " + std::to_string(before) + " (dependency declared after its submission)");
	for (int before : {task.after_future, task.after_tag})
		if (before >= 0 && !observations.done[before])
			observations.problem(name_of(task) + " ran before task " + std::to_string(before) + " (dependency declared before its submission)");
	std::int64_t inputs = 0;
	for (std::size_t b = 0; b < task.buffers.size(); b++) {
		const TaskAccess &use = task.buffers[b];
		const Element *elements = reinterpret_cast<const Element *>(STARPU_VECTOR_GET_PTR(buffers[b]));
		if (STARPU_VECTOR_GET_NX(buffers[b]) != use.expected_versions.size()) {
			observations.problem(name_of(task) + " got a buffer of the wrong size");
			return;
		}
		if (use.access == dag::Access::write)
			continue;
		for (std::size_t e = 0; e < use.expected_versions.size(); e++) {
			if (elements[e].version != use.expected_versions[e])
				observations.problem(name_of(task) + " saw version " + std::to_string(elements[e].version) + " of unit " +
						     std::to_string(use.unit) + ", expected " + std::to_string(use.expected_versions[e]));
			inputs = dag::add_input(inputs, elements[e]);
		}
	}
	for (std::size_t b = 0; b < task.buffers.size(); b++) {
		const TaskAccess &use = task.buffers[b];
		if (use.access == dag::Access::read)
			continue;
		Element *elements = reinterpret_cast<Element *>(STARPU_VECTOR_GET_PTR(buffers[b]));
		for (std::size_t e = 0; e < use.expected_versions.size(); e++) {
			elements[e].value = dag::fold(use.access == dag::Access::write ? 0 : elements[e].value, inputs, task.id);
			elements[e].version = use.expected_versions[e] + 1;
		}
	}
	observations.done[task.id] = 1;
}

/* A link of a chain a callback submits, or the task a prologue submits. */
struct Extra {
	const ApiTask *origin;
	int index;                 /* the link's (0 for a prologue's task) */
	starpu_data_handle_t handle;
};

void extra_body(void *buffers[], void *cl_arg)
{
	const Extra &extra = *static_cast<const Extra *>(cl_arg);
	count_batch();
	bump_elements(buffers[0], extra.index, "link " + std::to_string(extra.index) + " submitted for " + name_of(*extra.origin));
}

struct starpu_codelet program_codelets[2] = {make_test_codelet(program_body, "api_even", {}),
					      make_test_codelet(program_body, "api_odd", {})};

/* Tasks of one buffer run as codelets of a fixed buffer count, one per
 * access mode, with a batched implementation: so the fusing layer forms
 * kernel groups and batches of them.  The implementation runs its tasks in
 * reverse order, which the contract allows (they could all run at once,
 * starpu_fusing.h): two tasks that depend on each other in one call make a
 * task see a version it should not. */
void program_batch(unsigned ntasks, void **task_buffers[], void *task_args[], void *)
{
	for (unsigned i = ntasks; i-- > 0;)
		program_body(task_buffers[i], task_args[i]);
}
struct starpu_codelet single_buffer_codelets[3] = {make_test_codelet(program_body, "api_single_read", {STARPU_R}),
						   make_test_codelet(program_body, "api_single_write", {STARPU_W}),
						   make_test_codelet(program_body, "api_single_read_write", {STARPU_RW})};

void register_single_buffer_batches()
{
	static bool registered = false; /* the registry is the process's, across StarPU sessions */
	if (registered)
		return;
	registered = true;
	struct starpu_fusing_batched_implementation batched = {};
	batched.size = sizeof(batched);
	batched.cpu_func = program_batch;
	for (struct starpu_codelet &codelet : single_buffer_codelets)
		if (starpu_fusing_register_batched(&codelet, &batched) != 0)
			observations.problem(std::string("registering the batched implementation of ") + codelet.name + " failed");
}
struct starpu_codelet extra_codelet = make_test_codelet(extra_body, "api_extra", {STARPU_RW});

void submit_extra(const ApiTask &origin, int index, starpu_data_handle_t handle);

/* A link's callback: the next link. */
void next_link(void *arg)
{
	std::unique_ptr<Extra> extra(static_cast<Extra *>(arg));
	if (extra->index + 1 < extra->origin->chain_links)
		submit_extra(*extra->origin, extra->index + 1, extra->handle);
}

void submit_extra(const ApiTask &origin, int index, starpu_data_handle_t handle)
{
	struct starpu_task *task = starpu_task_create();
	task->cl = &extra_codelet;
	task->handles[0] = handle;
	Extra *extra = new Extra{&origin, index, handle};
	task->cl_arg = extra;
	task->callback_func = next_link;
	task->callback_arg = extra;
	if (starpu_task_submit(task) != 0)
		observations.problem("submitting a link for " + name_of(origin) + " failed");
}

/* What a program task's callback and prologue need. */
struct TaskContext {
	const ApiTask *spec;
	struct starpu_task *task;
	starpu_data_handle_t chain_handle;
	starpu_data_handle_t prologue_handle;
	struct starpu_task *released; /* spec->releases's task, submitted before */
};

void program_callback(void *arg)
{
	TaskContext &context = *static_cast<TaskContext *>(arg);
	const ApiTask &spec = *context.spec;
	if (!observations.done[spec.id])
		observations.problem("callback of " + name_of(spec) + " ran before its body");
	if (spec.end_dependency && !end_dependency_released[spec.id])
		observations.problem("callback of " + name_of(spec) + " ran before the release of its end dependency");
	if (spec.releases >= 0) {
		end_dependency_released[spec.releases] = true;
		starpu_task_end_dep_release(context.released);
	}
	observations.callbacks[spec.id]++;
	if (spec.chain_links > 0)
		submit_extra(spec, 0, context.chain_handle);
	if (spec.runs > 1 && observations.executions[spec.id] < spec.runs && starpu_task_submit(context.task) != 0)
		observations.problem("resubmitting " + name_of(spec) + " from its callback failed");
}

void program_prologue(void *arg)
{
	TaskContext &context = *static_cast<TaskContext *>(arg);
	submit_extra(*context.spec, 0, context.prologue_handle);
}

/* The state of one run, shared by the agents (each touches its own parts). */
struct Run {
	const ApiProgram &program;
	std::vector<std::unique_ptr<Element[]>> data;           /* per unit */
	std::vector<starpu_data_handle_t> handles;                /* per unit */
	std::vector<std::vector<starpu_data_handle_t>> children; /* per planned unit */
	std::vector<struct starpu_task *> tasks;                  /* per task, created when first needed */
	std::vector<TaskContext> contexts;                        /* per task */

	explicit Run(const ApiProgram &p) : program(p), handles(p.units, nullptr), children(p.units), tasks(p.tasks.size(), nullptr),
					    contexts(p.tasks.size())
	{
		for (int u = 0; u < p.units; u++) {
			data.emplace_back(new Element[p.elements]);
			for (int e = 0; e < p.elements; e++)
				data[u][e] = Element{u * 1000 + e, 0};
		}
	}

	void register_unit(int unit)
	{
		starpu_vector_data_register(&handles[unit], STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(data[unit].get()), program.elements,
					    sizeof(Element));
	}

	starpu_data_handle_t handle_of(const TaskAccess &use) const
	{
		return use.piece < 0 ? handles[use.unit] : children[use.unit][use.piece];
	}

	/* The StarPU task of spec, created on first use (a dependency may
	 * name it before it is submitted). */
	struct starpu_task *task_of(int id)
	{
		if (tasks[id])
			return tasks[id];
		const ApiTask &spec = program.tasks[id];
		struct starpu_task *task = starpu_task_create();
		task->cl = spec.buffers.size() == 1 ? &single_buffer_codelets[static_cast<int>(spec.buffers[0].access)]
						    : &program_codelets[id % 2];
		task->cl_arg = const_cast<ApiTask *>(&spec);
		task->nbuffers = static_cast<int>(spec.buffers.size());
		for (std::size_t b = 0; b < spec.buffers.size(); b++) {
			task->handles[b] = handle_of(spec.buffers[b]);
			task->modes[b] = spec.buffers[b].access == dag::Access::read ? STARPU_R
					 : spec.buffers[b].access == dag::Access::write ? STARPU_W : STARPU_RW;
		}
		task->destroy = spec.kept ? 0 : 1;
		task->detach = spec.waited ? 0 : 1;
		if (spec.priority_level != 0)
			task->priority = spec.priority_level < 0 ? starpu_sched_get_min_priority() : starpu_sched_get_max_priority();
		if (spec.tagged) {
			task->use_tag = 1;
			task->tag_id = kTagBase + static_cast<starpu_tag_t>(id);
		}
		TaskContext &context = contexts[id];
		context = TaskContext{&spec, task, spec.chain_unit >= 0 ? handles[spec.chain_unit] : nullptr,
				      spec.prologue_unit >= 0 ? handles[spec.prologue_unit] : nullptr,
				      spec.releases >= 0 ? tasks[spec.releases] : nullptr};
		if (spec.callback || spec.chain_links > 0 || spec.runs > 1) {
			task->callback_func = program_callback;
			task->callback_arg = &context;
		}
		if (spec.prologue_unit >= 0) {
			task->prologue_callback_func = program_prologue;
			task->prologue_callback_arg = &context;
		}
		tasks[id] = task;
		return task;
	}

	void submit(int id)
	{
		const ApiTask &spec = program.tasks[id];
		struct starpu_task *task = task_of(id);
		for (int before : spec.after_submitted) {
			struct starpu_task *named = tasks[before];
			starpu_task_declare_deps_array(task, 1, &named);
		}
		if (spec.after_future >= 0) {
			struct starpu_task *future = task_of(spec.after_future);
			starpu_task_declare_deps_array(task, 1, &future);
		}
		if (spec.after_tag >= 0) {
			task_of(spec.after_tag);
			starpu_tag_declare_deps(kTagBase + static_cast<starpu_tag_t>(id), 1, kTagBase + static_cast<starpu_tag_t>(spec.after_tag));
		}
		if (starpu_task_submit(task) != 0)
			observations.problem("submitting " + name_of(spec) + " failed");
		/* It cannot have ended: it reads its gate's unit, and the gate
		 * waits for this. */
		if (spec.end_dependency) {
			starpu_task_end_dep_add(task, 1);
			end_dependency_added[id] = true;
		}
	}

	/* Elements of unit against what the oracle expects there. */
	void check(int unit, const std::vector<Element> &expected, const std::string &who)
	{
		for (int e = 0; e < program.elements; e++)
			if (data[unit][e].version != expected[e].version || data[unit][e].value != expected[e].value) {
				observations.problem(who + " found unit " + std::to_string(unit) + " at version " + std::to_string(data[unit][e].version) +
						     ", expected " + std::to_string(expected[e].version));
				return;
			}
	}

	void host_write(int unit, int host_id)
	{
		for (int e = 0; e < program.elements; e++) {
			data[unit][e].value = dag::fold(data[unit][e].value, 0, host_id);
			data[unit][e].version++;
		}
	}

	void run_agent(int index);
};

/* An asynchronous acquisition's callback: checks, writes, releases. */
struct AcquiredCallback {
	Run *run;
	const Op *op;
	starpu_data_handle_t handle; /* the agent may give the unit back meanwhile */
};

void on_acquired(void *arg)
{
	std::unique_ptr<AcquiredCallback> acquired(static_cast<AcquiredCallback *>(arg));
	Run &run = *acquired->run;
	const Op &op = *acquired->op;
	run.check(op.unit, op.expected, "an asynchronous acquisition");
	if (op.write)
		run.host_write(op.unit, op.host_id);
	starpu_data_release(acquired->handle);
}

void Run::run_agent(int index)
{
	for (const Op &op : program.agents[index].ops) {
		switch (op.kind) {
		case OpKind::task:
			submit(op.task);
			break;
		case OpKind::acquire:
			if (starpu_data_acquire(handles[op.unit], op.write ? STARPU_RW : STARPU_R) != 0) {
				observations.problem("starpu_data_acquire failed");
				break;
			}
			check(op.unit, op.expected, "an acquisition");
			if (op.write)
				host_write(op.unit, op.host_id);
			starpu_data_release(handles[op.unit]);
			break;
		case OpKind::acquire_cb:
			if (starpu_data_acquire_cb(handles[op.unit], op.write ? STARPU_RW : STARPU_R, on_acquired,
						   new AcquiredCallback{this, &op, handles[op.unit]}) != 0)
				observations.problem("starpu_data_acquire_cb failed");
			break;
		case OpKind::hold_and_acquire:
			if (starpu_data_acquire(handles[op.unit], STARPU_RW) != 0) {
				observations.problem("starpu_data_acquire failed");
				break;
			}
			check(op.unit, op.expected, "an acquisition held while submitting");
			for (int id : op.tasks)
				submit(id);
			if (starpu_data_acquire(handles[op.other_unit], STARPU_R) == 0) {
				check(op.other_unit, op.other_expected, "an acquisition while holding other data");
				starpu_data_release(handles[op.other_unit]);
			}
			host_write(op.unit, op.host_id);
			starpu_data_release(handles[op.unit]);
			break;
		case OpKind::wait_task:
			if (starpu_task_wait(tasks[op.task]) != 0)
				observations.problem("starpu_task_wait on task " + std::to_string(op.task) + " failed");
			break;
		case OpKind::wait_all:
			starpu_task_wait_for_all();
			break;
		case OpKind::wait_submitted:
			starpu_task_wait_for_n_submitted(0);
			break;
		case OpKind::pause:
			starpu_pause();
			break;
		case OpKind::resume:
			starpu_resume();
			break;
		case OpKind::partition:
			if (op.read_only)
				starpu_data_partition_readonly_submit(handles[op.unit], program.pieces, children[op.unit].data());
			else
				starpu_data_partition_submit(handles[op.unit], program.pieces, children[op.unit].data());
			break;
		case OpKind::unpartition:
			starpu_data_unpartition_submit(handles[op.unit], program.pieces, children[op.unit].data(), STARPU_MAIN_RAM);
			break;
		case OpKind::register_unit:
			register_unit(op.unit);
			break;
		case OpKind::invalidate:
			starpu_data_invalidate_submit(handles[op.unit]);
			break;
		case OpKind::unregister_submit:
			starpu_data_unregister_submit(handles[op.unit]);
			handles[op.unit] = nullptr;
			break;
		case OpKind::wait_some:
			starpu_task_wait_for_n_submitted(op.count);
			break;
		case OpKind::wont_use:
			starpu_data_wont_use(handles[op.unit]);
			break;
		case OpKind::replan: {
			starpu_data_partition_clean(handles[op.unit], program.pieces, children[op.unit].data());
			struct starpu_data_filter halves = {};
			halves.filter_func = starpu_vector_filter_block;
			halves.nchildren = program.pieces;
			starpu_data_partition_plan(handles[op.unit], &halves, children[op.unit].data());
			break;
		}
		}
	}
}

} // namespace

dag::RunReport run_and_check(const ApiProgram &program)
{
	const std::size_t ntasks = program.tasks.size();
	observations.reset(ntasks);
	end_dependency_added.reset(new std::atomic<bool>[ntasks]());
	end_dependency_released.reset(new std::atomic<bool>[ntasks]());
	register_single_buffer_batches();
	Run run(program);
	struct starpu_data_filter halves = {};
	halves.filter_func = starpu_vector_filter_block;
	halves.nchildren = program.pieces;
	for (int u = 0; u < program.units; u++) {
		if (program.registered_mid_run[u])
			continue;
		run.register_unit(u);
		if (program.planned[u]) {
			run.children[u].resize(program.pieces);
			starpu_data_partition_plan(run.handles[u], &halves, run.children[u].data());
		}
	}

	std::vector<std::thread> agents;
	for (std::size_t a = 1; a < program.agents.size(); a++)
		agents.emplace_back([&run, a] { run.run_agent(static_cast<int>(a)); });
	run.run_agent(0);
	for (std::thread &agent : agents)
		agent.join();
	starpu_task_wait_for_all();

	for (int u = 0; u < program.units; u++) {
		if (!run.handles[u])
			continue;
		if (program.planned[u])
			starpu_data_partition_clean(run.handles[u], program.pieces, run.children[u].data());
		starpu_data_unregister(run.handles[u]);
	}
	for (std::size_t id = 0; id < ntasks; id++) {
		const ApiTask &spec = program.tasks[id];
		if (spec.kept && run.tasks[id])
			starpu_task_destroy(run.tasks[id]);
		if (spec.tagged)
			starpu_tag_remove(kTagBase + static_cast<starpu_tag_t>(id));
		if (observations.executions[id] != spec.runs)
			observations.problem(name_of(spec) + " ran " + std::to_string(observations.executions[id].load()) + " times, expected " +
					     std::to_string(spec.runs));
		const bool has_callback = spec.callback || spec.chain_links > 0 || spec.runs > 1;
		if (has_callback && observations.callbacks[id] != spec.runs)
			observations.problem("the callback of " + name_of(spec) + " ran " + std::to_string(observations.callbacks[id].load()) + " times");
	}
	for (int u = 0; u < program.units; u++)
		if (!program.expected_final[u].empty())
			run.check(u, program.expected_final[u], "the end of the run");

	return observations.report();
}

} // namespace api
