#!/bin/sh
# The granularity experiment (conv_granularity.cpp) over image sizes from
# ~2 to ~600 kilopixels: granularity 1 under eager, lws and dmda, under
# fusing (generic execution) and under fusing with the batched kernels;
# granularities 2-4 (coarsened by hand) under lws and dmda.  Median of N
# runs (default 3).  Prints a Markdown table and, per size, the fraction of
# the hand-coarsening gain that fusing recovers automatically:
#   (best built-in at G1 - fusing+batched at G1) / (best built-in at G1 - best hand-coarsened)
#
#   examples/conv_granularity/run_experiment.sh [-reps N]
set -eu
summary=""
reps=3
[ "${1:-}" = -reps ] && reps=$2
program=${CONV_GRANULARITY:-examples/conv_granularity/conv_granularity}
launcher=${FUSING_LAUNCHER:-./starpu-fusing-run}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
measure() { # POLICY BATCHED GRANULARITY ARGS... -> "seconds executing_fraction"
	policy=$1 batched=$2 granularity=$3
	shift 3
	for r in $(seq "$reps"); do
		STARPU_SCHED=$policy STARPU_FUSING_BASE=lws "$launcher" "$program" -granularity "$granularity" -batched "$batched" "$@"
	done | awk -F, '{ print $6, $7 }' | sort -n | awk '{ s[NR] = $1; e[NR] = $2 } END { m = int((NR + 1) / 2); print s[m], e[m] }'
}
min() { printf '%s\n' "$@" | sort -n | head -n 1; }

echo "| size (px) | granularity | policy | tasks | seconds | executing |"
echo "|---|---|---|---|---|---|"
# size samples filters
for config in "48 128 8" "128 32 8" "256 16 8" "512 4 8" "775 4 4"; do
	set -- $config
	size=$1 samples=$2 filters=$3
	args="-samples $samples -filters $filters -size $size -ksize 5 -channels 1 -batch 4"
	pixels=$((size * size))
	g1_builtin=""
	for policy in eager lws dmda; do
		set -- $(measure "$policy" 0 1 $args)
		echo "| $pixels | 1 | $policy | $((2 * samples * filters)) | $1 | $2 |"
		g1_builtin="$g1_builtin $1"
	done
	set -- $(measure fusing 0 1 $args)
	echo "| $pixels | 1 | fusing (generic) | $((2 * samples * filters)) | $1 | $2 |"
	set -- $(measure fusing 1 1 $args)
	echo "| $pixels | 1 | fusing + batched kernels | $((2 * samples * filters)) | $1 | $2 |"
	fused=$1
	hand=""
	for granularity in 2 3 4; do
		case $granularity in 2) tasks=$((samples * filters)) ;; 3) tasks=$samples ;; 4) tasks=$(( (samples + 3) / 4 )) ;; esac
		for policy in lws dmda; do
			set -- $(measure "$policy" 0 "$granularity" $args)
			echo "| $pixels | $granularity | $policy | $tasks | $1 | $2 |"
			hand="$hand $1"
		done
	done
	best_builtin=$(min $g1_builtin)
	best_hand=$(min $hand)
	summary="$summary
$pixels px: best built-in at G1 $best_builtin s, fusing+batched $fused s, best hand-coarsened $best_hand s, recovered $(awk -v b="$best_builtin" -v f="$fused" -v h="$best_hand" 'BEGIN { if (b - h > 0) printf "%.0f%%", 100 * (b - f) / (b - h); else printf "n/a (coarsening did not help)" }')"
done
echo "$summary"
