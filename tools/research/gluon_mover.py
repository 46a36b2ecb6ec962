"""A no-math Gluon mover: the task's exact memory traffic with y held in shared memory, timed next to the
same-bytes copy (issue 19, step 1: "mover first").

Why: the tl kernel parks y (a 32 KB bf16 tile per program) in a global scratch slot and transposes it
through Triton's own layout conversions; its movers stop at 64-78% of a same-bytes copy (PERF_NOTES.md,
sixth round). This mover asks whether explicit shared memory (triton.experimental.gluon) moves the same
bytes at >= 90% of the copy on the 4096- and 8192-token shapes, or >= 85% on every shape, before any
math is ported.

One program per 128-channel x 128-token tile, program ids H first (solution.launch_plan's grid). Four
32-token slices: gate, up and grad_y rows are loaded 16 bytes a thread along channels; each slice's
grad_input_q rows (gate and up halves) and one fp32 scale per row and half are stored; the slice's y goes
into a shared-memory tile of the whole 128 x 128. Then the tile is read back channel-major, and y_q_t rows
(128 tokens of one channel: 8 lanes x 16 bytes = one 128-byte line) and one y_s_t scale per channel are
stored. The arithmetic is a stand-in (STAND_INS below), chosen so that every output byte has a torch
formula and a misplaced byte shows.

Variants (VARIANTS): the y tile in bf16 (32 KB) or quantized first to int8 (16 KB; its scale a running
max in registers), in a padded, a swizzled or an XOR-swizzled (SharedLinearLayout) shared layout.
Second round (Variant.pipeline, _gluon_mover_pipelined_kernel): the same traffic with more loads in
flight: the next slice's loads issued into registers before this slice's stores ("regs"), or the next
slices copied into a small shared ring with cp.async ("ringN") or TMA ("tmaN"); "persist" variants run
one wave of programs that walk several tiles each, the next tile's first slices loading during this
tile's y phase; "-c16" variants cut 16-token slices. Before the GPU run checks and times them in-process,
they run once in a child process (preflight), so that one that faults or hangs is reported, not fatal.

Usage:
    python tools/research/gluon_mover.py --compile-only [--json PATH]   # CPU: compile for sm_90, print resources
    python tools/research/gluon_mover.py [--json PATH] [--variants NAME ...] [--shapes ...] [--rounds N]   # GPU: check, time
"""
import argparse
import functools
import json
import math
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))  # sass_stats, when imported from elsewhere
sys.path.insert(0, str(Path(__file__).resolve().parent))  # movers, likewise
import harness  # noqa: E402

try:
    from triton.experimental import gluon
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.language.nvidia.ampere import async_copy
    from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier, tma
except ImportError as exc:  # Triton before Gluon: the tool says so rather than failing on import
    gluon = gl = None
    GLUON_MISSING = f"triton.experimental.gluon cannot be imported ({exc})"
else:
    GLUON_MISSING = None

GROUP = harness.GROUP_SIZE
# Where the GPU mode runs. tests/test_gluon_mover.py runs its bookkeeping (check, time, verdict, exit
# status) on the CPU with stand-in kernels by setting this to "cpu".
DEVICE = "cuda"
CHUNK = 32  # tokens per slice, as the tl kernel's
STOP_RULE = "mover >= 90% of the same-bytes copy on every 4096- and 8192-token shape, or >= 85% on every shape"
LARGE_TOKENS = (4096, 8192)
# What one H100 (sm_90) SM holds, for programs per SM (CUDA occupancy rules: 1 KB of shared memory
# reserved per block, registers allocated per warp in units of 256).
SM90_SHARED_PER_SM = 228 * 1024
SM90_SHARED_PER_BLOCK = 227 * 1024
SM90_RESERVED_SHARED_PER_BLOCK = 1024
SM90_REGISTERS_PER_SM = 65536
SM90_THREADS_PER_SM = 2048
SM90_BLOCKS_PER_SM = 32

# The stand-ins, written once in words: every kernel below and expected_outputs compute these. The int8
# values are 0..127, never harness.POISON_Q (-128), so harness.unwritten counts what a variant left out.
STAND_INS = {
    "grad_input_q": "gate half: (bits(f32(grad_y) * f32(up)) >> 16) & 0x7F; up half: the same of grad_y * gate",
    "grad_input_s": "max over the 128-channel row group of |that product| (fp32)",
    "y_q_t": "bits(bf16(f32(gate) * f32(up))) & 0x7F, transposed",
    "y_s_t": "max over the 128-token group of |bf16(f32(gate) * f32(up))| (fp32), transposed",
}


class Variant(NamedTuple):
    """y_dtype: "bf16" (y parked as bf16, 32 KB) or "int8" (quantized first, 16 KB). shared: "padded"
    (16 bytes of padding after every 16 token rows), "padded-rows" (padding after every row: the
    [128][132] int8 tile), "swizzled" (gl.SwizzledSharedLayout, the strongest one that 32-token slices can
    cut) or "xor" (an XOR swizzle as a gl.SharedLinearLayout).
    pipeline (second round, _gluon_mover_pipelined_kernel; bf16 y only): how the next slices' loads are
    kept in flight. "" loads a slice, stores it, loads the next (the first round's kernel); "regs" issues
    slice c+1's loads into registers before slice c's stores; "ringN" copies the next N slices of
    gate, up and grad_y with cp.async into a shared ring of N 24 KB slots; "tmaN" the same with TMA
    loads and one mbarrier per slot. persistent: a grid of programs_per_sm x SMs programs, each walking
    tiles first, first + grid, ...; the ring (or the register prefetch) runs on into the next tile, so
    that tile's first loads are in flight during this tile's y phase. chunk: tokens per slice (the
    pipelined kernel only; 16 halves a ring slot, to 12 KB)."""
    y_dtype: str
    shared: str
    num_warps: int
    pipeline: str = ""
    persistent: bool = False
    chunk: int = CHUNK

    @property
    def name(self):
        return (f"{self.y_dtype}-{self.shared}-w{self.num_warps}" + ("-persist" if self.persistent else "")
                + (f"-{self.pipeline}" if self.pipeline else "") + (f"-c{self.chunk}" if self.chunk != CHUNK else ""))

    @property
    def mode(self):
        """"" (first round), "regs", "cp_async" or "tma"."""
        return {"": "", "regs": "regs", "ring": "cp_async", "tma": "tma"}[self.pipeline.rstrip("0123456789")]

    @property
    def stages(self):
        """Slices in flight while one is processed: ring slots, or 1 for the register prefetch."""
        digits = self.pipeline.lstrip("abcdefghijklmnopqrstuvwxyz")
        return int(digits) if digits else (1 if self.pipeline == "regs" else 0)


# At 8 warps every layout; at 4 warps the two conflict-free ones. No register cap: maxnreg=40 (six
# programs of 8 warps per SM) spills 46-195 instructions' worth on Triton 3.6, so the registers the
# compiler picks (59-80 at 8 warps) leave three or four programs per SM.
VARIANTS = ([Variant(y, s, 8) for y, s in [("bf16", "padded"), ("bf16", "swizzled"), ("bf16", "xor"),
                                           ("int8", "padded"), ("int8", "padded-rows"), ("int8", "xor")]]
            + [Variant(y, s, 4) for y, s in [("bf16", "padded"), ("bf16", "xor"), ("int8", "padded"), ("int8", "xor")]])
# Second round (ncu on bf16-xor-w4, 8192x4096: DRAM 75% of peak, occupancy 30%, no loads in flight during
# the y phase): the best first-round layout, bf16 y XOR-swizzled, with more loads in flight. Chosen from
# --compile-only so that each keeps 2-5 programs per SM without spilling: the register prefetch of a
# 32-token slice at 4 warps takes 197 registers (2 programs per SM), hence 16-token slices there; a
# ring of three 32-token slots (72 KB) and the y tile leave 2 programs per SM, three 16-token slots 3.
VARIANTS += [Variant("bf16", "xor", w, pipeline, persistent, chunk) for w, pipeline, persistent, chunk in [
    (8, "regs", False, 32), (4, "regs", False, 16), (4, "regs", True, 16), (8, "regs", True, 16),
    (8, "ring2", False, 32), (8, "ring3", False, 16),
    (8, "ring2", True, 32), (8, "ring3", True, 32), (8, "ring3", True, 16), (8, "ring4", True, 16),
    (8, "tma3", True, 32), (8, "tma3", True, 16), (4, "tma3", True, 16)]]
# The [128][132] int8 tile faults on the GPU ("misaligned address",
# results/design/gluon-mover1-h100-2026-11-23-int8-padded-rows-w8-misaligned.txt): Triton 3.6 stores a
# thread's 8 int8 channels of a slice row with one st.shared.v2.b32 (8 bytes) although the 4 bytes of
# padding after every 128-byte row put odd rows at addresses = 4 (mod 8): the PTX has
# `st.shared.v2.b32 [%r+132]`. Selectable with --variants, left out of the default GPU run.
NOT_BY_DEFAULT = {"int8-padded-rows-w8"}
DEFAULT_VARIANTS = [v for v in VARIANTS if v.name not in NOT_BY_DEFAULT]


# ---------------------------------------------------------------- layouts

def slice_layout(num_warps, chunk=CHUNK):
    """A [chunk tokens, 128 channels] slice: 8 channels (16 bytes of bf16) a thread, 16 lanes along one
    row's 128 channels, the warps along tokens; a thread's rows two (one where 16 tokens and 8 warps
    leave one), repeated down the slice."""
    return gl.BlockedLayout([min(2, chunk // (2 * num_warps)), 8], [2, 16], [num_warps, 1], [1, 0])


def read_layout(num_warps):
    """The tile read back as [128 channels, 128 tokens]: 16 tokens a thread (one 16-byte int8 store of
    y_q_t), 8 lanes along one channel's 128 tokens (one 128-byte line), 4 lanes and the warps along
    channels; a thread's channels (4 at 8 warps, 8 at 4 warps) make its shared-memory reads wide."""
    return gl.BlockedLayout([GROUP // (4 * num_warps), 16], [4, 8], [num_warps, 1], [1, 0])


def xor_swizzle_bases(y_dtype):
    """offset_bases of a SharedLinearLayout for the [128 tokens, 128 channels] tile: offset bit i holds
    the logical (token, channel) bits listed. The read-back's lanes sit 16 tokens apart (token bits 4-6)
    and must hit different banks, so those bits land in the bank bits of the offset; channel bits 3-5 (or
    4-6 for int8) are XORed with them, so that a slice's row still writes whole 128-byte bank sweeps.
    Token bits 5 and 6 (the slice index) each map to one offset bit: Triton 3.6 refuses to cut a shared
    layout into slices along bits that are swizzled ("We don't support splitting along the swizzling
    pattern"), which is why a gl.SwizzledSharedLayout cannot do this."""
    if y_dtype == "bf16":  # elements of 2 bytes: bits 0-5 of the offset are the 128-byte bank sweep
        return [[0, 1], [0, 2], [0, 4], [16, 0], [32, 0], [64, 0], [0, 64],
                [1, 0], [2, 0], [4, 0], [8, 0], [16, 8], [32, 16], [64, 32]]
    return [[0, 1], [0, 2], [0, 4], [0, 8], [16, 0], [32, 0], [64, 0],
            [1, 0], [2, 0], [4, 0], [8, 0], [16, 16], [32, 32], [64, 64]]


def shared_layout(variant):
    """The y tile's shared layout, logical shape [128 tokens, 128 channels], channels contiguous."""
    elements_per_16_bytes = 8 if variant.y_dtype == "bf16" else 16
    if variant.shared == "padded":  # every 16 token rows shift by 16 bytes: the read-back's lanes spread
        return gl.PaddedSharedLayout.with_identity_for([[16 * GROUP, elements_per_16_bytes]], [GROUP, GROUP], [1, 0])
    if variant.shared == "padded-rows":  # 4 bytes after every row: [128][132] for int8
        element_bytes = 2 if variant.y_dtype == "bf16" else 1
        return gl.PaddedSharedLayout.with_identity_for([[GROUP, 4 // element_bytes]], [GROUP, GROUP], [1, 0])
    if variant.shared == "swizzled":  # the phase changes every 16 rows, period 32 rows: one slice
        return gl.SwizzledSharedLayout(elements_per_16_bytes, 16, 2, [1, 0])
    if variant.shared == "xor":
        return gl.SharedLinearLayout(xor_swizzle_bases(variant.y_dtype))
    raise ValueError(f"unknown shared layout {variant.shared!r}")


def ring_layout(variant):
    """The ring's slots, [STAGES, chunk tokens, 128 channels] of bf16, unswizzled: rows of 256 bytes one
    after the other. A warp's 16-byte copies (and later reads) in the slice layout cover whole rows, 256
    or 512 contiguous bytes: the fewest wavefronts. TMA writes what its descriptor's layout says, so the
    TMA ring is an NVMMASharedLayout without swizzle, the same bytes in the same places."""
    if variant.mode == "tma":
        return gl.NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=16, rank=2)
    return gl.SwizzledSharedLayout(1, 1, 1, [1, 0])  # a slot's layout: Gluon indexes the leading dimension


@functools.lru_cache(maxsize=None)
def kernel_constexprs(variant):
    """Built once per variant: the launch's host path then hashes the same layout objects each call."""
    constexprs = {"GROUP": GROUP, "CHUNK": variant.chunk,
                  "SLICE_LAYOUT": slice_layout(variant.num_warps, variant.chunk),
                  "READ_LAYOUT": read_layout(variant.num_warps), "Y_SHARED_LAYOUT": shared_layout(variant)}
    if not variant.pipeline:
        assert variant.chunk == CHUNK, variant
        return {**constexprs, "QUANTIZE_FIRST": variant.y_dtype == "int8"}
    if variant.y_dtype != "bf16":
        raise ValueError(f"{variant.name}: the pipelined kernel parks y as bf16 only")
    ring = variant.mode in ("cp_async", "tma")
    return {**constexprs, "MODE": variant.mode, "STAGES": variant.stages, "PERSISTENT": variant.persistent,
            "RING_LAYOUT": ring_layout(variant) if ring else None}


def kernel_options(variant):
    return {"num_warps": variant.num_warps, "num_stages": 1, "enable_fp_fusion": False}


# ---------------------------------------------------------------- the kernel

if gluon is not None:
    @gluon.jit
    def _gluon_mover_kernel(x_ptr, grad_y_ptr, grad_q_ptr, grad_s_ptr, y_q_ptr, y_s_ptr, M, H,
                            GROUP: gl.constexpr, CHUNK: gl.constexpr, QUANTIZE_FIRST: gl.constexpr,
                            SLICE_LAYOUT: gl.constexpr, READ_LAYOUT: gl.constexpr,
                            Y_SHARED_LAYOUT: gl.constexpr):
        pid_h = gl.program_id(0)
        pid_m = gl.program_id(1)
        tokens = gl.arange(0, CHUNK, layout=gl.SliceLayout(1, SLICE_LAYOUT))
        channels = gl.arange(0, GROUP, layout=gl.SliceLayout(0, SLICE_LAYOUT))
        cols = pid_h * GROUP + channels
        if QUANTIZE_FIRST:
            y_tile = gl.allocate_shared_memory(gl.int8, [GROUP, GROUP], Y_SHARED_LAYOUT)
            # The y scale needs the whole token group: a running max, reduced across warps once at the end.
            y_absmax = gl.zeros([CHUNK, GROUP], gl.float32, SLICE_LAYOUT)
        else:
            y_tile = gl.allocate_shared_memory(gl.bfloat16, [GROUP, GROUP], Y_SHARED_LAYOUT)
        for c in gl.static_range(GROUP // CHUNK):
            rows = pid_m * GROUP + c * CHUNK + tokens
            x_offs = rows[:, None] * (2 * H) + cols[None, :]
            gate = gl.load(x_ptr + x_offs, eviction_policy="evict_first").to(gl.float32)
            up = gl.load(x_ptr + x_offs + H, eviction_policy="evict_first").to(gl.float32)
            gy = gl.load(grad_y_ptr + rows[:, None] * H + cols[None, :],
                         eviction_policy="evict_first").to(gl.float32)
            d_gate = gy * up  # exact in fp32: two bf16 significands
            d_up = gy * gate
            gl.store(grad_q_ptr + x_offs, ((d_gate.to(gl.int32, bitcast=True) >> 16) & 0x7F).to(gl.int8))
            gl.store(grad_q_ptr + x_offs + H, ((d_up.to(gl.int32, bitcast=True) >> 16) & 0x7F).to(gl.int8))
            s_offs = rows * (2 * H // GROUP) + pid_h
            gl.store(grad_s_ptr + s_offs, gl.max(gl.abs(d_gate), axis=1))
            gl.store(grad_s_ptr + s_offs + H // GROUP, gl.max(gl.abs(d_up), axis=1))
            y = (gate * up).to(gl.bfloat16)
            if QUANTIZE_FIRST:
                y_absmax = gl.maximum(y_absmax, gl.abs(y.to(gl.float32)))
                y_tile.slice(c * CHUNK, CHUNK, dim=0).store((y.to(gl.int16, bitcast=True) & 0x7F).to(gl.int8))
            else:
                y_tile.slice(c * CHUNK, CHUNK, dim=0).store(y)
        gl.thread_barrier()
        y_t = y_tile.permute([1, 0]).load(READ_LAYOUT)  # [channel, token]
        t_channels = gl.arange(0, GROUP, layout=gl.SliceLayout(1, READ_LAYOUT))
        t_tokens = gl.arange(0, GROUP, layout=gl.SliceLayout(0, READ_LAYOUT))
        y_q_offs = (pid_h * GROUP + t_channels)[:, None] * M + (pid_m * GROUP + t_tokens)[None, :]
        if QUANTIZE_FIRST:
            gl.store(y_q_ptr + y_q_offs, y_t)
            gl.store(y_s_ptr + (pid_h * GROUP + channels) * (M // GROUP) + pid_m, gl.max(y_absmax, axis=0))
        else:
            gl.store(y_q_ptr + y_q_offs, (y_t.to(gl.int16, bitcast=True) & 0x7F).to(gl.int8))
            gl.store(y_s_ptr + (pid_h * GROUP + t_channels) * (M // GROUP) + pid_m,
                     gl.max(gl.abs(y_t.to(gl.float32)), axis=1))

    # ------------------------------------------------------------ second round: loads kept in flight

    @gluon.jit
    def _tile_coordinates(tile, n_h):
        """(pid_h, pid_m) of a tile number, H first (the first round's grid order)."""
        pid_m = tile // n_h
        return tile - pid_m * n_h, pid_m

    @gluon.jit
    def _slice_rows_cols(pid_h, pid_m, c, GROUP: gl.constexpr, CHUNK: gl.constexpr, SLICE_LAYOUT: gl.constexpr):
        tokens = gl.arange(0, CHUNK, layout=gl.SliceLayout(1, SLICE_LAYOUT))
        channels = gl.arange(0, GROUP, layout=gl.SliceLayout(0, SLICE_LAYOUT))
        return pid_m * GROUP + c * CHUNK + tokens, pid_h * GROUP + channels

    @gluon.jit
    def _load_slice(x_ptr, grad_y_ptr, tile, c, n_h, H, valid, GROUP: gl.constexpr, CHUNK: gl.constexpr,
                    SLICE_LAYOUT: gl.constexpr):
        """Slice c of a tile into registers (bf16), masked off where `valid` is false (no next tile)."""
        pid_h, pid_m = _tile_coordinates(tile, n_h)
        rows, cols = _slice_rows_cols(pid_h, pid_m, c, GROUP, CHUNK, SLICE_LAYOUT)
        x_offs = rows[:, None] * (2 * H) + cols[None, :]
        gy_offs = rows[:, None] * H + cols[None, :]
        mask = gl.full([CHUNK, GROUP], 1, gl.int1, SLICE_LAYOUT) & valid
        gate = gl.load(x_ptr + x_offs, mask=mask, eviction_policy="evict_first")
        up = gl.load(x_ptr + x_offs + H, mask=mask, eviction_policy="evict_first")
        gy = gl.load(grad_y_ptr + gy_offs, mask=mask, eviction_policy="evict_first")
        return gate, up, gy

    @gluon.jit
    def _issue_slice(x_src, grad_y_src, gate_slot, up_slot, gy_slot, bar, tile, c, n_h, H, valid,
                     MODE: gl.constexpr, GROUP: gl.constexpr, CHUNK: gl.constexpr, SLICE_LAYOUT: gl.constexpr):
        """Starts the copy of slice c of a tile into one ring slot: with cp.async every thread copies its
        own 16-byte pieces of the slice layout (the pieces it reads back), one commit group per slice; with
        TMA three [32, 128] boxes, counted on the slot's mbarrier. Predicated off where `valid` is false."""
        pid_h, pid_m = _tile_coordinates(tile, n_h)
        if MODE == "tma":
            mbarrier.expect(bar, 3 * CHUNK * GROUP * 2, pred=valid)
            row = pid_m * GROUP + c * CHUNK
            tma.async_copy_global_to_shared(x_src, [row, pid_h * GROUP], bar, gate_slot, pred=valid)
            tma.async_copy_global_to_shared(x_src, [row, H + pid_h * GROUP], bar, up_slot, pred=valid)
            tma.async_copy_global_to_shared(grad_y_src, [row, pid_h * GROUP], bar, gy_slot, pred=valid)
        else:
            rows, cols = _slice_rows_cols(pid_h, pid_m, c, GROUP, CHUNK, SLICE_LAYOUT)
            x_offs = rows[:, None] * (2 * H) + cols[None, :]
            mask = gl.full([CHUNK, GROUP], 1, gl.int1, SLICE_LAYOUT) & valid
            async_copy.async_copy_global_to_shared(gate_slot, x_src + x_offs, mask=mask,
                                                   eviction_policy="evict_first")
            async_copy.async_copy_global_to_shared(up_slot, x_src + x_offs + H, mask=mask,
                                                   eviction_policy="evict_first")
            async_copy.async_copy_global_to_shared(gy_slot, grad_y_src + rows[:, None] * H + cols[None, :],
                                                   mask=mask, eviction_policy="evict_first")
            async_copy.commit_group()

    @gluon.jit
    def _ring_slot(it, c, STAGES: gl.constexpr, SLICES: gl.constexpr):
        """(slot, mbarrier phase) of slice c of the program's it-th tile: its slices are numbered
        it * SLICES + c, slot k holds slices k, k + STAGES, ...; static in c when STAGES divides SLICES."""
        if SLICES % STAGES == 0:
            return c % STAGES, (it * (SLICES // STAGES) + c // STAGES) & 1
        else:
            s = it * SLICES + c
            return s % STAGES, (s // STAGES) & 1

    @gluon.jit
    def _gluon_mover_pipelined_kernel(x_src, grad_y_src, grad_q_ptr, grad_s_ptr, y_q_ptr, y_s_ptr, M, H,
                                      GROUP: gl.constexpr, CHUNK: gl.constexpr, SLICE_LAYOUT: gl.constexpr,
                                      READ_LAYOUT: gl.constexpr, Y_SHARED_LAYOUT: gl.constexpr,
                                      MODE: gl.constexpr, STAGES: gl.constexpr, PERSISTENT: gl.constexpr,
                                      RING_LAYOUT: gl.constexpr):
        """The first round's traffic and arithmetic (bf16 y), with loads kept in flight (Variant.pipeline).
        x_src and grad_y_src are pointers, or TMA descriptors of [CHUNK, 128] boxes when MODE is "tma".
        Tiles are walked first, first + grid, ...: one tile a program unless PERSISTENT."""
        SLICES: gl.constexpr = GROUP // CHUNK
        RING: gl.constexpr = MODE != "regs"
        n_h = H // GROUP
        num_tiles = n_h * (M // GROUP)
        first = gl.program_id(0)
        step = gl.num_programs(0)
        y_tile = gl.allocate_shared_memory(gl.bfloat16, [GROUP, GROUP], Y_SHARED_LAYOUT)
        if RING:
            gate_ring = gl.allocate_shared_memory(gl.bfloat16, [STAGES, CHUNK, GROUP], RING_LAYOUT)
            up_ring = gl.allocate_shared_memory(gl.bfloat16, [STAGES, CHUNK, GROUP], RING_LAYOUT)
            gy_ring = gl.allocate_shared_memory(gl.bfloat16, [STAGES, CHUNK, GROUP], RING_LAYOUT)
            bars = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
            if MODE == "tma":
                for k in gl.static_range(STAGES):
                    mbarrier.init(bars.index(k), count=1)
            for k in gl.static_range(STAGES):  # the ring's first fill: slices 0 .. STAGES-1 of the first tile
                _issue_slice(x_src, grad_y_src, gate_ring.index(k), up_ring.index(k), gy_ring.index(k),
                             bars.index(k), first, k, n_h, H, True, MODE, GROUP, CHUNK, SLICE_LAYOUT)
        elif PERSISTENT:
            gate_next, up_next, gy_next = _load_slice(x_src, grad_y_src, first, 0, n_h, H, True,
                                                      GROUP, CHUNK, SLICE_LAYOUT)
        it = 0
        for tile in range(first, num_tiles, step):
            pid_h, pid_m = _tile_coordinates(tile, n_h)
            next_tile = tile + step
            has_next = next_tile < num_tiles
            if not RING and not PERSISTENT:
                gate_next, up_next, gy_next = _load_slice(x_src, grad_y_src, tile, 0, n_h, H, True,
                                                          GROUP, CHUNK, SLICE_LAYOUT)
            for c in gl.static_range(SLICES):
                if RING:
                    slot, phase = _ring_slot(it, c, STAGES, SLICES)
                    if MODE == "tma":
                        mbarrier.wait(bars.index(slot), phase)
                    elif PERSISTENT:  # every slice commits one group, the last tile's with its copies masked off
                        async_copy.wait_group(STAGES - 1)
                    else:  # the groups committed after slice c's: those of slices c+1 .. SLICES-1 only
                        async_copy.wait_group(min(STAGES - 1, SLICES - 1 - c))
                    gate = gate_ring.index(slot).load(SLICE_LAYOUT).to(gl.float32)
                    up = up_ring.index(slot).load(SLICE_LAYOUT).to(gl.float32)
                    gy = gy_ring.index(slot).load(SLICE_LAYOUT).to(gl.float32)
                else:
                    gate = gate_next.to(gl.float32)
                    up = up_next.to(gl.float32)
                    gy = gy_next.to(gl.float32)
                    # The next slice's loads go before this slice's stores: the compiler keeps global
                    # stores and later loads in program order (they may alias).
                    if c + 1 < SLICES:
                        gate_next, up_next, gy_next = _load_slice(x_src, grad_y_src, tile, c + 1, n_h, H, True,
                                                                  GROUP, CHUNK, SLICE_LAYOUT)
                    elif PERSISTENT:
                        gate_next, up_next, gy_next = _load_slice(x_src, grad_y_src, next_tile, 0, n_h, H,
                                                                  has_next, GROUP, CHUNK, SLICE_LAYOUT)
                d_gate = gy * up  # exact in fp32: two bf16 significands
                d_up = gy * gate
                y = (gate * up).to(gl.bfloat16)
                if RING:
                    # The slot is refilled with the slice STAGES further on once its values are used. With
                    # cp.async every thread reads back only the pieces it copied itself (Triton's membar pass
                    # still puts a barrier after each wait and before each refill: 2 a slice in the PTX); with
                    # TMA one thread writes the whole slot, so every warp must be past its reads first (a
                    # proxy fence and a barrier; membar adds one before each TMA box and mbarrier operation).
                    if MODE == "tma":
                        fence_async_shared()
                        gl.thread_barrier()
                    if c + STAGES < SLICES:
                        _issue_slice(x_src, grad_y_src, gate_ring.index(slot), up_ring.index(slot),
                                     gy_ring.index(slot), bars.index(slot), tile, c + STAGES, n_h, H, True,
                                     MODE, GROUP, CHUNK, SLICE_LAYOUT)
                    elif PERSISTENT:
                        _issue_slice(x_src, grad_y_src, gate_ring.index(slot), up_ring.index(slot),
                                     gy_ring.index(slot), bars.index(slot), next_tile, c + STAGES - SLICES, n_h,
                                     H, has_next, MODE, GROUP, CHUNK, SLICE_LAYOUT)
                rows, cols = _slice_rows_cols(pid_h, pid_m, c, GROUP, CHUNK, SLICE_LAYOUT)
                x_offs = rows[:, None] * (2 * H) + cols[None, :]
                gl.store(grad_q_ptr + x_offs, ((d_gate.to(gl.int32, bitcast=True) >> 16) & 0x7F).to(gl.int8))
                gl.store(grad_q_ptr + x_offs + H, ((d_up.to(gl.int32, bitcast=True) >> 16) & 0x7F).to(gl.int8))
                s_offs = rows * (2 * H // GROUP) + pid_h
                gl.store(grad_s_ptr + s_offs, gl.max(gl.abs(d_gate), axis=1))
                gl.store(grad_s_ptr + s_offs + H // GROUP, gl.max(gl.abs(d_up), axis=1))
                y_tile.slice(c * CHUNK, CHUNK, dim=0).store(y)
            gl.thread_barrier()
            y_t = y_tile.permute([1, 0]).load(READ_LAYOUT)  # [channel, token]
            if PERSISTENT:
                gl.thread_barrier()  # every warp has read the tile before the next tile's slices overwrite it
            t_channels = gl.arange(0, GROUP, layout=gl.SliceLayout(1, READ_LAYOUT))
            t_tokens = gl.arange(0, GROUP, layout=gl.SliceLayout(0, READ_LAYOUT))
            y_q_offs = (pid_h * GROUP + t_channels)[:, None] * M + (pid_m * GROUP + t_tokens)[None, :]
            gl.store(y_q_ptr + y_q_offs, (y_t.to(gl.int16, bitcast=True) & 0x7F).to(gl.int8))
            gl.store(y_s_ptr + (pid_h * GROUP + t_channels) * (M // GROUP) + pid_m,
                     gl.max(gl.abs(y_t.to(gl.float32)), axis=1))
            it += 1
        if MODE == "cp_async":
            async_copy.wait_group(0)  # nothing left in flight when the program ends


KERNEL_SIGNATURE = {"x_ptr": "*bf16", "grad_y_ptr": "*bf16", "grad_q_ptr": "*i8", "grad_s_ptr": "*fp32",
                    "y_q_ptr": "*i8", "y_s_ptr": "*fp32", "M": "i32", "H": "i32"}


def tma_descriptors(x, grad_y, chunk):
    """Host-side TMA descriptors of x [M, 2H] and grad_y [M, H] for [chunk, 128] boxes (the TMA ring's slots)."""
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor
    layout = gl.NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=16, rank=2)
    return (TensorDescriptor.from_tensor(x, [chunk, GROUP], layout),
            TensorDescriptor.from_tensor(grad_y, [chunk, GROUP], layout))


def kernel_signature(variant):
    """The kernel's argument types by name: KERNEL_SIGNATURE for the first round's kernel; the pipelined
    kernel's inputs are x_src and grad_y_src, pointers or (TMA variants) descriptors."""
    if not variant.pipeline:
        return dict(KERNEL_SIGNATURE)
    if variant.mode == "tma":
        import torch
        from triton.runtime.jit import mangle_type
        x_desc, gy_desc = tma_descriptors(torch.empty(GROUP, 2 * GROUP, dtype=torch.bfloat16),
                                          torch.empty(GROUP, GROUP, dtype=torch.bfloat16), variant.chunk)
        sources = {"x_src": mangle_type(x_desc), "grad_y_src": mangle_type(gy_desc)}
    else:
        sources = {"x_src": KERNEL_SIGNATURE["x_ptr"], "grad_y_src": KERNEL_SIGNATURE["grad_y_ptr"]}
    return {**sources, **{k: v for k, v in KERNEL_SIGNATURE.items() if k not in ("x_ptr", "grad_y_ptr")}}


def kernel_function(variant):
    return _gluon_mover_pipelined_kernel if variant.pipeline else _gluon_mover_kernel


_SM_COUNT = {}
_PROGRAMS_PER_SM = {}


def persistent_grid(variant, kernel_args, num_tiles, device):
    """A persistent variant's grid: as many programs as one wave holds (programs_per_sm of the kernel as
    compiled, times the SM count), at most one a tile."""
    if device not in _SM_COUNT:
        import torch
        _SM_COUNT[device] = torch.cuda.get_device_properties(device).multi_processor_count
    if variant.name not in _PROGRAMS_PER_SM:
        compiled = _gluon_mover_pipelined_kernel.warmup(*kernel_args, grid=(1,), **kernel_constexprs(variant),
                                                        **kernel_options(variant))
        compiled._init_handles()  # a warmed-up kernel learns its registers (n_regs) only when loaded
        _PROGRAMS_PER_SM[variant.name] = programs_per_sm(compiled.metadata.shared, compiled.n_regs,
                                                         variant.num_warps)["programs"]
    return min(num_tiles, _PROGRAMS_PER_SM[variant.name] * _SM_COUNT[device])


def launch(variant, x, grad_y, outs):
    """Runs one variant; returns the launched CompiledKernel (n_regs, n_spills, metadata.shared)."""
    M, H = grad_y.shape
    for t in (x, grad_y, *outs):
        assert t.is_contiguous(), "the mover assumes contiguous tensors"
    if not variant.pipeline:
        return _gluon_mover_kernel[(H // GROUP, M // GROUP)](x, grad_y, *outs, M, H, **kernel_constexprs(variant),
                                                            **kernel_options(variant))
    args = (*(tma_descriptors(x, grad_y, variant.chunk) if variant.mode == "tma" else (x, grad_y)), *outs, M, H)
    num_tiles = (H // GROUP) * (M // GROUP)
    grid = persistent_grid(variant, args, num_tiles, x.device) if variant.persistent else num_tiles
    return _gluon_mover_pipelined_kernel[(grid,)](*args, **kernel_constexprs(variant), **kernel_options(variant))


def expected_outputs(x, grad_y):
    """The stand-ins (STAND_INS) in torch, on x's device: grad_input_q, grad_input_s, y_q_t, y_s_t."""
    import torch
    M, H = grad_y.shape
    gate, up, gy = x[:, :H].float(), x[:, H:].float(), grad_y.float()
    products = torch.cat([gy * up, gy * gate], dim=1)
    grad_q = ((products.view(torch.int32) >> 16) & 0x7F).to(torch.int8)
    grad_s = products.abs().view(M, 2 * H // GROUP, GROUP).amax(dim=2)
    y = (gate * up).to(torch.bfloat16)
    y_q_t = (y.view(torch.int16) & 0x7F).to(torch.int8).t().contiguous()
    y_s_t = y.float().abs().view(M // GROUP, GROUP, H).amax(dim=1).t().contiguous()
    return grad_q, grad_s, y_q_t, y_s_t


# ---------------------------------------------------------------- compiled without a GPU

def compile_for_sm90(variant):
    """The variant compiled for cuda sm_90 with every pointer 16-byte aligned and M, H divisible by 16
    (contiguous inputs), as compile_matrix.ast_source does for the tl kernels. No GPU needed."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource
    function = kernel_function(variant)
    # in the kernel's parameter order, as the JIT specializes a launch (the kernel's name follows it)
    constexprs = {name: kernel_constexprs(variant)[name] for name in function.arg_names
                  if name in kernel_constexprs(variant)}
    arguments = kernel_signature(variant)
    signature = {**arguments, **{name: "constexpr" for name in constexprs}}
    attrs = {(i,): [["tt.divisibility", 16]] for i, kind in enumerate(arguments.values())
             if not kind.startswith("tensordesc")}  # a descriptor carries its own shape and strides
    source = GluonASTSource(function, signature, constexprs, attrs)
    target = GPUTarget("cuda", 90, 32)
    return triton.compile(source, target=target, options=kernel_options(variant))


def designed_shared_bytes(variant):
    """The shared memory a variant is designed to take, before the compiler's padding and alignment: the
    y tile, the ring (three inputs x stages x chunk x 128 bf16) and the TMA ring's mbarriers."""
    y_tile = GROUP * GROUP * (2 if variant.y_dtype == "bf16" else 1)
    if variant.mode not in ("cp_async", "tma"):
        return y_tile
    ring = 3 * variant.stages * variant.chunk * GROUP * 2
    return y_tile + ring + (8 * variant.stages if variant.mode == "tma" else 0)


def programs_per_sm(shared_bytes, registers, num_warps):
    """What one H100 SM holds of a program, by each limit, and the least of them."""
    threads = 32 * num_warps
    by_shared = (min(SM90_SHARED_PER_SM // (shared_bytes + SM90_RESERVED_SHARED_PER_BLOCK), SM90_BLOCKS_PER_SM)
                 if shared_bytes <= SM90_SHARED_PER_BLOCK else 0)
    registers_per_warp = math.ceil(registers * 32 / 256) * 256
    by_registers = (SM90_REGISTERS_PER_SM // registers_per_warp) // num_warps
    by_threads = SM90_THREADS_PER_SM // threads
    return {"shared": by_shared, "registers": by_registers, "threads": by_threads,
            "programs": min(by_shared, by_registers, by_threads, SM90_BLOCKS_PER_SM)}


def shared_address(variant):
    """byte address in the y tile of logical (token, channel), as the variant's shared layout places it."""
    element_bytes = 2 if variant.y_dtype == "bf16" else 1
    layout = shared_layout(variant)
    if variant.shared in ("padded", "padded-rows"):
        pairs = layout.interval_padding_pairs

        def address(token, channel):
            flat = token * GROUP + channel
            return element_bytes * (flat + sum((flat // interval) * pad for interval, pad in pairs))
        return address
    if variant.shared == "swizzled":
        def address(token, channel):
            phase = (token // layout.per_phase) % layout.max_phase
            return element_bytes * (token * GROUP + ((channel // layout.vec) ^ phase) * layout.vec + channel % layout.vec)
        return address
    offsets = {}
    for offset in range(GROUP * GROUP):
        token = channel = 0
        for bit, (t, c) in enumerate(layout.offset_bases):
            if offset >> bit & 1:
                token, channel = token ^ t, channel ^ c
        offsets[token, channel] = offset
    return lambda token, channel: element_bytes * offsets[token, channel]


def _blocked_coordinates(layout, shape, warp, lane, element):
    """(row, column) of a thread's element in a 2-D BlockedLayout of order [1, 0]; element counts along
    columns first, over the repetitions too."""
    spt, tpw, wpc = layout.size_per_thread, layout.threads_per_warp, layout.warps_per_cta
    block = [spt[d] * tpw[d] * wpc[d] for d in range(2)]
    per_rep_row = spt[1] * (shape[1] // block[1])
    e_row, e_col = divmod(element, per_rep_row)
    rep_row, r = divmod(e_row, spt[0])
    rep_col, c = divmod(e_col, spt[1])
    lane_row, lane_col = divmod(lane, tpw[1])
    warp_row, warp_col = divmod(warp, wpc[1])
    return (rep_row * block[0] + warp_row * spt[0] * tpw[0] + lane_row * spt[0] + r,
            rep_col * block[1] + warp_col * spt[1] * tpw[1] + lane_col * spt[1] + c)


def modeled_wavefronts(variant):
    """Shared-memory wavefronts per warp access over the fewest possible, for the slices' writes and the
    transposed read-back, from the layouts alone (1.0: no bank conflicts). A vector is a thread's
    contiguous channels, at most 16 bytes: the widths the PTX shows for every variant but padded-rows,
    whose read-back Triton 3.6 splits into single bytes (ld.shared.b8), so its real cost is higher than
    modeled. Triton 3.6's own counter (gl.bank_conflicts) aborts on padded layouts, hence this model."""
    address = shared_address(variant)
    element_bytes = 2 if variant.y_dtype == "bf16" else 1
    result = {}
    for access, layout, shape in (("write", slice_layout(variant.num_warps, variant.chunk), [variant.chunk, GROUP]),
                                  ("read", read_layout(variant.num_warps), [GROUP, GROUP])):
        per_thread = shape[0] * shape[1] // (32 * variant.num_warps)
        if access == "write":  # a thread's channels run along its elements: vectors of size_per_thread[1]
            vector = layout.size_per_thread[1]
            instructions = [[e + v for v in range(vector)] for e in range(0, per_thread, vector)]
        else:  # [channel, token]: a thread's 4 channels of one token are one vector
            row_span = layout.size_per_thread[1] * (shape[1] // (layout.size_per_thread[1] * layout.threads_per_warp[1]))
            first = [e for e in range(per_thread) if (e // row_span) % layout.size_per_thread[0] == 0]
            instructions = [[e + v * row_span for v in range(layout.size_per_thread[0])] for e in first]
        width = len(instructions[0]) * element_bytes
        lanes_per_wavefront = min(32, max(1, 128 // width))
        total = ideal = 0
        for warp in range(variant.num_warps):
            for elements in instructions:
                lane_words = []
                for lane in range(32):
                    coords = [_blocked_coordinates(layout, shape, warp, lane, e) for e in elements]
                    if access == "read":
                        coords = [(token, channel) for channel, token in coords]
                    lane_words.append({address(t, c) // 4 for t, c in coords})
                for first_lane in range(0, 32, lanes_per_wavefront):
                    banks = {}
                    for words in lane_words[first_lane:first_lane + lanes_per_wavefront]:
                        for word in words:
                            banks.setdefault(word % 32, set()).add(word)
                    total += max(len(w) for w in banks.values())
                    ideal += 1
        result[access] = round(total / ideal, 2)
    return result


def compiled_resources(variant):
    """Registers, spills, shared memory and shared-memory access widths of the variant compiled for sm_90."""
    import sass_stats
    started = time.perf_counter()
    kernel = compile_for_sm90(variant)
    seconds = time.perf_counter() - started
    registers, stack, shared, sass = sass_stats.resources(kernel)
    spill_instructions = len(re.findall(r"\b(?:LDL|STL)\b", sass))
    ptx = kernel.asm["ptx"]
    shared_accesses = {}
    for m in re.finditer(r"\b(?:ld|st)\.shared(?:\.v\d)?\.b\d+", ptx):
        shared_accesses[m.group(0)] = shared_accesses.get(m.group(0), 0) + 1
    # global -> shared copies in the PTX: cp.async by width, TMA (cp.async.bulk.tensor) boxes
    async_copies = {}
    for m in re.finditer(r"\bcp\.async\.c[ag]\.shared\.global \[[^]]*\], \[[^]]*\], (\w+)", ptx):
        key = f"cp.async {int(m.group(1), 0)} B"
        async_copies[key] = async_copies.get(key, 0) + 1
    tma_copies = len(re.findall(r"\bcp\.async\.bulk\.tensor\.\dd\.shared", ptx))
    if tma_copies:
        async_copies["tma"] = tma_copies
    return {"variant": variant.name, **variant._asdict(), "compile_s": round(seconds, 2),
            "registers": registers, "stack_bytes": stack, "spill_instructions": spill_instructions,
            "shared_bytes": shared, "programs_per_sm": programs_per_sm(shared, registers, variant.num_warps),
            "barriers": len(re.findall(r"\bbar\.sync\b|\bbarrier\.sync\b", ptx)),
            "shared_accesses": shared_accesses, "async_copies": async_copies,
            "designed_shared_bytes": designed_shared_bytes(variant), "modeled_wavefronts": modeled_wavefronts(variant)}


def compile_only(variants, json_path):
    """--compile-only: every variant for sm_90 on the CPU; exit status 1 if one fails to compile or spills."""
    rows, failed = [], []
    for variant in variants:
        try:
            rows.append(compiled_resources(variant))
        except Exception as exc:
            failed.append({"variant": variant.name, "error": f"{type(exc).__name__}: {harness.one_line(str(exc), 600)}"})
    print(f"{'variant':30} {'regs':>4} {'stack':>5} {'spill ins':>9} {'smem B':>7} {'prog/SM (smem, regs, thr)':>26} "
          f"{'bar':>3}  wavefronts/ideal (write, read)  shared accesses")
    for r in rows:
        p = r["programs_per_sm"]
        w = r["modeled_wavefronts"]
        accesses = ", ".join(f"{k} x{n}" for k, n in [*sorted(r["shared_accesses"].items()),
                                                        *sorted(r["async_copies"].items())])
        print(f"{r['variant']:30} {r['registers']:>4} {r['stack_bytes']:>5} {r['spill_instructions']:>9} "
              f"{r['shared_bytes']:>7} {p['programs']:>8} ({p['shared']:>2}, {p['registers']:>2}, {p['threads']:>2})       "
              f"{r['barriers']:>3}  {w['write']:>5} {w['read']:>5}                    {accesses}")
    for f in failed:
        print(f"{f['variant']}: FAILED to compile: {f['error']}")
    spilled = [r["variant"] for r in rows if r["stack_bytes"] or r["spill_instructions"]]
    if spilled:
        print("spills:", ", ".join(spilled))
    if json_path:
        Path(json_path).write_text(json.dumps({"env": harness.environment("cpu"), "target": "cuda:90", "rows": rows,
                                               "failed": failed}, indent=2))
    return 1 if failed or spilled else 0


# ---------------------------------------------------------------- on the GPU

def check_variants(variants, shapes):
    """{variant name: why it failed}: each variant run once per shape on poisoned outputs and compared
    with expected_outputs, byte for byte (harness.differing_bytes), before anything is timed."""
    import torch
    failures = {}
    for label, M, H in shapes:
        x, grad_y = harness.make_inputs(M, H, 0, "randn", DEVICE)
        expected = expected_outputs(x, grad_y)
        for variant in variants:
            if variant.name in failures:
                continue
            outs = harness.new_outputs(M, H, DEVICE)
            try:
                launch(variant, x, grad_y, outs)
                if DEVICE == "cuda":
                    torch.cuda.synchronize()
            except Exception as exc:
                failures[variant.name] = f"{label}: {type(exc).__name__}: {harness.one_line(str(exc))}"
                continue
            wrong = {name: harness.differing_bytes(a, e) for name, a, e in zip(harness.OUTPUT_NAMES, outs, expected)}
            if any(wrong.values()):
                failures[variant.name] = f"{label}: differing bytes {wrong}, unwritten {harness.unwritten(outs)}"
        del x, grad_y, expected
    return failures


# The second round's kernels had never run on a GPU when they were written: one that faults poisons the
# process's CUDA context (every later launch fails, as the misaligned int8 tile did) and one that hangs
# (an mbarrier phase never completed) stops the run. So they run first in child processes, on the run's
# shapes, under a time limit.
PREFLIGHT_TIMEOUT_S = 180  # all of them in one child: about a minute on the H100 machine, compiling included
PREFLIGHT_ALONE_TIMEOUT_S = 60  # one alone, compiled already
PREFLIGHT_MARK = "PREFLIGHT "


def preflight_child(variants, shapes):
    """--preflight: check_variants in this (child) process; its failures on one line after PREFLIGHT_MARK.
    A child that dies before printing it faulted."""
    failures = check_variants(variants, shapes)
    print(PREFLIGHT_MARK + json.dumps(failures), flush=True)
    return 0


def _run_preflight_child(names, shapes, timeout_s):
    """(failures, None), or (None, why) where the child crashed or ran out of time."""
    command = [sys.executable, str(Path(__file__).resolve()), "--preflight", "--variants", *names,
               "--shapes", *[label for label, _, _ in shapes]]
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return None, f"no result after {timeout_s} s in a child process (a hang?)"
    marked = [line for line in proc.stdout.splitlines() if line.startswith(PREFLIGHT_MARK)]
    if not marked:
        return None, (f"its child process died (exit status {proc.returncode}): "
                      f"{harness.one_line(proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else '')}")
    return json.loads(marked[-1][len(PREFLIGHT_MARK):]), None


def preflight(variants, shapes):
    """{variant name: why} for the variants that fault, hang or raise when run, found in child processes
    so that this process's CUDA context stays usable: all of them in one child, and if that child dies,
    times out or sees an exception (which may be the fallout of another variant's fault), each alone.
    Wrong bytes are left to the main check. Nothing to do off the GPU (the tests' stand-in kernels)."""
    if not variants or DEVICE != "cuda":
        return {}
    failures, why = _run_preflight_child([v.name for v in variants], shapes, PREFLIGHT_TIMEOUT_S)
    if why is None and all("differing bytes" in f for f in failures.values()):
        return {}
    isolated = {}
    for variant in variants:
        failures, why = _run_preflight_child([variant.name], shapes, PREFLIGHT_ALONE_TIMEOUT_S)
        if why is not None:
            isolated[variant.name] = why
        elif variant.name in failures and "differing bytes" not in failures[variant.name]:
            isolated[variant.name] = f"run alone in a child process: {failures[variant.name]}"
    return isolated


def stop_rule_verdict(floor_pct, shapes):
    """(passes, why): STOP_RULE applied to one mover's % of copy per shape label."""
    large = [label for label, M, _ in shapes if M in LARGE_TOKENS]
    every = [label for label, _, _ in shapes]
    min_large = min(floor_pct[label] for label in large) if large else None
    min_every = min(floor_pct[label] for label in every)
    if large and min_large >= 90.0:
        return True, f">= 90% on the {len(large)} large shapes (min {min_large:.1f}%)"
    if min_every >= 85.0:
        return True, f">= 85% on every shape (min {min_every:.1f}%)"
    return False, f"min {min_large:.1f}% on the large shapes, {min_every:.1f}% over all" if large else \
        f"min {min_every:.1f}% over all"


def time_all(variants, shapes, rounds):
    """Median over `rounds` of cold-L2 do_bench microseconds per shape: the same-bytes copy, the tl
    mover's full walk (tools/research/movers.py at the nvidia route's settings) and each variant."""
    import statistics
    import torch
    import movers
    import solution
    from measure import do_bench, same_bytes_copy_us
    properties = torch.cuda.get_device_properties(0)
    cuda_arch = 10 * properties.major + properties.minor
    copy_us, us, kernels = {}, {}, {}
    for label, M, H in shapes:
        x, grad_y = harness.make_inputs(M, H, 0, "randn", DEVICE)
        outs = harness.new_outputs(M, H, DEVICE)
        scratch = torch.empty(M * H, dtype=torch.bfloat16, device=DEVICE)
        settings = movers.MoverSettings(*solution.launch_settings("nvidia", M, H, properties.multi_processor_count))
        runs = {"tl-mover": lambda: movers.launch_mover(x, grad_y, outs, settings, scratch, cuda_arch, "full")}
        for variant in variants:
            runs[variant.name] = lambda v=variant: launch(v, x, grad_y, outs)
        for name, run in runs.items():
            kernels[name] = run()
        samples = {name: [] for name in ["copy", *runs]}
        for _ in range(rounds):
            samples["copy"].append(same_bytes_copy_us(harness.min_bytes(M, H)))
            for name, run in runs.items():
                samples[name].append(do_bench(run))
        copy_us[label] = statistics.median(samples.pop("copy"))
        us[label] = {name: statistics.median(s) for name, s in samples.items()}
        print(f"{label:>12} copy {copy_us[label]:7.1f} us  " +
              " ".join(f"{name} {t:.1f}" for name, t in us[label].items()), flush=True)
        del x, grad_y, outs, scratch
    return copy_us, us, kernels


def gpu_main(variants, shapes, rounds, json_path):
    import torch
    if DEVICE == "cuda" and not torch.cuda.is_available():
        print("gluon_mover.py: no GPU here; --compile-only runs on the CPU", file=sys.stderr)
        return 2
    started = time.perf_counter()
    failures = preflight([v for v in variants if v.pipeline], shapes)
    if failures:
        print(f"preflight: {len(failures)} variant(s) fault, hang or raise in a child process; not run here "
              f"({time.perf_counter() - started:.0f} s)", flush=True)
    failures.update(check_variants([v for v in variants if v.name not in failures], shapes))
    for name, why in failures.items():
        print(f"FAILED {name}: {why} (not timed)")
    passing = [v for v in variants if v.name not in failures]
    print(f"bytes checked: {len(passing)}/{len(variants)} variants equal the stand-ins' torch formulas on "
          f"{len(shapes)} shapes ({time.perf_counter() - started:.0f} s)", flush=True)
    copy_us, us, kernels = time_all(passing, shapes, rounds)
    names = ["tl-mover"] + [v.name for v in passing]
    pct = {name: {label: 100.0 * copy_us[label] / us[label][name] for label in copy_us} for name in names}

    print(f"\n{measure_settings()}; % = copy us / mover us. Columns:")
    for i, name in enumerate(names):
        k = kernels[name]
        which = " (the last shape's launch: its settings vary by shape)" if name == "tl-mover" else ""
        print(f"  [{i}] {name}: regs {k.n_regs}, spills {k.n_spills}, shared {k.metadata.shared} B{which}")
    print(f"{'shape':>12} {'copy us':>8} " + " ".join(f"{f'[{i}] us':>9} {'%':>5}" for i in range(len(names))))
    for label in copy_us:
        print(f"{label:>12} {copy_us[label]:8.1f} " +
              " ".join(f"{us[label][name]:9.1f} {pct[name][label]:5.1f}" for name in names))
    print(f"\nstop rule: {STOP_RULE}")
    verdicts = {}
    for name in names:
        passes, why = stop_rule_verdict(pct[name], shapes)
        verdicts[name] = {"passes": passes, "why": why}
        print(f"  {name:24} {'PASSES' if passes else 'fails '}  {why}")
    winners = [n for n in names if n != "tl-mover" and verdicts[n]["passes"]]
    print("verdict:", f"GO, met by {', '.join(winners)}" if winners else
          "STOP, no Gluon variant meets the rule", f"({time.perf_counter() - started:.0f} s)")
    if json_path:
        Path(json_path).write_text(json.dumps({
            "env": harness.environment(DEVICE), "timing": measure_settings(record=True), "stop_rule": STOP_RULE,
            "stand_ins": STAND_INS, "failures": failures,
            "kernels": {n: {"regs": kernels[n].n_regs, "spills": kernels[n].n_spills,
                            "shared": kernels[n].metadata.shared} for n in names},
            "variants": {v.name: v._asdict() for v in variants},
            "copy_us": copy_us, "us": us, "floor_pct": pct, "verdicts": verdicts, "go": bool(winners)}, indent=2))
    return 1 if failures else 0


def measure_settings(record=False):
    import measure
    return measure.settings_record() if record else measure.settings_text()


def main():
    parser = harness.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--compile-only", action="store_true", help="compile every variant for sm_90 on the CPU "
                        "and print registers, spills, shared memory and programs per SM")
    parser.add_argument("--variants", nargs="*", choices=[v.name for v in VARIANTS],
                        help=f"default: all, but on the GPU all except {', '.join(sorted(NOT_BY_DEFAULT))} "
                        "(see NOT_BY_DEFAULT)")
    parser.add_argument("--shapes", nargs="*", type=harness.shape_group, default=["benchmark"])
    parser.add_argument("--rounds", type=harness.at_least_one("rounds"), default=1,
                        help="time each kernel this many times per shape, the median kept")
    parser.add_argument("--json", type=harness.json_destination)
    parser.add_argument("--preflight", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if GLUON_MISSING:
        print(f"gluon_mover.py: {GLUON_MISSING}", file=sys.stderr)
        return 2
    if args.variants:
        variants = [v for v in VARIANTS if v.name in args.variants]
    else:  # every variant compiles; one faults on the GPU (NOT_BY_DEFAULT)
        variants = VARIANTS if args.compile_only else DEFAULT_VARIANTS
    if args.compile_only:
        return compile_only(variants, args.json)
    if args.preflight:  # the child process of preflight()
        return preflight_child(variants, harness.expand_shape_args(args.shapes, ["benchmark"]))
    return gpu_main(variants, harness.expand_shape_args(args.shapes, ["benchmark"]), args.rounds, args.json)


if __name__ == "__main__":
    sys.exit(main())
