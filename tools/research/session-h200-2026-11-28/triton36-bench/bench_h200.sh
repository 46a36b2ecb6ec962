#!/bin/bash
# The bench targets on the code that lands, one call (H200 this session).
. tools/research/records.sh
LIMIT=140
for r in native native_per_element native_two_pass; do
  run "bench-$r-vs-nvidia" python3 bench.py --repeat 3 --route $r --baseline solution.py --baseline-route nvidia --json "$(J bench-$r-vs-nvidia)"
done
run "bench-mthreads-launch-vs-nvidia" python3 bench.py --repeat 3 --solution copies/mthreads_settings.py --route native_per_element --baseline solution.py --baseline-route nvidia --json "$(J bench-mthreads-launch-vs-nvidia)"
tar -C "$OUT" -czf "$OUT/bench-$tag.tar.gz" v && rm -rf "$OUT/v"
