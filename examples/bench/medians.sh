#!/bin/sh
# Medians (min–max) over several performance reports (run_bench.sh output
# directories, e.g. three `make bench-full` runs copied aside), as Markdown:
#
#   examples/bench/medians.sh RUN_DIR RUN_DIR RUN_DIR... > medians.md
#
# METG(50%) per policy and shape (metg.csv); the convolution at granularity 1
# per image size (conv.csv): best built-in policy, fusing in its two modes,
# generic and with the batched kernels, the best hand-coarsened run, and the
# share of the hand-coarsening gain that fusing with batched kernels
# recovers in each run; CNN training (cnn.csv).  A figure is the median of
# the runs' figures (each already a median of that run's rounds).
set -eu
[ $# -ge 1 ] || { echo "usage: $0 RUN_DIR..." >&2; exit 2; }

# rows FILE: every run's FILE, data rows prefixed with the run's number.
rows() {
	run=0
	for dir in "$@"; do
		run=$((run + 1))
		awk -F, -v run="$run" 'NR > 1 { print run "," $0 }' "$dir/$file"
	done
}

# The awk functions shared by every table: summary(values) is "median
# (min–max)" of the space-separated numbers, "n/a" without any, or the
# values as they are when one is not a number (METG's "<=1.2", ">9000").
functions='
function summary(values, format,    n, v, i, j, t, numeric) {
	n = split(values, v, " ")
	if (n == 0) return "n/a"
	numeric = 1
	for (i = 1; i <= n; i++) if (v[i] !~ /^[0-9.]+$/) numeric = 0
	if (!numeric) { t = v[1]; for (i = 2; i <= n; i++) t = t " / " v[i]; return t }
	for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
	if (n == 1) return sprintf(format, v[1])
	return sprintf(format " (" format "–" format ")", v[int((n + 1) / 2)], v[1], v[n])
}'

echo "Medians (min–max) over $# runs: $*."
echo
echo "METG(50%), µs, lower is better:"
echo
echo "| policy | independent | stencil 16 wide |"
echo "|---|---|---|"
file=metg.csv
rows "$@" | awk -F, "$functions"'
{ key = $2; if (!(key in seen)) { seen[key] = 1; order[++n] = key } values[key, $3] = values[key, $3] " " $4 }
END { for (i = 1; i <= n; i++) printf "| %s | %s | %s |\n", order[i], summary(values[order[i], "independent"], "%.1f"), summary(values[order[i], "stencil"], "%.1f") }'

echo
echo "Convolution layer at granularity 1 (one conv2d and one bias add per sample and filter), seconds;"
echo "fusing: ready-time fusion alone (STARPU_FUSING_MODE=ready), fusing-both: the default (both):"
echo
echo "| image (px) | best built-in | fusing, generic | fusing + batched | fusing-both, generic | fusing-both + batched | best hand-coarsened | gain recovered (fusing + batched) | gain recovered (fusing-both + batched) |"
echo "|---|---|---|---|---|---|---|---|---|"
file=conv.csv
rows "$@" | awk -F, "$functions"'
# run,size_px,granularity,policy,tasks,seconds,...
{
	run = $1; px = $2
	if (!(px in seen)) { seen[px] = 1; sizes[++n] = px }
	runs[run] = 1
	key = run SUBSEP px
	if ($3 == 1 && ($4 == "eager" || $4 == "lws" || $4 == "dmda") && (!(key in builtin) || $6 < builtin[key])) builtin[key] = $6
	if ($3 == 1 && $4 ~ /^fusing/) fused[key, $4] = $6
	if ($3 > 1 && (!(key in hand) || $6 < hand[key])) hand[key] = $6
}
END {
	for (i = 1; i <= n; i++) {
		px = sizes[i]; b = g = f = bg = bf = h = r = rb = ""
		for (run in runs) {
			key = run SUBSEP px
			b = b " " builtin[key]; h = h " " hand[key]
			g = g " " fused[key, "fusing-generic"]; f = f " " fused[key, "fusing-batched"]
			bg = bg " " fused[key, "fusing-both-generic"]; bf = bf " " fused[key, "fusing-both-batched"]
			if (builtin[key] > hand[key]) {
				r = r " " 100 * (builtin[key] - fused[key, "fusing-batched"]) / (builtin[key] - hand[key])
				rb = rb " " 100 * (builtin[key] - fused[key, "fusing-both-batched"]) / (builtin[key] - hand[key])
			}
		}
		printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", px, summary(b, "%.3f"), summary(g, "%.3f"), summary(f, "%.3f"),
			summary(bg, "%.3f"), summary(bf, "%.3f"), summary(h, "%.3f"), summary(r, "%.0f%%"), summary(rb, "%.0f%%")
	}
}'

echo
echo "CNN training (examples/cnn_training), seconds:"
echo
echo "| policy | DAHL's granularity | coarsened by hand (per sample) |"
echo "|---|---|---|"
file=cnn.csv
rows "$@" | awk -F, "$functions"'
{ if (!($2 in seen)) { seen[$2] = 1; order[++n] = $2 } values[$2, $3] = values[$2, $3] " " $4 }
END { for (i = 1; i <= n; i++) printf "| %s | %s | %s |\n", order[i], summary(values[order[i], "fine"], "%.3f"), summary(values[order[i], "sample"], "%.3f") }'

echo
echo "The layer's cost where it gains nothing, time against the base alone (each run's ratio of medians):"
echo "tasks of 1 ms and more (sweep; fusing and fusing-both against lws, fusing-dmda against dmda),"
echo "an excluded codelet (independent 10 us tasks, 2 workers, over lws), no-op tasks on 100 parallel"
echo "read-write chains at 1 worker (over eager; its us per task in brackets):"
echo
echo "| case | fusing | fusing-both | fusing-dmda |"
echo "|---|---|---|---|"
file=sweep.csv
rows "$@" | awk -F, "$functions"'
# run,policy,shape,us,tasks,workers,seconds,...
$4 >= 1000 { s[$1, $2, $3, $4] = $7; runs[$1] = 1; if (!(($3, $4) in seen)) { seen[$3, $4] = 1; row[++n] = $3 SUBSEP $4 } }
END {
	for (i = 1; i <= n; i++) {
		split(row[i], f, SUBSEP); a = b = c = ""
		for (run in runs) {
			a = a " " s[run, "fusing", f[1], f[2]] / s[run, "lws", f[1], f[2]]
			b = b " " s[run, "fusing-both", f[1], f[2]] / s[run, "lws", f[1], f[2]]
			c = c " " s[run, "fusing-dmda", f[1], f[2]] / s[run, "dmda", f[1], f[2]]
		}
		printf "| %s %s us | %s | %s | %s |\n", f[1], f[2], summary(a, "%.3f"), summary(b, "%.3f"), summary(c, "%.3f")
	}
}'
file=layer_cost.csv
rows "$@" | awk -F, "$functions"'
# run,case,policy,tasks,seconds,us_per_task,ratio
{ if (!($2 in seen)) { seen[$2] = 1; order[++n] = $2 } ratio[$2, $3] = ratio[$2, $3] " " $7; us[$2, $3] = us[$2, $3] " " $6 }
END {
	for (i = 1; i <= n; i++) {
		c = order[i]
		if (c == "excluded")
			printf "| excluded codelet, 10 us | %s | %s | |\n", summary(ratio[c, "fusing"], "%.3f"), summary(ratio[c, "fusing-both"], "%.3f")
		else
			printf "| 1 worker, 100 RW chains, no-op (eager %s us) | %s [%s us] | %s [%s us] | |\n", summary(us[c, "eager"], "%.2f"),
				summary(ratio[c, "fusing"], "%.3f"), summary(us[c, "fusing"], "%.2f"),
				summary(ratio[c, "fusing-both"], "%.3f"), summary(us[c, "fusing-both"], "%.2f")
	}
}'
