#!/bin/sh
# Runs a program under several settings, all settings once per round,
# and prints per setting the median time and the median over rounds of
# its time divided by the first setting's time in the same round.  On a
# machine whose speed drifts between minutes (a shared VM), the ratio of
# runs made side by side varies much less than the times themselves.
#
#   examples/bench/paired_ratios.sh ROUNDS 'LABEL:VAR=VALUE VAR=VALUE;LABEL:...' PROGRAM ARGS...
#
# The program runs through FUSING_LAUNCHER (default ./starpu-fusing-run)
# and must print a line "time: SECONDS s ..." (examples/cnn_training does).
# Example (the loss of the default on a program coarsened by hand,
# doc/notebook.md):
#   examples/bench/paired_ratios.sh 15 'lws:STARPU_SCHED=lws;default:STARPU_SCHED=fusing' \
#       examples/cnn_training/cnn_training -g sample -epochs 6
set -eu
[ $# -ge 3 ] || { echo "usage: $0 ROUNDS 'LABEL:VAR=VALUE ...;LABEL:...' PROGRAM ARGS..." >&2; exit 2; }
rounds=$1
settings=$2
shift 2
launcher=${FUSING_LAUNCHER:-./starpu-fusing-run}
results=$(mktemp)
trap 'rm -f "$results"' EXIT
for round in $(seq "$rounds"); do
	echo "$settings" | tr ';' '\n' | while IFS=: read -r label assignments; do
		# shellcheck disable=SC2086 # assignments are words by design
		seconds=$(env $assignments "$launcher" "$@" 2>/dev/null | sed -n 's/^time: \([0-9.]*\) s.*/\1/p')
		[ -n "$seconds" ] || { echo "$label: the program printed no \"time:\" line (round $round)" >&2; exit 1; }
		echo "$round $label $seconds" >> "$results"
	done
done
awk '
function median(values,    n, v, i, j, t) {
	n = split(values, v, " ")
	for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
	return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
{
	if (!($2 in seen)) { seen[$2] = 1; order[++labels] = $2; if (labels == 1) first = $2 }
	time[$1, $2] = $3; times[$2] = times[$2] " " $3; rounds[$1] = 1
}
END {
	printf "%-16s %10s %14s\n", "setting", "median s", "ratio median"
	for (l = 1; l <= labels; l++) {
		label = order[l]; ratios = ""
		for (r in rounds) if ((r, label) in time && (r, first) in time) ratios = ratios " " time[r, label] / time[r, first]
		printf "%-16s %10.3f %14.3f\n", label, median(times[label]), median(ratios)
	}
}' "$results"
