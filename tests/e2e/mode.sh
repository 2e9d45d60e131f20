#!/bin/sh
# STARPU_FUSING_MODE where the program's submissions do not reach the library
# (tests/mode_probe.c links libstarpu first): submission-time fusion asked
# for explicitly stops the program with one line naming the variable; the
# default mode runs with ready-time fusion; a bad value names what is
# accepted.  Environment (set by make check): MODE_PROBE.
set -u
failures=0
check() { # DESCRIPTION EXPECTED_STATUS PATTERN MODE
	if [ -n "$4" ]; then output=$(STARPU_FUSING_MODE=$4 timeout 120 "$MODE_PROBE" 2>&1); else output=$(env -u STARPU_FUSING_MODE timeout 120 "$MODE_PROBE" 2>&1); fi
	status=$?
	if [ "$status" != "$2" ] || ! printf '%s\n' "$output" | grep -q -e "$3"; then
		echo "FAIL: $1: exit status $status (expected $2), output:"
		printf '%s\n' "$output" | sed 's/^/    /' | tail -n 5
		failures=$((failures + 1))
	else
		echo "ok   $1"
	fi
}
check "explicit submission mode without the preload is refused" 1 "STARPU_FUSING_MODE=submission needs the program's starpu_task_submit" submission
check "explicit both mode without the preload is refused" 1 "STARPU_FUSING_MODE=both needs" both
check "the default mode runs without the preload" 0 "" ""
check "ready mode runs without the preload" 0 "" ready
check "a bad mode names the accepted values" 1 "STARPU_FUSING_MODE.*ready.*submission.*both" sideways
[ "$failures" = 0 ]
