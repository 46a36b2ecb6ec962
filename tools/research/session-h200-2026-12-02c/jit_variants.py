"""How many binaries each of a solution's jit kernels holds in this process after one first call (GPU): a kernel
compiled before the call with stand-in arguments and launched with the call's own holds one where the two share a
specialization, two where they do not (the second compiled in this process, outside the children).

    python tools/research/session-h200-2026-12-02c/jit_variants.py SOLUTION ROUTE [MxH]

Prints one JSON line: {"solution", "route", "triton", "variants": {kernel: binaries}}.
"""
import json
import os
import sys

solution_path, route = sys.argv[1], sys.argv[2]
M, H = (int(v) for v in (sys.argv[3] if len(sys.argv) > 3 else "1024x2560").split("x"))
os.environ["SILU_DOT_ROUTE"] = route
sys.path.insert(0, ".")
import torch  # noqa: E402
import triton  # noqa: E402
import harness  # noqa: E402

solution = harness.load_solution(solution_path, name="solution_variants")
x, gy = harness.make_inputs(M, H, seed=0, device="cuda")
solution.silu_dot_fwd_bwd_quant_fuse(x, gy, *harness.new_outputs(M, H, device="cuda"))
torch.cuda.synchronize()


def binaries(kernel):
    caches = getattr(kernel, "device_caches", None)  # Triton 3.3 on
    if caches is not None:
        return sum(len(entry[0]) for entry in caches.values())
    return sum(len(entry) for entry in getattr(kernel, "cache", {}).values())  # Triton 3.0-3.2


variants = {name: binaries(value) for name, value in vars(solution).items()
            if isinstance(value, triton.runtime.jit.JITFunction) and binaries(value)}
print(json.dumps({"solution": solution_path, "route": route, "triton": triton.__version__, "variants": variants}))
