#!/usr/bin/env bash
# The GPU runs of the second session of 2026-12-02, through the device tool, from the repository root.
# usage: tools/research/session-h200-2026-12-02b/runner.sh XY STEP...
#   XY: 30, 31 or 35 (Triton from .whl/tXY0.part.*, packed by ../shared/tools/triton_parts.sh) or 36 (the machine's).
#   .lab/before.py: the landed release this session starts from (.lab/before_commit); .lab/commit: the working tree's.
# Steps: hosts (tools/host_time.py, the routes of issue 64's bar for this Triton, three processes each for this code
# and the release before, alternating, each process pinned to one core where taskset exists: the empty kernel's launch
# moved 10-20 us between processes on this machine), profile (host_profile.py, the same routes, both files, part by
# part), then the 2026-12-01b runner's steps (strict, faults, cheats,
# bench-auto, bench-npe, native-vs-npe, host, cold).
set -uo pipefail
xy=${1:?}; shift
. tools/research/triton_xy.sh
. tools/research/records.sh
commit=$(cat .lab/commit); before=$(cat .lab/before_commit)
pin=(); command -v taskset > /dev/null && pin=(taskset -c 3)
rest=()
bar_routes() { case $xy in 36) echo auto ;; 31) echo nvidia_per_element native_per_element ;; *) echo auto native_per_element ;; esac; }
for step in "$@"; do case $step in
 hosts) for r in $(bar_routes); do for n in 1 2 3; do for sol in solution.py .lab/before.py; do
     c=$commit; [ $sol = .lab/before.py ] && c=$before; [ $r = auto ] && ro="" || ro="--route $r"
     run host-$r-$c-$n "${pin[@]}" python3 tools/host_time.py --solution $sol $ro --label $c --json "$OUT/v/host-$tag.json"
   done; done; done ;;
 profile) for r in $(bar_routes); do for sol in solution.py .lab/before.py; do [ $r = auto ] && ro="" || ro="--route $r"
     run profile-$r-$(basename $sol .py) "${pin[@]}" python3 tools/research/session-h200-2026-12-01/host_profile.py --solution $sol $ro
   done; done ;;
 *) rest+=("$step") ;;
esac; done
if [ ${#rest[@]} -gt 0 ]; then tar -C "$OUT" -czf "$OUT/v-$tag-pre-$(date +%s).tar.gz" v && rm -rf "$OUT/v"
  bash tools/research/session-h200-2026-12-01b/runner.sh 36 "${rest[@]}"; exit; fi
tar -C "$OUT" -czf "$OUT/v-$tag-$(date +%s).tar.gz" v && rm -rf "$OUT/v"
