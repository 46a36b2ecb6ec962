#!/usr/bin/env bash
# The H100 runs of the witness laid over the call's own shape, in parts of one device call each, run from the
# repository root on the GPU machine with $OUT set by the device tool (records.sh: run, J, the copies).
#
#   bash tools/research/witness_h100.sh a   # the faults: the fused kernel's own barrier call removed (race_runs.py in
#                                           # 10 fresh processes, default runs and 16; check --strict --seeds 1 three
#                                           # times); the helper's barrier removed; the portable copy's later-tiles
#                                           # fault; the automatic route and the portable copy strict
#   bash tools/research/witness_h100.sh b   # the race again at the runs chosen; costs: cold start (automatic, portable, release b095d56), each further
#                                           # shape's first call; bench --repeat 3 against b095d56; cold_profile
#   bash tools/research/witness_h100.sh c   # the portable copy's cold start against the release's portable copy
#   bash tools/research/witness_h100.sh f   # the code that lands: part a's checks once more (the barrier call removed
#                                           # three times), and the cold start against the release again
#   PYTHONPATH=/tmp/t bash tools/research/witness_h100.sh p   # another Triton: automatic, portable, later tiles
# b wants the release as .lab/release_b095d56.py (git show b095d56:solution.py), c its portable copy as
# .lab/release_b095d56_portable.py (b095d56's tools/solution_copies.py), carried with .lab.
set -uo pipefail
part=${1:?usage: witness_h100.sh a|b|c|f|p}
case $part in a|b|c|f|p) ;; *) echo "unknown part $part: expected a, b, c, f or p"; exit 2 ;; esac
. tools/research/records.sh
faults() {  # the fused kernel's own barrier call removed three times, the helper's barrier removed, later tiles
  for i in 1 2 3; do
    run "check-fused-barrier-call-$i" python3 check.py --strict --seeds 1 \
      --solution copies/fault_fused_barrier_call.py --json "$(J "check-fused-barrier-call-$i")"; done
  run check-slot-barrier-removed python3 check.py --strict --seeds 1 --solution copies/fault_slot_barrier_removed.py \
    --json "$(J check-slot-barrier-removed)"
  run check-later-tiles python3 check.py --strict --seeds 1 --solution copies/fault_later_tiles.py \
    --json "$(J check-later-tiles)"
}
case $part in
  a)
    run race-fused-barrier-call python3 tools/research/race_runs.py copies/fault_fused_barrier_call.py
    run race-fused-barrier-call-16-runs python3 tools/research/race_runs.py copies/fault_fused_barrier_call.py \
      --runs 16 --processes 5
    faults
    run check-real-values python3 check.py --strict --seeds 1 --solution copies/fault_real_values.py \
      --json "$(J check-real-values)"
    strict_checks ;;
  b)
    run race-fused-barrier-call python3 tools/research/race_runs.py copies/fault_fused_barrier_call.py
    run cold-start-auto python3 tools/cold_start.py --runs 3
    run cold-start-portable python3 tools/cold_start.py --runs 3 --solution copies/portable.py
    run cold-start-release-b095d56 python3 tools/cold_start.py --runs 3 --solution .lab/release_b095d56.py
    run bench-vs-release-b095d56 python3 bench.py --repeat 3 --baseline .lab/release_b095d56.py \
      --json "$(J bench-vs-release-b095d56)"
    run cold-profile python3 tools/research/cold_profile.py solution.py .lab/release_b095d56.py copies/portable.py ;;
  c)
    run cold-start-portable python3 tools/cold_start.py --runs 3 --solution copies/portable.py
    run cold-start-release-b095d56-portable python3 tools/cold_start.py --runs 3 --solution .lab/release_b095d56_portable.py
    run cold-start-portable-again python3 tools/cold_start.py --runs 3 --solution copies/portable.py ;;
  f)
    strict_checks
    faults
    run cold-start-auto python3 tools/cold_start.py --runs 3
    run cold-start-release-b095d56 python3 tools/cold_start.py --runs 3 --solution .lab/release_b095d56.py ;;
  p)
    strict_checks
    run check-later-tiles python3 check.py --strict --seeds 1 --solution copies/fault_later_tiles.py \
      --json "$(J check-later-tiles)" ;;
esac
tar -C "$OUT" -czf "$OUT/v-$part-$tag.tar.gz" v && rm -rf "$OUT/v"
