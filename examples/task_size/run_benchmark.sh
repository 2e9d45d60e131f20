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
# (eager, 1 worker), which is stable on a noisy machine: no-op tasks that
# fuse, and a chain where nothing can be fused (the layer's own cost).
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
	echo "Whole-program instructions per task (callgrind; eager, 1 worker; 18000 tasks minus a 1-task run):"
	instructions() { # POLICY MAX_BATCH SHAPE TASKS
		STARPU_NCPU=1 STARPU_SCHED=$1 STARPU_FUSING_BASE=eager STARPU_FUSING_MAX_BATCH=$2 \
			"$launcher" valgrind --tool=callgrind --callgrind-out-file=/dev/null \
			"$bench" -shape "$3" -tasks "$4" -us 0 -chains 1 2>&1 | sed -n 's/.*Collected : //p'
	}
	per_task() { # POLICY MAX_BATCH SHAPE
		echo $(( ($(instructions "$1" "$2" "$3" 18000) - $(instructions "$1" "$2" "$3" 1)) / 17999 ))
	}
	ratio() { awk -v f="$1" -v b="$2" 'BEGIN { printf "%.3f", f / b }'; }
	eager_per_task=$(per_task eager 64 shared-read)
	echo "no-op tasks: eager alone $eager_per_task per task"
	for batch in 64 128; do
		fused=$(per_task fusing "$batch" shared-read)
		echo "no-op tasks: fusing over eager, STARPU_FUSING_MAX_BATCH=$batch: $fused per task, $(ratio "$fused" "$eager_per_task") x eager"
	done
	eager_chain=$(per_task eager 64 chains)
	fusing_chain=$(per_task fusing 64 chains)
	echo "one chain (nothing to fuse): eager $eager_chain, fusing $fusing_chain per task, $(ratio "$fusing_chain" "$eager_chain") x eager"
fi
