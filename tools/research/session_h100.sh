#!/usr/bin/env bash
# The H100 runs of the 2026-11-28 session, in parts of one device call each, run from the repository root on the GPU
# machine with $OUT set by the device tool (records.sh: run, J, the copies).
#
#   bash tools/research/session_h100.sh a   # the real rows' faults (the witness's mixed groups) and their controls on
#                                           # 445d650's witness; the host-traffic cheats and the stale records; the
#                                           # automatic route and the portable copy strict
#   bash tools/research/session_h100.sh b   # every exact portable rung forced, strict on the benchmark shapes; cold
#                                           # start and each further shape's first call against 445d650 (automatic and
#                                           # portable); bench --repeat 3 against 445d650; DRAM bytes of each rung
#   PYTHONPATH=/tmp/t bash tools/research/session_h100.sh p   # another Triton: automatic and portable strict
# a and b want 445d650's solution as .lab/release_445d650.py, its portable copy as .lab/release_445d650_portable.py,
# and the real rows' faults made from it in .lab/base_copies/ (tools/solution_copies.py --solution), carried with .lab.
set -uo pipefail
part=${1:?usage: session_h100.sh a|b|p}
case $part in a|b|p) ;; *) echo "unknown part $part: expected a, b or p"; exit 2 ;; esac
. tools/research/records.sh
case $part in
  a)
    strict_checks
    for fault in mixed_signs many_binades mixed_signs_portable many_binades_portable; do
      run "check-$fault" python3 check.py --strict --seeds 1 --solution "copies/fault_$fault.py" \
        --json "$(J "check-$fault")"; done
    for fault in mixed_signs many_binades; do  # the witness of 445d650, whose groups held one sign: expected to fail
      run "check-$fault-445d650" python3 check.py --strict --seeds 1 --solution ".lab/base_copies/fault_$fault.py" \
        --json "$(J "check-$fault-445d650")"; done
    python3 tests/fixtures/host_cheats.py copies/cheats > /dev/null
    for cheat in copies/cheats/*.py; do  # expected to fail triton_only, naming what reached the host (two shapes: the
      # cheats compute on the host, minutes a run at every shape)
      name=$(basename "$cheat" .py)
      run "check-cheat-$name" python3 check.py --seeds 1 --shapes 1024x2560 4096x4096 --solution "$cheat" \
        --json "$(J "check-cheat-$name")"; done
    for stale in witness ordering; do  # expected: cannot judge, and 0 bytes
      run "check-$stale-record-stale" python3 check.py --strict --seeds 1 --solution "copies/fault_${stale}_record_stale.py" \
        --json "$(J "check-$stale-record-stale")"; done ;;
  b)
    for route in ${ROUTES_STRICT-native native_per_element generic_per_element native_two_pass plain}; do  # ROUTES_STRICT="" skips them
      run "check-route-$route" python3 check.py --strict --seeds 1 --shapes benchmark --route "$route" \
        --json "$(J "check-route-$route")"; done
    run cold-start-auto python3 tools/cold_start.py --runs 3
    run cold-start-release-445d650 python3 tools/cold_start.py --runs 3 --solution .lab/release_445d650.py
    run cold-start-portable python3 tools/cold_start.py --runs 3 --solution copies/portable.py
    run cold-start-release-445d650-portable python3 tools/cold_start.py --runs 3 \
      --solution .lab/release_445d650_portable.py
    run bench-vs-release-445d650 python3 bench.py --repeat 3 --baseline .lab/release_445d650.py \
      --json "$(J bench-vs-release-445d650)"
    run dram python3 tools/research/dram_bytes.py --shapes 8192x4096 4096x2560 --json "$(J dram)" --variants \
      '[{"route": "nvidia"}, {"route": "native"}, {"route": "native_per_element"}, {"route": "generic_per_element"},
        {"route": "native_per_element", "solution": "copies/mthreads_settings.py", "label": "native_per_element, Moore Threads launch"},
        {"route": "native_two_pass"}, {"route": "plain"}]' ;;
  p)
    strict_checks ;;
esac
tar -C "$OUT" -czf "$OUT/v-$part-$tag.tar.gz" v && rm -rf "$OUT/v"
