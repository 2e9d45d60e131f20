/* The submission window; see window.h. */
#include "submission/window.h"

#include "build_config.h"
#include "core/current_member.h"
#include "core/eligibility.h"
#include "core/member_run.h"
#include "core/starpu_functions.h"
#include "core/task_interfaces.h"
#include "submission/access_modes.h"
#include "submission/starpu_code.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace fusing {
namespace {

/* See deferrable(): about ten times what StarPU spends on one task of its
 * own (measured: ~10,000 instructions, a few µs; doc/notebook.md, instructions per task). */
constexpr double kWorthRunningAlone_us = 50.0;

std::atomic<SubmissionWindow *> active_window{nullptr};
thread_local unsigned inside_starpu_depth = 0;

bool reduces_any(const struct starpu_task *task)
{
	const unsigned nbuffers = STARPU_TASK_GET_NBUFFERS(task);
	for (unsigned i = 0; i < nbuffers; i++)
		if (reduces(STARPU_TASK_GET_MODE(task, i)))
			return true;
	return false;
}

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
	order_.set_parent_of([this](const starpu_data_handle_t &handle, starpu_data_handle_t &parent) {
		return any_tree_.load(std::memory_order_relaxed) && trees_.parent_of(handle, parent);
	});
	closer_ = std::thread([this] { close_periodically(); });
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
	const bool defer = deferrable(task, ctx, predicted_us, bytes, batched_kernel);
	/* A task that is not deferred follows the deferred tasks it conflicts
	 * with (flush_conflicting_locked); one that accesses no data conflicts
	 * with none, and needs not even the lock (DAHL submits five control
	 * tasks per task of its own).  What a task names explicitly went
	 * through the dependency declarations (interpose_task_deps.cpp).  Not
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
	if (defer && !on_excluded_tree && !waits_for_program && waiting_threads_.load(std::memory_order_relaxed) == 0) {
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

const std::vector<Access<starpu_data_handle_t>> &SubmissionWindow::accesses_of(const struct starpu_task *task)
{
	const unsigned nbuffers = STARPU_TASK_GET_NBUFFERS(task);
	accesses_.resize(nbuffers);
	for (unsigned i = 0; i < nbuffers; i++)
		accesses_[i] = {STARPU_TASK_GET_HANDLE(task, i), changes_data(STARPU_TASK_GET_MODE(task, i))};
	return accesses_;
}

void SubmissionWindow::place(struct starpu_task *task, unsigned ctx, double predicted_us, std::uint64_t bytes,
			     bool batched_kernel)
{
	const std::vector<Access<starpu_data_handle_t>> &accesses = accesses_of(task);
	const long latest_conflict = order_.latest_conflicting_group(accesses);
	const std::size_t lowest = std::max<std::size_t>(latest_conflict < 0 ? 0 : latest_conflict, first_open_);
	/* Reductions of a handle conflict in the order rule, but none reads
	 * another's result: the latest group the task depends on is that of
	 * its other accesses (a group reducing a handle the task reads or
	 * writes cannot take it: fits_reductions). */
	const bool reduction = reduces_any(task);
	const long latest_dependency = reduction ? latest_conflict_without_reductions(task) : latest_conflict;
	/* A task joins a group holding a task it depends on only while that
	 * group is too small to be worth running alone: a group of dependent
	 * tasks runs them one after another, and grown further it would take
	 * the parallelism of narrow graphs (a 16-wide stencil of 100 us
	 * tasks merged into groups of 64 ran at half efficiency on 2
	 * workers).  Chains many wide still fill whole groups of tiny tasks. */
	const bool some_unpredicted = std::isnan(predicted_us);
	auto may_follow = [&](std::size_t g) {
		const Group &candidate = groups_[g - first_open_];
		const bool depends_on_it = latest_dependency >= 0 && static_cast<std::size_t>(latest_dependency) == g;
		return !depends_on_it || limits_.always_defer ||
		       (!some_unpredicted && !candidate.unpredicted && candidate.predicted_us + predicted_us < kWorthRunningAlone_us);
	};
	/* A kernel group's phase for the task (kernel_phase_for): only a
	 * group holding a conflicting access (the order rule's latest) has
	 * members to look through, and that look is kept for the placement
	 * below, which asks again for the group chosen. */
	long conflict_group_phase = -2; /* -2: not looked yet */
	auto kernel_phase_in = [&](std::size_t g) {
		const bool holds_conflict = latest_conflict >= 0 && static_cast<std::size_t>(latest_conflict) == g;
		if (holds_conflict && conflict_group_phase != -2)
			return conflict_group_phase;
		const long phase = kernel_phase_for(groups_[g - first_open_], task, accesses, predicted_us, holds_conflict, !may_follow(g));
		if (holds_conflict)
			conflict_group_phase = phase;
		return phase;
	};
	auto joinable = [&](std::size_t g) {
		if (g < lowest || g >= first_open_ + groups_.size())
			return false;
		const Group &candidate = groups_[g - first_open_];
		if (candidate.sched_ctx != ctx || full(candidate) || candidate.is_kernel_group() != batched_kernel ||
		    !fits_trees(candidate, accesses) || !fits_reductions(candidate, task))
			return false;
		return candidate.is_kernel_group() ? kernel_phase_in(g) >= 0 : may_follow(g);
	};
	/* A task that writes a handle continues the chain of that handle's
	 * last accessor: it joins that task's group (vertical fusion: a chain
	 * of read-write tasks becomes one merged task with one handle), or
	 * opens the chain's next group when that one is full.  Other tasks
	 * (only reads, reductions, or writes of data new to the window) join
	 * the newest group of their kind (horizontal fusion): for a codelet
	 * with a batched kernel, the newest of its own codelet and modes; for
	 * others, the newest not kept for one. */
	long chain_group = -1;
	for (std::size_t i = 0; i < accesses.size(); i++)
		if (accesses[i].writes && !reduces(STARPU_TASK_GET_MODE(task, i)))
			chain_group = std::max(chain_group, order_.last_access_group(accesses[i].handle));
	/* A chain whose last group already went to StarPU has nothing left to
	 * continue in the window (the record keeps groups handed over until
	 * the window is empty, and a handle registered meanwhile at the
	 * address of an unregistered one inherits its entry): the task is
	 * placed as one on data new to the window. */
	if (chain_group >= 0 && static_cast<std::size_t>(chain_group) < first_open_)
		chain_group = -1;
	/* Nor is there one to continue in a group of another kind (a kernel
	 * group for a task without a batched implementation, or the other
	 * way round): a group of its own for every such task would follow.
	 * A bias added to a convolution's output continues the convolution's
	 * kernel group in a phase of its own when both codelets have a
	 * batched implementation. */
	if (chain_group >= 0 && groups_[static_cast<std::size_t>(chain_group) - first_open_].is_kernel_group() != batched_kernel)
		chain_group = -1;
	/* A chain it cannot continue (its group is full, or already holds
	 * enough work that the task, which depends on it, should run beside
	 * other work rather than after it) leaves the task placed like one
	 * on data new to the window: the next step of a stencil writes cells
	 * the previous step read, and a group of its own per task followed. */
	const bool continues_chain = chain_group >= 0 && joinable(static_cast<std::size_t>(chain_group));
	const long horizontal =
		continues_chain ? -1 : horizontal_group(task, ctx, lowest, latest_dependency, reduction, batched_kernel, joinable);
	std::size_t group;
	long phase = 0; /* in a kernel group */
	if (continues_chain || horizontal >= 0) {
		group = static_cast<std::size_t>(continues_chain ? chain_group : horizontal);
		if (batched_kernel)
			phase = kernel_phase_in(group);
		order_.join(group, accesses);
	} else {
		group = order_.open(accesses);
		groups_.emplace_back();
		groups_.back().sched_ctx = ctx;
		groups_.back().members.reserve(limits_.max_group_tasks, STARPU_TASK_GET_NBUFFERS(task));
		groups_.back().opened_us = starpu_timing_now();
		/* The calls placed at the end of the window run before it. */
		groups_.back().calls_before.swap(pending_calls_);
	}
	Group &g = groups_[group - first_open_];
	if (batched_kernel) {
		if (static_cast<std::size_t>(phase) == g.phases.size()) {
			KernelPhase opened{task->cl, {}};
			for (unsigned i = 0; i < STARPU_TASK_GET_NBUFFERS(task); i++)
				opened.modes.push_back(STARPU_TASK_GET_MODE(task, i));
			g.phases.push_back(std::move(opened));
		}
		g.member_phase.push_back(static_cast<unsigned>(phase));
		g.phases[static_cast<std::size_t>(phase)].members++;
		if (!std::isnan(predicted_us))
			g.phases[static_cast<std::size_t>(phase)].predicted_us += predicted_us;
	}
	note_tree_handles(g, accesses);
	if (reduction)
		note_reduced_handles(g, task);
	note_child_uses(g, accesses);
	g.members.add(task);
	if (std::isnan(predicted_us))
		g.unpredicted = true;
	else
		g.predicted_us += predicted_us;
	g.bytes += bytes;
	if (!task->destroy)
		names_.deferred(task, group);
	tasks_deferred_.fetch_add(1, std::memory_order_relaxed);
	if (deferred_.fetch_add(1, std::memory_order_seq_cst) == 0 && !closer_watching_.load(std::memory_order_seq_cst)) {
		/* Under closer_mutex_: the closer tests holds_tasks() under it
		 * before it sleeps, so the wake-up cannot fall in between. */
		std::lock_guard<std::mutex> lock(closer_mutex_);
		closer_wakeup_.notify_one();
	}
	if (full(g)) {
		HandOverScope cause(*this, HandOver::group_full);
		submit_groups_through(group);
	} else if (deferred_.load(std::memory_order_relaxed) >= max_window_tasks_) {
		HandOverScope cause(*this, HandOver::window_full);
		flush_locked();
	} else if ((g.unpredicted || g.predicted_us >= kWorthRunningAlone_us) && load_.some_worker_waits(ctx)) {
		/* A worker waits, and the group is now worth running: what a
		 * polling worker's empty pop would ask for (request_flush), asked
		 * here, since a resting worker does not pop (a group of 5 tasks of
		 * 11 us waited for the 500 us safety net; sched/idle_workers.h). */
		request_flush();
	}
}

template <typename Joinable>
long SubmissionWindow::horizontal_group(const struct starpu_task *task, unsigned ctx, std::size_t lowest, long latest_dependency,
					bool reduction, bool batched_kernel, const Joinable &joinable) const
{
	/* Tasks that depend on a group still in the window come after it:
	 * gathered into one group, a generation of them (the next step of a
	 * stencil) would run on one worker while the others wait for it, and
	 * the next generation after it.  They are spread over as many groups
	 * after that one as the context has CPU workers, each task joining
	 * the one with the fewest members.  Other tasks join the newest group
	 * of their kind, whose predecessors may already be running.  So do
	 * reductions: one may join no group before the newest reducing its
	 * handle (the order rule's lowest), and spreading them opened a group
	 * per task (cnn_training's filter gradients: groups of 1.0 instead of
	 * 28.5). */
	const bool follows_open_group = latest_dependency >= static_cast<long>(first_open_) && !reduction;
	const std::size_t spread =
		follows_open_group ? std::max(1u, load_.cpu_workers[ctx].load(std::memory_order_relaxed)) : 1;
	/* Without a reduction latest_dependency is the order rule's latest
	 * conflict: the groups after it are all at or above lowest. */
	const std::size_t first_candidate = follows_open_group ? static_cast<std::size_t>(latest_dependency) + 1 : lowest;
	std::size_t of_its_kind = 0;
	long lightest = -1;
	for (std::size_t g = first_open_ + groups_.size(); g-- > first_candidate && of_its_kind < spread;) {
		if (!fits_kernel(groups_[g - first_open_], task, batched_kernel))
			continue;
		of_its_kind++;
		if (joinable(g) && (lightest < 0 || groups_[g - first_open_].members.tasks.size() <
							    groups_[static_cast<std::size_t>(lightest) - first_open_].members.tasks.size()))
			lightest = static_cast<long>(g);
	}
	return of_its_kind < spread ? -1 : lightest;
}

bool SubmissionWindow::full(const Group &group) const
{
	/* Nothing predicts some member: a group is spread over the context's
	 * workers as a ready-time batch is (at most 1/workers of the cap each),
	 * rather than risk the whole cap's work on one worker. */
	const std::size_t workers = std::max(1u, load_.cpu_workers[group.sched_ctx].load(std::memory_order_relaxed));
	const std::size_t most = group.unpredicted ? std::max<std::size_t>(1, limits_.max_group_tasks / workers) : limits_.max_group_tasks;
	/* The caches' cap counts every use of a handle (a ready-time batch
	 * counts distinct handles): a group may close a little early. */
	return group.members.tasks.size() >= most || group.predicted_us >= limits_.target_us ||
	       (limits_.close_at_bytes > 0 && group.bytes >= limits_.close_at_bytes) ||
	       (limits_.working_set_bytes > 0 && group.bytes >= limits_.working_set_bytes);
}

void SubmissionWindow::submit_groups_through(std::size_t group_number)
{
	while (first_open_ <= group_number && !groups_.empty()) {
		/* Taken out of the window before StarPU sees it: StarPU runs the
		 * members' prologues when the merged task is ready, possibly
		 * inside this submission, and what they submit re-enters the
		 * window (same thread, mutex_ is recursive). */
		Group group = std::move(groups_.front());
		groups_.pop_front();
		first_open_++;
		run_calls_locked(std::move(group.calls_before));
		const std::size_t count = group.members.tasks.size();
		note_group_size(group.members);
		const double predicted_us = group.unpredicted ? NAN : group.predicted_us;
		submitting_groups_++;
		/* A kernel group's phases run one after another, each in one
		 * call: its members go phase by phase. */
		if (group.phases.size() > 1)
			group.members = group.members.in_phase_order(group.member_phase, static_cast<unsigned>(group.phases.size()));
		const std::size_t nhandles = submit_group(std::move(group.members), group.sched_ctx, predicted_us, reports_, real_submit_);
		submitting_groups_--;
		/* Only now: flush() returns without the lock when nothing is
		 * deferred, and must not return while a group is on its way to
		 * StarPU (a program's acquisition overtook a merged task the
		 * closer thread was submitting). */
		deferred_.fetch_sub(count, std::memory_order_relaxed);
		handles_submitted_.fetch_add(nhandles, std::memory_order_relaxed);
		groups_submitted_.fetch_add(1, std::memory_order_relaxed);
	}
	clear_record_when_empty();
}

void SubmissionWindow::clear_record_when_empty()
{
	if (groups_.empty() && pending_calls_.empty() && submitting_groups_ == 0) {
		/* Everything is in StarPU's hands, which orders what follows:
		 * the record starts afresh (group numbers at 0).  Every time:
		 * kept until 65,536 handles, the record of a program registering
		 * a handle per task (20,000 independent tasks) grew and was
		 * allocated again up to 5 MiB, and its lookups missed the
		 * cache; clear() is O(1). */
		order_.clear();
		first_open_ = 0;
	}
}

void SubmissionWindow::note_group_size(const GroupMembers &members)
{
	/* A group holds a few codelets: a short list beats a set. */
	std::vector<const struct starpu_codelet *> &seen = codelets_seen_;
	seen.clear();
	for (const struct starpu_task *task : members.tasks)
		if (std::find(seen.begin(), seen.end(), task->cl) == seen.end()) {
			seen.push_back(task->cl);
			group_sizes_.record_batch_members(task->cl, members.tasks.size());
		}
}

void SubmissionWindow::flush_conflicting_locked(const struct starpu_task *task)
{
	flush_through_locked(order_.latest_conflicting_group(accesses_of(task)));
}

void SubmissionWindow::flush_through_locked(long position)
{
	if (position < 0 || static_cast<std::size_t>(position) < first_open_)
		return;
	if (static_cast<std::size_t>(position) >= first_open_ + groups_.size())
		flush_locked(); /* a call placed after every group */
	else
		submit_groups_through(static_cast<std::size_t>(position));
}

void SubmissionWindow::flush_locked()
{
	const std::size_t end = first_open_ + groups_.size();
	if (!groups_.empty())
		submit_groups_through(end - 1);
	/* The calls placed at the end of the window: a task that StarPU's
	 * submission of a group ran a prologue for may have opened group end
	 * meanwhile, which took them (place()); they go to StarPU now all the
	 * same, before that group. */
	if (end < first_open_ + groups_.size() && end >= first_open_)
		run_calls_locked(std::move(groups_[end - first_open_].calls_before));
	run_calls_locked(std::move(pending_calls_));
	clear_record_when_empty();
}

void SubmissionWindow::run_calls_locked(std::vector<PendingCall> calls)
{
	/* Taken out of the window first (calls is the caller's list, moved):
	 * a call may run a callback that submits.  A partition that goes to
	 * StarPU ends its episode: its tasks will be on the children. */
	for (const PendingCall &call : calls) {
		if (call.opens_episode) {
			auto episode = std::find_if(episodes_.begin(), episodes_.end(),
						    [&](const PlanEpisode &e) { return e.parent == call.opens_episode; });
			if (!episode->unpartition_recorded)
				partition_handed_over_[episode->parent] = HandedOver{hand_over_, episode->spoiled};
			episodes_.erase(episode);
		}
		run_call(call.run);
	}
	calls_waiting_.fetch_sub(calls.size(), std::memory_order_relaxed);
}

void SubmissionWindow::run_call(const std::function<void()> &call)
{
	/* The switch task StarPU submits for it goes straight to StarPU. */
	InsideStarpuScope inside_starpu;
	call();
}

SubmissionWindow::TreeAccess SubmissionWindow::tree_access(const struct starpu_task *task) const
{
	TreeAccess found;
	if (!task->cl)
		return found;
	const bool codelet_switches = !(task->cl->flags & STARPU_CODELET_NOPLANS);
	for (unsigned i = 0; i < STARPU_TASK_GET_NBUFFERS(task); i++) {
		const starpu_data_handle_t handle = STARPU_TASK_GET_HANDLE(task, i);
		if (!trees_.in_tree(handle))
			continue;
		if (trees_.excluded(handle))
			found.excluded = true;
		const enum starpu_data_access_mode mode = STARPU_TASK_GET_MODE(task, i);
		if (reduces(mode))
			found.reduces = true;
		/* StarPU 1.4 counts a reduction as a write; 1.3 as a read, for
		 * which no fewer switches are needed. */
		if (codelet_switches && !(mode & STARPU_NOPLAN) && trees_.switches_plans(handle, (mode & (STARPU_W | STARPU_REDUX)) != 0))
			found.switches_plans = true;
	}
	return found;
}

void SubmissionWindow::follow_plan_switches_locked(const struct starpu_task *task)
{
	/* The handles StarPU switches plans for, in its own order
	 * (_starpu_task_submit, core/task.c); as tree_access. */
	switching_.clear();
	for (unsigned i = 0; i < STARPU_TASK_GET_NBUFFERS(task); i++) {
		const starpu_data_handle_t handle = STARPU_TASK_GET_HANDLE(task, i);
		const enum starpu_data_access_mode mode = STARPU_TASK_GET_MODE(task, i);
		if (trees_.in_tree(handle) && !trees_.excluded(handle) && !(mode & STARPU_NOPLAN))
			switching_.push_back({handle, plan_switch_writes(mode)});
	}
	/* Two accesses in one tree: StarPU switches for each in the order of
	 * its sorted buffers, which the window does not reproduce.  A
	 * synchronous task is submitted after the window's lock is released
	 * (submit()), and a task deferred meanwhile on the tree would be
	 * placed by a state StarPU has not reached yet.  Their trees are no
	 * longer followed (partition_trees.h). */
	bool follow = !task->synchronous;
	for (std::size_t a = 0; a < switching_.size() && follow; a++)
		for (std::size_t b = a + 1; b < switching_.size() && follow; b++)
			if (trees_.same_tree(switching_[a].handle, switching_[b].handle))
				follow = false;
	for (const Access<starpu_data_handle_t> &access : switching_) {
		if (!follow)
			trees_.exclude_tree(access.handle);
		else if (trees_.switches_plans(access.handle, access.writes))
			trees_.follow_switch(access.handle, access.writes);
	}
}

namespace {

/* A kernel group runs at most this many batched calls: a longer chain of
 * dependent tasks goes on in the next group. */
constexpr std::size_t kMostKernelPhases = 8;

} // namespace

bool SubmissionWindow::phase_takes(const KernelPhase &phase, const struct starpu_task *task)
{
	if (phase.codelet != task->cl)
		return false;
	for (unsigned i = 0; i < phase.modes.size(); i++)
		if (STARPU_TASK_GET_MODE(task, i) != phase.modes[i])
			return false;
	return true;
}

bool SubmissionWindow::fits_kernel(const Group &group, const struct starpu_task *task, bool batched_kernel) const
{
	if (!batched_kernel)
		return !group.is_kernel_group();
	for (const KernelPhase &phase : group.phases)
		if (phase_takes(phase, task))
			return true;
	return false;
}

long SubmissionWindow::kernel_phase_for(const Group &group, const struct starpu_task *task,
					const std::vector<Access<starpu_data_handle_t>> &accesses, double predicted_us, bool holds_conflict,
					bool must_be_light) const
{
	/* The highest phase holding a member task conflicts with (the order
	 * rule's conflicts, within one group: no handle and its ancestor
	 * meet there, fits_trees()).  A batched implementation gets tasks
	 * that could all run at once, as a ready-time batch's are
	 * (starpu_fusing.h): task goes to a later phase, which runs after
	 * that one.  One call taking a chain of in-place doublings read every
	 * member's input before writing any output and computed x * 2 for
	 * three (api_kernel_group_takes_no_dependent_task). */
	long conflicting = -1;
	if (holds_conflict) {
		const GroupMembers &members = group.members;
		const long last = static_cast<long>(group.phases.size()) - 1;
		for (std::size_t m = members.tasks.size(); m-- > 0 && conflicting < last;) {
			const long phase = group.member_phase[m];
			if (phase <= conflicting)
				continue;
			for (std::size_t u = members.first_use[m]; u < members.end_use(m) && phase > conflicting; u++)
				for (const Access<starpu_data_handle_t> &access : accesses)
					if (access.handle == members.use_handles[u] && (access.writes || changes_data(members.use_modes[u]))) {
						conflicting = phase;
						break;
					}
		}
	}
	/* A task depending on a member may run after it in the same merged
	 * task, rather than in a group of its own that would wait for this
	 * one anyway, when it is light next to that member (at most half its
	 * phase's mean prediction: a bias added to a convolution's output);
	 * a stencil's next step, as long as the step it follows, goes to
	 * groups of its own, spread over the workers (horizontal_group). */
	if (must_be_light && conflicting >= 0) {
		const KernelPhase &followed = group.phases[static_cast<std::size_t>(conflicting)];
		if (std::isnan(predicted_us) || group.unpredicted || 2.0 * predicted_us * double(followed.members) > followed.predicted_us)
			return -1;
	}
	for (std::size_t p = static_cast<std::size_t>(conflicting + 1); p < group.phases.size(); p++)
		if (phase_takes(group.phases[p], task))
			return static_cast<long>(p);
	return group.phases.size() < kMostKernelPhases ? static_cast<long>(group.phases.size()) : -1;
}

long SubmissionWindow::latest_conflict_without_reductions(const struct starpu_task *task)
{
	accesses_without_reductions_.clear();
	for (unsigned i = 0; i < STARPU_TASK_GET_NBUFFERS(task); i++) {
		const enum starpu_data_access_mode mode = STARPU_TASK_GET_MODE(task, i);
		if (!reduces(mode))
			accesses_without_reductions_.push_back({STARPU_TASK_GET_HANDLE(task, i), changes_data(mode)});
	}
	return order_.latest_conflicting_group(accesses_without_reductions_);
}

bool SubmissionWindow::fits_reductions(const Group &group, const struct starpu_task *task) const
{
	const unsigned nbuffers = STARPU_TASK_GET_NBUFFERS(task);
	for (unsigned i = 0; i < nbuffers; i++) {
		const starpu_data_handle_t handle = STARPU_TASK_GET_HANDLE(task, i);
		if (!reduces(STARPU_TASK_GET_MODE(task, i))) {
			if (std::find(group.reduced_handles.begin(), group.reduced_handles.end(), handle) != group.reduced_handles.end())
				return false;
			continue;
		}
		const GroupMembers &members = group.members;
		for (std::size_t u = 0; u < members.use_handles.size(); u++)
			if (members.use_handles[u] == handle && !reduces(members.use_modes[u]))
				return false;
	}
	return true;
}

void SubmissionWindow::note_reduced_handles(Group &group, const struct starpu_task *task)
{
	for (unsigned i = 0; i < STARPU_TASK_GET_NBUFFERS(task); i++) {
		const starpu_data_handle_t handle = STARPU_TASK_GET_HANDLE(task, i);
		if (reduces(STARPU_TASK_GET_MODE(task, i)) &&
		    std::find(group.reduced_handles.begin(), group.reduced_handles.end(), handle) == group.reduced_handles.end())
			group.reduced_handles.push_back(handle);
	}
}

bool SubmissionWindow::fits_trees(const Group &group, const std::vector<Access<starpu_data_handle_t>> &accesses) const
{
	if (group.tree_handles.empty())
		return true;
	for (const Access<starpu_data_handle_t> &access : accesses) {
		if (!trees_.in_tree(access.handle))
			continue;
		/* The access is an ancestor of a held handle, or a held handle
		 * is one of its ancestors (PartitionTrees::related). */
		if (group.tree_ancestors.contains(access.handle))
			return false;
		starpu_data_handle_t ancestor;
		for (starpu_data_handle_t h = access.handle; trees_.parent_of(h, ancestor); h = ancestor)
			if (group.tree_handles.contains(ancestor))
				return false;
	}
	return true;
}

void SubmissionWindow::note_child_uses(Group &group, const std::vector<Access<starpu_data_handle_t>> &accesses) const
{
	if (!any_tree_.load(std::memory_order_relaxed))
		return;
	const auto first = static_cast<unsigned>(group.members.use_handles.size());
	starpu_data_handle_t parent;
	unsigned child;
	for (std::size_t b = 0; b < accesses.size(); b++)
		if (trees_.child_of_plan(accesses[b].handle, parent, child))
			group.child_uses_of.find_or_add(parent).push_back({first + static_cast<unsigned>(b), child});
}

void SubmissionWindow::note_tree_handles(Group &group, const std::vector<Access<starpu_data_handle_t>> &accesses) const
{
	if (!any_tree_.load(std::memory_order_relaxed))
		return;
	for (const Access<starpu_data_handle_t> &access : accesses)
		if (trees_.in_tree(access.handle))
			note_tree_handle(group, access.handle);
}

void SubmissionWindow::note_tree_handle(Group &group, starpu_data_handle_t handle) const
{
	if (!group.tree_handles.insert(handle))
		return;
	starpu_data_handle_t ancestor;
	for (starpu_data_handle_t h = handle; trees_.parent_of(h, ancestor); h = ancestor)
		group.tree_ancestors.find_or_add(ancestor)++;
}

void SubmissionWindow::forget_tree_handle(Group &group, starpu_data_handle_t handle) const
{
	if (!group.tree_handles.erase(handle))
		return;
	starpu_data_handle_t ancestor;
	for (starpu_data_handle_t h = handle; trees_.parent_of(h, ancestor); h = ancestor)
		if (unsigned *count = group.tree_ancestors.find(ancestor); count && --*count == 0)
			group.tree_ancestors.erase(ancestor);
}

namespace {

/* The accesses StarPU's switch task gives a partition call: the parent
 * and every child, as _starpu_data_partition_submit and
 * _starpu_data_unpartition_submit do (filters.c, 1.3 and 1.4); a
 * read-only partition reads the parent. */
void call_accesses(PartitionTrees::Call call, starpu_data_handle_t parent, unsigned nparts, const starpu_data_handle_t *children,
		   std::vector<Access<starpu_data_handle_t>> &accesses)
{
	accesses.clear();
	accesses.push_back({parent, call != PartitionTrees::Call::partition_readonly});
	for (unsigned i = 0; i < nparts; i++)
		accesses.push_back({children[i], true});
}

} // namespace

void SubmissionWindow::record_partition_call(PartitionTrees::Call call, starpu_data_handle_t parent, unsigned nparts,
					     const starpu_data_handle_t *children, std::function<void()> starpu_call)
{
	std::lock_guard<std::recursive_mutex> lock(mutex_);
	if (call == PartitionTrees::Call::unpartition)
		unpartitions_recorded_.fetch_add(1, std::memory_order_relaxed);
	if (!episodes_.empty())
		spoil_episodes_locked(call, parent);
	if (call == PartitionTrees::Call::unpartition) {
		if (episodes_.empty())
			note_not_elided(parent, nullptr, false);
		else if (elide_plan_locked(parent, nparts, children))
			return;
	}
	trees_.apply(call, parent, children, nparts);
	/* Run under mutex_, as every call the window holds. */
	starpu_call = [this, parent, call_starpu = std::move(starpu_call)] {
		trees_.note_reached_starpu(parent);
		call_starpu();
	};
	call_accesses(call, parent, nparts, children, accesses_);
	const std::size_t position = std::max(order_.call_position(accesses_), first_open_);
	const std::size_t opened = first_open_ + groups_.size();
	const bool calls_at_position = position < opened ? !groups_[position - first_open_].calls_before.empty() : !pending_calls_.empty();
	if (!trees_.in_tree(parent) || trees_.excluded(parent)) {
		/* Nothing of its tree is deferred any more: it runs now, after
		 * what it must follow. */
		if (position != first_open_ || calls_at_position)
			flush_locked();
		run_call(starpu_call);
		return;
	}
	/* A partition that its unpartition may elide waits in the window even
	 * when nothing must precede it. */
	const bool opens_episode = (call == PartitionTrees::Call::partition || call == PartitionTrees::Call::partition_readonly) &&
				   may_elide(parent, nparts, children);
	order_.place_call(position, accesses_);
	if (position == first_open_ && !calls_at_position && !opens_episode) {
		/* Nothing in the window must run before it: StarPU may have
		 * it now. */
		run_call(starpu_call);
		return;
	}
	PendingCall pending{std::move(starpu_call), opens_episode ? parent : nullptr};
	if (opens_episode)
		episodes_.push_back(PlanEpisode{parent, std::min(position, opened), std::vector<starpu_data_handle_t>(children, children + nparts)});
	if (position < opened) {
		groups_[position - first_open_].calls_before.push_back(std::move(pending));
	} else {
		if (pending_calls_.empty())
			pending_since_us_ = starpu_timing_now();
		pending_calls_.push_back(std::move(pending));
	}
	if (calls_waiting_.fetch_add(1, std::memory_order_seq_cst) == 0 && deferred_.load(std::memory_order_relaxed) == 0 &&
	    !closer_watching_.load(std::memory_order_seq_cst)) {
		std::lock_guard<std::mutex> closer_lock(closer_mutex_);
		closer_wakeup_.notify_one();
	}
}

bool SubmissionWindow::may_elide(starpu_data_handle_t parent, unsigned nparts, const starpu_data_handle_t *children) const
{
	if (!limits_.elide_plans || !trees_.plan_filter(parent))
		return false;
	/* The children of the parent's one plan, all of them, in its order:
	 * each gets its place in the plan from there. */
	const std::vector<starpu_data_handle_t> &plan = trees_.plan_children(parent);
	if (plan.size() != nparts || !std::equal(plan.begin(), plan.end(), children))
		return false;
	/* The merged tasks will read the parent: StarPU refuses to read data
	 * that never had a value, which a parent registered without a buffer
	 * (home node -1) may not have (its partition would then submit no
	 * switch; doc/design.md, section 12). */
	if (starpu_data_get_home_node(parent) < 0)
		return false;
	for (const PlanEpisode &episode : episodes_)
		if (episode.parent == parent)
			return false;
	return true;
}

void SubmissionWindow::spoil_episodes_locked(PartitionTrees::Call call, starpu_data_handle_t parent)
{
	/* Any other call on the episode's parent (an upgrade) or on a handle
	 * of its tree (a plan of a child partitioned: its tasks' handles are
	 * no children of the parent) leaves the episode to StarPU. */
	for (PlanEpisode &episode : episodes_) {
		const bool closes = call == PartitionTrees::Call::unpartition && parent == episode.parent;
		if (!closes && (parent == episode.parent || trees_.related(parent, episode.parent)))
			episode.spoiled = true;
	}
}

void SubmissionWindow::note_not_elided(starpu_data_handle_t parent, PlanEpisode *episode, bool member_calibrating)
{
	auto handed = partition_handed_over_.find(parent);
	if (member_calibrating) {
		count_not_elided(NotElided::member_calibrating);
	} else if ((episode && episode->spoiled) || (handed != partition_handed_over_.end() && handed->second.spoiled)) {
		count_not_elided(NotElided::other_call_on_tree);
	} else if (handed != partition_handed_over_.end() && !episode) {
		count_not_elided(NotElided::partition_handed_over);
		handed_over_[static_cast<int>(handed->second.cause)].fetch_add(1, std::memory_order_relaxed);
	} else {
		/* Not a partition of the whole plan, or an unpartition naming
		 * other children than its partition. */
		count_not_elided(NotElided::never_elidable);
	}
	if (handed != partition_handed_over_.end())
		partition_handed_over_.erase(handed);
	if (episode)
		episode->unpartition_recorded = true;
}

std::uint64_t SubmissionWindow::unpartitions_not_elided(NotElided reason) const
{
	return not_elided_[static_cast<int>(reason)].load(std::memory_order_relaxed);
}

std::uint64_t SubmissionWindow::partitions_handed_over(HandOver cause) const
{
	return handed_over_[static_cast<int>(cause)].load(std::memory_order_relaxed);
}

const char *SubmissionWindow::hand_over_text(HandOver cause)
{
	switch (cause) {
	case HandOver::task_not_deferred: return "a conflicting task not deferred";
	case HandOver::program_call: return "a StarPU call of the program";
	case HandOver::group_full: return "a full group";
	case HandOver::window_full: return "a full window";
	case HandOver::max_delay: return "STARPU_FUSING_MAX_DELAY";
	case HandOver::idle_worker: return "an idle worker";
	case HandOver::count_: break;
	}
	return "?";
}

bool SubmissionWindow::elide_plan_locked(starpu_data_handle_t parent, unsigned nparts, const starpu_data_handle_t *children)
{
	auto episode = std::find_if(episodes_.begin(), episodes_.end(), [&](const PlanEpisode &e) { return e.parent == parent; });
	if (episode == episodes_.end()) {
		note_not_elided(parent, nullptr, false);
		return false;
	}
	if (episode->spoiled || episode->children.size() != nparts || !std::equal(episode->children.begin(), episode->children.end(), children)) {
		note_not_elided(parent, &*episode, false);
		return false;
	}
	/* A use the group noted as one of this plan's children (the plan's
	 * children are the episode's, checked above). */
	auto of_this_plan = [&](const Group &group, const Group::ChildUse &use) {
		return use.child < nparts && group.members.use_handles[use.use] == children[use.child];
	};
	/* A member whose codelet's model StarPU calibrates adds its duration
	 * to the model, which reads its handles: the program may unregister
	 * the children (cleaning the plan) before it runs.  Then the partition
	 * goes to StarPU (doc/design.md, section 12). */
	for (std::size_t g = episode->position - first_open_; g < groups_.size(); g++) {
		const Group &group = groups_[g];
		const std::vector<Group::ChildUse> *uses = group.child_uses_of.find(parent);
		if (!uses)
			continue;
		for (const Group::ChildUse &use : *uses)
			if (of_this_plan(group, use) && starpu_calibrates(group.members.tasks[group.members.member_of_use(use.use)])) {
				note_not_elided(parent, &*episode, true);
				return false;
			}
	}
	/* The partition is still in the window, so is every group from its
	 * position on (groups go to StarPU in order, the call with the first):
	 * take the call out. */
	const std::size_t opened = first_open_ + groups_.size();
	std::vector<PendingCall> &calls = episode->position < opened ? groups_[episode->position - first_open_].calls_before : pending_calls_;
	auto partition = std::find_if(calls.begin(), calls.end(), [&](const PendingCall &c) { return c.opens_episode == parent; });
	if (partition == calls.end()) {
		note_not_elided(parent, &*episode, false);
		return false;
	}
	calls.erase(partition);
	calls_waiting_.fetch_sub(1, std::memory_order_relaxed);
	/* Every use of a child since the partition is in those groups (the
	 * uses conflict with the call): each becomes a view of the parent. */
	auto plan = std::make_shared<ElidedPlan>();
	plan->filter = *trees_.plan_filter(parent);
	auto copy_interface = [](starpu_data_handle_t handle, std::vector<unsigned char> &copy) {
		const auto *bytes = static_cast<const unsigned char *>(starpu_data_get_interface_on_node(handle, STARPU_MAIN_RAM));
		copy.assign(bytes, bytes + starpu_data_get_interface_ops(handle)->interface_size);
	};
	copy_interface(parent, plan->parent_interface);
	plan->child_interfaces.resize(nparts);
	for (unsigned c = 0; c < nparts; c++)
		copy_interface(children[c], plan->child_interfaces[c]);
	for (std::size_t g = episode->position - first_open_; g < groups_.size(); g++) {
		Group &group = groups_[g];
		std::vector<Group::ChildUse> *uses = group.child_uses_of.find(parent);
		if (!uses)
			continue;
		std::vector<unsigned> viewed;
		for (const Group::ChildUse &use : *uses) {
			if (!of_this_plan(group, use))
				continue;
			/* The group now holds the parent, not the children
			 * (fits_trees). */
			forget_tree_handle(group, children[use.child]);
			group.members.make_view(use.use, parent, ChildView{plan, use.child});
			viewed.push_back(use.use);
		}
		const bool any_view = !viewed.empty();
		/* They are uses of the parent now: of a child of the
		 * grandparent's plan, when the parent has one. */
		uses->clear();
		starpu_data_handle_t grandparent;
		unsigned place;
		if (any_view && trees_.child_of_plan(parent, grandparent, place)) {
			std::vector<Group::ChildUse> &of_grandparent = group.child_uses_of.find_or_add(grandparent);
			for (unsigned u : viewed)
				of_grandparent.push_back({u, place});
		}
		if (any_view)
			note_tree_handle(group, parent);
	}
	episodes_.erase(episode);
	/* The tree's state and the order rule's record are as if both calls
	 * had been placed: what comes next is ordered the same way. */
	trees_.apply(PartitionTrees::Call::unpartition, parent, children, nparts);
	call_accesses(PartitionTrees::Call::unpartition, parent, nparts, children, accesses_);
	order_.place_call(std::max(order_.call_position(accesses_), first_open_), accesses_);
	plans_elided_.fetch_add(1, std::memory_order_relaxed);
	return true;
}

void SubmissionWindow::run_partition_change(PartitionChange change, starpu_data_handle_t parent, unsigned nparts,
					    const starpu_data_handle_t *children, const std::function<void()> &starpu_call,
					    const struct starpu_data_filter *plan_filter)
{
	std::lock_guard<std::recursive_mutex> lock(mutex_);
	switch (change) {
	case PartitionChange::plan:
		accesses_.assign(1, {parent, true});
		break;
	case PartitionChange::clean:
		call_accesses(PartitionTrees::Call::partition, parent, nparts, children, accesses_);
		break;
	case PartitionChange::unfollowed:
		accesses_.clear();
		break;
	}
	if (change == PartitionChange::unfollowed)
		flush_locked();
	else
		flush_through_locked(order_.latest_conflicting_group(accesses_));
	{
		std::lock_guard<std::mutex> outside(outside_calls_mutex_);
		for (starpu_data_handle_t reached : partitioned_outside_)
			trees_.note_reached_starpu(reached);
		partitioned_outside_.clear();
	}
	if (change == PartitionChange::clean && trees_.never_reached_starpu(parent, children, nparts))
		stop_following_unseen_children(children, nparts);
	run_call(starpu_call);
	/* A plan's children exist only now. */
	switch (change) {
	case PartitionChange::plan:
		trees_.add_plan(parent, children, nparts, *plan_filter);
		any_tree_.store(true, std::memory_order_relaxed);
		break;
	case PartitionChange::clean:
		trees_.clean_plan(parent, children, nparts);
		partition_handed_over_.erase(parent);
		break;
	case PartitionChange::unfollowed:
		if (trees_.in_tree(parent))
			trees_.exclude_tree(parent);
		break;
	}
}

void SubmissionWindow::note_partition_outside_window(starpu_data_handle_t parent)
{
	std::lock_guard<std::mutex> outside(outside_calls_mutex_);
	partitioned_outside_.insert(parent);
}

/* The plan's children were never seen by StarPU (every partition of the
 * plan elided, PartitionTrees::never_reached_starpu) and nothing left in
 * the window uses them (the clean's flush took every conflicting group):
 * StarPU holds no access to them, so their sequential consistency has
 * nothing to order.  Turned off, starpu_data_partition_clean unregisters
 * each child at once instead of through an acquisition with a
 * synchronisation task before and after it (starpu_data_unregister_submit,
 * user_interactions.c, 1.3 and 1.4): two tasks per child saved
 * (doc/design.md, section 12).  StarPU's definition, not the flush
 * barrier's entry: the window is flushed already. */
void SubmissionWindow::stop_following_unseen_children(const starpu_data_handle_t *children, unsigned nparts)
{
	static StarpuFunction<void (*)(starpu_data_handle_t, unsigned)> set_sequential_consistency(
		"starpu_data_set_sequential_consistency_flag");
	for (unsigned i = 0; i < nparts; i++)
		set_sequential_consistency.get()(children[i], 0);
	plans_cleaned_unseen_.fetch_add(1, std::memory_order_relaxed);
}

double SubmissionWindow::flush_overdue_locked()
{
	HandOverScope cause(*this, HandOver::max_delay);
	const double now_us = starpu_timing_now();
	std::size_t overdue = 0;
	while (overdue < groups_.size() && now_us - groups_[overdue].opened_us >= limits_.max_delay_us)
		overdue++;
	if (overdue > 0)
		submit_groups_through(first_open_ + overdue - 1);
	if (!groups_.empty())
		return groups_.front().opened_us + limits_.max_delay_us;
	/* Calls waiting for a group that may never open. */
	if (!pending_calls_.empty() && now_us - pending_since_us_ >= limits_.max_delay_us)
		flush_locked();
	return pending_calls_.empty() ? 0.0 : pending_since_us_ + limits_.max_delay_us;
}

void SubmissionWindow::flush_worth_running_locked()
{
	HandOverScope cause(*this, HandOver::idle_worker);
	/* Through the newest group worth running: one request used to hand
	 * over the oldest only, and polling workers asked again at once, but
	 * a resting worker does not (DAHL: 9 rests ended by the safety net
	 * while such groups waited).  Only while a worker of its context still
	 * waits: the request may be older than the groups (the program's
	 * thread deferred tasks while the worker that asked got busy), and
	 * handing them over then only makes them smaller (flush barrier test:
	 * increments deferred while the worker ran a reduction reached StarPU
	 * before the reader that had to find them deferred). */
	for (std::size_t i = groups_.size(); i-- > 0;) {
		const Group &group = groups_[i];
		if ((group.unpredicted || group.predicted_us >= kWorthRunningAlone_us) && load_.some_worker_waits(group.sched_ctx)) {
			submit_groups_through(first_open_ + i);
			return;
		}
	}
}

void SubmissionWindow::flush()
{
	if (!holds_tasks())
		return;
	std::lock_guard<std::recursive_mutex> lock(mutex_);
	flush_locked();
}

struct starpu_task *SubmissionWindow::task_for_dependency(struct starpu_task *task)
{
	if (struct starpu_task *merged = merged_task_standing_for(task))
		return merged;
	NamedMembers::Place place = names_.find(task);
	if (!place.known)
		return task;
	if (!place.merged) {
		std::lock_guard<std::recursive_mutex> lock(mutex_);
		place = names_.find(task);
		if (place.known && !place.merged)
			submit_groups_through(place.group);
		place = names_.find(task);
	}
	return place.merged ? place.merged : task;
}

/* Both take mutex_ even when nothing is deferred (unlike flush()): a
 * submission that read the hold or the count of waiting threads before
 * they changed may be about to place its task, and must be done with it
 * before the call goes on (a chain's next link, deferred just as the
 * program's wait began, was missed by the wait, and its callback ran after
 * the program had freed what it read). */
void SubmissionWindow::begin_acquisition(starpu_data_handle_t handle, enum starpu_data_access_mode mode)
{
	held_.acquired(handle, mode);
	std::lock_guard<std::recursive_mutex> lock(mutex_);
	flush_locked();
	follow_acquisition_switch_locked(handle, mode);
}

void SubmissionWindow::follow_acquisition_switch(starpu_data_handle_t handle, enum starpu_data_access_mode mode)
{
	/* StarPU's own switches acquire with STARPU_NOPLAN, from whatever
	 * thread makes them: they need not wait for the window's lock. */
	if (!any_tree_.load(std::memory_order_relaxed) || (mode & STARPU_NOPLAN))
		return;
	std::lock_guard<std::recursive_mutex> lock(mutex_);
	if (acquisition_switches_plans_locked(handle, mode)) {
		/* StarPU's switch accesses siblings the order rule took for
		 * free: everything deferred goes first, as for a task. */
		flush_locked();
		follow_acquisition_switch_locked(handle, mode);
	}
}

bool SubmissionWindow::acquisition_switches_plans_locked(starpu_data_handle_t handle, enum starpu_data_access_mode mode) const
{
	/* user_interactions.c: a write is W alone for an acquisition. */
	return any_tree_.load(std::memory_order_relaxed) && !(mode & STARPU_NOPLAN) && !trees_.excluded(handle) &&
	       trees_.switches_plans(handle, (mode & STARPU_W) != 0);
}

/* StarPU may switch plans for an acquisition, as for a task
 * (partition_trees.h). */
void SubmissionWindow::follow_acquisition_switch_locked(starpu_data_handle_t handle, enum starpu_data_access_mode mode)
{
	if (acquisition_switches_plans_locked(handle, mode))
		trees_.follow_switch(handle, (mode & STARPU_W) != 0);
}

void SubmissionWindow::begin_wait()
{
	waiting_threads_.fetch_add(1, std::memory_order_relaxed);
	std::lock_guard<std::recursive_mutex> lock(mutex_);
	flush_locked();
}

void SubmissionWindow::end_wait()
{
	waiting_threads_.fetch_sub(1, std::memory_order_relaxed);
	retired_.free_waiting();
}

bool SubmissionWindow::holds_unrequested_work()
{
	if (!holds_tasks() || flush_requested_.load(std::memory_order_seq_cst) || closer_handling_.load(std::memory_order_seq_cst))
		return false;
	std::unique_lock<std::recursive_mutex> lock(mutex_, std::try_to_lock);
	if (!lock.owns_lock())
		return false;
	for (const Group &group : groups_)
		if (group.unpredicted || group.predicted_us >= kWorthRunningAlone_us)
			return !flush_requested_.load(std::memory_order_seq_cst) && !closer_handling_.load(std::memory_order_seq_cst);
	return false;
}

void SubmissionWindow::request_flush()
{
	if (!flush_requested_.exchange(true, std::memory_order_relaxed)) {
		std::lock_guard<std::mutex> lock(closer_mutex_);
		closer_wakeup_.notify_one();
	}
}

/* The closer thread: once the oldest deferred task has waited
 * STARPU_FUSING_MAX_DELAY, flushes the window; on request (a worker found no
 * work), hands StarPU the groups worth running now (with the groups opened
 * before the newest of them): one nothing predicts, or with at least
 * kWorthRunningAlone_us of predicted work.  Groups of tinier tasks wait to
 * fill up: a worker idle because the program submits tiny tasks one by one
 * gains more from larger merged tasks, which cost the program less to
 * submit, than from a few µs of work now.  Waits without a
 * lock of the window; takes mutex_ only to flush.
 *
 * After a look that found the window holding something, it looks again
 * STARPU_FUSING_MAX_DELAY later at the latest even if it is empty by then
 * (closer_watching_), and sleeps until woken only after a look that found
 * it empty: a window the program's thread fills and the closer empties again
 * and again needs no wake-up from that thread each time it turns non-empty
 * (the convolution at 2,304 px: ~28 per loop, each a futex call and often a
 * preemption of that thread; 10 interleaved runs, 0.047 -> 0.044 s).  A task
 * deferred meanwhile is still handed over STARPU_FUSING_MAX_DELAY after its
 * group opened: the closer's next look finds its group and waits until it
 * is due.  Stopping to watch pairs with place(): the closer clears
 * closer_watching_ and then tests holds_tasks(), the program's thread
 * counts its task and then reads closer_watching_, both sequentially
 * consistent, so either the closer sees the task or the thread wakes it. */
void SubmissionWindow::close_periodically()
{
	std::unique_lock<std::mutex> lock(closer_mutex_);
	double due_us = 0.0; /* when the oldest group is due, 0: none known */
	bool looked_at_work = false; /* the last look found tasks or calls in the window */
	while (!closer_stop_) {
		if (due_us > 0.0) {
			closer_watching_.store(true, std::memory_order_seq_cst);
			const double wait_us = std::max(0.0, due_us - starpu_timing_now());
			closer_wakeup_.wait_for(lock, std::chrono::microseconds(static_cast<long long>(wait_us)));
		} else if (looked_at_work) {
			closer_watching_.store(true, std::memory_order_seq_cst);
			closer_wakeup_.wait_for(lock, std::chrono::microseconds(static_cast<long long>(limits_.max_delay_us)),
						[&] { return closer_stop_ || flush_requested_.load(); });
		} else {
			closer_watching_.store(false, std::memory_order_seq_cst);
			closer_wakeup_.wait(lock, [&] { return closer_stop_ || holds_tasks() || flush_requested_.load(); });
		}
		if (closer_stop_)
			break;
		/* Set while a request is taken and handled: what the window holds
		 * then is on its way (holds_unrequested_work). */
		closer_handling_.store(true, std::memory_order_seq_cst);
		const bool requested = flush_requested_.exchange(false, std::memory_order_seq_cst);
		lock.unlock();
		{
			std::lock_guard<std::recursive_mutex> window_lock(mutex_);
			looked_at_work = holds_tasks();
			if (requested)
				flush_worth_running_locked();
			due_us = flush_overdue_locked();
		}
		closer_handling_.store(false, std::memory_order_seq_cst);
		lock.lock();
	}
}

} // namespace fusing
