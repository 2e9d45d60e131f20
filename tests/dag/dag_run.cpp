/* Runs generated programs on StarPU; see dag_run.h.
 *
 * Codelet bodies run in worker threads (possibly inside a batch): they check
 * the element versions the oracle expects and every dependency's completion,
 * and record what they find in RunObservations (dag_run.h). */
#include "tests/dag/dag_run.h"

#include "starpu_fusing.h"
#include "tests/test_codelets.hpp"

#include <starpu.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <mutex>

namespace dag {
namespace {

RunObservations observations;

void spin(double us)
{
	if (us <= 0)
		return;
	double start = starpu_timing_now();
	while (starpu_timing_now() - start < us)
		;
}

/* The body of every generated task. */
void generic_body(void *buffers[], void *cl_arg)
{
	const TaskSpec &task = *static_cast<const TaskSpec *>(cl_arg);
	RunObservations &seen = observations;
	if (seen.executions[task.id]++ != 0)
		seen.problem("task " + std::to_string(task.id) + " ran twice");
	if (starpu_fusing_current_batch_size() > 0)
		seen.in_batches++;
	for (int before : task.after)
		if (!seen.done[before])
			seen.problem("task " + std::to_string(task.id) + " ran before task " + std::to_string(before) + " (explicit dependency)");
	for (int before : task.after_tags)
		if (!seen.done[before])
			seen.problem("task " + std::to_string(task.id) + " ran before task " + std::to_string(before) + " (tag dependency)");
	spin(task.codelet * 3.0);

	std::int64_t inputs = 0;
	for (std::size_t b = 0; b < task.buffers.size(); b++) {
		const BufferUse &use = task.buffers[b];
		Element *elements = reinterpret_cast<Element *>(STARPU_VECTOR_GET_PTR(buffers[b]));
		unsigned n = STARPU_VECTOR_GET_NX(buffers[b]);
		if (n != use.expected_versions.size()) {
			seen.problem("task " + std::to_string(task.id) + " got a buffer of the wrong size");
			return;
		}
		if (use.access == Access::write)
			continue; /* no defined content to check or read */
		for (unsigned e = 0; e < n; e++) {
			if (elements[e].version != use.expected_versions[e])
				seen.problem("task " + std::to_string(task.id) + " saw version " + std::to_string(elements[e].version) +
					     " of unit " + std::to_string(use.range.unit) + " element " + std::to_string(e) +
					     ", expected " + std::to_string(use.expected_versions[e]) + " (ran out of order, or a writer ran twice or not at all)");
			inputs = add_input(inputs, elements[e]);
		}
	}
	for (std::size_t b = 0; b < task.buffers.size(); b++) {
		const BufferUse &use = task.buffers[b];
		if (use.access == Access::read)
			continue;
		Element *elements = reinterpret_cast<Element *>(STARPU_VECTOR_GET_PTR(buffers[b]));
		for (std::size_t e = 0; e < use.expected_versions.size(); e++) {
			elements[e].value = fold(use.access == Access::write ? 0 : elements[e].value, inputs, task.id);
			elements[e].version = use.expected_versions[e] + 1;
		}
	}
	seen.done[task.id] = 1;
}

void accumulate_body(void *buffers[], void *cl_arg)
{
	const TaskSpec &task = *static_cast<const TaskSpec *>(cl_arg);
	if (observations.executions[task.id]++ != 0)
		observations.problem("task " + std::to_string(task.id) + " ran twice");
	(*reinterpret_cast<long *>(STARPU_VARIABLE_GET_PTR(buffers[0])))++;
	observations.done[task.id] = 1;
}

void read_accumulator_body(void *buffers[], void *cl_arg)
{
	const TaskSpec &task = *static_cast<const TaskSpec *>(cl_arg);
	if (observations.executions[task.id]++ != 0)
		observations.problem("task " + std::to_string(task.id) + " ran twice");
	const long value = *reinterpret_cast<long *>(STARPU_VARIABLE_GET_PTR(buffers[0]));
	if (value != task.expected_accumulator)
		observations.problem("task " + std::to_string(task.id) + " read the REDUX accumulator at " + std::to_string(value) +
				     ", expected " + std::to_string(task.expected_accumulator));
	observations.done[task.id] = 1;
}

void redux_init(void *buffers[], void *)
{
	*reinterpret_cast<long *>(STARPU_VARIABLE_GET_PTR(buffers[0])) = 0;
}

void redux_add(void *buffers[], void *)
{
	*reinterpret_cast<long *>(STARPU_VARIABLE_GET_PTR(buffers[0])) += *reinterpret_cast<long *>(STARPU_VARIABLE_GET_PTR(buffers[1]));
}

void on_callback(void *arg)
{
	const TaskSpec &task = *static_cast<const TaskSpec *>(arg);
	if (!observations.done[task.id])
		observations.problem("callback of task " + std::to_string(task.id) + " ran before its body");
	observations.callbacks[task.id]++;
}

/* Codelets: one per generated codelet kind, with per-task buffer counts
 * and modes (STARPU_VARIABLE_NBUFFERS makes StarPU read task->modes). */
struct Codelets {
	std::vector<std::string> names;
	std::vector<struct starpu_codelet> generic;
	struct starpu_codelet commute, redux, redux_read, init, add;

	explicit Codelets(const GeneratorKnobs &knobs)
	{
		names.reserve(knobs.codelets);
		for (int c = 0; c < knobs.codelets; c++) {
			names.push_back("dag" + std::to_string(c));
			generic.push_back(make_test_codelet(generic_body, names.back().c_str(), {}));
		}
		commute = make_test_codelet(accumulate_body, "dag_commute", {static_cast<enum starpu_data_access_mode>(STARPU_RW | STARPU_COMMUTE)});
		redux = make_test_codelet(accumulate_body, "dag_redux", {STARPU_REDUX});
		redux_read = make_test_codelet(read_accumulator_body, "dag_redux_read", {STARPU_R});
		init = make_test_codelet(redux_init, "dag_redux_init", {STARPU_W});
		add = make_test_codelet(redux_add, "dag_redux_add", {STARPU_RW, STARPU_R});
	}
};

enum starpu_data_access_mode mode_of(Access access)
{
	switch (access) {
	case Access::read: return STARPU_R;
	case Access::write: return STARPU_W;
	default: return STARPU_RW;
	}
}

} // namespace

RunReport run_and_check(const Program &program)
{
	const GeneratorKnobs &knobs = program.knobs;
	const int ntasks = static_cast<int>(program.tasks.size());
	observations.reset(ntasks);
	Codelets codelets(knobs);

	/* Data. */
	std::vector<std::vector<Element>> data(program.total_units);
	std::vector<starpu_data_handle_t> handles(program.total_units);
	std::vector<std::vector<starpu_data_handle_t>> pieces(program.total_units);
	struct starpu_data_filter filter = {};
	filter.filter_func = starpu_vector_filter_block;
	filter.nchildren = knobs.pieces;
	for (int u = 0; u < program.total_units; u++) {
		data[u].resize(knobs.elements);
		for (int e = 0; e < knobs.elements; e++)
			data[u][e] = Element{u * 1000 + e, 0};
		starpu_vector_data_register(&handles[u], STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(data[u].data()),
					    knobs.elements, sizeof(Element));
		if (u >= knobs.units)
			starpu_data_set_sequential_consistency_flag(handles[u], 0);
		if (program.filtered[u]) {
			starpu_data_partition(handles[u], &filter);
			for (int p = 0; p < knobs.pieces; p++)
				pieces[u].push_back(starpu_data_get_sub_data(handles[u], 1, p));
		} else if (program.planned[u]) {
			pieces[u].resize(knobs.pieces);
			starpu_data_partition_plan(handles[u], &filter, pieces[u].data());
		}
	}
	long commute_value = 0, redux_value = 0;
	starpu_data_handle_t commute_handle, redux_handle;
	starpu_variable_data_register(&commute_handle, STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(&commute_value), sizeof(long));
	starpu_variable_data_register(&redux_handle, STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(&redux_value), sizeof(long));
	starpu_data_set_reduction_methods(redux_handle, &codelets.add, &codelets.init);
	std::vector<starpu_data_handle_t> scratch_handles;

	/* Every task is created, and every explicit dependency declared, before
	 * anything is submitted: declaring a dependency on a task that may be
	 * terminating concurrently is not supported (StarPU 1.4 asserts in
	 * _starpu_notify_cg; seen with fusion off too). */
	std::vector<struct starpu_task *> tasks(ntasks, nullptr);
	const starpu_tag_t tag_base = 1000000;
	for (const TaskSpec &spec : program.tasks) {
		struct starpu_task *task = starpu_task_create();
		task->cl_arg = const_cast<TaskSpec *>(&spec);
		task->priority = spec.priority;
		task->destroy = 0; /* destroyed at the end, after every wait */
		task->detach = spec.waited ? 0 : 1;
		if (spec.special == Special::commute) {
			task->cl = &codelets.commute;
			task->handles[0] = commute_handle;
		} else if (spec.special == Special::redux || spec.special == Special::redux_read) {
			task->cl = spec.special == Special::redux ? &codelets.redux : &codelets.redux_read;
			task->handles[0] = redux_handle;
		} else {
			std::size_t n = spec.buffers.size();
			task->cl = &codelets.generic[spec.codelet];
			task->nbuffers = static_cast<int>(n + (spec.scratch ? 1 : 0));
			for (std::size_t b = 0; b < n; b++) {
				const Range &range = spec.buffers[b].range;
				task->handles[b] = range.piece < 0 ? handles[range.unit] : pieces[range.unit][range.piece];
				task->modes[b] = mode_of(spec.buffers[b].access);
			}
			if (spec.scratch) {
				starpu_data_handle_t scratch;
				starpu_vector_data_register(&scratch, -1, 0, 16, sizeof(double));
				scratch_handles.push_back(scratch);
				task->handles[n] = scratch;
				task->modes[n] = STARPU_SCRATCH;
			}
			if (spec.special == Special::no_sequential_consistency)
				task->sequential_consistency = 0;
			if (spec.special == Special::pinned) {
				task->execute_on_a_specific_worker = 1;
				task->workerid = spec.pinned_worker % static_cast<int>(starpu_worker_get_count());
			}
		}
		if (spec.callback) {
			task->callback_func = on_callback;
			task->callback_arg = const_cast<TaskSpec *>(&spec);
		}
		/* The tag first: declaring task dependencies creates the task's
		 * job, which reads use_tag then. */
		if (spec.tagged) {
			task->use_tag = 1;
			task->tag_id = tag_base + spec.id;
		}
		for (int before : spec.after)
			starpu_task_declare_deps_array(task, 1, &tasks[before]);
		tasks[spec.id] = task;
	}

	for (const Step &step : program.steps) {
		switch (step.kind) {
		case StepKind::task: {
			const TaskSpec &spec = program.tasks[step.task];
			for (int before : spec.after_tags)
				starpu_tag_declare_deps(tag_base + spec.id, 1, tag_base + before);
			int ret = starpu_task_submit(tasks[spec.id]);
			if (ret != 0)
				observations.problem("submitting task " + std::to_string(spec.id) + " failed: " + std::to_string(ret));
			break;
		}
		case StepKind::wait_task:
			if (starpu_task_wait(tasks[step.task]) != 0)
				observations.problem("starpu_task_wait on task " + std::to_string(step.task) + " failed");
			break;
		case StepKind::acquire: {
			starpu_data_acquire(handles[step.unit], STARPU_R);
			for (int e = 0; e < knobs.elements; e++)
				if (data[step.unit][e].version != step.expected[e].version || data[step.unit][e].value != step.expected[e].value) {
					observations.problem("starpu_data_acquire of unit " + std::to_string(step.unit) + " element " + std::to_string(e) +
							     " saw version " + std::to_string(data[step.unit][e].version) + ", expected " +
							     std::to_string(step.expected[e].version));
					break;
				}
			starpu_data_release(handles[step.unit]);
			break;
		}
		case StepKind::wait_all:
			starpu_task_wait_for_all();
			break;
		case StepKind::partition:
			starpu_data_partition_submit(handles[step.unit], knobs.pieces, pieces[step.unit].data());
			break;
		case StepKind::unpartition:
			starpu_data_unpartition_submit(handles[step.unit], knobs.pieces, pieces[step.unit].data(), -1);
			break;
		}
	}
	starpu_task_wait_for_all();

	for (int u = 0; u < program.total_units; u++) {
		if (program.filtered[u])
			starpu_data_unpartition(handles[u], STARPU_MAIN_RAM);
		else if (program.planned[u])
			starpu_data_partition_clean(handles[u], knobs.pieces, pieces[u].data());
		starpu_data_unregister(handles[u]);
	}
	starpu_data_unregister(commute_handle);
	starpu_data_unregister(redux_handle);
	for (starpu_data_handle_t scratch : scratch_handles)
		starpu_data_unregister(scratch);
	for (struct starpu_task *task : tasks)
		if (task)
			starpu_task_destroy(task);

	/* Compare with the oracle. */
	for (int id = 0; id < ntasks; id++) {
		if (observations.executions[id] != 1)
			observations.problem("task " + std::to_string(id) + " ran " + std::to_string(observations.executions[id].load()) + " times");
		if (program.tasks[id].callback && observations.callbacks[id] != 1)
			observations.problem("callback of task " + std::to_string(id) + " ran " + std::to_string(observations.callbacks[id].load()) + " times");
	}
	for (int u = 0; u < program.total_units; u++)
		for (int e = 0; e < knobs.elements; e++)
			if (data[u][e].value != program.expected_final[u][e].value || data[u][e].version != program.expected_final[u][e].version) {
				observations.problem("unit " + std::to_string(u) + " element " + std::to_string(e) + " ends at version " +
						     std::to_string(data[u][e].version) + ", expected " + std::to_string(program.expected_final[u][e].version));
				break;
			}
	if (commute_value != program.expected_commute)
		observations.problem("COMMUTE accumulator is " + std::to_string(commute_value) + ", expected " + std::to_string(program.expected_commute));
	if (redux_value != program.expected_redux)
		observations.problem("REDUX accumulator is " + std::to_string(redux_value) + ", expected " + std::to_string(program.expected_redux));

	return observations.report();
}

void RunObservations::reset(std::size_t ntasks)
{
	problems.clear();
	executions.reset(new std::atomic<int>[ntasks]());
	callbacks.reset(new std::atomic<int>[ntasks]());
	done.reset(new std::atomic<int>[ntasks]());
	in_batches = 0;
}

void RunObservations::problem(const std::string &text)
{
	std::lock_guard<std::mutex> lock(mutex);
	if (problems.size() < 20)
		problems.push_back(text);
}

RunReport RunObservations::report()
{
	std::lock_guard<std::mutex> lock(mutex);
	return RunReport{problems, in_batches.load()};
}

} // namespace dag
