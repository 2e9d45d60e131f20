#!/bin/sh
# Runs every program of starpu_examples.list under one base policy alone and
# under `fusing` over that base (through the launcher), and fails when:
#  - the program fails under the base alone (the list holds programs that
#    pass), or its exit status under fusing differs;
#  - the fusing run prints a warning about policy selection or an error of
#    ours;
#  - with fusion, the statistics do not account for every task: for each
#    codelet, the tasks submitted must be the tasks fused plus those unfused
#    for a stated reason (with STARPU_FUSING_HOLD=always, every fusable task
#    waits for a batch);
#  - with fusion, no task of the whole list was fused; without, one was.
# A program that skips itself (exit status 77 under the base alone: complex
# submits a task only CUDA or OpenCL can run) must skip under fusing too,
# and is counted apart: its self-check did not run.
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
# Fusion off, a mechanism named is refused (sched/config.cpp).
[ "$fusion" = 0 ] && unset STARPU_FUSING_MODE
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
skipped=0
fused_total=0
# The statistics' table (core/stats.cpp): per codelet, a row ending with
# submitted, fused, batches, mean and largest batch, mean batch time, then
# indented lines, "unfused, REASON: COUNT" among them.  Prints a line per
# codelet whose tasks are not all accounted for, then "fused TOTAL".
accounting='
function check() {
	if (name != "" && submitted != fused + unfused)
		printf "codelet %s: %d submitted, %d fused, %d unfused with a reason\n", name, submitted, fused, unfused
	name = ""
}
/^\[starpu-fusing\] codelet +submitted +fused/ { table = 1; next }
table && /^\[starpu-fusing\]   unfused, / { unfused += $NF; next }
table && /^\[starpu-fusing\]   / { next }
table && /^\[starpu-fusing\] [^ ]/ {
	check()
	if ($(NF - 4) ~ /^[0-9]+$/ && $(NF - 5) ~ /^[0-9]+$/) {
		name = $2 == "(no" ? "(no codelet)" : $2; submitted = $(NF - 5); fused = $(NF - 4); unfused = 0; total += fused
	} else
		table = 0
}
END { check(); print "fused " total + 0 }'
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
	counts=$(awk "$accounting" "$err")
	fused=$(echo "$counts" | sed -n 's/^fused //p')
	fused_total=$((fused_total + fused))
	problem=""
	if [ "$base_status" != 0 ] && [ "$base_status" != 77 ]; then
		problem="exit status $base_status under $base alone"
	elif [ "$base_status" != "$fusing_status" ]; then
		problem="exit status $fusing_status under fusing, $base_status under $base"
	fi
	if grep -q -e "scheduling policy .* was not found" -e "^starpu-fusing:" "$err"; then
		problem="${problem:+$problem; }unexpected message: $(grep -m1 -e "was not found" -e "^starpu-fusing:" "$err")"
	fi
	unaccounted=$(echo "$counts" | grep -v '^fused ')
	if [ "$fusion" = 1 ] && [ -n "$unaccounted" ]; then
		problem="${problem:+$problem; }tasks not accounted for: $(echo "$unaccounted" | tr '\n' ' ')"
	fi
	if [ -n "$problem" ]; then
		failures=$((failures + 1))
		echo "FAIL $program $args: $problem"
		sed 's/^/    /' "$err" | tail -n 20
	elif [ "$base_status" = 77 ]; then
		skipped=$((skipped + 1))
		echo "skip $program $args (skips itself under $base alone and under fusing; $fused tasks fused)"
	else
		echo "ok   $program $args ($fused tasks fused)"
	fi
done < "$list"

echo "$programs programs over $base (fusion $fusion): $((programs - skipped - failures)) passed their self-check, $skipped skipped themselves, $failures failed; $fused_total tasks fused"
if [ "$fusion" = 1 ] && [ "$fused_total" = 0 ]; then
	echo "FAIL: no task was fused over $base"
	exit 1
fi
if [ "$fusion" = 0 ] && [ "$fused_total" != 0 ]; then
	echo "FAIL: tasks were fused with STARPU_FUSING=0"
	exit 1
fi
[ "$failures" = 0 ]
