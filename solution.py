"""Fused SiLU-mul forward + backward with int8 group quantization, in Triton.

For x = [gate | up] (M x 2H, bf16) and grad_y (M x H, bf16), in fp32:
    sig = 1 / (1 + exp(-gate)),   silu = gate * sig,   y = silu * up,   d_up = gy * silu,
    d_gate = gy * up * sig * (1 + gate * (1 - sig))            (left to right)
grad_input = [d_gate | d_up] and y are rounded to bf16, then quantized, grad_input over each row's groups of 128
channels, y over each channel's groups of 128 tokens and stored transposed (y_q_t is H x M):
    s = max(absmax / 127, 1e-10)        q = int8(trunc(clamp(v / s, -127, 127)))
A group holding a NaN gets a NaN scale, and a NaN quotient becomes int8 0, as PyTorch's cast gives on the GPU.

The contract is exactness: the same bytes as the reference on every input (a NaN scale equal to any NaN), on
every rung of every ladder but the last (tolerant), which computes as the reference is written and is held to the
judge's tolerance only. What exact arithmetic takes is said at the head of "the math" below.

The file, in order:
  the math              the helpers every route shares: sigmoid, bf16 rounding, group scale, quantizer
  NVIDIA-only pieces    inline PTX and cache hints, each with its plain tl twin
  kernels               the fused kernel: a 128 x 128 tile a program, y parked in a scratch slot
  the two-pass kernels  grad_input, then y in a second launch: no slot, no barrier
  backends, routes      BACKENDS (a judge chip an entry), ROUTE_TABLE (a rung an entry), launch_plan
  the probe             proof: the backend's native arithmetic against IEEE arithmetic, on the device
  the witness           proof: the call's own kernels at its shape on real values, every output byte checked
  the witness's host    its input (built here alone), its expectations in the host's IEEE arithmetic, its arbiter
  inputs                the argument checks: a ValueError of one line for each mistake
  devices, launcher     _Device (one device's state), the ladder, the proofs' verdicts, compiles in child
                        processes, launch, silu_dot_fwd_bwd_quant_fuse

On its first call a device takes the first rung of its backend's ladder whose kernels compile, load and pass
its probe; before a rung's first output at each shape it passes the proofs (PROOFS). A rung that fails any of
these is left for the next, with one RuntimeWarning that says why: never for PyTorch, always for Triton.
Set SILU_DOT_ROUTE=<one of ROUTES> before the first call on a device to force a route (one that cannot run
raises one line); ladder_for(device) says how each rung stands. Tools reach this file only through its names
without a leading underscore. PERF_NOTES.md tells the design history.
"""
import contextlib
import gc
import itertools
import math
import os
import re
import signal
import struct
import sys
import threading
import time
import warnings
from array import array
from typing import NamedTuple, Optional

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

GROUP_SIZE = 128
_INTERPRET = os.environ.get("TRITON_INTERPRET", "0") == "1"
# Sigmoid table: every bf16 gate magnitude from 2**-25 (bits 0x3300; below it sigmoid is 0.5) to 127.5
# (bits 0x42FF; beyond it sigmoid is 1, or 0 for negative gates), times two signs: 32 KB of fp32.
_LUT_LO, _LUT_N, _LUT_BLOCK = 0x3300, 4096, 1024
# The same as the kernels read them: constexpr globals, so that no signature carries them.
GROUP, LUT_LO, LUT_N = tl.constexpr(GROUP_SIZE), tl.constexpr(_LUT_LO), tl.constexpr(_LUT_N)
# The arithmetic's features (the head of "the math"), each a bit of a kernel's IEEE constexpr: set, its IEEE form runs.
IEEE_SIGMOID, IEEE_BF16, IEEE_DIVISION, IEEE_INT8 = (tl.constexpr(1 << i) for i in range(4))
IEEE_ALL = tl.constexpr(15)
IEEE_FEATURES = {"sigmoid": IEEE_SIGMOID.value, "bf16 rounding": IEEE_BF16.value,
                 "division": IEEE_DIVISION.value, "int8 conversion": IEEE_INT8.value}


# ---------------------------------------------------------------- the math, shared by every route
# One bf16 ulp of a group's absmax, over 127, exceeds the judge's scale tolerance, so the fp32 math must round as
# PyTorch's kernels do: an accurate expf and IEEE division in the sigmoid, no FMA contraction (enable_fp_fusion=False),
# the reference's operation order, absmax * fp32(1/127) for the scale (PyTorch divides by a scalar through its
# reciprocal), and v / s rounded as IEEE division. Each feature (IEEE_FEATURES) has two exact forms, picked by its bit
# of IEEE: a native rung runs IEEE the features its probe found wrong on the device, an IEEE rung every one.
#   native: the backend's own conversions, and v / s as Markstein's correction of v * (1/s): proven for every bf16
#     (value, absmax) pair by tools/exhaustive_exactness.py on NVIDIA, and by the probe on any other device.
#   IEEE: every result fixed by IEEE arithmetic on signed int32 and fp32 alone: what the interpreter runs, so the CPU
#     tests prove what vendor backends run.
# Both assume IEEE fp32 add, multiply and div_rn of normal numbers, and the exp of the backend's torch.sigmoid
# (libdevice's where it exists; tl.exp on Ascend and under the interpreter).

@triton.jit
def _is_nan(v):
    """Where v is NaN, from its bits (Ascend's ordered vector compare finds no NaN in v != v)."""
    return (v.to(tl.int32, bitcast=True) & 0x7FFFFFFF) > 0x7F800000


@triton.jit
def _finite(v):
    """Where v is neither inf nor NaN, from its bits."""
    return (v.to(tl.int32, bitcast=True) & 0x7FFFFFFF) < 0x7F800000


@triton.jit
def bf16_round(v, IEEE: tl.constexpr):
    """fp32 -> nearest-even bf16, returned as fp32, NaN kept: the backend's cast, or (IEEE_BF16) on the bits."""
    if IEEE_BF16 & IEEE:
        return tl.where(_is_nan(v), v, bf16_round_bits(v))
    else:
        return v.to(tl.bfloat16).to(tl.float32)


@triton.jit
def bf16_round_bits(v):
    """fp32 -> nearest-even bf16 on the bits, returned as fp32, for every v but NaN (whose payload can carry into
    the sign or leave inf). Signed int32 only: the sum wraps as an unsigned one would; -65536 is 0xFFFF0000."""
    bits = v.to(tl.int32, bitcast=True)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) & -65536).to(tl.float32, bitcast=True)


@triton.jit
def _exp(v, NO_LIBDEVICE: tl.constexpr):
    if NO_LIBDEVICE:
        return tl.exp(v)
    else:
        return libdevice.exp(v)


@triton.jit
def sigmoid(gate, NO_LIBDEVICE: tl.constexpr, IEEE: tl.constexpr, CUDA_ARCH: tl.constexpr):
    """1 / (1 + exp(-gate)) with an accurate exp and a correctly rounded reciprocal, as torch.sigmoid, subnormal
    results kept (_SUBNORMAL_SIGMOID_GATES: a flushed one changes the outputs where grad_y is inf or huge). Triton
    3.0-3.5 compile div_rn to PTX div.rn.ftz.f32, and a vendor's division may flush: so the IEEE form (which fills the
    table) never divides to a subnormal, the nvidia route uses PTX div.rn.f32, the native form reciprocal_native."""
    e = _exp(-gate, NO_LIBDEVICE)
    if IEEE_SIGMOID & IEEE:
        return reciprocal_keeping_subnormals(1.0 + e)
    elif CUDA_ARCH > 0:
        return _reciprocal_ptx(1.0 + e)
    else:
        return reciprocal_native(e)


_SUBNORMAL_QUOTIENT_FROM = tl.constexpr(2.0**126)  # 1/d for d at or above this is subnormal (or 2**-126)
_LARGEST_FINITE = tl.constexpr(3.4028234663852886e38)  # fp32's
_EXPONENT_149 = tl.constexpr(149 << 23)  # subtracted from d's bits: d * 2**-149, exact where used
_TWO_POW_MINUS_24 = tl.constexpr(2.0**-24)
_TWO_POW_23 = tl.constexpr(8388608.0)  # fp32 spacing 1 from here to 2**24: adding it rounds to an integer
_TWO_POW_23_BITS = tl.constexpr(0x4B000000)  # its bits: those of t + 2**23, less these, are t's integer


@triton.jit
def reciprocal_keeping_subnormals(d):
    """1/d as IEEE division rounds it, subnormal results kept, for d >= 1, inf or NaN, from one division of normal
    numbers with a normal quotient (so a flushing division gives the same bits). For d in [2**126, 2**128),
    d = m * 2**(E - 150) (m the 24-bit significand, E the biased exponent), 1/d = N * 2**-149 with
    N = 2**(299 - E) / m in (2**21, 2**23], and the result's bits are N rounded to the nearest even integer.
    1 / (d * 2**-149) gives t, N correctly rounded to 24 bits, and t + 2**23 rounds t to an integer: wrong only where
    t lies exactly half-way between two integers (N never does), where the sign of 2**(300 - E) - 2t * m, exact in
    wrapping int32 arithmetic, says which way N lies. No fma. Proven for every such d, the division exact or flushing,
    by tools/ftz_safe_sigmoid.py."""
    huge = (d >= _SUBNORMAL_QUOTIENT_FROM) & (d <= _LARGEST_FINITE)
    scaled = tl.where(huge, (d.to(tl.int32, bitcast=True) - _EXPONENT_149).to(tl.float32, bitcast=True), d)
    quotient = tl.math.div_rn(1.0, scaled)
    rounded = quotient + _TWO_POW_23
    off = (rounded - _TWO_POW_23) - quotient  # -0.5 .. 0.5; +-0.5 where t was half-way
    significand = (scaled.to(tl.int32, bitcast=True) & 0x7FFFFF) | 0x800000
    above = 0 - (quotient * 2.0).to(tl.int32) * significand > 0  # N > t
    units = rounded.to(tl.int32, bitcast=True) - _TWO_POW_23_BITS
    units = tl.where((off == 0.5) & ~above, units - 1, tl.where((off == -0.5) & above, units + 1, units))
    return tl.where(scaled < 1.0, units.to(tl.float32, bitcast=True), quotient)


@triton.jit
def reciprocal_native(e):
    """1/(1 + e), e = exp(-gate), by the backend's own division, as 2**24/d (d * 2**-24 = fma(e, 2**-24, 2**-24), exact
    however the fma rounds: never a subnormal quotient, so nothing a division could flush) scaled back by a multiply.
    Wrong for some d >= 2**126, right for the three that bf16 gates make on the H200 and a CPU; the probe proves it."""
    return tl.math.div_rn(1.0, tl.fma(e, _TWO_POW_MINUS_24, _TWO_POW_MINUS_24)) * _TWO_POW_MINUS_24


# The bf16 magnitude bits of gate 87.5 (then 88 and 88.5): the only bf16 gates whose sigmoid (negative) is
# subnormal; from 89 on exp overflows and sigmoid(-gate) is 1 / inf = 0.
_SUBNORMAL_SIGMOID_GATES = tl.constexpr(0x42AF)
_TRITON_VERSION = tuple(int(part) for part in re.findall(r"\d+", triton.__version__)[:2])
# The table is gathered where tl.gather exists and compiles: Triton 3.3 has it, but the main kernel's
# gather does not finish compiling there (tools/triton_versions.py).
_SIGMOID_TABLE = hasattr(tl, "gather") and _TRITON_VERSION >= (3, 4)
if hasattr(tl, "gather"):
    @triton.jit
    def _gather(table, idx):
        return tl.gather(table, idx, 0)
else:  # Triton's hash of a kernel resolves each attribute it meets, live branch or not: no mention of tl.gather here
    _gather = None  # never called (SIGMOID_TABLE is False)


@triton.jit
def sigmoid_lookup(gate, table_ptr, N_ELEM: tl.constexpr, NO_LIBDEVICE: tl.constexpr, SIGMOID_TABLE: tl.constexpr,
                   IEEE: tl.constexpr, CUDA_ARCH: tl.constexpr):
    """sigmoid(gate) for N_ELEM bf16-valued fp32 gates. SIGMOID_TABLE: gathered from the table (loaded whole); the
    magnitude's bits are clamped to its range, so +-inf read the ends (sigmoid 1 and 0, as torch gives) and NaN some
    entry (the gate itself then makes every output NaN). Else the value that filled the table; its IEEE form by div_rn,
    whose quotient is normal for every bf16 gate but the three subnormal ones, read from the table."""
    if SIGMOID_TABLE:
        bits = gate.to(tl.uint32, bitcast=True)
        magnitude = tl.minimum(tl.maximum((bits & 0x7FFFFFFF) >> 16, LUT_LO), LUT_LO + LUT_N - 1)
        idx = (2 * (magnitude - LUT_LO) + (bits >> 31)).to(tl.int32)
        table = tl.load(table_ptr + tl.arange(0, 2 * LUT_N))
        return tl.reshape(_gather(table, tl.reshape(idx, [N_ELEM])), gate.shape)
    elif IEEE_SIGMOID & IEEE:
        sig = tl.math.div_rn(1.0, 1.0 + _exp(-gate, NO_LIBDEVICE))
        for i in tl.static_range(3):  # gates -87.5, -88 and -88.5, the negative entries of their magnitudes
            subnormal = tl.load(table_ptr + (2 * (_SUBNORMAL_SIGMOID_GATES + i - LUT_LO) + 1))
            sig = tl.where(gate == -87.5 - 0.5 * i, subnormal, sig)
        return sig
    else:
        return sigmoid(gate, NO_LIBDEVICE=NO_LIBDEVICE, IEEE=IEEE, CUDA_ARCH=CUDA_ARCH)


@triton.jit
def silu_mul_fwd_bwd(gate, up, gy, sig, IEEE: tl.constexpr):
    """y (bf16), d_gate and d_up (fp32, not yet rounded) in the reference's operation order."""
    silu = gate * sig
    y = silu * up
    d_up = gy * silu
    d_gate = gy * up * sig * (1.0 + gate * (1.0 - sig))
    if IEEE_BF16 & IEEE:
        y = bf16_round(y, IEEE)  # exact in bf16: the cast below only retypes it
    return y.to(tl.bfloat16), d_gate, d_up


@triton.jit
def grad_groups(d, IEEE: tl.constexpr):
    """(d rounded to bf16, as fp32; each group's absmax along the last axis, NaN where it holds NaN). The IEEE form
    finds NaN once a group, not once an element: rounding is monotone in the magnitude, so the rounded raw max is the
    max of the rounded values, and the raw bits' integer max keeps NaN above inf. A NaN element may then round to
    anything, but its group's scale is NaN, and quantize makes every int8 of the group 0."""
    if IEEE_BF16 & IEEE:
        return bf16_round_bits(d), bf16_round(group_absmax(d, 1), IEEE=IEEE_BF16)
    else:
        rounded = bf16_round(d, IEEE)
        return rounded, group_absmax(rounded, 1)


@triton.jit
def group_absmax(v, axis: tl.constexpr):
    """max |v| along axis, NaN if any element is NaN, as torch.amax (tl.max drops NaN on the GPU). Sign cleared, fp32
    bits order as int32, NaN above inf: an integer max, with no NaN-propagating float max (LLVM's AMDGPU backend has
    none before gfx950) and no custom-combine reduction (Iluvatar's toolchain has miscompiled those)."""
    magnitude = v.to(tl.int32, bitcast=True) & 0x7FFFFFFF
    return tl.max(magnitude, axis=axis).to(tl.float32, bitcast=True)


@triton.jit
def group_scale(absmax):
    """max(absmax / 127, 1e-10), keeping NaN as torch.clamp does (tl.maximum would drop it)."""
    scale = absmax * (1.0 / 127.0)
    return tl.where(scale < 1e-10, 1e-10, scale)


@triton.jit
def quantize(v, scale, inv_scale, IEEE: tl.constexpr, CUDA_ARCH: tl.constexpr):
    """int8(trunc(clamp(v / scale, +-127))) for |v| <= the group's absmax, v / scale rounded as IEEE division. No
    clamp: |v / scale| < 128, and truncation alone lands in [-127, 127]. The division: IEEE_DIVISION, div_rn; native,
    Markstein's correction of v * (1/scale) (each tl.fma must round once). The int8 conversion: IEEE_INT8, through
    int32; native, the backend's cast (or PTX), NaN -> 0 as PyTorch's (proven: the head of "the math")."""
    if IEEE_DIVISION & IEEE:
        q = tl.math.div_rn(v, scale)
    else:
        q0 = v * inv_scale
        rem = tl.fma(q0, -scale, v)  # not -q0: that would cost a subtraction per element
        q = tl.fma(rem, inv_scale, q0)
    if IEEE_INT8 & IEEE:
        return _int8_of_quotient(q, scale)
    else:
        return _truncate_to_int8(q, CUDA_ARCH)


@triton.jit
def grad_rows_quantized(gate, up, gy, sig, IEEE: tl.constexpr, CUDA_ARCH: tl.constexpr):
    """(y (bf16), the int8 and scales of d_gate, those of d_up) of rows of gate, up, grad_y and their sigmoid, each
    row one group: the fused kernel's math, which the probe's pipeline check runs as it is."""
    y, d_gate, d_up = silu_mul_fwd_bwd(gate, up, gy, sig, IEEE)
    d_gate, absmax_gate = grad_groups(d_gate, IEEE)
    d_up, absmax_up = grad_groups(d_up, IEEE)
    s_gate = group_scale(absmax_gate)
    s_up = group_scale(absmax_up)
    q_gate = quantize(d_gate, s_gate[:, None], tl.math.div_rn(1.0, s_gate)[:, None], IEEE, CUDA_ARCH)
    q_up = quantize(d_up, s_up[:, None], tl.math.div_rn(1.0, s_up)[:, None], IEEE, CUDA_ARCH)
    return y, q_gate, s_gate, q_up, s_up


@triton.jit
def _int8_of_quotient(q, scale):
    """int8(trunc(q)) for q a quotient of its group's values by the group's scale: |q| < 128 where the scale is finite,
    and there a float -> int32 conversion truncates on every backend; else every quotient is NaN or 0 (v / inf), and
    PyTorch's cast makes a NaN 0: so 0, decided once a group from the scale's bits."""
    return tl.where(_finite(scale), q, 0.0).to(tl.int32).to(tl.int8)


# ---------------------------------------------------------------- NVIDIA-only pieces, each with its tl twin
# CUDA_ARCH: the compute capability on the nvidia route (90 for sm_90), else 0 (the interpreter too). A piece runs
# only where its instruction exists, its plain-tl twin everywhere else.

@triton.jit
def _truncate_to_int8(q, CUDA_ARCH: tl.constexpr):
    """int8(trunc(q)) for |q| < 128, NaN -> 0. From sm_72, four at a time: cvt.rzi to s32, then two cvt.pack into one
    register (the cast's own lowering converts to s16 and masks and permutes bytes)."""
    if CUDA_ARCH >= 72:
        return tl.inline_asm_elementwise(
            """{
            .reg .s32 a, b, c, d, hi;
            cvt.rzi.s32.f32 a, $1;
            cvt.rzi.s32.f32 b, $2;
            cvt.rzi.s32.f32 c, $3;
            cvt.rzi.s32.f32 d, $4;
            cvt.pack.sat.s8.s32.b32 hi, d, c, 0;
            cvt.pack.sat.s8.s32.b32 $0, b, a, hi;
            }""",
            "=r,r,r,r,r", [q], dtype=tl.int8, is_pure=True, pack=4)
    else:
        return q.to(tl.int8)


@triton.jit
def _reciprocal_ptx(d):
    """1/d by PTX div.rn.f32: IEEE, subnormal results kept (see sigmoid). Twin: reciprocal_native."""
    return tl.inline_asm_elementwise("div.rn.f32 $0, $1, $2;", "=r,r,r", [tl.full(d.shape, 1.0, tl.float32), d],
                                     dtype=tl.float32, is_pure=True, pack=1)


@triton.jit
def store_scales(ptrs, scales, CUDA_ARCH: tl.constexpr):
    """tl.store(ptrs, scales), but on NVIDIA straight from the reduction's layout: the threads that share a reduced
    value all store it, where tl.store would first move each to one owner through shared memory (barriers)."""
    if CUDA_ARCH > 0:
        tl.inline_asm_elementwise("st.global.b32 [$1], $2;\n mov.u32 $0, 0;", "=r,l,r",
                                  [ptrs, scales.to(tl.uint32, bitcast=True)], dtype=tl.int32, is_pure=False, pack=1)
    else:
        tl.store(ptrs, scales)


@triton.jit
def discard_from_l2(ptr, N_LINES: tl.constexpr, CUDA_ARCH: tl.constexpr):
    """From sm_80: drops N_LINES 128-byte lines from ptr on out of L2 unwritten. Twin: nothing (no output changes)."""
    if CUDA_ARCH >= 80:
        lines = ptr.to(tl.pointer_type(tl.int8)) + tl.arange(0, N_LINES) * 128
        tl.inline_asm_elementwise("discard.global.L2 [$1], 128;\n mov.u32 $0, 0;", "=r,l", [lines],
                                  dtype=tl.int32, is_pure=False, pack=1)


# ---------------------------------------------------------------- kernels

@triton.jit
def _sigmoid_table_kernel(table_ptr, BLOCK: tl.constexpr, NO_LIBDEVICE: tl.constexpr, NPU_DIVISION: tl.constexpr):
    """table[2 * i + sign] = sigmoid of the bf16 gate with that sign and magnitude bits LUT_LO + i: the IEEE form, or
    the backend's division where IEEE (NPU_DIVISION: Ascend's). One fill a device, every route: the witness reads it."""
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    bits = (((i % 2) << 15) | (LUT_LO + i // 2)) << 16
    sig = _two_pass_sigmoid(bits.to(tl.float32, bitcast=True), table_ptr, EXACT=True, NO_LIBDEVICE=NO_LIBDEVICE,
                            NPU_DIVISION=NPU_DIVISION, TABLE_FREE=True, IEEE=IEEE_ALL, CUDA_ARCH=0)
    tl.store(table_ptr + i, sig)


@triton.jit
def _load_rows(x_ptr, grad_y_ptr, rows, cols, H, stride_x, stride_gy, wanted, dtype: tl.constexpr):
    """rows x cols of gate, up and grad_y (read once, so first out of L2) as dtype: fp32 for use, bf16 to be held (a
    prefetch). wanted: None, or False for a prefetch past the tile's last slice (nothing is read then)."""
    x_offs = rows[:, None] * stride_x + cols[None, :]
    gate = tl.load(x_ptr + x_offs, mask=wanted, eviction_policy="evict_first").to(dtype)
    up = tl.load(x_ptr + x_offs + H, mask=wanted, eviction_policy="evict_first").to(dtype)
    gy = tl.load(grad_y_ptr + rows[:, None] * stride_gy + cols[None, :], mask=wanted,
                 eviction_policy="evict_first").to(dtype)
    return gate, up, gy


@triton.jit
def _grad_rows_quant(gate, up, gy, grad_q_ptr, grad_s_ptr, table_ptr, rows, cols, pid_h, H, stride_gq, stride_gs,
                     N_ELEM: tl.constexpr, SIGMOID_TABLE: tl.constexpr, CUDA_ARCH: tl.constexpr,
                     NO_LIBDEVICE: tl.constexpr, IEEE: tl.constexpr):
    """Writes the grad_input int8 and scales of rows x cols of gate, up and grad_y; returns their y (bf16)."""
    gate, up, gy = gate.to(tl.float32), up.to(tl.float32), gy.to(tl.float32)
    sig = sigmoid_lookup(gate, table_ptr, N_ELEM, NO_LIBDEVICE, SIGMOID_TABLE, IEEE, CUDA_ARCH)
    y, q_gate, s_gate, q_up, s_up = grad_rows_quantized(gate, up, gy, sig, IEEE, CUDA_ARCH)
    q_offs = rows[:, None] * stride_gq + cols[None, :]
    tl.store(grad_q_ptr + q_offs, q_gate)
    tl.store(grad_q_ptr + q_offs + H, q_up)
    store_scales(grad_s_ptr + rows * stride_gs + pid_h, s_gate, CUDA_ARCH)
    store_scales(grad_s_ptr + rows * stride_gs + H // GROUP + pid_h, s_up, CUDA_ARCH)
    return y


# Every kernel's runtime arguments and their Triton types: the main kernel takes them all, in this order, every other
# a subset in the same order. Launch signatures, the launcher's argument lists and specialization follow from it.
KERNEL_ARGUMENTS = (
    ("x_ptr", "*bf16"), ("grad_y_ptr", "*bf16"), ("grad_q_ptr", "*i8"), ("grad_s_ptr", "*fp32"),
    ("y_q_ptr", "*i8"), ("y_s_ptr", "*fp32"), ("table_ptr", "*fp32"), ("scratch_ptr", "*bf16"),
    ("M", "i32"), ("H", "i32"),
    ("stride_x", "i32"), ("stride_gy", "i32"), ("stride_gq", "i32"), ("stride_gs", "i32"),
    ("stride_yq", "i32"), ("stride_ys", "i32"),
)
# Not specialized: the scale rows' strides (scales are stored one float at a time: nothing gained, fewer variants)
# and M, which only counts tiles (Iluvatar's toolchain has reused a binary for another M and N).
_UNSPECIALIZED = ("M", "stride_gs", "stride_ys")
# A compiled kernel is launched directly under a key at least as fine as any JIT's known here (one key, one binary):
# each integer's value and each pointer's address modulo _ALIGNMENT bytes (upstream specializes on 16, Iluvatar on 64).
_ALIGNMENT = 64


@triton.jit(do_not_specialize=_UNSPECIALIZED)
def _silu_mul_quant_kernel(x_ptr, grad_y_ptr, grad_q_ptr, grad_s_ptr, y_q_ptr, y_s_ptr, table_ptr, scratch_ptr, M, H,
                           stride_x, stride_gy, stride_gq, stride_gs, stride_yq, stride_ys, CHUNK: tl.constexpr,
                           Y_CHUNK: tl.constexpr, SIGMOID_TABLE: tl.constexpr, CUDA_ARCH: tl.constexpr,
                           NO_LIBDEVICE: tl.constexpr, IEEE: tl.constexpr, PERSISTENT: tl.constexpr,
                           INDEX_64: tl.constexpr, PREFETCH: tl.constexpr):
    """One program owns a GROUP-token x GROUP-channel tile, which closes both kinds of group: every byte is read or
    written once. In CHUNK-token slices it closes the tile's grad_input row groups and parks y (bf16, transposed) in the
    program's scratch slot, in L2 (not in registers: three programs share an SM); then it reads y back in
    Y_CHUNK-channel rows of y_q_t, quantizes them by token group, and drops the slot from L2 unwritten. Program ids run
    along H first, so programs that run together read whole rows of x and grad_y (DRAM pages). PERSISTENT: program p of
    P takes tiles p, p + P, ... in one slot, whose dirty lines the next tile rewrites in L2."""
    if PERSISTENT:
        tiles = (M // GROUP) * (H // GROUP)
        program = _first_tile(INDEX_64)
        # Counts its tiles (stepping the tile costs registers), in a while: interpreted, range() takes no runtime bound
        tiles_here = tl.cdiv(tiles - program, tl.num_programs(0))
        t = 0
        while t < tiles_here:
            tile = program + t * tl.num_programs(0)
            _silu_mul_quant_tile(
                x_ptr, grad_y_ptr, grad_q_ptr, grad_s_ptr, y_q_ptr, y_s_ptr, table_ptr, scratch_ptr,
                tile % (H // GROUP), tile // (H // GROUP), program, H, stride_x, stride_gy, stride_gq, stride_gs,
                stride_yq, stride_ys, CHUNK, Y_CHUNK, SIGMOID_TABLE, CUDA_ARCH, NO_LIBDEVICE, IEEE, PREFETCH)
            _slot_barrier()  # every read of the slot is done before the next tile writes it
            t += 1
    else:
        pid_h, pid_m = tl.program_id(0), tl.program_id(1)
        if INDEX_64:
            pid_h, pid_m = pid_h.to(tl.int64), pid_m.to(tl.int64)
        _silu_mul_quant_tile(
            x_ptr, grad_y_ptr, grad_q_ptr, grad_s_ptr, y_q_ptr, y_s_ptr, table_ptr, scratch_ptr,
            pid_h, pid_m, pid_m * (H // GROUP) + pid_h, H, stride_x, stride_gy, stride_gq, stride_gs, stride_yq,
            stride_ys, CHUNK, Y_CHUNK, SIGMOID_TABLE, CUDA_ARCH, NO_LIBDEVICE, IEEE, PREFETCH)


@triton.jit
def _silu_mul_quant_tile(x_ptr, grad_y_ptr, grad_q_ptr, grad_s_ptr, y_q_ptr, y_s_ptr, table_ptr, scratch_ptr, pid_h,
                         pid_m, slot_index, H, stride_x, stride_gy, stride_gq, stride_gs, stride_yq, stride_ys,
                         CHUNK: tl.constexpr, Y_CHUNK: tl.constexpr, SIGMOID_TABLE: tl.constexpr,
                         CUDA_ARCH: tl.constexpr, NO_LIBDEVICE: tl.constexpr, IEEE: tl.constexpr,
                         PREFETCH: tl.constexpr):
    """The tile (pid_h, pid_m), y parked in slot slot_index. PREFETCH: each slice's loads are issued before the
    previous slice's math (a slice's inputs held twice: only where threads have registers to spare)."""
    slot = scratch_ptr + slot_index * (GROUP * GROUP)
    local = tl.arange(0, GROUP)
    cols = pid_h * GROUP + local
    if PREFETCH:
        gate, up, gy = _load_rows(x_ptr, grad_y_ptr, pid_m * GROUP + tl.arange(0, CHUNK), cols, H, stride_x,
                                  stride_gy, None, tl.bfloat16)
    for c in range(GROUP // CHUNK):
        tokens = c * CHUNK + tl.arange(0, CHUNK)
        if PREFETCH:
            slice_gate, slice_up, slice_gy = gate, up, gy
            # Past the last slice nothing is read, and the addresses stay the tile's own.
            following = tl.minimum(c + 1, GROUP // CHUNK - 1) * CHUNK + tl.arange(0, CHUNK)
            gate, up, gy = _load_rows(x_ptr, grad_y_ptr, pid_m * GROUP + following, cols, H, stride_x,
                                      stride_gy, c + 1 < GROUP // CHUNK, tl.bfloat16)
        else:
            slice_gate, slice_up, slice_gy = _load_rows(x_ptr, grad_y_ptr, pid_m * GROUP + tokens, cols, H,
                                                        stride_x, stride_gy, None, tl.float32)
        y = _grad_rows_quant(slice_gate, slice_up, slice_gy, grad_q_ptr, grad_s_ptr, table_ptr, pid_m * GROUP + tokens,
                             cols, pid_h, H, stride_gq, stride_gs, CHUNK * GROUP, SIGMOID_TABLE, CUDA_ARCH,
                             NO_LIBDEVICE, IEEE)
        _park_slice(slot, y, local, tokens)
    _slot_barrier()  # every slice's y is in the slot before any thread reads it back

    # y's groups are the GROUP tokens of one channel; y_q_t is H x M.
    for c in range(GROUP // Y_CHUNK):
        h = c * Y_CHUNK + tl.arange(0, Y_CHUNK)
        y_t = _read_parked(slot, h, local).to(tl.float32)
        s_y = group_scale(group_absmax(y_t, 1))
        store_scales(y_s_ptr + (pid_h * GROUP + h) * stride_ys + pid_m, s_y, CUDA_ARCH)
        tl.store(y_q_ptr + (pid_h * GROUP + h)[:, None] * stride_yq + (pid_m * GROUP + local)[None, :],
                 quantize(y_t, s_y[:, None], tl.math.div_rn(1.0, s_y)[:, None], IEEE, CUDA_ARCH))
    _release_slot(slot, CUDA_ARCH)


# The scratch slot's handoff, shared by the fused kernel and _ordering_check_kernel, so that the check runs the very
# stores, barrier, loads and cache hints the fused rungs rely on.

@triton.jit
def _park_slice(slot, y, local, tokens):
    """Stores a slice's y (tokens x channels) in the slot transposed, slot[channel][token], kept in L2."""
    tl.store(slot + local[None, :] * GROUP + tokens[:, None], y, eviction_policy="evict_last")


@triton.jit
def _slot_barrier():
    """The ordering every fused rung relies on ("slot barrier", ORDERINGS): a program's stores to its slot before it
    are seen by all its threads' loads after it, and its loads before it are done before its stores after it. Whether
    a backend's barrier orders global memory so is proven on each device by _ordering_check_kernel."""
    tl.debug_barrier()


@triton.jit
def _read_parked(slot, h, local):
    """The slot's channels h, each with the tile's GROUP tokens: rows of y_q_t. Through L1: the program wrote the slot
    (ordered by _slot_barrier), and most of its lines are still in this SM's L1."""
    return tl.load(slot + h[:, None] * GROUP + local[None, :])


@triton.jit
def _release_slot(slot, CUDA_ARCH: tl.constexpr):
    """From sm_80: once every read of the slot is done, drops its lines from L2 unwritten."""
    if CUDA_ARCH >= 80:
        _slot_barrier()
        discard_from_l2(slot, GROUP * GROUP * 2 // 128, CUDA_ARCH)


@triton.jit
def _ordering_value(program, rnd, token, channel):
    """What program writes at (token, channel) of its slot in a round of the ordering check: an integer in
    [-127, 127], exact in bf16, unlike the previous round's there and its neighbours'."""
    return ((program * 7 + rnd * 37 + token * 5 + channel * 3) % 255 - 127).to(tl.float32)


@triton.jit
def _stamped_record(ptr, count, compared, first, stamp):
    """Stores a proof record (count, compared, first, stamp) at ptr; its stamp (_run_stamp) shows this run wrote it."""
    field = tl.arange(0, 4)
    tl.store(ptr + field, tl.where(field == 0, count, tl.where(field == 1, compared,
                                                               tl.where(field == 2, first, stamp))))


@triton.jit(do_not_specialize=("stamp",))
def _ordering_check_kernel(slots_ptr, record_ptr, stamp, ROUNDS: tl.constexpr, CHUNK: tl.constexpr,
                           Y_CHUNK: tl.constexpr, CUDA_ARCH: tl.constexpr):
    """The ordering the fused rungs rely on, at a rung's own settings: each program, in a slot of its own, ROUNDS times
    parks CHUNK-token slices, passes _slot_barrier, reads the slot back in Y_CHUNK-channel rows (what other warps
    wrote) and passes the barrier again, as the persistent walk does between tiles; then releases the slot. A read
    that is not this round's value is a violation. Writes (violations, compared, 0, stamp) at record_ptr + 4 * p."""
    program = tl.program_id(0)
    slot = slots_ptr + program * (GROUP * GROUP)
    local = tl.arange(0, GROUP)
    violations, compared = 0, 0
    for r in range(ROUNDS):
        for c in range(GROUP // CHUNK):
            tokens = c * CHUNK + tl.arange(0, CHUNK)
            value = _ordering_value(program, r, tokens[:, None], local[None, :])
            _park_slice(slot, value.to(tl.bfloat16), local, tokens)
        _slot_barrier()
        for c in range(GROUP // Y_CHUNK):
            h = c * Y_CHUNK + tl.arange(0, Y_CHUNK)
            expected = _ordering_value(program, r, local[None, :], h[:, None])
            got = _read_parked(slot, h, local).to(tl.float32)
            violations += tl.sum(tl.sum(tl.where(got != expected, 1, 0), 1), 0)
            compared += tl.sum(tl.sum(tl.where(expected >= -127.0, 1, 0), 1), 0)
        _slot_barrier()
    _release_slot(slot, CUDA_ARCH)
    _stamped_record(record_ptr + 4 * program, violations, compared, 0, stamp)


# ---------------------------------------------------------------- the two-pass kernels: no slot, no reload
# grad_input from row groups, then y, in two launches: no program loads what it stored itself (Ascend's compiler
# corrupts such a reload: triton-ascend issue #1416), no barrier, no mask, every store's last dimension contiguous.
# The y kernel computes y from x read again, or quantizes the y the grad kernel kept in the scratch (KEEP_Y: the
# launch between them orders the handoff). Program p of the 1-D grid takes tiles p, p + P, ...; the scales of GROUPS
# consecutive groups are stored at once. EXACT: the math helpers in the forms IEEE picks, else the reference's
# operations as written (tolerant). NPU_DIVISION: divisions by the operator / (on Ascend the vector divide of the
# reference's Div, IEEE), else tl.math.div_rn.

@triton.jit
def _two_pass_sigmoid(gate, table_ptr, EXACT: tl.constexpr, NO_LIBDEVICE: tl.constexpr, NPU_DIVISION: tl.constexpr,
                      TABLE_FREE: tl.constexpr, IEEE: tl.constexpr, CUDA_ARCH: tl.constexpr):
    """NPU_DIVISION or tolerant: 1 / (1 + exp(-gate)) as the reference writes it (on Ascend torch.sigmoid is those very
    Exp, Adds and Div). Else TABLE_FREE: the IEEE sigmoid whole (plain needs no table kernel); else sigmoid_lookup."""
    if NPU_DIVISION:
        return 1.0 / (1.0 + _exp(-gate, NO_LIBDEVICE))
    elif not EXACT:
        return tl.math.div_rn(1.0, 1.0 + _exp(-gate, NO_LIBDEVICE))
    elif TABLE_FREE:
        return sigmoid(gate, NO_LIBDEVICE=NO_LIBDEVICE, IEEE=IEEE_ALL, CUDA_ARCH=0)
    else:
        return sigmoid_lookup(gate, table_ptr, N_ELEM=1, NO_LIBDEVICE=NO_LIBDEVICE, SIGMOID_TABLE=False, IEEE=IEEE,
                              CUDA_ARCH=CUDA_ARCH)


@triton.jit
def _quantize_rows(v, EXACT: tl.constexpr, NPU_DIVISION: tl.constexpr, IEEE: tl.constexpr, CUDA_ARCH: tl.constexpr):
    """(int8 of v, the scales) for groups that are the rows of v (fp32 holding bf16 values, NaN kept). EXACT: as
    quantize; else as the reference writes it (tl.max drops NaN, and / may not be IEEE: not byte-exact)."""
    if EXACT:
        scale = group_scale(group_absmax(v, 1))
        if NPU_DIVISION:
            return _int8_of_quotient(v / scale[:, None], scale[:, None]), scale
        else:
            return quantize(v, scale[:, None], tl.math.div_rn(1.0, scale)[:, None], IEEE, CUDA_ARCH), scale
    else:
        scale = tl.maximum(tl.max(tl.abs(v), axis=1) / 127.0, 1e-10)
        return tl.minimum(tl.maximum(v / scale[:, None], -127.0), 127.0).to(tl.int8), scale


@triton.jit
def _with_column(tile, values, column, columns):
    """tile with its column `column` (of the index row `columns`) replaced by values."""
    return tl.where(columns[None, :] == column, values[:, None], tile)


@triton.jit
def _first_tile(INDEX_64: tl.constexpr):
    """This program's first tile; it then takes every num_programs-th."""
    tile = tl.program_id(0)
    if INDEX_64:
        tile = tile.to(tl.int64)
    return tile


@triton.jit(do_not_specialize=_UNSPECIALIZED)
def _grad_rows_kernel(x_ptr, grad_y_ptr, grad_q_ptr, grad_s_ptr, table_ptr, scratch_ptr, M, H, stride_x, stride_gy,
                      stride_gq, stride_gs, ROWS: tl.constexpr, GROUPS: tl.constexpr, EXACT: tl.constexpr,
                      NO_LIBDEVICE: tl.constexpr, NPU_DIVISION: tl.constexpr, TABLE_FREE: tl.constexpr,
                      IEEE: tl.constexpr, CUDA_ARCH: tl.constexpr, INDEX_64: tl.constexpr, KEEP_Y: tl.constexpr):
    """grad_input: a tile is ROWS tokens x GROUPS groups of GROUP channels, of each half; the groups are closed one by
    one and their scales stored together. KEEP_Y: y (bf16) too, in the scratch (M x H), for _y_kept_kernel."""
    tiles_h = H // (GROUP * GROUPS)
    tiles = (M // ROWS) * tiles_h
    tile = _first_tile(INDEX_64)
    local, groups = tl.arange(0, GROUP), tl.arange(0, GROUPS)
    while tile < tiles:  # a while loop: the interpreter takes no runtime bound in range()
        tokens = (tile // tiles_h) * ROWS + tl.arange(0, ROWS)
        first_group = (tile % tiles_h) * GROUPS
        s_gate, s_up = tl.zeros([ROWS, GROUPS], dtype=tl.float32), tl.zeros([ROWS, GROUPS], dtype=tl.float32)
        for g in range(GROUPS):
            cols = (first_group + g) * GROUP + local
            x_offs = tokens[:, None] * stride_x + cols[None, :]
            gate = tl.load(x_ptr + x_offs).to(tl.float32)
            up = tl.load(x_ptr + x_offs + H).to(tl.float32)
            gy = tl.load(grad_y_ptr + tokens[:, None] * stride_gy + cols[None, :]).to(tl.float32)
            sig = _two_pass_sigmoid(gate, table_ptr, EXACT, NO_LIBDEVICE, NPU_DIVISION, TABLE_FREE, IEEE, CUDA_ARCH)
            y, d_gate, d_up = silu_mul_fwd_bwd(gate, up, gy, sig, IEEE)
            if KEEP_Y:
                tl.store(scratch_ptr + tokens[:, None] * H + cols[None, :], y)
            # Rounded with NaN kept in each element, not by grad_groups: holding the raw values beside the rounded
            # ones for their max takes Ascend's unified buffer past its limit (check.py --targets judge).
            d_gate, d_up = bf16_round(d_gate, IEEE), bf16_round(d_up, IEEE)
            q_gate, s = _quantize_rows(d_gate, EXACT, NPU_DIVISION, IEEE, CUDA_ARCH)
            s_gate = _with_column(s_gate, s, g, groups)
            q_up, s = _quantize_rows(d_up, EXACT, NPU_DIVISION, IEEE, CUDA_ARCH)
            s_up = _with_column(s_up, s, g, groups)
            q_offs = tokens[:, None] * stride_gq + cols[None, :]
            tl.store(grad_q_ptr + q_offs, q_gate)
            tl.store(grad_q_ptr + q_offs + H, q_up)
        s_offs = tokens[:, None] * stride_gs + first_group + groups[None, :]
        tl.store(grad_s_ptr + s_offs, s_gate)
        tl.store(grad_s_ptr + s_offs + H // GROUP, s_up)
        tile += tl.num_programs(0)


@triton.jit
def _y_tiles(x_ptr, scratch_ptr, y_q_ptr, y_s_ptr, table_ptr, M, H, stride_x, stride_yq, stride_ys,
             CHANNELS: tl.constexpr, GROUPS: tl.constexpr, EXACT: tl.constexpr, NO_LIBDEVICE: tl.constexpr,
             NPU_DIVISION: tl.constexpr, TABLE_FREE: tl.constexpr, IEEE: tl.constexpr, CUDA_ARCH: tl.constexpr,
             INDEX_64: tl.constexpr, LOADS: tl.constexpr, GATHER: tl.constexpr):
    """The y kernels' walk: a tile is CHANNELS channels x GROUPS token groups, y in y_q_t's order (channels x tokens).
    LOADS: "kept", y as columns of the scratch the grad kernel kept it in; "columns", gate and up as columns (strided),
    in y_q_t's order; "rows", as rows (contiguous), y transposed in registers. GATHER: see Route.column_gather."""
    tiles_h = H // CHANNELS
    tiles = (M // (GROUP * GROUPS)) * tiles_h
    tile = _first_tile(INDEX_64)
    local, groups = tl.arange(0, GROUP), tl.arange(0, GROUPS)
    while tile < tiles:
        channels = (tile % tiles_h) * CHANNELS + tl.arange(0, CHANNELS)
        first_group = (tile // tiles_h) * GROUPS
        s_y = tl.zeros([CHANNELS, GROUPS], dtype=tl.float32)
        for g in range(GROUPS):
            tokens = (first_group + g) * GROUP + local
            if LOADS == "kept":
                y_t = tl.load(scratch_ptr + tokens[None, :] * H + channels[:, None]).to(tl.float32)
            else:
                if LOADS == "rows":
                    x_offs = tokens[:, None] * stride_x + channels[None, :]
                    gate, up = tl.load(x_ptr + x_offs), tl.load(x_ptr + x_offs + H)
                else:
                    x_offs = tokens[None, :] * stride_x + channels[:, None]
                    if GATHER:  # offsets a compiler cannot see as affine (no-op max)
                        x_offs = tl.maximum(x_offs, 0)
                    gate, up = tl.load(x_ptr + x_offs), tl.load(x_ptr + (x_offs + H))
                gate = gate.to(tl.float32)
                sig = _two_pass_sigmoid(gate, table_ptr, EXACT, NO_LIBDEVICE, NPU_DIVISION, TABLE_FREE, IEEE, CUDA_ARCH)
                # Only y is kept; gate stands in for the grad_y that the y kernels do not read.
                y, _, _ = silu_mul_fwd_bwd(gate, up.to(tl.float32), gate, sig, IEEE)
                if LOADS == "rows":
                    y = tl.trans(y)
                y_t = y.to(tl.float32)
            q, s = _quantize_rows(y_t, EXACT, NPU_DIVISION, IEEE, CUDA_ARCH)
            tl.store(y_q_ptr + channels[:, None] * stride_yq + tokens[None, :], q)
            s_y = _with_column(s_y, s, g, groups)
        tl.store(y_s_ptr + channels[:, None] * stride_ys + first_group + groups[None, :], s_y)
        tile += tl.num_programs(0)


@triton.jit(do_not_specialize=_UNSPECIALIZED)
def _y_columns_kernel(x_ptr, y_q_ptr, y_s_ptr, table_ptr, M, H, stride_x, stride_yq, stride_ys,
                      CHANNELS: tl.constexpr, GROUPS: tl.constexpr, EXACT: tl.constexpr, NO_LIBDEVICE: tl.constexpr,
                      NPU_DIVISION: tl.constexpr, TABLE_FREE: tl.constexpr, IEEE: tl.constexpr,
                      CUDA_ARCH: tl.constexpr, GATHER: tl.constexpr, INDEX_64: tl.constexpr):
    _y_tiles(x_ptr, None, y_q_ptr, y_s_ptr, table_ptr, M, H, stride_x, stride_yq, stride_ys, CHANNELS, GROUPS, EXACT,
             NO_LIBDEVICE, NPU_DIVISION, TABLE_FREE, IEEE, CUDA_ARCH, INDEX_64, LOADS="columns", GATHER=GATHER)


@triton.jit(do_not_specialize=_UNSPECIALIZED)
def _y_kept_kernel(y_q_ptr, y_s_ptr, scratch_ptr, M, H, stride_yq, stride_ys, CHANNELS: tl.constexpr,
                   GROUPS: tl.constexpr, EXACT: tl.constexpr, NPU_DIVISION: tl.constexpr, IEEE: tl.constexpr,
                   CUDA_ARCH: tl.constexpr, INDEX_64: tl.constexpr):
    _y_tiles(None, scratch_ptr, y_q_ptr, y_s_ptr, None, M, H, None, stride_yq, stride_ys, CHANNELS, GROUPS, EXACT,
             True, NPU_DIVISION, True, IEEE, CUDA_ARCH, INDEX_64, LOADS="kept", GATHER=False)


@triton.jit(do_not_specialize=_UNSPECIALIZED)
def _y_transposed_kernel(x_ptr, y_q_ptr, y_s_ptr, table_ptr, M, H, stride_x, stride_yq, stride_ys,
                         CHANNELS: tl.constexpr, GROUPS: tl.constexpr, EXACT: tl.constexpr,
                         NO_LIBDEVICE: tl.constexpr, NPU_DIVISION: tl.constexpr, TABLE_FREE: tl.constexpr,
                         IEEE: tl.constexpr, CUDA_ARCH: tl.constexpr, INDEX_64: tl.constexpr):
    _y_tiles(x_ptr, None, y_q_ptr, y_s_ptr, table_ptr, M, H, stride_x, stride_yq, stride_ys, CHANNELS, GROUPS, EXACT,
             NO_LIBDEVICE, NPU_DIVISION, TABLE_FREE, IEEE, CUDA_ARCH, INDEX_64, LOADS="rows", GATHER=False)


# ---------------------------------------------------------------- backends, routes and launch settings

class Route(NamedTuple):
    """One rung of a ladder; an entry says only where it differs from the IEEE per-element fused rung."""
    name: str
    native_math: bool = False  # the backend's conversions, fma and division (proven by the probe), else IEEE arithmetic
    sigmoid_table: bool = False  # the sigmoid gathered from the table (tl.gather, Triton 3.4+), else per element
    two_pass: bool = False  # grad_input, then y in a second launch; else the fused kernel
    transpose_in_registers: bool = False  # the y kernel loads rows and transposes y in registers, else loads columns
    keep_y: bool = False  # the grad kernel keeps y (bf16) in the scratch, for the y kernel to quantize
    ptx: bool = False  # the PTX pieces where the arch has them, and the register cap where the backend takes it
    libdevice: bool = True  # libdevice's exp, else tl.exp (Ascend's libdevice is a stub)
    npu_division: bool = False  # divides with / (the reference's own vector divide on Ascend), else div_rn
    column_gather: bool = False  # column loads through offsets no compiler sees as affine (Ascend: a compact gather)
    exact: bool = True  # the reference's bytes, else its tolerance (the tolerant rungs)
    persistent: bool = False  # as many programs as the device holds at once, else one a tile
    ordering: Optional[str] = None  # a key of ORDERINGS: what its kernels rely on, proven before its first output
    chunk: int = 32  # tokens a slice (a grad tile)
    threads: int = 256  # threads a program
    y_chunk: int = 64  # channels a row of y (a y tile)
    scale_groups: int = 1  # the most groups whose scales a two-pass program stores at once (a power of two)
    many_tiles: Optional[tuple] = None  # (threads, chunk) past MANY_TILES_PER_SM tiles an SM

    @property
    def probed(self):
        """Every native route's but the nvidia ones, whose PTX pieces the ISA defines (tools/exhaustive_exactness.py
        proved them on the H100; a probe would lengthen their cold start by half)."""
        return self.native_math and not self.ptx


# The orderings a route can rely on (Route.ordering), each with what it is, for the warning that leaves its rungs.
ORDERINGS = {"slot barrier": "tl.debug_barrier ordering a program's stores to its scratch slot before its other "
                             "threads' loads, and its loads before the next stores"}
_FUSED = {"ordering": "slot barrier"}
# Ascend's: 8-token grad tiles, y in 16 channels (the vector transpose's 16 x 16 blocks) or 4 columns, 32-byte scales.
_ASCEND = {"two_pass": True, "libdevice": False, "npu_division": True, "column_gather": True, "persistent": True,
           "chunk": 8, "scale_groups": 8}
# Each ladder's order: PLATFORMS.md, "Routes"; each rung's settings its fastest (PERF_NOTES.md).
ROUTE_TABLE = {r.name: r for r in (
    Route("nvidia", native_math=True, sigmoid_table=True, ptx=True, **_FUSED),
    Route("nvidia_per_element", native_math=True, ptx=True, **_FUSED),
    Route("native", native_math=True, sigmoid_table=True, persistent=True, y_chunk=32, **_FUSED),
    Route("native_per_element", native_math=True, threads=512, many_tiles=(256, 16), **_FUSED),
    Route("generic_per_element", threads=512, **_FUSED),
    Route("native_two_pass", native_math=True, two_pass=True, keep_y=True, threads=128, chunk=16, y_chunk=32),
    # The last exact rung: no slot, gather, inline asm, vendor option or barrier.
    Route("plain", two_pass=True, keep_y=True, threads=128, chunk=8, y_chunk=16),
    # Ascend's compiler splits tl.fma: no native arithmetic can be proven there.
    Route("ascend_transposed", transpose_in_registers=True, y_chunk=16, **_ASCEND),
    Route("ascend_columns", y_chunk=4, **_ASCEND),
    # Not byte-exact: the reference's operations as written, as the entries that pass the judge on six chips.
    Route("tolerant", two_pass=True, libdevice=False, npu_division=True, exact=False, y_chunk=32),
    Route("tolerant_npu", exact=False, y_chunk=4, **_ASCEND),
)}
ROUTES = tuple(ROUTE_TABLE)
ROUTE_ENV = "SILU_DOT_ROUTE"
_PORTABLE_LADDER = ("native", "native_per_element", "generic_per_element", "native_two_pass", "plain", "tolerant")


def route_available(route):
    """Whether this Triton can have the route at all: a table route needs a tl.gather that compiles."""
    return _SIGMOID_TABLE or not ROUTE_TABLE[route].sigmoid_table


class Backend(NamedTuple):
    """One backend, its facts' sources in PLATFORMS.md, "Backends"; an entry says only where it differs."""
    name: str
    # How it is recognised (None, (), "": any): the torch device type, the Triton target, a pattern of the device name.
    device_type: Optional[str]
    targets: tuple
    triton: str  # the release its Triton is built on
    name_pattern: str = ""
    routes: tuple = _PORTABLE_LADDER  # its ladder, in the order tried
    warp_size: int = 32  # where the driver reports none
    max_threads: int = 1024  # the most threads a program
    warps: Optional[int] = None  # where set, every program's, whatever their width
    max_chunk: Optional[int] = None  # a cap on a route's slices
    max_y_chunk: Optional[int] = None  # and on its y rows
    options: tuple = ()  # the compile options it takes beyond num_warps, num_stages and enable_fp_fusion
    max_grid: tuple = (2**31 - 1, 65535, 65535)  # the most programs along each grid dimension
    proof_rows: Optional[int] = None  # where set, the rows a step of the witness's kernels
    # Its JIT specializes on no more than _ALIGNMENT's key holds, so a call launches its compiled kernels directly.
    compiled_launch: bool = True

    @property
    def route(self):
        return self.routes[0]


# In order: the first entry that recognises a device is its backend.
BACKENDS = {b.name: b for b in (
    Backend("nvidia", "cuda", ("cuda",), "3.5", r"NVIDIA|TESLA|GEFORCE|QUADRO|TITAN|^[AHLBT]\d{2,3}\b",
            routes=("nvidia", "nvidia_per_element") + _PORTABLE_LADDER, options=("maxnreg",)),
    Backend("hygon", "cuda", ("hip",), "3.0", r"HYGON|DCU|BW\d{3,}|[KZ]100", warp_size=64),
    Backend("amd", "cuda", ("hip",), "3.5", warp_size=64),
    Backend("iluvatar", "cuda", ("cuda",), "3.1", r"ILUVATAR|COREX|BI-V|MR-V", warp_size=64),
    Backend("thead", "cuda", ("cuda",), "3.5", r"PPU|T-HEAD"),
    Backend("metax", "cuda", ("maca",), "3.1", warp_size=64, max_threads=512),
    # 4 warps whatever their width, as the public entry that passes there launches.
    Backend("mthreads", "musa", ("musa",), "3.1", max_threads=512, warps=4, max_chunk=16, max_y_chunk=32),
    # Its own ladder: the portable rungs' libdevice exp does not compile there, and its compiler corrupts a load of
    # what the same program stored (the fused kernel's slot); the witness's input kernel fits its unified buffer
    # in steps of 2 rows (check.py --targets judge).
    Backend("ascend", "npu", ("npu",), "3.2", routes=("ascend_transposed", "ascend_columns", "tolerant_npu"),
            max_grid=(65535, 1, 1), proof_rows=2),
    # The interpreter's native arithmetic is numpy's (its bf16 cast truncates, its fma rounds twice).
    Backend("interpreter", "cpu", (), "3.2", routes=("generic_per_element", "plain", "tolerant"), max_threads=256,
            max_grid=(65535, 65535, 65535)),
    Backend("unknown", None, (), "3.2", max_threads=256, max_grid=(65535, 65535, 65535), compiled_launch=False),
)}


def backend_for(device_type, target, device_name=None):
    """The first entry of BACKENDS that recognises a device (device_name None: matches any pattern)."""
    for backend in BACKENDS.values():
        if ((backend.device_type in (None, device_type)) and (not backend.targets or target in backend.targets)
                and (device_name is None or re.search(backend.name_pattern, device_name.upper()))):
            return backend
    return BACKENDS["unknown"]


def _backend(backend):
    return BACKENDS[backend] if isinstance(backend, str) else backend


def _route(route):
    """The Route record of a route name (or record); a ValueError for a name that is none."""
    if isinstance(route, Route):
        return route
    if route not in ROUTE_TABLE:
        raise ValueError(f"unknown route {route!r}; expected one of {ROUTES}")
    return ROUTE_TABLE[route]


class LaunchSettings(NamedTuple):
    """How the main kernels are launched (Route's words); programs: a persistent route's (None: one a tile)."""
    num_warps: int
    chunk: int
    y_chunk: int
    maxnreg: Optional[int]
    programs: Optional[int] = None
    prefetch: bool = False


class KernelLaunch(NamedTuple):
    """One kernel launch; signature: the Triton types of its runtime arguments."""
    name: str
    kernel: object
    grid: tuple
    signature: dict
    constexprs: dict
    options: dict


# Past this many tiles an SM, Route.many_tiles (PERF_NOTES.md, twenty-second round).
MANY_TILES_PER_SM = 2
# The per-element fused routes load a slice ahead at most this many threads a program, from this Triton: only
# threads of many elements spare the registers, and only some Tritons keep them few (PERF_NOTES.md, fifteenth round).
_PREFETCH_MAX_THREADS = 128
_PREFETCH_FROM = (3, 6)


def launch_settings(backend, M, H, sm_count=None, route=None, warp_size=None, resident=None):
    """The main kernels' settings (no autotuning: it costs judge time); resident: the programs an SM holds, where known.
    The ptx rungs where the backend takes maxnreg: 8 warps at 80 registers (three programs an SM), or 16 at 64 where
    two programs an SM need as many rounds as three (theirs end sooner). Else the route's within the backend's caps;
    persistent: sm_count * resident programs, a two-pass route one a core (triton-ascend's advice)."""
    backend = _backend(backend)
    route = _route(route or backend.route)
    tiles = (M // GROUP_SIZE) * (H // GROUP_SIZE)
    if route.ptx and "maxnreg" in backend.options:
        two = sm_count and tiles > 3 * sm_count and triton.cdiv(tiles, 2 * sm_count) == triton.cdiv(tiles, 3 * sm_count)
        return LaunchSettings(num_warps=16 if two else 8, chunk=32, y_chunk=64, maxnreg=64 if two else 80)
    threads, chunk = route.threads, route.chunk
    if route.many_tiles and sm_count and tiles > MANY_TILES_PER_SM * sm_count:
        threads, chunk = route.many_tiles
    warp_size = warp_size or backend.warp_size
    num_warps = backend.warps or max(1, min(threads, backend.max_threads) // warp_size)
    persistent = route.persistent and sm_count and (resident or route.two_pass)
    return LaunchSettings(
        num_warps=num_warps, chunk=min(chunk, backend.max_chunk or chunk),
        y_chunk=min(route.y_chunk, backend.max_y_chunk or route.y_chunk), maxnreg=None,
        programs=sm_count * (1 if route.two_pass else resident) if persistent else None,
        prefetch=(num_warps * warp_size <= _PREFETCH_MAX_THREADS and _TRITON_VERSION >= _PREFETCH_FROM
                  and not route.two_pass and not route.sigmoid_table))


def _route_constexprs(route, arch, ieee=()):
    """The math constexprs by which routes differ: a native rung runs the features `ieee` (those its probe found wrong
    here) IEEE, an IEEE rung all, a tolerant one none. Under the interpreter no PTX and no libdevice."""
    route = _route(route)
    return {"SIGMOID_TABLE": route.sigmoid_table,
            "CUDA_ARCH": arch if route.ptx and not _INTERPRET and isinstance(arch, int) else 0,
            "NO_LIBDEVICE": not route.libdevice or _INTERPRET,
            "IEEE": sum(bit for feature, bit in IEEE_FEATURES.items()
                        if route.exact and (not route.native_math or feature in ieee))}


# The witness's own arguments beyond KERNEL_ARGUMENTS, and their Triton types.
_WITNESS_ARGUMENTS = (("expected_gq_ptr", "*i8"), ("expected_gs_ptr", "*fp32"), ("expected_yq_ptr", "*i8"),
                      ("expected_ys_ptr", "*fp32"), ("record_ptr", "*i32"), ("stamp", "i32"), ("buffer_ptr", "*i32"),
                      ("region_ptr", "*bf16"))


def _signature(kernel):
    """The Triton types of a kernel's runtime arguments, in its order: KERNEL_ARGUMENTS' and the witness's."""
    types = dict(KERNEL_ARGUMENTS + _WITNESS_ARGUMENTS)
    return {name: types[name] for name in kernel.arg_names if name in types}


# The launches run once per device, before any call's; the proofs', once per device and launch settings.
PER_DEVICE_LAUNCHES = ("sigmoid_table", "probe")
PROOF_LAUNCHES = ("ordering",)
# The ordering check's programs (a slot each) and rounds: on a device enough that a missing barrier shows many times
# over (PERF_NOTES.md, eighteenth round); interpreted, enough to run each line.
_ORDERING_SIZE = {"PROGRAMS": 2, "ROUNDS": 2} if _INTERPRET else {"PROGRAMS": 512, "ROUNDS": 96}
# The witness's runs on a rung relying on an ordering, its input out of L2 each time: runs that differ are a race
# (PERF_NOTES.md, nineteenth round); the interpreter shows none. On other rungs two: through the JIT, then as every
# later call launches (_launch_all).
_WITNESS_RUNS = 1 if _INTERPRET else 12


def _table_launch(name, backend, route, warp_size):
    """The launch that fills the sigmoid table: launch_plan's "sigmoid_table", or witness_plan's "witness_table" where
    the route's kernels do not read it (then a table that does not compile costs the witness, not the rung)."""
    return KernelLaunch(
        name, _sigmoid_table_kernel, (2 * _LUT_N // _LUT_BLOCK, 1, 1), _signature(_sigmoid_table_kernel),
        {"BLOCK": _LUT_BLOCK, "NO_LIBDEVICE": _route_constexprs(route, None)["NO_LIBDEVICE"],
         "NPU_DIVISION": route.npu_division},
        {"num_warps": max(1, min(128, backend.max_threads) // warp_size), "enable_fp_fusion": False})


def _call_kernels(plan):
    """The launches of a plan that write a call's outputs."""
    return [launch for launch in plan.values() if launch.name not in PER_DEVICE_LAUNCHES + PROOF_LAUNCHES]


def launch_plan(backend, M, H, *, route=None, arch=None, sm_count=None, warp_size=None, settings=None,
                index_64=False, resident=None, ieee=()):
    """Every kernel a route launches for an (M, H) call, by name, in order: "sigmoid_table" (where its kernels read
    the table), "probe" (Route.probed), "ordering" (Route.ordering), then "main", or "grad" and "y" (two_pass). ieee:
    the features run IEEE on this device. A ValueError where a grid exceeds the backend's."""
    backend = _backend(backend)
    route = _route(route or backend.route)
    warp_size = warp_size or backend.warp_size
    settings = settings or launch_settings(backend, M, H, sm_count, route, warp_size, resident)
    math_constexprs = _route_constexprs(route, arch, ieee)
    options = {"num_warps": settings.num_warps, "num_stages": 1, "enable_fp_fusion": False}
    if settings.maxnreg is not None:
        options["maxnreg"] = settings.maxnreg
    tiles_h, tiles_m = H // GROUP_SIZE, M // GROUP_SIZE

    def grid(tiles):  # a persistent program takes every P-th tile
        return (min(tiles, settings.programs or tiles, backend.max_grid[0]), 1, 1)

    # The IEEE sigmoid per element reads three entries of the table; plain's is computed whole, Ascend's with /.
    table_free = route.two_pass and not route.native_math
    launches = []
    if route.sigmoid_table or (math_constexprs["IEEE"] & IEEE_SIGMOID.value and not table_free):
        launches.append(_table_launch("sigmoid_table", backend, route, warp_size))
    if route.probed:  # with the route's kernels' options, as it proves their math
        launches.append(KernelLaunch("probe", _probe_kernel, (sum(_probe_programs_per_check(PROBE_SIZE)), 1, 1),
                                     {"probe_ptr": "*i32", "table_ptr": "*fp32"}, {**PROBE_SIZE, **math_constexprs},
                                     options))
    if route.ordering:  # at the route's own settings and options, as it proves their ordering
        launches.append(KernelLaunch(
            "ordering", _ordering_check_kernel, (min(_ORDERING_SIZE["PROGRAMS"], backend.max_grid[0]), 1, 1),
            {"slots_ptr": "*bf16", "record_ptr": "*i32", "stamp": "i32"},
            {"ROUNDS": _ORDERING_SIZE["ROUNDS"], "CHUNK": settings.chunk, "Y_CHUNK": settings.y_chunk,
             "CUDA_ARCH": math_constexprs["CUDA_ARCH"]}, options))
    if route.two_pass:
        y_kernel = (_y_kept_kernel if route.keep_y else _y_transposed_kernel if route.transpose_in_registers
                    else _y_columns_kernel)
        # each kernel takes those it declares (the kept y's computes no sigmoid, so takes fewer)
        shared = {"EXACT": route.exact, "NPU_DIVISION": route.npu_division, "TABLE_FREE": table_free,
                  **math_constexprs, "INDEX_64": index_64, "GATHER": route.column_gather}
        # the scales of as many consecutive groups of a row as divide it, up to scale_groups, stored at once
        grad_groups, y_groups = math.gcd(tiles_h, route.scale_groups), math.gcd(tiles_m, route.scale_groups)
        for name, kernel, programs, own in (
                ("grad", _grad_rows_kernel, M // settings.chunk * (tiles_h // grad_groups),
                 {"ROWS": settings.chunk, "GROUPS": grad_groups, "KEEP_Y": route.keep_y}),
                ("y", y_kernel, H // settings.y_chunk * (tiles_m // y_groups),
                 {"CHANNELS": settings.y_chunk, "GROUPS": y_groups})):
            launches.append(KernelLaunch(name, kernel, grid(programs), _signature(kernel), {
                **{k: v for k, v in shared.items() if k in kernel.arg_names}, **own}, options))
    else:  # a grid of one program a tile, H first (see the kernel), or of the persistent programs
        launches.append(KernelLaunch(
            "main", _silu_mul_quant_kernel, grid(tiles_h * tiles_m) if route.persistent else (tiles_h, tiles_m, 1),
            _signature(_silu_mul_quant_kernel),
            {"CHUNK": settings.chunk, "Y_CHUNK": settings.y_chunk, **math_constexprs, "PERSISTENT": route.persistent,
             "INDEX_64": index_64, "PREFETCH": settings.prefetch}, options))
    for launch in launches:
        if any(n > limit for n, limit in zip(launch.grid, backend.max_grid)):
            raise ValueError(f"M={M}, H={H} needs a grid of {launch.grid} programs, more than the {backend.name} "
                             f"backend's {backend.max_grid}")
    return {launch.name: launch for launch in launches}


# ---------------------------------------------------------------- the probe: native arithmetic proven on the device

PROBE_CHECKS = ("sigmoid", "bf16 rounding", "quantizer", "fma", "pipeline")
_INFINITY = tl.constexpr(float("inf"))
_FIRST_NONE = tl.constexpr(2**31 - 1)
# A program's ROWS x 128 inputs; the quantizer's absmax values: every EXPONENT_STEP-th fp32 exponent (and 255), with
# ABSMAX_PER_EXPONENT mantissas; PIPELINE_ROWS rows of 128 triples. On a device 33,152 programs, within the smallest
# grid dimension of a probing backend (65,535); under the interpreter (~1000x slower, mostly per program) fewer,
# larger programs over a sparser set, still every bf16 gate, v and high half.
_PROBE_SIZE_ON_DEVICE = {"ROWS": 16, "ABSMAX_PER_EXPONENT": 4, "EXPONENT_STEP": 1, "PIPELINE_ROWS": 1024}
PROBE_SIZE = ({"ROWS": 256, "ABSMAX_PER_EXPONENT": 4, "EXPONENT_STEP": 32, "PIPELINE_ROWS": 256} if _INTERPRET
              else _PROBE_SIZE_ON_DEVICE)


@triton.jit
def _probe_programs(CHECK: tl.constexpr, ROWS: tl.constexpr, ABSMAX_PER_EXPONENT: tl.constexpr,
                    EXPONENT_STEP: tl.constexpr, PIPELINE_ROWS: tl.constexpr):
    """Programs of the CHECK-th check (its inputs over ROWS x 128): constexpr arithmetic, by which the kernel splits
    its grid and the host (_probe_programs_per_check) sizes it and reads the records."""
    inputs = (2**19 if CHECK == 1 else 256 // EXPONENT_STEP * ABSMAX_PER_EXPONENT * 2**16 if CHECK == 2 else
              PIPELINE_ROWS * 128 if CHECK == 4 else 2**16)
    return inputs // (ROWS * 128)


def _probe_programs_per_check(size):
    return tuple(_probe_programs.fn(check, size["ROWS"], size["ABSMAX_PER_EXPONENT"], size["EXPONENT_STEP"],
                                    size["PIPELINE_ROWS"]) for check in range(len(PROBE_CHECKS)))


@triton.jit
def _hash(k):
    """A 32-bit mix of the integer k (wrapping)."""
    k = k.to(tl.uint32)
    k = (k ^ (k >> 16)) * 0x7FEB352D
    k = (k ^ (k >> 15)) * 0x2C1B3C6D
    return k ^ (k >> 16)


@triton.jit
def _bits(v):
    return v.to(tl.int32, bitcast=True)


@triton.jit
def _float(bits):
    return bits.to(tl.uint32).to(tl.float32, bitcast=True)


@triton.jit
def _differ(a, b):
    """Where two fp32 values differ in any bit, unless both are NaN (a NaN's payload is not compared)."""
    return (_bits(a) != _bits(b)) & ((a == a) | (b == b))


# A proof's record reductions over a 2-D block (a where, not a bool -> int cast: that is extui, unsigned on Ascend).
@triton.jit
def _at(where, values):
    return tl.sum(tl.sum(tl.where(where, values, 0), 1), 0)


@triton.jit
def _least(where, values):
    return tl.min(tl.min(tl.where(where, values, _FIRST_NONE), 1), 0)


@triton.jit
def _probe_operand(h):
    """bf16 bits of a random sign and mantissa and an exponent within 2**+-12 of 1."""
    exponent = (115 + (h >> 8).to(tl.int32) % 25).to(tl.uint32)  # h >> 8 < 2**24: the same value signed
    return ((h >> 16) & 0x8000) | (exponent << 7) | (h & 0x7F)


@triton.jit
def _probe_pipeline(gate, up, gy, sig, IEEE: tl.constexpr, CUDA_ARCH: tl.constexpr):
    """The main kernel's math on rows of 128, quantized along rows: the int8 of d_gate, d_up and y packed in the low
    three bytes of an int32, and the rows' three scales."""
    y, q_gate, s_gate, q_up, s_up = grad_rows_quantized(gate, up, gy, sig, IEEE, CUDA_ARCH)
    y = y.to(tl.float32)
    s_y = group_scale(group_absmax(y, 1))
    q_y = quantize(y, s_y[:, None], tl.math.div_rn(1.0, s_y)[:, None], IEEE, CUDA_ARCH)
    packed = (q_gate.to(tl.int32) & 0xFF) | ((q_up.to(tl.int32) & 0xFF) << 8) | ((q_y.to(tl.int32) & 0xFF) << 16)
    return packed, s_gate, s_up, s_y


@triton.jit
def _probe_kernel(probe_ptr, table_ptr, ROWS: tl.constexpr, ABSMAX_PER_EXPONENT: tl.constexpr,
                  EXPONENT_STEP: tl.constexpr, PIPELINE_ROWS: tl.constexpr, SIGMOID_TABLE: tl.constexpr,
                  CUDA_ARCH: tl.constexpr, NO_LIBDEVICE: tl.constexpr, IEEE: tl.constexpr):
    """Each native helper of a route beside its IEEE twin, check by check (PROBE_CHECKS), on inputs covering every class
    where the two could differ; IEEE: the features an earlier probe turned IEEE (their checks then compare the IEEE form
    with itself, but the sigmoid's, which proves the table's read). Each program of ROWS x 128 inputs k writes its
    record: its count of differences, then at its first k the input's bits and the native and IEEE results' bits."""
    program = tl.program_id(0)
    first = 0  # the check's first program
    for check in tl.static_range(5):
        programs = _probe_programs(check, ROWS, ABSMAX_PER_EXPONENT, EXPONENT_STEP, PIPELINE_ROWS)
        if (program >= first) & (program < first + programs):
            rows = (program - first) * ROWS + tl.arange(0, ROWS)
            k = rows[:, None] * 128 + tl.arange(0, 128)[None, :]
            if check == 0:  # sigmoid: all 65,536 bf16 gates; the route's own sigmoid against the IEEE one computed
                gate = _float(k << 16)
                native = sigmoid_lookup(gate, table_ptr, ROWS * 128, NO_LIBDEVICE, SIGMOID_TABLE, IEEE, CUDA_ARCH)
                ieee = sigmoid(gate, NO_LIBDEVICE=NO_LIBDEVICE, IEEE=IEEE_ALL, CUDA_ARCH=0)
                # A NaN gate reads some table entry: the gate itself makes every output NaN (sigmoid_lookup).
                differ, inputs = _differ(native, ieee) & (gate == gate), k
            elif check == 1:
                # fp32 -> bf16: every high half (NaN, inf, zeros and subnormals among them) with a low half of each
                # rounding class: 0, 1, 0x7FFF, 0x8000 (a tie, broken by the high half's last bit), 0x8001, 0xFFFF (a
                # carry into the high half) and two hashed ones.
                j = k & 7
                low = tl.where(j == 0, 0x0000, tl.where(j == 1, 0x0001, tl.where(j == 2, 0x7FFF, tl.where(
                    j == 3, 0x8000, tl.where(j == 4, 0x8001, tl.where(j == 5, 0xFFFF, _hash(k) & 0xFFFF))))))
                v = _float(((k >> 3) << 16) | low)
                native, ieee = bf16_round(v, IEEE), bf16_round(v, IEEE=IEEE_ALL)
                differ, inputs = _differ(native, ieee), _bits(v)
            elif check == 2:
                # The quantizer: every bf16 v against bf16 absmax values of every fp32 exponent (zero, subnormal, the
                # 1e-10 floor, inf, NaN) with the mantissas 0, 0x7F and hashed others: Markstein's correction fails
                # where an fma rounds twice or a conversion truncates otherwise, and int8 of NaN must be 0.
                a = k >> 16
                j = a % ABSMAX_PER_EXPONENT
                mantissa = tl.where(j == 0, 0, tl.where(j == 1, 0x7F, _hash(a) & 0x7F))
                exponent = (a // ABSMAX_PER_EXPONENT) * EXPONENT_STEP
                exponent = tl.where(exponent == 256 - EXPONENT_STEP, 255, exponent)  # inf and NaN always
                absmax = _float((exponent << 23) | (mantissa << 16))
                v = _float((k & 0xFFFF) << 16)
                scale = group_scale(absmax)
                inv_scale = tl.math.div_rn(1.0, scale)
                native = quantize(v, scale, inv_scale, IEEE, CUDA_ARCH).to(tl.int32)
                ieee = quantize(v, scale, inv_scale, IEEE=IEEE_ALL, CUDA_ARCH=0).to(tl.int32)
                # The kernel quantizes only |v| <= its group's absmax; a NaN or inf absmax goes with any v.
                possible = (tl.abs(v) <= absmax) | (absmax != absmax) | (absmax == _INFINITY)
                differ = (native != ieee) & possible
                inputs = _bits(absmax) | (k & 0xFFFF)  # both bf16, absmax high
            elif check == 3:
                # fma rounds once: a * b - round(a * b) for a, b = 1 + i/4096, 1 + j/4096, exact in integers (products
                # of 13-bit significands, whose low half a split multiply-add rounds away)
                i = 4096 + (k & 0xFFF)
                j = 4096 + (((k >> 12) * 257 + 1) & 0xFFF)
                a, b = i.to(tl.float32) * (1.0 / 4096), j.to(tl.float32) * (1.0 / 4096)
                p = a * b
                ieee = (i * j - (p * 16777216.0).to(tl.int32)).to(tl.float32) * (1.0 / 16777216)  # the exact residue
                native = tl.fma(a, b, -p)
                differ, inputs = _differ(native, ieee), ((j - 4096) << 12) | (i - 4096)
            else:
                # The pipeline as the main kernel runs it, with its options (a compiler that contracts or reorders
                # inside a bigger kernel shows here): rows below 512 hold every bf16 gate once (inf and NaN made
                # finite), the rest random gates; random up and grad_y; one sigmoid for both sides.
                g = (k * 0x9E37) & 0xFFFF
                g = tl.where(rows[:, None] < 512, tl.where((g & 0x7F80) == 0x7F80, g ^ 0x4000, g), _hash(k) & 0xFFFF)
                gate = _float(g << 16)
                up = _float(_probe_operand(_hash(k + 0x20000000)) << 16)
                gy = _float(_probe_operand(_hash(k + 0x30000000)) << 16)
                sig = sigmoid_lookup(gate, table_ptr, ROWS * 128, NO_LIBDEVICE, SIGMOID_TABLE, IEEE, CUDA_ARCH)
                native, n_gate, n_up, n_y = _probe_pipeline(gate, up, gy, sig, IEEE, CUDA_ARCH)
                ieee, i_gate, i_up, i_y = _probe_pipeline(gate, up, gy, sig, IEEE=IEEE_ALL, CUDA_ARCH=0)
                scales_differ = _differ(n_gate, i_gate) | _differ(n_up, i_up) | _differ(n_y, i_y)
                differ, inputs = (native != ieee) | scales_differ[:, None], k
            at_first = differ & (k == _least(differ, k))
            field = tl.arange(0, 4)
            tl.store(probe_ptr + program * 4 + field, tl.where(field == 0, _at(differ, 1), tl.where(
                field == 1, _at(at_first, inputs), tl.where(field == 2, _at(at_first, _bits(native)),
                                                            _at(at_first, _bits(ieee))))))
        first += programs


def _probe_verdict(values, size):
    """({check: differences}, {check: its finding, where it found any}) from the probe's records, for a PROBE_SIZE: a
    check's programs run its inputs in order, so its first record with a difference holds its first."""
    records = [values[i:i + 4] for i in range(0, len(values), 4)]
    counts, findings = {}, {}
    for check, programs in zip(PROBE_CHECKS, _probe_programs_per_check(size)):
        own, records = records[:programs], records[programs:]
        counts[check] = sum(r[0] for r in own)
        first = next((r for r in own if r[0]), None)
        if first:
            _, bits, native, ieee = first
            at = {"sigmoid": f"gate 0x{bits:04x} (bf16)", "bf16 rounding": f"fp32 0x{bits & 0xFFFFFFFF:08x}",
                  "quantizer": f"v 0x{bits & 0xFFFF:04x}, absmax 0x{bits >> 16:04x} (bf16)",
                  "fma": f"fma(a, b, -a*b) for a = 1 + {bits & 0xFFF}/4096, b = 1 + {bits >> 12}/4096",
                  "pipeline": f"row {bits // 128}, column {bits % 128}"}[check]
            findings[check] = (f"its probe found {counts[check]} differences from IEEE arithmetic in {check}, the "
                               f"first at {at}: native 0x{native & 0xFFFFFFFF:08x}, IEEE 0x{ieee & 0xFFFFFFFF:08x}")
    return counts, findings


def _probe_why(counts, findings, checks):
    """The first finding among `checks`, with the others' counts."""
    first, *others = [c for c in PROBE_CHECKS if c in checks]
    return findings[first] + (f" (and in {', '.join(f'{c} {counts[c]}' for c in others)})" if others else "")


def ieee_features_for(route, failed_checks, ieee=()):
    """{feature (IEEE_FEATURES): the check that points at it} to turn IEEE after a probe whose failed_checks differed,
    where the features `ieee` already run IEEE: empty where no failure counts, None where one points at no feature the
    route can turn (the rung is left). fma points at the division (its one user); the quantizer at its int8
    conversion, then at its division; a pipeline failure at whatever turns with it (the rung is probed again)."""
    failed = set(failed_checks) - _explained_checks(ieee)
    if not failed:
        return {}
    quantizer = "division" if "int8 conversion" in ieee or "fma" in failed else "int8 conversion"
    points_at = {"sigmoid": "sigmoid", "bf16 rounding": "bf16 rounding", "quantizer": quantizer, "fma": "division"}
    turn = {}
    for check in sorted(failed - {"pipeline"}, key=PROBE_CHECKS.index):
        if points_at[check] not in _turnable(route):
            return None
        turn.setdefault(points_at[check], check)
    return {feature: check for feature, check in turn.items() if feature not in ieee} or None


def _turnable(route):
    """The features a probed route can run IEEE: all but a table route's sigmoid (its check proves the gather)."""
    return [f for f in IEEE_FEATURES if not (f == "sigmoid" and _route(route).sigmoid_table)]


def _explained_checks(ieee):
    """The checks whose differences no output depends on once the features `ieee` run IEEE: fma's with the division."""
    return {"fma"} if "division" in ieee else set()


def route_compositions(route):
    """The feature sets a route can run IEEE on some device (the judge run compiles each): none, and on a probed route
    each one it can turn alone and all together."""
    each = _turnable(route)
    return [()] + ([(f,) for f in each] + [tuple(each)] if _route(route).probed else [])


# ---------------------------------------------------------------- the witness: the call's own kernels proven on real values
# The call's kernels at its shape on the host's input, every output byte checked (PLATFORMS.md, "The witness").
WITNESS_CHANNELS = 128 if _INTERPRET else 512
WITNESS_OUTPUTS = ("grad_input_q", "grad_input_s", "y_q_t", "y_s_t")  # grad_input's, y's; each its int8, its scales
WITNESS_LAUNCHES = ("witness_input", "witness_evict", "witness_check", "witness_table")
# The proof kernels specialize on no integer: one binary serves every shape and stride.
_WITNESS_UNSPECIALIZED = ("M", "H", "stride_x", "stride_gy", "stride_gq", "stride_gs", "stride_yq", "stride_ys")


@triton.jit
def _witness_tags(tm, th, CHANNELS: tl.constexpr):
    """(the region's channel group, token rotation, channel rotation) that the call's tile (tm, th) holds: a group keeps
    its members (one set of expectations serves every tile), and neighbouring tiles differ in both rotations (a value
    written at another tile's place is wrong there). Plain arithmetic: the host runs it too (_witness_tags.fn)."""
    tm = tm % 65536  # int32 products stay below 2**31
    th = th % 65536
    return (tm + th) % (CHANNELS // 128), (53 * tm + 19 * th + 3) % 128, (11 * tm + 37 * th + 1) % 128


@triton.jit(do_not_specialize=_WITNESS_UNSPECIALIZED)
def _witness_input_kernel(x_ptr, grad_y_ptr, grad_q_ptr, grad_s_ptr, y_q_ptr, y_s_ptr, scratch_ptr, region_ptr, M, H,
                          stride_x, stride_gy, stride_gq, stride_gs, stride_yq, stride_ys, CHANNELS: tl.constexpr,
                          SLICE: tl.constexpr, INDEX_64: tl.constexpr):
    """Lays the region (region_ptr: _witness_region) over the call's M x H as x and grad_y, a tile a step in SLICE-row
    slices, and poisons the tile's outputs (int8 -128, scale -1: values no output takes) and its M x H elements of
    scratch (NaN), so that an output left unwritten, or a slot or kept y read before its write, differs."""
    tiles_h = H // 128
    tiles = (M // 128) * tiles_h
    tile = _first_tile(INDEX_64)
    local = tl.arange(0, 128)
    while tile < tiles:
        tm = tile // tiles_h  # int64 with INDEX_64, for the offsets
        th = tile % tiles_h
        group, rotate_t, rotate_c = _witness_tags(tm, th, CHANNELS)
        c = group * 128 + (local + 128 - rotate_c) % 128
        for step in range(128 // SLICE):
            part = step * SLICE + tl.arange(0, SLICE)
            source = region_ptr + ((part + 128 - rotate_t) % 128)[:, None] * CHANNELS + c[None, :]
            m = tm * 128 + part[:, None]
            h = th * 128 + local[None, :]
            poison_q = tl.full([SLICE, 128], -128, tl.int8)
            poison_s = tl.full([SLICE], -1.0, tl.float32)
            for half in tl.static_range(2):  # gate and up; grad_input's two halves
                tl.store(x_ptr + m * stride_x + h + half * H, tl.load(source + half * (128 * CHANNELS)))
                tl.store(grad_q_ptr + m * stride_gq + h + half * H, poison_q)
                tl.store(grad_s_ptr + (tm * 128 + part) * stride_gs + half * tiles_h + th, poison_s)
            tl.store(grad_y_ptr + m * stride_gy + h, tl.load(source + 256 * CHANNELS))
            # y_t's rows are channels: the slice's channels, every token of the tile.
            tl.store(y_q_ptr + (th * 128 + part)[:, None] * stride_yq + (tm * 128 + local)[None, :], poison_q)
            tl.store(y_s_ptr + (th * 128 + part) * stride_ys + tm, poison_s)
            nan = tl.full([SLICE, 128], 0x7FC00000, tl.int32).to(tl.float32, bitcast=True)
            tl.store(scratch_ptr + tile * (128 * 128) + part[:, None] * 128 + local[None, :], nan.to(tl.bfloat16))
        tile += tl.num_programs(0)


@triton.jit
def _witness_evict_kernel(buffer_ptr, BLOCK: tl.constexpr):
    """Writes BLOCK int32 a program over a buffer larger than the device's L2, pushing the witness's input, outputs and
    slots out to memory, where a user's inputs come from."""
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    tl.store(buffer_ptr + offsets, offsets.to(tl.int32))


@triton.jit(do_not_specialize=_WITNESS_UNSPECIALIZED + ("stamp",))
def _witness_check_kernel(grad_q_ptr, grad_s_ptr, y_q_ptr, y_s_ptr, expected_gq_ptr, expected_gs_ptr,
                          expected_yq_ptr, expected_ys_ptr, record_ptr, stamp, M, H, stride_gq, stride_gs, stride_yq,
                          stride_ys, CHANNELS: tl.constexpr, SLICE: tl.constexpr, EXACT: tl.constexpr,
                          INDEX_64: tl.constexpr):
    """Compares every element of each output of WITNESS_OUTPUTS in turn with the region's expectation at its place
    (_witness_tags; _witness_expected's lists), a tile a step in SLICE-row slices, and writes each program's record of
    each (wrong elements, elements compared, the least code of a wrong one; stamped: _stamped_record) at record_ptr +
    program * 16 + output * 4. Wrong: where EXACT, any difference (a scale in its bits, any NaN for a NaN); else (the
    tolerant rungs) a gross fault in a group of finite expected scale: a scale more than 2**-6 off relatively, an int8
    more than two steps. An element's code is its program's step * 2**15 + half * 2**14 + token * 2**7 + channel, its
    place in the tile (a scale's: its group's first element's; witness_findings decodes it)."""
    tiles_h = H // 128
    tiles = (M // 128) * tiles_h
    groups = CHANNELS // 128
    local = tl.arange(0, 128)
    for output in tl.static_range(4):
        count, compared, first = 0, 0, _FIRST_NONE
        tile = _first_tile(INDEX_64)
        step = 0
        while tile < tiles:
            tm = tile // tiles_h
            th = tile % tiles_h
            group, rotate_t, rotate_c = _witness_tags(tm, th, CHANNELS)
            for s in range(128 // SLICE):
                part = s * SLICE + tl.arange(0, SLICE)
                for half in tl.static_range(2 if output < 2 else 1):
                    if output < 2:  # grad_input: the slice's tokens, each with its group of this half's channels
                        m, t = tm * 128 + part, (part + 128 - rotate_t) % 128
                        expected_s = tl.load(expected_gs_ptr + t * (2 * groups) + half * groups + group)[:, None]
                        code = step * 32768 + half * 16384 + part[:, None] * 128
                        if output == 0:
                            got = tl.load(grad_q_ptr + m[:, None] * stride_gq + (th * 128 + local)[None, :] + half * H)
                            c = group * 128 + (local + 128 - rotate_c) % 128
                            expected = tl.load(expected_gq_ptr + t[:, None] * (2 * CHANNELS) + half * CHANNELS
                                               + c[None, :])
                            code += local[None, :]
                        else:
                            got = tl.load(grad_s_ptr + m * stride_gs + half * tiles_h + th)[:, None]
                    else:  # y_t: the slice's channels, each with its group of the tile's 128 tokens
                        h, c = th * 128 + part, group * 128 + (part + 128 - rotate_c) % 128
                        expected_s = tl.load(expected_ys_ptr + c)[:, None]
                        code = step * 32768 + part[:, None]
                        if output == 2:
                            got = tl.load(y_q_ptr + h[:, None] * stride_yq + (tm * 128 + local)[None, :])
                            t = (local + 128 - rotate_t) % 128
                            expected = tl.load(expected_yq_ptr + c[:, None] * 128 + t[None, :])
                            code += local[None, :] * 128
                        else:
                            got = tl.load(y_s_ptr + h * stride_ys + tm)[:, None]
                    if output % 2 == 0 and EXACT:
                        differ = got.to(tl.int32) != expected.to(tl.int32)
                    elif output % 2 == 0:
                        differ = _finite(expected_s) & (tl.abs(got.to(tl.int32) - expected.to(tl.int32)) > 2)
                    elif EXACT:  # a scale in its bits, any NaN for a NaN
                        same_nan = _is_nan(got) & _is_nan(expected_s)
                        differ = (_bits(got) != _bits(expected_s)) & ~same_nan
                    else:
                        differ = _finite(expected_s) & ~(tl.abs(got - expected_s) <= 2**-6 * tl.abs(expected_s))
                    wrong, least = _at(differ, 1), _least(differ, code)
                    # the elements compared counted from their codes: a count no compiler can fold
                    count, compared, first = count + wrong, compared + _at(code >= 0, 1), tl.minimum(first, least)
            tile += tl.num_programs(0)
            step += 1
        _stamped_record(record_ptr + tl.program_id(0) * 16 + output * 4, count, compared, first, stamp)


# ---------------------------------------------------------------- the witness's host side

# Programs of the input kernel, and of the check kernel (whose records the host reads: 64 bytes a program).
_WITNESS_MAX_PROGRAMS = 4096
_WITNESS_CHECK_PROGRAMS = 256
# The eviction's int32 a program; it writes twice the L2 the device tells (one L2's worth can leave lines of a hashed,
# set-associative cache in place), else twice the largest judge chip's known (the H100's 50 MB), rounded up.
_EVICT_BLOCK = 4096
_EVICT_BYTES_UNKNOWN_L2 = 2**27


def witness_plan(backend, M, H, *, route, warp_size=None, index_64=False, evict_bytes=None):
    """{name: KernelLaunch} of the witness's launches (WITNESS_LAUNCHES) for an (M, H) call on a route; evict_bytes:
    twice the L2 the device tells; "witness_table" is launch_plan's "sigmoid_table" where it has one."""
    backend, route = _backend(backend), _route(route)
    warp_size = warp_size or backend.warp_size
    tiles = (M // GROUP_SIZE) * (H // GROUP_SIZE)
    options = {"num_warps": max(1, min(128, backend.max_threads) // warp_size), "num_stages": 1,
               "enable_fp_fusion": False}
    # Rows a step of the input and check kernels: the whole tile under the interpreter (a slice there is a round of
    # numpy calls); on a device the backend's proof_rows, else 8 (larger slices compile to much more code).
    shared = {"CHANNELS": WITNESS_CHANNELS, "SLICE": 128 if _INTERPRET else backend.proof_rows or 8,
              "INDEX_64": index_64}
    launches = [("witness_input", _witness_input_kernel, min(tiles, _WITNESS_MAX_PROGRAMS), shared),
                ("witness_evict", _witness_evict_kernel,
                 triton.cdiv(evict_bytes or _EVICT_BYTES_UNKNOWN_L2, 4 * _EVICT_BLOCK), {"BLOCK": _EVICT_BLOCK}),
                ("witness_check", _witness_check_kernel, min(tiles, _WITNESS_CHECK_PROGRAMS),
                 {**shared, "EXACT": route.exact})]
    plan = {name: KernelLaunch(name, kernel, (min(programs, backend.max_grid[0]), 1, 1), _signature(kernel), constexprs,
                               options) for name, kernel, programs, constexprs in launches
            # the eviction only where the route relies on an ordering; the interpreter has no cache to push out of
            if name != "witness_evict" or (route.ordering and not _INTERPRET)}
    return {**plan, "witness_table": _table_launch("witness_table", backend, route, warp_size)}


def witness_findings(values, H):
    """[(wrong elements, elements compared, the first wrong one's [row, column] or None)] of each output, from the
    check kernel's records (16 int32 a program: 4 an output; _witness_check_kernel says how a place is coded)."""
    programs = len(values) // 16
    findings = []
    for i in range(len(WITNESS_OUTPUTS)):
        places = []
        for program in range(programs):
            count, _, code, _ = values[16 * program + 4 * i:16 * program + 4 * i + 4]
            if count:
                tm, th = divmod(program + (code >> 15) * programs, H // GROUP_SIZE)
                m, h, half = tm * 128 + (code >> 7) % 128, th * 128 + code % 128, (code >> 14) % 2
                row, col = (m, half * H + h) if i < 2 else (h, m)
                places.append((row, col // GROUP_SIZE if i % 2 else col))
        findings.append((sum(values[4 * i::16]), sum(values[4 * i + 1::16]), min(places, default=None)))
    return findings


def witness_source(output, row, col, H, channels=None):
    """(the index of output[row, col]'s expectation in _witness_expected's list of output, the region's (token, channel)
    and the call's (token, channel, half) of the element) for an H-wide call: the check kernel's indexing, run here. A
    scale stands for its group's first element, at that element's column divided by GROUP_SIZE."""
    channels = channels or WITNESS_CHANNELS
    i = WITNESS_OUTPUTS.index(output)
    per = GROUP_SIZE if i % 2 else 1
    m, h, half = (row, col * per % H, col * per // H) if i < 2 else (col * per, row, 0)
    group, rotate_t, rotate_c = _witness_tags.fn(m // 128, h // 128, channels)
    t, c = (m - rotate_t) % 128, group * 128 + (h - rotate_c) % 128
    return (t * 2 * channels + half * channels + c if i < 2 else c * 128 + t) // per, (t, c), (m, h, half)


def _same_value(a, b):
    return a == b or (a != a and b != b)


def _shown(value):
    return str(value) if isinstance(value, int) else f"{value!r} (0x{_bits_of_f32([value])[0]:08x})"


def _same_layout(t):
    """An uninitialized tensor with t's shape, dtype, device and strides, over only the elements it spans, whose first
    element has t's address modulo _ALIGNMENT (what a compiled kernel is keyed on)."""
    slack = _ALIGNMENT // t.element_size()
    storage = torch.empty(1 + sum((n - 1) * s for n, s in zip(t.shape, t.stride())) + slack, dtype=t.dtype,
                          device=t.device)
    shift = ((t.data_ptr() - storage.data_ptr()) % _ALIGNMENT) // t.element_size()
    return storage.as_strided(tuple(t.shape), t.stride(), shift)


def _refuse_capture(module, what):
    """A one-line RuntimeError where the current stream of a device module is capturing a graph."""
    capturing = getattr(module, "is_current_stream_capturing", None)
    if callable(capturing) and capturing():
        raise RuntimeError(f"silu_dot_fwd_bwd_quant_fuse: {what} and reads the verdict back, which a graph capture "
                           f"cannot hold: call it once before capturing")


# The expectations are the host's own IEEE fp32 arithmetic: an fp32 +, x or / done in Python's doubles and rounded to
# fp32 (array("f")) is the IEEE result, a double holding 53 >= 2 * 24 + 2 bits; the sigmoid is the table's, read back.
def _round_f32(values):
    """Each double rounded to the nearest fp32 (overflow to inf), as Python floats."""
    return array("f", values).tolist()


def _bits_of_f32(values):
    return array("I", array("f", values).tobytes()).tolist()


def _f32_of_bits(bits):
    return array("f", array("I", bits).tobytes()).tolist()


def _round_bf16(values):
    """fp32 values rounded to the nearest-even bf16, NaN kept."""
    return _f32_of_bits([b if b & 0x7FFFFFFF > 0x7F800000 else (b + 0x7FFF + ((b >> 16) & 1)) & 0xFFFF0000
                         for b in _bits_of_f32(values)])


_INV_127_F32, _FLOOR_F32 = _f32_of_bits([0x3C010204, 0x2EDBE6FF])  # fp32(1/127), group_scale's factor; fp32(1e-10)


def _mix(a, b):
    """A 16-bit mix of a, b in [0, 65521): neighbours along either differ in every field taken from it."""
    return ((a * 181 + b * 359 + 7) % 65521 * 32719 + 3) % 65521


def _witness_gate(t, c, channels):
    """The bf16 bits of the region's gate at token t, channel c: channel k = c * step + t % step (step = 512 / channels)
    of the full region, at place p = k % 128 of group j = k // 128, is (b << 7) | ((p + 91 b) mod 128) for a binade b =
    (sign << 8) | exponent one-to-one in t at each p: every pattern once in the full region."""
    step = 512 // channels
    k = c * step + t % step
    j, p, u = k >> 7, k & 127, t & 63
    if j == 3 and u == 63:  # +-inf and NaN
        exponent, negative = 255, t >> 6
    else:  # exponents 17 to 208 in groups 0-2, the rest in group 3; every group of finite gates holds both signs
        cycled = (u + p) * 37 % (63 if j == 3 else 64)
        exponent = (cycled if cycled < 17 else cycled + 192) if j == 3 else 17 + 3 * cycled + j
        negative = (t >> 6) ^ ((_mix(c, 61) >> 4) & 1) ^ ((_mix(u, 97) >> 4) & 1)
    binade = (negative << 8) | exponent
    return (binade << 7) | ((p + binade * 91) & 127)


def _witness_bits(t, h, finite_only, channels):
    """The bf16 bits of (gate, up, grad_y) at token t, channel h of the region: finite_only (the tolerant rungs, whose
    reductions drop NaN) makes the NaN and inf gates finite; up's exponent puts |y| near 1, grad_y's the larger of
    |d_gate| and |d_up| near 2**spread; channel 5's up and token 7's grad_y are +-0, channel 9's up and token 11's
    grad_y near 2**127 where the gate is 4 or more: groups of zeros and groups that overflow to inf."""
    g = _witness_gate(t, h, channels)
    if finite_only and (g & 0x7F80) == 0x7F80:
        g ^= 0x4000
    exponent, negative = (g >> 7) & 0xFF, g >> 15
    big = exponent - 127
    falls = (((128 + (g & 0x7F)) << min(max(big, 0), 6)) * 185) >> 14  # |gate| log2(e): the binades exp(-|gate|) takes
    e_silu = (0 if exponent == 255 else exponent - 128 if exponent < 127 else big if negative == 0
              else 0 if big >= 7 else big - falls)
    # Where log2 |silu| is below -110, up and grad_y keep exponents near 0: every value computed from a subnormal stays
    # far below its group's absmax or under the scale's 1e-10 floor, so no output depends on whether a backend flushes
    # (the judge's reference computes on that backend), nor on the interpreter's load of a subnormal bf16 (0).
    e_silu = 0 if e_silu < -110 else e_silu
    mix1, mix2 = _mix(t, h + 1000), _mix(h, t + 3000)
    overflows = negative == 0 and 129 <= exponent < 255  # gates of 4 or more: silu above 3.9
    e_up = 254 if h == 9 and overflows else min(max(127 - e_silu + mix1 % 3, 1), 254)
    up = (((mix1 >> 2) & 1) << 15) | (e_up << 7) | ((mix1 >> 3) & 0x7F)
    up = up & 0x8000 if h == 5 else up
    # e_factor and e_silu are about log2 |up * silu'(gate)| and log2 |silu|: |d_gate| and |d_up| over |grad_y|
    e_factor = (e_up - 127) + (-1 if exponent < 127 else e_silu if negative == 1 and big < 7 and exponent != 255
                               else 0)
    spread = ((t * 4 + h // 128) * 7) % 13 - 6 + ((mix1 >> 10) & 1)
    e_gy = 254 if t == 11 and overflows else min(max(127 - max(e_factor, e_silu) + spread, 1), 254)
    gy = (((mix2 >> 2) & 1) << 15) | (e_gy << 7) | ((mix2 >> 3) & 0x7F)
    return g, up, gy & 0x8000 if t == 7 else gy


_witness_regions = {}  # (channels, finite_only): the region's bits, made once a process (they depend on no device)


def _witness_region(channels, finite_only):
    """The witness's input, built here alone: the bf16 bits of its gate, up and grad_y planes, 128 tokens x channels
    each (WITNESS_CHANNELS; 512 hold every bf16 gate once), row-major, one after another: the input kernel's region."""
    if (channels, finite_only) not in _witness_regions:
        planes = zip(*(_witness_bits(t, h, finite_only, channels) for t in range(128) for h in range(channels)))
        _witness_regions[channels, finite_only] = [b for plane in planes for b in plane]
    return _witness_regions[channels, finite_only]


def witness_input(t, h, finite_only=False, channels=None):
    """(gate, up, grad_y) of the witness's input at token t, channel h of its region, as Python floats."""
    channels = channels or WITNESS_CHANNELS
    bits = _witness_region(channels, finite_only)
    return tuple(_f32_of_bits([bits[(plane * 128 + t) * channels + h] << 16 for plane in range(3)]))


def _table_entry(gate_bits):
    """The table's entry of a bf16 gate (its bits), its magnitude clamped to the table's range as a table route clamps
    it (below 2**-25 sigmoid is 0.5, beyond 127.5 it is 1 or 0: the ends' entries; so any NaN reads an end's)."""
    magnitude = min(max(gate_bits & 0x7FFF, _LUT_LO), _LUT_LO + _LUT_N - 1)
    return 2 * (magnitude - _LUT_LO) + (gate_bits >> 15)


def _quantized_groups(values):
    """(the int8 of groups of GROUP_SIZE consecutive bf16 values, their scales): absmax with NaN above inf, scale absmax
    * fp32(1/127) with the 1e-10 floor, each quotient rounded to fp32 and truncated; 0 where the scale is NaN or inf."""
    magnitudes = [b & 0x7FFFFFFF for b in _bits_of_f32(values)]
    tops = _f32_of_bits([max(magnitudes[i:i + GROUP_SIZE]) for i in range(0, len(values), GROUP_SIZE)])
    scales = [_FLOOR_F32 if s < _FLOOR_F32 else s for s in _round_f32([a * _INV_127_F32 for a in tops])]
    quotients = _round_f32([v / s if math.isfinite(s) else 0.0
                            for g, s in enumerate(scales) for v in values[g * GROUP_SIZE:(g + 1) * GROUP_SIZE]])
    return [int(q) for q in quotients], scales


def _witness_expected(channels, finite_only, table):
    """{output: its expected values over the region, a flat list}: grad_input_q 128 rows of the gate half's channels,
    then the up half's; grad_input_s their scales; y_q_t channels rows of 128 tokens; y_s_t their scales."""
    bits, n = _witness_region(channels, finite_only), 128 * channels
    gate, up, gy = (_f32_of_bits([b << 16 for b in bits[i * n:(i + 1) * n]]) for i in range(3))
    sig = [table[_table_entry(b)] for b in bits[:n]]
    silu = _round_f32([g * s for g, s in zip(gate, sig)])
    y = _round_bf16(_round_f32([a * u for a, u in zip(silu, up)]))
    d_up = _round_bf16(_round_f32([d * a for d, a in zip(gy, silu)]))
    one_minus_sig = _round_f32([1.0 - s for s in sig])
    factor = _round_f32([1.0 + g for g in _round_f32([g * o for g, o in zip(gate, one_minus_sig)])])
    d_gate = _round_bf16(_round_f32([a * f for a, f in zip(_round_f32([p * s for p, s in zip(
        _round_f32([d * u for d, u in zip(gy, up)]), sig)]), factor)]))
    grad_q, grad_s = _quantized_groups([v for t in range(128) for half in (d_gate, d_up)
                                        for v in half[t * channels:(t + 1) * channels]])
    y_q, y_s = _quantized_groups([y[t * channels + h] for h in range(channels) for t in range(128)])
    return {"grad_input_q": grad_q, "grad_input_s": grad_s, "y_q_t": y_q, "y_s_t": y_s}


def _round_f32_struct(x):
    """One double rounded to fp32 through struct: the arbiter's own rounding (overflow to inf)."""
    try:
        return struct.unpack("<f", struct.pack("<f", x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


def _arbiter_group(inputs, half, table):
    """The arbiter: (the int8, the scale) of a group of d_gate (half 0), d_up (1) or y (2) from its elements' (gate, up,
    grad_y), an element at a time with _round_f32_struct: it shares only the input with _witness_expected's lists."""
    r = _round_f32_struct
    values = []
    for gate, up, gy in inputs:
        sig = table[_table_entry(struct.unpack("<I", struct.pack("<f", gate))[0] >> 16)]
        silu = r(gate * sig)
        v = (r(silu * up) if half == 2 else r(gy * silu) if half == 1  # y, d_up; d_gate:
             else r(r(r(gy * up) * sig) * r(1.0 + r(gate * r(1.0 - sig)))))
        if v == v:  # to nearest-even bf16 on the bits
            bits = struct.unpack("<I", struct.pack("<f", v))[0]
            v = struct.unpack("<f", struct.pack("<I", ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000)))[0]
        values.append(v)
    nan = any(v != v for v in values)
    scale = math.nan if nan else max(r(max(abs(v) for v in values) * _INV_127_F32), _FLOOR_F32)
    if nan or math.isinf(scale):
        return [0] * GROUP_SIZE, scale
    return [math.trunc(r(v / scale)) for v in values], scale


def _table_fault(table, loose=False):
    """Why the table read back is not the sigmoid (a table rung reads the table the expectations read): an entry, where
    normal (gates above -80), more than 4 fp32 ulps from Python's double-precision sigmoid (loose: 2**-10 relatively,
    for a table filled with the backend's tl.exp and /); None where every one is within."""
    gates = _f32_of_bits([((i % 2) << 31) | ((_LUT_LO + i // 2) << 16) for i in range(len(table))])
    for gate, got in zip(gates, table):
        true = 1.0 / (1.0 + math.exp(-gate))
        bound = true * 2.0**-10 if loose else 4 * 2.0 ** (math.frexp(true)[1] - 24)
        if gate >= -80 and not abs(got - true) <= bound:
            return f"its table holds sigmoid({gate!r}) = {got!r}, where the sigmoid is {true!r}"
    return None


# ---------------------------------------------------------------- inputs

def _expected_layout(M, H):
    """{name: (shape, dtype)} of every argument for x of shape (M, 2H)."""
    return {"x": ((M, 2 * H), torch.bfloat16),
            "grad_y": ((M, H), torch.bfloat16),
            "grad_input_q": ((M, 2 * H), torch.int8),
            "grad_input_s": ((M, 2 * H // GROUP_SIZE), torch.float32),
            "y_q_t": ((H, M), torch.int8),
            "y_s_t": ((H, M // GROUP_SIZE), torch.float32)}


def _row_stride(name, t, shape, dtype, device):
    """(t's row stride, the elements its rows span), else a ValueError: rows may have any stride that keeps them apart
    and fits int32; a row's elements are adjacent."""
    if not isinstance(t, torch.Tensor):
        raise ValueError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.shape != shape:
        if t.dim() != 2:
            raise ValueError(f"{name} must be 2-D, got shape {tuple(t.shape)}")
        raise ValueError(f"{name} must have shape {shape}, got {tuple(t.shape)}")
    if t.dtype != dtype:
        raise ValueError(f"{name} must be {dtype}, got {t.dtype}")
    if t.device != device:
        raise ValueError(f"all tensors must be on one device: x is on {device}, {name} on {t.device}")
    rows, cols = shape
    row_stride, col_stride = t.stride()
    if col_stride != 1 and cols > 1:
        raise ValueError(f"{name} must have unit column stride (rows may be strided), got strides {t.stride()}")
    if not cols <= row_stride < 2**31:
        raise ValueError(f"{name} must have a row stride of at least its {cols} columns and below 2**31, "
                         f"got strides {t.stride()}")
    return row_stride, (rows - 1) * row_stride + cols


def _check_inputs(x, grad_y, grad_input_q, grad_input_s, y_q_t, y_s_t, group_size):
    """(M, H, the six row strides, whether offsets need 64 bits, the six tensors' addresses), else a ValueError that
    says what is wrong: the rules (_check_layout) run once a signature of the tensors (shapes, strides, dtypes,
    devices), looked up every call; whether outputs share memory is reckoned every call."""
    global _last_checked
    try:
        signature = (group_size, x.shape, x.stride(), x.dtype, x.device, grad_y.shape, grad_y.stride(), grad_y.dtype,
                     grad_y.device, grad_input_q.shape, grad_input_q.stride(), grad_input_q.dtype, grad_input_q.device,
                     grad_input_s.shape, grad_input_s.stride(), grad_input_s.dtype, grad_input_s.device, y_q_t.shape,
                     y_q_t.stride(), y_q_t.dtype, y_q_t.device, y_s_t.shape, y_s_t.stride(), y_s_t.dtype, y_s_t.device)
        last = _last_checked  # (signature, checked) of the last call: equal tuples compared, not hashed
        checked = last[1] if last[0] == signature else _checked.get(signature)
    except Exception:  # not a tensor, or one without strides: the rules say what is wrong
        signature = checked = None
    if checked is None:
        checked = _check_layout((x, grad_y, grad_input_q, grad_input_s, y_q_t, y_s_t), group_size)
        if signature is not None:
            _checked[signature] = checked
    if signature is not None:
        _last_checked = signature, checked
    M, H, strides, index_64, sizes, apart = checked
    addresses = (x.data_ptr(), grad_y.data_ptr(), grad_input_q.data_ptr(), grad_input_s.data_ptr(), y_q_t.data_ptr(),
                 y_s_t.data_ptr())
    if sizes is not None and addresses != apart[0]:  # sizes None: meta tensors, whose every data_ptr() is 0
        _check_outputs_apart(addresses, sizes)
        apart[0] = addresses  # the last addresses found apart with these sizes
    return M, H, strides, index_64, addresses


def _check_layout(tensors, group_size):
    """The rules but whether outputs share memory: (M, H, the row strides, whether offsets need 64 bits, each tensor's
    bytes from its first element to its last (None for meta tensors), a slot for the last addresses found apart)."""
    x = tensors[0]
    if group_size != GROUP_SIZE:
        raise ValueError(f"group_size must be {GROUP_SIZE}, got {group_size}")
    if not isinstance(x, torch.Tensor) or x.dim() != 2:
        _row_stride("x", x, None, None, None)
    M, two_h = x.shape
    H = two_h // 2
    if two_h % 2:
        raise ValueError(f"x must be [M, 2H] with an even number of columns, got shape {tuple(x.shape)}")
    if M % GROUP_SIZE or H % GROUP_SIZE or M == 0 or H == 0:
        raise ValueError(f"M and H must be positive multiples of {GROUP_SIZE}, got M={M}, H={H} "
                         f"(x shape {tuple(x.shape)})")
    found = [_row_stride(name, t, shape, dtype, x.device)
             for (name, (shape, dtype)), t in zip(_expected_layout(M, H).items(), tensors)]
    span = max([M * H] + [elements for _, elements in found])  # the scratch's, and each tensor's
    sizes = None if x.is_meta else tuple(elements * t.element_size() for (_, elements), t in zip(found, tensors))
    return M, H, tuple(stride for stride, _ in found), span > 2**31, sizes, [None]


_checked = {}  # the signature of a call's tensors: what _check_layout found of them
_last_checked = (None, None)


def _check_outputs_apart(addresses, sizes):
    """A ValueError where an output's bytes (from its first element to its last) meet an input's or another output's;
    x and grad_y, only read, may share."""
    ends, names = [start + size for start, size in zip(addresses, sizes)], list(_expected_layout(1, 1))
    for i in range(2, 6):
        for j in range(i):
            if addresses[i] < ends[j] and addresses[j] < ends[i]:
                raise ValueError(f"{names[i]} shares memory with {names[j]}: every output must have memory of its "
                                 "own, shared with no input and no other output (a tensor's memory here: its bytes "
                                 "from its first element to its last, the gaps between strided rows included)")


# ---------------------------------------------------------------- devices and the launcher

def _device_module(x):
    """torch.cuda, torch.musa, torch.npu, ... for x's device; None on the CPU or where torch has none."""
    return None if x.device.type == "cpu" else getattr(torch, x.device.type, None)


def _on_device(x):
    """A context that makes x's device current, through its own torch module (never torch.cuda for another type)."""
    module = _device_module(x)
    return module.device(x.device) if hasattr(module, "device") else contextlib.nullcontext()


def _target(x):
    """(backend, arch, warp size or 0, the target or None) of x's device, as Triton's driver reports it."""
    if _INTERPRET:
        return ("interpreter", None, 0, None)
    if x.device.type == "cpu":  # no Triton driver takes CPU tensors: else every rung would fail, none saying why
        raise ValueError("the tensors are on the CPU, where Triton runs kernels only in its interpreter: set "
                         "TRITON_INTERPRET=1 before triton is imported, or move the tensors to a GPU")
    try:
        with _on_device(x):
            target = triton.runtime.driver.active.get_current_target()
        return (target.backend, target.arch, getattr(target, "warp_size", 0) or 0, target)
    except Exception:  # a vendor fork without this API: nothing known
        return ("unknown", None, 0, None)


def _device_counts(x, module, index):
    """(its SMs (on Ascend its vector cores), twice its L2, its name) of x's device, each None where not told."""
    sm_count = evict_bytes = name = None
    if x.is_cuda:
        properties = torch.cuda.get_device_properties(x.device)
        sm_count = properties.multi_processor_count
        evict_bytes = 2 * getattr(properties, "L2_cache_size", 0) or None
    elif x.device.type == "npu":
        with contextlib.suppress(Exception):
            cores = triton.runtime.driver.active.utils.get_device_properties(index)["num_vectorcore"]
            sm_count = cores if isinstance(cores, int) and cores > 0 else None
        with contextlib.suppress(Exception):  # triton-ascend's compiler asks the runtime for the SoC (cached):
            triton.runtime.driver.active.utils.get_arch()  # asked here, before any fork
    with contextlib.suppress(Exception):  # no module, or none that names its devices
        name = module.get_device_name(x.device)
    return sm_count, evict_bytes, name


class _Device:
    """One device's state, set up by its first call; the ladder (_take_rung) acts on it."""

    def __init__(self, x):
        forced_route = os.environ.get(ROUTE_ENV)
        if forced_route and forced_route not in ROUTES:
            raise ValueError(f"{ROUTE_ENV} must be one of {ROUTES}, got {forced_route!r}")
        if forced_route and not route_available(forced_route):
            raise ValueError(f"{ROUTE_ENV}={forced_route} needs tl.gather, which this Triton "
                             f"({triton.__version__}) lacks or cannot compile; choose a route without the table")
        self.index, self.module = x.get_device(), _device_module(x)
        target, self.arch, reported_warp_size, self.target = _target(x)
        self.sm_count, self.evict_bytes, name = _device_counts(x, self.module, self.index)
        self.backend = backend_for(x.device.type, target, name)
        self.warp_size = reported_warp_size or self.backend.warp_size
        # The rungs remaining (the first taken); [(route, why)] of those left; by route, {check: differences} its
        # probe found and {feature: why} of the features it runs in their IEEE form.
        self.routes = [forced_route] if forced_route else [r for r in self.backend.routes if route_available(r)]
        self.left, self.probes, self.ieee, self.set_up = [], {}, {}, False  # set_up: the first rung's (_set_up_rung)
        self.launches, self.proof_launches = {}, {}  # by key: [_CallKernel], {name: launch}
        self.specializes_on_storage_size = target == "hip"  # AMD's 32-bit buffer offsets
        # A call proven at its key launches its compiled kernels straight away where the key covers the JIT's; the
        # driver's current device and stream, asked every ready call, bound once.
        self.launches_ready = (not _INTERPRET and self.backend.compiled_launch
                               and not self.specializes_on_storage_size)
        if self.launches_ready:
            try:
                driver = triton.runtime.driver.active
                self.current_device, self.current_stream = driver.get_current_device, driver.get_current_stream
            except Exception:
                self.launches_ready = False
        # (M, H, settings, specialization): (compiled kernel, grid, argument indices (None: all), constexprs) of each
        # of a ready call's kernels: plain tuples, which unpack faster than named ones (the ready path unpacks them)
        self.ready = {}
        self.last_ready = None  # (the call, its scratch, its ready launches) of the last call launched from ready
        self.scratch = threading.local()  # by_stream: {stream: the scratch of this thread's calls there}
        capturing = getattr(self.module, "is_current_stream_capturing", None)
        self.capturing = capturing if callable(capturing) else lambda: False
        self.table = torch.empty(2 * _LUT_N, dtype=torch.float32, device=x.device)
        self.table_values = self.table_launch = None  # the table read back, and the launch that filled it
        # (proof, what its pass proves) and (key, specialization) passed on this rung; {proof: why it cannot judge};
        # {finite_only: the witness's expectations}; the compile keys of the proofs' kernels compiled here.
        self.proven, self.cannot_judge, self.expectations, self.proofs_compiled = set(), {}, {}, set()

    @property
    def route(self):
        return self.routes[0]

    def _plan(self, M, H, index_64=False, settings=None, resident=None):
        return launch_plan(self.backend, M, H, route=self.route, arch=self.arch, sm_count=self.sm_count,
                           warp_size=self.warp_size, settings=settings, index_64=index_64, resident=resident,
                           ieee=self.ieee.get(self.route, {}))

    def scratch_for(self, stream, elements):
        """The scratch of a call on stream, at least elements long, kept for this thread's next call there (which the
        stream orders after this one); new where the stream is unknown (None) or captured (a graph keeps its own)."""
        kept = getattr(self.scratch, "by_stream", None)
        if kept is None:
            kept = self.scratch.by_stream = {}
        scratch = kept.get(stream)
        keep = stream is not None and not self.capturing()
        if scratch is None or scratch.numel() < elements or not keep:
            scratch = torch.empty(elements, dtype=torch.bfloat16, device=self.table.device)
            if keep:
                kept[stream] = scratch
        return scratch


class _CallKernel(NamedTuple):
    """One of a call's kernels: its launch, its arguments' indices among the call's, its compiled kernels by
    specialization (None: launched through the JIT), the specializations compiled and loaded."""
    launch: object
    arg_indices: tuple
    compiled: dict
    loaded: set


def _take_rung(device, key=None, args=None, specialization=None):
    """The ladder: the call's kernels ([_CallKernel]) on the first remaining rung that sets up here, compiles and loads
    them for these arguments and passes the proofs they lack (args None: the rung set up alone, key the call that
    sets it up). A rung that fails any of these is left for the next; a proof's own kernel that cannot run costs the
    proof, not the rung. An error at run time is raised, not hidden."""
    while True:
        try:
            verdict = None if device.set_up else _set_up_rung(device, key)
            if verdict is None:
                if args is None:
                    return None
                found = _call_launches(device, key, args, specialization)
                verdict = _prove(device, key, specialization, found, args)
                if verdict is None:
                    return found
        except KernelFailure as exc:
            if exc.launch.name in _PROOF_OF_LAUNCH:
                _cannot_judge(device, _PROOF_OF_LAUNCH[exc.launch.name], _compile_failure(exc))
                continue
            verdict = Verdict(leave=_compile_failure(exc))
        _leave_rung(device, verdict.leave, verdict.mechanism)


def _set_up_rung(device, key=None):
    """Sets the first remaining rung up: its table filled, a native rung's probe run, their kernels compiled in one
    batch of children with the witness's and the setting-up call's (key). A probe's difference that a feature in its
    IEEE form explains turns that feature IEEE, and the rung is set up again; the Verdict that leaves the rung where
    none explains it, else None."""
    while True:
        plan = device._plan(GROUP_SIZE, GROUP_SIZE)
        witness = {} if "witness" in device.cannot_judge else witness_plan(
            device.backend, GROUP_SIZE, GROUP_SIZE, route=device.route, warp_size=device.warp_size)
        launches = [plan[name] for name in PER_DEVICE_LAUNCHES if name in plan] + [
            # not the same kernel as the rung's own table; nor a table already filled
            launch for launch in witness.values()
            if launch.name != "witness_table" or not ("sigmoid_table" in plan or device.table_values)]
        if key is not None:
            with contextlib.suppress(ValueError):  # a grid too large: _call_launches meets it again, and raises
                call_plan = device._plan(*key)
                launches += _call_kernels(call_plan) + list(_judging_proof_launches(device, call_plan).values())
        # a proof's kernel a rung before this one compiled is not compiled again
        pairs = [pair for pair in _stand_ins(launches, device) if _compile_key(*pair) not in device.proofs_compiled]
        _compile_all(pairs, device, while_compiling=lambda wait_for: _witness_host_work(device, pairs, wait_for))
        device.proofs_compiled.update(_compile_key(*pair) for pair in pairs if pair[0].name in _PROOF_OF_LAUNCH)
        table = plan.get("sigmoid_table") or witness.get("witness_table")  # none once the witness cannot judge here
        if table is not None and not device.table_values:
            _fill_table(device, table)
        probe = plan.get("probe")
        if probe is not None:
            probe_out = torch.empty(4 * probe.grid[0], dtype=torch.int32, device=device.table.device)
            probe.kernel[probe.grid](probe_out, device.table, **probe.constexprs, **probe.options)
            counts, findings = _probe_verdict(probe_out.cpu().tolist(), probe.constexprs)
            device.probes[device.route] = counts
            ieee = device.ieee.setdefault(device.route, {})
            turn = ieee_features_for(device.route, findings, ieee)
            if turn:
                ieee.update((feature, findings[check]) for feature, check in turn.items())
                _warn(f"the {device.route} route on this {device.backend.name} device runs its "
                      f"{', '.join(sorted(turn))} in the IEEE form: {_probe_why(counts, findings, findings)}")
                continue
            if turn is None:  # the checks that no feature in its IEEE form explains
                return Verdict(leave=_probe_why(counts, findings, set(findings) - _explained_checks(ieee)))
        if hasattr(device.module, "synchronize"):
            device.module.synchronize()  # the table is filled before a call on any stream reads it
        device.set_up = True
        return None


def _leave_rung(device, why, mechanism=None):
    """Leaves the first rung, and what every shape found on it, with one warning that says why (a RuntimeError where
    none remains); mechanism: an ordering found broken, which every rung relying on it is left with."""
    failed = [r for r in device.routes if r == device.route or mechanism and ROUTE_TABLE[r].ordering == mechanism]
    if mechanism:
        why += f": every rung relying on the {mechanism} ({ORDERINGS[mechanism]}) is left with it"
    routes = f"route{'s' if len(failed) > 1 else ''}"
    if len(failed) == len(device.routes):
        raise RuntimeError(f"silu_dot_fwd_bwd_quant_fuse: the {' and '.join(failed)} {routes}, the last "
                           f"{'ones' if len(failed) > 1 else 'one'} remaining on this {device.backend.name} device, "
                           f"cannot run: {why}")
    device.routes = [r for r in device.routes if r not in failed]
    device.left += [(r, why) for r in failed]
    for found_on_the_rung in (device.launches, device.proof_launches, device.proven, device.ready):
        found_on_the_rung.clear()
    device.last_ready, device.set_up = None, False
    _warn(f"left the {', '.join(failed)} {routes} on this {device.backend.name} device: {why}; taking the "
          f"{device.route} route")


def _warn(message):
    """One RuntimeWarning of this module, laid at the line of the first caller outside it."""
    level, frame = 2, sys._getframe(1)
    while frame is not None and frame.f_globals is globals():
        level, frame = level + 1, frame.f_back
    warnings.warn(f"silu_dot_fwd_bwd_quant_fuse: {message}", RuntimeWarning, stacklevel=level)


def _call_launches(device, key, args, specialization):
    """[_CallKernel] of a call's kernels (key: (M, H, index_64, settings); settings None: the route's own), planned once
    a key, compiled and loaded with the ordering check's for these arguments (a KernelFailure where one cannot run). A
    persistent rung's grid is planned again from the programs an SM holds of its compiled kernel."""
    M, H, index_64, settings = key
    found = device.launches.get(key)
    resident = None
    while found is None:
        planned_with = settings or launch_settings(device.backend, M, H, device.sm_count, device.route,
                                                   device.warp_size, resident)
        plan = device._plan(M, H, index_64, planned_with)
        found = [_CallKernel(launch, tuple(i for i, (name, _) in enumerate(KERNEL_ARGUMENTS) if name in
                                           launch.signature), {}, {specialization}) for launch in _call_kernels(plan)]
        device.proof_launches[key] = proofs = _judging_proof_launches(device, plan)
        ordering = [pair for pair in _stand_ins(proofs.values(), device)
                    if _compile_key(*pair) not in device.proofs_compiled]
        # A grid planned again (resident) compiles the same kernels: no children for them again.
        kernels = _compile_all([(kernel.launch, tuple(args[i] for i in kernel.arg_indices)) for kernel in found]
                               + ordering, device if resident is None else None)
        device.proofs_compiled.update(_compile_key(*pair) for pair in ordering)
        for call_kernel, kernel in zip(found, kernels):
            if call_kernel.launch.constexprs.get("PERSISTENT") and resident is None and settings is None:
                resident = resident_programs(kernel, device.index, device.warp_size)
                if resident:
                    found = None
                    break
    device.launches[key] = found
    for call_kernel in found:
        if specialization not in call_kernel.loaded:
            # Arguments of another alignment or size compile another binary: compiled and loaded as the first was,
            # so that a compiler that dies or a binary that does not load costs the rung.
            _compile_all([(call_kernel.launch, tuple(args[i] for i in call_kernel.arg_indices))], device)
            call_kernel.loaded.add(specialization)
    return found


def ladder_for(device):
    """[(route, how it stands)] of a torch device's ladder, set up as route_for does: "left: why", "taken" (with what
    its proofs found), "not tried"."""
    dev = _device(torch.empty(0, device=device))
    notes = [] if ROUTE_TABLE[dev.route].exact else [
        "not byte-exact: the last rung computes as the reference is written, with the backend's exp, division and "
        "casts, and is held to the judge's tolerance only"]
    counts = dev.probes.get(dev.route)
    if counts is not None:
        notes.append(f"its probe: no difference from IEEE arithmetic in {', '.join(c for c in counts if not counts[c])}"
                     + "".join(f"; {c}: {n} differences, unused by the features in their IEEE form"
                               for c, n in counts.items() if n))
    notes += [f"{feature} in its IEEE form: {why.replace('its probe', 'its first probe', 1)}"
              for feature, why in dev.ieee.get(dev.route, {}).items()]
    notes += [f"unproven by the {proof}: it cannot judge this device: {why}" for proof, why in dev.cannot_judge.items()]
    taken = "taken" + "".join(f" ({note})" for note in notes)
    return ([(route, f"left: {why}") for route, why in dev.left] + [(dev.route, taken)]
            + [(route, "not tried") for route in dev.routes[1:]])


class Verdict(NamedTuple):
    """What one proof found of the rung it ran on. leave: why the rung is left (None: it passed); mechanism: the
    ordering at fault (Route.ordering), where every rung relying on it is left at once; unjudged: why the proof cannot
    judge here (a fault of its own, that its host side finds): warned once, and no rung left for it."""
    leave: Optional[str] = None
    mechanism: Optional[str] = None
    unjudged: Optional[str] = None


# The proofs a rung's kernels pass before they write a call's outputs, in order: the ordering its kernels rely on,
# once per device and launch settings; the witness, once per shape and specialization (_WITNESS_RUNS times).
PROOFS = ("ordering", "witness")
# The proofs' own launches, and the proof that a failure to compile one costs.
_PROOF_OF_LAUNCH = {**{name: "witness" for name in WITNESS_LAUNCHES}, "ordering": "ordering"}


def _prove(device, key, specialization, found, args):
    """Runs the proofs the rung's kernels lack for a call: the first verdict that leaves the rung, or None."""
    _refuse_capture(device.module, "the first call of each shape proves its kernels on the device")
    for proof in PROOFS:
        if proof == "ordering":  # what a pass proves: the ordering, at these launch settings (none where not relied on)
            launch = device.proof_launches.get(key, {}).get("ordering")
            passed = launch and (proof, tuple(launch.constexprs.items()), tuple(launch.options.items()))
        else:
            passed = (proof, key, specialization)
        if proof in device.cannot_judge or not passed or passed in device.proven:
            continue
        verdict = _PROOF_RUNS[proof](device, key, found, args)
        if verdict.unjudged:
            _cannot_judge(device, proof, verdict.unjudged)
        elif verdict.leave:
            return verdict
        else:
            device.proven.add(passed)
    device.proven.add((key, specialization))
    return None


def _judging_proof_launches(device, plan):
    """{name: launch} of a plan's proof launches (PROOF_LAUNCHES) whose proof can judge on this device."""
    return {name: plan[name] for name in PROOF_LAUNCHES
            if name in plan and _PROOF_OF_LAUNCH[name] not in device.cannot_judge}


def _cannot_judge(device, proof, why):
    device.cannot_judge[proof] = why
    _warn(f"the {proof} cannot judge the kernels on this {device.backend.name} device ({why}): the {device.route} "
          f"route and every later one run unproven by it")


_STAND_IN_DTYPES = {"*bf16": torch.bfloat16, "*i8": torch.int8, "*fp32": torch.float32, "*i32": torch.int32,
                    "*i64": torch.int64}  # the last for the tools that instrument the kernels


def _stand_ins(launches, device):
    """[(launch, stand-in arguments)] of launches, to compile before a call brings its own: a tensor of each pointer's
    type at any allocation's alignment here, GROUP_SIZE for each integer (a KeyError for a pointer of another type)."""
    return [(launch, tuple(GROUP_SIZE if kind == "i32" else torch.empty(16, dtype=_STAND_IN_DTYPES[kind],
                                                                       device=device.table.device)
                           for kind in launch.signature.values())) for launch in launches]


def _witness_host_work(device, pairs, wait_for):
    """The witness's host work while the children compile pairs: its input; once the table's child has compiled it
    (wait_for None: no child compiles), the table compiled here, filled, read back, and the expectations computed. What
    fails here is met again after the children, where it says why."""
    finite_only = not ROUTE_TABLE[device.route].exact
    table = next((i for i, (launch, _) in enumerate(pairs) if launch.name in ("sigmoid_table", "witness_table")), None)
    with contextlib.suppress(Exception):
        _witness_region(WITNESS_CHANNELS, finite_only)
        if wait_for is None or table is None or device.table_values or wait_for(table) != "compiled":
            return
        _compile(pairs[table][0], (device.table,))
        _fill_table(device, pairs[table][0])
        if "witness" not in device.cannot_judge:
            _witness_expectations(device, finite_only)


def _fill_table(device, launch):
    """Fills the device's table and reads it back: the witness cannot judge one that is not the sigmoid."""
    launch.kernel[launch.grid](device.table, **launch.constexprs, **launch.options)
    device.table_values, device.table_launch = device.table.cpu().tolist(), launch
    fault = _table_fault(device.table_values, loose=launch.constexprs["NPU_DIVISION"])
    if fault and "witness" not in device.cannot_judge:
        _cannot_judge(device, "witness", fault)


def _compile_key(launch, args):
    """What makes a launch on args one compile: constexprs, options, pointers' addresses modulo _ALIGNMENT."""
    return (launch.name, tuple(launch.constexprs.items()), tuple(launch.options.items()),
            tuple(a.data_ptr() % _ALIGNMENT for a in args if isinstance(a, torch.Tensor)))


# A proof's check kernel writes its run's stamp last in each of its records (_stamped_record): a record holding
# another was not written by that run (a store the compiler dropped, a launch that did not run, an earlier run's
# record that a caching allocator handed back), and the proof cannot judge. Stamps count up from a random start in
# [2**30, 1.5 * 2**30): far above a record's counts, another for each copy of this module a process loads.
_STAMPS = itertools.count(2**30 + int.from_bytes(os.urandom(4), "little") % 2**29)


def _run_stamp():
    return next(_STAMPS) % 2**31


def _unstamped(values, stamp):
    """Why the records of a proof's check kernel (four int32 each, the stamp last) are not all its run's, or None."""
    stale = [value for value in values[3::4] if value != stamp]
    if not stale:
        return None
    return (f"its check kernel did not write {len(stale)} of its {len(values) // 4} records (one holds the stamp "
            f"{stale[0]}, not its run's {stamp})")


def _ordering_verdict(device, key, found, args):
    """Runs a call's planned ordering check, reads its records: a violation (a race) costs every rung relying on it."""
    launch = device.proof_launches[key]["ordering"]
    programs = launch.grid[0]
    slots = torch.empty(programs * GROUP_SIZE * GROUP_SIZE, dtype=torch.bfloat16, device=args[0].device)
    record = torch.empty(4 * programs, dtype=torch.int32, device=args[0].device)
    stamp = _run_stamp()
    launch.kernel[launch.grid](slots, record, stamp, **launch.constexprs, **launch.options)
    values = record.cpu().tolist()
    if unwritten := _unstamped(values, stamp):
        return Verdict(unjudged=unwritten)
    violations, compared = sum(values[0::4]), sum(values[1::4])
    total = programs * launch.constexprs["ROUNDS"] * GROUP_SIZE * GROUP_SIZE
    if compared != total:
        return Verdict(unjudged=f"its check kernel compared {compared} of the {total} elements it wrote")
    if violations:
        programs_hit = sum(1 for v in values[0::4] if v)
        return Verdict(leave=f"its ordering check found {violations} of {total} reads of a program's scratch slot out "
                             f"of order, in {programs_hit} of {programs} programs (a race)",
                       mechanism=ROUTE_TABLE[device.route].ordering)
    return Verdict()


def _witness_expectations(device, finite_only):
    """(the expectations as lists (_witness_expected), {argument name: the check kernel's expectations and the input
    kernel's region, on the device}), computed from the device's table once."""
    if finite_only not in device.expectations:
        lists = _witness_expected(WITNESS_CHANNELS, finite_only, device.table_values)
        on_device = {f"expected_{short}_ptr": torch.tensor(lists[output], dtype=torch.float32 if i % 2 else torch.int8)
                     for i, (short, output) in enumerate(zip(("gq", "gs", "yq", "ys"), WITNESS_OUTPUTS))}
        region = [b - ((b >> 15) << 16) for b in _witness_region(WITNESS_CHANNELS, finite_only)]  # as int16
        on_device["region_ptr"] = torch.tensor(region, dtype=torch.int16).view(torch.bfloat16)
        device.expectations[finite_only] = lists, {name: t.to(device.table.device) for name, t in on_device.items()}
    return device.expectations[finite_only]


def _witness_verdict(device, key, found, args):
    """Runs a call's kernels (found) at its shape on the witness's input, in buffers of its own laid out as the call's,
    and compares every output byte with the expectations; _WITNESS_RUNS times where the rung relies on an ordering,
    each run's input pushed out of L2 first, else twice: runs that differ are a race. A difference costs no rung where
    the host judging the element again, the input written again or the arbiter lays it at the witness's own door."""
    M, H, index_64, _ = key
    route = ROUTE_TABLE[device.route]
    finite_only = not route.exact
    expected, on_device = _witness_expectations(device, finite_only)
    plan = witness_plan(device.backend, M, H, route=route, warp_size=device.warp_size, index_64=index_64,
                        evict_bytes=device.evict_bytes)
    check, evict = plan["witness_check"], plan.get("witness_evict")
    own = tuple(_same_layout(a) if isinstance(a, torch.Tensor) else a for a in args)
    named = {**dict(zip((name for name, _ in KERNEL_ARGUMENTS), own)), **on_device, "stamp": 0,
             "record_ptr": torch.empty(check.grid[0] * 16, dtype=torch.int32, device=device.table.device),
             "buffer_ptr": torch.empty(evict.grid[0] * _EVICT_BLOCK if evict else 1, dtype=torch.int32,
                                       device=device.table.device)}

    def run(launch, **instead):
        launch.kernel[launch.grid](*({**named, **instead}[name] for name in launch.signature), **launch.constexprs,
                                   **launch.options)

    before = [plan[name] for name in ("witness_input", "witness_evict") if name in plan]
    pairs = [(launch, tuple(named[name] for name in launch.signature)) for launch in before + [check]]
    # _set_up_rung compiled them for every shape but 64-bit ones, at its alignments
    pending = [pair for pair in pairs if _compile_key(*pair) not in device.proofs_compiled]
    if pending:
        try:
            _compile_all(pending, device)
        except KernelFailure as exc:
            return Verdict(unjudged=_compile_failure(exc))
        device.proofs_compiled.update(_compile_key(*pair) for pair in pending)
    run(device.table_launch)  # the witness's own table, by the launch that filled the device's
    specialization = _specialization_of(device, own[:8], tuple(args[10:16]))
    runs = []
    for _ in range(_WITNESS_RUNS if route.ordering else min(2, _WITNESS_RUNS)):
        named["stamp"] = _run_stamp()
        for launch in before:
            run(launch)
        _launch_all(found, own, specialization, device, _current_stream(device))
        run(check)
        values = named["record_ptr"].cpu().tolist()
        if unwritten := _unstamped(values, named["stamp"]):
            return Verdict(unjudged=unwritten)
        runs.append(witness_findings(values, H))
    if any(later != runs[0] for later in runs[1:]):
        counts = "; ".join(f"run {n + 1}: " + ", ".join(f"{o} {f[0]}" for o, f in zip(WITNESS_OUTPUTS, findings))
                           for n, findings in enumerate(runs))
        return Verdict(leave=f"its witness's {len(runs)} runs found different wrong elements ({counts}; a race)",
                       mechanism=route.ordering)
    for output, (_, compared, _), out in zip(WITNESS_OUTPUTS, runs[0], own[2:6]):
        if compared != out.numel():
            return Verdict(unjudged=f"its check kernel compared {compared} of the {out.numel()} elements of {output}")
    wrong = [i for i, (count, _, _) in enumerate(runs[0]) if count]
    if not wrong:
        return Verdict()
    i = wrong[0]  # in WITNESS_OUTPUTS: grad_input's, then y's; each one's int8, then its scales
    output, in_grad, is_scale = WITNESS_OUTPUTS[i], i < 2, i % 2 == 1
    count, _, (row, col) = runs[0][i]
    index, _, (m, h, half) = witness_source(output, row, col, H)
    want, got = expected[output][index], own[2 + i][row, col].item()
    scale = expected[WITNESS_OUTPUTS[i | 1]][index if is_scale else index // GROUP_SIZE]
    # The check's verdict is the device's; the host judges that element again, by the check kernel's rule.
    if (_same_value(got, want) if route.exact
            else not math.isfinite(scale) or abs(got - want) <= (2**-6 * abs(want) if is_scale else 2)):
        return Verdict(unjudged=f"its check kernel found {output}[{row}, {col}] wrong, but it holds {_shown(got)}, "
                                f"as the host expects")
    # The input written again into buffers of its own (a rung that wrote into x cannot blame it), the element's group
    # (its row's channels in grad_input, its channel's tokens in y) read back.
    fresh = {"x_ptr": _same_layout(args[0]), "grad_y_ptr": _same_layout(args[1])}
    run(plan["witness_input"], **fresh)
    member = h % GROUP_SIZE if in_grad else m % GROUP_SIZE  # the element's place in its group
    m, h = (m, h - member) if in_grad else (m - member, h)
    rows, cols = (1, GROUP_SIZE) if in_grad else (GROUP_SIZE, 1)
    read = [part[m:m + rows, h:h + cols].cpu().flatten().tolist()
            for part in (fresh["x_ptr"][:, :H], fresh["x_ptr"][:, H:], fresh["grad_y_ptr"])]
    inputs = []
    for place, written in zip(itertools.product(range(m, m + rows), range(h, h + cols)), zip(*read)):
        inputs.append(witness_input(*witness_source("grad_input_q", *place, H)[1], finite_only))
        if not all(map(_same_value, written, inputs[-1])):
            return Verdict(unjudged=f"its input kernel wrote (gate, up, grad_y) {written} at {list(place)} where the "
                                    f"host expects {inputs[-1]}")
    q, arbiter_scale = _arbiter_group(inputs, half if in_grad else 2, device.table_values)
    arbiter = arbiter_scale if is_scale else q[member]
    if not _same_value(arbiter, want):
        return Verdict(unjudged=f"its expectation of {output}[{row}, {col}] is {_shown(want)}, where its arbiter "
                                f"computes {_shown(arbiter)}")
    # The launch that wrote output: a two-pass route's y kernel quantizes y, or the y its grad kernel kept.
    launches = {launch.name: launch for launch, *_ in found}
    writer = ("main kernel" if "grad" not in launches else "grad kernel" if in_grad
              else "grad and y kernels" if launches["y"].kernel is _y_kept_kernel else "y kernel")
    others = ", ".join(f"{WITNESS_OUTPUTS[j]} {runs[0][j][0]}" for j in wrong[1:])
    return Verdict(leave=f"its witness found {count} wrong elements in {output} on real values, written by its "
                         f"{writer}, first found at [{row}, {col}]: got {_shown(got)}, expected "
                         f"{_shown(want)}" + (f" (and wrong elements in {others})" if others else ""))


_PROOF_RUNS = {"ordering": _ordering_verdict, "witness": _witness_verdict}


class KernelFailure(Exception):
    """A kernel that cannot run on this device: `what` ("does not load", "kills its compiler"...) and `why`; `launch`,
    which of the launches compiled together it is."""

    def __init__(self, what, why, launch=None):
        super().__init__(f"{what}: {why}")
        self.what, self.why, self.launch = what, why, launch


def _compile_failure(exc):
    """Why a rung is left, from the KernelFailure of one of its kernels."""
    return f"its {exc.launch.name} kernel {exc.what} ({exc.why})"


def _first_line(exc):
    return f"{type(exc).__name__}: {(str(exc).strip().splitlines() or [''])[0][:200]}"


def _compile_all(pairs, device=None, while_compiling=None):
    """[the compiled kernel (None under the interpreter)] of each (launch, args), or a KernelFailure naming the launch
    that cannot run here. On a device each compiles first in a child process of its own, all at once, then here from
    Triton's cache. while_compiling: host work done meanwhile, given wait_for(i) (None where no child compiles)."""
    if device is not None and not _INTERPRET:
        _compile_in_children(pairs, device.target, device.index, while_compiling=while_compiling)
    elif while_compiling is not None:
        while_compiling(None)
    kernels = []
    for launch, args in pairs:
        try:
            kernels.append(_compile(launch, args))
        except KernelFailure as exc:
            exc.launch = launch
            raise
        except Exception as exc:
            raise KernelFailure("does not compile", _first_line(exc), launch) from exc
    return kernels


def _compile(launch, args):
    """The compiled kernel of a launch for args (None under the interpreter), loaded with the loader's checks (shared
    memory; Iluvatar's threads) without running it: a KernelFailure "does not load", not an error at run time."""
    if not hasattr(launch.kernel, "warmup"):
        return None
    kernel = launch.kernel.warmup(*args, grid=launch.grid, **launch.constexprs, **launch.options)
    load = getattr(kernel, "_init_handles", None)
    if callable(load):
        try:
            load()
        except Exception as exc:
            raise KernelFailure("does not load", _first_line(exc)) from exc
    return kernel


class _DriverAsked(AttributeError):
    """A child's JIT asked Triton's driver for more than _ChildDriver answers."""


class _ChildDriver:
    """Triton's driver in a compiling child: the parent's target and device index and a null stream, all that the JIT
    of Triton 3.0, 3.1, 3.2, 3.5, 3.6, 3.9 and triton-ascend 3.2 asks, and no device call (no device context survives a
    fork). Anything else raises _DriverAsked, and the parent compiles alone."""

    def __init__(self, target, index):
        self.get_current_target, self.get_current_device = (lambda: target), (lambda: index)
        self.get_current_stream = lambda device=None: 0

    def __getattr__(self, name):
        raise _DriverAsked(name)


# A child's compile that runs past this is cut off and this process compiles alone (the rung is kept): a hang costs
# the first call this much once, never a rung.
CHILD_COMPILE_TIMEOUT_S = 30
FRESH_COMPILE_TIMEOUT_S = 30  # a fresh interpreter's, past which it cannot tell whether a death was the kernel's
_no_children = []  # why children no longer compile in this process (empty while they do)
_forking = threading.Lock()


def _compile_in_children(pairs, target, index, while_compiling=None):
    """Compiles each (launch, args) in a forked child of its own, all at once, into Triton's cache for this process's
    compile: a compiler that kills its process (an LLVM fatal error, which no except clause sees) costs the rung, not
    the run. A death is the kernel's (KernelFailure "kills its compiler") only where a fresh interpreter's compile dies
    too: on Triton 3.0 and 3.1 a child can die for its parent's sake (_in_children), and a safeguard must never cost
    a sound rung. Where no child can compile (no fork, no target, a deadline passed, a JIT asking the driver for more,
    a death that was this process's), this process compiles alone from then on, with one warning."""
    why = ("Triton's driver gives no target" if target is None else
           None if hasattr(os, "fork") else "this platform has no os.fork")
    if _no_children or why:
        if while_compiling is not None:
            while_compiling(None)
    else:
        _keys_before_fork(launch.kernel for launch, _ in pairs)
        jobs = [(launch.kernel, args, launch.grid, {**launch.constexprs, **launch.options}) for launch, args in pairs]
        verdicts = _in_children(jobs, target, index, while_compiling=while_compiling)
        dead = [i for i, (verdict, _) in enumerate(verdicts) if verdict == "died"]
        fresh = _in_children([jobs[i] for i in dead], target, index, fresh=True) if dead else []
        for i, (verdict, detail) in zip(dead, fresh):
            if verdict != "compiled":
                raise KernelFailure("kills its compiler", f"{verdicts[i][1]}; " + (
                    "in a fresh interpreter too" if verdict == "died" else
                    f"no fresh interpreter could tell whether it is the kernel's doing ({detail})"), pairs[i][0])
        why = (f"a child died compiling the {pairs[dead[0]][0].name} kernel ({verdicts[dead[0]][1]}), which a fresh "
               f"interpreter compiles: the death was this process's" if dead else
               next((detail for verdict, detail in verdicts if verdict == "no child"), None))
    if why and not _no_children:
        _no_children.append(why)
        _warn(f"compiling in this process, as no child process can compile here ({why}): a compiler that aborts "
              f"would end the run")


def _keys_before_fork(kernels):
    """The keys Triton computes once a process, its own and each kernel's, computed before the forks for the children
    to inherit: from Triton 3.5 a kernel's key depends on those keyed before it, and a key that differed here would
    miss the child's binary in the cache (PERF_NOTES.md, seventeenth round)."""
    for module in ("triton.runtime.cache", "triton.compiler.compiler"):  # its home from Triton 3.5; before
        with contextlib.suppress(Exception):  # not there; or it fails, and the compile meets that again and says why
            sys.modules[module].triton_key()
    for kernel in kernels:
        try:
            getattr(kernel, "cache_key", None)
        except Exception:  # keyed again where it compiles, which says why
            if getattr(kernel, "hash", None) is not None:
                kernel.hash = None


def _in_children(jobs, target, index, while_compiling=None, fresh=False):
    """[(verdict, detail)] of compiling each job (kernel, args, grid, kwargs) in a child process of its own (fresh: a
    fresh interpreter each), all at once. What this process left its garbage collector is frozen across the forks: a
    child collecting it would run destructors without the threads they join (Triton 3.0 and 3.1 leave MLIR contexts
    with thread pools: a child freeing one dies, or hangs)."""
    freeze = getattr(gc, "freeze", None)
    with _forking:  # the freeze is the process's: another thread's unfreeze must wait for these forks
        if freeze is not None:
            freeze()
        try:
            started = [_start_child(job, target, index, fresh=fresh) for job in jobs]
        finally:
            if freeze is not None:
                gc.unfreeze()
    deadline = time.monotonic() + (FRESH_COMPILE_TIMEOUT_S if fresh else CHILD_COMPILE_TIMEOUT_S)
    verdicts = {}

    def wait_for(i):
        if i not in verdicts:
            pid, end = started[i]
            verdicts[i] = ("no child", end) if pid is None else _child_verdict(pid, end, deadline, fresh=fresh)
        return verdicts[i][0]

    try:
        if while_compiling is not None:
            while_compiling(wait_for)
    finally:  # every child waited for (or killed past the deadline), whatever the host work raised
        for i in range(len(started)):
            wait_for(i)
    return [verdicts[i] for i in range(len(started))]


def _start_child(job, target, index, fresh=False):
    """(pid, the read end of the pipe of its lines) of a child compiling job (_compile_and_tell): forked, or (fresh) a
    new interpreter the fork runs (_FRESH_COMPILE) with this process's module path, Triton and cache; or (None, why)."""
    try:
        read_end, write_end = os.pipe()
    except Exception as exc:
        return None, f"os.pipe failed ({type(exc).__name__}: {exc})"
    try:
        for stream in (sys.stdout, sys.stderr):  # what this process has buffered is written once, here
            stream.flush()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # Python 3.12+: fork in a threaded process
            pid = os.fork()
    except Exception as exc:
        os.close(read_end)
        os.close(write_end)
        return None, f"os.fork failed ({type(exc).__name__}: {exc})"
    if pid == 0:
        gc.disable()  # the child lives for one compile: it collects nothing, the parent's garbage least of all
        try:
            os.close(read_end)
            os.setpgid(0, 0)
            if fresh:
                kernel, args, grid, kwargs = job
                # A tensor by its dtype and its address modulo 256: finer than any JIT's key, _ALIGNMENT's included.
                described = tuple(("tensor", str(a.dtype).rpartition(".")[2], a.data_ptr() % 256)
                                  if isinstance(a, torch.Tensor) else a for a in args)
                named = repr((kernel.fn.__code__.co_filename, kernel.fn.__name__, (target.backend, target.arch,
                              target.warp_size), described, tuple(grid), kwargs, (triton.__version__, triton.__file__)))
                null = os.open(os.devnull, os.O_RDWR)
                for fd in (0, 1, 2):
                    os.dup2(null, fd)
                os.set_inheritable(write_end, True)
                env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
                env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
                os.execve(sys.executable, [sys.executable, "-c", _FRESH_COMPILE, named, str(write_end)], env)
            _compile_and_tell(*job, target, index, write_end, forked=True)
        except BaseException as exc:
            with contextlib.suppress(BaseException):
                os.write(write_end, f"S {_first_line(exc)}\n".encode())
        finally:
            os._exit(0)
    os.close(write_end)
    return pid, read_end


def _compile_and_tell(kernel, args, grid, kwargs, target, index, fd, forked=False):
    """In a child: compiles the kernel through its JIT with _ChildDriver, telling on fd a line a step: B as its work
    begins (a death after it is the compile's), then C (compiled), R and why (it raised) or A and what (its JIT asked
    the driver for more). A forked child then builds the kernel's C launcher into Triton's cache for the parent's load
    (PERF_NOTES.md, seventeenth round); a failure there leaves it to the parent."""
    os.write(fd, b"B\n")
    build_launcher = _launcher_builder() if forked else None
    triton.runtime.driver.set_active(_ChildDriver(target, index))
    compiled = None
    try:
        compiled, told = kernel.warmup(*args, grid=grid, **kwargs), "C"
    except _DriverAsked as asked:
        told = f"A {asked}"
    except BaseException as exc:
        told = f"R {type(exc).__name__}: {str(exc).strip()[:200]!r}"  # a compile error's first line is its place
    os.write(fd, f"{told}\n".encode())
    with contextlib.suppress(BaseException):
        if compiled is not None and build_launcher is not None:
            build_launcher(compiled.src, compiled.metadata)


def _launcher_builder():
    """The active driver's launcher class (None where none), asked before a forked child sets _ChildDriver."""
    with contextlib.suppress(Exception):
        return triton.runtime.driver.active.launcher_cls


def _child_verdict(pid, read_end, deadline, fresh=False):
    """(verdict, detail) of a child by the last line it told once it ended or the deadline passed (its process group
    then killed): "compiled"; "raised" (this process's compile meets it again); "died" (a signal or an exit once its
    compile began); else "no child" and why (past the deadline, its JIT asked for more, its set-up failed...)."""
    status, told = None, b""
    try:
        while status is None and time.monotonic() < deadline:
            done, reaped = os.waitpid(pid, os.WNOHANG)
            status = reaped if done else time.sleep(0.005)
        os.set_blocking(read_end, False)  # what it told before its end or the deadline, not what it may tell after
        told = os.read(read_end, 4096)
    except BlockingIOError:
        pass
    except Exception as exc:
        return "no child", f"waiting for the child failed ({type(exc).__name__}: {exc})"
    finally:
        os.close(read_end)
        if status is None:
            for kill in (os.killpg, os.kill):  # its group (its compiler's tools), and itself before it set the group
                with contextlib.suppress(OSError):
                    kill(pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                os.waitpid(pid, 0)
    letter, _, detail = (told.decode(errors="replace").splitlines() or [""])[-1].partition(" ")
    process = "a fresh interpreter" if fresh else "a child process"
    its_compile = "a fresh interpreter's compile" if fresh else "its compile in a child process"
    if letter in ("C", "R"):  # told in time: what ran past the deadline was its launcher's build
        return ("compiled", "") if letter == "C" else ("raised", f"{its_compile} raised ({detail})")
    if letter in ("A", "S"):
        return "no child", (f"{its_compile} asked Triton's driver for {detail}" if letter == "A" else
                            f"{process} could not set the compile up ({detail})")
    if status is None:
        return "no child", f"{its_compile} took over {FRESH_COMPILE_TIMEOUT_S if fresh else CHILD_COMPILE_TIMEOUT_S} s"
    code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
    if letter != "B":
        return "no child", f"{process} ended before its compile began (exit code {code})"
    return "died", "the compiling process " + (
        f"exited with code {code} before it finished" if code >= 0 else
        f"died of signal {-code} ({next((s.name for s in signal.Signals if s == -code), 'unnamed')})")


# Run by a fresh interpreter (_start_child): argv[1] the job as _start_child names it, argv[2] the pipe's write end.
# It refuses another Triton than the caller's, loads the kernel's file as a module of its own, rebuilds the arguments
# and compiles as a forked child does (_compile_and_tell); where its set-up fails, it tells S and why.
_FRESH_COMPILE = """
import ast, importlib.util, os, sys
try:
    path, name, (backend, arch, warp_size), described, grid, kwargs, version = ast.literal_eval(sys.argv[1])
    import torch, triton
    from triton.backends.compiler import GPUTarget
    if (triton.__version__, triton.__file__) != version:
        raise RuntimeError(f"it imports Triton {triton.__version__} from {triton.__file__}, not the caller's")
    spec = importlib.util.spec_from_file_location("_silu_dot_fresh_compile", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    args = []
    for arg in described:
        if isinstance(arg, tuple) and arg[:1] == ("tensor",):
            buffer = torch.empty(320, dtype=getattr(torch, arg[1]))
            skip = (arg[2] - buffer.data_ptr()) % 256 // buffer.element_size()
            arg = buffer[skip:skip + 64]
        args.append(arg)
    module._compile_and_tell(getattr(module, name), args, grid, kwargs, GPUTarget(backend, arch, warp_size), 0,
                             int(sys.argv[2]))
except BaseException as exc:  # in its set-up: _compile_and_tell tells what its compile raised
    os.write(int(sys.argv[2]), f"S {type(exc).__name__}: {str(exc).strip()[:200]!r}".encode())
"""


def resident_programs(kernel, device_index, warp_size):
    """How many programs of a loaded kernel one SM holds at once, by registers and shared memory (as Triton's fused-
    softmax tutorial reckons); None where not told. A persistent route launches that many an SM."""
    try:
        properties = triton.runtime.driver.active.utils.get_device_properties(device_index)
        held = properties["max_num_regs"] // (kernel.n_regs * kernel.metadata.num_warps * warp_size)
        if kernel.metadata.shared:
            held = min(held, properties["max_shared_mem"] // kernel.metadata.shared)
    except Exception:
        return None
    return held or None


_devices = {}


def _device(x, key=None):
    """The _Device of x's device, set up on first use (key: the call's that sets it up, if one does)."""
    device = _devices.get(x.get_device())
    if device is None:
        device = _Device(x)
        _refuse_capture(device.module, "the first call on a device proves its arithmetic")
        with _on_device(x):
            _take_rung(device, key)
        _devices[x.get_device()] = device
    return device


def route_for(device):
    """The route taken on a torch device (set up as a call would: SILU_DOT_ROUTE is read then)."""
    return _device(torch.empty(0, device=device)).route


def _specialization(addresses, strides, storage_sizes=None):
    """The key of a call's compiled kernels: the pointers' addresses modulo _ALIGNMENT, the row strides; on AMD whether
    each storage (storage_sizes, bytes) is under 2 GiB too."""
    key = (tuple(address % _ALIGNMENT for address in addresses), strides)
    if storage_sizes is None:
        return key
    return key + (tuple(size < 2**31 for size in storage_sizes),)


def _specialization_of(device, tensors, strides):
    """_specialization of the main kernel's eight pointers, their storage's size where the device's Triton asks it."""
    return _specialization([t.data_ptr() for t in tensors], strides, [t.untyped_storage().nbytes() for t in tensors]
                           if device.specializes_on_storage_size else None)


def _current_stream(device):
    """The driver's stream for a launch on device; None where the device launches no ready calls, is not the current
    one, or the driver does not say (the call then takes the long way)."""
    if not device.launches_ready:
        return None
    try:
        index = device.current_device()
        return device.current_stream(index) if index == device.index else None
    except Exception:
        return None


def launch(x, grad_y, grad_input_q, grad_input_s, y_q_t, y_s_t, group_size=GROUP_SIZE, settings=None):
    """Checks the arguments and launches the route's kernels; returns the last compiled kernel launched. settings
    (LaunchSettings) overrides the route's own, for design sweeps. A ready call (its key proven and launched directly
    before) launches its compiled kernels on the driver's stream, with the tensors' addresses. Else the long way: its
    kernels compiled for this specialization and proven on the first rung that passes (_take_rung), then launched."""
    M, H, strides, index_64, addresses = _check_inputs(x, grad_y, grad_input_q, grad_input_s, y_q_t, y_s_t,
                                                       group_size)
    tensors = (x, grad_y, grad_input_q, grad_input_s, y_q_t, y_s_t)
    device = _devices.get(x.get_device())
    stream = None if device is None else _current_stream(device)
    if stream is not None:
        call = (M, H, settings, strides, addresses, stream, threading.get_ident())
        last = device.last_ready  # (the call, its scratch, its launches) of the last ready call
        if last is not None and last[0] == call and not device.capturing():
            launches = last[2]
        else:
            scratch = device.scratch_for(stream, M * H)
            pointers = addresses + (device.table.data_ptr(), scratch.data_ptr())
            ready = device.ready.get((M, H, settings, _specialization(pointers, strides)))
            launches = None if ready is None else tuple(
                (kernel, grid, tuple(_argument_values(pointers + (M, H) + strides, indices)) + constexprs)
                for kernel, grid, indices, constexprs in ready)
            if ready is not None and not device.capturing():
                device.last_ready = (call, scratch, launches)  # the scratch held while the memo holds its address
        if launches is not None:
            for kernel, grid, kernel_args in launches:
                _launch_compiled(kernel, grid, kernel_args, stream)
            return kernel
    key = (M, H, index_64, settings)
    device = _device(x, key)
    if device.module is not None and device.index != device.module.current_device():
        with _on_device(x):  # Triton launches on the current device and its stream
            return launch(x, grad_y, grad_input_q, grad_input_s, y_q_t, y_s_t, group_size, settings)
    stream = _current_stream(device)
    # One GROUP x GROUP slot a tile (the fused rungs), or y, M x H (the two-pass rungs that keep it).
    scratch = device.scratch_for(stream, M * H)
    args = (*tensors, device.table, scratch, M, H, *strides)
    specialization = _specialization_of(device, args[:8], strides)
    found = (device.launches[key] if (key, specialization) in device.proven
             else _take_rung(device, key, args, specialization))
    kernel, direct = _launch_all(found, args, specialization, device, stream)
    if direct and stream is not None:
        device.ready[(M, H, settings, specialization)] = tuple(
            (compiled[specialization], planned.grid, None if len(indices) == len(args) else indices,
             compiled[specialization].constexpr_values) for planned, indices, compiled, _ in found)
    return kernel


def _argument_values(args, indices=None):
    """args (those at indices, where given) as a compiled kernel's C launcher takes them fastest: each tensor by its
    address, which the launchers of Triton 3.0-3.6 and triton-ascend 3.2 take for a pointer as they take a tensor,
    without asking the tensor for it and the driver whether it is the device's (the call's checks did)."""
    return [a.data_ptr() if isinstance(a, torch.Tensor) else a for a in (args if indices is None else
                                                                          (args[i] for i in indices))]


# Where CompiledKernel[grid]'s runner reads the launch hooks.
_LAUNCH_HOOKS = next((owner for owner in (getattr(triton.compiler, "CompiledKernel", None),
                                          getattr(getattr(triton, "knobs", None), "runtime", None))
                      if hasattr(owner, "launch_enter_hook") and hasattr(owner, "launch_exit_hook")), None)


def _no_launch_hooks():
    """Whether no launch hook is set where this Triton's CompiledKernel[grid] runner reads them (CompiledKernel's own
    attributes to Triton 3.2, knobs.runtime's after; None, or from 3.5 a HookChain without calls); else False."""
    hooks = _LAUNCH_HOOKS
    if hooks is None:
        return False
    enter, leave = hooks.launch_enter_hook, hooks.launch_exit_hook
    return not getattr(enter, "calls", enter) and not getattr(leave, "calls", leave)


def _launch_compiled(kernel, grid, args, stream):
    """kernel[grid](*args, stream=stream). Where no launch hook is set (and the stream is known), the runner's own
    call of the kernel's launcher, without the runner: its other work (from Triton 3.5 a LazyDict of launch metadata
    every launch) serves the hooks alone. Triton 3.0-3.6 and triton-ascend 3.2 call the launcher so."""
    if stream is not None and _no_launch_hooks():
        kernel.run(grid[0], grid[1], grid[2], stream, kernel.function, kernel.packed_metadata, None, None, None, *args)
    else:
        kernel[grid](*args, **({} if stream is None else {"stream": stream}))


def _launch_all(found, args, specialization, device, stream=None):
    """Launches a call's kernels (found) on args: after its first JIT launch a kernel is launched from its compiled
    kernel, unless its launcher takes other arguments or the JIT's key is not known (Backend.compiled_launch). Returns
    the last kernel launched, and whether every one was launched directly."""
    direct = 0
    for planned, indices, compiled, _ in found:
        kernel_args = args if len(indices) == len(args) else tuple(args[i] for i in indices)
        kernel = compiled.get(specialization)
        if kernel is not None and not all(hasattr(kernel, name) for name in ("run", "function", "packed_metadata")):
            kernel = compiled[specialization] = None  # a fork's kernel without the runner's attributes: JIT launches
        if kernel is not None:
            try:
                _launch_compiled(kernel, planned.grid, (*_argument_values(kernel_args), *kernel.constexpr_values),
                                 stream)
                direct += 1
                continue
            except TypeError:  # a Triton whose compiled-kernel launcher takes other arguments: JIT launches
                compiled[specialization] = None
        kernel = planned.kernel[planned.grid](*kernel_args, **planned.constexprs, **planned.options)
        if not _INTERPRET and specialization not in compiled and device.backend.compiled_launch:
            # From Triton 3.3 a compiled kernel's launcher takes the constexprs too; before, only the rest.
            kernel.constexpr_values = tuple(planned.constexprs.values()) if _TRITON_VERSION >= (3, 3) else ()
            compiled[specialization] = kernel
    return kernel, direct == len(found)


def silu_dot_fwd_bwd_quant_fuse(x, grad_y, grad_input_q, grad_input_s, y_q_t, y_s_t, group_size=GROUP_SIZE):
    launch(x, grad_y, grad_input_q, grad_input_s, y_q_t, y_s_t, group_size)
    return grad_input_q, grad_input_s, y_q_t, y_s_t
