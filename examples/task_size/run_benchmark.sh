#!/bin/sh
# Side-by-side benchmark: each base policy alone vs fusing over it, on
# independent tasks and on chains, for task durations of 1, 10, 100, 1000 us.
#
#   examples/task_size/run_benchmark.sh [-reps N] [-out DIR]
#
# Prints a Markdown table and writes DIR/task_size.csv (default DIR:
# examples/task_size/results).  Wall time is the median of N runs (default
# 5) of task_size_bench, base and fusing runs alternating so that both see
# the same machine; "time ratio" is fusing / base (below 1: fusing is
# faster).  Then counts whole-program instructions per task with callgrind
# (eager, 1 worker), less sensitive to a noisy machine than time (the
# window's delays are still real time, which valgrind slows down): no-op
# tasks reading one handle, 100 parallel chains of read-write tasks, and one
# chain whose codelet is excluded from fusion (the layer's own cost).
# Run from the build directory after make (make bench-task-size does it).
set -eu
reps=5
out=examples/task_size/results
while [ $# -gt 0 ]; do
	case "$1" in
	-reps) reps=$2; shift 2 ;;
	-out) out=$2; shift 2 ;;
	*) echo "usage: $0 [-reps N] [-out DIR]" >&2; exit 2 ;;
	esac
done
bench=${TASK_SIZE_BENCH:-examples/task_size/task_size_bench}
launcher=${FUSING_LAUNCHER:-./starpu-fusing-run}
mkdir -p "$out"
csv="$out/task_size.csv"
echo "base,shape,us,tasks,base_seconds,fusing_seconds,time_ratio" > "$csv"

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

once() { # POLICY BASE SHAPE TASKS US -> seconds
	STARPU_SCHED=$1 STARPU_FUSING_BASE=$2 "$launcher" "$bench" -shape "$3" -tasks "$4" -us "$5" -chains 2 | cut -d, -f4
}

echo "| base | shape | task (us) | tasks | base (s) | fusing (s) | time ratio fusing/base |"
echo "|---|---|---|---|---|---|---|"
for base in eager lws dmda; do
	for shape in independent chains; do
		for us in 1 10 100 1000; do
			tasks=$(( us >= 100 ? 400000 / us : 20000 ))
			base_runs="" fusing_runs=""
			for r in $(seq "$reps"); do
				base_runs="$base_runs $(once "$base" "$base" "$shape" "$tasks" "$us")"
				fusing_runs="$fusing_runs $(once fusing "$base" "$shape" "$tasks" "$us")"
			done
			base_s=$(printf '%s\n' $base_runs | median)
			fusing_s=$(printf '%s\n' $fusing_runs | median)
			ratio=$(awk -v f="$fusing_s" -v b="$base_s" 'BEGIN { printf "%.2f", f / b }')
			echo "$base,$shape,$us,$tasks,$base_s,$fusing_s,$ratio" >> "$csv"
			echo "| $base | $shape | $us | $tasks | $base_s | $fusing_s | $ratio |"
		done
	done
done

if command -v valgrind >/dev/null; then
	echo
	echo "Whole-program instructions per task (callgrind; eager, 1 worker; runs of 12,000 minus runs of 2,000 tasks,"
	echo "divided by 10,000; median of 3; idle workers' polling counts too):"
	instructions() { # TASKS SHAPE CHAINS VARIABLE=VALUE...
		tasks=$1 shape=$2 chains=$3; shift 3
		env STARPU_NCPU=1 STARPU_FUSING_BASE=eager "$@" "$launcher" valgrind --tool=callgrind --callgrind-out-file=/dev/null \
			"$bench" -shape "$shape" -tasks "$tasks" -us 0 -chains "$chains" 2>&1 | sed -n 's/.*Collected : //p'
	}
	per_task() { # SHAPE CHAINS VARIABLE=VALUE...
		for r in 1 2 3; do
			echo $(( ($(instructions 12000 "$@") - $(instructions 2000 "$@")) / 10000 ))
		done | median
	}
	ratio() { awk -v f="$1" -v b="$2" 'BEGIN { printf "%.2f", f / b }'; }
	# Under valgrind a task takes ~50 times longer: the window's time limits
	# (STARPU_FUSING_MAX_DELAY, the 50 us of predicted work a dependent task
	# may join) then close groups ~50 times sooner than natively.  The
	# "scaled" runs lift them (HOLD=always, a 50 ms delay) to show the cost
	# of a task in groups of the size that form without valgrind.
	for case in "shared-read 1 no-op tasks reading one handle" "chains 100 100 parallel chains of no-op read-write tasks"; do
		set -- $case
		shape=$1 chains=$2; shift 2
		eager=$(per_task "$shape" "$chains" STARPU_SCHED=eager)
		ready=$(per_task "$shape" "$chains" STARPU_SCHED=fusing STARPU_FUSING_MODE=ready)
		both=$(per_task "$shape" "$chains" STARPU_SCHED=fusing STARPU_FUSING_MODE=both)
		scaled=$(per_task "$shape" "$chains" STARPU_SCHED=fusing STARPU_FUSING_MODE=both STARPU_FUSING_HOLD=always STARPU_FUSING_MAX_DELAY=50ms)
		echo "$*: eager alone $eager; fusing (ready) $ready, $(ratio "$ready" "$eager") x;" \
			"fusing (both, the default) $both, $(ratio "$both" "$eager") x; fusing (both, time limits scaled to valgrind) $scaled, $(ratio "$scaled" "$eager") x"
	done
	eager=$(per_task chains 1 STARPU_SCHED=eager)
	ready=$(per_task chains 1 STARPU_SCHED=fusing STARPU_FUSING_MODE=ready STARPU_FUSING_EXCLUDE=spin)
	both=$(per_task chains 1 STARPU_SCHED=fusing STARPU_FUSING_MODE=both STARPU_FUSING_EXCLUDE=spin)
	echo "one chain, its codelet excluded from fusion (the layer's own cost): eager $eager;" \
		"fusing (ready) $ready, $(ratio "$ready" "$eager") x; fusing (both) $both, $(ratio "$both" "$eager") x"
fi
