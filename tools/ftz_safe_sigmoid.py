"""The proof of solution.sigmoid's subnormal results: a sigmoid that never asks the hardware for a
subnormal quotient.

Why. sigmoid(g) = 1 / (1 + exp(-g)) is subnormal where d = 1 + exp(-g) lies in (2**126, 2**128): of the
bf16 gates, -87.5, -88 and -88.5 (exp overflows from 88.72 on, and 1/inf = 0 is exact). PyTorch keeps
those subnormals. On NVIDIA, Triton 3.0 to 3.5 compile tl.math.div_rn to div.rn.ftz.f32, which flushes
them to zero (3.6 compiles div.rn.f32); AMD's division keeps them (f32 denorm mode 3). A flushed sigmoid
makes silu -0 instead of about -5e-37, and then
  * grad_y = inf: d_up = inf * -0 = NaN where the reference has -inf, so the group's scale is NaN, not inf;
  * |grad_y| or |up| above about 2e26, in a group of small values: a scale of 1e-10 where the reference's
    is larger, and int8 0 against up to -127; above about 2e34 the scales differ by more than the judge's
    1e-4 (1e-10 against 1.26 at grad_y = 3e38).
Both fail the judge; `--flush-effect` shows them on the CPU reference.

How. For d in [2**126, 2**128), with d = m * 2**(E - 150) (m the 24-bit significand, E the biased
exponent, 253 or 254), 1/d = N * 2**-149 with N = 2**(299 - E) / m, and the bits of the fp32 result are N
rounded to the nearest even integer (2**23 is 2**-126, the smallest normal). One division of normal numbers
with a normal quotient, 1 / (d * 2**-149), which a flushing division computes as well as any, gives t, N
rounded to 24 bits; an fp32 add of 2**23 rounds t to an integer; where t lay exactly half-way between two
integers (often: 6.3 million of the 16.8 million d), an integer product decides which way N lies. Every
other d (a normal quotient, inf, NaN) goes through that same division with d itself.

Where. solution.reciprocal_keeping_subnormals is the IEEE form of the sigmoid's reciprocal: the IEEE
routes, the table's fill, the probe's IEEE side, and a native rung whose probe finds its division
flushing (solution.IEEE_FEATURES: a vendor's toolchain, perhaps). The native form, solution.reciprocal_native,
divides 2**24 by d and scales back, so no division of it flushes (Triton 3.0-3.5's div.rn.ftz.f32 on NVIDIA
included); the probe proves it on every bf16 gate. The nvidia
route divides with PTX div.rn.f32 (inline), the instruction Triton 3.6 emits for div_rn; on 3.0-3.5 it
replaces div.rn.ftz.f32. The Ascend rungs divide with the operator /, as torch.sigmoid does there.

    TRITON_INTERPRET=1 python tools/ftz_safe_sigmoid.py   # the proof over every fp32 d in [2**126, 2**128)
    python tools/ftz_safe_sigmoid.py --ptx                # the division each variant compiles to for sm_90
    python tools/ftz_safe_sigmoid.py --flush-effect       # the reference's outputs with the sigmoid flushed

checks the algorithm in numpy (float32 and int64, against numpy's float32 division, which is IEEE with
subnormals), then the @triton.jit helpers themselves under the Triton interpreter, on all 2**24
significands of both exponents, each with the interpreter's division as it is and made to flush. tests/test_ftz_safe_sigmoid.py runs both on a sample that holds the edges.
"""
import contextlib
import os
import sys
import time
from pathlib import Path

import numpy as np
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import solution  # noqa: E402

# ---------------------------------------------------------------- the proof (CPU)

def subnormal_range_divisors(biased_exponents=(253, 254), significands=None):
    """float32 d = m * 2**(E - 150) for every E given and every 24-bit significand m (default: all 2**23
    of them), as a flat array."""
    m = np.arange(2**23, 2**24, dtype=np.int64) if significands is None else np.asarray(significands, np.int64)
    bits = [((e << 23) | (m & 0x7FFFFF)) for e in biased_exponents]
    return np.concatenate(bits).astype(np.uint32).view(np.float32)


def ieee_reciprocal(d):
    """1/d by numpy's float32 division: IEEE round to nearest even, subnormals kept (no flush here)."""
    with np.errstate(over="ignore", under="ignore", divide="ignore"):
        return np.float32(1.0) / d


def model_reciprocal(d, divide=ieee_reciprocal, decide_half_way=True):
    """reciprocal_keeping_subnormals' arithmetic on d in [2**126, 2**128), in numpy float32 and int64, with
    `divide` as the one division (decide_half_way=False: without the integer decision of half-way
    quotients): returns (result, the division's operands, its quotients, where a quotient was half-way)."""
    bits = d.view(np.uint32).astype(np.int64)
    divisor = (bits - (149 << 23)).astype(np.uint32).view(np.float32)
    quotient = divide(divisor)
    two_pow_23 = np.float32(2.0**23)
    rounded = quotient + two_pow_23
    off = (rounded - two_pow_23) - quotient
    m = (bits & 0x7FFFFF) | 0x800000
    above = (np.int64(1) << (300 - (bits >> 23))) - (quotient * np.float32(2.0)).astype(np.int64) * m > 0
    units = rounded.view(np.uint32).astype(np.int64) - 0x4B000000
    if decide_half_way:
        units = np.where((off == 0.5) & ~above, units - 1, np.where((off == -0.5) & above, units + 1, units))
    return units.astype(np.uint32).view(np.float32), divisor, quotient, np.abs(off) == 0.5


def flushing_reciprocal(d):
    """What div.rn.ftz.f32 computes for 1/d: a subnormal d read as 0, a subnormal quotient written as 0."""
    tiny = np.float32(2.0**-126)
    q = ieee_reciprocal(np.where(np.abs(d) < tiny, np.float32(0.0), d))
    return np.where(np.abs(q) < tiny, np.copysign(np.float32(0.0), q), q).astype(np.float32)


@triton.jit
def _reciprocal_kernel(d_ptr, out_ptr, N, BLOCK: tl.constexpr, NATIVE: tl.constexpr, BARE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    d = tl.load(d_ptr + offs, mask=mask, other=1.0)
    if BARE:
        tl.store(out_ptr + offs, tl.math.div_rn(1.0, d), mask=mask)
    elif NATIVE:  # reciprocal_native takes e, 1/(1 + e): d - 1 is exact up to 2**24 and d itself from 2**25 on
        tl.store(out_ptr + offs, solution.reciprocal_native(d - 1.0), mask=mask)
    else:
        tl.store(out_ptr + offs, solution.reciprocal_keeping_subnormals(d), mask=mask)


@contextlib.contextmanager
def division(flushing):
    """The interpreter's tl.math.div_rn (numpy's IEEE division) as it is, or flushing a subnormal quotient to
    zero as div.rn.ftz.f32 does (Triton 3.0-3.5 on NVIDIA)."""
    from triton.runtime import interpreter
    original = interpreter.InterpreterBuilder.create_precise_divf

    def flushed(self, lhs, rhs):
        q = original(self, lhs, rhs)
        tiny = np.float32(2.0**-126)
        return interpreter.TensorHandle(np.where(np.abs(q.data) < tiny, np.copysign(np.float32(0.0), q.data), q.data), q.dtype)
    if flushing:
        interpreter.InterpreterBuilder.create_precise_divf = flushed
    try:
        yield
    finally:
        interpreter.InterpreterBuilder.create_precise_divf = original


def jit_reciprocal(d, block=2**16, native=False, flushing=False, bare=False):
    """reciprocal_keeping_subnormals (native: reciprocal_native; bare: div_rn(1, d) alone) on a float32 array,
    through Triton (the interpreter on a CPU), its division flushing or not."""
    import torch
    src = torch.from_numpy(np.ascontiguousarray(d, dtype=np.float32))
    out = torch.empty_like(src)
    with np.errstate(over="ignore", invalid="ignore", under="ignore"), division(flushing):
        _reciprocal_kernel[(triton.cdiv(src.numel(), block),)](src, out, src.numel(), BLOCK=block, NATIVE=native,
                                                            BARE=bare)
    return out.numpy()


@triton.jit
def _sigmoid_kernel(gate_ptr, out_ptr, N, BLOCK: tl.constexpr, NO_LIBDEVICE: tl.constexpr, IEEE_MATH: tl.constexpr,
                    CUDA_ARCH: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    gate = tl.load(gate_ptr + offs, mask=mask, other=0.0)
    sig = solution.sigmoid(gate, NO_LIBDEVICE=NO_LIBDEVICE, IEEE=solution.IEEE_SIGMOID * IEEE_MATH, CUDA_ARCH=CUDA_ARCH)
    tl.store(out_ptr + offs, sig, mask=mask)


def every_bf16_gate():
    """The 65,536 bf16 bit patterns as float32 (NaNs included)."""
    return (np.arange(2**16, dtype=np.uint32) << 16).view(np.float32)


def interpreted_sigmoid(gates, native=False, flushing=False, block=4096):
    """sigmoid(gates) in its IEEE form (native: the native form, reciprocal_native), under the interpreter
    (its exp is numpy's), its division flushing or not, in blocks of `block` gates."""
    import torch
    src = torch.from_numpy(np.ascontiguousarray(gates, dtype=np.float32))
    out = torch.empty_like(src)
    # exp(-g) overflows to inf below g = -88.7, and inf and NaN gates make invalid operations: all as they should.
    with np.errstate(over="ignore", invalid="ignore", under="ignore"), division(flushing):
        _sigmoid_kernel[(triton.cdiv(src.numel(), block),)](src, out, src.numel(), BLOCK=block, NO_LIBDEVICE=True,
                                                            IEEE_MATH=not native, CUDA_ARCH=0)
    return out.numpy()


def numpy_sigmoid(gates):
    """1 / (1 + exp(-g)) in float32 with numpy's exp (the interpreter's) and IEEE division."""
    with np.errstate(over="ignore", invalid="ignore"):
        return ieee_reciprocal(np.float32(1.0) + np.exp(-gates))


def compiled_divisions(arch=90):
    """{variant: the PTX division instructions} of solution.sigmoid compiled for cuda `arch` (no
    interpreter): 'ptx' (CUDA_ARCH > 0, the nvidia route), 'integer' (IEEE_MATH) and 'div_rn' (neither,
    the native routes)."""
    import re
    from triton.backends.compiler import GPUTarget
    import compile_matrix
    target = GPUTarget("cuda", arch, 32)
    found = {}
    for variant, cuda_arch, ieee_math in (("ptx", arch, False), ("integer", 0, True), ("div_rn", 0, False)):
        launch = solution.KernelLaunch(
            "sigmoid", _sigmoid_kernel, None, {"gate_ptr": "*fp32", "out_ptr": "*fp32", "N": "i32"},
            {"BLOCK": 1024, "NO_LIBDEVICE": False, "IEEE_MATH": ieee_math, "CUDA_ARCH": cuda_arch},
            {"num_warps": 4, "enable_fp_fusion": False})
        ptx = triton.compile(compile_matrix.ast_source(launch, target), target=target, options=launch.options).asm["ptx"]
        found[variant] = sorted(set(re.findall(r"\bdiv\.[\w.]+", ptx)))
    return found


def flush_effect(gate=-88.0, cases=((1.0, 1.0), (1e30, 1.0), (1.0, 1e30), (1.0, 3e38), (1.0, float("inf")))):
    """For one nonzero element (gate, up, grad_y) in a 128 x 128 call of zeros, the reference on the CPU
    against the same with subnormal sigmoids flushed to 0: [(up, grad_y, differing bytes per output,
    whether the judge passes the flushed outputs)]."""
    import torch
    import harness
    import reference
    sigmoid_as_is = torch.sigmoid

    def flushed(t):
        s = sigmoid_as_is(t)
        return torch.where(s.abs() < 2.0**-126, torch.zeros_like(s), s)

    rows = []
    for up, grad_y in cases:
        x, gy = torch.zeros(128, 256), torch.zeros(128, 128)
        x[5, 7], x[5, 128 + 7], gy[5, 7] = gate, up, grad_y
        x, gy = x.bfloat16(), gy.bfloat16()
        expected = harness.run_reference(x, gy, reference.silu_dot_fwd_bwd_quant_fuse)
        torch.sigmoid = flushed
        try:
            got = harness.run_reference(x, gy, reference.silu_dot_fwd_bwd_quant_fuse)
        finally:
            torch.sigmoid = sigmoid_as_is
        rows.append((up, grad_y, {n: harness.differing_bytes(a, b) for n, a, b in zip(harness.OUTPUT_NAMES, got, expected)},
                     harness.compare(got, expected)["passed"]))
    return rows


def differing(a, b):
    """How many elements of two float32 arrays differ in their bits."""
    return int(np.count_nonzero(a.view(np.uint32) != b.view(np.uint32)))


def main():
    if "--flush-effect" in sys.argv[1:]:
        for up, grad_y, bytes_differ, judge_passes in flush_effect():
            print(f"gate -88, up {up:g}, grad_y {grad_y:g}: flushed sigmoid changes {bytes_differ}; "
                  f"judge {'passes' if judge_passes else 'FAILS'}")
        return
    if "--ptx" in sys.argv[1:]:
        if os.environ.get("TRITON_INTERPRET") == "1":
            sys.exit("--ptx compiles: run it without TRITON_INTERPRET=1")
        print(f"triton {triton.__version__}, sigmoid compiled for sm_90, its divisions: {compiled_divisions()}")
        return
    if os.environ.get("TRITON_INTERPRET") != "1":
        sys.exit("run with TRITON_INTERPRET=1 (the proof runs the jit helper under the interpreter), "
                 "or with --ptx to see the division each variant compiles to")
    d = subnormal_range_divisors()
    expected = ieee_reciprocal(d)
    tiny = np.float32(2.0**-126)
    print(f"{d.size} divisors d in [2**126, 2**128): IEEE 1/d subnormal for {np.count_nonzero(expected < tiny)}, "
          f"2**-126 for {np.count_nonzero(expected == tiny)}; the flushing division of 1/d itself gives "
          f"{differing(flushing_reciprocal(d), expected)} different")
    start = time.time()
    model, divisors, quotients, half_way = model_reciprocal(d)
    print(f"IEEE form, numpy model: {differing(model, expected)} differ from IEEE 1/d; its division's "
          f"operands [{divisors.min():.4g}, {divisors.max():.4g}], quotients [{quotients.min():.8g}, "
          f"{quotients.max():.8g}] (all normal: {bool((divisors >= tiny).all() and (quotients >= tiny).all())}); "
          f"with a flushing division: {differing(model_reciprocal(d, flushing_reciprocal)[0], expected)} differ; "
          f"{np.count_nonzero(half_way)} quotients half-way, of which "
          f"{differing(model_reciprocal(d, decide_half_way=False)[0], expected)} round the wrong way without the "
          f"integer decision ({time.time() - start:.0f} s)")
    others = np.array([1.0, 1.5, 2.0, 3.0, 2.0**125, 2.0**126 * 0.9999999, np.inf, np.nan], np.float32)
    gates = every_bf16_gate()
    not_nan = ~np.isnan(gates)
    forms = ((False, False, "IEEE form"), (False, True, "IEEE form, flushing division"),
             (True, False, "native form"), (True, True, "native form, flushing division (where the probe finds this, the rung takes the IEEE form)"))
    for native, flushing, name in forms:
        start = time.time()
        jit = jit_reciprocal(d, native=native, flushing=flushing)
        print(f"triton {triton.__version__} jit helper, {name} (interpreter): {differing(jit, expected)} differ "
              f"from IEEE 1/d; outside the range (1 .. 2**126, inf, NaN): "
              f"{differing(jit_reciprocal(others, native=native, flushing=flushing), ieee_reciprocal(others))} "
              f"differ (NaN compared by its bits) ({time.time() - start:.0f} s)")
        got, want = interpreted_sigmoid(gates, native, flushing), numpy_sigmoid(gates)
        subnormal = not_nan & (want > 0) & (want < tiny)
        print(f"sigmoid over every bf16 gate (interpreter, {name}): "
              f"{differing(got[not_nan], want[not_nan])} of {np.count_nonzero(not_nan)} non-NaN gates differ from "
              f"numpy's float32 1/(1+exp(-g)); subnormal at gates {gates[subnormal].tolist()}: "
              f"{got[subnormal].tolist()}")

if __name__ == "__main__":
    main()
