#!/bin/sh
# Programs correct under any StarPU policy whose results the kernel pack
# changed (a hostile review, issue 38; tests/kernel_pack_programs/): each
# checks its own results against the host.
#  - With the pack on (STARPU_FUSING_KERNELS=auto, every task held in
#    batches of at most 8), the cases the pack now refuses or verifies
#    must compute right, and the pack must have run or refused what the
#    statistics say: a codelet on float and int64 data in one batch (each
#    shape verified on its own), one overwriting a STARPU_W output the
#    entry accumulates into (outputs not at zero run the codelet), one
#    reading its own task (dropped, one line), a matrix whose ld is below
#    its width (refused; StarPU 1.4 refuses it at registration: skipped).
#  - Under the default (the pack off), the cases no verification by
#    example can catch must compute right: a codelet reading a global the
#    program changes, one with side effects, one accumulating in double.
# Environment (set by make check): FUSING_LAUNCHER, STARPU_FUSING_LIBRARY,
# KERNEL_PACK_PROGRAMS (the folder of the built programs).
set -u
failures=0
out=$(mktemp)
trap 'rm -f "$out"' EXIT
fail() { echo "FAIL: $*"; sed 's/^/    /' "$out"; failures=$((failures + 1)); }

run() { # PROGRAM [VARIABLE=VALUE...]: runs it under fusing, output in $out
	program=$1
	shift
	env "$@" STARPU_FUSING_STATS=1 timeout 300 "$FUSING_LAUNCHER" "$KERNEL_PACK_PROGRAMS/$program" >"$out" 2>&1
}
with_pack="STARPU_FUSING_KERNELS=auto STARPU_FUSING_HOLD=always STARPU_FUSING_MAX_BATCH=8"
in_kernel() { sed -n 's/^\[starpu-fusing\] kernel matrix_vector_product for matrix_vector_product: [0-9]* batches, \([0-9]*\) tasks in the kernel.*/\1/p' "$out"; }
not_taken() { sed -n 's/.*; \([0-9]*\) tasks of shapes it does not take.*/\1/p' "$out"; }

# shellcheck disable=SC2086 # with_pack is words by design
for program in mixed_float_int64 w_overwrite_matvec task_field_scale hankel_matvec; do
	run "$program" $with_pack
	status=$?
	if [ "$status" = 77 ]; then
		echo "skip $program: $(sed -n 's/^RESULT SKIP: //p' "$out")"
		continue
	fi
	if [ "$status" != 0 ] || ! grep -q "^RESULT OK" "$out"; then
		fail "$program with the kernel pack on (exit status $status)"
		continue
	fi
	case "$program" in
	mixed_float_int64 | w_overwrite_matvec)
		[ "$(in_kernel)" -gt 0 ] 2>/dev/null || fail "$program: no task ran in the kernel (the test would prove nothing)" ;;
	task_field_scale)
		grep -q "cannot stand in for codelet 'matrix_vector_product': its function reads its own task" "$out" ||
			fail "$program: no line saying the binding was dropped for reading its task" ;;
	hankel_matvec)
		[ "$(not_taken)" -gt 0 ] 2>/dev/null || fail "$program: the matrix with ld below its width was not refused" ;;
	esac
done

for program in global_scale side_effect_count cancellation_matvec; do
	run "$program" STARPU_FUSING_HOLD=always
	status=$?
	if [ "$status" != 0 ] || ! grep -q "^RESULT OK" "$out"; then
		fail "$program under the default (exit status $status)"
	elif [ -n "$(in_kernel)" ]; then
		fail "$program: the kernel pack ran under the default"
	fi
done

[ "$failures" = 0 ] && echo "ok   every program computes right"
[ "$failures" = 0 ]
