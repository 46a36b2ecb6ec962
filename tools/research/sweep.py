"""Design sweep on the GPU: launch variants of a solution's kernel on the benchmark shapes.

For each variant (solution.LaunchSettings fields, launched through solution.launch): differing bytes
against the reference (seed 0 of each --families family per shape), registers and spills, and per
shape the cold-L2 median time and its % of the same-bytes copy timed the same way (measure.py), the
floor under this timing. Per shape the copy is timed first, then the variants one after another.
A variant may also name a "route" (forced through SILU_DOT_ROUTE in a module of the solution loaded for
that route alone, so that rungs are timed side by side in one process) and a "solution" file (default
--solution), and give no other field: then it runs with the route's own settings for each shape. The last lines give each variant's time over variant
0's (geometric mean over the shapes).
Usage: python tools/research/sweep.py [--solution PATH] [--variants JSON | --variants-file PATH] [--shapes ...]
                             [--families F ...] [--json PATH]
"""
import argparse
import json
import math
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import harness  # noqa: E402
from measure import do_bench, same_bytes_copy_us  # noqa: E402  (the same timing as bench.py)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--solution", default=str(harness.ROOT / "solution.py"))
    parser.add_argument("--variants", help="JSON list of LaunchSettings field sets (default: the route's own for 8192x4096)")
    parser.add_argument("--variants-file", help="a file holding that JSON list")
    parser.add_argument("--shapes", nargs="*", default=["benchmark"])
    parser.add_argument("--families", nargs="+", default=["randn"])
    parser.add_argument("--json")
    args = parser.parse_args()
    sm_count = torch.cuda.get_device_properties(0).multi_processor_count
    spec = Path(args.variants_file).read_text() if args.variants_file else args.variants
    fields = json.loads(spec) if spec else [{}]
    modules = {}  # (solution, route (None: its own choice)): a module of the solution whose first call took it

    def module_for(path, route):
        key = (path, route)
        if key not in modules:
            module = modules[key] = harness.load_solution(path, name=f"solution_for_sweep_{len(modules)}")
            if route is not None and route not in module.ROUTES:
                parser.error(f"variant route {route!r} is none of {path}'s routes {module.ROUTES}")
            x, gy = harness.make_inputs(128, 128, seed=0, device="cuda")
            with harness.route_forced(route):  # the solution reads it at its first call
                module.silu_dot_fwd_bwd_quant_fuse(x, gy, *harness.new_outputs(128, 128, "cuda"))
        return modules[key]

    variants = []  # (module, LaunchSettings or None for the route's own, label)
    for field_set in fields:
        field_set = dict(field_set)
        route = field_set.pop("route", None)
        path = field_set.pop("solution", args.solution)
        module = module_for(path, route)
        settings = module.LaunchSettings(**field_set) if field_set else None
        if settings is None and route is None and not spec:
            settings = module.launch_settings("nvidia", 8192, 4096, sm_count)
        label = {"route": module.route_for("cuda"), **(settings._asdict() if settings else {})}
        if path != args.solution:
            label["solution"] = path
        variants.append((module, settings, label))
    shapes = harness.expand_shape_args(args.shapes, ["benchmark"])
    reference = harness.reference_fn()
    rows = [{"variant": label, "bad_bytes": 0, "us": {}, "floor_pct": {}} for _, _, label in variants]
    ref_us, copy_us = {}, {}
    for label, M, H in shapes:
        cases = []
        for family in args.families:
            x, gy = harness.make_inputs(M, H, seed=0, family=family, device="cuda")
            cases.append((x, gy, harness.run_reference(x, gy, reference)))
        x, gy, _ = cases[0]
        outs = harness.new_outputs(M, H, "cuda")
        ref_us[label] = do_bench(lambda: reference(x, gy, *outs))
        copy_us[label] = same_bytes_copy_us(harness.min_bytes(M, H))
        for (solution, variant, _), row in zip(variants, rows):
            for cx, cgy, ref in cases:
                outs = harness.new_outputs(M, H, "cuda")
                k = solution.launch(cx, cgy, *outs, settings=variant)
                torch.cuda.synchronize()
                row["bad_bytes"] += sum(harness.differing_bytes(a, e) for a, e in zip(outs, ref))
            row.update(regs=getattr(k, "n_regs", None), spills=getattr(k, "n_spills", None), shared=k.metadata.shared)
            us = do_bench(lambda: solution.launch(x, gy, *outs, settings=variant))
            row["us"][label] = round(us, 2)
            row["floor_pct"][label] = round(100 * copy_us[label] / us, 1)
        print(label, "copy", round(copy_us[label], 1), " ".join(f"{r['us'].get(label, '-')}" for r in rows), flush=True)
    for row in rows:
        row["min_floor_pct"] = min(row["floor_pct"].values())
        row["mean_speedup"] = statistics.mean(ref_us[l] / us for l, us in row["us"].items())
        row["time_over_variant_0"] = math.exp(statistics.mean(math.log(us / rows[0]["us"][l])
                                                              for l, us in row["us"].items()))
    labels = [label for label, _, _ in shapes]
    print("\n% of the same-bytes copy per shape (copy us / variant us), variants as numbered below")
    print(f"{'shape':>12} {'copy us':>8} " + " ".join(f"{i:>6}" for i in range(len(rows))))
    for label in labels:
        print(f"{label:>12} {copy_us[label]:8.1f} " + " ".join(f"{r['floor_pct'].get(label, '-'):>6}" for r in rows))
    print()
    for i, r in enumerate(rows):
        print(f"{i:>2} {json.dumps(r['variant'])} regs {r.get('regs')} spills {r.get('spills')} "
              f"bad_bytes {r['bad_bytes']} min % floor {r['min_floor_pct']} mean speedup {r['mean_speedup']:.2f} "
              f"time / variant 0 {r['time_over_variant_0']:.3f}")
    print("reference us:", {k: round(v, 1) for k, v in ref_us.items()})
    if args.json:
        Path(args.json).write_text(json.dumps({"env": harness.environment("cuda"), "solution": args.solution,
                                               "families": args.families, "ref_us": ref_us, "copy_us": copy_us,
                                               "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
