/* Running a kernel beside a codelet's own function on copies, and
 * comparing what the two wrote (doc/design.md, section 13).
 *
 * A kernel pack entry is bound to a program's codelet by its name and
 * shape only; before its results are trusted, a batch runs the codelet's
 * own function on the real buffers (those results are kept, whatever the
 * comparison says) and the kernel on copies of every buffer the batch
 * writes.  A buffer the same task also reads (a handle passed twice, as
 * DAHL's "self" operations do) is the same interface structure in
 * task_buffers, so it is redirected to the same copy: the kernel sees
 * every input as the codelet's function saw it.
 *
 * The bound, per written element: |kernel - own| <= tolerance * the sum of
 * the absolute values of the terms the element sums (plus the smallest
 * normal number, so that exact zeros agree), with tolerance 1e-3 for 4-byte
 * elements (float) and 1e-9 for 8-byte ones (double).  A correct kernel
 * sums in another order than the codelet's loops, as BLAS does: the
 * difference of two orders of a sum of n terms is at most about n times the
 * precision times that sum, however much the terms cancel (rows of 1e30,
 * 1, -1e30, 1e-30 in float: the loop gives 1e-30, OpenBLAS 1.7e22, both
 * within it), where a bound relative to the result itself called such a
 * kernel wrong; a kernel computing something else is off by about the
 * terms' own size.  The pack's entries sum products of their inputs (and
 * an accumulated output's former value): run on the absolute values of
 * every buffer (TermMagnitudes), the kernel computes each element's sum of
 * absolute terms.  NaN must match NaN.  Other element sizes must match byte
 * for byte.  A comparison within the bound is trusted only when it is
 * informative (below).
 *
 * Runs in the worker running the batch; holds no lock. */
#ifndef STARPU_FUSING_KERNELS_KERNEL_VERIFICATION_H
#define STARPU_FUSING_KERNELS_KERNEL_VERIFICATION_H

#include <starpu.h>

#include <cstddef>
#include <memory>
#include <vector>

namespace fusing {

struct Comparison {
	bool within_bound = true;
	/* Whether agreeing results say anything: every written element is
	 * finite on both sides (NaN and infinities propagate through most
	 * arithmetic alike), and the codelet changed at least two elements by
	 * different amounts, each larger than the bound (all-zero inputs
	 * change an accumulated output by 0 whatever the arithmetic, a constant
	 * change hides a scale, and a change within the bound would have
	 * agreed with any kernel: integers read as floating-point numbers
	 * change by subnormal numbers or by a few units in the last place).
	 * An element of a buffer only written (STARPU_W), or that was not
	 * finite before, changes by its new value. */
	bool informative = false;
	/* At the element whose difference is the largest part of its bound:
	 * infinity for a NaN on one side only, or differing bytes. */
	double largest_difference = 0.0;
	double bound = 0.0;
};

/* The tolerance for elements of element_size bytes (0: byte equality). */
double verification_tolerance(std::size_t element_size);

class WrittenBufferCopies {
public:
	/* task_buffers: the tasks the kernel will run (each as the codelet's
	 * function gets its buffers); modes: the codelet's access mode of each
	 * buffer index.  Copies each written interface, with its contents now,
	 * before the codelet's function runs.  Interfaces: vector, matrix,
	 * block, variable (kernels/views.h); the pack's written buffers are. */
	WrittenBufferCopies(const std::vector<void **> &task_buffers, const std::vector<enum starpu_data_access_mode> &modes);
	~WrittenBufferCopies();
	WrittenBufferCopies(const WrittenBufferCopies &) = delete;
	WrittenBufferCopies &operator=(const WrittenBufferCopies &) = delete;

	/* The tasks' buffers with the written ones (and their aliases)
	 * replaced by the copies: what the kernel runs on. */
	void ***task_buffers() { return redirected_.data(); }

	/* The copies (the kernel's results) against the originals (the
	 * codelet's), each element within the bound its terms give
	 * (magnitudes), or, without them, the largest |own| of its buffer. */
	Comparison compare(const class TermMagnitudes *magnitudes = nullptr) const;

	struct Copy;

private:
	std::vector<std::unique_ptr<Copy>> copies_;
	std::vector<std::vector<void *>> redirected_buffers_;
	std::vector<void **> redirected_;
};

/* Copies of every buffer of the tasks with each element's absolute value
 * (float and double; other sizes as they are), made before the codelet's
 * function runs: the kernel run on them writes, into each written
 * element, the sum of the absolute values of its terms. */
class TermMagnitudes {
public:
	TermMagnitudes(const std::vector<void **> &task_buffers, std::size_t nbuffers);
	~TermMagnitudes();
	TermMagnitudes(const TermMagnitudes &) = delete;
	TermMagnitudes &operator=(const TermMagnitudes &) = delete;

	void ***task_buffers() { return redirected_.data(); }
	/* The copied contents of the buffer whose interface is original, or
	 * null. */
	const unsigned char *of(void *original) const;

private:
	std::vector<std::unique_ptr<WrittenBufferCopies::Copy>> copies_;
	std::vector<std::vector<void *>> redirected_buffers_;
	std::vector<void **> redirected_;
};

} // namespace fusing

#endif
