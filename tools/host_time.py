"""Host time per call on a GPU: what the host spends on one call, beside an empty Triton kernel's JIT launch in the
same process (the launch floor a call with one kernel cannot go below).

    python tools/host_time.py [--solution PATH] [--route ROUTE] [--shape MxH] [--calls N] [--rounds R]
                              [--label TEXT] [--json PATH]

After a first call (compiles, proofs) and a warm-up, R rounds of N calls back to back, with no synchronize between
them; a round's time over N is one figure, and the minimum over the rounds is reported (host_us), as for the empty
kernel (empty_jit_us: a kernel of one store, launched through its JIT with one pointer argument), timed in the same
rounds, after the call's N each time. The GPU runs each
call's kernel while the host issues the next, so the rounds time the host only where the call's device time
(device_us: its kernels under torch.profiler, one call, L2 cleared first; measure.device_time_us) is below host_us;
where it is not, the launch queue fills and the host waits for the device: "device_bound" says so. --json appends
{"triton", "route", "host_us", "empty_jit_us", "ratio", "device_us", "device_bound", "label", "solution", "shape"} to
the list in PATH. GPU only: exit 2 without one, or for a usage error (one line); 1 where the solution's first call raises.
"""
import argparse
import json
import os
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import harness  # noqa: E402
import measure  # noqa: E402


@triton.jit
def _empty_kernel(out_ptr):
    tl.store(out_ptr, 0.0)


def rounds_min(fns, calls, rounds):
    """The minimum over rounds of each function's host time per call (measure.host_us), in microseconds: each round
    times every function in turn, so that a drift in the machine hits them alike."""
    best = [float("inf")] * len(fns)
    for _ in range(rounds):
        for i, fn in enumerate(fns):
            best[i] = min(best[i], measure.host_us(fn, calls))
    return best


def main(argv=None):
    parser = harness.ArgumentParser(prog="host_time.py", description=__doc__,
                                    formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--solution", type=harness.existing_file, default=str(harness.ROOT / "solution.py"))
    parser.add_argument("--route", help="force one of the solution's routes (SILU_DOT_ROUTE)")
    parser.add_argument("--shape", type=harness.shape_group, default="128x128", help="one shape: MxH or ExTxH")
    parser.add_argument("--calls", type=harness.at_least_one("calls"), default=2000)
    parser.add_argument("--rounds", type=harness.at_least_one("rounds"), default=3)
    parser.add_argument("--label", default="")
    parser.add_argument("--json", type=harness.json_destination, metavar="PATH")
    args = parser.parse_args(argv)
    _, M, H = harness.one_shape_and_route(parser, args, "solution_for_host_time")
    if args.route:
        os.environ[harness.ROUTE_ENV] = args.route
    if not torch.cuda.is_available():
        print("host_time.py: needs a GPU (it times calls that launch kernels on one)", file=sys.stderr)
        return 2
    try:
        solution = harness.load_solution(args.solution, name="solution_timed")
    except harness.SolutionError as exc:
        print(f"host_time.py: {exc}", file=sys.stderr)
        return 1
    x, gy = harness.make_inputs(M, H, seed=0, device="cuda")
    out = harness.new_outputs(M, H, device="cuda")
    call = lambda: solution.silu_dot_fwd_bwd_quant_fuse(x, gy, *out)  # noqa: E731
    try:
        call()
    except Exception as exc:
        print(f"host_time.py: the solution's first call raised: {harness.one_line(harness.raised(exc))}",
              file=sys.stderr)
        return 1
    route = harness.route_name(solution, "cuda")
    sink = torch.empty(1, device="cuda")
    empty = lambda: _empty_kernel[(1,)](sink)  # noqa: E731
    host_us, empty_us = rounds_min([call, empty], args.calls, args.rounds)
    device_us, _ = measure.device_time_us(call)
    record = {"triton": triton.__version__, "route": route, "host_us": round(host_us, 2),
              "empty_jit_us": round(empty_us, 2), "ratio": round(host_us / empty_us, 3),
              "device_us": None if device_us is None else round(device_us, 2),
              "device_bound": None if device_us is None else device_us >= host_us,
              "label": args.label, "solution": Path(args.solution).name, "shape": args.shape}
    print(json.dumps(record))
    if args.json:
        path = Path(args.json)
        records = json.loads(path.read_text()) if path.exists() else []
        path.write_text(json.dumps(records + [record], indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
