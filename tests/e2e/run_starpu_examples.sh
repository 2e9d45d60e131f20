#!/bin/sh
# Runs every program of starpu_examples.list under one base policy alone and
# under `fusing` over that base (through the launcher), and fails when an
# exit status differs, when the fusing run prints a warning about policy
# selection or an error of ours, or when no task at all was fused.
#
# Usage: run_starpu_examples.sh FILE.examples
#   The file's name without extension is the base policy: eager.examples.
#   A name ending in -unfused runs fusing with STARPU_FUSING=0 instead.
# Environment (set by `make check`): STARPU_EXAMPLES_DIR, FUSING_LAUNCHER,
#   STARPU_FUSING_LIBRARY.
set -u

name=$(basename "$1" .examples)
base=${name%-unfused}
fusion=1
[ "$base" != "$name" ] && fusion=0
here=$(cd "$(dirname "$0")" && pwd)
list="$here/starpu_examples.list"

if [ ! -x "$STARPU_EXAMPLES_DIR/incrementer" ]; then
	echo "SKIP: StarPU example programs not found in $STARPU_EXAMPLES_DIR (apt-get install starpu-examples)"
	exit 77
fi

# Every fusable task waits for a batch, so that batches form in every DAG;
# with the default hold an idle machine would run most of these tasks unfused.
hold=always
failures=0
programs=0
fused_total=0
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT

while read -r program args; do
	case "$program" in ''|'#'*) continue ;; esac
	programs=$((programs + 1))
	path="$STARPU_EXAMPLES_DIR/$program"
	# shellcheck disable=SC2086 # args are words by design
	STARPU_SCHED=$base timeout 300 "$path" $args >"$out" 2>"$err"
	base_status=$?
	# shellcheck disable=SC2086
	STARPU_FUSING=$fusion STARPU_FUSING_BASE=$base STARPU_FUSING_HOLD=$hold STARPU_FUSING_STATS=1 \
		timeout 300 "$FUSING_LAUNCHER" "$path" $args >"$out" 2>"$err"
	fusing_status=$?
	fused=$(awk '$1 == "[starpu-fusing]" && $2 != "codelet" && $2 != "unfused," { n += $4 } END { print n + 0 }' "$err")
	fused_total=$((fused_total + fused))
	problem=""
	[ "$base_status" != "$fusing_status" ] && problem="exit status $fusing_status under fusing, $base_status under $base"
	if grep -q -e "scheduling policy .* was not found" -e "^starpu-fusing:" "$err"; then
		problem="$problem; unexpected message: $(grep -m1 -e "was not found" -e "^starpu-fusing:" "$err")"
	fi
	if [ -n "$problem" ]; then
		failures=$((failures + 1))
		echo "FAIL $program $args: $problem"
		sed 's/^/    /' "$err" | tail -n 20
	else
		echo "ok   $program $args (exit $fusing_status, $fused tasks fused)"
	fi
done < "$list"

echo "$programs programs over $base (fusion $fusion): $failures failed, $fused_total tasks fused"
if [ "$fusion" = 1 ] && [ "$fused_total" = 0 ]; then
	echo "FAIL: no task was fused over $base"
	exit 1
fi
if [ "$fusion" = 0 ] && [ "$fused_total" != 0 ]; then
	echo "FAIL: tasks were fused with STARPU_FUSING=0"
	exit 1
fi
[ "$failures" = 0 ]
