#!/bin/sh
# Runs examples/cnn_training (a CNN training step written as DAHL writes
# it, which checks its parameters against a host computation) small, under
# one base policy alone and under fusing over it with every fusable task
# held (STARPU_FUSING_HOLD=always) and the kernel pack on
# (STARPU_FUSING_KERNELS=auto), at DAHL's granularity; both must pass
# their check, and the fusing run must have run tasks in batches and its
# forward convolution in the kernel pack's cross-correlation (the example
# names that codelet as DAHL does: matrix_cross_correlation), and, with
# submission-time fusion, it must have cleaned plans whose children StarPU
# never saw without StarPU's synchronisation tasks (its per-batch plans are
# all elided).
#
# Usage: cnn_training.sh FILE.cnn   (the file's name is the base policy)
# Environment (set by make check): FUSING_LAUNCHER, STARPU_FUSING_LIBRARY,
# CNN_TRAINING.
set -u
base=$(basename "$1" .cnn)
args="-img 12 -kernel 3 -filters 4 -samples 64 -batch 16 -epochs 1"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
failures=0

# shellcheck disable=SC2086 # args are words by design
STARPU_SCHED=$base timeout 300 "$CNN_TRAINING" $args >"$out" 2>&1
status=$?
if [ "$status" != 0 ] || ! grep -q "^check against the host: .*: OK$" "$out"; then
	echo "FAIL: cnn_training under $base alone (exit status $status)"; sed 's/^/    /' "$out"
	failures=$((failures + 1))
fi

# shellcheck disable=SC2086
STARPU_FUSING_BASE=$base STARPU_FUSING_HOLD=always STARPU_FUSING_KERNELS=auto STARPU_FUSING_STATS=1 timeout 300 "$FUSING_LAUNCHER" "$CNN_TRAINING" $args >"$out" 2>&1
status=$?
batched=$(sed -n 's/^tasks submitted: [0-9]*, in batches of starpu-fusing: \([0-9]*\) .*/\1/p' "$out")
cleaned_unseen=$(sed -n 's/^\[starpu-fusing\] submission-time fusion: .*; \([0-9]*\) plans cleaned whose children StarPU never saw$/\1/p' "$out")
in_kernel=$(sed -n 's/^\[starpu-fusing\] kernel cross_correlation for matrix_cross_correlation: [0-9]* batches, \([0-9]*\) tasks in the kernel.*/\1/p' "$out")
if [ "$status" != 0 ] || ! grep -q "^check against the host: .*: OK$" "$out"; then
	echo "FAIL: cnn_training under fusing over $base (exit status $status)"; sed 's/^/    /' "$out"
	failures=$((failures + 1))
elif [ "${batched:-0}" -le 0 ]; then
	echo "FAIL: cnn_training under fusing over $base ran no task in a batch"; sed 's/^/    /' "$out"
	failures=$((failures + 1))
elif [ "${in_kernel:-0}" -le 0 ]; then
	echo "FAIL: cnn_training under fusing over $base ran no convolution in the kernel pack"; sed 's/^/    /' "$out"
	failures=$((failures + 1))
elif [ "${STARPU_FUSING_MODE:-both}" != ready ] && [ "${cleaned_unseen:-0}" -le 0 ]; then
	echo "FAIL: cnn_training under fusing over $base cleaned no plan without StarPU's synchronisation"; sed 's/^/    /' "$out"
	failures=$((failures + 1))
else
	echo "ok   cnn_training under $base alone and under fusing over $base ($batched tasks in batches of their own function, $in_kernel in the cross-correlation kernel, ${cleaned_unseen:-0} plans cleaned at once)"
fi
[ "$failures" = 0 ]
