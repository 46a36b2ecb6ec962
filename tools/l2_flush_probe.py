"""How much of a cold-L2 time is the write-back of the flush buffer's dirty lines (GPU only).

triton.testing.do_bench, like most judges, clears L2 before each timed call by writing a large
buffer, so the call starts with L2 full of dirty lines and pays for writing them back as it brings
in its own data. This times the solution, and a device-to-device copy of its minimum bytes, after
two kinds of clearing: "dirty" (write a 256 MB buffer, as do_bench does; measure.L2_CLEAR_BYTES) and
"clean" (then read another such buffer, which evicts the dirty lines before the timed call starts).

Usage: python tools/l2_flush_probe.py [--solution PATH] [--shapes GROUP|MxH|ExTxH ...] [--json PATH]
"""
import argparse
import json
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import harness  # noqa: E402
import measure  # noqa: E402

BUFFER_INTS = measure.L2_CLEAR_BYTES // 4


def median_us(fn, dirty_buffer, clean_buffer, reps=60):
    """Like do_bench: every call queued behind its clearing, one synchronisation at the end, so the
    host's launch work overlaps the GPU's clearing and is not timed."""
    events = []
    for _ in range(reps):
        dirty_buffer.zero_()
        if clean_buffer is not None:
            clean_buffer.sum(dtype=torch.int64)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        events.append((start, end))
    torch.cuda.synchronize()
    return statistics.median(start.elapsed_time(end) * 1e3 for start, end in events)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--solution", default=str(harness.ROOT / "solution.py"))
    parser.add_argument("--shapes", nargs="+")
    parser.add_argument("--json")
    args = parser.parse_args()
    fn = harness.load_solution(args.solution).silu_dot_fwd_bwd_quant_fuse
    dirty = torch.empty(BUFFER_INTS, dtype=torch.int32, device="cuda")
    clean = torch.ones(BUFFER_INTS, dtype=torch.int32, device="cuda")
    rows = []
    print(f"{'shape':>12} {'solution dirty us':>18} {'clean us':>9} {'copy dirty us':>14} {'clean us':>9}")
    for label, M, H in harness.expand_shape_args(args.shapes, ["benchmark"]):
        x, gy = harness.make_inputs(M, H, seed=0, device="cuda")
        outs = harness.new_outputs(M, H, "cuda")
        src = torch.empty(harness.min_bytes(M, H) // 2, dtype=torch.uint8, device="cuda").random_()
        dst = torch.empty_like(src)
        solve, copy = (lambda: fn(x, gy, *outs)), (lambda: dst.copy_(src))
        solve(); copy(); torch.cuda.synchronize()
        row = {"shape": label, "M": M, "H": H,
               "solution_dirty_us": median_us(solve, dirty, None), "solution_clean_us": median_us(solve, dirty, clean),
               "copy_dirty_us": median_us(copy, dirty, None), "copy_clean_us": median_us(copy, dirty, clean)}
        rows.append(row)
        print(f"{label:>12} {row['solution_dirty_us']:>18.1f} {row['solution_clean_us']:>9.1f} "
              f"{row['copy_dirty_us']:>14.1f} {row['copy_clean_us']:>9.1f}", flush=True)
        del x, gy, outs, src, dst
    if args.json:
        Path(args.json).write_text(json.dumps({"tool": "l2_flush_probe", "environment": harness.environment("cuda"),
                                               "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
