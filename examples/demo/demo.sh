#!/bin/sh
# The demonstration behind `make demo` (and ./quickstart.sh demo).
#  1. StarPU's own conjugate-gradient example (`cg`, from Debian's
#     starpu-examples), unmodified, under lws and under fusing over lws:
#     both self-check their result; fusing prints what it fused.
#  2. 20,000 independent 10 us tasks (examples/task_size), under lws alone
#     and under fusing over lws, side by side, three runs each.
#  3. A convolution layer submitted as DAHL does (one conv2d and one bias-add
#     task per sample and filter, 128 images of 48x48, 8 filters), under lws
#     alone and under fusing with the batched kernels, three runs each.
# Environment: STARPU_EXAMPLES_DIR, FUSING_LAUNCHER, STARPU_FUSING_LIBRARY
# (set by make demo).
set -eu
bench=${TASK_SIZE_BENCH:-examples/task_size/task_size_bench}
conv=${CONV_GRANULARITY:-examples/conv_granularity/conv_granularity}

echo "== StarPU's cg example, unmodified, under lws and under fusing (STARPU_FUSING_STATS=1)"
if [ -x "$STARPU_EXAMPLES_DIR/cg" ]; then
	STARPU_SCHED=lws "$STARPU_EXAMPLES_DIR/cg" >/dev/null 2>&1
	echo "lws:    cg passed its own check"
	log=$(mktemp)
	STARPU_FUSING_STATS=1 "$FUSING_LAUNCHER" "$STARPU_EXAMPLES_DIR/cg" >/dev/null 2>"$log"
	grep -E "starpu-fusing" "$log" || true
	rm -f "$log"
	echo "fusing: cg passed its own check"
else
	echo "(skipped: $STARPU_EXAMPLES_DIR/cg not found; apt-get install starpu-examples)"
fi

echo
echo "== 20000 independent tasks of 10 us, wall time in seconds (lower is better)"
printf "%-8s %s\n" policy "run 1, run 2, run 3"
for policy in lws fusing; do
	times=""
	for run in 1 2 3; do
		line=$(STARPU_SCHED=$policy "$FUSING_LAUNCHER" "$bench" -shape independent -tasks 20000 -us 10)
		times="$times${times:+, }$(echo "$line" | cut -d, -f4)"
	done
	printf "%-8s %s\n" "$policy" "$times"
done

echo
echo "== Convolution layer, one conv2d + one bias-add task per (sample, filter): 2048 tasks, wall time in seconds"
printf "%-26s %s\n" policy "run 1, run 2, run 3"
for setting in "lws 0" "fusing 1"; do
	set -- $setting
	times=""
	for run in 1 2 3; do
		line=$(STARPU_SCHED=$1 "$FUSING_LAUNCHER" "$conv" -granularity 1 -samples 128 -filters 8 -size 48 -batched "$2")
		times="$times${times:+, }$(echo "$line" | cut -d, -f6)"
	done
	label=$1
	[ "$2" = 1 ] && label="fusing + batched kernels"
	printf "%-26s %s\n" "$label" "$times"
done
