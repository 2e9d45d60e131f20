#!/bin/sh
# The performance report behind `make bench` (quick) and `make bench-full`.
#
#   examples/bench/run_bench.sh [-quick|-full] [-out DIR]
#
# Runs, side by side on this machine, under eager, lws, dmda, fusing (over
# lws) and fusing over dmda:
#   (a) StarPU's own task-size benchmark, tasks_size_overhead from Debian's
#       starpu-examples, unmodified (its tasks read one shared buffer, -b 1
#       -B 1: StarPU tasks without data are never fused);
#   (b) a granularity sweep of examples/task_size: independent tasks and a
#       periodic 1-D stencil 16 cells wide (Task Bench's stencil pattern),
#       task durations 1 us to 10 ms, efficiency against the ideal time
#       tasks * duration / workers, and METG(50%) per policy;
#   (c) the convolution experiment (examples/conv_granularity);
#   (d) CNN training (examples/cnn_training) at DAHL's granularity and
#       coarsened by hand;
#   (e) the layer's cost where it gains nothing: tasks of 1 ms and more
#       (from (b)), a codelet excluded from fusion, and no-op tasks at one
#       worker, in time against the base alone;
#   (f) how long a task waits for an idle worker, path by path
#       (examples/wakeup_paths), fusing against lws alone;
#   (g) what submitting costs the program's thread and the process, per
#       task (examples/submission_cost), fusing against lws alone.
# Writes DIR (default bench-results): CSV files, PNG and SVG plots (gnuplot),
# and summary.md with the machine, the command and the key figures.
# quick: about 3 minutes; full: about 15 minutes (more sizes, medians of 3).
#
# Environment (set by make bench): FUSING_LAUNCHER, STARPU_FUSING_LIBRARY,
# TASK_SIZE_BENCH, CONV_GRANULARITY, CNN_TRAINING, WAKEUP_PATHS, SUBMISSION_COST,
# STARPU_EXAMPLES_DIR, STARPU_PKG.
set -eu
mode=quick
out=bench-results
while [ $# -gt 0 ]; do
	case "$1" in
	-quick) mode=quick; shift ;;
	-full) mode=full; shift ;;
	-out) out=$2; shift 2 ;;
	*) echo "usage: $0 [-quick|-full] [-out DIR]" >&2; exit 2 ;;
	esac
done
here=$(cd "$(dirname "$0")" && pwd)
launcher=${FUSING_LAUNCHER:-./starpu-fusing-run}
bench=${TASK_SIZE_BENCH:-examples/task_size/task_size_bench}
examples_dir=${STARPU_EXAMPLES_DIR:-/usr/lib/x86_64-linux-gnu/starpu/examples}
mkdir -p "$out"
# label, STARPU_SCHED, STARPU_FUSING_BASE and STARPU_FUSING_MODE (read by
# fusing only): fusing runs ready-time fusion alone (ready), fusing-both the
# default mode (both), fusing-dmda ready over dmda.
policies=$(cat "$here/policies")
workers=$(nproc)

if [ "$mode" = quick ]; then
	overhead_args="-i 100 -t 1 -T 4096 -f 4"
	durations="1 10 100 1000 10000"
	work_seconds=0.1
	reps=1
	conv_args=-quick
	cnn_args=-quick
	wakeup_args="-rounds 3 -links 1000"
	submission_args="-rounds 3 -tasks 10000"
else
	overhead_args="-i 400 -t 1 -T 8192 -f 2"
	durations="1 3 10 30 100 300 1000 3000 10000"
	work_seconds=0.3
	reps=3
	conv_args="-reps 3"
	cnn_args="-reps 3"
	wakeup_args="-rounds 5 -links 2000"
	submission_args="-rounds 5 -tasks 20000"
fi
started=$(date +%s)

# ---------------------------------------------------------------- machine
{
	echo "| | |"
	echo "|---|---|"
	echo "| date | $(date -u '+%Y-%m-%d %H:%M UTC') |"
	echo "| CPU | $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -n 1) |"
	echo "| cores used | $workers (nproc) |"
	echo "| memory | $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo) |"
	echo "| StarPU | $(pkg-config --modversion "${STARPU_PKG:-starpu-1.3}" 2>/dev/null || echo unknown) (${STARPU_PKG:-starpu-1.3}) |"
	echo "| compiler | $(${CXX:-g++} --version 2>/dev/null | head -n 1) |"
	echo "| starpu-fusing | $(git -C "$here" describe --always --dirty 2>/dev/null || echo "not a git checkout") |"
	echo "| mode | $mode |"
} > "$out/machine.md"

# ------------------------------------------- (a) StarPU's tasks_size_overhead
overhead_csv="$out/tasks_size_overhead.csv"
echo "policy,us,efficiency" > "$overhead_csv"
if [ -x "$examples_dir/tasks_size_overhead" ]; then
	echo "== (a) tasks_size_overhead $overhead_args -b 1 -B 1 -c $workers -C $workers" >&2
	echo "$policies" | while read -r label sched base fusing_mode; do
		# Its output: a "seq" row (one core, no StarPU) and a row for
		# $workers cores, each "duration total(s)" per task duration; the
		# parallel total is already divided by the number of cores.
		STARPU_SCHED=$sched STARPU_FUSING_BASE=$base STARPU_FUSING_MODE=$fusing_mode "$launcher" "$examples_dir/tasks_size_overhead" \
			$overhead_args -b 1 -B 1 -c "$workers" -C "$workers" 2>/dev/null |
			awk -v label="$label" -v cores="$workers" '
				$1 == "\"seq\"" { for (i = 2; i < NF; i += 2) seq[i] = $(i + 1) }
				$1 == cores { for (i = 2; i < NF; i += 2) printf "%s,%s,%.4f\n", label, $i, seq[i] / ($(i + 1) * cores) }' \
			>> "$overhead_csv"
	done
else
	echo "== (a) skipped: $examples_dir/tasks_size_overhead not found (apt-get install starpu-examples)" >&2
fi

# --------------------------------------------------- (b) granularity sweep
sweep_runs="$out/sweep_runs.csv"
sweep_csv="$out/sweep.csv"
stencil_width=16
echo "policy,shape,us,tasks,workers,seconds" > "$sweep_runs"
echo "== (b) granularity sweep: $durations us, $reps round(s)" >&2
for round in $(seq "$reps"); do
	for shape in independent stencil; do
		for us in $durations; do
			tasks=$(awk -v w="$work_seconds" -v n="$workers" -v us="$us" -v width="$stencil_width" 'BEGIN {
				t = int(w * n * 1e6 / us); if (t > 20000) t = 20000
				if (t < 4 * width) t = 4 * width
				print t - t % width }')
			echo "$policies" | while read -r label sched base fusing_mode; do
				STARPU_SCHED=$sched STARPU_FUSING_BASE=$base STARPU_FUSING_MODE=$fusing_mode "$launcher" "$bench" -shape "$shape" -tasks "$tasks" \
					-us "$us" -chains "$stencil_width" |
					awk -F, -v label="$label" '{ print label "," $1 "," $2 "," $3 "," $5 "," $4 }' >> "$sweep_runs"
			done
		done
	done
done
# median_of(key, m): the median of v[key, 1..m], the m runs of key (awk,
# shared by the summaries of (b) and (e)).
awk_median='function median_of(key, m,    i, j, t, s) {
	for (i = 1; i <= m; i++) s[i] = v[key, i]
	for (i = 2; i <= m; i++) for (j = i; j > 1 && s[j - 1] > s[j]; j--) { t = s[j]; s[j] = s[j - 1]; s[j - 1] = t }
	return s[int((m + 1) / 2)]
}
'
# Medians over rounds; efficiency = ideal / measured; effective granularity
# (Task Bench) = seconds * workers / tasks.
awk -F, "$awk_median"'NR > 1 {
	key = $1 "," $2 "," $3 "," $4 "," $5
	if (!(key in n)) order[++keys] = key
	v[key, ++n[key]] = $6
}
END {
	print "policy,shape,us,tasks,workers,seconds,efficiency,granularity_us"
	for (k = 1; k <= keys; k++) {
		key = order[k]
		seconds = median_of(key, n[key])
		split(key, f, ",")
		printf "%s,%.6f,%.4f,%.2f\n", key, seconds, f[4] * f[3] / (f[5] * seconds * 1e6), seconds * f[5] * 1e6 / f[4]
	}
}' "$sweep_runs" > "$sweep_csv"

# METG(50%): the smallest effective granularity at which efficiency is at
# least 50%, interpolated (log granularity, linear efficiency) between the
# two sweep points around the crossing.
metg_csv="$out/metg.csv"
awk -F, 'NR > 1 {
	key = $1 "," $2
	if (!(key in n)) order[++keys] = key
	i = ++n[key]; us[key, i] = $3; eff[key, i] = $7; gran[key, i] = $8
}
END {
	print "policy,shape,metg_us"
	for (k = 1; k <= keys; k++) {
		key = order[k]; m = n[key]
		# points in increasing duration (the sweep order)
		best = ""
		for (i = m; i >= 1; i--) {
			if (eff[key, i] < 0.5) break
			best = i
		}
		if (best == "") { print key ",>" gran[key, m]; continue }
		if (best == 1) { print key ",<=" gran[key, 1]; continue }
		lo = best - 1; hi = best
		x0 = log(gran[key, lo]); x1 = log(gran[key, hi]); e0 = eff[key, lo]; e1 = eff[key, hi]
		x = x0 + (0.5 - e0) * (x1 - x0) / (e1 - e0)
		printf "%s,%.1f\n", key, exp(x)
	}
}' "$sweep_csv" > "$metg_csv"

# ------------------------------------------------- (c) convolution experiment
echo "== (c) convolution experiment ($conv_args)" >&2
FUSING_LAUNCHER=$launcher CONV_GRANULARITY=${CONV_GRANULARITY:-examples/conv_granularity/conv_granularity} \
	"$here/../conv_granularity/run_experiment.sh" $conv_args -out "$out" > "$out/conv_report.md"

# ------------------------------- (c') schedules of the convolution at G1
# Granularity 1 at 48x48 px, where its tasks are smallest, 32 samples x 8
# filters (512 tasks, few enough to tell apart), under lws and under fusing
# in its two modes: each task's run from StarPU's per-task profiling
# (conv_granularity -trace) and fusing's merged tasks (STARPU_FUSING_TRACE);
# plot.sh draws them.  One run each: a schedule, not a timing.
echo "== (c') schedules of the convolution at granularity 1" >&2
gantt_runs="lws lws ready
fusing fusing ready
fusing-both fusing both"
echo "$gantt_runs" | while read -r label sched fusing_mode; do
	rm -f "$out/gantt-$label-batches.csv"
	batch_trace=
	[ "$sched" = fusing ] && batch_trace="STARPU_FUSING_TRACE=$out/gantt-$label-batches.csv"
	env STARPU_SCHED="$sched" STARPU_FUSING_BASE=lws STARPU_FUSING_MODE="$fusing_mode" $batch_trace "$launcher" \
		"${CONV_GRANULARITY:-examples/conv_granularity/conv_granularity}" -granularity 1 -size 48 -samples 32 -filters 8 \
		-trace "$out/gantt-$label-tasks.csv" > "$out/gantt-$label.csv"
done

# ------------------------------------------------------- (d) CNN training
echo "== (d) CNN training ($cnn_args)" >&2
FUSING_LAUNCHER=$launcher CNN_TRAINING=${CNN_TRAINING:-examples/cnn_training/cnn_training} \
	"$here/../cnn_training/run_cnn.sh" $cnn_args -out "$out" > "$out/cnn_report.md"

# ------------------------------------- (e) the layer's cost where it gains nothing
# Two measures in real time (callgrind's counts, make bench-task-size, run
# the window's time limits 50 times slower than the program):
#   - tasks that fuse under no mode: independent 10 us tasks whose codelet
#     is excluded (STARPU_FUSING_EXCLUDE), 2 workers, fusing over lws
#     against lws alone; the sweep's tasks of 1 ms and more are the other
#     case (summary below, from (b));
#   - time per no-op task at 1 worker (STARPU_NCPU=1), 100 parallel chains
#     of read-write tasks, eager alone and fusing over eager in its two
#     modes: what the layer costs per task where the program thread, not
#     the workers, sets the pace.
# Every configuration once per round, $reps round(s); medians.
layer_runs="$out/layer_cost_runs.csv"
echo "case,policy,tasks,seconds" > "$layer_runs"
echo "== (e) the layer's cost where it gains nothing, $reps round(s)" >&2
layer_cases="excluded lws lws ready 1
excluded fusing lws ready 1
excluded fusing-both lws both 1
one-worker eager eager ready 0
one-worker fusing eager ready 0
one-worker fusing-both eager both 0"
for round in $(seq "$reps"); do
	echo "$layer_cases" | while read -r case label base fusing_mode excluded; do
		sched=$label
		[ "$label" = fusing-both ] && sched=fusing
		if [ "$case" = excluded ]; then
			env STARPU_SCHED="$sched" STARPU_FUSING_BASE="$base" STARPU_FUSING_MODE="$fusing_mode" STARPU_FUSING_EXCLUDE=spin \
				"$launcher" "$bench" -shape independent -tasks 20000 -us 10
		else
			env STARPU_NCPU=1 STARPU_SCHED="$sched" STARPU_FUSING_BASE="$base" STARPU_FUSING_MODE="$fusing_mode" \
				"$launcher" "$bench" -shape chains -chains 100 -tasks 20000 -us 0
		fi | awk -F, -v c="$case" -v label="$label" '{ print c "," label "," $3 "," $4 }' >> "$layer_runs"
	done
done
layer_csv="$out/layer_cost.csv"
awk -F, "$awk_median"'NR > 1 {
	key = $1 "," $2
	if (!(key in n)) order[++keys] = key
	tasks[key] = $3; v[key, ++n[key]] = $4
}
END {
	print "case,policy,tasks,seconds,us_per_task,ratio"
	for (k = 1; k <= keys; k++) {
		key = order[k]; split(key, f, ",")
		seconds = median_of(key, n[key])
		# the first policy of each case (the base alone) is the reference
		if (!(f[1] in reference)) reference[f[1]] = seconds
		printf "%s,%s,%.6f,%.3f,%.3f\n", key, tasks[key], seconds, seconds * 1e6 / tasks[key], seconds / reference[f[1]]
	}
}' "$layer_runs" > "$layer_csv"

# ------------------------------------ (f) waking an idle worker, path by path
# shellcheck disable=SC2086 # wakeup_args are words by design
"$here/../wakeup_paths/run_wakeup_paths.sh" $wakeup_args -out "$out" > "$out/wakeup_report.md"

# ------------------------------------------ (g) what submitting costs, per task
# shellcheck disable=SC2086 # submission_args are words by design
"$here/../submission_cost/run_submission_cost.sh" $submission_args -out "$out" > "$out/submission_report.md"

# ------------------------------------------------------------------ plots
if command -v gnuplot >/dev/null; then
	"$here/plot.sh" "$out"
else
	echo "gnuplot not found (apt-get install gnuplot-nox): CSV and summary only" >&2
fi

# ---------------------------------------------------------------- summary
# efficiency_table FILE DURATION_COLUMN VALUE_COLUMN SHAPE: a Markdown table,
# one row per task duration, one column per policy (column 1); only rows
# whose column 2 is SHAPE when SHAPE is set.
efficiency_table() {
	awk -F, -v x="$2" -v y="$3" -v shape="$4" 'NR > 1 && (shape == "" || $2 == shape) {
		if (!($1 in seen)) { seen[$1] = 1; pol[++np] = $1 }
		if (!($x in seenus)) { seenus[$x] = 1; dur[++nd] = $x }
		e[$1, $x] = $y
	}
	END {
		printf "| task (us) |"; for (p = 1; p <= np; p++) printf " %s |", pol[p]; printf "\n|---|"
		for (p = 1; p <= np; p++) printf "---|"; printf "\n"
		for (d = 1; d <= nd; d++) {
			printf "| %s |", dur[d]; for (p = 1; p <= np; p++) printf " %.2f |", e[pol[p], dur[d]]; printf "\n"
		}
	}' "$1"
}

minutes=$(( ($(date +%s) - started + 59) / 60 ))
{
	echo "# starpu-fusing performance report"
	echo
	echo "Command: \`$0 -$mode\` ($minutes min). Every figure below was measured in this run, all policies"
	echo "interleaved so that they share the machine's state. Policies: \`fusing-both\` is fusing's default"
	echo "(STARPU_FUSING_MODE=both, the library preloaded), \`fusing\` ready-time fusion alone"
	echo "(STARPU_FUSING_MODE=ready), \`fusing-dmda\` ready over dmda; each over lws unless named."
	echo
	cat "$out/machine.md"
	echo
	echo "## METG(50%): smallest effective task granularity at 50% efficiency (lower is better)"
	echo
	echo "| policy | independent (us) | stencil (us) |"
	echo "|---|---|---|"
	awk -F, 'NR > 1 { v[$1, $2] = $3; if (!($1 in seen)) { seen[$1] = 1; order[++n] = $1 } }
		END { for (i = 1; i <= n; i++) printf "| %s | %s | %s |\n", order[i], v[order[i], "independent"], v[order[i], "stencil"] }' "$metg_csv"
	echo
	echo "## Efficiency against the ideal (tasks x duration / workers)"
	echo
	for shape in independent stencil; do
		echo "$shape:"
		echo
		efficiency_table "$sweep_csv" 3 7 "$shape"
		echo
	done
	if [ "$(wc -l < "$overhead_csv")" -gt 1 ]; then
		echo "## StarPU's tasks_size_overhead ($overhead_args -b 1 -B 1, $workers cores): efficiency"
		echo
		efficiency_table "$overhead_csv" 2 3 ""
		echo
	fi
	echo "## Convolution layer (conv2d + bias add per sample and filter)"
	echo
	cat "$out/conv_report.md"
	echo
	echo "## CNN training (examples/cnn_training)"
	echo
	cat "$out/cnn_report.md"
	echo
	echo "## The layer's cost where it gains nothing"
	echo
	echo "Time ratio to the base alone (medians): tasks of 1 ms and more from the sweep (fusing and"
	echo "fusing-both against lws, fusing-dmda against dmda); independent 10 us tasks whose codelet is"
	echo "excluded (STARPU_FUSING_EXCLUDE=spin, 2 workers, over lws); no-op tasks on 100 parallel"
	echo "read-write chains at 1 worker (STARPU_NCPU=1, over eager), time per task."
	echo
	echo "| case | policy | seconds | us per task | ratio to the base |"
	echo "|---|---|---|---|---|"
	awk -F, 'NR > 1 && $3 >= 1000 { s[$1, $2, $3] = $6; if (!(($2, $3) in seen)) { seen[$2, $3] = 1; row[++n] = $2 "," $3 } }
		END {
			for (r = 1; r <= n; r++) {
				split(row[r], f, ",")
				for (p = 1; p <= 3; p++) {
					policy = p == 1 ? "fusing" : p == 2 ? "fusing-both" : "fusing-dmda"
					base = p == 3 ? "dmda" : "lws"
					if ((policy, f[1], f[2]) in s && (base, f[1], f[2]) in s)
						printf "| %s %s us | %s | %.4f | | %.3f |\n", f[1], f[2], policy, s[policy, f[1], f[2]],
							s[policy, f[1], f[2]] / s[base, f[1], f[2]]
				}
			}
		}' "$sweep_csv"
	awk -F, 'NR > 1 { printf "| %s | %s | %.4f | %.3f | %.3f |\n", $1 == "excluded" ? "excluded codelet, 10 us" : "1 worker, 100 RW chains, no-op", $2, $4, $5, $6 }' "$layer_csv"
	echo
	echo "## Waking an idle worker, path by path"
	echo
	echo "A chain of tiny tasks on two workers whose every link reaches a worker the way the path names"
	echo "(examples/wakeup_paths); microseconds per link, medians of interleaved rounds."
	echo
	cat "$out/wakeup_report.md"
	echo
	echo "## What submitting costs, per task"
	echo
	echo "One thread submits no-op tasks on one worker, then waits for them (examples/submission_cost):"
	echo "CPU time of that thread and of the process, from the first submission to the end of the wait,"
	echo "per task, medians of interleaved rounds. Deferred: read-write chains over 100 handles,"
	echo "independent tasks; not deferred: tagged tasks, a codelet excluded from fusion."
	echo
	cat "$out/submission_report.md"
	echo
	if [ -f "$out/sweep_independent.png" ]; then
		echo "## Plots"
		echo
		for plot in sweep_independent sweep_stencil tasks_size_overhead conv gantt-lws gantt-fusing gantt-fusing-both; do
			[ -f "$out/$plot.png" ] && echo "![$plot]($plot.png)"
		done
	fi
} > "$out/summary.md"
echo "wrote $out/summary.md ($minutes min)" >&2
