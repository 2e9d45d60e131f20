#!/bin/sh
# make stress: the synthetic-DAG suite and the API fuzzer (test_dag
# --programs dag and api) on many more seeds than make check, over several
# bases, both hold modes and 1 to 4 workers.
#
#   tests/dag/stress.sh [SEEDS]      (default 1000 seeds of each kind)
#   STRESS_PROGRAMS=api tests/dag/stress.sh 1000    (one kind only)
#   STRESS_WRAPPER="valgrind --error-exitcode=3" tests/dag/stress.sh 50
#
# Run it from a build configured with sanitizers to check the engine under
# them (doc/testing.md).  Exits non-zero when any seed fails; each failure
# prints its replay command.
set -u
# Submission-time fusion on, as in make check (tests/Makefile.inc).
STARPU_FUSING_MODE=${STARPU_FUSING_MODE:-both}
export STARPU_FUSING_MODE
seeds=${1:-1000}
dag=${TEST_DAG:-tests/test_dag}
wrapper=${STRESS_WRAPPER:-}
kinds=${STRESS_PROGRAMS:-dag api}
# A chunk still running after this many seconds counts as a hang
# (coreutils' timeout).
limit=${STRESS_TIMEOUT:-900}
# tests/test_dag is a libtool wrapper script: a tool like valgrind must be
# given the real program, which libtool's execute mode does.
if [ -n "$wrapper" ] && [ -n "${LIBTOOL:-}" ]; then
	wrapper="$LIBTOOL --mode=execute $wrapper"
fi
# Seeds go in chunks, each under one configuration.  The configurations
# (8 bases x 2 hold modes x 1 to 4 workers = 64) come in an order where every
# 16 consecutive chunks run each base in both hold modes, with two worker
# counts, and every 64 run each combination once; chunks are small enough
# (SEEDS / 16, from 10 to 50 seeds) that a run of a few hundred seeds covers
# the first 16.
chunk=$((seeds / 16))
[ "$chunk" -lt 10 ] && chunk=10
[ "$chunk" -gt 50 ] && chunk=50
failures=0
runs=0
first=1
while [ $((first)) -le "$seeds" ]; do
	count=$chunk
	[ $((first + count - 1)) -gt "$seeds" ] && count=$((seeds - first + 1))
	# Chunk index = base + 8 * hold + 16 * round: the worker count
	# (round + base + hold) mod 4 takes each value once per (base, hold)
	# over four rounds.
	index=$(( (first - 1) / chunk ))
	set -- eager lws dmda random ws prio dmdas modular-heft
	shift $((index % 8))
	base=$1
	hold_index=$(( (index / 8) % 2 ))
	round=$(( (index / 16) % 4 ))
	workers=$(( (round + index % 8 + hold_index) % 4 + 1 ))
	hold=always
	[ "$hold_index" = 1 ] && hold=when-busy
	for kind in $kinds; do
		# shellcheck disable=SC2086 # the wrapper is words by design
		output=$(timeout "$limit" $wrapper "$dag" --base "$base" --hold "$hold" --workers "$workers" --programs "$kind" --seeds "$first" "$count" 2>&1)
		status=$?
		summary=$(printf '%s\n' "$output" | grep "^$kind:" | tail -n 1)
		[ "$status" = 124 ] && summary="HUNG: still running after $limit s"
		echo "$kind seeds $first..$((first + count - 1)) base $base hold $hold workers $workers: ${summary:-no summary (exit $status)}"
		if [ "$status" != 0 ]; then
			printf '%s\n' "$output" | grep -E '^(FAIL|    |  replay)' | head -n 40
			failures=$((failures + 1))
		fi
		runs=$((runs + count))
	done
	first=$((first + count))
done
echo "stress: $runs seeds, $failures failing chunks"
[ "$failures" = 0 ]
