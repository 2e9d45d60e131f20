#!/bin/sh
# Ensures the ways users select and configure the policy behave as the README
# says, on a real StarPU program (StarPU's incrementer):
#  - the launcher selects fusing with no "policy not found" warning;
#  - a process that loads another StarPU line than the library's is refused;
#  - STARPU_SCHED=help under the launcher lists fusing;
#  - each malformed STARPU_FUSING_* value and an unknown base stop the program
#    at StarPU initialisation with exactly one line naming the variable, the
#    value and what is accepted, and exit status 1; so do settings that cannot
#    work together (StarPU's submission throttling, a codelet both selected
#    and excluded);
#  - STARPU_FUSING_ONLY naming no codelet gets a warning at shutdown;
#  - STARPU_FUSING_TRACE writes one line per merged task (as many as the
#    statistics count batches, with as many members as they count fused
#    tasks), and a file it cannot open is refused like a bad value;
#  - the other ways a program selects a policy (tests/selection_probe.c): the
#    environment is never changed under the program's threads, the
#    configuration's sched_policy_name, StarPU's precedence of STARPU_SCHED
#    over an explicit sched_policy, contexts created by policy name, and (on
#    StarPU 1.4) submission limits set at run time.
# Environment (set by make check): STARPU_EXAMPLES_DIR, FUSING_LAUNCHER,
# STARPU_FUSING_LIBRARY, SELECTION_PROBE, ANOTHER_STARPU_LINE.
set -u
program="$STARPU_EXAMPLES_DIR/incrementer"
if [ ! -x "$program" ]; then
	echo "SKIP: $program not found (apt-get install starpu-examples)"
	exit 77
fi
failures=0
err=$(mktemp) trace=$(mktemp)
trap 'rm -f "$err" "$trace"' EXIT

fail() { echo "FAIL: $*"; sed 's/^/    /' "$err"; failures=$((failures + 1)); }

# Selection works, silently.
STARPU_FUSING_STATS=1 "$FUSING_LAUNCHER" "$program" >/dev/null 2>"$err"
status=$?
[ "$status" = 0 ] || fail "incrementer under the launcher exited $status"
grep -q "was not found" "$err" && fail "policy-not-found warning under the launcher"
grep -q "^\[starpu-fusing\] increment " "$err" || fail "the fusing policy did not run (no statistics line for increment)"

# The launcher of a build tree finds the library built beside it, without
# STARPU_FUSING_LIBRARY; a library that is not there is one clear line.
(unset STARPU_FUSING_LIBRARY; STARPU_FUSING_STATS=1 "$FUSING_LAUNCHER" "$program" >/dev/null 2>"$err")
[ "$?" = 0 ] || fail "the launcher without STARPU_FUSING_LIBRARY did not run the program"
grep -q "^\[starpu-fusing\] increment " "$err" || fail "the launcher without STARPU_FUSING_LIBRARY did not load the library of its tree"
STARPU_FUSING_LIBRARY=/nonexistent/libstarpu-fusing.so "$FUSING_LAUNCHER" "$program" >/dev/null 2>"$err"
[ "$?" = 2 ] && [ "$(wc -l < "$err")" = 1 ] && grep -q "library not found: /nonexistent/libstarpu-fusing.so" "$err" ||
	fail "a missing STARPU_FUSING_LIBRARY is not one clear line (exit status 2)"

# A process that loads another StarPU line than the library's is refused at
# load time, with one line naming both (the program links libstarpu-9.9.so).
LD_PRELOAD="$ANOTHER_STARPU_LINE" "$FUSING_LAUNCHER" "$program" >/dev/null 2>"$err"
[ "$?" = 1 ] && [ "$(wc -l < "$err")" = 1 ] && grep -q "this process loads StarPU 9.9 (.*libstarpu-9.9.so), but .* was built for StarPU" "$err" ||
	fail "a process loading another StarPU line is not refused with one clear line (exit status 1)"

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

# A name no codelet had: the run works, and says so once at shutdown.
STARPU_FUSING_ONLY=incremnt "$FUSING_LAUNCHER" "$program" >/dev/null 2>"$err"
[ "$?" = 0 ] || fail "STARPU_FUSING_ONLY=incremnt: the run failed"
grep -q "STARPU_FUSING_ONLY names 'incremnt', but no task of a codelet of that name was submitted (codelets seen: .*increment" "$err" ||
	fail "STARPU_FUSING_ONLY=incremnt: no warning naming the codelets seen"

# STARPU_FUSING_TRACE: the merged tasks the statistics count, one line each.
STARPU_FUSING_HOLD=always STARPU_FUSING_STATS=1 STARPU_FUSING_TRACE="$trace" "$FUSING_LAUNCHER" "$program" >/dev/null 2>"$err"
batches=$(awk '$1 == "[starpu-fusing]" && $2 == "increment" { print $5 }' "$err")
traced_batches=$(awk -F, 'NR > 1 && $5 == "submission" && $6 == "increment" { n++ } END { print n + 0 }' "$trace")
traced_members=$(awk -F, 'NR > 1 && $6 == "increment" { n += $4 } END { print n + 0 }' "$trace")
if [ "$(head -n 1 "$trace")" != "worker,start_us,end_us,members,kind,name" ] || [ -z "$batches" ] || [ "$batches" = 0 ] ||
	[ "$traced_batches" != "$batches" ] || [ "$traced_members" != "$(fused_increments)" ]; then
	fail "STARPU_FUSING_TRACE: $traced_batches lines with $traced_members members for increment, statistics: $batches batches, $(fused_increments) fused"
else
	echo "ok   STARPU_FUSING_TRACE: $traced_batches merged tasks of increment traced, as counted"
fi

# Bad configuration: one line, naming variable and value, exit status 1.
check_rejected() { # EXPECTED_FRAGMENT VARIABLE=VALUE...
	expected=$1
	shift
	env "$@" timeout 60 "$FUSING_LAUNCHER" "$program" >/dev/null 2>"$err"
	status=$?
	lines=$(wc -l < "$err")
	variable=${1%%=*}
	if [ "$status" != 1 ]; then
		fail "$*: exit status $status, expected 1"
	elif [ "$lines" != 1 ]; then
		fail "$*: $lines lines on stderr, expected 1"
	elif ! grep -q -F "$variable" "$err" || ! grep -q -F "$expected" "$err"; then
		fail "$*: message does not name $variable and '$expected'"
	else
		echo "ok   $* -> $(cat "$err")"
	fi
}
check_rejected "'nosuchpolicy': expected one of StarPU's predefined policies: " STARPU_FUSING_BASE=nosuchpolicy
check_rejected "'pheft': fusing cannot layer over itself or over parallel-task policies" STARPU_FUSING_BASE=pheft
check_rejected "'fusing': fusing cannot layer over itself" STARPU_FUSING_BASE=fusing
check_rejected "'yes': expected 0" STARPU_FUSING=yes
check_rejected "from 1 to 4096" STARPU_FUSING_MAX_BATCH=0
check_rejected "with a unit" STARPU_FUSING_MAX_DELAY=5
check_rejected "when-busy" STARPU_FUSING_HOLD=never
check_rejected "with a unit" STARPU_FUSING_MAX_TASK=1e3
check_rejected "off, l2 or l3" STARPU_FUSING_CACHE_CAP=l4
check_rejected "0 or 1" STARPU_FUSING_STATS=on
check_rejected "with a unit" STARPU_FUSING_TARGET=100
check_rejected "from 1 to STARPU_FUSING_MAX_BATCH (128)" STARPU_FUSING_MIN_BATCH=129
check_rejected "comma-separated codelet names" STARPU_FUSING_ONLY=a,,b
check_rejected "comma-separated codelet names" STARPU_FUSING_EXCLUDE=
check_rejected "unknown variable STARPU_FUSING_MAXBATCH" STARPU_FUSING_MAXBATCH=8
check_rejected "'increment' is in both STARPU_FUSING_ONLY and STARPU_FUSING_EXCLUDE" STARPU_FUSING_ONLY=increment STARPU_FUSING_EXCLUDE=increment
check_rejected "'cross_corelation' is no kernel pack entry; expected auto, off, or a comma-separated list of: cross_correlation, " STARPU_FUSING_KERNELS=filter_gradient,cross_corelation
check_rejected "auto (every kernel pack entry), off, or comma-separated entry names" STARPU_FUSING_KERNELS=cross_correlation,
check_rejected "cannot work with fusion" STARPU_LIMIT_MAX_SUBMITTED_TASKS=20 STARPU_LIMIT_MIN_SUBMITTED_TASKS=10
check_rejected "'/nonexistent-directory/trace.csv': cannot open it for writing" STARPU_FUSING_TRACE=/nonexistent-directory/trace.csv

# The other ways of selecting a policy.
probe() { # EXPECTED_POLICY MODE [VARIABLE=VALUE...]: runs the probe preloaded
	expected=$1 mode=$2
	shift 2
	env "$@" LD_PRELOAD="$STARPU_FUSING_LIBRARY" STARPU_SCHED_LIB="$STARPU_FUSING_LIBRARY" \
		timeout 60 "$SELECTION_PROBE" "$mode" >"$err" 2>&1
	status=$?
	if [ "$status" = 77 ]; then
		echo "skip $mode: $(head -n 1 "$err")"
	elif [ "$status" != 0 ]; then
		fail "probe $mode $*: exit status $status"
	elif ! grep -q "^policy: $expected\$" "$err"; then
		fail "probe $mode $*: expected policy $expected"
	elif grep -q "was not found" "$err"; then
		fail "probe $mode $*: policy-not-found warning"
	else
		echo "ok   probe $mode $* -> $expected"
	fi
}
probe fusing getenv-race STARPU_SCHED=fusing
probe fusing conf-name -u STARPU_SCHED
probe eager conf-struct -u STARPU_SCHED
probe fusing conf-struct STARPU_SCHED=fusing
probe dmda conf-name STARPU_SCHED=dmda
probe fusing ctx-by-name STARPU_SCHED=fusing
probe fusing ctx-by-name STARPU_SCHED=lws
if STARPU_SCHED=fusing LD_PRELOAD="$STARPU_FUSING_LIBRARY" STARPU_SCHED_LIB="$STARPU_FUSING_LIBRARY" \
	timeout 60 "$SELECTION_PROBE" limits >"$err" 2>&1; then
	fail "submission limits set at run time under fusing were accepted"
elif [ "$?" = 77 ]; then
	echo "skip limits: $(head -n 1 "$err")"
elif grep -q "starpu_set_limit_max_submitted_tasks(20) would make StarPU throttle submission" "$err"; then
	echo "ok   submission limits set at run time refused"
else
	fail "submission limits set at run time: no refusal naming the call"
fi

echo "selection and configuration: $failures failed"
[ "$failures" = 0 ]
