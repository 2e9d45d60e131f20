#!/bin/sh
# The CNN training example in the performance report: training time of
# examples/cnn_training at DAHL's granularity (one task per sample and
# filter) and coarsened by hand (one task per sample), under eager, lws,
# dmda, fusing (over lws, with and without the kernel pack) and fusing over
# dmda, all runs of a round interleaved; medians over rounds.
#
#   run_cnn.sh [-quick] [-reps N] -out DIR    writes DIR/cnn.csv, prints Markdown
# Environment: FUSING_LAUNCHER, CNN_TRAINING.
set -eu
reps=1
args=""
out=.
while [ $# -gt 0 ]; do
	case "$1" in
	-quick) args="-samples 256 -epochs 1"; shift ;;
	-reps) reps=$2; shift 2 ;;
	-out) out=$2; shift 2 ;;
	*) echo "usage: $0 [-quick] [-reps N] -out DIR" >&2; exit 2 ;;
	esac
done
launcher=${FUSING_LAUNCHER:-./starpu-fusing-run}
program=${CNN_TRAINING:-examples/cnn_training/cnn_training}
# label, STARPU_SCHED, STARPU_FUSING_BASE, STARPU_FUSING_MODE (fusing only);
# and fusing without the kernel pack (STARPU_FUSING_KERNELS=off), which runs
# the example's convolution at DAHL's granularity otherwise.
policies="$(cat "$(cd "$(dirname "$0")" && pwd)/../bench/policies")
fusing-no-kernels fusing lws ready"
runs="$out/cnn_runs.csv"
echo "policy,granularity,seconds,in_batches" > "$runs"
for round in $(seq "$reps"); do
	for granularity in fine sample; do
		echo "$policies" | while read -r label sched base fusing_mode; do
			# shellcheck disable=SC2086 # args are words by design
			kernels=auto
			case "$label" in *-no-kernels) kernels=off ;; esac
			result=$(STARPU_SCHED=$sched STARPU_FUSING_BASE=$base STARPU_FUSING_MODE=$fusing_mode STARPU_FUSING_KERNELS=$kernels \
				"$launcher" "$program" $args -g "$granularity" 2>/dev/null)
			echo "$result" | grep -q "^check against the host: .*: OK$" || { echo "cnn_training failed its check under $label" >&2; exit 1; }
			seconds=$(echo "$result" | sed -n 's/^time: \([0-9.]*\) s.*/\1/p')
			batched=$(echo "$result" | sed -n 's/^tasks submitted: [0-9]*, in batches of starpu-fusing: \([0-9]*\) .*/\1/p')
			echo "$label,$granularity,$seconds,$batched" >> "$runs"
		done
	done
done
awk -F, 'NR > 1 {
	key = $1 "," $2
	if (!(key in n)) order[++keys] = key
	v[key, ++n[key]] = $3
}
END {
	print "policy,granularity,seconds"
	for (k = 1; k <= keys; k++) {
		key = order[k]; m = n[key]
		for (i = 1; i <= m; i++) s[i] = v[key, i]
		for (i = 2; i <= m; i++) for (j = i; j > 1 && s[j - 1] > s[j]; j--) { t = s[j]; s[j] = s[j - 1]; s[j - 1] = t }
		printf "%s,%.3f\n", key, s[int((m + 1) / 2)]
	}
}' "$runs" > "$out/cnn.csv"
# shellcheck disable=SC2086
header=$("$program" $args -epochs 1 -samples 64 2>/dev/null | head -n 1 | sed 's/^cnn_training: //; s/64 images/images/; s/, [^,]* granularity//')
echo "Training time (s) of \`cnn_training $args\` ($header; medians of $reps round(s)):"
echo
echo "| policy | DAHL's granularity (per sample and filter) | coarsened by hand (per sample) |"
echo "|---|---|---|"
awk -F, 'NR > 1 { v[$1, $2] = $3; if (!($1 in seen)) { seen[$1] = 1; order[++n] = $1 } }
	END { for (i = 1; i <= n; i++) printf "| %s | %s | %s |\n", order[i], v[order[i], "fine"], v[order[i], "sample"] }' "$out/cnn.csv"
