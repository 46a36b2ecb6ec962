#!/usr/bin/env bash
# usage: bash tools/research/session-h200-2026-11-29/runner.sh XY STEP...  (XY: the Triton in .whlXY, or 36 for the
# machine's own), from the repository root; the session ran it as run3.sh
set -uo pipefail
xy=${1:?}; shift
if [ "$xy" != 36 ]; then T=/tmp/tv$xy; rm -rf $T; mkdir -p $T && (cat .whl$xy/t*.part.* | xz -d | tar -x -C $T); export PYTHONPATH=$T; [ "$xy" = 35 ] && cp -r tools/research/amd_backend_stub $T/triton/backends/amd; fi
. tools/research/records.sh
B=.lab/base.py; python3 .lab/solution_copies_base.py --solution $B .lab/copies_base > /dev/null
for step in "$@"; do case $step in
 auto) run check-auto python3 check.py --strict --seeds 1 --json "$(J check-auto)" ;;
 portable) run check-portable python3 check.py --strict --seeds 1 --solution copies/portable.py --json "$(J check-portable)" ;;
 bench-npe) run bench-native_per_element-vs-nvidia_per_element python3 bench.py --repeat 3 --route native_per_element --baseline solution.py --baseline-route nvidia_per_element --json "$(J bench-native_per_element-vs-nvidia_per_element)" ;;
 bench-mt) run bench-mthreads-vs-nvidia_per_element python3 bench.py --repeat 3 --solution copies/mthreads_settings.py --route native_per_element --baseline solution.py --baseline-route nvidia_per_element --json "$(J bench-mthreads-vs-nvidia_per_element)" ;;
 bench-native) run bench-native-vs-nvidia python3 bench.py --repeat 3 --route native --baseline solution.py --baseline-route nvidia --json "$(J bench-native-vs-nvidia)" ;;
 bench-auto-base) run bench-auto-vs-0c2c01e python3 bench.py --repeat 3 --baseline $B --json "$(J bench-auto-vs-0c2c01e)" ;;
 inst-pe) V='[{"route": "nvidia_per_element"}, {"route": "native_per_element", "solution": "'$B'", "label": "native_per_element 0c2c01e"},
 {"route": "native_per_element"}, {"route": "native_per_element", "solution": "copies/mthreads_settings.py", "label": "native_per_element mthreads launch"},
 {"route": "native_per_element", "solution": ".lab/copies_base/mthreads_settings.py", "label": "mthreads launch 0c2c01e"}]'
   run instructions python3 tools/research/dram_bytes.py --shapes 8192x4096 4096x2560 --variants "$V" --json "$(J instructions)" ;;
 inst-table) V='[{"route": "nvidia"}, {"route": "native"}, {"route": "native", "solution": "'$B'", "label": "native 0c2c01e"}, {"route": "nvidia_per_element"}, {"route": "native_per_element"}, {"route": "native_per_element", "solution": "'$B'", "label": "native_per_element 0c2c01e"}]'
   run instructions python3 tools/research/dram_bytes.py --shapes 8192x4096 4096x2560 --variants "$V" --json "$(J instructions)" ;;
 forced) for r in nvidia nvidia_per_element native native_per_element generic_per_element native_two_pass plain; do
   run check-route-$r python3 check.py --strict --seeds 1 --shapes benchmark --route $r --json "$(J check-route-$r)"; done ;;
 npe1) run check-route-native_per_element-1shape python3 check.py --strict --seeds 1 --shapes 1024x2560 --route native_per_element --json "$(J check-route-native_per_element-1shape)" ;;
 flush) run check-flushing-division python3 check.py --strict --seeds 1 --shapes 1024x2560 4096x4096 --solution copies/flushing_division.py --json "$(J check-flushing-division)" ;;
esac; done
tar -C "$OUT" -czf "$OUT/v-$tag-$(date +%s).tar.gz" v && rm -rf "$OUT/v"
