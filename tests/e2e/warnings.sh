#!/bin/sh
# Ensures fusing makes StarPU print no message that the base policy alone
# does not print on the same program.  The program is
# tests/test_dahl_patterns (regression performance models, as DAHL's
# codelets have, in a fresh model directory each run) over lws, which never
# asks the models: asking them ourselves made StarPU force calibration and
# then print "Too big deviation" warnings.  StarPU's messages are compared
# by the function that printed them ([starpu][FUNCTION]), with their counts.
# The test that calibrates models on purpose is left out: StarPU then prints
# deviation warnings, as many as the timings happen to give.
# The fused run must also pass the program's own tests (exit status 0), as
# must the base alone in the -when-busy mode; in the other mode
# (STARPU_FUSING_HOLD=always) the program's tests assert that tasks ran in
# batches, which the base alone fails.
# Environment (set by make check): DAHL_PATTERNS.
set -u
failures=0
stderr_file=$(mktemp)
trap 'rm -f "$stderr_file"' EXIT
messages() { # STARPU_FUSING MODE MUST_PASS: the counts of StarPU's messages
	# Fusion off, a mechanism named is refused (sched/config.cpp).
	unset_mode=""
	[ "$1" = 0 ] && unset_mode="-u STARPU_FUSING_MODE"
	# shellcheck disable=SC2086
	env $unset_mode STARPU_FUSING=$1 timeout 120 "$DAHL_PATTERNS" "$2.dahl" '*calibrate*' 2>"$stderr_file" >/dev/null
	status=$?
	if [ "$status" != 0 ] && [ "$3" = yes ]; then
		echo "FAIL: $2 with STARPU_FUSING=$1: the program exited with status $status" >&2
		sed 's/^/    /' "$stderr_file" | tail -20 >&2
		return 1
	fi
	sed -n 's/^\[starpu\]\[\([^]]*\)\].*/\1/p' "$stderr_file" | sort | uniq -c
}
for mode in lws lws-when-busy; do
	alone_must_pass=no
	[ "$mode" = lws-when-busy ] && alone_must_pass=yes
	if ! alone=$(messages 0 "$mode" "$alone_must_pass") || ! fused=$(messages 1 "$mode" yes); then
		failures=$((failures + 1))
	elif [ "$alone" = "$fused" ]; then
		echo "ok   $mode: the same StarPU messages with and without fusion"
	else
		echo "FAIL: $mode: StarPU's messages differ under fusing"
		echo "  base alone:"; echo "$alone" | sed 's/^/    /'
		echo "  fusing:"; echo "$fused" | sed 's/^/    /'
		failures=$((failures + 1))
	fi
done
[ "$failures" = 0 ]
