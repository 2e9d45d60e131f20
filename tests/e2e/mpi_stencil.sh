#!/bin/sh
# StarPU-MPI under fusing on every rank: examples/mpi_stencil on 2 ranks of
# this machine, once with lws alone and once under fusing over lws (with
# STARPU_FUSING_HOLD=always, so that batches form).  Both runs must check
# their grid against the host computation and print the same checksum; each
# rank's fusing statistics must show fused stencil tasks.
# Skipped (77) when StarPU-MPI or mpirun is missing.
set -eu
program=${MPI_STENCIL:-examples/mpi_stencil/mpi_stencil}
if [ -z "${MPIRUN:-}" ] || [ ! -x "$program" ]; then
	echo "SKIP: StarPU-MPI or mpirun not found (Debian: apt-get install libopenmpi-dev openmpi-bin)"
	exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# One CPU worker per rank (2 ranks on a 2-core machine), no binding; root
# may run mpirun in containers, and more ranks than cores is allowed.
mpirun_options="-np 2 --oversubscribe --allow-run-as-root --mca btl self,vader -x STARPU_NCPU=1 -x STARPU_WORKERS_NOBIND=1 -x STARPU_SILENT=1"
arguments="-cells 48 -steps 150 -us 20"

# shellcheck disable=SC2086
"$MPIRUN" $mpirun_options -x STARPU_SCHED=lws "$program" $arguments > "$work/lws.out" 2> "$work/lws.err" ||
	{ cat "$work/lws.out" "$work/lws.err"; echo "FAIL: the stencil failed under lws"; exit 1; }
# shellcheck disable=SC2086
"$MPIRUN" $mpirun_options -x STARPU_SCHED=fusing -x STARPU_FUSING_HOLD=always -x STARPU_FUSING_STATS=1 \
	-x STARPU_FUSING_LIBRARY "$FUSING_LAUNCHER" "$program" $arguments > "$work/fusing.out" 2> "$work/fusing.err" ||
	{ cat "$work/fusing.out" "$work/fusing.err"; echo "FAIL: the stencil failed under fusing"; exit 1; }
cat "$work/lws.out" "$work/fusing.out"

expected=$(sed -n 's/.*checksum \([0-9]*\),.*ok$/\1/p' "$work/lws.out")
got=$(sed -n 's/.*checksum \([0-9]*\),.*ok$/\1/p' "$work/fusing.out")
if [ -z "$expected" ] || [ "$expected" != "$got" ]; then
	echo "FAIL: checksum under lws '$expected', under fusing '$got'"
	exit 1
fi
# The statistics line of each rank: "[starpu-fusing] mpi_stencil <submitted> <fused> ..."
ranks_with_batches=$(awk '$1 == "[starpu-fusing]" && $2 == "mpi_stencil" && $4 > 0' "$work/fusing.err" | wc -l)
grep '^\[starpu-fusing\] mpi_stencil' "$work/fusing.err" || true
if [ "$ranks_with_batches" != 2 ]; then
	echo "FAIL: expected fused stencil tasks on both ranks, found them on $ranks_with_batches"
	cat "$work/fusing.err"
	exit 1
fi
echo "PASS: same checksum ($got) under lws and fusing, tasks fused on both ranks"
