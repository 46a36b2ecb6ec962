"""Cold start on a GPU: the solution imported and called once in a fresh process with an empty Triton
cache, as a judge's first call meets it (every kernel of the rung taken compiled and loaded, the table
filled, a native rung's probe run; a child process compiles each kernel first).

    python tools/cold_start.py [--solution PATH] [--shape ExTxH] [--runs N] [--route ROUTE]

Each run is a new Python process with its own empty TRITON_CACHE_DIR: it imports torch and starts CUDA
(timed apart: a judge has done both before it imports a solution), then prints the solution's import
time, the first call's time (to the end of the GPU's work), their sum (the cold start), the second
call's, what the first call of each further benchmark shape adds to its second (its self-test, and any
compile it needs), and the ladder the call took.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import harness  # noqa: E402  (imports no triton)

ONE_RUN = """
import json, sys, time
begin_torch = time.perf_counter()
import torch
sys.path.insert(0, {root!r})
import harness
torch.cuda.init()
start = time.perf_counter()
solution = harness.load_solution({solution!r}, name="solution_cold")
imported = time.perf_counter()
x, gy = harness.make_inputs({M}, {H}, seed=0, device="cuda")
out = harness.new_outputs({M}, {H}, device="cuda")
torch.cuda.synchronize()
begin = time.perf_counter()
solution.silu_dot_fwd_bwd_quant_fuse(x, gy, *out)
torch.cuda.synchronize()
first = time.perf_counter()
solution.silu_dot_fwd_bwd_quant_fuse(x, gy, *out)
torch.cuda.synchronize()
second = time.perf_counter()
further = {{}}
for label, M, H in harness.load_shapes("benchmark"):
    if (M, H) == ({M}, {H}):
        continue
    x, gy = harness.make_inputs(M, H, seed=0, device="cuda")
    out = harness.new_outputs(M, H, device="cuda")
    torch.cuda.synchronize()
    times = []
    for _ in range(2):
        called = time.perf_counter()
        solution.silu_dot_fwd_bwd_quant_fuse(x, gy, *out)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - called)
    further[label] = (times[0] - times[1]) * 1e3
ladder = harness.route_ladder(solution, "cuda")
print(json.dumps({{"torch_s": start - begin_torch, "import_s": imported - start, "first_call_s": first - begin, "second_call_ms": (second - first) * 1e3,
                  "further_first_call_extra_ms": further, "ladder": ladder}}))
"""


def main(argv=None):
    parser = harness.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--solution", type=harness.existing_file, default=str(harness.ROOT / "solution.py"))
    parser.add_argument("--shape", type=harness.shape_group, default="32x256x4096", help="one shape: MxH or ExTxH")
    parser.add_argument("--runs", type=harness.at_least_one("run"), default=3)
    parser.add_argument("--route", help="force one of the solution's routes (SILU_DOT_ROUTE)")
    args = parser.parse_args(argv)
    label, M, H = harness.one_shape_and_route(parser, args, "solution_for_cold_start")
    import torch
    if not torch.cuda.is_available():
        print("cold_start.py: needs a GPU (the first call's compile and load are what it times)", file=sys.stderr)
        return 2
    env = dict(os.environ)
    if args.route:
        env[harness.ROUTE_ENV] = args.route
    code = ONE_RUN.format(root=str(harness.ROOT), solution=str(Path(args.solution).resolve()), M=M, H=H)
    for run in range(args.runs):
        with tempfile.TemporaryDirectory() as cache:
            env["TRITON_CACHE_DIR"] = cache
            result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        if result.returncode:
            print(f"run {run + 1}: failed (exit {result.returncode}):\n{result.stderr[-3000:]}")
            return 1
        r = json.loads(result.stdout.strip().splitlines()[-1])
        print(f"run {run + 1}, {label}, {Path(args.solution).name}: (torch and CUDA {r['torch_s']:.2f} s) "
              f"import {r['import_s']:.2f} s, first call "
              f"{r['first_call_s']:.2f} s, import + first call {r['import_s'] + r['first_call_s']:.2f} s, "
              f"second call {r['second_call_ms']:.2f} ms")
        extra = r["further_first_call_extra_ms"]
        print("  each further benchmark shape's first call, less its second: "
              + ", ".join(f"{label} {ms:.1f}" for label, ms in extra.items()) + " ms")
        for route, how in r["ladder"]:
            if how != "not tried":
                print(f"  {route}: {how}")
        for line in result.stderr.splitlines():
            if "RuntimeWarning" in line:
                print(f"  warning: {harness.one_line(line)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
