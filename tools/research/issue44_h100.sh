#!/usr/bin/env bash
# Issue 44's H100 runs (the ordering check, the self-test run twice, the witness on real values), in parts of one
# device call each, run from the repository root on the GPU machine with $OUT set by the device tool. Each part
# writes its records, each beginning with its command line, into $OUT/v/NAME-tritonXY.{txt,json} and packs them as
# $OUT/v-PART-tritonXY.tar.gz.
#
#   bash tools/research/issue44_h100.sh a   # check --strict --seeds 1 on all 20 shapes: the automatic route, the
#                                           # portable copy, and the copy with the slot barrier removed three times;
#                                           # then each fused route forced on that copy in 10 fresh processes
#   bash tools/research/issue44_h100.sh b   # cold start (automatic, portable, release 5eed96b) with each further
#                                           # shape's first call; bench --repeat 3 against release 5eed96b; a
#                                           # timeline of one first call of each (tools/research/cold_profile.py)
#   PYTHONPATH=/tmp/t bash tools/research/issue44_h100.sh p   # another Triton: the portable copy strict
# b wants the release as .lab/release_5eed96b.py (git show 5eed96b:solution.py), carried with .lab.
set -uo pipefail
part=${1:?usage: issue44_h100.sh a|b|p}
case $part in a|b|p) ;; *) echo "unknown part $part: expected a, b or p"; exit 2 ;; esac
. tools/research/records.sh  # run, J, the copies; $OUT checked
FUSED="nvidia nvidia_per_element native native_per_element generic generic_per_element"
case $part in
  a)
    run check-auto python3 check.py --strict --seeds 1 --json "$(J check-auto)"
    run check-portable python3 check.py --strict --seeds 1 --solution copies/portable.py --json "$(J check-portable)"
    for i in 1 2 3; do
      run "check-slot-barrier-removed-$i" python3 check.py --strict --seeds 1 \
        --solution copies/fault_slot_barrier_removed.py --json "$(J "check-slot-barrier-removed-$i")"; done
    # Each fused route forced on the copy without its barrier, 10 fresh processes each (the routes of a round at once).
    for i in $(seq 1 10); do
      for r in $FUSED; do
        ( SILU_DOT_ROUTE=$r timeout 120 python3 check.py --solution copies/fault_slot_barrier_removed.py --route "$r" \
            --shapes 8x128x2560 --seeds 1 --families randn > "$OUT/v/forced-$r-$i.log" 2>&1; echo "# exit $?" \
            >> "$OUT/v/forced-$r-$i.log" ) &
      done; wait
    done
    for r in $FUSED; do
      { echo "# python3 check.py --solution copies/fault_slot_barrier_removed.py --route $r --shapes 8x128x2560" \
             "--seeds 1 --families randn, in 10 fresh processes: each one's output and exit"
        for i in $(seq 1 10); do echo "## process $i"; cat "$OUT/v/forced-$r-$i.log"; done
        echo "# refused in one line: $(for i in $(seq 1 10); do grep -c 'cannot run here' "$OUT/v/forced-$r-$i.log"; done \
              | awk '{s += $1} END {print s}') of 10 (Triton $T)"; } > "$OUT/v/forced-$r-$tag.txt"
      rm -f "$OUT"/v/forced-"$r"-[0-9]*.log
      echo "== forced $r: $(tail -n 1 "$OUT/v/forced-$r-$tag.txt")"
    done ;;
  b)
    run cold-start-auto python3 tools/cold_start.py --runs 2
    run cold-start-portable python3 tools/cold_start.py --runs 2 --solution copies/portable.py
    run cold-start-release-5eed96b python3 tools/cold_start.py --runs 2 --solution .lab/release_5eed96b.py
    run bench-vs-release-5eed96b python3 bench.py --repeat 3 --baseline .lab/release_5eed96b.py \
      --json "$(J bench-vs-release-5eed96b)"
    run cold-profile python3 tools/research/cold_profile.py solution.py .lab/release_5eed96b.py copies/portable.py ;;
  p)
    run check-portable python3 check.py --strict --seeds 1 --solution copies/portable.py --json "$(J check-portable)"
    run check-auto python3 check.py --strict --seeds 1 --json "$(J check-auto)" ;;
esac
tar -C "$OUT" -czf "$OUT/v-$part-$tag.tar.gz" v && rm -rf "$OUT/v"
