"""DRAM bytes, instructions and kernel time of one call, by Nsight Compute, for several solutions and routes in one
profile.

For each variant (a JSON object: "route", optionally "solution", "label" and LaunchSettings fields: num_warps, chunk
and y_chunk together, maxnreg, programs and prefetch optional) and each shape,
the call's kernels are launched once through the solution's `launch` (its proofs ran once before, at 128 x 128, outside
the profiled range), inside an NVTX range that alone is profiled, caches flushed before each kernel (ncu's default).
Output: a JSON list of {"shape", "route", "label", "solution", "triton", "read_mb", "written_mb", "kernel_us",
"inst_per_element"} (MB = 1e6 bytes, the call's kernels summed; kernel_us under the profiler, not bench.py's timing;
inst_per_element: warp instructions executed times 32, over M x H).
Usage: python tools/research/dram_bytes.py --variants JSON --shapes 8192x4096 4096x2560 --json PATH  (GPU, ncu)
The script runs itself under ncu (--inner) and reads ncu's CSV back.
"""
import argparse
import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import harness  # noqa: E402

NCU = os.environ.get("NCU", "/usr/local/cuda/bin/ncu")
METRICS = ("dram__bytes_read.sum", "dram__bytes_write.sum", "gpu__time_duration.sum", "smsp__inst_executed.sum")
SETTINGS_FIELDS = ("num_warps", "chunk", "y_chunk", "maxnreg", "programs", "prefetch")
REQUIRED_SETTINGS = ("num_warps", "chunk", "y_chunk")
RANGE = "dram_bytes_call"


def inner(variants, shapes):
    """Runs the variants' calls, each inside the NVTX range; prints one manifest line a call: the kernels it
    launched, in order (the profile lists them in the same order)."""
    import torch
    import triton
    modules = {}
    for variant in variants:
        path = variant.get("solution", str(harness.ROOT / "solution.py"))
        key = (path, variant["route"])
        if key not in modules:
            module = modules[key] = harness.load_solution(path, name=f"solution_dram_{len(modules)}")
            x, gy = harness.make_inputs(128, 128, seed=0, device="cuda")
            with harness.route_forced(variant["route"]):
                module.silu_dot_fwd_bwd_quant_fuse(x, gy, *harness.new_outputs(128, 128, "cuda"))
        module = modules[key]
        fields = {k: v for k, v in variant.items() if k in SETTINGS_FIELDS}
        settings = module.LaunchSettings(**{"maxnreg": None, **fields}) if fields else None
        for label, M, H in shapes:
            x, gy = harness.make_inputs(M, H, seed=0, device="cuda")
            outs = harness.new_outputs(M, H, "cuda")
            module.launch(x, gy, *outs, settings=settings)  # compiled and loaded outside the range
            torch.cuda.synchronize()
            torch.cuda.nvtx.range_push(RANGE)
            module.launch(x, gy, *outs, settings=settings)
            torch.cuda.synchronize()
            torch.cuda.nvtx.range_pop()
            plan = module.launch_plan("nvidia", M, H, route=variant["route"])
            skipped = module.PER_DEVICE_LAUNCHES + module.PROOF_LAUNCHES
            kernels = sum(1 for name in plan if name not in skipped)
            print("MANIFEST " + json.dumps({"shape": label, "route": variant["route"], "solution": path,
                                            "triton": triton.__version__, "elements": M * H,
                                            "label": variant.get("label", variant["route"]), "kernels": kernels}),
                  flush=True)


def _number(text):
    """A metric value as ncu's CSV writes it (thousands separated by commas)."""
    return float(text.replace(",", ""))


def records_from(stdout):
    """The records of an --inner run under ncu, from its standard output: the manifest lines (in launch order) and
    ncu's CSV rows (one a profiled kernel, in the same order), each call's kernels summed. A ValueError where the
    profile and the manifest disagree on the number of kernels."""
    lines = stdout.splitlines()
    manifest = [json.loads(line[len("MANIFEST "):]) for line in lines if line.startswith("MANIFEST ")]
    rows = list(csv.DictReader(io.StringIO("\n".join(line for line in lines if line.startswith('"')))))
    rows = [r for r in rows if r.get("ID", "").strip().isdigit()]  # the units row has no ID
    if len(rows) != sum(call["kernels"] for call in manifest):
        raise ValueError(f"the profile lists {len(rows)} kernels, the calls launched "
                         f"{sum(call['kernels'] for call in manifest)}")
    records, at = [], 0
    for call in manifest:
        kernels = rows[at:at + call["kernels"]]
        at += call["kernels"]

        def total(metric, unit):
            return sum(_number(k[metric]) for k in kernels) / unit

        records.append({"shape": call["shape"], "route": call["route"], "label": call["label"],
                        "solution": call["solution"], "read_mb": round(total("dram__bytes_read.sum", 1e6), 2),
                        "written_mb": round(total("dram__bytes_write.sum", 1e6), 2),
                        "kernel_us": round(total("gpu__time_duration.sum", 1e3), 1),
                        "triton": call.get("triton"),
                        "inst_per_element": (round(32 * total("smsp__inst_executed.sum", 1) / call["elements"], 1)
                                             if "elements" in call else None),
                        "kernel_names": [k["Kernel Name"] for k in kernels]})
    return records


def outer(args):
    command = [NCU, "--nvtx", "--nvtx-include", f"{RANGE}/", "--metrics", ",".join(METRICS), "--csv",
               "--print-units", "base", "--page", "raw", sys.executable, __file__, "--inner",
               "--variants", args.variants, "--shapes", *args.shapes]
    try:
        done = subprocess.run(command, capture_output=True, text=True)
    except OSError as exc:
        sys.exit(f"dram_bytes.py: cannot run Nsight Compute ({exc}): it needs ncu and a GPU (NCU names the binary)")
    try:
        if done.returncode:
            raise ValueError(f"ncu exited {done.returncode}")
        records = records_from(done.stdout)
    except ValueError as exc:
        sys.exit(f"dram_bytes.py: {exc}: {harness.one_line(done.stderr[-2000:] or done.stdout[-2000:])}")
    for r in records:
        print(f"{r['shape']:>10} {r['label']:<28} read {r['read_mb']:8.1f} MB  written {r['written_mb']:8.1f} MB  "
              f"{r['kernel_us']:7.1f} us  {r['inst_per_element']} instructions an element")
    if args.json:
        Path(args.json).write_text(json.dumps(records, indent=1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", required=True, help="JSON list of {route, solution?, label?, and optionally "
                        "num_warps, chunk and y_chunk together, maxnreg, programs, prefetch}")
    parser.add_argument("--shapes", nargs="+", default=["8192x4096", "4096x2560"])
    parser.add_argument("--json")
    parser.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    try:
        variants = json.loads(args.variants)
    except ValueError as exc:
        parser.error(f"--variants is not JSON ({exc}): expected a list of objects, e.g. '[{{\"route\": \"nvidia\"}}]'")
    if not isinstance(variants, list) or not all(isinstance(v, dict) for v in variants):
        parser.error(f"--variants: expected a list of objects, e.g. '[{{\"route\": \"nvidia\"}}]'; got {args.variants}")
    for variant in variants:
        unknown = set(variant) - {"route", "solution", "label", *SETTINGS_FIELDS}
        if "route" not in variant or unknown:
            parser.error(f"--variants: each needs a route and takes only solution, label and {list(SETTINGS_FIELDS)}; "
                         f"got {json.dumps(variant)}")
        if set(variant) & set(SETTINGS_FIELDS) and not set(REQUIRED_SETTINGS) <= set(variant):
            parser.error(f"--variants: settings take {list(REQUIRED_SETTINGS)} together (the rest default: no register "
                         f"cap, one program a tile, no prefetch); got {json.dumps(variant)}")
        mistyped = [k for k in SETTINGS_FIELDS if k in variant and not (
            isinstance(variant[k], bool) if k == "prefetch" else
            variant[k] is None and k in ("maxnreg", "programs") or type(variant[k]) is int and variant[k] > 0)]
        if mistyped:
            parser.error(f"--variants: {mistyped} must be positive integers (maxnreg and programs may be null, "
                         f"prefetch true or false); got {json.dumps(variant)}")
    if args.inner:
        shapes = harness.expand_shape_args(args.shapes, [])
        inner(variants, shapes)
    else:
        outer(args)


if __name__ == "__main__":
    main()
