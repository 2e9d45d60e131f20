#!/bin/sh
# DAHL's own training program, unmodified, under StarPU's built-in policies
# and under fusing with the kernel pack on and off: epoch times (medians of
# interleaved runs), losses and accuracies, then fusing's statistics of one
# run.  DAHL (github PhoqueEberlue/dahl) is not part of this project: build
# it against StarPU 1.4 and this project against the same StarPU.
#
#   run_dahl.sh [-runs N] [-epochs E] [-workers W] [-data DIR] [-only LABELS] [-blocking LIBDIR] -out DIR BASIC_CNN
#
# Each run trains E epochs (default 4) of DAHL's built-in synthetic dataset
# at DAHL_IMG x DAHL_IMG (default 28), whose images are all zeros
# (dataset_load_factice), or, with -data, of the fashion-mnist files in DIR
# (train-images-idx3-ubyte, train-labels-idx1-ubyte: 28x28, real ones or
# synthetic ones in the same format, which unlike zeros let the kernel
# pack's verification tell computations apart); an epoch's time is the time between
# the lines DAHL prints at the end of two epochs (epoch 0, which includes
# StarPU's start, is left out).  A run's time is the mean of its epochs 1 to
# E-1; the table gives the median over runs (min-max), every configuration
# run once per round, rounds one after another.  -workers sets STARPU_NCPU
# (default: StarPU's, one CPU worker per core).  -only runs the configurations
# named (comma-separated labels of the list below).  -blocking LIBDIR adds
# the built-in policies run against another build of StarPU, the one in
# LIBDIR (through LD_LIBRARY_PATH: StarPU built with
# --enable-blocking-drivers, whose workers sleep), labelled NAME-blocking.
# Beside each epoch's seconds: the process's CPU-seconds in it (user +
# system of every thread, /proc/PID/stat) and its main thread's
# (/proc/PID/task/PID/schedstat), the thread that submits every task.
# Writes DIR/dahl_runs.csv (one line per epoch) and DIR/dahl_stats.txt,
# prints Markdown.  Environment: FUSING_LAUNCHER, STARPU_FUSING_LIBRARY (a
# build of this project for StarPU 1.4).
set -eu
runs=3
epochs=4
out=.
data=
only=
blocking=
while [ $# -gt 1 ]; do
	case "$1" in
	-runs) runs=$2; shift 2 ;;
	-epochs) epochs=$2; shift 2 ;;
	-workers) export STARPU_NCPU="$2"; shift 2 ;;
	-out) out=$2; shift 2 ;;
	-data) data=$(cd "$2" && pwd); shift 2 ;;
	-only) only=$2; shift 2 ;;
	-blocking) blocking=$(cd "$2" && pwd); shift 2 ;;
	*) break ;;
	esac
done
if [ $# -ne 1 ] || [ ! -x "$1" ]; then
	echo "usage: $0 [-runs N] [-epochs E] [-workers W] [-data DIR] [-only LABELS] [-blocking LIBDIR] -out DIR BASIC_CNN (DAHL's examples/basic_cnn, built)" >&2
	exit 2
fi
program=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
# DAHL's arguments: none (the built-in dataset) or the two fashion-mnist files.
images= labels=
[ -n "$data" ] && images=$data/train-images-idx3-ubyte labels=$data/train-labels-idx1-ubyte
launcher=${FUSING_LAUNCHER:-./starpu-fusing-run}
export DAHL_IMG="${DAHL_IMG:-28}" DAHL_EPOCHS="$epochs"
mkdir -p "$out"
out=$(cd "$out" && pwd)
runs_csv="$out/dahl_runs.csv"

# label, how it runs: a built-in policy alone, or fusing (over lws) with
# STARPU_FUSING_KERNELS, STARPU_FUSING_MODE, STARPU_FUSING_PLAN_ELISION and
# STARPU_FUSING_IDLE_WORKERS.  "default" is fusing as it runs unconfigured
# (the kernel pack off, both modes, elision, idle workers sleeping).
configurations="eager builtin eager
lws builtin lws
ws builtin ws
dmda builtin dmda
dmdas builtin dmdas
default fusing off both on sleep
default-kernel-pack fusing auto both on sleep
default-polling fusing off both on poll
default-no-elision fusing off both off sleep
ready fusing off ready on sleep
ready-kernel-pack fusing auto ready on sleep"
if [ -n "$blocking" ]; then
	configurations="$configurations
eager-blocking builtin eager
lws-blocking builtin lws
ws-blocking builtin ws
dmda-blocking builtin dmda
dmdas-blocking builtin dmdas"
fi
if [ -n "$only" ]; then
	configurations=$(echo "$configurations" | awk -v only=",$only," 'index(only, "," $1 ",")')
	[ -n "$configurations" ] || { echo "-only $only: no such configuration" >&2; exit 2; }
fi

# The process's CPU-seconds so far (utime + stime of /proc/PID/stat, in
# clock ticks: fields 14 and 15 once the command's name, which may hold
# spaces, is cut off) and its main thread's (schedstat, nanoseconds).
ticks=$(getconf CLK_TCK)
cpu_seconds() { # PID
	sed 's/^.*) //' "/proc/$1/stat" | awk -v t="$ticks" '{ printf "%.3f", ($12 + $13) / t }'
}
main_thread_seconds() { # PID
	awk '{ printf "%.3f", $1 / 1e9 }' "/proc/$1/task/$1/schedstat"
}

# Runs the configuration; prints "seconds_since_start epoch loss accuracy
# cpu_seconds_since_start main_thread_seconds_since_start" per epoch line
# (DAHL's stdout is line-buffered through stdbuf, so that each line is read
# as it is printed; the program's PID is its shell's, which execs it).
run_once() { # LABEL HOW ARG1 ARG2 ARG3 ARG4
	start=$(date +%s.%N)
	pidfile="$out/run.pid"
	rm -f "$pidfile"
	library_path=${LD_LIBRARY_PATH:-}
	case "$1" in *-blocking) library_path="$blocking${library_path:+:$library_path}" ;; esac
	(
		cd "$out"
		case "$2" in
		builtin) STARPU_SCHED=$3 LD_LIBRARY_PATH=$library_path sh -c 'echo $$ > "$0"; exec stdbuf -oL "$@"' "$pidfile" \
			"$program" ${images:+"$images" "$labels"} ;;
		fusing) STARPU_FUSING_KERNELS=$3 STARPU_FUSING_MODE=$4 STARPU_FUSING_PLAN_ELISION=$5 STARPU_FUSING_IDLE_WORKERS=$6 \
			sh -c 'echo $$ > "$0"; exec stdbuf -oL "$@"' "$pidfile" "$launcher" "$program" ${images:+"$images" "$labels"} ;;
		esac
	) 2>/dev/null | while IFS= read -r line; do
		now=$(date +%s.%N)
		case "$line" in
		Epoch:*)
			pid=$(cat "$pidfile")
			echo "$line" | awk -v t="$(echo "$now - $start" | bc)" -v cpu="$(cpu_seconds "$pid")" \
				-v main="$(main_thread_seconds "$pid")" '{ gsub(",", ""); print t, $2, $4, $6, cpu, main }' ;;
		esac
	done
	rm -f "$pidfile"
}

echo "configuration,round,epoch,seconds,loss,accuracy,cpu_seconds,main_thread_seconds" > "$runs_csv"
for round in $(seq "$runs"); do
	echo "$configurations" | while read -r label how first second third fourth; do
		previous=0 previous_cpu=0 previous_main=0
		run_once "$label" "$how" "$first" "${second:-}" "${third:-}" "${fourth:-}" > "$out/run.tmp"
		[ "$(wc -l < "$out/run.tmp")" = "$epochs" ] || { echo "basic_cnn under $label printed $(wc -l < "$out/run.tmp") of $epochs epochs" >&2; exit 1; }
		while read -r at epoch loss accuracy cpu main; do
			echo "$label,$round,$epoch,$(echo "$at - $previous" | bc),$loss,$accuracy,$(echo "$cpu - $previous_cpu" | bc),$(echo "$main - $previous_main" | bc)" >> "$runs_csv"
			previous=$at previous_cpu=$cpu previous_main=$main
		done < "$out/run.tmp"
	done
done
rm -f "$out/run.tmp"

# One more run of the default for its statistics.
(cd "$out" && STARPU_FUSING_STATS=1 "$launcher" "$program" ${images:+"$images" "$labels"} > /dev/null 2> "$out/dahl_stats.txt")

awk -F, -v epochs="$epochs" '
NR > 1 {
	key = $1 SUBSEP $2
	if ($3 > 0) { sum[key] += $4; cpu[key] += $7; main[key] += $8 }
	if ($3 == epochs - 1) { loss[$1] = loss[$1] (loss[$1] == "" ? "" : " ") $5; accuracy[$1] = $6 }
	if (!($1 in seen)) { seen[$1] = 1; order[++n] = $1 }
	rounds[$1] = $2
}
function median(values, count,   i, j, t) {
	for (i = 2; i <= count; i++) for (j = i; j > 1 && values[j - 1] > values[j]; j--) { t = values[j]; values[j] = values[j - 1]; values[j - 1] = t }
	return count % 2 ? values[(count + 1) / 2] : (values[count / 2] + values[count / 2 + 1]) / 2
}
END {
	print "| configuration | epoch time (s), median (min-max) | CPU-seconds per epoch | main thread CPU-seconds per epoch | last epoch loss, each run | accuracy |"
	print "|---|---|---|---|---|---|"
	for (k = 1; k <= n; k++) {
		c = order[k]; m = 0
		for (r = 1; r <= rounds[c]; r++) { v[++m] = sum[c, r] / (epochs - 1); u[m] = cpu[c, r] / (epochs - 1); w[m] = main[c, r] / (epochs - 1) }
		lo = v[1]; hi = v[1]
		for (i = 1; i <= m; i++) { if (v[i] < lo) lo = v[i]; if (v[i] > hi) hi = v[i] }
		printf "| %s | %.3f (%.3f-%.3f) | %.3f | %.3f | %s | %s |\n", c, median(v, m), lo, hi, median(u, m), median(w, m), loss[c], accuracy[c]
	}
}' "$runs_csv"
