/* Kernel verification on copies; see kernel_verification.h. */
#include "kernels/kernel_verification.h"

#include "kernels/views.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>

namespace fusing {
namespace {

/* Calls visit(offset) for the offset, in elements from ptr, of every
 * element of the interface (padding left out). */
template <typename Visit>
void for_each_element(void *interface, Visit visit)
{
	switch (kernels::interface_id_of(interface)) {
	case STARPU_VECTOR_INTERFACE_ID: {
		const auto *v = static_cast<struct starpu_vector_interface *>(interface);
		for (std::size_t x = 0; x < v->nx; x++)
			visit(x);
		break;
	}
	case STARPU_MATRIX_INTERFACE_ID: {
		const auto *m = static_cast<struct starpu_matrix_interface *>(interface);
		for (std::size_t y = 0; y < m->ny; y++)
			for (std::size_t x = 0; x < m->nx; x++)
				visit(y * m->ld + x);
		break;
	}
	case STARPU_BLOCK_INTERFACE_ID: {
		const auto *b = static_cast<struct starpu_block_interface *>(interface);
		for (std::size_t z = 0; z < b->nz; z++)
			for (std::size_t y = 0; y < b->ny; y++)
				for (std::size_t x = 0; x < b->nx; x++)
					visit(z * b->ldz + y * b->ldy + x);
		break;
	}
	default: /* a variable: one element */
		visit(0);
		break;
	}
}

/* Bytes from the interface's ptr to the end of its last element. */
std::size_t spanned_bytes(void *interface)
{
	std::size_t last = 0;
	bool any = false;
	for_each_element(interface, [&](std::size_t offset) {
		last = std::max(last, offset);
		any = true;
	});
	return any ? (last + 1) * kernels::element_size_of(interface) : 0;
}

/* The copies know only the pack's interfaces (kernels/views.h). */
uintptr_t data_of(void *interface)
{
	return kernels::with_known_interface(interface, [](auto *known) { return known->ptr; }, uintptr_t(0));
}

std::size_t interface_size(void *interface)
{
	return kernels::with_known_interface(interface, [](auto *known) { return sizeof(*known); }, std::size_t(0));
}

/* Points a copied interface structure at new data. */
void point_at(void *interface, uintptr_t data)
{
	kernels::with_known_interface(interface, [data](auto *known) {
		known->ptr = data;
		known->dev_handle = data;
		known->offset = 0;
		return true;
	}, false);
}

/* What makes a comparison informative (Comparison::informative), over all
 * written buffers. */
struct Changes {
	bool all_finite = true;
	unsigned changed = 0;    /* elements the codelet changed by more than their bound */
	double first_change = 0.0;
	bool different_changes = false;

	/* bound: how far the kernel's value may be from own and still agree.
	 * A change within it tells nothing: a kernel that computed anything
	 * else, or nothing, would have agreed as well.  Integers read as
	 * floating-point numbers are such changes (small ones are subnormal,
	 * below the bound's smallest normal number; larger ones move by a few
	 * units in the last place). */
	void saw(double before, double own, double kernel, bool only_written, double bound)
	{
		if (!std::isfinite(own) || !std::isfinite(kernel)) {
			all_finite = false;
			return;
		}
		/* A buffer only written (STARPU_W) may hold anything before,
		 * NaN bit patterns included (uninitialised memory from DAHL's
		 * arena): an element written there changes by its new value,
		 * which is what could tell two computations apart (the old
		 * values' differences tell nothing); one left as it was is no
		 * change.  Elsewhere the change is the difference. */
		double change;
		if (only_written)
			change = own == before ? 0.0 : own;
		else
			change = std::isfinite(before) ? own - before : own;
		if (!(std::fabs(change) > bound))
			return;
		if (changed++ == 0)
			first_change = change;
		else if (change != first_change)
			different_changes = true;
	}
	bool informative() const { return all_finite && changed >= 2 && different_changes; }
};

/* magnitudes: per element, the sum of the absolute values of its terms
 * (TermMagnitudes), or null: then the largest |own| of the buffer stands
 * for every element's. */
template <typename T>
void compare_elements(void *original, const unsigned char *before_data, const unsigned char *copy, const unsigned char *magnitudes_data,
		      bool only_written, double tolerance, Comparison &result, Changes &changes)
{
	const T *own = reinterpret_cast<const T *>(data_of(original));
	const T *kernel = reinterpret_cast<const T *>(copy);
	const T *before = reinterpret_cast<const T *>(before_data);
	const T *magnitudes = reinterpret_cast<const T *>(magnitudes_data);
	double scale = 0.0;
	for_each_element(original, [&](std::size_t i) {
		if (std::isfinite(own[i]))
			scale = std::max(scale, std::fabs(double(own[i])));
	});
	for_each_element(original, [&](std::size_t i) {
		const double magnitude = magnitudes && std::isfinite(magnitudes[i]) ? double(magnitudes[i]) : scale;
		const double bound = tolerance * magnitude + double(std::numeric_limits<T>::min());
		const double a = double(own[i]), b = double(kernel[i]);
		double difference;
		if (std::isnan(a) || std::isnan(b))
			difference = std::isnan(a) && std::isnan(b) ? 0.0 : HUGE_VAL;
		else if (a == b)
			difference = 0.0; /* equal infinities too */
		else
			difference = std::fabs(a - b);
		if (difference > bound)
			result.within_bound = false;
		changes.saw(double(before[i]), a, b, only_written, bound);
		/* Reported: the element furthest beyond (or least within) its bound. */
		if (difference / bound > result.largest_difference / result.bound || result.bound == 0.0) {
			result.largest_difference = difference;
			result.bound = bound;
		}
	});
}

/* Elements of other sizes, byte for byte; a changed element counts as a
 * change by its new value's bytes. */
void compare_bytes(void *original, const unsigned char *before, const unsigned char *copy, std::size_t element_size,
		   Comparison &result, Changes &changes)
{
	const unsigned char *own = reinterpret_cast<const unsigned char *>(data_of(original));
	const unsigned char *first_changed = nullptr;
	for_each_element(original, [&](std::size_t i) {
		const std::size_t at = i * element_size;
		if (std::memcmp(own + at, copy + at, element_size) != 0) {
			result.within_bound = false;
			result.largest_difference = HUGE_VAL;
		}
		if (std::memcmp(own + at, before + at, element_size) == 0)
			return;
		changes.changed++;
		if (!first_changed)
			first_changed = own + at;
		else if (std::memcmp(own + at, first_changed, element_size) != 0)
			changes.different_changes = true;
	});
}

} // namespace

struct WrittenBufferCopies::Copy {
	void *original;
	std::vector<unsigned char> interface; /* the original structure, pointing at data */
	std::vector<unsigned char> data;
	std::vector<unsigned char> before; /* the contents before either ran */
	bool only_written = false;         /* STARPU_W without STARPU_R */

	/* A copy of original's structure and contents now, pointing at the
	 * copied contents. */
	explicit Copy(void *interface_of)
		: original(interface_of)
	{
		interface.resize(interface_size(original));
		std::memcpy(interface.data(), original, interface.size());
		const std::size_t bytes = spanned_bytes(original);
		/* One element at least: data() of an empty vector may be null. */
		data.resize(std::max<std::size_t>(bytes, 1));
		std::memcpy(data.data(), reinterpret_cast<const void *>(data_of(original)), bytes);
		point_at(interface.data(), reinterpret_cast<uintptr_t>(data.data()));
	}
};

namespace {

/* The tasks' buffers, each interface that copy_wanted(buffer index)
 * replaced by its copy (a buffer passed twice, by the same one), made when
 * the interface is first met at a wanted index, which copy_wanted may
 * note on the copy (the last one in copies). */
template <typename Wanted>
void copy_buffers(const std::vector<void **> &task_buffers, std::size_t nbuffers, Wanted copy_wanted,
		  std::vector<std::unique_ptr<WrittenBufferCopies::Copy>> &copies, std::vector<std::vector<void *>> &redirected_buffers,
		  std::vector<void **> &redirected)
{
	std::map<void *, void *> copy_of; /* original interface -> copied interface */
	for (void **buffers : task_buffers)
		for (std::size_t b = 0; b < nbuffers; b++) {
			void *original = buffers[b];
			if (copy_of.count(original) || !copy_wanted(b, nullptr))
				continue;
			copies.push_back(std::make_unique<WrittenBufferCopies::Copy>(original));
			copy_wanted(b, copies.back().get());
			copy_of[original] = copies.back()->interface.data();
		}
	redirected_buffers.resize(task_buffers.size());
	for (std::size_t t = 0; t < task_buffers.size(); t++) {
		for (std::size_t b = 0; b < nbuffers; b++) {
			auto it = copy_of.find(task_buffers[t][b]);
			redirected_buffers[t].push_back(it == copy_of.end() ? task_buffers[t][b] : it->second);
		}
		redirected.push_back(redirected_buffers[t].data());
	}
}

template <typename T>
void take_absolute_values(void *interface, unsigned char *data)
{
	T *elements = reinterpret_cast<T *>(data);
	for_each_element(interface, [&](std::size_t i) { elements[i] = std::fabs(elements[i]); });
}

} // namespace

double verification_tolerance(std::size_t element_size)
{
	if (element_size == sizeof(float))
		return 1e-3;
	if (element_size == sizeof(double))
		return 1e-9;
	return 0.0;
}

WrittenBufferCopies::WrittenBufferCopies(const std::vector<void **> &task_buffers, const std::vector<enum starpu_data_access_mode> &modes)
{
	auto written = [&](std::size_t b, Copy *copy) {
		if (copy) {
			copy->only_written = !(modes[b] & STARPU_R);
			copy->before = copy->data;
		}
		return (modes[b] & STARPU_W) != 0;
	};
	copy_buffers(task_buffers, modes.size(), written, copies_, redirected_buffers_, redirected_);
}

WrittenBufferCopies::~WrittenBufferCopies() = default;

TermMagnitudes::TermMagnitudes(const std::vector<void **> &task_buffers, std::size_t nbuffers)
{
	copy_buffers(task_buffers, nbuffers, [](std::size_t, WrittenBufferCopies::Copy *) { return true; }, copies_, redirected_buffers_, redirected_);
	for (auto &copy : copies_) {
		const std::size_t element_size = kernels::element_size_of(copy->original);
		if (element_size == sizeof(float))
			take_absolute_values<float>(copy->original, copy->data.data());
		else if (element_size == sizeof(double))
			take_absolute_values<double>(copy->original, copy->data.data());
	}
}

TermMagnitudes::~TermMagnitudes() = default;

const unsigned char *TermMagnitudes::of(void *original) const
{
	for (const auto &copy : copies_)
		if (copy->original == original)
			return copy->data.data();
	return nullptr;
}

Comparison WrittenBufferCopies::compare(const TermMagnitudes *magnitudes) const
{
	Comparison result;
	Changes changes;
	for (const auto &copy : copies_) {
		const std::size_t element_size = kernels::element_size_of(copy->original);
		const double tolerance = verification_tolerance(element_size);
		const unsigned char *terms = magnitudes ? magnitudes->of(copy->original) : nullptr;
		if (element_size == sizeof(float))
			compare_elements<float>(copy->original, copy->before.data(), copy->data.data(), terms, copy->only_written, tolerance, result,
						changes);
		else if (element_size == sizeof(double))
			compare_elements<double>(copy->original, copy->before.data(), copy->data.data(), terms, copy->only_written, tolerance,
						 result, changes);
		else
			compare_bytes(copy->original, copy->before.data(), copy->data.data(), element_size, result, changes);
	}
	result.informative = changes.informative();
	return result;
}

} // namespace fusing
