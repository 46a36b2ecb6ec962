#!/usr/bin/env bash
# Issue 34's (and 35's) H100 runs, in parts of one device call each (each under 5 minutes on 2026-11-26), run
# from the repository root on the GPU machine with $OUT set by the device tool. Each part writes its records,
# each beginning with its command line, into $OUT/v/NAME-tritonXY.{txt,json} and packs them as
# $OUT/v-PART-tritonXY.tar.gz (the device tool brings back at most 8 files).
#
#   bash tools/research/issue34_h100.sh a1    # exhaustive proof, timed ablation, every exact rung forced, strict
#   bash tools/research/issue34_h100.sh a2    # each fault copy: check --strict, bench --repeat 3; IEEE rungs timed
#   bash tools/research/issue34_h100.sh a3    # against release 9b442d1, Moore Threads' settings, cold start
#   bash tools/research/issue34_h100.sh c     # the per-element rungs: settings swept, checked and timed
#   bash tools/research/issue34_h100.sh d     # 2026-11-26 (seventh session): the division's bounds, Moore Threads'
#                                             # launch a slice ahead (swept, checked, timed)
#   PYTHONPATH=/tmp/t bash tools/research/issue34_h100.sh d31   # the same launch on Triton 3.1
#   PYTHONPATH=/tmp/t bash tools/research/issue34_h100.sh b31   # Triton 3.1 first on PYTHONPATH
#   PYTHONPATH=/tmp/t bash tools/research/issue34_h100.sh b35   # Triton 3.5, with amd_backend_stub/ in
#                                                               # /tmp/t/triton/backends/amd
# Other Triton releases travel as parts (../shared/tools/triton_parts.sh; its header says how). Triton 3.5 imports
# every backend its entry points name, and the parts leave out AMD's: copy tools/research/amd_backend_stub/ there.
# a3 wants the release as .lab/release_9b442d1.py (git show 9b442d1:solution.py).
set -uo pipefail
part=${1:?usage: issue34_h100.sh a1|a2|a3|c|d|b31|b35|d31}
case $part in a1|a2|a3|c|d|b31|b35|d31) ;; *) echo "unknown part $part: expected a1, a2, a3, c, d, b31, b35 or d31"; exit 2 ;; esac
. tools/research/records.sh  # run, J, the copies; $OUT checked
V=tools/research
case $part in
  a1)
    LIMIT=240 run exhaustive python3 tools/exhaustive_exactness.py --json "$(J exhaustive)"
    run sweep-ablation python3 $V/sweep.py --variants-file $V/variants-ieee-ablation.json --json "$(J sweep-ablation)"
    run sweep-sigmoid python3 $V/sweep.py --variants-file $V/variants-issue34-sigmoid.json --json "$(J sweep-sigmoid)"
    for r in nvidia nvidia_per_element native native_per_element generic generic_per_element plain; do
      run "check-$r" python3 check.py --strict --seeds 1 --route "$r" --json "$(J "check-$r")"; done ;;
  a2)
    for c in copies/fault_*.py; do n=$(basename "$c" .py)
      run "check-$n" python3 check.py --strict --seeds 1 --solution "$c" --json "$(J "check-$n")"
      run "bench-$n" python3 bench.py --repeat 3 --solution "$c" --baseline solution.py --json "$(J "bench-$n")"; done
    for r in generic generic_per_element native_per_element; do
      run "bench-$r" python3 bench.py --repeat 3 --route "$r" --baseline solution.py --baseline-route nvidia \
        --json "$(J "bench-$r")"; done ;;
  a3)
    run bench-vs-release-9b442d1 python3 bench.py --repeat 3 --baseline .lab/release_9b442d1.py \
      --json "$(J bench-vs-release-9b442d1)"
    run bench-mthreads-settings python3 bench.py --repeat 3 --solution copies/mthreads_settings.py \
      --route native_per_element --baseline solution.py --baseline-route nvidia --json "$(J bench-mthreads-settings)"
    run check-flushing-division python3 check.py --strict --seeds 1 --solution copies/flushing_division.py \
      --json "$(J check-flushing-division)"
    run coldstart python3 tools/cold_start.py --runs 2
    run coldstart-portable python3 tools/cold_start.py --runs 2 --solution copies/portable.py ;;
  c)
    run sweep-c python3 $V/sweep.py --variants-file $V/variants-issue34-per-element.json --json "$(J sweep-c)"
    for r in generic_per_element native_per_element; do
      run "check-$r" python3 check.py --strict --seeds 1 --route "$r" --json "$(J "check-$r")"; done
    run check-fault_sigmoid_ulp python3 check.py --strict --seeds 1 --solution copies/fault_sigmoid_ulp.py \
      --json "$(J check-fault_sigmoid_ulp)"
    run bench-fault_sigmoid_ulp python3 bench.py --repeat 3 --solution copies/fault_sigmoid_ulp.py \
      --baseline solution.py --json "$(J bench-fault_sigmoid_ulp)"
    run bench-generic_per_element python3 bench.py --repeat 3 --route generic_per_element --baseline solution.py \
      --baseline-route nvidia --json "$(J bench-generic_per_element)"
    run check-flushing-division python3 check.py --strict --seeds 1 --solution copies/flushing_division.py \
      --json "$(J check-flushing-division)"
    run bench-mthreads-settings python3 bench.py --repeat 3 --solution copies/mthreads_settings.py \
      --route native_per_element --baseline solution.py --baseline-route nvidia --json "$(J bench-mthreads-settings)" ;;
  d)
    python3 $V/division_bounds.py > /dev/null
    run sweep-division-bounds python3 $V/sweep.py --variants-file $V/variants-issue34-division-bounds.json \
      --json "$(J sweep-division-bounds)"
    run sweep-prefetch python3 $V/sweep.py --variants-file $V/variants-issue35-prefetch.json --json "$(J sweep-prefetch)"
    run bench-mthreads-settings python3 bench.py --repeat 3 --solution copies/mthreads_settings.py \
      --route native_per_element --baseline solution.py --baseline-route nvidia --json "$(J bench-mthreads-settings)"
    run check-mthreads-settings python3 check.py --strict --seeds 2 --solution copies/mthreads_settings.py \
      --route native_per_element --json "$(J check-mthreads-settings)"
    run check-mthreads-settings-auto python3 check.py --strict --seeds 1 --solution copies/mthreads_settings.py \
      --json "$(J check-mthreads-settings-auto)"
    run coldstart python3 tools/cold_start.py --runs 2
    run coldstart-portable python3 tools/cold_start.py --runs 2 --solution copies/portable.py ;;
  d31)
    case $T in 3.1.*) ;; *) echo "d31 wants Triton 3.1 first on PYTHONPATH, found $T"; exit 2 ;; esac
    run sweep-prefetch python3 $V/sweep.py --variants-file $V/variants-issue35-prefetch-triton31.json \
      --json "$(J sweep-prefetch)"
    run bench-mthreads-settings python3 bench.py --repeat 3 --solution copies/mthreads_settings.py \
      --baseline solution.py --json "$(J bench-mthreads-settings)"
    run check-mthreads-settings python3 check.py --strict --seeds 2 --solution copies/mthreads_settings.py \
      --json "$(J check-mthreads-settings)" ;;
  b31)
    case $T in 3.1.*) ;; *) echo "b31 wants Triton 3.1 first on PYTHONPATH, found $T"; exit 2 ;; esac
    run exhaustive-sigmoid python3 tools/exhaustive_exactness.py --skip-quantizer --pairs-per-gate 256 \
      --json "$(J exhaustive-sigmoid)"
    run check-generic_per_element python3 check.py --strict --seeds 1 --route generic_per_element \
      --json "$(J check-generic_per_element)"
    run bench-generic_per_element python3 bench.py --repeat 3 --route generic_per_element --baseline solution.py \
      --baseline-route nvidia_per_element --json "$(J bench-generic_per_element)"
    run check-portable python3 check.py --strict --seeds 2 --solution copies/portable.py --json "$(J check-portable)"
    run bench-portable python3 bench.py --repeat 3 --solution copies/portable.py --baseline solution.py \
      --json "$(J bench-portable)"
    run check-auto python3 check.py --strict --seeds 2 --json "$(J check-auto)"
    run bench-mthreads-settings python3 bench.py --repeat 3 --solution copies/mthreads_settings.py \
      --baseline solution.py --json "$(J bench-mthreads-settings)" ;;
  b35)
    case $T in 3.5.*) ;; *) echo "b35 wants Triton 3.5 first on PYTHONPATH, found $T"; exit 2 ;; esac
    run check-portable python3 check.py --strict --seeds 1 --solution copies/portable.py --json "$(J check-portable)"
    run check-auto python3 check.py --strict --seeds 1 --json "$(J check-auto)"
    run check-flushing-division python3 check.py --strict --seeds 1 --solution copies/flushing_division.py \
      --json "$(J check-flushing-division)" ;;
esac
tar -C "$OUT" -czf "$OUT/v-$part-$tag.tar.gz" v && rm -rf "$OUT/v"
