"""Times the two-pass kernels one at a time on the GPU, each with several settings, beside the nvidia route's
fused kernel and a same-bytes copy of each kernel's own traffic: where a two-pass rung's time goes.

For each shape: the nvidia route's call; then for the grad kernel (ROWS tokens x GROUPS groups, warps; keeping y or
not) and the y kernel (rows transposed in registers, columns, or quantizing the kept y; CHANNELS x GROUPS, warps),
each math: every feature IEEE (plain),
every feature native (native_two_pass, where its probe passes), native with the PTX pieces, and the tolerant math
(EXACT=False: the reference's operations), each against a copy of the same bytes.
Usage: python tools/research/two_pass_kernels.py [--shapes MxH ...] [--maths NAME ...] [--grad R,G,W ...]
                                               [--y C,G,W ...] [--json PATH]
--grad: ROWS,GROUPS,warps of each grad setting; --y: CHANNELS,GROUPS,warps of each y setting (every y kernel).
"""
import argparse
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import harness  # noqa: E402
from measure import do_bench, same_bytes_copy_us  # noqa: E402


MATHS = ("ieee", "native", "native+ptx", "tolerant")  # the arithmetic of each timed kernel (below)
GRAD_SETTINGS = ((16, 1, 4), (32, 1, 4), (8, 4, 4), (16, 2, 4), (32, 1, 8), (64, 1, 8))  # ROWS, GROUPS, warps
Y_SETTINGS = ((16, 1, 4), (32, 1, 4), (64, 1, 8), (32, 2, 4), (16, 2, 4))  # CHANNELS, GROUPS, warps


def settings_triple(text):
    """"16,1,4" -> (16, 1, 4)."""
    try:
        values = tuple(int(v) for v in text.split(","))
    except ValueError:
        values = ()
    if len(values) != 3 or min(values) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: expected three positive integers, e.g. 16,1,4")
    return values


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--solution", default=str(harness.ROOT / "solution.py"))
    parser.add_argument("--shapes", nargs="*", default=["4096x4096", "8192x2560", "1024x2560"])
    parser.add_argument("--maths", nargs="+", choices=MATHS, default=list(MATHS))
    parser.add_argument("--grad", nargs="+", type=settings_triple, default=GRAD_SETTINGS)
    parser.add_argument("--y", nargs="+", type=settings_triple, default=Y_SETTINGS)
    parser.add_argument("--json")
    args = parser.parse_args()
    sol = harness.load_solution(args.solution, name="solution_two_pass")
    rows = []
    for shape in args.shapes:
        M, H = (int(v) for v in shape.split("x"))
        x, gy = harness.make_inputs(M, H, seed=0, device="cuda")
        out = harness.new_outputs(M, H, "cuda")
        with harness.route_forced("nvidia"):
            sol.silu_dot_fwd_bwd_quant_fuse(x, gy, *out)
        nvidia_us = do_bench(lambda: sol.silu_dot_fwd_bwd_quant_fuse(x, gy, *out))
        table = torch.empty(2 * 4096, dtype=torch.float32, device="cuda")
        scratch = torch.empty(M * H, dtype=torch.bfloat16, device="cuda")  # y, where the grad kernel keeps it
        strides = (x.stride(0), gy.stride(0), out[0].stride(0), out[1].stride(0), out[2].stride(0), out[3].stride(0))
        full = (x, gy, *out, table, scratch, M, H, *strides)
        arch = torch.cuda.get_device_capability()[0] * 10 + torch.cuda.get_device_capability()[1]
        names = [n for n, _ in sol.KERNEL_ARGUMENTS]
        grad_bytes = 6 * M * H + 2 * M * H + M * (2 * H // 128) * 4
        y_bytes = 4 * M * H + M * H + H * (M // 128) * 4
        grad_copy = same_bytes_copy_us(grad_bytes)
        y_copy = same_bytes_copy_us(y_bytes)
        kept_y_copy = same_bytes_copy_us(2 * M * H + M * H + H * (M // 128) * 4)  # the kept y in, not x
        print(f"{M}x{H}: nvidia {nvidia_us:.1f} us; copy of grad's bytes {grad_copy:.1f}, of y's {y_copy:.1f}", flush=True)
        row = {"M": M, "H": H, "nvidia_us": nvidia_us, "grad_copy_us": grad_copy, "y_copy_us": y_copy, "variants": []}

        def time_kernel(kernel, constexprs, warps, tiles):
            a = tuple(full[names.index(n)] for n in kernel.arg_names if n in names)
            grid = (tiles, 1, 1)
            opts = {"num_warps": warps, "num_stages": 1, "enable_fp_fusion": False}
            constexprs = {k: v for k, v in constexprs.items() if k in kernel.arg_names}  # the y kernels differ
            kernel[grid](*a, **constexprs, **opts)
            return do_bench(lambda: kernel[grid](*a, **constexprs, **opts))

        base = {"NO_LIBDEVICE": False, "INDEX_64": False}
        ieee = {"IEEE": sol.IEEE_ALL.value}
        native = {"IEEE": 0}
        maths = {"ieee": {"EXACT": True, "NPU_DIVISION": False, "TABLE_FREE": True, "CUDA_ARCH": 0, **ieee},
                 "native": {"EXACT": True, "NPU_DIVISION": False, "TABLE_FREE": False, "CUDA_ARCH": 0, **native},
                 "native+ptx": {"EXACT": True, "NPU_DIVISION": False, "TABLE_FREE": False, "CUDA_ARCH": arch,
                                **native},
                 "tolerant": {"EXACT": False, "NPU_DIVISION": True, "TABLE_FREE": True, "CUDA_ARCH": 0, **native}}
        for math_name, math in ((name, maths[name]) for name in args.maths):
            for (rows_, groups, warps), keep_y in ((g, k) for g in args.grad for k in (False, True)):
                if (H // 128) % groups:
                    continue
                us = time_kernel(sol._grad_rows_kernel, {**base, **math, "ROWS": rows_, "GROUPS": groups,
                                                         "KEEP_Y": keep_y}, warps, M // rows_ * (H // 128 // groups))
                label = f"grad {math_name} rows={rows_} groups={groups} warps={warps}" + (" keeping y" if keep_y else "")
                print(f"  {label}: {us:.1f} us ({grad_copy / us:.0%} of copy of its bytes without y)", flush=True)
                row["variants"].append({"label": label, "us": us})
            # the y kernel of the routes that keep y last: it quantizes the y that the grad kernel just kept
            for kernel, extra in ((sol._y_columns_kernel, {"GATHER": False}), (sol._y_transposed_kernel, {}),
                                  (sol._y_kept_kernel, {})):
                for ch, groups, warps in args.y:
                    us = time_kernel(kernel, {**base, **math, **extra, "CHANNELS": ch, "GROUPS": groups}, warps,
                                     H // ch * (M // 128 // groups))
                    label = f"{kernel.__name__} {math_name} channels={ch} groups={groups} warps={warps}"
                    copy = kept_y_copy if kernel is sol._y_kept_kernel else y_copy
                    print(f"  {label}: {us:.1f} us ({copy / us:.0%} of copy)", flush=True)
                    row["variants"].append({"label": label, "us": us})
        rows.append(row)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
