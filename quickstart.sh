#!/bin/sh
# One-command set-up for a fresh Debian 12 machine, then one action:
#   ./quickstart.sh demo    install missing Debian packages, build, run the demonstration
#   ./quickstart.sh check   install missing Debian packages, build, run the whole test suite
#   ./quickstart.sh bench   install missing Debian packages, build, run the quick performance report
set -eu
cd "$(dirname "$0")"

packages="g++ make autoconf automake libtool pkg-config libstarpu-dev starpu-examples
libhwloc-dev libnuma-dev libcmocka-dev libffi-dev libopenblas-dev gnuplot-nox
libopenmpi-dev openmpi-bin"

missing=""
for package in $packages; do
	dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing="$missing $package"
done
if [ -n "$missing" ]; then
	echo "Installing Debian packages:$missing"
	sudo=""
	[ "$(id -u)" = 0 ] || sudo=sudo
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $missing
fi

[ -x configure ] || autoreconf -fi
[ -f Makefile ] || ./configure
make -j"$(nproc)"

case "${1:-}" in
demo) make demo ;;
bench) make bench ;;
check)
	# Automake prints one line per test; on failure show the failing logs,
	# and close with one summary line either way.
	status=0
	make -j"$(nproc)" check >check-output.log 2>&1 || status=$?
	grep -E '^(PASS|FAIL|SKIP|XFAIL|XPASS|ERROR):' check-output.log || true
	if [ "$status" != 0 ]; then
		# A build error stops make check before any test log exists.
		if [ -f test-suite.log ]; then cat test-suite.log; else tail -n 60 check-output.log; fi
	fi
	count() { sed -n "s/^# $1: *//p" check-output.log | tail -n 1; }
	echo "check: $(count PASS) passed, $(( $(count FAIL) + $(count ERROR) + $(count XPASS) )) failed, $(count SKIP) skipped"
	exit "$status"
	;;
*) echo "usage: $0 demo|check|bench" >&2; exit 2 ;;
esac
