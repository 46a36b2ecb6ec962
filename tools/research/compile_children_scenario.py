"""The compile children's scenario on a GPU: this kit used beside another solution in one process, as whoever
benches the two side by side would, each run a fresh process with an empty Triton cache:

    kit at 128x128, the other solution at 128x128 and 1024x2560 (its own kernels, compiled by its JIT in this
    process), then the kit at 1024x2560, 2048x2560 and 4096x4096 (new shapes: new compiles, in children)

    python tools/research/compile_children_scenario.py --solution PATH [--route ROUTE] [--runs N] [--parallel P]
                                                       [--label LABEL] [--json PATH]

A run keeps its rung where no rung was left, no call raised and every kit call's outputs equal the reference's
byte for byte (a NaN equal to any NaN). Prints a line a run and the summary; --json appends
{"triton", "ladder", "runs", "kept", "commit", "runs_detail"} to the list in PATH.
The other solution is this file's two plain kernels (4 warps, tl.sigmoid, a helper each, the shape as constexprs so
that each shape compiles them again), written for this scenario: what matters is only that a JIT compiles them in
this process just before the kit's first call at a new shape, leaving its MLIR contexts to the garbage collector.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import triton
import triton.language as tl

ROOT = Path(__file__).resolve().parents[2]


@triton.jit
def _silu(g):
    return g * tl.sigmoid(g)


@triton.jit
def _quantized(v, gq_ptrs, gs_ptr):
    s = tl.maximum(tl.max(tl.abs(v), axis=0) / 127.0, 1e-10)
    tl.store(gq_ptrs, (v / s).to(tl.int8))
    tl.store(gs_ptr, s)


@triton.jit
def _other_grad_kernel(x_ptr, gy_ptr, gq_ptr, gs_ptr, H: tl.constexpr, BLOCK: tl.constexpr):
    row, group = tl.program_id(0), tl.program_id(1)
    cols = group * BLOCK + tl.arange(0, BLOCK)
    gate = tl.load(x_ptr + row * 2 * H + cols).to(tl.float32)
    up = tl.load(x_ptr + row * 2 * H + H + cols).to(tl.float32)
    gy = tl.load(gy_ptr + row * H + cols).to(tl.float32)
    sig = tl.sigmoid(gate)
    d_gate = (gy * up * sig * (1 + gate * (1 - sig))).to(tl.bfloat16).to(tl.float32)
    d_up = (gy * _silu(gate)).to(tl.bfloat16).to(tl.float32)
    groups = 2 * H // BLOCK
    _quantized(d_gate, gq_ptr + row * 2 * H + cols, gs_ptr + row * groups + group)
    _quantized(d_up, gq_ptr + row * 2 * H + H + cols, gs_ptr + row * groups + H // BLOCK + group)


@triton.jit
def _other_y_kernel(x_ptr, yq_ptr, ys_ptr, M: tl.constexpr, H: tl.constexpr, BLOCK: tl.constexpr):
    token_group, channel_block = tl.program_id(0), tl.program_id(1)
    tokens = token_group * BLOCK + tl.arange(0, BLOCK)
    channels = channel_block * BLOCK + tl.arange(0, BLOCK)
    gate = tl.load(x_ptr + tokens[:, None] * 2 * H + channels[None, :]).to(tl.float32)
    up = tl.load(x_ptr + tokens[:, None] * 2 * H + H + channels[None, :]).to(tl.float32)
    y = (_silu(gate) * up).to(tl.bfloat16).to(tl.float32)
    s = tl.maximum(tl.max(tl.abs(y), axis=0) / 127.0, 1e-10)
    tl.store(yq_ptr + channels[None, :] * M + tokens[:, None], (y / s[None, :]).to(tl.int8))
    tl.store(ys_ptr + channels * (M // BLOCK) + token_group, s)


def other_solution(x, gy, gq, gs, yq, ys):
    M, H = x.shape[0], x.shape[1] // 2
    _other_grad_kernel[(M, H // 128)](x, gy, gq, gs, H, BLOCK=128, num_warps=4)
    _other_y_kernel[(M // 128, H // 128)](x, yq, ys, M, H, BLOCK=128, num_warps=4)


ONE_RUN = """
import json, sys, warnings, torch
sys.path.insert(0, {root!r}); sys.path.insert(0, {here!r})
import harness, compile_children_scenario as scenario
kit = harness.load_solution({solution!r}, name="solution_under_test")
steps = [("kit", 128, 128), ("other", 128, 128), ("other", 1024, 2560), ("kit", 1024, 2560), ("kit", 2048, 2560),
         ("kit", 4096, 4096)]
result = {{"calls": [], "warnings": [], "raised": None}}
with warnings.catch_warnings(record=True) as warned:
    warnings.simplefilter("always")
    for who, M, H in steps:
        x, gy = harness.make_inputs(M, H, seed=1, device="cuda")
        out = harness.new_outputs(M, H, device="cuda")
        try:
            (kit.silu_dot_fwd_bwd_quant_fuse if who == "kit" else scenario.other_solution)(x, gy, *out)
            torch.cuda.synchronize()
        except Exception as exc:
            result["raised"] = f"{{who}} at {{M}}x{{H}}: {{type(exc).__name__}}: {{str(exc)[:600]}}"
            break
        if who == "kit":
            ref = harness.run_reference(x, gy)
            result["calls"].append([M, H, sum(harness.differing_bytes(a, e) for a, e in zip(out, ref))])
result["warnings"] = [str(w.message)[:600] for w in warned if "silu_dot" in str(w.message)]
result["route"] = harness.route_name(kit, "cuda")
print("RESULT " + json.dumps(result))
"""


def one_run(solution, route, index):
    env = dict(os.environ)
    env.pop("SILU_DOT_ROUTE", None)
    if route:
        env["SILU_DOT_ROUTE"] = route
    with tempfile.TemporaryDirectory(prefix=f"children-{index}-") as cache:
        env["TRITON_CACHE_DIR"] = cache
        proc = subprocess.run([sys.executable, "-c", ONE_RUN.format(root=str(ROOT), here=str(Path(__file__).parent),
                                                                   solution=str(solution))],
                              env=env, capture_output=True, text=True, timeout=600)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    if not lines:
        return {"raised": f"the run's process ended with {proc.returncode}: {proc.stderr[-600:]}", "calls": [],
                "warnings": [], "route": "unknown"}
    return json.loads(lines[-1][len("RESULT "):])


def kept(run):
    return (run["raised"] is None and len(run["calls"]) == 4 and all(c[2] == 0 for c in run["calls"])
            and not any("left the" in w for w in run["warnings"]))


def main():
    sys.path.insert(0, str(ROOT))
    import harness
    parser = harness.ArgumentParser(prog="compile_children_scenario.py", description=__doc__,
                                    formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--solution", type=harness.existing_file, default=str(ROOT / "solution.py"))
    parser.add_argument("--route")
    parser.add_argument("--runs", type=harness.at_least_one("runs"), default=10)
    parser.add_argument("--parallel", type=harness.at_least_one("processes"), default=5)
    parser.add_argument("--label", default="")
    parser.add_argument("--commit", default="")
    parser.add_argument("--json", type=harness.json_destination, metavar="PATH")
    args = parser.parse_args()
    with ThreadPoolExecutor(args.parallel) as pool:
        runs = list(pool.map(lambda i: one_run(args.solution, args.route, i), range(args.runs)))
    for i, run in enumerate(runs):
        print(f"run {i}: {'kept' if kept(run) else 'LOST'}; route {run['route']}; bytes "
              f"{[c[2] for c in run['calls']]}; raised {run['raised']}; warnings {run['warnings']}")
    record = {"triton": triton.__version__, "ladder": args.label or args.route or "automatic", "runs": len(runs),
              "kept": sum(kept(run) for run in runs), "commit": args.commit, "solution": Path(args.solution).name,
              "runs_detail": runs}
    print(f"triton {record['triton']} ladder {record['ladder']} ({record['solution']}): kept {record['kept']} of "
          f"{record['runs']}")
    if args.json:
        path = Path(args.json)
        records = json.loads(path.read_text()) if path.exists() else []
        path.write_text(json.dumps(records + [record], indent=1) + "\n")


if __name__ == "__main__":
    main()
