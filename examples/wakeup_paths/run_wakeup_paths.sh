#!/bin/sh
# Time per link of examples/wakeup_paths under a base policy alone and under
# fusing over it (the default, and with STARPU_FUSING_IDLE_WORKERS=poll),
# path by path, in interleaved rounds on two CPU workers; prints a Markdown
# table of medians and writes DIR/wakeup_paths.csv.
#
#   run_wakeup_paths.sh [-rounds R] [-links N] [-base POLICY] -out DIR
#
# Environment: FUSING_LAUNCHER, STARPU_FUSING_LIBRARY, WAKEUP_PATHS (the
# program).  The ratio column is fusing's median over the base's.
set -eu
rounds=5
links=2000
base=lws
out=.
while [ $# -gt 0 ]; do
	case "$1" in
	-rounds) rounds=$2; shift 2 ;;
	-links) links=$2; shift 2 ;;
	-base) base=$2; shift 2 ;;
	-out) out=$2; shift 2 ;;
	*) echo "usage: $0 [-rounds R] [-links N] [-base POLICY] -out DIR" >&2; exit 2 ;;
	esac
done
launcher=${FUSING_LAUNCHER:-./starpu-fusing-run}
program=${WAKEUP_PATHS:-examples/wakeup_paths/wakeup_paths}
paths="pushed pinned workerids context tag callback roundtrip released"
mkdir -p "$out"
csv="$out/wakeup_paths.csv"
echo "path,configuration,round,us_per_link" > "$csv"
export STARPU_NCPU=2
for round in $(seq "$rounds"); do
	for path in $paths; do
		for configuration in base fusing fusing-poll; do
			case "$configuration" in
			base) line=$(STARPU_SCHED=$base timeout 120 "$program" "$path" "$links") ;;
			fusing) line=$(STARPU_FUSING_BASE=$base timeout 120 "$launcher" "$program" "$path" "$links") ;;
			fusing-poll) line=$(STARPU_FUSING_BASE=$base STARPU_FUSING_IDLE_WORKERS=poll timeout 120 "$launcher" "$program" "$path" "$links") ;;
			esac
			echo "$path,$configuration,$round,$(echo "$line" | awk '{ print $2 }')" >> "$csv"
		done
	done
done
awk -F, -v base="$base" '
NR > 1 { v[$1, $2, ++n[$1, $2]] = $4; if (!($1 in seen)) { seen[$1] = 1; order[++paths] = $1 } }
function median(path, configuration,   count, i, j, t, a) {
	count = n[path, configuration]
	for (i = 1; i <= count; i++) a[i] = v[path, configuration, i]
	for (i = 2; i <= count; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
	return count % 2 ? a[(count + 1) / 2] : (a[count / 2] + a[count / 2 + 1]) / 2
}
END {
	printf "| path | %s alone (us per link) | fusing | fusing, idle workers poll | fusing / %s |\n", base, base
	print "|---|---|---|---|---|"
	for (p = 1; p <= paths; p++) {
		path = order[p]; b = median(path, "base"); f = median(path, "fusing")
		printf "| %s | %.2f | %.2f | %.2f | %.2f |\n", path, b, f, median(path, "fusing-poll"), f / b
	}
}' "$csv"
