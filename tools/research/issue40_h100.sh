#!/usr/bin/env bash
# Issue 40's H100 runs (the self-test, the structural fault copies, the two-pass rung), in parts of one device
# call each, run from the repository root on the GPU machine with $OUT set by the device tool. Each part writes
# its records, each beginning with its command line, into $OUT/v/NAME-tritonXY.{txt,json} and packs them as
# $OUT/v-PART-tritonXY.tar.gz (the device tool brings back at most 8 files).
#
#   bash tools/research/issue40_h100.sh a     # check --strict --seeds 1: the automatic route, every structural
#                                             # fault copy and the portable copy
#   bash tools/research/issue40_h100.sh b     # cold start (automatic, portable) with each further shape's first
#                                             # call; bench --repeat 3 against release be0cf31
#   bash tools/research/issue40_h100.sh t     # the exact two-pass rungs (native_two_pass, plain): forced, strict,
#                                             # and timed against nvidia
#   PYTHONPATH=/tmp/t bash tools/research/issue40_h100.sh p   # another Triton: the portable copy strict, the
#                                             # exact two-pass rungs timed against nvidia_per_element
# b wants the release as .lab/release_be0cf31.py (git show be0cf31:solution.py), carried with .lab.
set -uo pipefail
part=${1:?usage: issue40_h100.sh a|b|t|p}
case $part in a|b|t|p) ;; *) echo "unknown part $part: expected a, b, t or p"; exit 2 ;; esac
. tools/research/records.sh  # run, J, the copies; $OUT checked
case $part in
  a)
    run check-auto python3 check.py --strict --seeds 1 --json "$(J check-auto)"
    for n in fault_fused_y_swapped fault_grad_scale_neighbour fault_y_tail_unwritten fault_self_test_expectation portable; do
      run "check-$n" python3 check.py --strict --seeds 1 --solution "copies/$n.py" --json "$(J "check-$n")"; done ;;
  b)
    run cold-start-auto python3 tools/cold_start.py --runs 2
    run cold-start-portable python3 tools/cold_start.py --runs 2 --solution copies/portable.py
    run cold-start-release-be0cf31 python3 tools/cold_start.py --runs 2 --solution .lab/release_be0cf31.py
    run bench-vs-release-be0cf31 python3 bench.py --repeat 3 --baseline .lab/release_be0cf31.py \
      --json "$(J bench-vs-release-be0cf31)" ;;
  t)
    for r in native_two_pass plain; do
      run "check-$r" python3 check.py --strict --seeds 1 --route "$r" --json "$(J "check-$r")"
      run "bench-$r" python3 bench.py --repeat 3 --route "$r" --baseline solution.py --baseline-route nvidia \
        --json "$(J "bench-$r")"; done ;;
  p)
    run check-portable python3 check.py --strict --seeds 1 --solution copies/portable.py --json "$(J check-portable)"
    for r in native_two_pass plain; do
      run "bench-$r" python3 bench.py --repeat 3 --route "$r" --baseline solution.py \
        --baseline-route nvidia_per_element --json "$(J "bench-$r")"; done ;;
esac
tar -C "$OUT" -czf "$OUT/v-$part-$tag.tar.gz" v && rm -rf "$OUT/v"
