#!/bin/sh
# Ensures the ways users select and configure the policy behave as the README
# says, on a real StarPU program (StarPU's incrementer):
#  - the launcher selects fusing with no "policy not found" warning;
#  - STARPU_SCHED=help under the launcher lists fusing;
#  - each malformed STARPU_FUSING_* value and an unknown base stop the program
#    at StarPU initialisation with exactly one line naming the variable, the
#    value and what is accepted, and exit status 1.
# Environment (set by make check): STARPU_EXAMPLES_DIR, FUSING_LAUNCHER,
# STARPU_FUSING_LIBRARY.
set -u
program="$STARPU_EXAMPLES_DIR/incrementer"
if [ ! -x "$program" ]; then
	echo "SKIP: $program not found (apt-get install starpu-examples)"
	exit 77
fi
failures=0
err=$(mktemp)
trap 'rm -f "$err"' EXIT

fail() { echo "FAIL: $*"; sed 's/^/    /' "$err"; failures=$((failures + 1)); }

# Selection works, silently.
STARPU_FUSING_STATS=1 "$FUSING_LAUNCHER" "$program" >/dev/null 2>"$err"
status=$?
[ "$status" = 0 ] || fail "incrementer under the launcher exited $status"
grep -q "was not found" "$err" && fail "policy-not-found warning under the launcher"
grep -q "^\[starpu-fusing\] increment " "$err" || fail "the fusing policy did not run (no statistics line for increment)"

# The policy list includes fusing.
STARPU_SCHED=help "$FUSING_LAUNCHER" "$program" >/dev/null 2>"$err"
grep -q "^fusing " "$err" || fail "STARPU_SCHED=help does not list fusing"

# STARPU_FUSING_ONLY / STARPU_FUSING_EXCLUDE select families by codelet name.
fused_increments() { awk '$1 == "[starpu-fusing]" && $2 == "increment" { print $4 }' "$err"; }
STARPU_FUSING_HOLD=always STARPU_FUSING_STATS=1 STARPU_FUSING_ONLY=increment "$FUSING_LAUNCHER" "$program" >/dev/null 2>"$err"
[ "$(fused_increments)" -gt 0 ] 2>/dev/null || fail "STARPU_FUSING_ONLY=increment fused no increment task"
STARPU_FUSING_HOLD=always STARPU_FUSING_STATS=1 STARPU_FUSING_EXCLUDE=other,increment "$FUSING_LAUNCHER" "$program" >/dev/null 2>"$err"
[ "$(fused_increments)" = 0 ] || fail "STARPU_FUSING_EXCLUDE=other,increment still fused increment tasks"
grep -q "excluded by STARPU_FUSING_ONLY/EXCLUDE: 5" "$err" || fail "exclusions not counted in the statistics"

# Bad configuration: one line, naming variable and value, exit status 1.
check_rejected() { # VARIABLE VALUE EXPECTED_FRAGMENT
	env "$1=$2" "$FUSING_LAUNCHER" "$program" >/dev/null 2>"$err"
	status=$?
	lines=$(wc -l < "$err")
	if [ "$status" != 1 ]; then
		fail "$1='$2': exit status $status, expected 1"
	elif [ "$lines" != 1 ]; then
		fail "$1='$2': $lines lines on stderr, expected 1"
	elif ! grep -q -F "$1" "$err" || ! grep -q -F "$3" "$err"; then
		fail "$1='$2': message does not name the variable and '$3'"
	else
		echo "ok   $1='$2' -> $(cat "$err")"
	fi
}
check_rejected STARPU_FUSING_BASE nosuchpolicy "'nosuchpolicy': expected one of StarPU's predefined policies: "
check_rejected STARPU_FUSING_BASE pheft "'pheft': fusing cannot layer over itself or over parallel-task policies"
check_rejected STARPU_FUSING_BASE fusing "'fusing': fusing cannot layer over itself"
check_rejected STARPU_FUSING yes "'yes': expected 0"
check_rejected STARPU_FUSING_MAX_BATCH 0 "from 1 to 4096"
check_rejected STARPU_FUSING_MAX_DELAY 5 "with a unit"
check_rejected STARPU_FUSING_HOLD never "when-busy"
check_rejected STARPU_FUSING_MAX_TASK 1e3 "with a unit"
check_rejected STARPU_FUSING_CACHE_CAP l4 "off, l2 or l3"
check_rejected STARPU_FUSING_STATS on "0 or 1"
check_rejected STARPU_FUSING_TARGET 100 "with a unit"
check_rejected STARPU_FUSING_MIN_BATCH 65 "from 1 to STARPU_FUSING_MAX_BATCH (64)"
check_rejected STARPU_FUSING_ONLY "a,,b" "comma-separated codelet names"
check_rejected STARPU_FUSING_EXCLUDE "" "comma-separated codelet names"
check_rejected STARPU_FUSING_MAXBATCH 8 "unknown variable STARPU_FUSING_MAXBATCH"

echo "selection and configuration: $failures failed"
[ "$failures" = 0 ]
