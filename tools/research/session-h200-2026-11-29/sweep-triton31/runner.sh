#!/usr/bin/env bash
# GPU call 1: Triton 3.1 unpacked; sweep of native_per_element launches with the scaled native reciprocal, ncu instructions.
set -uo pipefail
mkdir -p /tmp/t && (cat .whl31/t310.part.* | xz -d | tar -x -C /tmp/t)
export PYTHONPATH=/tmp/t
python3 -c "import triton, torch; print(triton.__version__, torch.__version__, torch.cuda.get_device_name())"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv
B=.lab/base.py
timeout 150 python3 check.py --strict --seeds 1 --shapes 1024x2560 --route native_per_element > $OUT/probe31.txt 2>&1; tail -25 $OUT/probe31.txt
V='[{"route": "nvidia_per_element"},
 {"route": "native_per_element", "solution": "'$B'", "label": "base"},
 {"route": "native_per_element"},
 {"route": "native_per_element", "num_warps": 8, "chunk": 32, "y_chunk": 64, "maxnreg": null},
 {"route": "native_per_element", "num_warps": 4, "chunk": 16, "y_chunk": 32, "maxnreg": null},
 {"route": "native_per_element", "num_warps": 8, "chunk": 16, "y_chunk": 64, "maxnreg": null},
 {"route": "native_per_element", "num_warps": 4, "chunk": 16, "y_chunk": 64, "maxnreg": null}]'
timeout 240 python3 tools/research/sweep.py --variants "$(echo "$V" | python3 -c 'import json,sys; print(json.dumps([{k:v for k,v in d.items() if k!="label"} for d in json.load(sys.stdin)]))')" --json $OUT/sweep31.json > $OUT/sweep31.txt 2>&1; tail -12 $OUT/sweep31.txt
timeout 200 python3 tools/research/dram_bytes.py --shapes 8192x4096 --variants "$V" --json $OUT/inst31.json > $OUT/inst31.txt 2>&1; cat $OUT/inst31.txt | tail -12
