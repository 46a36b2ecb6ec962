#!/usr/bin/env bash
# The GPU runs of the thirteenth session (2026-11-28, an H200), one device call a part, from the repository root with
# $OUT set by the device tool (records.sh: run, J, the copies).
#
#   bash tools/research/session_h200.sh k   # y kept between the two-pass kernels: the automatic route and the
#                                           # portable copy strict; the two-pass rungs forced, strict on the benchmark
#                                           # shapes; the handoff's fault copies; bench against the nvidia route; bytes
#   PYTHONPATH=/tmp/t bash tools/research/session_h200.sh p   # another Triton: the same, against nvidia_per_element
set -uo pipefail
part=${1:?usage: session_h200.sh k|p}
case $part in k|p) ;; *) echo "unknown part $part: expected k or p"; exit 2 ;; esac
. tools/research/records.sh
strict_checks
for route in native_two_pass plain; do
  run "check-route-$route" python3 check.py --strict --seeds 1 --shapes benchmark --route "$route" \
    --json "$(J "check-route-$route")"; done
if [ "$part" = k ]; then
  for fault in y_not_kept y_tail_unwritten; do  # expected: the two-pass rungs left, the next rung's bytes
    run "check-fault-$fault" python3 check.py --strict --seeds 1 --shapes 1024x2560 4096x4096 \
      --solution "copies/fault_$fault.py" --json "$(J "check-fault-$fault")"; done
  baseline=nvidia
else
  baseline=nvidia_per_element
fi
for route in native_two_pass plain; do
  run "bench-$route-vs-$baseline" python3 bench.py --repeat 3 --route "$route" --baseline solution.py \
    --baseline-route "$baseline" --json "$(J "bench-$route-vs-$baseline")"; done
[ "$part" = k ] && run dram python3 tools/research/dram_bytes.py --shapes 8192x4096 4096x2560 --json "$(J dram)" \
  --variants '[{"route": "nvidia"}, {"route": "native_two_pass"}, {"route": "plain"}]'
tar -C "$OUT" -czf "$OUT/v-$part-$tag.tar.gz" v && rm -rf "$OUT/v"
