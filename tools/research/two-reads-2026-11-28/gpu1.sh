#!/bin/bash
# two-reads pricing, one GPU call, from the repository root with .lab/two_reads carried (its tr.py written by
# make.py .lab/two_reads).
# Usage: bash tools/research/two-reads-2026-11-28/gpu1.sh (the session ran it as .lab/two_reads/gpu1.sh)
set -x
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/gpu.txt
python -c "import triton, torch; print(triton.__version__, torch.__version__)" >> $OUT/gpu.txt
S=.lab/two_reads/tr.py
V='[{"route":"nvidia","solution":"'$S'"},{"route":"native_two_pass","solution":"'$S'"},{"route":"native_per_element","solution":"'$S'"},
{"route":"native_two_reads","solution":"'$S'"},
{"route":"native_two_reads","solution":"'$S'","num_warps":8,"chunk":16,"y_chunk":32,"maxnreg":null},
{"route":"native_two_reads","solution":"'$S'","num_warps":8,"chunk":8,"y_chunk":16,"maxnreg":null},
{"route":"native_two_reads_512","solution":"'$S'"},
{"route":"native_two_reads","solution":"'$S'","num_warps":16,"chunk":32,"y_chunk":64,"maxnreg":null},
{"route":"native_two_reads","solution":"'$S'","num_warps":4,"chunk":16,"y_chunk":16,"maxnreg":null},
{"route":"plain","solution":"'$S'"},
{"route":"plain_two_reads","solution":"'$S'"},
{"route":"plain_two_reads","solution":"'$S'","num_warps":8,"chunk":16,"y_chunk":16,"maxnreg":null}]'
timeout 330 python tools/research/sweep.py --variants "$V" --families randn heavy --json $OUT/sweep.json > $OUT/sweep.txt 2>&1
tail -20 $OUT/sweep.txt
D='[{"route":"nvidia","solution":"'$S'"},{"route":"native_two_pass","solution":"'$S'"},{"route":"native_two_reads","solution":"'$S'"},{"route":"native_two_reads_512","solution":"'$S'"},{"route":"plain_two_reads","solution":"'$S'"}]'
timeout 120 python tools/research/dram_bytes.py --variants "$D" --shapes 8192x4096 4096x2560 --json $OUT/dram.json > $OUT/dram.txt 2>&1
tail -5 $OUT/dram.txt; cat $OUT/dram.json | python -c "import json,sys; [print(r) for r in json.load(sys.stdin)]"
timeout 130 python check.py --solution $S --route native_two_reads --strict --shapes benchmark --seeds 1 > $OUT/check_ntr.txt 2>&1
tail -4 $OUT/check_ntr.txt
