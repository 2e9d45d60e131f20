#!/bin/sh
# STARPU_FUSING_MODE where the program's submissions do not reach the library
# (tests/mode_probe.c links libstarpu first): submission-time fusion asked
# for explicitly stops the program with one line naming the variable; the
# default mode (both) runs ready-time fusion there and says so in the
# statistics, and is both once the library is preloaded; a bad value names
# what is accepted.  Environment (set by make check): MODE_PROBE,
# STARPU_FUSING_LIBRARY.
set -u
failures=0
check() { # DESCRIPTION EXPECTED_STATUS PATTERN MODE [PRELOAD]
	if [ -n "$4" ]; then set -- "$1" "$2" "$3" "STARPU_FUSING_MODE=$4" "${5:-}"; else set -- "$1" "$2" "$3" "-u STARPU_FUSING_MODE" "${5:-}"; fi
	# shellcheck disable=SC2086 # $4 is env's option or assignment
	output=$(env $4 STARPU_FUSING_STATS=1 LD_PRELOAD="${5:-}" timeout 120 "$MODE_PROBE" 2>&1)
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
check "the default mode runs ready-time fusion without the preload, and says so" 0 "mode: ready (the default, both, needs" ""
check "the default mode is both with the preload" 0 "mode: both" "" "$STARPU_FUSING_LIBRARY"
check "ready mode runs without the preload" 0 "" ready
check "a bad mode names the accepted values" 1 "STARPU_FUSING_MODE.*ready.*submission.*both" sideways
[ "$failures" = 0 ]
