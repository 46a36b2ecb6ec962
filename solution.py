"""Fused SiLU-dot forward + backward with int8 group quantization, in Triton.

For x = [gate | up] (M x 2H, bf16) and grad_y (M x H, bf16), everything in fp32:

    sig    = 1 / (1 + exp(-gate))
    silu   = gate * sig
    y      = silu * up
    d_up   = gy * silu
    d_gate = gy * up * sig * (1 + gate * (1 - sig))      (left to right)

grad_input = [d_gate | d_up] and y are rounded to bf16, then quantized with

    s = max(absmax / 127, 1e-10)        q = int8(trunc(clamp(v / s, -127, 127)))

grad_input over groups of 128 channels of one row, y over groups of 128 tokens
of one channel, stored transposed (y_q_t is H x M). NaN propagates as in the
reference: a group holding a NaN gets a NaN scale, and a NaN quotient becomes
int8 0, as PyTorch's cast gives on the GPU.

The contract is exactness: the same bytes as the reference. One bf16 ulp of a
group's absmax, over 127, exceeds the judge's scale tolerance, so the fp32 math
must round as PyTorch's kernels do: an accurate expf and IEEE division in the
sigmoid, no FMA contraction (enable_fp_fusion=False), the reference's operation
order, absmax * fp32(1/127) for the scale (PyTorch divides by a scalar through
its reciprocal), and v / s rounded as IEEE division (Markstein's correction of
v * (1/s), proven equal for every bf16 pair by tools/exhaustive_exactness.py).
The sigmoid is read from a table of its value for every bf16 gate magnitude in
[2**-25, 127.5] (both signs), filled once per device by _sigmoid_table_kernel.

Routes. Every backend runs the same kernel and the same math helpers; a route
picks only data movement and launch settings (see ROUTES):
  * nvidia:  inline PTX pieces where the arch has the instruction, the table
             gathered through shared memory, maxnreg;
  * amd:     no inline asm and no NVIDIA-only options, 64-wide wavefronts;
  * generic: core tl (and libdevice's exp, which exactness needs), 256 threads a
             program whatever the warp size.
Where Triton has no working tl.gather (before 3.4), the sigmoid is computed per element
instead of gathered from the table: the same function, the same values.
Set SILU_DOT_ROUTE=nvidia|amd|generic before the first call on a device to force one.

Under the Triton interpreter (TRITON_INTERPRET=1, CPU) the kernel takes
INTERPRET as a constexpr and substitutes, only there: tl.exp for libdevice's
exp (which does not exist there), an explicit round-to-nearest-even for the
fp32 -> bf16 cast (which truncates there), IEEE division for the quantizer
(tl.fma rounds twice there), and for the NaN-keeping group max an integer max of
the magnitudes' bits (a tl.reduce with a combine function is slow there). tests/test_interpreter_substitutions.py
proves these against PyTorch.

Tools reach this file only through its public names: ROUTES, route_for,
route_for_target, LaunchSettings, launch_settings, launch_plan, launch, and
the math helpers sigmoid, sigmoid_lookup, silu_dot_fwd_bwd, group_absmax,
group_scale and quantize. PERF_NOTES.md tells the design history.
"""
import contextlib
import os
import re
from typing import NamedTuple, Optional

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

GROUP_SIZE = 128
ROUTES = ("nvidia", "amd", "generic")
_INTERPRET = os.environ.get("TRITON_INTERPRET", "0") == "1"
# Sigmoid table: every bf16 gate magnitude from 2**-25 (bits 0x3300; below it sigmoid is 0.5) to 127.5
# (bits 0x42FF; beyond it sigmoid is 1, or 0 for negative gates), times two signs: 32 KB of fp32.
_LUT_LO = 0x3300
_LUT_N = 4096
_LUT_BLOCK = 1024


# ---------------------------------------------------------------- the math, shared by every route

@triton.jit
def _round_to_bf16(v, INTERPRET: tl.constexpr):
    """fp32 -> nearest-even bf16, returned as fp32."""
    if INTERPRET:
        bits = v.to(tl.uint32, bitcast=True)
        rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).to(tl.float32, bitcast=True)
        return tl.where(v != v, v, rounded)  # a NaN's payload could carry into the sign bit
    else:
        return v.to(tl.bfloat16).to(tl.float32)


@triton.jit
def _to_bf16(v, INTERPRET: tl.constexpr):
    """fp32 -> nearest-even bf16, as bf16."""
    if INTERPRET:
        return _round_to_bf16(v, INTERPRET).to(tl.bfloat16)
    else:
        return v.to(tl.bfloat16)


@triton.jit
def _exp(v, INTERPRET: tl.constexpr):
    if INTERPRET:
        return tl.exp(v)
    else:
        return libdevice.exp(v)


@triton.jit
def sigmoid(gate, INTERPRET: tl.constexpr):
    """1 / (1 + exp(-gate)) with an accurate exp and IEEE division, as torch.sigmoid."""
    return tl.math.div_rn(1.0, 1.0 + _exp(-gate, INTERPRET))


_TRITON_VERSION = tuple(int(part) for part in re.findall(r"\d+", triton.__version__)[:2])
# The table is gathered where tl.gather exists and compiles: Triton 3.3 has it, but the main kernel's
# gather does not finish compiling there (tools/triton_versions.py).
_SIGMOID_TABLE = hasattr(tl, "gather") and _TRITON_VERSION >= (3, 4)
if hasattr(tl, "gather"):
    @triton.jit
    def _gather(table, idx):
        return tl.gather(table, idx, 0)
else:
    # Triton hashes a kernel by walking the source of every function it calls, and resolves each
    # attribute it meets there, live branch or not: a mention of tl.gather alone fails where it is
    # missing. Never called there (_SIGMOID_TABLE is False).
    @triton.jit
    def _gather(table, idx):
        return table


@triton.jit
def sigmoid_lookup(gate, table_ptr, LUT_LO: tl.constexpr, LUT_N: tl.constexpr, N_ELEM: tl.constexpr,
                   INTERPRET: tl.constexpr, SIGMOID_TABLE: tl.constexpr):
    """sigmoid(gate) for bf16-valued fp32 gates.

    SIGMOID_TABLE: the table is loaded whole and gathered through shared memory (tl.gather, Triton
    3.4+). The magnitude's bits are clamped to the table's range with integer min/max, so +-inf read
    the ends (sigmoid 1 and 0, as torch gives) and NaN reads some entry (the gate itself then makes
    every output NaN). Otherwise each element's sigmoid is computed: the same function that filled
    the table, so the same value.
    """
    if SIGMOID_TABLE:
        bits = gate.to(tl.uint32, bitcast=True)
        magnitude = tl.minimum(tl.maximum((bits & 0x7FFFFFFF) >> 16, LUT_LO), LUT_LO + LUT_N - 1)
        idx = (2 * (magnitude - LUT_LO) + (bits >> 31)).to(tl.int32)
        table = tl.load(table_ptr + tl.arange(0, 2 * LUT_N))
        return tl.reshape(_gather(table, tl.reshape(idx, [N_ELEM])), gate.shape)
    else:
        return sigmoid(gate, INTERPRET)


@triton.jit
def silu_dot_fwd_bwd(gate, up, gy, sig, INTERPRET: tl.constexpr):
    """y, d_gate, d_up in the reference's operation order, each rounded to bf16: y as bf16 (it is only
    stored), d_gate and d_up held in fp32 (they are reduced and quantized)."""
    silu = gate * sig
    y = silu * up
    d_up = gy * silu
    d_gate = gy * up * sig * (1.0 + gate * (1.0 - sig))
    return (_to_bf16(y, INTERPRET), _round_to_bf16(d_gate, INTERPRET),
            _round_to_bf16(d_up, INTERPRET))


@triton.jit
def _max_keeping_nan(a, b):
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def group_absmax(v, axis: tl.constexpr, INTERPRET: tl.constexpr):
    """max |v| along axis, NaN if any element is NaN, as torch.amax (tl.max drops NaN on the GPU)."""
    if INTERPRET:
        # A tl.reduce with a combine function runs ~15x slower here, and tl.max drops NaN here too. With
        # the sign cleared, fp32 bit patterns order as integers, and NaN's lie above inf's.
        magnitude = v.to(tl.int32, bitcast=True) & 0x7FFFFFFF
        return tl.max(magnitude, axis=axis).to(tl.float32, bitcast=True)
    else:
        return tl.reduce(tl.abs(v), axis, _max_keeping_nan)


@triton.jit
def group_scale(absmax):
    """max(absmax / 127, 1e-10), keeping NaN as torch.clamp does (tl.maximum would drop it)."""
    scale = absmax * (1.0 / 127.0)
    return tl.where(scale < 1e-10, 1e-10, scale)


@triton.jit
def quantize(v, scale, inv_scale, INTERPRET: tl.constexpr, CUDA_ARCH: tl.constexpr):
    """int8(trunc(clamp(v / scale, +-127))) for |v| <= the group's absmax, v / scale rounded as IEEE division.

    No clamp: for |v| <= absmax, |v / scale| < 128 and the truncation alone lands in [-127, 127].
    On the GPU the division is Markstein's correction of v * (1/scale). A NaN or inf scale makes
    every quotient NaN or 0, and a NaN quotient converts to 0. tools/exhaustive_exactness.py shows
    all of this for every bf16 (v, absmax) pair.
    """
    if INTERPRET:
        q = tl.math.div_rn(v, scale)
    else:
        q0 = v * inv_scale
        rem = tl.fma(q0, -scale, v)  # not -q0: that would cost a subtraction per element
        q = tl.fma(rem, inv_scale, q0)
    return _truncate_to_int8(q, CUDA_ARCH)


# ---------------------------------------------------------------- NVIDIA-only pieces, each with its tl twin
# CUDA_ARCH is the compute capability on the nvidia route (90 for sm_90) and 0 elsewhere, the interpreter
# included: a piece runs only where its instruction exists, and its plain-tl twin everywhere else.

@triton.jit
def _truncate_to_int8(q, CUDA_ARCH: tl.constexpr):
    """int8(trunc(q)) for |q| < 128, NaN -> 0. From sm_72, four at a time: cvt.rzi to s32, then two
    cvt.pack into one register (the cast's own lowering converts to s16 and masks and permutes bytes)."""
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
def _store_scales(ptrs, scales, CUDA_ARCH: tl.constexpr):
    """tl.store(ptrs, scales), but on NVIDIA straight from the reduction's layout: the threads that
    share a reduced value all store it (same address, same value). tl.store would first move the
    values to one owner each through shared memory, at the cost of two or three barriers."""
    if CUDA_ARCH > 0:
        tl.inline_asm_elementwise("st.global.b32 [$1], $2;\n mov.u32 $0, 0;", "=r,l,r",
                                  [ptrs, scales.to(tl.uint32, bitcast=True)],
                                  dtype=tl.int32, is_pure=False, pack=1)
    else:
        tl.store(ptrs, scales)


@triton.jit
def _discard_from_l2(ptr, N_LINES: tl.constexpr, CUDA_ARCH: tl.constexpr):
    """From sm_80: drops N_LINES 128-byte lines from ptr on out of L2 without writing them back. Twin:
    nothing (it changes no output, only what the L2 writes back)."""
    if CUDA_ARCH >= 80:
        lines = ptr.to(tl.pointer_type(tl.int8)) + tl.arange(0, N_LINES) * 128
        tl.inline_asm_elementwise("discard.global.L2 [$1], 128;\n mov.u32 $0, 0;", "=r,l", [lines],
                                  dtype=tl.int32, is_pure=False, pack=1)


# ---------------------------------------------------------------- kernels

@triton.jit
def _sigmoid_table_kernel(table_ptr, LUT_LO: tl.constexpr, BLOCK: tl.constexpr, INTERPRET: tl.constexpr):
    """table[2 * i + sign] = sigmoid of the bf16 gate with that sign and magnitude bits LUT_LO + i."""
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    bits = (((i % 2) << 15) | (LUT_LO + i // 2)) << 16
    tl.store(table_ptr + i, sigmoid(bits.to(tl.float32, bitcast=True), INTERPRET))


@triton.jit
def _grad_rows_quant(x_ptr, grad_y_ptr, grad_q_ptr, grad_s_ptr, table_ptr, rows, cols, pid_h, H,
                     stride_x, stride_gy, stride_gq, stride_gs,
                     GROUP: tl.constexpr, LUT_LO: tl.constexpr, LUT_N: tl.constexpr, N_ELEM: tl.constexpr,
                     SIGMOID_TABLE: tl.constexpr, CUDA_ARCH: tl.constexpr, INTERPRET: tl.constexpr):
    """Loads rows x cols of gate, up and grad_y (read once, so first out of L2), writes their
    grad_input groups and scales, returns y (bf16)."""
    x_offs = rows[:, None] * stride_x + cols[None, :]
    gate = tl.load(x_ptr + x_offs, eviction_policy="evict_first").to(tl.float32)
    up = tl.load(x_ptr + x_offs + H, eviction_policy="evict_first").to(tl.float32)
    gy = tl.load(grad_y_ptr + rows[:, None] * stride_gy + cols[None, :],
                 eviction_policy="evict_first").to(tl.float32)
    sig = sigmoid_lookup(gate, table_ptr, LUT_LO, LUT_N, N_ELEM, INTERPRET, SIGMOID_TABLE)
    y, d_gate, d_up = silu_dot_fwd_bwd(gate, up, gy, sig, INTERPRET)
    # grad_input's groups are the 128 channels of one row, separately for the gate and up halves.
    s_gate = group_scale(group_absmax(d_gate, 1, INTERPRET))
    s_up = group_scale(group_absmax(d_up, 1, INTERPRET))
    q_gate = quantize(d_gate, s_gate[:, None], tl.math.div_rn(1.0, s_gate)[:, None], INTERPRET, CUDA_ARCH)
    q_up = quantize(d_up, s_up[:, None], tl.math.div_rn(1.0, s_up)[:, None], INTERPRET, CUDA_ARCH)
    q_offs = rows[:, None] * stride_gq + cols[None, :]
    tl.store(grad_q_ptr + q_offs, q_gate)
    tl.store(grad_q_ptr + q_offs + H, q_up)
    _store_scales(grad_s_ptr + rows * stride_gs + pid_h, s_gate, CUDA_ARCH)
    _store_scales(grad_s_ptr + rows * stride_gs + H // GROUP + pid_h, s_up, CUDA_ARCH)
    return y


# Scale rows are stored one float at a time, so their strides gain nothing from specialization, and
# not specializing them keeps the number of compiled variants down.
_UNSPECIALIZED_STRIDES = ("stride_gs", "stride_ys")


@triton.jit(do_not_specialize=_UNSPECIALIZED_STRIDES)
def _silu_dot_quant_kernel(
    x_ptr, grad_y_ptr, grad_q_ptr, grad_s_ptr, y_q_ptr, y_s_ptr, table_ptr, scratch_ptr,
    M, H, stride_x, stride_gy, stride_gq, stride_gs, stride_yq, stride_ys,
    GROUP: tl.constexpr, CHUNK: tl.constexpr, Y_CHUNK: tl.constexpr,
    LUT_LO: tl.constexpr, LUT_N: tl.constexpr,
    SIGMOID_TABLE: tl.constexpr, CUDA_ARCH: tl.constexpr, INTERPRET: tl.constexpr,
):
    """One program owns a GROUP-token x GROUP-channel tile, which closes both kinds of group: every
    input byte is read once and every output byte written once.

    It walks the tile in CHUNK-token slices; each slice closes its grad_input row groups at once and
    parks its y (bf16, transposed: slot[channel][token]) in the program's own scratch slot, which
    stays in L2 (holding y there instead of in registers is what lets three programs share an SM).
    Then it reads y back in Y_CHUNK-channel rows of y_q_t, already in store order, takes each token
    group's absmax, quantizes and stores, and drops the slot from L2 so it is never written back.
    Program ids run along H first, so the programs that run together read whole rows of x and
    grad_y (DRAM pages) rather than one 256-byte piece of many rows.
    """
    pid_h = tl.program_id(0)
    pid_m = tl.program_id(1)
    slot = scratch_ptr + (pid_m * (H // GROUP) + pid_h) * (GROUP * GROUP)
    local = tl.arange(0, GROUP)
    cols = pid_h * GROUP + local
    for c in range(GROUP // CHUNK):
        rows = pid_m * GROUP + c * CHUNK + tl.arange(0, CHUNK)
        y = _grad_rows_quant(x_ptr, grad_y_ptr, grad_q_ptr, grad_s_ptr, table_ptr, rows, cols, pid_h, H,
                             stride_x, stride_gy, stride_gq, stride_gs, GROUP, LUT_LO, LUT_N, CHUNK * GROUP,
                             SIGMOID_TABLE, CUDA_ARCH, INTERPRET)
        tl.store(slot + local[None, :] * GROUP + (c * CHUNK + tl.arange(0, CHUNK))[:, None],
                 y, eviction_policy="evict_last")
    tl.debug_barrier()  # every slice's y is in the slot before any thread reads it back

    # y's groups are the GROUP tokens of one channel; y_q_t is H x M.
    for c in range(GROUP // Y_CHUNK):
        h = c * Y_CHUNK + tl.arange(0, Y_CHUNK)
        # Through L1: this program wrote the slot (ordered by the barrier above), and most of its lines
        # are still in this SM's L1, so the read-back costs little L2 traffic.
        y_t = tl.load(slot + h[:, None] * GROUP + local[None, :]).to(tl.float32)
        s_y = group_scale(group_absmax(y_t, 1, INTERPRET))
        _store_scales(y_s_ptr + (pid_h * GROUP + h) * stride_ys + pid_m, s_y, CUDA_ARCH)
        tl.store(y_q_ptr + (pid_h * GROUP + h)[:, None] * stride_yq + (pid_m * GROUP + local)[None, :],
                 quantize(y_t, s_y[:, None], tl.math.div_rn(1.0, s_y)[:, None], INTERPRET, CUDA_ARCH))
    if CUDA_ARCH >= 80:
        tl.debug_barrier()  # every read of the slot is done
        _discard_from_l2(slot, GROUP * GROUP * 2 // 128, CUDA_ARCH)


# ---------------------------------------------------------------- routes and launch settings

class LaunchSettings(NamedTuple):
    """How the main kernel is launched: warps per program, tokens per slice, channels per y row, and
    the register cap (None: the option is not passed, as on every route but nvidia)."""
    num_warps: int
    chunk: int
    y_chunk: int
    maxnreg: Optional[int]


class KernelLaunch(NamedTuple):
    """One kernel launch of a route, as a compile matrix needs it: the @triton.jit function, its grid,
    the types of its runtime arguments, its constexpr values and its compile options."""
    kernel: object
    grid: tuple
    signature: dict
    constexprs: dict
    options: dict


def route_for_target(backend, arch, warp_size, device_name=None):
    """The route for a Triton target (triton.runtime.driver.active.get_current_target()).

    backend is the target's backend ("cuda", "hip", or a vendor's own name), arch its compute
    capability or gfx name. A "cuda" device whose name is not NVIDIA's (a vendor's CUDA-compatible
    fork) has no PTX: generic. Anything unknown takes the generic route: core tl, no vendor options.
    """
    if backend == "cuda" and isinstance(arch, int) and (device_name is None or _is_nvidia_name(device_name)):
        return "nvidia"
    if backend == "hip":
        return "amd"
    return "generic"


def _is_nvidia_name(name):
    """NVIDIA's device names: "NVIDIA H100 80GB HBM3", and on older drivers "Tesla V100-SXM2-16GB",
    "A100-SXM4-40GB", "GeForce RTX 3090", "Quadro RTX 8000", "TITAN V"."""
    upper = name.upper()
    return (any(word in upper for word in ("NVIDIA", "TESLA", "GEFORCE", "QUADRO", "TITAN"))
            or re.match(r"[AHLBT]\d{2,3}\b", upper) is not None)


def launch_settings(route, M, H, sm_count=None, warp_size=32):
    """The main kernel's settings for a route and shape, with no autotuning (it costs judge time).

    nvidia: 8 warps, 32-token slices, y in 64-channel rows and at most 80 registers a thread, so that
    three programs fit on an SM without spilling: the fastest on most shapes (PERF_NOTES.md). When the
    grid needs as many rounds of two programs per SM as of three (512 tiles on 132 SMs: 1.3 rounds of
    three, 1.9 of two), 16 warps at 64 registers instead: a round of those ends sooner.
    amd, generic: 256 threads a program, whatever the warp size, and no register cap.
    """
    if route == "nvidia":
        tiles = (M // GROUP_SIZE) * (H // GROUP_SIZE)
        if (sm_count and tiles > 3 * sm_count
                and triton.cdiv(tiles, 2 * sm_count) == triton.cdiv(tiles, 3 * sm_count)):
            return LaunchSettings(num_warps=16, chunk=32, y_chunk=64, maxnreg=64)
        return LaunchSettings(num_warps=8, chunk=32, y_chunk=64, maxnreg=80)
    if route in ("amd", "generic"):
        return LaunchSettings(num_warps=max(1, 256 // warp_size), chunk=32, y_chunk=64, maxnreg=None)
    raise ValueError(f"unknown route {route!r}; expected one of {ROUTES}")


def _route_constexprs(route, arch):
    """The constexprs by which routes differ: which PTX pieces run, and whether the sigmoid is gathered
    from the table (where tl.gather exists) or computed."""
    cuda_arch = arch if route == "nvidia" and not _INTERPRET and isinstance(arch, int) else 0
    return {"SIGMOID_TABLE": _SIGMOID_TABLE, "CUDA_ARCH": cuda_arch}


def launch_plan(route, M, H, arch=None, sm_count=None, warp_size=32, settings=None):
    """Every kernel a route launches for an (M, H) call, in order: the sigmoid table's (once per device)
    and the main kernel's. The launcher below launches exactly these."""
    settings = settings or launch_settings(route, M, H, sm_count, warp_size)
    common = {"enable_fp_fusion": False}
    table = KernelLaunch(
        _sigmoid_table_kernel, (2 * _LUT_N // _LUT_BLOCK, 1, 1), {"table_ptr": "*fp32"},
        {"LUT_LO": _LUT_LO, "BLOCK": _LUT_BLOCK, "INTERPRET": _INTERPRET},
        {"num_warps": max(1, 128 // warp_size), **common})
    options = {"num_warps": settings.num_warps, "num_stages": 1, **common}
    if settings.maxnreg is not None:
        options["maxnreg"] = settings.maxnreg
    main = KernelLaunch(
        _silu_dot_quant_kernel,
        # H first (see the kernel). _check_inputs keeps M // 128 within a grid's second dimension.
        (H // GROUP_SIZE, M // GROUP_SIZE, 1),
        {"x_ptr": "*bf16", "grad_y_ptr": "*bf16", "grad_q_ptr": "*i8", "grad_s_ptr": "*fp32", "y_q_ptr": "*i8",
         "y_s_ptr": "*fp32", "table_ptr": "*fp32", "scratch_ptr": "*bf16", "M": "i32", "H": "i32",
         "stride_x": "i32", "stride_gy": "i32", "stride_gq": "i32", "stride_gs": "i32", "stride_yq": "i32",
         "stride_ys": "i32"},
        {"GROUP": GROUP_SIZE, "CHUNK": settings.chunk, "Y_CHUNK": settings.y_chunk, "LUT_LO": _LUT_LO,
         "LUT_N": _LUT_N, **_route_constexprs(route, arch), "INTERPRET": _INTERPRET},
        options)
    return [table, main]


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
    """t's row stride, once t is checked as argument `name`: a ValueError says what was wrong otherwise.
    Rows may have any stride that keeps them apart; elements within a row must be adjacent, and the
    last element's offset must fit int32."""
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
    if row_stride < cols:
        raise ValueError(f"{name} must have a row stride of at least its {cols} columns, got strides {t.stride()}")
    if (rows - 1) * row_stride + cols > 2**31:
        raise ValueError(f"{name} spans more than 2**31 elements; this kernel indexes with int32")
    return row_stride


def _check_inputs(x, grad_y, grad_input_q, grad_input_s, y_q_t, y_s_t, group_size):
    """(M, H, the six row strides) for valid arguments; a ValueError that says what was wrong otherwise."""
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
    if M // GROUP_SIZE > 65535:
        raise ValueError(f"M must be at most {65535 * GROUP_SIZE} (M / {GROUP_SIZE} programs along a grid "
                         f"dimension of at most 65535), got M={M}")
    layout = _layouts.get((M, H))
    if layout is None:
        layout = _layouts[(M, H)] = tuple((name, shape, dtype)
                                          for name, (shape, dtype) in _expected_layout(M, H).items())
    device = x.device
    strides = []
    for (name, shape, dtype), t in zip(layout, (x, grad_y, grad_input_q, grad_input_s, y_q_t, y_s_t)):
        strides.append(_row_stride(name, t, shape, dtype, device))
    return M, H, tuple(strides)


_layouts = {}  # (M, H): ((name, shape, dtype), ...) from _expected_layout


# ---------------------------------------------------------------- devices and the launcher

def _target(x):
    """(backend, arch, warp size) of x's device, as Triton's active driver reports it."""
    if _INTERPRET:
        return ("interpreter", None, 32)
    try:
        with torch.cuda.device(x.device) if x.is_cuda else contextlib.nullcontext():
            target = triton.runtime.driver.active.get_current_target()
        return (target.backend, target.arch, target.warp_size)
    except Exception:  # a vendor fork without this API: nothing known, so the generic route
        return ("unknown", None, 32)


class _Device:
    """What a call needs to know about its device, set up on its first call there: the route (forced by
    SILU_DOT_ROUTE as it is then), the target's arch and warp size, the number of SMs (None where
    unknown), the sigmoid table, the launch settings of each shape seen, and whether Triton specializes
    pointers on their storage's size there."""

    def __init__(self, x):
        forced_route = os.environ.get("SILU_DOT_ROUTE")
        if forced_route and forced_route not in ROUTES:
            raise ValueError(f"SILU_DOT_ROUTE must be one of {ROUTES}, got {forced_route!r}")
        self.index = x.get_device()
        self.backend, self.arch, self.warp_size = _target(x)
        self.sm_count = name = None
        if x.is_cuda:
            properties = torch.cuda.get_device_properties(x.device)
            self.sm_count, name = properties.multi_processor_count, properties.name
        self.route = forced_route or route_for_target(self.backend, self.arch, self.warp_size, name)
        self.settings = {}
        self.specializes_on_storage_size = self.backend == "hip"  # AMD's 32-bit buffer offsets
        self.table = torch.empty(2 * _LUT_N, dtype=torch.float32, device=x.device)
        table_launch = launch_plan(self.route, GROUP_SIZE, GROUP_SIZE, self.arch, self.sm_count,
                                   self.warp_size)[0]
        table_launch.kernel[table_launch.grid](self.table, **table_launch.constexprs, **table_launch.options)
        if x.is_cuda:
            torch.cuda.synchronize(x.device)  # the table is filled before a call on any stream reads it


_devices = {}


def _device(x):
    device = _devices.get(x.get_device())
    if device is None:
        device = _devices[x.get_device()] = _Device(x)
    return device


def route_for(device):
    """The route the solution takes on a torch device (set up on first use, as a call would, so
    SILU_DOT_ROUTE must be set before)."""
    return _device(torch.empty(0, device=device)).route


# Compiled kernels by everything Triton specializes this kernel on: device, route and settings, every
# pointer's 16-byte alignment and the 16-divisibility of the strides it specializes on (M and H are
# multiples of 128). Later calls launch them directly, skipping Triton's per-call argument binding.
_compiled = {}


def _specialization(tensors, strides, storage_below_2gb):
    """What Triton specializes the main kernel on, per call: each pointer's 16-byte alignment, each
    specialized stride's divisibility by 16 (M and H are multiples of 128) and, on AMD, whether each
    tensor's storage is under 2 GiB (32-bit buffer offsets)."""
    aligned = 0
    for i, t in enumerate(tensors):
        aligned |= (t.data_ptr() % 16 == 0) << i
    divisible = 0
    for i in _SPECIALIZED_STRIDES:
        divisible |= (strides[i] % 16 == 0) << i
    if not storage_below_2gb:
        return aligned, divisible
    return aligned, divisible, tuple(t.untyped_storage().nbytes() < 2**31 for t in tensors)


# The strides Triton specializes on: those the kernel does not exclude with do_not_specialize.
_STRIDE_NAMES = ("stride_x", "stride_gy", "stride_gq", "stride_gs", "stride_yq", "stride_ys")
_SPECIALIZED_STRIDES = tuple(i for i, name in enumerate(_STRIDE_NAMES) if name not in _UNSPECIALIZED_STRIDES)


def launch(x, grad_y, grad_input_q, grad_input_s, y_q_t, y_s_t, group_size=GROUP_SIZE, settings=None):
    """Checks the arguments and launches the route's main kernel for them; returns the compiled kernel.
    settings (LaunchSettings) overrides the route's own, for design sweeps."""
    M, H, strides = _check_inputs(x, grad_y, grad_input_q, grad_input_s, y_q_t, y_s_t, group_size)
    device = _device(x)
    if x.is_cuda and device.index != torch.cuda.current_device():
        with torch.cuda.device(x.device):  # Triton launches on the current device and its stream
            return launch(x, grad_y, grad_input_q, grad_input_s, y_q_t, y_s_t, group_size, settings)
    if settings is None:
        settings = device.settings.get((M, H))
        if settings is None:
            settings = device.settings[(M, H)] = launch_settings(device.route, M, H, device.sm_count,
                                                                 device.warp_size)
    scratch = torch.empty(M * H, dtype=torch.bfloat16, device=x.device)  # one GROUP x GROUP slot a tile
    args = (x, grad_y, grad_input_q, grad_input_s, y_q_t, y_s_t, device.table, scratch)
    grid = (H // GROUP_SIZE, M // GROUP_SIZE, 1)
    key = (device, settings, _specialization(args, strides, device.specializes_on_storage_size))
    kernel = _compiled.get(key)
    if kernel is not None:
        try:
            kernel[grid](*args, M, H, *strides, *kernel.constexpr_values)
            return kernel
        except TypeError:  # a Triton whose compiled-kernel launcher takes other arguments: JIT launches
            _compiled[key] = None
    plan = launch_plan(device.route, M, H, device.arch, device.sm_count, device.warp_size, settings)[1]
    kernel = plan.kernel[plan.grid](*args, M, H, *strides, **plan.constexprs, **plan.options)
    if not _INTERPRET and key not in _compiled:
        # From Triton 3.3 a compiled kernel's launcher takes the constexprs too; before, only the rest.
        kernel.constexpr_values = tuple(plan.constexprs.values()) if _TRITON_VERSION >= (3, 3) else ()
        _compiled[key] = kernel
    return kernel


def silu_dot_fwd_bwd_quant_fuse(x, grad_y, grad_input_q, grad_input_s, y_q_t, y_s_t, group_size=128):
    launch(x, grad_y, grad_input_q, grad_input_s, y_q_t, y_s_t, group_size)
    return grad_input_q, grad_input_s, y_q_t, y_s_t
