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
# Environment (set by make check): DAHL_PATTERNS.
set -u
failures=0
messages() { # STARPU_FUSING MODE
	STARPU_FUSING=$1 timeout 120 "$DAHL_PATTERNS" "$2.dahl" '*calibrate*' 2>&1 >/dev/null |
		sed -n 's/^\[starpu\]\[\([^]]*\)\].*/\1/p' | sort | uniq -c
}
for mode in lws lws-when-busy; do
	alone=$(messages 0 "$mode")
	fused=$(messages 1 "$mode")
	if [ "$alone" = "$fused" ]; then
		echo "ok   $mode: the same StarPU messages with and without fusion"
	else
		echo "FAIL: $mode: StarPU's messages differ under fusing"
		echo "  base alone:"; echo "$alone" | sed 's/^/    /'
		echo "  fusing:"; echo "$fused" | sed 's/^/    /'
		failures=$((failures + 1))
	fi
done
[ "$failures" = 0 ]
