"""GPU proof that the solution's arithmetic matches PyTorch's bit for bit, over whole input domains.

The quantizer runs in every form a rung takes (QUANTIZER_FORMS, section 1); the other checks once per route
variant: the native arithmetic with the nvidia route's PTX (CUDA_ARCH
= this GPU's) and with its tl twin (CUDA_ARCH = 0, the native rungs, which the probe proves on each
device), the tl twin with the sigmoid in its IEEE form (a native rung whose probe found the division
flushing), the IEEE arithmetic (every feature IEEE: the generic_per_element, plain and Ascend routes and the interpreter);
the sigmoid table gathered through shared memory (where this Triton has tl.gather) and computed per
element; the sigmoid's division in each variant's form (PTX div.rn.f32, tl.math.div_rn,
reciprocal_keeping_subnormals, and per element in the IEEE form div_rn with the three subnormal values read
from the table). Where tl.math.div_rn flushes subnormal quotients (Triton 3.0-3.5 on
NVIDIA) the tl twin's computed sigmoid differs at the three gates whose sigmoid is subnormal: that is
reported, not counted, as the probe finds it there and the rung runs the IEEE sigmoid instead.

1. Scale and quantizer: every bf16 absmax (0, every positive finite value, inf and NaN) x every
   bf16 value v with |v| <= absmax (a group's values never exceed its absmax; with a NaN or inf
   absmax, every value), through the solution's group_absmax, group_scale and quantize in each form a
   rung runs (QUANTIZER_FORMS: the division and the int8 conversion each native or IEEE), against
   harness.quantize_like_reference (which tests/test_harness.py shows equal to reference.py's
   quantizer). Pairs with |v| > absmax, which no input can produce and where the clamp-free
   quantizer differs by design, are counted apart.
2. Sigmoid: every bf16 gate but NaN, the subnormal results of gates -87.5 to -88.5 included, through
   the solution's sigmoid (which fills its table) and through its table lookup (_sigmoid_table_kernel + sigmoid_lookup, clamping included), against
   torch.sigmoid.
3. Elementwise forward/backward: every bf16 gate, NaN and inf included, x K random (up, grad_y)
   pairs through the table lookup and silu_mul_fwd_bwd against the reference's op sequence, all
   three bf16 results (NaN where the reference has NaN; d_gate's and d_up's NaN in the max of a group
   of one, grad_groups, which keeps a group's NaN in its max rather than in each element).

Prints the count of differences for each; all must be 0. Usage: python tools/exhaustive_exactness.py [--json PATH]
"""
import argparse
import json
import sys
import time
from pathlib import Path

import torch
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import solution  # noqa: E402
from harness import environment, quantize_like_reference  # noqa: E402

# The table's kernel, as the solution launches it (solution.launch_plan).
TABLE_LAUNCH = solution.launch_plan("nvidia", solution.GROUP_SIZE, solution.GROUP_SIZE)["sigmoid_table"]
# (name, CUDA_ARCH or None for this GPU's, every other feature IEEE, IEEE_SIGMOID): the arithmetic variants
# the routes run (a native rung with one other feature IEEE runs that feature's helper as here, beside the
# native ones).
# "tl twin, sigmoid IEEE" is a native rung whose probe found the division flushing (solution.IEEE_FEATURES).
ARITHMETIC = (("PTX", None, False, False), ("tl twin", 0, False, False), ("tl twin, sigmoid IEEE", 0, False, True),
              ("IEEE", 0, True, True))
# (name, CUDA_ARCH or None for this GPU's, IEEE_DIVISION, IEEE_INT8): every form the quantizer takes on some
# rung, the native rungs' mixed ones (a probe that found the division or the int8 conversion wrong) included.
QUANTIZER_FORMS = (("PTX", None, False, False), ("tl twin", 0, False, False),
                   ("tl twin, division IEEE", 0, True, False), ("tl twin, int8 IEEE", 0, False, True),
                   ("IEEE", 0, True, True))
# Whether this Triton has the table routes (tl.gather): the table variants run only where it does.
TABLE = solution.route_available("native")


@triton.jit
def _quant_pairs_kernel(amax_ptr, v_ptr, q_ptr, s_ptr, N_V, BLOCK: tl.constexpr, CUDA_ARCH: tl.constexpr,
                        IEEE_DIVISION: tl.constexpr, IEEE_INT8: tl.constexpr):
    """Row r: the group scale of absmax[r] (taken through group_absmax of [absmax, -absmax]) and every
    value quantized with it."""
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < N_V
    amax = tl.load(amax_ptr + row + tl.zeros([2], tl.int32)) * tl.where(tl.arange(0, 2) == 0, 1.0, -1.0)
    scale = solution.group_scale(solution.group_absmax(amax[None, :], 1))
    v = tl.load(v_ptr + cols, mask=mask, other=0.0)
    q = solution.quantize(v[None, :], scale[:, None], tl.math.div_rn(1.0, scale)[:, None],
                          IEEE=solution.IEEE_DIVISION * IEEE_DIVISION + solution.IEEE_INT8 * IEEE_INT8,
                          CUDA_ARCH=CUDA_ARCH)
    tl.store(q_ptr + row * N_V + cols[None, :], q, mask=mask[None, :])
    tl.store(s_ptr + row + tl.arange(0, 1), scale)


@triton.jit
def _sigmoid_kernel(g_ptr, table_ptr, direct_ptr, lookup_ptr, BLOCK: tl.constexpr, SIGMOID_TABLE: tl.constexpr,
                    CUDA_ARCH: tl.constexpr, IEEE_SIGMOID: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    g = tl.load(g_ptr + offs)
    tl.store(direct_ptr + offs, solution.sigmoid(g, NO_LIBDEVICE=False, IEEE=solution.IEEE_SIGMOID * IEEE_SIGMOID,
                                                 CUDA_ARCH=CUDA_ARCH))
    tl.store(lookup_ptr + offs, solution.sigmoid_lookup(g, table_ptr, BLOCK, NO_LIBDEVICE=False,
                                                        SIGMOID_TABLE=SIGMOID_TABLE,
                                                        IEEE=solution.IEEE_SIGMOID * IEEE_SIGMOID,
                                                        CUDA_ARCH=CUDA_ARCH))


@triton.jit
def _elementwise_kernel(g_ptr, u_ptr, gy_ptr, table_ptr, y_ptr, dg_ptr, du_ptr, dg_max_ptr, du_max_ptr,
                        BLOCK: tl.constexpr, SIGMOID_TABLE: tl.constexpr, CUDA_ARCH: tl.constexpr,
                        IEEE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    g = tl.load(g_ptr + offs).to(tl.float32)
    u = tl.load(u_ptr + offs).to(tl.float32)
    gy = tl.load(gy_ptr + offs).to(tl.float32)
    sig = solution.sigmoid_lookup(g, table_ptr, BLOCK, NO_LIBDEVICE=False, SIGMOID_TABLE=SIGMOID_TABLE, IEEE=IEEE,
                                  CUDA_ARCH=CUDA_ARCH)
    y, d_gate, d_up = solution.silu_mul_fwd_bwd(g, u, gy, sig, IEEE)
    tl.store(y_ptr + offs, y)
    # Each element a group of its own: the group max is its rounded magnitude, NaN kept (grad_groups).
    d_gate, dg_max = solution.grad_groups(d_gate[:, None], IEEE)
    d_up, du_max = solution.grad_groups(d_up[:, None], IEEE)
    tl.store(dg_ptr + offs, tl.reshape(d_gate, [BLOCK]))
    tl.store(du_ptr + offs, tl.reshape(d_up, [BLOCK]))
    tl.store(dg_max_ptr + offs, dg_max)
    tl.store(du_max_ptr + offs, du_max)


def all_bf16(device):
    """All 65,536 bf16 bit patterns, in bit order (a multiple of every BLOCK used here)."""
    bits = torch.arange(-32768, 32768, dtype=torch.int32, device=device).to(torch.int16)
    return bits.view(torch.bfloat16)


def sigmoid_table(cuda_arch, ieee_math):
    table = torch.empty(2 * solution.LUT_N, dtype=torch.float32, device="cuda")
    # The table is filled in the IEEE form on every route (cuda_arch and ieee_math pick nothing here).
    TABLE_LAUNCH.kernel[TABLE_LAUNCH.grid](table, **TABLE_LAUNCH.constexprs, **TABLE_LAUNCH.options)
    return table


def check_quantizer(cuda_arch, ieee_division, ieee_int8, chunk=512):
    values = all_bf16("cuda").float()
    v = values[~torch.isnan(values)].contiguous()           # every bf16 value, +-inf included
    amax = torch.cat([v[v >= 0].unique(), torch.tensor([float("nan")], device="cuda")]).contiguous()
    n_v = v.numel()
    q_diff = s_diff = q_diff_outside = pairs = 0
    q_out = torch.empty(chunk, n_v, dtype=torch.int8, device="cuda")
    s_out = torch.empty(chunk, dtype=torch.float32, device="cuda")
    block = 4096
    for start in range(0, amax.numel(), chunk):
        a = amax[start:start + chunk]
        rows = a.numel()
        _quant_pairs_kernel[(rows, triton.cdiv(n_v, block))](
            a, v, q_out, s_out, n_v, BLOCK=block, CUDA_ARCH=cuda_arch, IEEE_DIVISION=ieee_division,
            IEEE_INT8=ieee_int8,
            enable_fp_fusion=False)
        q_ref, s_ref = quantize_like_reference(v[None, :], a[:, None])
        s_ref = s_ref[:, 0]
        same_scale = (s_out[:rows].view(torch.int32) == s_ref.view(torch.int32)) | (
            torch.isnan(s_out[:rows]) & torch.isnan(s_ref))
        s_diff += int((~same_scale).sum())
        in_group = (v.abs()[None, :] <= a[:, None]) | ~torch.isfinite(a)[:, None]
        differ = q_out[:rows] != q_ref
        q_diff += int((differ & in_group).sum())
        q_diff_outside += int((differ & ~in_group).sum())
        pairs += int(in_group.sum())
    return {"absmax_values": amax.numel(), "values": n_v, "pairs_in_group": pairs,
            "scale_diffs": s_diff, "int8_diffs": q_diff, "int8_diffs_value_above_absmax": q_diff_outside}


def check_sigmoid(use_table, cuda_arch, ieee_math, ieee_sigmoid):
    g = all_bf16("cuda").float().contiguous()
    table = sigmoid_table(cuda_arch, ieee_math)
    result = {"gates_not_nan": int((~torch.isnan(g)).sum())}
    direct, lookup = torch.empty_like(g), torch.empty_like(g)
    _sigmoid_kernel[(g.numel() // 1024,)](g, table, direct, lookup, BLOCK=1024, SIGMOID_TABLE=use_table,
                                          CUDA_ARCH=cuda_arch, IEEE_SIGMOID=ieee_sigmoid,
                                          enable_fp_fusion=False)
    ref = torch.sigmoid(g)
    counted = ~torch.isnan(g)
    subnormal = (ref != 0) & (ref.abs() < 2.0**-126)
    result["subnormal_results"] = int(subnormal.sum())
    result["direct_diffs"] = int(((direct.view(torch.int32) != ref.view(torch.int32)) & counted).sum())
    result["lookup_diffs_at_subnormal_results"] = int(((lookup.view(torch.int32) != ref.view(torch.int32))
                                                       & subnormal).sum())
    result["lookup_diffs"] = int(((lookup.view(torch.int32) != ref.view(torch.int32)) & counted).sum())
    result["diffs"] = result["direct_diffs"] + result["lookup_diffs"]
    return result


def check_elementwise(pairs_per_gate, use_table, cuda_arch, ieee_math, ieee_sigmoid, seed=0):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    gates = all_bf16("cuda")
    table = sigmoid_table(cuda_arch, ieee_math)
    diffs = {"y": 0, "d_gate": 0, "d_up": 0, "d_gate_group_max": 0, "d_up_group_max": 0}
    total = 0
    for _ in range(pairs_per_gate // 256):
        g = gates.repeat(256)
        n = g.numel()
        u = (torch.randn(n, generator=gen, device="cuda") * torch.exp(torch.randn(n, generator=gen, device="cuda"))).to(torch.bfloat16)
        gy = (torch.randn(n, generator=gen, device="cuda") * torch.exp(torch.randn(n, generator=gen, device="cuda"))).to(torch.bfloat16)
        out = [torch.empty(n, dtype=torch.float32, device="cuda") for _ in range(5)]
        ieee = ((solution.IEEE_ALL.value - solution.IEEE_SIGMOID.value) * ieee_math
                + solution.IEEE_SIGMOID.value * ieee_sigmoid)
        _elementwise_kernel[(n // 1024,)](g, u, gy, table, *out, BLOCK=1024, SIGMOID_TABLE=use_table,
                                          CUDA_ARCH=cuda_arch, IEEE=ieee, enable_fp_fusion=False)
        gate, up, gyf = g.float(), u.float(), gy.float()
        sigmoid = torch.sigmoid(gate)
        silu = gate * sigmoid
        ref = {
            "y": (silu * up).to(torch.bfloat16).float(),
            "d_gate": (gyf * up * sigmoid * (1.0 + gate * (1.0 - sigmoid))).to(torch.bfloat16).float(),
            "d_up": (gyf * silu).to(torch.bfloat16).float(),
        }
        for name, o in zip(("y", "d_gate", "d_up"), out):
            r = ref[name]
            # d_gate and d_up: a NaN is kept in its group's max (grad_groups), so a NaN's own value is free
            uncounted = torch.isnan(r) if name != "y" else torch.isnan(o) & torch.isnan(r)
            diffs[name] += int(((o.view(torch.int32) != r.view(torch.int32)) & ~uncounted).sum())
        for name, o in zip(("d_gate_group_max", "d_up_group_max"), out[3:]):
            r = ref[name[:-len("_group_max")]].abs()
            both_nan = torch.isnan(o) & torch.isnan(r)
            diffs[name] += int(((o.view(torch.int32) != r.view(torch.int32)) & ~both_nan).sum())
        total += n
    return {"elements": total, "diffs": diffs}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--pairs-per-gate", type=int, default=2048)
    parser.add_argument("--skip-quantizer", action="store_true", help="sigmoid and elementwise only (quick)")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("exhaustive_exactness needs a GPU: it proves the compiled GPU arithmetic")
        return 2
    result = {"environment": environment("cuda")}
    major, minor = torch.cuda.get_device_capability()
    t0 = time.time()
    total = 0
    for label, cuda_arch, ieee_division, ieee_int8 in QUANTIZER_FORMS:
        cuda_arch = 10 * major + minor if cuda_arch is None else cuda_arch
        name = f"quantizer_{label.replace(',', '').replace(' ', '_')}"
        result[name] = (check_quantizer(cuda_arch, ieee_division, ieee_int8) if not args.skip_quantizer
                        else {"skipped": True, "scale_diffs": 0, "int8_diffs": 0})
        print(f"scale and quantizer, {label} (CUDA_ARCH={cuda_arch}, IEEE division={ieee_division}, IEEE int8="
              f"{ieee_int8}):", result[name], flush=True)
        total += result[name]["scale_diffs"] + result[name]["int8_diffs"]
    for label, cuda_arch, ieee_math, ieee_sigmoid in ARITHMETIC:
        cuda_arch = 10 * major + minor if cuda_arch is None else cuda_arch
        for use_table in (True, False) if TABLE else (False,):
            where = "table" if use_table else "computed"
            name = f"sigmoid_{where}_{label.replace(' ', '_').replace(',', '')}"
            result[name] = check_sigmoid(use_table, cuda_arch, ieee_math, ieee_sigmoid)
            print(f"sigmoid over every bf16 gate but NaN (direct, through sigmoid_lookup {where}), {label}:",
                  result[name], flush=True)
            flushing = (label == "tl twin" and not use_table and result[name]["diffs"] > 0
                        and result[name]["diffs"] == 2 * result[name]["lookup_diffs_at_subnormal_results"])
            if flushing:
                # The native division flushes its subnormal quotients (Triton 3.0-3.5 on NVIDIA): what the probe
                # finds, and then the rung runs "tl twin, sigmoid IEEE". Not a difference of anything run.
                result[name]["division_flushes"] = True
                print("  the division flushes the subnormal results: the probe turns the sigmoid IEEE here "
                      "(the 'tl twin, sigmoid IEEE' rows are what runs)", flush=True)
                continue
            total += result[name]["diffs"]
            name = f"elementwise_{where}_{label.replace(' ', '_').replace(',', '')}"
            result[name] = check_elementwise(args.pairs_per_gate, use_table, cuda_arch, ieee_math, ieee_sigmoid)
            print(f"y, d_gate, d_up over every bf16 gate x random (up, grad_y), sigmoid {where}, {label}:",
                  result[name], flush=True)
            total += sum(result[name]["diffs"].values())
    result["seconds"] = round(time.time() - t0, 1)
    result["total_diffs"] = total
    print(f"differences: {total}  ({result['seconds']} s)")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))
    return 0 if total == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
