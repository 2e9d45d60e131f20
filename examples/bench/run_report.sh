#!/bin/sh
# The whole performance report behind `make report`: the full benchmark
# report (run_bench.sh -full: METG sweeps, StarPU's tasks_size_overhead, the
# convolution, cnn_training at DAHL's granularity and coarsened by hand, the
# layer's cost, wake-up paths, submission cost) and, when given a DAHL build
# and StarPU 1.4 builds, DAHL's basic_cnn at 28x28 (fashion-mnist files),
# 48x48 and 96x96 (DAHL_FACTICE_RANDOM=1) under the built-in policies on
# StarPU built as usual and with --enable-blocking-drivers, fusing's default
# and the kernel pack (examples/dahl/run_dahl.sh): seconds and CPU-seconds
# per epoch, losses.
#
#   examples/bench/run_report.sh [-out DIR] [-readme FILE]
#
# Writes DIR (default report-results): the CSV files and plots of every
# benchmark, then (write_report.sh) report.md and headline.md; -readme
# FILE is passed on to write_report.sh.
#
# Environment: what run_bench.sh reads (set by make report), and for DAHL:
#   DAHL_BASIC_CNN          DAHL's examples/basic_cnn, built against StarPU 1.4
#   DAHL_FASHION_MNIST      directory of train-images-idx3-ubyte and train-labels-idx1-ubyte
#   STARPU14_LIBDIR         lib directory of StarPU 1.4 built as usual
#   STARPU14_BLOCKING_LIBDIR  lib directory of StarPU 1.4 built with --enable-blocking-drivers
#   FUSING14_BUILD          a build tree of this project configured against STARPU14_LIBDIR's StarPU
# Without them the report says that DAHL was not run.  About 25 minutes on
# 2 cores with DAHL (measured 2026-12-07), 10 without.
set -eu
out=report-results
readme=
while [ $# -gt 0 ]; do
	case "$1" in
	-out) out=$2; shift 2 ;;
	-readme) readme=$2; shift 2 ;;
	*) echo "usage: $0 [-out DIR] [-readme FILE]" >&2; exit 2 ;;
	esac
done
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
started=$(date +%s)

# ------------------------------------------------------ the benchmark report
"$here/run_bench.sh" -full -out "$out"

# ----------------------------------------------------------------- DAHL
dahl_sizes="28 48 96"
dahl_configurations=eager,lws,ws,dmda,dmdas,default,default-kernel-pack,eager-blocking,lws-blocking,ws-blocking,dmda-blocking,dmdas-blocking
if [ -n "${DAHL_BASIC_CNN:-}" ] && [ -n "${DAHL_FASHION_MNIST:-}" ] && [ -n "${STARPU14_LIBDIR:-}" ] &&
	[ -n "${STARPU14_BLOCKING_LIBDIR:-}" ] && [ -n "${FUSING14_BUILD:-}" ]; then
	for size in $dahl_sizes; do
		echo "== DAHL basic_cnn at ${size}x$size" >&2
		# 28x28: the fashion-mnist files; larger: DAHL's random images.
		runs=3 data= images=DAHL_FACTICE_RANDOM=1
		if [ "$size" = 28 ]; then
			runs=5 data="-data $DAHL_FASHION_MNIST" images=
		fi
		# shellcheck disable=SC2086 # data and images are words by design
		env LD_LIBRARY_PATH="$STARPU14_LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" DAHL_IMG="$size" $images \
			FUSING_LAUNCHER="$FUSING14_BUILD/starpu-fusing-run" STARPU_FUSING_LIBRARY="$FUSING14_BUILD/.libs/libstarpu-fusing.so" \
			"$here/../dahl/run_dahl.sh" -runs "$runs" -epochs 4 $data -only "$dahl_configurations" \
			-blocking "$STARPU14_BLOCKING_LIBDIR" -out "$out/dahl-$size" "$DAHL_BASIC_CNN" > "$out/dahl-$size.md"
	done
fi

# ------------------------------------------------------------------ report
echo "$(( ($(date +%s) - started + 59) / 60 ))" > "$out/minutes"
"$here/write_report.sh" ${readme:+-readme "$readme"} "$out"
