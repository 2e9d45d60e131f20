/* The submission window (window.h; doc/design.md, section 12): the window
 * while fusion runs, InsideStarpuScope, construction, and the submit path:
 * which tasks may be deferred (deferrable), the data excluded from
 * deferral, and a task the window does not keep handed to StarPU.  The
 * rest of SubmissionWindow, in the order a task meets it:
 *  - window_placement.cpp: a deferred task placed in a group (the order
 *    rule, kernel phases, reductions, partition trees);
 *  - window_flush.cpp: groups and calls handed to StarPU, the program's
 *    calls that flush (dependencies, acquisitions, waits), the closer
 *    thread;
 *  - window_partitions.cpp: tasks on followed partition trees, the
 *    program's partition calls and their elision, plan changes.
 *
 * Locks (window.h says what each guards) and threads:
 *  - active_submission_window, set_active_submission_window: an atomic, no
 *    lock; any thread.  InsideStarpuScope: the calling thread's own depth.
 *  - flush_before_program_call: the calling thread; takes mutex_ through
 *    flush() when the window holds something.
 *  - The constructor starts the closer thread (close_periodically,
 *    window_flush.cpp); the destructor sets closer_stop_ under closer_mutex_
 *    and joins it.
 *  - deferrable: no lock needed (group_sizes_ is read without mutex_: hints
 *    only).  touches_excluded_data and exclude_from_deferral (the thread
 *    partitioning) take excluded_mutex_, a leaf lock.
 *  - submit: the program's thread, a callback or a task (window.h).  No
 *    lock for a task not deferred that accesses no data, nor for one while
 *    the window holds nothing and follows no tree (submit_not_deferred);
 *    otherwise takes mutex_ to place the task (window_placement.cpp) or to
 *    flush what it must follow, and releases it before handing a
 *    synchronous task to StarPU.
 *  - submit_not_deferred, hand_to_starpu: with mutex_ or without; StarPU's
 *    starpu_task_submit runs in them.  held_ takes HeldData's lock, alone
 *    or after mutex_ (held_data.h). */
#include "submission/window.h"

#include "build_config.h"
#include "core/eligibility.h"
#include "core/task_interfaces.h"
#include "core/waiting_priorities.h"
#include "submission/access_modes.h"
#include "submission/starpu_code.h"
#include "submission/window_internal.h"

#include <cmath>

namespace fusing {
namespace {

std::atomic<SubmissionWindow *> active_window{nullptr};
thread_local unsigned inside_starpu_depth = 0;

/* A task reducing a handle it also reads or writes: StarPU orders the two
 * accesses in its own way, which a group's single access to the handle
 * could not keep. */
bool reduces_a_handle_it_also_accesses_otherwise(const struct starpu_task *task)
{
	const unsigned nbuffers = STARPU_TASK_GET_NBUFFERS(task);
	for (unsigned i = 0; i < nbuffers; i++) {
		if (!reduces(STARPU_TASK_GET_MODE(task, i)))
			continue;
		for (unsigned j = 0; j < nbuffers; j++)
			if (j != i && STARPU_TASK_GET_HANDLE(task, j) == STARPU_TASK_GET_HANDLE(task, i) &&
			    !reduces(STARPU_TASK_GET_MODE(task, j)))
				return true;
	}
	return false;
}

} // namespace

SubmissionWindow *active_submission_window()
{
	return active_window.load(std::memory_order_acquire);
}

void set_active_submission_window(SubmissionWindow *window)
{
	active_window.store(window, std::memory_order_release);
}

InsideStarpuScope::InsideStarpuScope()
{
	inside_starpu_depth++;
}

InsideStarpuScope::~InsideStarpuScope()
{
	inside_starpu_depth--;
}

bool InsideStarpuScope::active()
{
	return inside_starpu_depth != 0;
}

void flush_before_program_call(SubmissionWindow &window, const void *caller)
{
	if (!InsideStarpuScope::active() && !called_from_starpu(caller))
		window.flush();
}

SubmissionWindow::SubmissionWindow(const Limits &limits, Selector selected, Predictor predict, Selector has_batched_kernel,
				   SubmissionCounter count_deferred, const ContextLoad &load, const GroupReports &reports,
				   SubmitFunction real_submit)
	: limits_(limits), selected_(std::move(selected)), predict_(std::move(predict)),
	  has_batched_kernel_(std::move(has_batched_kernel)), count_deferred_(std::move(count_deferred)), load_(load),
	  reports_(reports), real_submit_(real_submit),
	  max_window_tasks_(std::size_t(limits.max_group_tasks) * 256)
{
	reports_.names = &names_;
	reports_.running_groups = &running_groups_;
	reports_.retired = &retired_;
	reports_.uncounted = &uncounted_;
	order_.set_parent_of(tree_parent_of, this);
	closer_ = std::thread([this] { close_periodically(); });
}

bool SubmissionWindow::tree_parent_of(const void *window, const starpu_data_handle_t &handle, starpu_data_handle_t &parent)
{
	const SubmissionWindow &self = *static_cast<const SubmissionWindow *>(window);
	return self.any_tree_.load(std::memory_order_relaxed) && self.trees_.parent_of(handle, parent);
}

SubmissionWindow::~SubmissionWindow()
{
	{
		std::lock_guard<std::mutex> lock(closer_mutex_);
		closer_stop_ = true;
	}
	closer_wakeup_.notify_one();
	closer_.join();
}

bool SubmissionWindow::deferrable(struct starpu_task *task, unsigned &ctx, double &predicted_us, std::uint64_t &bytes,
				  bool &batched_kernel)
{
	/* StarPU already knows the task: dependencies or end dependencies were
	 * declared by it or on it (that creates its job), or it was submitted
	 * before.  Tags and waits (detach = 0) observe its termination.
	 * Dependencies declared on it later name its merged task
	 * (named_members.h). */
	if (task->starpu_private || task->use_tag || !task->detach)
		return false;
	if (is_group_task(task))
		return false;
	if (!task->cl || !selected_(task) || check_fusable(task, ReduxAccesses::combined) != UnfusedReason::none)
		return false;
	if (reduces_a_handle_it_also_accesses_otherwise(task))
		return false;
	/* Per-handle sequential consistency (STARPU_HANDLES_SEQUENTIAL_CONSISTENCY):
	 * the merged task would bring back the dependencies the program turned
	 * off, possibly on a task that waits for this one. */
	if (task->handles_sequential_consistency)
		return false;
	/* StarPU loads a codelet's models when it first sees one of its tasks
	 * (_starpu_init_and_load_perfmodel, core/task.c); until then the
	 * task goes to StarPU. */
	if ((task->cl->model && !task->cl->model->is_loaded) || (task->cl->energy_model && !task->cl->energy_model->is_loaded))
		return false;
	/* where = -1 (StarPU's default) means the codelet's. */
	if (task->where == -1 && task->cl->where != 0 && !(task->cl->where & STARPU_CPU))
		return false;
#ifdef HAVE_STRUCT_STARPU_TASK_EPILOGUE_CALLBACK_FUNC
	if (task->epilogue_callback_func)
		return false;
#endif
	ctx = task->sched_ctx;
	if (ctx == STARPU_NMAX_SCHED_CTXS) {
		/* StarPU resolves it in the submitting thread; the merged task
		 * is submitted from another. */
		ctx = starpu_sched_ctx_get_context();
		if (ctx == STARPU_NMAX_SCHED_CTXS)
			ctx = 0;
	}
	if (load_.cpu_workers[ctx].load(std::memory_order_relaxed) == 0)
		return false;
	/* Ready work of lower priority waits or runs: deferred, the task
	 * would wait for its group meanwhile (core/waiting_priorities.h). */
	if (reports_.priorities->lower_priority_work(task->priority))
		return false;
	if (touches_excluded_data(task))
		return false;
	/* The model may read the task's interfaces, which StarPU has not
	 * filled yet (core/task_interfaces.h). */
	give_home_interfaces(task);
	predicted_us = predict_(task);
	if (!std::isnan(predicted_us) && (predicted_us >= limits_.target_us || predicted_us > limits_.max_generic_task_us))
		return false;
	/* A task not measured yet goes to StarPU: it may be long, and a
	 * program can submit thousands before the first one ends (a stencil
	 * of 10 ms tasks merged unmeasured ran at half efficiency on 2
	 * workers); run alone, it gets measured (Engine::on_task_finished).
	 * While a worker waits for work, a task long enough to keep it busy
	 * for a while goes to it now too: merging it would save a few µs of
	 * StarPU's time and could serialise it behind others (doc/design.md,
	 * section 12).  Shorter ones are merged anyway: submitting them one
	 * by one is what keeps the worker waiting. */
	if (!limits_.always_defer &&
	    (std::isnan(predicted_us) || (predicted_us >= kWorthRunningAlone_us && load_.some_worker_waits(ctx))))
		return false;
	/* A codelet with a batched implementation (the program's or the
	 * kernel pack's) is grouped only with tasks of its own codelet and
	 * modes, so that the merged task calls it once (fits_kernel()); it
	 * needs a fixed buffer count. */
	batched_kernel = has_batched_kernel_(task);
	if (batched_kernel && task->cl->nbuffers == STARPU_VARIABLE_NBUFFERS)
		return false;
	if (!limits_.always_defer && !group_sizes_.worth_holding(task->cl))
		return false;
	bytes = 0;
	if (limits_.close_at_bytes > 0 || limits_.working_set_bytes > 0) {
		for (unsigned i = 0; i < STARPU_TASK_GET_NBUFFERS(task); i++)
			bytes += starpu_data_get_size(STARPU_TASK_GET_HANDLE(task, i));
		if (limits_.close_at_bytes > 0 && bytes > limits_.close_at_bytes)
			return false;
	}
	return true;
}

bool SubmissionWindow::touches_excluded_data(const struct starpu_task *task)
{
	if (!any_excluded_.load(std::memory_order_acquire))
		return false;
	std::lock_guard<std::mutex> lock(excluded_mutex_);
	for (unsigned i = 0; i < STARPU_TASK_GET_NBUFFERS(task); i++)
		if (excluded_.count(STARPU_TASK_GET_HANDLE(task, i)))
			return true;
	return false;
}

void SubmissionWindow::exclude_from_deferral(starpu_data_handle_t handle)
{
	std::lock_guard<std::mutex> lock(excluded_mutex_);
	excluded_.insert(handle);
	any_excluded_.store(true, std::memory_order_release);
}

void SubmissionWindow::note_invalidation(starpu_data_handle_t handle)
{
	std::lock_guard<std::mutex> lock(excluded_mutex_);
	if (invalidated_.insert(handle).second)
		invalidated_count_.fetch_add(1, std::memory_order_release);
}

bool SubmissionWindow::follows_an_invalidation(const struct starpu_task *task)
{
	if (invalidated_count_.load(std::memory_order_acquire) == 0 || !task->cl)
		return false;
	bool follows = false;
	std::lock_guard<std::mutex> lock(excluded_mutex_);
	for (unsigned i = 0; i < STARPU_TASK_GET_NBUFFERS(task); i++)
		if (invalidated_.erase(STARPU_TASK_GET_HANDLE(task, i)) != 0) {
			invalidated_count_.fetch_sub(1, std::memory_order_release);
			follows = true;
		}
	return follows;
}

int SubmissionWindow::submit(struct starpu_task *task)
{
	retired_.free_waiting();
	names_.forget(task); /* a kept task submitted again */
	unsigned ctx = 0;
	double predicted_us = NAN;
	std::uint64_t bytes = 0;
	bool batched_kernel = false;
	/* Read before deferrable(): asking StarPU's model creates the task's
	 * job (_starpu_get_job_associated_to_task in its expected-length
	 * functions), which is not StarPU knowing the task. */
	const bool known_to_starpu = task->starpu_private != nullptr;
	/* The first task on data the program invalidated goes to StarPU
	 * (note_invalidation), deferrable or not: it consumes the mark. */
	const bool defer = !follows_an_invalidation(task) && deferrable(task, ctx, predicted_us, bytes, batched_kernel);
	/* A task that is not deferred follows the deferred tasks it conflicts
	 * with (flush_conflicting_locked); one that accesses no data conflicts
	 * with none, and needs not even the lock (DAHL submits five control
	 * tasks per task of its own).  What a task names explicitly went
	 * through the dependency declarations (interpose/interpose_task_deps.cpp).  Not
	 * marked inside StarPU: the window may hold tasks, so what its
	 * callback submits, if StarPU runs it right here, must go through the
	 * window too. */
	if (!defer && (!task->cl || STARPU_TASK_GET_NBUFFERS(task) == 0))
		return real_submit_(task);
	/* Nor does a task the window does not keep need the lock while the
	 * window holds nothing (no group or call waits, none is on its way
	 * to StarPU: holds_tasks() drops only once StarPU has them) and no
	 * partition tree is followed: it has nothing to follow.  A task of
	 * another thread deferred meanwhile is not ordered with it by the
	 * program either. */
	if (!defer && !any_tree_.load(std::memory_order_relaxed) && !holds_tasks())
		return submit_not_deferred(task, known_to_starpu);
	std::unique_lock<std::recursive_mutex> lock(mutex_);
	bool on_excluded_tree = false;
	if (any_tree_.load(std::memory_order_relaxed)) {
		const TreeAccess tree = tree_access(task);
		if (tree.switches_plans) {
			/* StarPU will partition or unpartition for it, accessing
			 * siblings of what it touches: everything deferred goes
			 * first, and the trees follow the switch. */
			HandOverScope cause(*this, HandOver::task_not_deferred);
			flush_locked();
			follow_plan_switches_locked(task);
		}
		on_excluded_tree = tree.excluded || tree.switches_plans || tree.reduces;
	}
	/* A task that may wait for the program (on data it holds, a tag, a
	 * dependency it declared or was named in) is never merged with others,
	 * which would then wait for the program too (held_data.h). */
	const bool waits_for_program = task->use_tag || known_to_starpu || held_.conflicts(task);
	/* A thread waiting for StarPU's count of tasks to drop would not see a
	 * task deferred now (window.h, begin_wait).  Both read under mutex_: a
	 * wait or an acquisition counts itself before its flush takes mutex_,
	 * so a task either is placed before that flush or sees it. */
	/* Nor behind deferred work of lower priority: it goes to StarPU, whose
	 * base may run it first (core/waiting_priorities.h). */
	const bool outranks_window = !open_group_priorities_.empty() && task->priority > open_group_priorities_.begin()->first;
	if (defer && !on_excluded_tree && !waits_for_program && !outranks_window && waiting_threads_.load(std::memory_order_relaxed) == 0) {
		if (count_deferred_)
			count_deferred_(task);
		place(task, ctx, predicted_us, bytes, batched_kernel);
		return 0;
	}
	{
		HandOverScope cause(*this, HandOver::task_not_deferred);
		flush_conflicting_locked(task);
	}
	if (task->synchronous) {
		/* It blocks until the task ran, and the task's callbacks may
		 * submit: release the window first.  Anything deferred
		 * meanwhile goes to StarPU after it. */
		lock.unlock();
	}
	return hand_to_starpu(task, waits_for_program);
}

int SubmissionWindow::submit_not_deferred(struct starpu_task *task, bool known_to_starpu)
{
	return hand_to_starpu(task, task->use_tag || known_to_starpu || held_.conflicts(task));
}

int SubmissionWindow::hand_to_starpu(struct starpu_task *task, bool waits_for_program)
{
	/* A task that may wait for the program holds its data until its
	 * callback (held_data.h). */
	if (waits_for_program)
		held_.hold_until_terminated(task);
	/* Not marked inside StarPU: StarPU may run program code right here (a
	 * prologue, the callback of a control task it terminates at once, on
	 * 1.3), whose submissions follow the window like any other (mutex_ is
	 * recursive). */
	const int ret = real_submit_(task);
	if (ret != 0 && waits_for_program)
		held_.unhold(task);
	return ret;
}

} // namespace fusing
