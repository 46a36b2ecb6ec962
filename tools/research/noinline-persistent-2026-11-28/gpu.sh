#!/bin/bash
# noinline persistent per-element pricing: one call
python3 tools/solution_copies.py copies > /dev/null
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/gpu.txt
python3 -c "import triton, torch; print(triton.__version__, torch.__version__)" >> $OUT/gpu.txt
L=.lab/ni
V='[{"route":"nvidia"},{"route":"native_per_element"},
{"route":"native_per_element","solution":"'$L'/ni_p256c16.py"},
{"route":"native_per_element","solution":"'$L'/ni_p512c16.py"},
{"route":"native_per_element","solution":"'$L'/ni_p512c32.py"},
{"route":"native_per_element","solution":"'$L'/in_p256c16.py"},
{"route":"generic_per_element"},
{"route":"generic_per_element","solution":"'$L'/ni_gpe_p256c16.py"},
{"route":"native_per_element","solution":"copies/mthreads_settings.py"},
{"route":"native_per_element","solution":"'$L'/ni_mt_p.py"}]'
timeout 300 python3 tools/research/sweep.py --variants "$V" --families randn heavy --json $OUT/sweep.json > $OUT/sweep.txt 2>&1
tail -14 $OUT/sweep.txt
D='[{"route":"nvidia"},{"route":"native_per_element"},{"route":"native_per_element","solution":"'$L'/ni_p256c16.py","label":"ni_p256c16"},{"route":"native_per_element","solution":"'$L'/ni_p512c16.py","label":"ni_p512c16"},{"route":"generic_per_element","solution":"'$L'/ni_gpe_p256c16.py","label":"ni_gpe_p256c16"},{"route":"native_per_element","solution":"'$L'/ni_mt_p.py","label":"ni_mt_p"}]'
timeout 120 python3 tools/research/dram_bytes.py --variants "$D" --shapes 8192x4096 4096x2560 --json $OUT/dram.json > $OUT/dram.txt 2>&1
grep -E "read .*written" $OUT/dram.txt
timeout 120 python3 check.py --solution $L/ni_p256c16.py --route native_per_element --strict --shapes benchmark --seeds 1 > $OUT/check_ni_p256c16.txt 2>&1
tail -2 $OUT/check_ni_p256c16.txt
