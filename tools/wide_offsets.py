"""Calls past 2**31 elements (64-bit offsets) on the GPU: exact against the reference, and what the
wide offsets would cost on the benchmark shapes.

    python tools/wide_offsets.py [--M 262144] [--H 8192] [--rows-per-check 8192] [--json PATH]

1. One call with x of M x 2H bf16 (default 262144 x 16384: 4.3e9 elements, where the solution takes
   64-bit offsets), inputs randn drawn on the GPU. The reference is computed on row chunks of
   rows-per-check tokens (a multiple of 128, so every y group lies in one chunk) and compared byte by
   byte with the matching rows of grad_input_q/_s and columns of y_q_t/y_s_t.
2. Every benchmark shape timed twice through the solution's launch_plan, with 32-bit and with 64-bit
   offsets (index_64), cold L2 as bench.py times: the price the wide offsets would have if they were
   taken everywhere; the solution takes them only where a tensor spans more than 2**31 elements.
GPU only.
"""
import argparse
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import harness  # noqa: E402
import measure  # noqa: E402
import solution  # noqa: E402


def random_bf16(rows, cols, gen, rows_at_once=8192):
    out = torch.empty(rows, cols, dtype=torch.bfloat16, device="cuda")
    for r in range(0, rows, rows_at_once):
        out[r:r + rows_at_once] = torch.randn(min(rows_at_once, rows - r), cols, generator=gen, device="cuda")
    return out


def exact_past_2_to_the_31(M, H, rows_per_check):
    if rows_per_check % harness.GROUP_SIZE or M % rows_per_check:
        raise SystemExit(f"wide_offsets.py: --rows-per-check must be a multiple of {harness.GROUP_SIZE} that "
                         f"divides M={M}")
    gen = torch.Generator(device="cuda").manual_seed(0)
    x, gy = random_bf16(M, 2 * H, gen), random_bf16(M, H, gen)
    outputs = harness.new_outputs(M, H, "cuda")
    solution.silu_dot_fwd_bwd_quant_fuse(x, gy, *outputs)
    torch.cuda.synchronize()
    reference = harness.reference_fn()
    differing = dict.fromkeys(harness.OUTPUT_NAMES, 0)
    g = harness.GROUP_SIZE
    for r in range(0, M, rows_per_check):
        rows = slice(r, r + rows_per_check)
        expected = harness.run_reference(x[rows], gy[rows], reference)
        actual = (outputs[0][rows], outputs[1][rows], outputs[2][:, rows],
                  outputs[3][:, r // g:(r + rows_per_check) // g])
        for name, a, e in zip(harness.OUTPUT_NAMES, actual, expected):
            differing[name] += harness.differing_bytes(a, e)
    return {"M": M, "H": H, "x_elements": x.numel(), "differing_bytes": differing,
            "unwritten": harness.unwritten(outputs)}


def offset_width_cost(shapes):
    device = torch.device("cuda")
    props = torch.cuda.get_device_properties(device)
    arch = 10 * props.major + props.minor
    table_launch = solution.launch_plan("nvidia", 128, 128, arch=arch)["sigmoid_table"]
    table = torch.empty(table_launch.constexprs["BLOCK"] * table_launch.grid[0], dtype=torch.float32,
                        device=device)
    table_launch.kernel[table_launch.grid](table, **table_launch.constexprs, **table_launch.options)
    rows = []
    for label, M, H in shapes:
        x, gy = harness.make_inputs(M, H, 0, "randn", device="cuda")
        outputs = harness.new_outputs(M, H, "cuda")
        scratch = torch.empty(M * H, dtype=torch.bfloat16, device=device)
        strides = [t.stride(0) for t in (x, gy, *outputs)]
        row = {"shape": label}
        for width, index_64 in (("32-bit", False), ("64-bit", True)):
            main = solution.launch_plan("nvidia", M, H, arch=arch, sm_count=props.multi_processor_count,
                                        index_64=index_64)["main"]

            def call(main=main):
                main.kernel[main.grid](x, gy, *outputs, table, scratch, M, H, *strides,
                                       **main.constexprs, **main.options)
            call()
            row[width] = measure.do_bench(call)
        row["ratio"] = row["64-bit"] / row["32-bit"]
        rows.append(row)
        print(f"  {label:>12}: 32-bit {row['32-bit']:7.1f} us  64-bit {row['64-bit']:7.1f} us  "
              f"ratio {row['ratio']:.3f}", flush=True)
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--M", type=int, default=262144)
    parser.add_argument("--H", type=int, default=8192)
    parser.add_argument("--rows-per-check", type=int, default=8192)
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("wide_offsets.py: needs a GPU", file=sys.stderr)
        return 2
    result = {"environment": harness.environment("cuda")}
    print("offset width on the benchmark shapes (solution's launch_plan, cold L2 do_bench):")
    result["offset_width"] = offset_width_cost(harness.load_shapes("benchmark"))
    result["exact"] = exact_past_2_to_the_31(args.M, args.H, args.rows_per_check)
    print(f"one call, x {args.M} x {2 * args.H} ({result['exact']['x_elements']} elements): differing bytes "
          f"{result['exact']['differing_bytes']}, unwritten {result['exact']['unwritten']}")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))
    passed = not any(result["exact"]["differing_bytes"].values()) and not any(result["exact"]["unwritten"].values())
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
