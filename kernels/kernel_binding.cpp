/* Kernel pack bindings; see kernel_binding.h. */
#include "kernels/kernel_binding.h"

#include "core/codelet_name.h"
#include "core/current_member.h"
#include "kernels/kernel_verification.h"
#include "kernels/views.h"

#include <algorithm>

namespace fusing {

KernelBinding::KernelBinding(const kernels::PackEntry &entry, std::string codelet_name, starpu_cpu_func_t cpu_function,
			     std::vector<enum starpu_data_access_mode> modes)
	: entry_(entry), codelet_name_(std::move(codelet_name)), cpu_function_(cpu_function), modes_(std::move(modes))
{
}

KernelBinding::Shape KernelBinding::shape_of(void **buffers, std::size_t nbuffers)
{
	Shape shape;
	for (std::size_t b = 0; b < nbuffers; b++) {
		void *buffer = buffers[b];
		shape.push_back(kernels::interface_id_of(buffer));
		shape.push_back(kernels::element_size_of(buffer));
		switch (kernels::interface_bit_of(buffer)) {
		case kernels::kVectorInterface: shape.push_back(kernels::vector_of<char>(buffer).n); break;
		case kernels::kMatrixInterface:
		case kernels::kBlockInterface: {
			const kernels::Grid<char> grid = kernels::grid_of<char>(buffer);
			shape.insert(shape.end(), {grid.nx, grid.ny, grid.nz, grid.ldy, grid.ldz});
			break;
		}
		default: break;
		}
	}
	return shape;
}

bool KernelBinding::attempt_verification()
{
	std::lock_guard<std::mutex> lock(mutex_);
	return unverified_batches_++ >= next_attempt_;
}

void KernelBinding::verify(const std::vector<void **> &tasks, const std::vector<unsigned> &indices, const std::vector<Shape> &shapes,
			   const std::function<void(unsigned)> &run_own)
{
	verification_batches_.fetch_add(1, std::memory_order_relaxed);
	/* Each shape is compared on its own: a batch of one codelet's float
	 * tasks and int64 ones (8-byte elements, run as double) could tell the
	 * floats' results apart only, and marked both shapes verified. */
	std::map<Shape, std::vector<std::size_t>> positions_of_shape;
	for (std::size_t p = 0; p < tasks.size(); p++)
		positions_of_shape[shapes[p]].push_back(p);
	std::string failure; /* the first reason to drop the binding */
	std::vector<const Shape *> informative;
	for (const auto &shape_positions : positions_of_shape) {
		std::vector<void **> shape_tasks;
		for (std::size_t p : shape_positions.second)
			shape_tasks.push_back(tasks[p]);
		WrittenBufferCopies copies(shape_tasks, modes_);
		TermMagnitudes magnitudes(shape_tasks, modes_.size());
		const std::uint64_t task_reads_before = current_task_reads_by_members();
		for (std::size_t p : shape_positions.second)
			run_own(indices[p]);
		if (!failure.empty())
			continue; /* the codelet's results are kept; nothing more to learn */
		if (current_task_reads_by_members() != task_reads_before) {
			failure = "its function reads its own task (starpu_task_get_current), whose fields the kernel does not see";
			continue;
		}
		kernels::run_accepted_tasks(entry_, static_cast<unsigned>(shape_tasks.size()), copies.task_buffers());
		kernels::run_accepted_tasks(entry_, static_cast<unsigned>(shape_tasks.size()), magnitudes.task_buffers());
		const Comparison comparison = copies.compare(&magnitudes);
		if (!comparison.within_bound) {
			char reason[160];
			std::snprintf(reason, sizeof(reason), "it does not compute what the codelet computes (largest difference %.3g, bound %.3g)",
				      comparison.largest_difference, comparison.bound);
			failure = reason;
		} else if (comparison.informative) {
			informative.push_back(&shape_positions.first);
		}
	}
	if (!failure.empty())
		return drop(failure, tasks.size());
	std::lock_guard<std::mutex> lock(mutex_);
	if (!informative.empty()) {
		for (const Shape *shape : informative)
			verified_shapes_.insert(*shape);
		uninformative_streak_ = 0;
		next_attempt_ = unverified_batches_;
		return;
	}
	uninformative_batches_.fetch_add(1, std::memory_order_relaxed);
	const std::uint64_t gap = std::min<std::uint64_t>(std::uint64_t(1) << std::min(uninformative_streak_, 20u), kLongestVerificationGap);
	uninformative_streak_++;
	next_attempt_ = unverified_batches_ + gap;
}

void KernelBinding::drop(const std::string &reason, std::size_t batch_tasks)
{
	if (dropped_.exchange(true, std::memory_order_acq_rel))
		return; /* another worker's batch found it first and said so */
	{
		std::lock_guard<std::mutex> lock(mutex_);
		drop_reason_ = reason;
	}
	std::fprintf(stderr,
		     "starpu-fusing: kernel pack entry '%s' cannot stand in for codelet '%s': %s (in a batch of %zu of its tasks "
		     "run both ways): that batch keeps the codelet's results, and its tasks run the codelet's own function for the "
		     "rest of the run\n",
		     entry_.name, codelet_name_.c_str(), reason.c_str(), batch_tasks);
}

KernelRun KernelBinding::run(const struct starpu_codelet *cl, unsigned ntasks, void **task_buffers[], void *task_args[],
			     const std::function<void(unsigned)> &run_own)
{
	/* The accepted tasks, in two sets: of verified shapes (the kernel's),
	 * and of others (to verify, or the codelet's own function). */
	struct Accepted {
		std::vector<unsigned> indices;
		std::vector<void **> tasks;
		std::vector<Shape> shapes;
	} trusted, unverified;
	const bool usable = !dropped() && cl->cpu_funcs[0] == cpu_function_;
	{
		std::lock_guard<std::mutex> lock(mutex_);
		for (unsigned t = 0; t < ntasks; t++) {
			if (usable && !task_args[t] && kernels::task_accepted(entry_, task_buffers[t]) &&
			    kernels::written_buffers_start_at_zero(entry_, task_buffers[t])) {
				Shape shape = shape_of(task_buffers[t], modes_.size());
				Accepted &set = verified_shapes_.count(shape) ? trusted : unverified;
				set.indices.push_back(t);
				set.tasks.push_back(task_buffers[t]);
				set.shapes.push_back(std::move(shape));
			} else if (usable) {
				tasks_not_accepted_.fetch_add(1, std::memory_order_relaxed);
			}
		}
	}
	/* The codelet's own function, in task order, for the tasks no set
	 * holds. */
	std::vector<bool> accepted(ntasks, false);
	for (const Accepted *set : {&trusted, &unverified})
		for (unsigned t : set->indices)
			accepted[t] = true;
	for (unsigned t = 0; t < ntasks; t++)
		if (!accepted[t])
			run_own(t);
	if (!unverified.indices.empty()) {
		if (attempt_verification()) {
			verify(unverified.tasks, unverified.indices, unverified.shapes, run_own);
		} else {
			own_while_unverified_.fetch_add(1, std::memory_order_relaxed);
			for (unsigned t : unverified.indices)
				run_own(t);
		}
	}
	KernelRun ran;
	if (trusted.indices.empty())
		return ran;
	if (trusted_batches_.fetch_add(1, std::memory_order_relaxed) % kRecheckPeriod == kRecheckPeriod - 1) {
		rechecks_.fetch_add(1, std::memory_order_relaxed);
		verify(trusted.tasks, trusted.indices, trusted.shapes, run_own);
		return ran;
	}
	ran.start_us = starpu_timing_now();
	kernels::run_accepted_tasks(entry_, static_cast<unsigned>(trusted.tasks.size()), trusted.tasks.data());
	ran.end_us = starpu_timing_now();
	ran.tasks = std::move(trusted.indices);
	kernel_batches_.fetch_add(1, std::memory_order_relaxed);
	kernel_tasks_.fetch_add(ran.tasks.size(), std::memory_order_relaxed);
	return ran;
}

void KernelBinding::print(FILE *stream) const
{
	std::lock_guard<std::mutex> lock(mutex_);
	std::fprintf(stream, "[starpu-fusing] kernel %s for %s: %llu batches, %llu tasks in the kernel; %llu batches run both ways "
		     "(%llu re-checks of verified shapes, %llu that could not tell), %zu shapes verified",
		     entry_.name, codelet_name_.c_str(), (unsigned long long)kernel_batches_.load(),
		     (unsigned long long)kernel_tasks_.load(), (unsigned long long)verification_batches_.load(),
		     (unsigned long long)rechecks_.load(), (unsigned long long)uninformative_batches_.load(), verified_shapes_.size());
	if (own_while_unverified_.load() != 0)
		std::fprintf(stream, "; %llu batches of unverified shapes ran the codelet's own function, waiting for results that can tell",
			     (unsigned long long)own_while_unverified_.load());
	if (tasks_not_accepted_.load() != 0)
		std::fprintf(stream, "; %llu tasks of shapes it does not take", (unsigned long long)tasks_not_accepted_.load());
	if (dropped())
		std::fprintf(stream, "; dropped: %s", drop_reason_.c_str());
	std::fprintf(stream, "\n");
}

KernelBindings::KernelBindings(std::vector<const kernels::PackEntry *> enabled) : enabled_(std::move(enabled))
{
}

std::vector<const kernels::PackEntry *> KernelBindings::candidates(const struct starpu_codelet *cl) const
{
	std::vector<const kernels::PackEntry *> matching;
	if (enabled_.empty() || cl->nbuffers == STARPU_VARIABLE_NBUFFERS)
		return matching;
	const std::vector<std::string> names = codelet_known_names(cl);
	for (const kernels::PackEntry *entry : enabled_) {
		if (entry->buffers.size() != static_cast<std::size_t>(cl->nbuffers))
			continue;
		for (const std::string &name : names)
			if (std::find(entry->known_as.begin(), entry->known_as.end(), name) != entry->known_as.end()) {
				matching.push_back(entry);
				break;
			}
	}
	return matching;
}

bool KernelBindings::named_by_an_entry(const struct starpu_codelet *cl)
{
	return named_.selected(cl, [this](const struct starpu_codelet *codelet) { return !candidates(codelet).empty(); });
}

bool KernelBindings::may_bind(const struct starpu_codelet *cl)
{
	if (!named_by_an_entry(cl))
		return false;
	std::lock_guard<std::mutex> lock(mutex_);
	for (const auto &binding : bindings_)
		if (std::get<0>(binding.first) == cl && std::get<1>(binding.first) == cl->cpu_funcs[0] && binding.second &&
		    binding.second->dropped())
			return false;
	return true;
}

KernelBinding *KernelBindings::binding_for(const struct starpu_codelet *cl, const std::vector<enum starpu_data_access_mode> &modes)
{
	if (!named_by_an_entry(cl))
		return nullptr;
	std::lock_guard<std::mutex> lock(mutex_);
	const starpu_cpu_func_t function = cl->cpu_funcs[0];
	Key key{cl, function, modes};
	auto it = bindings_.find(key);
	if (it == bindings_.end()) {
		std::unique_ptr<KernelBinding> binding;
		for (const kernels::PackEntry *entry : candidates(cl)) {
			bool same_modes = true;
			for (std::size_t b = 0; b < modes.size(); b++)
				same_modes = same_modes && entry->buffers[b].mode == modes[b];
			if (same_modes) {
				binding = std::make_unique<KernelBinding>(*entry, codelet_family_name(cl), function, modes);
				break;
			}
		}
		if (binding)
			for (const auto &earlier : bindings_)
				if (std::get<0>(earlier.first) == cl && std::get<2>(earlier.first) == modes && earlier.second) {
					std::fprintf(stderr, "starpu-fusing: codelet '%s' has another CPU function than when kernel pack entry "
						     "'%s' was bound to it: the entry is verified again before its results are used\n",
						     codelet_family_name(cl).c_str(), binding->entry().name);
					break;
				}
		it = bindings_.emplace(std::move(key), std::move(binding)).first;
	}
	KernelBinding *binding = it->second.get();
	return binding && !binding->dropped() ? binding : nullptr;
}

void KernelBindings::print(FILE *stream) const
{
	std::lock_guard<std::mutex> lock(mutex_);
	for (const auto &binding : bindings_)
		if (binding.second)
			binding.second->print(stream);
}

std::vector<const kernels::PackEntry *> enabled_pack_entries(const std::optional<std::vector<std::string>> &names)
{
	std::vector<const kernels::PackEntry *> enabled;
	if (!names) {
		for (const kernels::PackEntry &entry : kernels::kernel_pack())
			enabled.push_back(&entry);
		return enabled;
	}
	for (const std::string &name : *names)
		if (const kernels::PackEntry *entry = kernels::pack_entry_named(name))
			enabled.push_back(entry);
	return enabled;
}

} // namespace fusing
