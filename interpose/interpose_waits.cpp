/* StarPU's waits for its task counts, while tasks may be deferred (part of
 * the flush barrier, flush_barrier.rules "own").
 *
 * starpu_task_wait_for_all and its kin return once StarPU's count of
 * submitted (or ready) tasks drops.  A task deferred during the wait, by a
 * callback of a task the wait waits for or by another thread, is not in that
 * count: a chain whose callbacks submit the next link ended the wait after
 * one link (tests/test_program_api.cpp).  So the wait flushes the window and,
 * until it returns, no task is deferred (SubmissionWindow::begin_wait): what
 * is submitted meanwhile reaches StarPU's count as it would without fusion.
 * starpu_shutdown waits for ready tasks the same way; the window is gone
 * when it returns, so nothing is deferred after it starts.
 *
 * StarPU counts a merged task once for all its members: a wait for at most
 * n tasks not terminated, and starpu_task_nsubmitted, add the members it
 * does not count (SubmissionWindow::wait_for_n_submitted; 200 tasks of
 * 20 us then starpu_task_wait_for_n_submitted(20) returned with 132 not
 * terminated under STARPU_FUSING_HOLD=always, at most 20 under lws alone:
 * promises_wait_for_n_submitted_counts_every_task).  starpu_task_nsubmitted
 * also counts the tasks in the window, without flushing it: a program
 * polling it to throttle its submissions would otherwise hand every group
 * over at once.
 *
 * StarPU's own calls of these functions (starpu_shutdown calling
 * starpu_task_wait_for_no_ready) pass (submission/starpu_code.h).  The waiting thread. */
#include "submission/starpu_code.h"
#include "core/starpu_functions.h"
#include "submission/window.h"
#include "starpu_fusing.h"

namespace {

/* Marks a program's wait from construction to destruction. */
class ProgramWait {
public:
	explicit ProgramWait(const void *caller)
	{
		fusing::SubmissionWindow *window = fusing::active_submission_window();
		if (window && !fusing::InsideStarpuScope::active() && !fusing::called_from_starpu(caller)) {
			window_ = window;
			window_->begin_wait();
		}
	}
	~ProgramWait()
	{
		if (window_)
			window_->end_wait();
	}
	/* The window when this is the program's wait, else null. */
	fusing::SubmissionWindow *window() const { return window_; }
	ProgramWait(const ProgramWait &) = delete;
	ProgramWait &operator=(const ProgramWait &) = delete;

private:
	fusing::SubmissionWindow *window_ = nullptr;
};

fusing::StarpuFunction<int (*)(void)> starpu_wait_for_all("starpu_task_wait_for_all");
fusing::StarpuFunction<int (*)(unsigned)> starpu_wait_for_all_in_ctx("starpu_task_wait_for_all_in_ctx");
fusing::StarpuFunction<int (*)(unsigned)> starpu_wait_for_n_submitted("starpu_task_wait_for_n_submitted");
fusing::StarpuFunction<int (*)(unsigned, unsigned)> starpu_wait_for_n_submitted_in_ctx("starpu_task_wait_for_n_submitted_in_ctx");
fusing::StarpuFunction<int (*)(void)> starpu_wait_for_no_ready("starpu_task_wait_for_no_ready");
fusing::StarpuFunction<void (*)(void)> starpu_own_shutdown("starpu_shutdown");
fusing::StarpuFunction<int (*)(void)> starpu_own_nsubmitted("starpu_task_nsubmitted");

} // namespace

extern "C" {

FUSING_PUBLIC int starpu_task_wait_for_all(void)
{
	ProgramWait wait(__builtin_return_address(0));
	return starpu_wait_for_all.get()();
}

FUSING_PUBLIC int starpu_task_wait_for_all_in_ctx(unsigned sched_ctx_id)
{
	ProgramWait wait(__builtin_return_address(0));
	return starpu_wait_for_all_in_ctx.get()(sched_ctx_id);
}

FUSING_PUBLIC int starpu_task_wait_for_n_submitted(unsigned n)
{
	ProgramWait wait(__builtin_return_address(0));
	auto starpu_wait = starpu_wait_for_n_submitted.get();
	if (!wait.window())
		return starpu_wait(n);
	/* StarPU waits for one context's count (the current one, or each
	 * scheduling one in turn): counting every context's uncounted members
	 * against it waits at least as long. */
	return wait.window()->wait_for_n_submitted(true, 0, n, starpu_wait);
}

FUSING_PUBLIC int starpu_task_wait_for_n_submitted_in_ctx(unsigned sched_ctx_id, unsigned n)
{
	ProgramWait wait(__builtin_return_address(0));
	auto starpu_wait = starpu_wait_for_n_submitted_in_ctx.get();
	if (!wait.window() || sched_ctx_id >= STARPU_NMAX_SCHED_CTXS)
		return starpu_wait(sched_ctx_id, n);
	return wait.window()->wait_for_n_submitted(false, sched_ctx_id, n,
						   [&](unsigned starpu_n) { return starpu_wait(sched_ctx_id, starpu_n); });
}

FUSING_PUBLIC int starpu_task_nsubmitted(void)
{
	const int starpu_count = starpu_own_nsubmitted.get()();
	fusing::SubmissionWindow *window = fusing::active_submission_window();
	if (!window || starpu_count < 0)
		return starpu_count;
	return static_cast<int>(window->submitted_not_terminated(static_cast<std::size_t>(starpu_count)));
}

FUSING_PUBLIC int starpu_task_wait_for_no_ready(void)
{
	ProgramWait wait(__builtin_return_address(0));
	return starpu_wait_for_no_ready.get()();
}

FUSING_PUBLIC void starpu_shutdown(void)
{
	/* The window is destroyed inside StarPU's shutdown (the policy's
	 * deinit), unless StarPU was initialised more times than shut down. */
	fusing::SubmissionWindow *window = fusing::active_submission_window();
	if (window && (fusing::InsideStarpuScope::active() || fusing::called_from_starpu(__builtin_return_address(0))))
		window = nullptr;
	if (window)
		window->begin_wait();
	starpu_own_shutdown.get()();
	if (window && fusing::active_submission_window() == window)
		window->end_wait();
}

} // extern "C"
