#!/bin/sh
# CPU per task of the program's submitting thread and of the whole process
# (examples/submission_cost), under a base policy alone and under fusing
# over it, in interleaved rounds on one CPU worker; prints a Markdown table
# of medians and the ratios to the base, and writes DIR/submission_cost.csv.
#
#   run_submission_cost.sh [-rounds R] [-tasks N] [-base POLICY] -out DIR
#
# Environment: FUSING_LAUNCHER, STARPU_FUSING_LIBRARY, SUBMISSION_COST (the
# program).
set -eu
rounds=5
tasks=20000
base=lws
out=.
while [ $# -gt 0 ]; do
	case "$1" in
	-rounds) rounds=$2; shift 2 ;;
	-tasks) tasks=$2; shift 2 ;;
	-base) base=$2; shift 2 ;;
	-out) out=$2; shift 2 ;;
	*) echo "usage: $0 [-rounds R] [-tasks N] [-base POLICY] -out DIR" >&2; exit 2 ;;
	esac
done
launcher=${FUSING_LAUNCHER:-./starpu-fusing-run}
program=${SUBMISSION_COST:-examples/submission_cost/submission_cost}
cases="chains independent tagged excluded"
mkdir -p "$out"
csv="$out/submission_cost.csv"
echo "case,configuration,round,thread_us_per_task,process_us_per_task,wall_us_per_task" > "$csv"
export STARPU_NCPU=1
for round in $(seq "$rounds"); do
	for kind in $cases; do
		for configuration in base fusing; do
			case "$configuration" in
			base) line=$(STARPU_SCHED=$base timeout 300 "$program" "$kind" "$tasks") ;;
			fusing)
				if [ "$kind" = excluded ]; then
					line=$(STARPU_FUSING_BASE=$base STARPU_FUSING_EXCLUDE=excluded_noop timeout 300 "$launcher" "$program" "$kind" "$tasks")
				else
					line=$(STARPU_FUSING_BASE=$base timeout 300 "$launcher" "$program" "$kind" "$tasks")
				fi ;;
			esac
			echo "$line" | awk -v c="$kind" -v k="$configuration" -v r="$round" -F'[ ,]+' \
				'{ for (i = 1; i <= NF; i++) { if ($i == "thread") t = $(i + 1); if ($i == "process") p = $(i + 1); if ($i == "wall") w = $(i - 2) } }
				 END { printf "%s,%s,%s,%s,%s,%s\n", c, k, r, t, p, w }' >> "$csv"
		done
	done
done
awk -F, -v base="$base" '
NR > 1 { t[$1, $2, ++n[$1, $2]] = $4; p[$1, $2, n[$1, $2]] = $5; if (!($1 in seen)) { seen[$1] = 1; order[++cases] = $1 } }
function median(values, count,   i, j, x) {
	for (i = 2; i <= count; i++) for (j = i; j > 1 && values[j - 1] > values[j]; j--) { x = values[j]; values[j] = values[j - 1]; values[j - 1] = x }
	return count % 2 ? values[(count + 1) / 2] : (values[count / 2] + values[count / 2 + 1]) / 2
}
function of(array, c, k,   i, v) { for (i = 1; i <= n[c, k]; i++) v[i] = array[c, k, i]; return median(v, n[c, k]) }
END {
	printf "| case | %s: program thread, us CPU per task | fusing | ratio | %s: process, us CPU per task | fusing | ratio |\n", base, base
	print "|---|---|---|---|---|---|---|"
	for (i = 1; i <= cases; i++) {
		c = order[i]; bt = of(t, c, "base"); ft = of(t, c, "fusing"); bp = of(p, c, "base"); fp = of(p, c, "fusing")
		printf "| %s | %.3f | %.3f | %.2f | %.3f | %.3f | %.2f |\n", c, bt, ft, ft / bt, bp, fp, fp / bp
	}
}' "$csv"
