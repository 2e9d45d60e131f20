#!/bin/sh
# The granularity experiment (conv_granularity.cpp) over image sizes from
# ~2 to ~600 kilopixels: granularity 1 under eager, lws and dmda, under
# fusing (generic execution) and under fusing with the batched kernels;
# granularities 2-4 (coarsened by hand) under lws and dmda.
#
#   examples/conv_granularity/run_experiment.sh [-reps N] [-quick] [-out DIR]
#
# Every configuration runs once per round, N rounds (default 5), so that
# all of them see the same machine; figures are medians over the rounds.
# -quick: 1 round on a quarter of the samples (about 20 s).
# Writes DIR/conv_runs.csv (every run), DIR/conv.csv (medians) and
# DIR/conv_summary.csv (per size; default DIR: examples/conv_granularity/results), prints a Markdown table and, per
# size, the fraction of the hand-coarsening gain that fusing recovers
#   (best built-in at G1 - fusing+batched at G1) / (best built-in at G1 - best hand-coarsened)
# and what the rest is: the extra time the program spends submitting its
# fine tasks (submit_seconds of fusing+batched minus that of the best
# hand-coarsened run), which no scheduler removes.
set -eu
reps=5
scale=1
out=examples/conv_granularity/results
while [ $# -gt 0 ]; do
	case "$1" in
	-reps) reps=$2; shift 2 ;;
	-quick) reps=1; scale=4; shift ;;
	-out) out=$2; shift 2 ;;
	*) echo "usage: $0 [-reps N] [-quick] [-out DIR]" >&2; exit 2 ;;
	esac
done
program=${CONV_GRANULARITY:-examples/conv_granularity/conv_granularity}
launcher=${FUSING_LAUNCHER:-./starpu-fusing-run}
mkdir -p "$out"
runs="$out/conv_runs.csv"
medians="$out/conv.csv"
summary="$out/conv_summary.csv"

# image size, samples, filters: enough work for ~0.3 s at granularity 1.
configs="48 1024 8
128 256 8
256 64 8
512 16 8
775 16 4"
# label, policy, batched kernels, granularity, STARPU_FUSING_MODE (fusing only:
# ready, and both: the default, submission-time fusion too)
settings="eager eager 0 1 ready
lws lws 0 1 ready
dmda dmda 0 1 ready
fusing-generic fusing 0 1 ready
fusing-batched fusing 1 1 ready
fusing-both-generic fusing 0 1 both
fusing-both-batched fusing 1 1 both
lws lws 0 2 ready
dmda dmda 0 2 ready
lws lws 0 3 ready
dmda dmda 0 3 ready
lws lws 0 4 ready
dmda dmda 0 4 ready"

echo "size_px,granularity,policy,tasks,seconds,executing,submit_seconds" > "$runs"
for round in $(seq "$reps"); do
	echo "$configs" | while read -r size samples filters; do
		samples=$(( (samples + scale - 1) / scale ))
		echo "$settings" | while read -r label policy batched granularity fusing_mode; do
			# fusing runs over lws; STARPU_FUSING_BASE is ignored otherwise.
			STARPU_SCHED=$policy STARPU_FUSING_BASE=lws STARPU_FUSING_MODE=$fusing_mode "$launcher" "$program" -granularity "$granularity" \
				-batched "$batched" -samples "$samples" -filters "$filters" -size "$size" -ksize 5 -channels 1 -batch 4 |
				awk -F, -v label="$label" -v px=$((size * size)) '{ print px "," $1 "," label "," $5 "," $6 "," $7 "," $8 }' >> "$runs"
		done
	done
done

# Medians per (size, granularity, policy), in the order of the first round.
awk -F, 'NR > 1 {
	key = $1 "," $2 "," $3
	if (!(key in count)) { order[++keys] = key; tasks[key] = $4 }
	n = ++count[key]; s[key, n] = $5; e[key, n] = $6; u[key, n] = $7
}
function median(arr, key, n,    i, j, t, v) {
	for (i = 1; i <= n; i++) v[i] = arr[key, i]
	for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j - 1] > v[j]; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
	return v[int((n + 1) / 2)]
}
BEGIN { print "size_px,granularity,policy,tasks,seconds,executing,submit_seconds" }
END {
	for (k = 1; k <= keys; k++) {
		key = order[k]; n = count[key]
		print key "," tasks[key] "," median(s, key, n) "," median(e, key, n) "," median(u, key, n)
	}
}' "$runs" > "$medians"

echo "| size (px) | granularity | policy | tasks | seconds | executing | submitting (s) |"
echo "|---|---|---|---|---|---|---|"
awk -F, 'NR > 1 { printf "| %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, $7 }' "$medians"
echo
# Per size: the best built-in policy at granularity 1, fusing at granularity 1
# (generic and with the batched kernels), the best hand-coarsened run.
awk -F, 'NR > 1 {
	px = $1
	if (!(px in seen)) { seen[px] = 1; sizes[++n] = px; builtin[px] = 1e9; hand[px] = 1e9 }
	if ($2 == 1 && ($3 == "eager" || $3 == "lws" || $3 == "dmda") && $5 < builtin[px]) builtin[px] = $5
	if ($2 == 1 && $3 == "fusing-generic") generic[px] = $5
	if ($2 == 1 && $3 == "fusing-batched") { fused[px] = $5; fused_submit[px] = $7 }
	if ($2 > 1 && $5 < hand[px]) { hand[px] = $5; hand_submit[px] = $7; hand_g[px] = $2 }
}
END {
	print "size_px,best_builtin_seconds,fusing_generic_seconds,fusing_batched_seconds,fusing_batched_submit_seconds,best_hand_seconds,best_hand_granularity,best_hand_submit_seconds"
	for (i = 1; i <= n; i++) {
		px = sizes[i]
		print px "," builtin[px] "," generic[px] "," fused[px] "," fused_submit[px] "," hand[px] "," hand_g[px] "," hand_submit[px]
	}
}' "$medians" > "$summary"
awk -F, 'NR > 1 {
	px = $1; b = $2; f = $4; h = $6
	printf "%s px: best built-in at G1 %.3f s, fusing+batched %.3f s, best hand-coarsened (G%s) %.3f s: ", px, b, f, $7, h
	if (b - h > 0) printf "recovered %.0f%% of the gain", 100 * (b - f) / (b - h)
	else printf "coarsening by hand did not help"
	if (f > h) printf "; of the %.3f s left, %.3f s is the longer submission of the fine tasks", f - h, $5 - $8
	if (f > b) printf "; SLOWER than the best built-in policy"
	printf "\n"
}' "$summary"
