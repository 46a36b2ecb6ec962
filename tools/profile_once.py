"""Run the solution on one shape a few times, for a profiler: ncu -k regex:silu_dot python tools/profile_once.py 8192x4096

Inputs come from harness.make_inputs (randn, seed 0); the last call is the one to profile.
"""
import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import harness  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("shape", help="MxH, e.g. 8192x4096")
    parser.add_argument("--solution", default=str(harness.ROOT / "solution.py"))
    parser.add_argument("--calls", type=int, default=3)
    args = parser.parse_args()
    (_, M, H), = harness.load_shapes(args.shape)
    fn = harness.load_solution(args.solution).silu_dot_fwd_bwd_quant_fuse
    x, gy = harness.make_inputs(M, H, seed=0, device="cuda")
    outs = harness.new_outputs(M, H, "cuda")
    for _ in range(args.calls):
        fn(x, gy, *outs)
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
