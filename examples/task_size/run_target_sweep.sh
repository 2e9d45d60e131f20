#!/bin/sh
# STARPU_FUSING_TARGET sweep: independent tasks of a tiny (10 us) and a
# medium (200 us) duration, lws alone vs fusing over lws with targets of
# 1 ms, 10 ms and 100 ms, median of N alternating runs (default 5).
#
#   examples/task_size/run_target_sweep.sh [-reps N]
#
# Prints a Markdown table: wall time, and ratio to lws alone (below 1:
# fusing is faster).  Run from the build directory after make
# (make bench-target-sweep does it).
set -eu
reps=5
[ "${1:-}" = -reps ] && reps=$2
bench=${TASK_SIZE_BENCH:-examples/task_size/task_size_bench}
launcher=${FUSING_LAUNCHER:-./starpu-fusing-run}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
once() { # POLICY TARGET TASKS US
	STARPU_SCHED=$1 STARPU_FUSING_BASE=lws STARPU_FUSING_TARGET=$2 \
		"$launcher" "$bench" -shape independent -tasks "$3" -us "$4" | cut -d, -f4
}

echo "| task (us) | tasks | lws (s) | target 1ms (s) | target 10ms (s) | target 100ms (s) |"
echo "|---|---|---|---|---|---|"
for us in 10 200; do
	tasks=$(( us == 10 ? 20000 : 2000 ))
	base="" t1="" t10="" t100=""
	for r in $(seq "$reps"); do
		base="$base $(once lws 100ms "$tasks" "$us")"
		t1="$t1 $(once fusing 1ms "$tasks" "$us")"
		t10="$t10 $(once fusing 10ms "$tasks" "$us")"
		t100="$t100 $(once fusing 100ms "$tasks" "$us")"
	done
	b=$(printf '%s\n' $base | median)
	cell() { m=$(printf '%s\n' $1 | median); awk -v m="$m" -v b="$b" 'BEGIN { printf "%s (%.2f)", m, m / b }'; }
	echo "| $us | $tasks | $b | $(cell "$t1") | $(cell "$t10") | $(cell "$t100") |"
done
