"""The host path of one call, part by part (lab code for the record in results/session-h200-2026-12-01/: it reaches
into the solution's private names, as a profile must). At 128x128, after the first calls, each part timed alone in
loops of N, the minimum of R rounds, microseconds:

    python tools/research/session-h200-2026-12-01/host_profile.py [--solution PATH] [--route ROUTE] [--calls N]

call: the whole public call, back to back; launch_fn: solution.launch alone; capturing: the device's graph-capture
query; ready_launches: the ready path's own launches (_launch_compiled, where the solution has it); check: _check_inputs; stream: _current_stream; scratch:
_Device.scratch_for; key: _specialization and the ready lookup; launch: the ready launches alone (CompiledKernel[grid],
its runner, its C launcher); c_launcher: CompiledKernel.run called directly, hooks none; launch_int, c_launcher_int:
the same with the eight pointers passed as their addresses (ints: the C launcher then asks neither data_ptr nor the
driver); and the empty kernel's JIT launch, its runner, its C launcher.
"""
import argparse
import json
import os
import sys
import time
from pathlib import Path

import torch
import triton
import triton.language as tl

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
import harness  # noqa: E402


@triton.jit
def _empty_kernel(out_ptr):
    tl.store(out_ptr, 0.0)


def best(fn, calls, rounds=5):
    fn()
    torch.cuda.synchronize()
    out = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        out = min(out, (time.perf_counter() - start) / calls)
        torch.cuda.synchronize()
    return round(out * 1e6, 2)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--solution", default=str(ROOT / "solution.py"))
    parser.add_argument("--route")
    parser.add_argument("--calls", type=int, default=1000)
    args = parser.parse_args()
    if args.route:
        os.environ["SILU_DOT_ROUTE"] = args.route
    s = harness.load_solution(args.solution, name="solution_profiled")
    M = H = 128
    x, gy = harness.make_inputs(M, H, seed=0, device="cuda")
    out = harness.new_outputs(M, H, device="cuda")
    for _ in range(3):
        s.silu_dot_fwd_bwd_quant_fuse(x, gy, *out)
    device = s._devices[x.get_device()]
    tensors = (x, gy, *out)
    n = args.calls
    parts = {"call": best(lambda: s.silu_dot_fwd_bwd_quant_fuse(x, gy, *out), n),
             "check": best(lambda: s._check_inputs(x, gy, *out, 128), n),
             "stream": best(lambda: s._current_stream(device), n)}
    stream = s._current_stream(device)
    parts["scratch"] = best(lambda: device.scratch_for(stream, M * H), n)
    _, _, strides, _, addresses = s._check_inputs(x, gy, *out, 128)
    scratch = device.scratch_for(stream, M * H)
    key = lambda: device.ready.get((M, H, None, s._specialization(  # noqa: E731
        addresses + (device.table.data_ptr(), scratch.data_ptr()), strides)))
    parts["key"] = best(key, n)
    ready = key()
    call_args = (*tensors, device.table, scratch, M, H, *strides)

    def launch():
        for kernel, grid, indices, constexprs in ready:
            kernel[grid](*(call_args if indices is None else [call_args[i] for i in indices]), *constexprs,
                         stream=stream)
    parts["launch"] = best(launch, n)
    int_args = (*addresses, device.table.data_ptr(), scratch.data_ptr(), M, H, *strides)

    def launch_int():
        for kernel, grid, indices, constexprs in ready:
            kernel[grid](*(int_args if indices is None else [int_args[i] for i in indices]), *constexprs,
                         stream=stream)
    parts["launch_int"] = best(launch_int, n)
    kernel, grid, indices, constexprs = ready[-1]
    run_args = call_args if indices is None else [call_args[i] for i in indices]
    parts["c_launcher"] = best(lambda: kernel.run(*grid, stream, kernel.function, kernel.packed_metadata, None,
                                                  None, None, *run_args, *constexprs), n)
    run_int = int_args if indices is None else [int_args[i] for i in indices]
    parts["c_launcher_int"] = best(lambda: kernel.run(*grid, stream, kernel.function, kernel.packed_metadata, None,
                                                      None, None, *run_int, *constexprs), n)
    parts["launch_fn"] = best(lambda: s.launch(x, gy, *out), n)  # the call without the public function around it
    parts["capturing"] = best(device.capturing, n)
    if hasattr(s, "_launch_compiled") and device.last_ready is not None:  # the ready path's own launches
        parts["ready_launches"] = best(lambda: [s._launch_compiled(k, g, a, stream) for k, g, a in device.last_ready[2]],
                                       n)
    sink = torch.empty(1, device="cuda")
    parts["empty_jit"] = best(lambda: _empty_kernel[(1,)](sink), n)
    empty = _empty_kernel[(1,)](sink)
    parts["empty_runner"] = best(lambda: empty[(1, 1, 1)](sink, stream=stream), n)
    parts["empty_c_launcher"] = best(lambda: empty.run(1, 1, 1, stream, empty.function, empty.packed_metadata, None,
                                                       None, None, sink), n)
    print(json.dumps({"triton": triton.__version__, "route": harness.route_name(s, "cuda"),
                      "solution": Path(args.solution).name, "launches": len(ready), **parts}))


if __name__ == "__main__":
    main()
