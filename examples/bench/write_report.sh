#!/bin/sh
# Writes the report of a run of run_report.sh from its files, measuring
# nothing: DIR/headline.md (the headline table), DIR/dahl.png and .svg (when
# DAHL was run) and DIR/report.md (dated, naming the machine, the commit and
# the StarPU versions; the headline first, then every section).
#
#   examples/bench/write_report.sh [-readme FILE] DIR
#
# With -readme, the lines of FILE between "<!-- report:headline -->" and
# "<!-- report:end -->" are replaced by the headline table, so that the
# README's figures are this run's.  Environment: STARPU_PKG,
# STARPU14_LIBDIR (for the versions named).
set -eu
readme=
while [ $# -gt 1 ]; do
	case "$1" in
	-readme) readme=$2; shift 2 ;;
	*) break ;;
	esac
done
if [ $# -ne 1 ] || [ ! -d "$1" ]; then
	echo "usage: $0 [-readme FILE] DIR (a directory written by run_report.sh)" >&2
	exit 2
fi
out=$(cd "$1" && pwd)
dahl_sizes="28 48 96"
dahl_ran=no
[ -f "$out/dahl-28/dahl_runs.csv" ] && dahl_ran=yes

# dahl_medians SIZE: "configuration seconds cpu_seconds main_thread_seconds"
# per configuration, medians over runs of each run's mean epoch (epochs 1
# and later), from run_dahl.sh's CSV.
dahl_medians() {
	awk -F, 'NR > 1 && $3 > 0 {
		key = $1 SUBSEP $2; s[key] += $4; c[key] += $7; m[key] += $8; e[key]++
		if (!($1 in seen)) { seen[$1] = 1; order[++n] = $1 }
		if ($2 > rounds[$1]) rounds[$1] = $2
	}
	function median(a, k,   i, j, t) {
		for (i = 2; i <= k; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
		return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
	}
	END {
		for (i = 1; i <= n; i++) {
			x = order[i]; k = 0
			for (r = 1; r <= rounds[x]; r++) if ((x, r) in e) { k++; vs[k] = s[x, r] / e[x, r]; vc[k] = c[x, r] / e[x, r]; vm[k] = m[x, r] / e[x, r] }
			printf "%s %.4f %.4f %.4f\n", x, median(vs, k), median(vc, k), median(vm, k)
		}
	}' "$out/dahl-$1/dahl_runs.csv"
}

# ------------------------------------------------------------ headline table
# Every figure from this run's files.  Ratios are fusing's over the
# reference named in the row.
{
	echo "| what (this machine, this run) | reference | fusing's default | fusing / reference |"
	echo "|---|---|---|---|"
	if [ "$dahl_ran" = yes ]; then
		for size in $dahl_sizes; do
			dahl_medians "$size" > "$out/dahl-$size/medians.txt"
			awk -v size="$size" '
				{ s[$1] = $2; c[$1] = $3 }
				$1 !~ /^default/ && (best == "" || $2 < s[best]) { best = $1 }
				END {
					what = size == 28 ? "DAHL basic_cnn 28x28 (fashion-mnist), s per epoch" : "DAHL basic_cnn " size "x" size " (random images), s per epoch"
					printf "| %s | %s %.3f | %.3f | %.2fx |\n", what, best, s[best], s["default"], s["default"] / s[best]
					printf "| same, with `STARPU_FUSING_KERNELS=auto` (the kernel pack) | %s %.3f | %.3f | %.2fx |\n", best, s[best],
						s["default-kernel-pack"], s["default-kernel-pack"] / s[best]
					if (size == 28)
						printf "| same, CPU-seconds per epoch (process) | %s %.3f | %.3f | %.2fx |\n", best, c[best], c["default"], c["default"] / c[best]
				}' "$out/dahl-$size/medians.txt"
		done
	fi
	# cnn_training: medians per policy and granularity (run_cnn.sh).
	awk -F, 'NR > 1 { t[$1, $2] = $3 }
		END {
			printf "| cnn_training at DAHL'"'"'s granularity, s | lws %.3f | %.3f | %.2fx |\n", t["lws", "fine"], t["fusing-both", "fine"], t["fusing-both", "fine"] / t["lws", "fine"]
			printf "| cnn_training coarsened by hand, s | lws %.3f | %.3f | %.2fx |\n", t["lws", "sample"], t["fusing-both", "sample"], t["fusing-both", "sample"] / t["lws", "sample"]
		}' "$out/cnn.csv"
	# Independent 10 us tasks (the sweep): efficiency, and the throughput
	# ratio (the inverse of the time ratio).
	awk -F, 'NR > 1 && $2 == "independent" && $3 == 10 { s[$1] = $6; e[$1] = $7 }
		END { printf "| independent 10 us tasks: efficiency (throughput ratio) | lws %.2f | %.2f | %.2fx |\n", e["lws"], e["fusing-both"], s["lws"] / s["fusing-both"] }' "$out/sweep.csv"
	awk -F, 'NR > 1 { m[$1, $2] = $3 }
		END {
			printf "| METG(50%%), independent tasks, us | lws %s | %s | %s |\n", m["lws", "independent"], m["fusing-both", "independent"],
				(m["lws", "independent"] + 0 > 0 && m["fusing-both", "independent"] + 0 > 0) ? sprintf("%.2fx", m["fusing-both", "independent"] / m["lws", "independent"]) : "-"
			printf "| METG(50%%), 16-wide stencil, us | lws %s | %s | %s |\n", m["lws", "stencil"], m["fusing-both", "stencil"],
				(m["lws", "stencil"] + 0 > 0 && m["fusing-both", "stencil"] + 0 > 0) ? sprintf("%.2fx", m["fusing-both", "stencil"] / m["lws", "stencil"]) : "-"
		}' "$out/metg.csv"
	# Submission cost: the program thread's CPU per task, medians.
	awk -F, 'NR > 1 { v[$1, $2, ++n[$1, $2]] = $4 }
		function med(c, k,   i, j, t, a, m) {
			m = n[c, k]; for (i = 1; i <= m; i++) a[i] = v[c, k, i]
			for (i = 2; i <= m; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
			return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
		}
		END {
			printf "| submitting thread, CPU us per deferred task (RW chains) | lws %.2f | %.2f | %.2fx |\n", med("chains", "base"), med("chains", "fusing"), med("chains", "fusing") / med("chains", "base")
			printf "| submitting thread, CPU us per task not deferred (excluded codelet) | lws %.2f | %.2f | %.2fx |\n", med("excluded", "base"), med("excluded", "fusing"), med("excluded", "fusing") / med("excluded", "base")
		}' "$out/submission_cost.csv"
	# Wake-up paths: the slowest path against the base.
	awk -F, 'NR > 1 { v[$1, $2, ++n[$1, $2]] = $4; if (!($1 in seen)) { seen[$1] = 1; path[++p] = $1 } }
		function med(c, k,   i, j, t, a, m) {
			m = n[c, k]; for (i = 1; i <= m; i++) a[i] = v[c, k, i]
			for (i = 2; i <= m; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
			return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
		}
		END {
			for (i = 1; i <= p; i++) { r = med(path[i], "fusing") / med(path[i], "base"); if (r > worst) { worst = r; which = path[i] } }
			printf "| waking an idle worker, slowest of %d paths (%s), us per link | lws %.1f | %.1f | %.2fx |\n", p, which, med(which, "base"), med(which, "fusing"), worst
		}' "$out/wakeup_paths.csv"
} > "$out/headline.md"

# ------------------------------------------------------------ DAHL picture
if [ "$dahl_ran" = yes ] && command -v gnuplot >/dev/null; then
	{
		echo 'size "best built-in, StarPU as built by default" "best built-in, StarPU with blocking drivers" "fusing (default)" "fusing, kernel pack on"'
		for size in $dahl_sizes; do
			awk -v size="$size" '{ s[$1] = $2 }
				$1 !~ /^default/ && $1 !~ /-blocking$/ && (u == "" || $2 < s[u]) { u = $1 }
				$1 ~ /-blocking$/ && (b == "" || $2 < s[b]) { b = $1 }
				END { printf "\"%sx%s\" %.4f %.4f %.4f %.4f\n", size, size, 1.0, s[b] / s[u], s["default"] / s[u], s["default-kernel-pack"] / s[u] }' \
				"$out/dahl-$size/medians.txt"
		done
	} > "$out/dahl_bars.dat"
	for terminal in "pngcairo size 900,500" "svg size 900,500"; do
		extension=png
		[ "${terminal%% *}" = svg ] && extension=svg
		printf 'set terminal %s\nset output "%s"\n%s\n' "$terminal" "$out/dahl.$extension" "set title \"DAHL basic_cnn, StarPU 1.4: epoch time / best built-in policy (lower is better)\" noenhanced
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set yrange [0:1.25]
set key outside below
set ylabel \"epoch time / best built-in's\"
set xlabel \"image size\"
set grid ytics
plot \"$out/dahl_bars.dat\" using 2:xtic(1) title columnheader(2), '' using 3 title columnheader(3), '' using 4 title columnheader(4), '' using 5 title columnheader(5)" | gnuplot
	done
fi

# ------------------------------------------------------------------ report
minutes=$(cat "$out/minutes" 2>/dev/null || echo "?")
# The commit measured: recorded by run_bench.sh when the run began, not
# the one checked out now.
commit=$(awk -F'|' '$2 ~ /starpu-fusing/ { gsub(/ /, "", $3); print $3 }' "$out/machine.md" 2>/dev/null)
[ -n "$commit" ] || commit=unknown
starpu14_version=unknown
if [ -n "${STARPU14_LIBDIR:-}" ]; then
	starpu14_version=$(PKG_CONFIG_PATH="$STARPU14_LIBDIR/pkgconfig" pkg-config --modversion starpu-1.4 2>/dev/null || echo unknown)
fi
{
	echo "# starpu-fusing: performance report of $(date -u '+%Y-%m-%d')"
	echo
	echo "Command: \`make report\` ($minutes min), commit $commit (as the run began)."
	echo "Every figure was measured in this run, the configurations of each benchmark interleaved."
	echo "StarPU: $(pkg-config --modversion "${STARPU_PKG:-starpu-1.3}" 2>/dev/null || echo unknown) (Debian) for the benchmarks,"
	echo "$starpu14_version built by hand (as usual, and with \`--enable-blocking-drivers\`) for DAHL."
	echo
	echo "## Headline"
	echo
	cat "$out/headline.md"
	echo
	[ -f "$out/dahl.png" ] && { echo "![DAHL epoch time per policy and image size](dahl.png)"; echo; }
	if [ "$dahl_ran" = yes ]; then
		echo "## DAHL basic_cnn (StarPU $starpu14_version)"
		echo
		echo "DAHL's own training program, unmodified (examples/dahl/run_dahl.sh): 4 epochs per run, the"
		echo "mean of epochs 1-3 per run, medians over interleaved runs (5 at 28x28, 3 above). \`NAME-blocking\`:"
		echo "the built-in policy on StarPU built with \`--enable-blocking-drivers\` (same DAHL binary)."
		echo "\`default\`: fusing unconfigured (kernel pack off); \`default-kernel-pack\`: \`STARPU_FUSING_KERNELS=auto\`."
		for size in $dahl_sizes; do
			echo
			echo "### ${size}x$size"
			echo
			cat "$out/dahl-$size.md"
		done
		echo
	else
		echo "DAHL was not run (set DAHL_BASIC_CNN, DAHL_FASHION_MNIST, STARPU14_LIBDIR, STARPU14_BLOCKING_LIBDIR and FUSING14_BUILD)."
		echo
	fi
	# The benchmark report, its title and command line left out.
	sed '1,/^Command:/d' "$out/summary.md" | sed '1,/^$/d' | sed 's/^## /## /'
} > "$out/report.md"

if [ -n "$readme" ]; then
	awk -v table="$out/headline.md" '
		/<!-- report:headline -->/ { print; while ((getline line < table) > 0) print line; skipping = 1; next }
		/<!-- report:end -->/ { skipping = 0 }
		!skipping' "$readme" > "$readme.new" && mv "$readme.new" "$readme"
fi
echo "wrote $out/report.md ($minutes min)" >&2
