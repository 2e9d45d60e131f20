#!/bin/sh
# The flush barrier is complete by construction (interpose/flush_barrier.rules):
# fails when the StarPU this build links exports a function that no rule
# classifies, or when a function classified "flush" or "own" is not defined
# by the built library (so StarPU's own would run without flushing).
# Environment (set by `make check`): STARPU_EXPORTING_LIBS, STARPU_FUSING_LIBRARY,
# FLUSH_BARRIER_RULES, CLASSIFY_EXPORTS.
set -u
table=$(mktemp) ours=$(mktemp)
trap 'rm -f "$table" "$ours"' EXIT

# shellcheck disable=SC2086 # a list of libraries
sh "$CLASSIFY_EXPORTS" "$FLUSH_BARRIER_RULES" $STARPU_EXPORTING_LIBS >"$table"
status=$?
if [ "$status" -gt 1 ]; then
	echo "FAIL: classify_exports.sh stopped (status $status)"
	exit 1
fi
failures=0
unclassified=$(awk '$1 == "unclassified" { print $2 }' "$table")
if [ -n "$unclassified" ]; then
	echo "FAIL: functions exported by $STARPU_EXPORTING_LIBS that flush_barrier.rules does not classify:"
	echo "$unclassified" | sed 's/^/    /'
	failures=1
fi
nm -D --defined-only "$STARPU_FUSING_LIBRARY" | awk '$2 == "T" { print $3 }' | sort -u >"$ours"
missing=$(awk '$1 == "flush" || $1 == "own" { print $2 }' "$table" | sort -u | comm -23 - "$ours")
if [ -n "$missing" ]; then
	echo "FAIL: barrier functions the library does not define (StarPU's would run without a flush):"
	echo "$missing" | sed 's/^/    /'
	failures=1
fi
awk '{ n[$1]++ } END { printf "%d exported functions: %d flush first, %d defined here, %d pass\n", NR, n["flush"], n["own"], n["pass"] }' "$table"
exit "$failures"
