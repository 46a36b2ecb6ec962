#!/usr/bin/env bash
# The GPU runs of the redesign of solution.py (second session of 2026-12-01), through the device tool, from the
# repository root. usage: tools/research/session-h200-2026-12-01b/runner.sh XY STEP...
#   XY: 30, 31 or 35 (Triton from .whl/tXY0.part.*, packed by ../shared/tools/triton_parts.sh) or 36 (the machine's).
#   .lab/before.py: the release before the redesign (676ce27); .lab/commit: the commit of the working tree.
# Steps: strict (check.py --strict, automatic and portable), faults (every fault copy of tools/solution_copies.py,
# check.py --strict at 1024x2560, fault_later_tiles at 4096x4096 (a persistent program's second tile), eight at once), cheats (check.py's host-computed-output copies, on
# the GPU), bench-auto and bench-npe (bench.py --repeat 3 against .lab/before.py, automatic; native_per_element on
# both), native-vs-npe (bench.py --repeat 3, route native against native_per_element, one file), host
# (tools/host_time.py, three routes, both files), cold (tools/cold_start.py --runs 2, both files).
# Records land in $OUT/v, packed into one tarball at the end.
set -uo pipefail
xy=${1:?}; shift
. tools/research/triton_xy.sh
. tools/research/records.sh
commit=$(cat .lab/commit); before=$(cat .lab/before_commit)
for step in "$@"; do case $step in
 strict) strict_checks ;;
 faults) ls copies/fault_*.py copies/flushing_division.py | xargs -P 8 -I{} sh -c \
     'n=$(basename {} .py); s=1024x2560; [ $n = fault_later_tiles ] && s=4096x4096; \
      { echo "# check.py --strict --seeds 1 --shapes $s --solution {}"; \
      timeout 300 python3 check.py --strict --seeds 1 --shapes $s --solution {} \
      --json "$OUT/v/$n-'$tag'.json"; echo "# exit $?"; } > "$OUT/v/$n-'$tag'.txt" 2>&1'
   for f in "$OUT"/v/fault_*-$tag.txt "$OUT"/v/flushing_division-$tag.txt; do
     echo "== $(basename $f .txt): $(grep -m1 '^route:' $f), $(grep -c ': left:' $f) left, $(grep -cE ': (PASS|FAIL)' $f) shapes, $(grep -cE ': FAIL' $f) FAIL; $(tail -1 $f)"; done ;;
 cheats) run cheats python3 -m pytest -q -p no:cacheprovider tests/test_check.py -k "host or strided" ;;
 bench-auto) run bench-auto-vs-$before python3 bench.py --repeat 3 --baseline .lab/before.py --json "$(J bench-auto-vs-$before)" ;;
 bench-npe) run bench-npe-vs-$before python3 bench.py --repeat 3 --route native_per_element --baseline .lab/before.py --baseline-route native_per_element --json "$(J bench-npe-vs-$before)" ;;
 native-vs-npe) run native-vs-npe python3 bench.py --repeat 3 --route native --baseline solution.py --baseline-route native_per_element --json "$(J native-vs-npe)" ;;
 host) for r in "" nvidia_per_element native_per_element; do for sol in solution.py .lab/before.py; do
     c=$commit; [ $sol = .lab/before.py ] && c=$before
     run host-${r:-auto}-$c python3 tools/host_time.py --solution $sol ${r:+--route $r} --label $c --json "$OUT/v/host-$tag.json"; done; done ;;
 cold) run cold-$commit python3 tools/cold_start.py --runs 2
   run cold-$before python3 tools/cold_start.py --runs 2 --solution .lab/before.py ;;
esac; done
tar -C "$OUT" -czf "$OUT/v-$tag-$(date +%s).tar.gz" v && rm -rf "$OUT/v"
