#!/bin/sh
# Runs StarPU's own test programs (the tests/ directory of a StarPU build
# tree, after `make -C tests check TESTS=` built them) under a base policy
# alone and under fusing over that base in both hold modes, and prints two
# Markdown tables: how many programs had each outcome in each configuration,
# and one row per test whose outcome differs between the base and fusing.  Not part of make check: it needs a StarPU
# build tree, which this project never builds nor ships.
#
#   run_starpu_suite.sh STARPU_BUILD_DIR [BASE] [SECONDS]
#     BASE: the base policy (default eager); SECONDS: timeout per run (60).
# Environment: STARPU_FUSING_LIBRARY (the library built for that StarPU),
# LD_LIBRARY_PATH so that the tests find that StarPU.
# Outcomes: pass (exit 0), skip (77), timeout (killed after SECONDS), or
# the exit status.  Tests run with 2 CPU workers (STARPU_NCPU=2).
set -u
build=$1
base=${2:-eager}
seconds=${3:-60}
library=${STARPU_FUSING_LIBRARY:?set STARPU_FUSING_LIBRARY}
tests_dir="$build/tests"
list=$(mktemp)
trap 'rm -f "$list"' EXIT
# The TESTS variable of StarPU's tests/Makefile, programs only: its .sh
# scripts set policies themselves.
printf 'include Makefile\nprint-tests:\n\t@echo $(TESTS)\n' | make -s -C "$tests_dir" -f - print-tests 2>/dev/null |
	tr ' ' '\n' | grep -v '^$' | grep -v '\.sh$' > "$list"

outcome() { # COMMAND...: pass, skip, timeout or the exit status
	timeout "$seconds" "$@" >/dev/null 2>&1
	status=$?
	case "$status" in
	0) echo pass ;;
	77) echo skip ;;
	124) echo timeout ;;
	*) echo "exit $status" ;;
	esac
}

differences=$(mktemp) outcomes=$(mktemp)
trap 'rm -f "$list" "$differences" "$outcomes"' EXIT
total=0
while read -r test; do
	program="$tests_dir/$(dirname "$test")/.libs/$(basename "$test")"
	[ -x "$program" ] || program="$tests_dir/$test"
	[ -x "$program" ] || continue
	total=$((total + 1))
	here="$tests_dir/$(dirname "$test")"
	alone=$(cd "$here" && STARPU_NCPU=2 STARPU_SCHED=$base outcome "$program")
	busy=$(cd "$here" && STARPU_NCPU=2 STARPU_SCHED=fusing STARPU_FUSING_BASE=$base \
		STARPU_SCHED_LIB="$library" LD_PRELOAD="$library" outcome "$program")
	always=$(cd "$here" && STARPU_NCPU=2 STARPU_SCHED=fusing STARPU_FUSING_BASE=$base STARPU_FUSING_HOLD=always \
		STARPU_SCHED_LIB="$library" LD_PRELOAD="$library" outcome "$program")
	printf '%s\t%s\t%s\n' "$alone" "$busy" "$always" >> "$outcomes"
	if [ "$alone" != "$busy" ] || [ "$alone" != "$always" ]; then
		echo "| $test | $alone | $busy | $always |" >> "$differences"
	fi
done < "$list"

echo "$total programs, ${seconds} s each at most, 2 CPU workers:"
echo
echo "| outcome | $base | fusing over $base (hold when busy) | fusing over $base (hold always) |"
echo "|---|---|---|---|"
awk -F'\t' '{ for (c = 1; c <= 3; c++) { n[$c, c]++; if (!($c in seen)) { seen[$c] = 1; order[++k] = $c } } }
	END { for (i = 1; i <= k; i++) printf "| %s | %d | %d | %d |\n", order[i], n[order[i], 1], n[order[i], 2], n[order[i], 3] }' "$outcomes"
echo
echo "Programs whose outcome differs: $(wc -l < "$differences")"
if [ -s "$differences" ]; then
	echo
	echo "| test | $base | fusing over $base (hold when busy) | fusing over $base (hold always) |"
	echo "|---|---|---|---|"
	cat "$differences"
fi
