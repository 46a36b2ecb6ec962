#!/usr/bin/env bash
# usage: bash tools/research/session-h200-2026-11-29b/runner.sh XY STEP...  (XY: the Triton in .whlXY, or 36 for the
# machine's own), from the repository root; the session ran it as gpu2.sh. Baseline: .lab/base.py.
set -uo pipefail
xy=${1:?}; shift
if [ "$xy" != 36 ]; then T=/tmp/tv$xy; rm -rf $T; mkdir -p $T && (cat .whl$xy/t*.part.* | xz -d | tar -x -C $T); export PYTHONPATH=$T; [ "$xy" = 35 ] && cp -r tools/research/amd_backend_stub $T/triton/backends/amd; fi
. tools/research/records.sh
B=.lab/base.py
for step in "$@"; do case $step in
 auto) run check-auto python3 check.py --strict --seeds 1 --json "$(J check-auto)" ;;
 portable) run check-portable python3 check.py --strict --seeds 1 --solution copies/portable.py --json "$(J check-portable)" ;;
 bench-npe) run bench-native_per_element-vs-nvidia_per_element python3 bench.py --repeat ${REPEAT:-3} --route native_per_element --baseline solution.py --baseline-route nvidia_per_element --json "$(J bench-native_per_element-vs-nvidia_per_element)" ;;
 bench-npe-base) run bench-native_per_element-vs-base python3 bench.py --repeat ${REPEAT:-3} --route native_per_element --baseline $B --baseline-route native_per_element --json "$(J bench-native_per_element-vs-base)" ;;
 bench-mt) run bench-mthreads-vs-nvidia_per_element python3 bench.py --repeat ${REPEAT:-3} --solution copies/mthreads_settings.py --route native_per_element --baseline solution.py --baseline-route nvidia_per_element --json "$(J bench-mthreads-vs-nvidia_per_element)" ;;
 inst) V='[{"route": "nvidia_per_element"}, {"route": "native_per_element", "solution": "'$B'", "label": "native_per_element base"},
 {"route": "native_per_element"}, {"route": "native_per_element", "num_warps": 4, "chunk": 16, "y_chunk": 32, "label": "mthreads launch"},
 {"route": "native_per_element", "solution": "'$B'", "num_warps": 4, "chunk": 16, "y_chunk": 32, "label": "mthreads launch base"}]'
   run instructions python3 tools/research/dram_bytes.py --shapes 8192x4096 4096x2560 --variants "$V" --json "$(J instructions)" ;;
 forced) for r in native native_per_element native_two_pass; do
   run check-route-$r python3 check.py --strict --seeds 1 --shapes benchmark --route $r --json "$(J check-route-$r)"; done ;;
 npe1) run check-route-native_per_element-1shape python3 check.py --strict --seeds 1 --shapes 1024x2560 --route native_per_element --json "$(J check-route-native_per_element-1shape)" ;;
 flush) run check-flushing-division python3 check.py --strict --seeds 1 --shapes 1024x2560 4096x4096 --solution copies/flushing_division.py --json "$(J check-flushing-division)" ;;
esac; done
grep -h "taken\|IEEE form\|left" $OUT/v/check-*.txt 2>/dev/null | sort | uniq -c | head -20
tar -C "$OUT" -czf "$OUT/v-$tag-$(date +%s).tar.gz" v && rm -rf "$OUT/v"
