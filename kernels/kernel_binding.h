/* Binding a program's codelets to kernel pack entries (kernels/pack.h),
 * and trusting each only once it computed what the codelet computes
 * (doc/design.md, section 13).
 *
 * A family of held tasks whose codelet an enabled entry may stand in for
 * (names, buffer count, the modes its tasks were submitted with) is bound
 * to that entry when its first batch is built, unless the program
 * registered a batched implementation of its own for the codelet
 * (starpu_fusing_register_batched), which wins.  A bound batch runs:
 *  - tasks the entry does not accept (interfaces, element size, layout,
 *    aliasing, a cl_arg: no entry reads one, and a codelet's arguments may
 *    change what it computes; kernels/pack.h), or whose only-written
 *    buffers do not hold zeros: with the codelet's own function;
 *  - the others of shapes (interfaces, element sizes, dimensions and
 *    strides of every buffer) not verified yet: with the codelet's own
 *    function, and the kernel beside it on copies, shape by shape
 *    (kernel_verification.h).  A shape whose results cannot tell two
 *    computations apart (a NaN or infinity, or fewer than two elements
 *    changed by different amounts larger than the bound: all-zero inputs,
 *    integers read as floating-point numbers) is not verified, and the
 *    next 1, 2, 4... up to kLongestVerificationGap batches holding
 *    unverified shapes run them with the codelet's own function only
 *    (DAHL's built-in dataset is all zeros: every convolution batch would
 *    otherwise run both ways); one within the bound verifies its shape; a
 *    mismatch, or a codelet function that reads its own task
 *    (starpu_task_get_current: a field the kernel does not see may change
 *    what it computes), drops the binding for the rest of the run, with one
 *    line, and that batch keeps the codelet's results;
 *  - those of verified shapes: in the kernel, one call for all of them;
 *    but every kRecheckPeriod-th such batch runs both ways again, and a
 *    mismatch then drops the binding too (a codelet agreeing with the
 *    entry on the data of its first batches only: the batches in between
 *    kept the kernel's results).
 * A binding belongs to the codelet's CPU function as it was when bound: a
 * program that changes it gets a new binding, verified again.
 *
 * Threads: may_bind in submitting and readying threads, binding_for in the
 * thread building a batch (the flusher) or a submission-time group (the
 * thread handing the window over), KernelBinding::run in the worker running
 * a batch or group (several at once).  KernelBindings::mutex_ guards its table; each KernelBinding's
 * mutex_ guards its verified shapes and the reason it was dropped; the
 * counters are atomics (statistics only); dropped_ is an atomic read
 * without a lock: a batch built before a drop and run after it checks it
 * again when it runs. */
#ifndef STARPU_FUSING_KERNELS_KERNEL_BINDING_H
#define STARPU_FUSING_KERNELS_KERNEL_BINDING_H

#include "core/codelet_selection.h"
#include "kernels/pack.h"

#include <starpu.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace fusing {

/* Which tasks of a batch ran in the kernel, and when: their share of
 * StarPU's per-task profiling (member_run.h). */
struct KernelRun {
	std::vector<unsigned> tasks;
	double start_us = 0.0, end_us = 0.0;
};

class KernelBinding {
public:
	/* cpu_function: the codelet's CPU function when bound; what is
	 * verified is that function. */
	KernelBinding(const kernels::PackEntry &entry, std::string codelet_name, starpu_cpu_func_t cpu_function,
		      std::vector<enum starpu_data_access_mode> modes);

	const kernels::PackEntry &entry() const { return entry_; }
	bool dropped() const { return dropped_.load(std::memory_order_acquire); }

	/* Every this many batches run in the kernel, one runs both ways.  A
	 * batch of DAHL's basic_cnn runs 8-16 tasks, about 60 batches of each
	 * bound codelet per epoch at 28x28. */
	static constexpr std::uint64_t kRecheckPeriod = 32;
	/* After batches that could not tell, at most this many batches of
	 * unverified shapes run the codelet's own function before the next
	 * attempt. */
	static constexpr std::uint64_t kLongestVerificationGap = 64;

	/* Runs a batch of cl's tasks, buffers and cl_arg as the codelet's
	 * function gets them; run_own(t) runs task t with the codelet's own
	 * function.  When cl's CPU function is no longer the one bound (the
	 * program changed it since the batch was built), every task runs it:
	 * StarPU too calls the function a codelet has when its task runs.
	 * The worker running the batch. */
	KernelRun run(const struct starpu_codelet *cl, unsigned ntasks, void **task_buffers[], void *task_args[],
		      const std::function<void(unsigned)> &run_own);

	/* One statistics line. */
	void print(FILE *stream) const;

private:
	using Shape = std::vector<std::uint64_t>;
	static Shape shape_of(void **buffers, std::size_t nbuffers);
	/* For a batch of unverified shapes: whether to run it both ways now
	 * (else it runs the codelet's own function); mutex_. */
	bool attempt_verification();
	/* The codelet's function on the real buffers, the kernel on copies,
	 * shape by shape; then trust each shape whose tasks could tell, or
	 * drop the binding (a disagreement, or a function that reads its own
	 * task). */
	void verify(const std::vector<void **> &tasks, const std::vector<unsigned> &indices, const std::vector<Shape> &shapes,
		    const std::function<void(unsigned)> &run_own);
	/* Drops the binding for the rest of the run, with one line saying
	 * why, unless another batch did first. */
	void drop(const std::string &reason, std::size_t batch_tasks);

	const kernels::PackEntry &entry_;
	const std::string codelet_name_;
	const starpu_cpu_func_t cpu_function_;
	const std::vector<enum starpu_data_access_mode> modes_;
	std::atomic<bool> dropped_{false};
	mutable std::mutex mutex_;
	std::set<Shape> verified_shapes_; /* mutex_ */
	std::string drop_reason_;         /* mutex_ */
	std::uint64_t unverified_batches_ = 0; /* mutex_: batches of unverified shapes seen */
	std::uint64_t next_attempt_ = 0;       /* mutex_: the unverified batch to run both ways next */
	unsigned uninformative_streak_ = 0;    /* mutex_: verifications in a row that could not tell */
	/* Batches of verified shapes (run in the kernel or re-checked): the
	 * re-check period's count. */
	std::atomic<std::uint64_t> trusted_batches_{0};
	std::atomic<std::uint64_t> kernel_batches_{0}, kernel_tasks_{0}, verification_batches_{0}, uninformative_batches_{0},
		rechecks_{0}, tasks_not_accepted_{0}, own_while_unverified_{0};
};

class KernelBindings {
public:
	/* enabled: the entries STARPU_FUSING_KERNELS lets bind (none: off). */
	explicit KernelBindings(std::vector<const kernels::PackEntry *> enabled);

	/* Whether tasks of cl may run in a kernel: an enabled entry's names
	 * and buffer count match it, and no mismatch dropped it.  Any thread;
	 * lock-free for codelets no entry matches. */
	bool may_bind(const struct starpu_codelet *cl);

	/* The binding of cl's tasks submitted with modes, with cl's CPU
	 * function as it is now, or null (no entry matches, or it was
	 * dropped).  A codelet whose function the program changed gets a new
	 * binding, verified again before its kernel's results are used (one
	 * line says so).  The thread building a batch or a group; takes
	 * mutex_. */
	KernelBinding *binding_for(const struct starpu_codelet *cl, const std::vector<enum starpu_data_access_mode> &modes);

	/* One line per binding made (STARPU_FUSING_STATS). */
	void print(FILE *stream) const;

private:
	/* The enabled entries whose names and buffer count match cl. */
	std::vector<const kernels::PackEntry *> candidates(const struct starpu_codelet *cl) const;
	/* Whether cl has candidates, remembered in named_; any thread. */
	bool named_by_an_entry(const struct starpu_codelet *cl);

	const std::vector<const kernels::PackEntry *> enabled_;
	CodeletSelection named_; /* may_bind's first test: some entry's names and buffer count match */
	mutable std::mutex mutex_;
	/* (codelet, its CPU function, modes) -> binding, null when no entry
	 * takes those modes; mutex_. */
	using Key = std::tuple<const struct starpu_codelet *, starpu_cpu_func_t, std::vector<enum starpu_data_access_mode>>;
	std::map<Key, std::unique_ptr<KernelBinding>> bindings_;
};

/* The entries STARPU_FUSING_KERNELS lets bind (Config::kernel_entries):
 * every entry when unset (auto), else those named (none for off).  Names
 * were checked at start (policy_selection.cpp). */
std::vector<const kernels::PackEntry *> enabled_pack_entries(const std::optional<std::vector<std::string>> &names);

} // namespace fusing

#endif
