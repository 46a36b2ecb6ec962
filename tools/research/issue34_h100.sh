#!/usr/bin/env bash
# Issue 34's H100 runs, in parts meant to fit one device call each (10 minutes; not yet timed: split a part that
# does not); run from the repository root on the
# GPU machine, with $OUT set by the device tool. Each part writes its records into $OUT/issue34-PART/ and packs
# them as $OUT/issue34-PART.tar.gz (the device tool brings back at most 8 files). DRY=1 prints the commands.
#
#   bash tools/research/issue34_h100.sh ablation   # exhaustive proof of every quantizer form, the timed ablation
#   bash tools/research/issue34_h100.sh faults     # each fault copy: check --strict --seeds 1, bench --repeat 3
#   bash tools/research/issue34_h100.sh ieee       # every feature IEEE (generic, generic_per_element), forced
#   PYTHONPATH=/tmp/t bash tools/research/issue34_h100.sh ieee31   # the same per element on Triton 3.1
#                                                    # (../shared/tools/triton_parts.sh packs it)
set -uo pipefail
part=${1:?usage: issue34_h100.sh ablation|faults|ieee|ieee31}
dir="$OUT/issue34-$part"
mkdir -p "$dir"
run() {  # run NAME COMMAND...: the command's output, its command line first, into $dir/NAME.txt
  local name=$1; shift
  if [ "${DRY:-0}" = 1 ]; then echo "$name: $*"; return; fi
  { echo "# $*"; "$@"; echo "# exit $?"; } > "$dir/$name.txt" 2>&1
  tail -n 3 "$dir/$name.txt"
}
python3 tools/solution_copies.py copies > /dev/null
triton=$(python3 -c "import triton; print(triton.__version__)")
case $part in
  ablation)
    run exhaustive python3 tools/exhaustive_exactness.py --json "$dir/exhaustive.json"
    run sweep python3 tools/research/sweep.py --variants-file tools/research/variants-ieee-ablation.json \
      --json "$dir/sweep.json" ;;
  faults)
    for copy in copies/fault_*.py; do
      name=$(basename "$copy" .py)
      run "check-$name" python3 check.py --strict --seeds 1 --solution "$copy" --json "$dir/check-$name.json"
      run "bench-$name" python3 bench.py --repeat 3 --solution "$copy" --baseline solution.py \
        --json "$dir/bench-$name.json"
    done ;;
  ieee)
    for route in generic generic_per_element; do
      run "check-$route" python3 check.py --strict --seeds 1 --route "$route" --json "$dir/check-$route.json"
      run "bench-$route" python3 bench.py --repeat 3 --route "$route" --baseline solution.py \
        --baseline-route nvidia --json "$dir/bench-$route.json"
    done ;;
  ieee31)
    case $triton in 3.1.*) ;; *) echo "ieee31 wants Triton 3.1 first on PYTHONPATH, found $triton"; exit 2 ;; esac
    run check-generic_per_element-triton31 python3 check.py --strict --seeds 1 --route generic_per_element
    run bench-generic_per_element-triton31 python3 bench.py --repeat 3 --route generic_per_element \
      --baseline solution.py --baseline-route nvidia_per_element --json "$dir/bench-generic_per_element-triton31.json" ;;
  *) echo "unknown part $part: expected ablation, faults, ieee or ieee31"; exit 2 ;;
esac
[ "${DRY:-0}" = 1 ] || tar -C "$OUT" -czf "$OUT/issue34-$part.tar.gz" "issue34-$part" && echo "triton $triton: $dir"
