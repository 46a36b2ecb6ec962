#!/bin/bash
. tools/research/records.sh
LIMIT=70
run bench-native_two_pass-vs-generic_per_element python3 bench.py --repeat 3 --route native_two_pass --baseline solution.py --baseline-route generic_per_element --json "$(J bench-native_two_pass-vs-generic_per_element)"
mkdir -p /tmp/t && (cat .whl/t310.part.* | xz -d | tar -x -C /tmp/t)
T=3.1.0; tag=triton31
export PYTHONPATH=/tmp/t; run bench-native_two_pass-vs-generic_per_element python3 bench.py --repeat 3 --route native_two_pass --baseline solution.py --baseline-route generic_per_element --json "$(J bench-native_two_pass-vs-generic_per_element)"
tar -C "$OUT" -czf "$OUT/h2h.tar.gz" v && rm -rf "$OUT/v"
