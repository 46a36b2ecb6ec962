#!/usr/bin/env bash
# The GPU runs of the session of 2026-12-01 (compile children, host path), through the device tool, from the repository
# root. usage: tools/research/session-h200-2026-12-01/runner.sh XY STEP...
#   XY: 30, 31 or 35 (Triton from .whl/tXY0.part.*, packed by ../shared/tools/triton_parts.sh) or 36 (the machine's).
#   .lab/base.py: the release before the change (d1e91f9); .lab/commit: the commit of the working tree.
# Records land in $OUT/v, packed into one tarball at the end.
set -uo pipefail
xy=${1:?}; shift
if [ "$xy" != 36 ]; then T=/tmp/tv$xy; rm -rf $T; mkdir -p $T && (cat .whl/t${xy}0.part.* | xz -d | tar -x -C $T)
  export PYTHONPATH=$T; [ "$xy" = 35 ] && cp -r tools/research/amd_backend_stub $T/triton/backends/amd; fi
. tools/research/records.sh
python3 tools/solution_copies.py copies-base --solution .lab/base.py > /dev/null
commit=$(cat .lab/commit)
S=tools/research/compile_children_scenario.py
for step in "$@"; do case $step in
 children) run children-portable python3 $S --solution copies/portable.py --runs 10 --parallel 8 --label portable --commit $commit --json "$OUT/v/children-$tag.json"
   run children-npe python3 $S --route native_per_element --runs 10 --parallel 8 --label "native_per_element forced" --commit $commit --json "$OUT/v/children-$tag.json" ;;
 children-auto) run children-auto python3 $S --runs 10 --parallel 8 --label automatic --commit $commit --json "$OUT/v/children-$tag.json" ;;
 children-base) run children-base python3 $S --solution copies-base/portable.py --runs 2 --parallel 2 --label "portable (d1e91f9)" --commit d1e91f9 --json "$OUT/v/children-base-$tag.json" ;;
 host) for r in "" nvidia_per_element native_per_element; do for sol in solution.py .lab/base.py; do
     c=$commit; [ $sol = .lab/base.py ] && c=d1e91f9
     run host-${r:-auto}-$c python3 tools/host_time.py --solution $sol ${r:+--route $r} --label $c --json "$OUT/v/host-$tag.json"; done; done ;;
 profile) for r in "" native_per_element; do run profile-${r:-auto} python3 tools/research/session-h200-2026-12-01/host_profile.py ${r:+--route $r}; done ;;
 abort) run abort python3 -m pytest -q -p no:cacheprovider tests/test_compile_failures.py ;;
 strict) strict_checks ;;
 cold) run cold-$commit python3 tools/cold_start.py --runs 2
   run cold-d1e91f9 python3 tools/cold_start.py --runs 2 --solution .lab/base.py ;;
 bench-auto) run bench-auto-vs-d1e91f9 python3 bench.py --repeat 3 --baseline .lab/base.py --json "$(J bench-auto-vs-d1e91f9)" ;;
 bench-npe) run bench-npe-vs-d1e91f9 python3 bench.py --repeat 3 --route native_per_element --baseline .lab/base.py --baseline-route native_per_element --json "$(J bench-npe-vs-d1e91f9)" ;;
esac; done
tar -C "$OUT" -czf "$OUT/v-$tag-$(date +%s).tar.gz" v && rm -rf "$OUT/v"
