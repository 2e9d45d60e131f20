#!/bin/sh
# Plots of a performance report (run_bench.sh), as PNG and SVG, with gnuplot:
#   sweep_independent, sweep_stencil   efficiency vs task duration, one curve per policy
#   tasks_size_overhead                the same for StarPU's own benchmark
#   conv                               convolution layer wall time, bars per image size
#
#   examples/bench/plot.sh DIR
set -eu
dir=$1
data="$dir/plot-data"
mkdir -p "$data"

# render NAME GNUPLOT_COMMANDS: DIR/NAME.png and DIR/NAME.svg.
render() {
	for terminal in "pngcairo size 900,560" "svg size 900,560"; do
		extension=png
		[ "${terminal%% *}" = svg ] && extension=svg
		printf 'set terminal %s\nset output "%s"\n%s\n' "$terminal" "$dir/$1.$extension" "$2" | gnuplot
	done
}

# efficiency_plot NAME TITLE FILE SHAPE X_COLUMN Y_COLUMN: one curve per
# policy (column 1) of the CSV FILE, rows of SHAPE (column 2) when SHAPE is set.
efficiency_plot() {
	clauses=""
	for policy in $(awk -F, 'NR > 1 && !seen[$1]++ { print $1 }' "$3"); do
		awk -F, -v policy="$policy" -v shape="$4" -v x="$5" -v y="$6" \
			'NR > 1 && $1 == policy && (shape == "" || $2 == shape) { print $x, $y }' "$3" > "$data/$1-$policy.dat"
		clauses="$clauses, \"$data/$1-$policy.dat\" using 1:2 with linespoints linewidth 2 title \"$policy\""
	done
	render "$1" "set title \"$2\" noenhanced
set logscale x
set xlabel \"task duration (us)\"
set ylabel \"efficiency (ideal time / measured time)\"
set yrange [0:1.05]
set key bottom right
set grid
plot 0.5 with lines dashtype 2 linecolor \"gray\" title \"50% (METG)\"$clauses"
}

efficiency_plot sweep_independent "Independent tasks: efficiency vs task duration" "$dir/sweep.csv" independent 3 7
efficiency_plot sweep_stencil "1-D stencil, 16 cells wide: efficiency vs task duration" "$dir/sweep.csv" stencil 3 7
if [ "$(wc -l < "$dir/tasks_size_overhead.csv")" -gt 1 ]; then
	efficiency_plot tasks_size_overhead "StarPU's tasks_size_overhead, unmodified: efficiency vs task duration" \
		"$dir/tasks_size_overhead.csv" "" 2 3
fi

# Convolution, per image size (conv_summary.csv, run_experiment.sh).
awk -F, 'BEGIN { print "size \"best built-in, fine tasks\" \"fusing, fine tasks\" \"fusing + batched kernels, fine tasks\" \"best hand-coarsened\"" }
NR > 1 { printf "\"%.0fk\" %s %s %s %s\n", $1 / 1000, $2, $3, $4, $6 }' "$dir/conv_summary.csv" > "$data/conv_bars.dat"
render conv "set title \"Convolution layer forward pass: wall time per image size (lower is better)\" noenhanced
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set logscale y
set ylabel \"seconds (log scale)\"
set xlabel \"image size (pixels)\"
set key top left
set grid ytics
plot \"$data/conv_bars.dat\" using 2:xtic(1) title columnheader(2), '' using 3 title columnheader(3), '' using 4 title columnheader(4), '' using 5 title columnheader(5)"

# gantt LABEL: the schedule of one run of the convolution at granularity 1
# (run_bench.sh, (c')): one row per worker; each task a bar coloured by its
# codelet, where StarPU's per-task profiling says it ran
# (gantt-LABEL-tasks.csv); each merged task of fusing outlined in black
# (gantt-LABEL-batches.csv, STARPU_FUSING_TRACE).  Milliseconds from the
# first task's start.
gantt() {
	tasks="$dir/gantt-$1-tasks.csv"
	batches="$dir/gantt-$1-batches.csv"
	[ -f "$tasks" ] || return 0
	t0=$(awk -F, 'NR > 1 && (first == "" || $2 < first) { first = $2 } END { print first }' "$tasks")
	workers=$(awk -F, 'NR > 1 && $1 + 1 > n { n = $1 + 1 } END { print n }' "$tasks")
	# bars FILE FILTER: "centre row half-width" lines, in ms, of FILE's rows
	# (worker,start_us,end_us,...) that the awk condition FILTER selects.
	bars() {
		awk -F, -v t0="$t0" "NR > 1 && $2"' { s = ($2 - t0) / 1000; e = ($3 - t0) / 1000; print (s + e) / 2, $1, (e - s) / 2 }' "$1"
	}
	clauses=""
	colour=0
	for codelet in $(awk -F, 'NR > 1 && !seen[$4]++ { print $4 }' "$tasks"); do
		colour=$((colour + 1))
		bars "$tasks" "\$4 == \"$codelet\"" > "$data/gantt-$1-$codelet.dat"
		clauses="$clauses, \"$data/gantt-$1-$codelet.dat\" using 1:2:3:(0.3) with boxxyerror fillstyle solid 1.0 noborder linecolor $colour title \"$codelet\""
	done
	if [ -f "$batches" ]; then
		bars "$batches" 1 > "$data/gantt-$1-batches.dat"
		clauses="$clauses, \"$data/gantt-$1-batches.dat\" using 1:2:3:(0.42) with boxxyerror linecolor rgb \"black\" linewidth 1.5 fillstyle empty border title \"merged task\""
	fi
	seconds=$(awk -F, '{ print $6 }' "$dir/gantt-$1.csv")
	render "gantt-$1" "set title \"Convolution at granularity 1 (48x48 px, 32 samples x 8 filters) under $1: $seconds s\" noenhanced
set xlabel \"time from the first task's start (ms)\"
set ylabel \"worker\"
set yrange [-0.6:$workers - 0.4]
set ytics 1
set key outside below horizontal noenhanced
plot ${clauses#, }"
}
for label in lws fusing fusing-both; do
	gantt "$label"
done
