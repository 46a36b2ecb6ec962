#!/usr/bin/env bash
# The GPU runs of the session of 2026-12-02, through the device tool, from the repository root.
# usage: tools/research/session-h200-2026-12-02/runner.sh XY STEP...
#   XY: 30, 31 or 35 (Triton from .whl/tXY0.part.*, packed by ../shared/tools/triton_parts.sh) or 36 (the machine's).
#   .lab/before.py: the landed release this session starts from (.lab/before_commit); .lab/commit: the working tree's.
# Steps: children (tools/research/compile_children_scenario.py, portable and native_per_element, 10 runs each),
# profile (the host path part by part, automatic and native_per_element), and the steps of the 2026-12-01b runner
# (strict, faults, cheats, bench-auto, bench-npe, host, cold), which this one runs after the Triton is unpacked.
set -uo pipefail
xy=${1:?}; shift
if [ "$xy" != 36 ]; then T=/tmp/tv$xy; rm -rf $T; mkdir -p $T && (cat .whl/t${xy}0.part.* | xz -d | tar -x -C $T)
  export PYTHONPATH=$T; [ "$xy" = 35 ] && cp -r tools/research/amd_backend_stub $T/triton/backends/amd; fi
. tools/research/records.sh
commit=$(cat .lab/commit)
S=tools/research/compile_children_scenario.py
P=tools/research/session-h200-2026-12-01/host_profile.py
rest=()
for step in "$@"; do case $step in
 children) run children-portable python3 $S --solution copies/portable.py --runs 10 --parallel 8 --label portable --commit $commit --json "$OUT/v/children-$tag.json"
   run children-npe python3 $S --route native_per_element --runs 10 --parallel 8 --label "native_per_element forced" --commit $commit --json "$OUT/v/children-$tag.json" ;;
 profile) for r in "" native_per_element; do for sol in solution.py .lab/before.py; do
     run profile-${r:-auto}-$(basename $sol .py) python3 $P --solution $sol ${r:+--route $r}; done; done ;;
 *) rest+=("$step") ;;
esac; done
if [ ${#rest[@]} -gt 0 ]; then tar -C "$OUT" -czf "$OUT/v-$tag-pre-$(date +%s).tar.gz" v && rm -rf "$OUT/v"
  xy=36 bash tools/research/session-h200-2026-12-01b/runner.sh 36 "${rest[@]}"; exit; fi
tar -C "$OUT" -czf "$OUT/v-$tag-$(date +%s).tar.gz" v && rm -rf "$OUT/v"
