"""Design sweep on the GPU: launch variants of a solution's kernel on the benchmark shapes.

For each variant (solution.LaunchSettings fields, launched through solution.launch): 0 differing bytes against the
reference (one randn seed per shape), registers and spills, and the cold-L2 median time.
Usage: python tools/sweep.py [--solution PATH] [--variants JSON] [--json PATH]
"""
import argparse
import json
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import harness  # noqa: E402
from measure import do_bench  # noqa: E402  (the same timing as bench.py)


def load_module(path):
    harness.load_solution(path, name="solution_for_sweep")
    return sys.modules["solution_for_sweep"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--solution", default=str(harness.ROOT / "solution.py"))
    parser.add_argument("--variants", help="JSON list of LaunchSettings field sets (default: the route's own for 8192x4096)")
    parser.add_argument("--shapes", nargs="*", default=["benchmark"])
    parser.add_argument("--json")
    args = parser.parse_args()
    solution = load_module(args.solution)
    sm_count = torch.cuda.get_device_properties(0).multi_processor_count
    variants = ([solution.LaunchSettings(**v) for v in json.loads(args.variants)] if args.variants
                else [solution.launch_settings("nvidia", 8192, 4096, sm_count)])
    shapes = harness.expand_shape_args(args.shapes, ["benchmark"])
    reference = harness.reference_fn()
    rows = []
    ref_us = {}
    cases = {}
    for label, M, H in shapes:
        x, gy = harness.make_inputs(M, H, seed=0, device="cuda")
        ref = harness.run_reference(x, gy, reference)
        outs = harness.new_outputs(M, H, "cuda")
        ref_us[label] = do_bench(lambda: reference(x, gy, *outs))
        cases[label] = (M, H, x, gy, ref)
    for variant in variants:
        times, bad_bytes, info = [], 0, {}
        for label, (M, H, x, gy, ref) in cases.items():
            outs = harness.new_outputs(M, H, "cuda")
            k = solution.launch(x, gy, *outs, settings=variant)
            info = {"regs": getattr(k, "n_regs", None), "spills": getattr(k, "n_spills", None),
                    "shared": k.metadata.shared}
            torch.cuda.synchronize()
            bad_bytes += sum(harness.differing_bytes(a, e) for a, e in zip(outs, ref))
            us = do_bench(lambda: solution.launch(x, gy, *outs, settings=variant))
            times.append((label, M, H, us))
        speedups = [ref_us[l] / us for l, _, _, us in times]
        big = [harness.min_bytes(M, H) / (us * 1e-6) / 1e9 for l, M, H, us in times if M * H >= 16 * 2**20]
        row = {"variant": variant._asdict(), **info, "bad_bytes": bad_bytes,
               "mean_speedup": statistics.mean(speedups),
               "big_gbps": big, "us": {l: round(us, 2) for l, _, _, us in times}}
        rows.append(row)
        print(json.dumps(row), flush=True)
    print("\nvariant                                   regs spills bad_bytes mean_speedup  big-shape GB/s")
    for r in rows:
        print(f"{json.dumps(r['variant']):42s} {r['regs']!s:>4} {r['spills']!s:>6} {r['bad_bytes']:>9} "
              f"{r['mean_speedup']:>12.2f}  {' '.join(f'{g:.0f}' for g in r['big_gbps'])}")
    print("reference us:", {k: round(v, 1) for k, v in ref_us.items()})
    if args.json:
        Path(args.json).write_text(json.dumps({"env": harness.environment("cuda"), "solution": args.solution,
                                               "ref_us": ref_us, "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
