"""No-math movers: the solution's data movement with trivial arithmetic, timed next to the same-bytes copy.

A mover reads x and grad_y and writes all four outputs in their real layouts, walking a tile the way
solution.py's kernel does (MoverSettings: the solution's launch settings, plus patterns it does not
take), with the same row and column max reductions, the same scale stores and the same discard of
the y slot. The arithmetic is a few multiplies in place of the sigmoid (its table's loads and gather
included) and the exact quantizer: the output is garbage, and only the time means something. A pattern's mover bounds the speed its exact
solution can reach; `% floor` is copy us over mover us. --ablations leave parts of the pattern out
(ABLATIONS), to price each part; the first row is the task's bytes moved as flat streams.
Usage: python tools/research/movers.py [--variants-file PATH] [--shapes ...] [--json PATH]   (GPU only)
"""
import argparse
import json
import re
import sys
from pathlib import Path
from typing import NamedTuple, Optional

import torch
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import harness  # noqa: E402
import solution  # noqa: E402
from measure import do_bench, same_bytes_copy_us  # noqa: E402


class MoverSettings(NamedTuple):
    """solution.LaunchSettings' fields, plus two patterns the solution does not take: groups of 128
    channels per program (2: 512-byte row pieces) and the slot laid out slice by slice
    (slot[slice][channel][token in slice], so that each slice's write is one run of bytes)."""
    num_warps: int
    chunk: int
    y_chunk: int
    maxnreg: Optional[int]
    groups: int = 1
    slot_by_slice: bool = False


@triton.jit
def _mover_kernel(x_ptr, grad_y_ptr, grad_q_ptr, grad_s_ptr, y_q_ptr, y_s_ptr, scratch_ptr, M, H,
                  GROUP: tl.constexpr, GROUPS: tl.constexpr, CHUNK: tl.constexpr, Y_CHUNK: tl.constexpr,
                  SLOT_BY_SLICE: tl.constexpr, Y_MODE: tl.constexpr, SCALES: tl.constexpr,
                  REDUCE: tl.constexpr, DISCARD: tl.constexpr, CUDA_ARCH: tl.constexpr):
    BLOCK_H: tl.constexpr = GROUPS * GROUP
    pid_h = tl.program_id(0)
    pid_m = tl.program_id(1)
    slot = scratch_ptr + (pid_m * (H // BLOCK_H) + pid_h) * (GROUP * BLOCK_H)
    groups = pid_h * GROUPS + tl.arange(0, GROUPS)
    cols = groups[:, None] * GROUP + tl.arange(0, GROUP)[None, :]
    slot_channel = (tl.arange(0, GROUPS)[:, None] * GROUP + tl.arange(0, GROUP)[None, :])[None, :, :]
    slice_token = tl.arange(0, CHUNK)[:, None, None]
    for c in range(GROUP // CHUNK):
        rows = pid_m * GROUP + c * CHUNK + tl.arange(0, CHUNK)
        x_offs = rows[:, None, None] * (2 * H) + cols[None, :, :]
        gate = tl.load(x_ptr + x_offs, eviction_policy="evict_first").to(tl.float32)
        up = tl.load(x_ptr + x_offs + H, eviction_policy="evict_first").to(tl.float32)
        gy = tl.load(grad_y_ptr + rows[:, None, None] * H + cols[None, :, :],
                     eviction_policy="evict_first").to(tl.float32)
        d_gate = gy * up
        d_up = gy * gate
        if REDUCE:
            s_gate = tl.max(tl.abs(d_gate), axis=2) * (1.0 / 127.0) + 1e-10
            s_up = tl.max(tl.abs(d_up), axis=2) * (1.0 / 127.0) + 1e-10
        else:
            s_gate = tl.full([CHUNK, GROUPS], 0.5, tl.float32)
            s_up = s_gate
        tl.store(grad_q_ptr + x_offs, (d_gate * (1.0 / s_gate)[:, :, None]).to(tl.int8))  # x's shape and strides
        tl.store(grad_q_ptr + x_offs + H, (d_up * (1.0 / s_up)[:, :, None]).to(tl.int8))
        if SCALES:
            s_offs = rows[:, None] * (2 * H // GROUP) + groups[None, :]
            solution.store_scales(grad_s_ptr + s_offs, s_gate, CUDA_ARCH)
            solution.store_scales(grad_s_ptr + s_offs + H // GROUP, s_up, CUDA_ARCH)
        y = (gate * up).to(tl.bfloat16)
        if Y_MODE == 1:
            if SLOT_BY_SLICE:
                y_offs = c * (CHUNK * BLOCK_H) + slot_channel * CHUNK + slice_token
            else:
                y_offs = slot_channel * GROUP + c * CHUNK + slice_token
            tl.store(slot + y_offs, y, eviction_policy="evict_last")
        if Y_MODE == 2:  # y_q_t straight from the slice, CHUNK-byte pieces (wrong values: no group scale)
            yq_offs = (pid_h * BLOCK_H + slot_channel) * M + pid_m * GROUP + c * CHUNK + slice_token
            tl.store(y_q_ptr + yq_offs, (y.to(tl.float32) * 8.0).to(tl.int8))
        if Y_MODE == 3:  # the same bytes of y_q_t in the same tile, untransposed: no layout change
            tl.static_assert(GROUPS == 1, "the untransposed y_q_t mode covers one group's tile")
            yq_offs = (pid_h * BLOCK_H + c * CHUNK + slice_token) * M + pid_m * GROUP + slot_channel
            tl.store(y_q_ptr + yq_offs, (y.to(tl.float32) * 8.0).to(tl.int8))
    if Y_MODE == 1:
        tl.debug_barrier()
        token = tl.arange(0, GROUP)
        for c in range(BLOCK_H // Y_CHUNK):
            h = c * Y_CHUNK + tl.arange(0, Y_CHUNK)
            if SLOT_BY_SLICE:
                y_offs = (token // CHUNK)[None, :] * (CHUNK * BLOCK_H) + h[:, None] * CHUNK + (token % CHUNK)[None, :]
            else:
                y_offs = h[:, None] * GROUP + token[None, :]
            y_t = tl.load(slot + y_offs).to(tl.float32)
            if REDUCE:
                s_y = tl.max(tl.abs(y_t), axis=1) * (1.0 / 127.0) + 1e-10
            else:
                s_y = tl.full([Y_CHUNK], 0.5, tl.float32)
            if SCALES:
                solution.store_scales(y_s_ptr + (pid_h * BLOCK_H + h) * (M // GROUP) + pid_m, s_y, CUDA_ARCH)
            tl.store(y_q_ptr + (pid_h * BLOCK_H + h)[:, None] * M + (pid_m * GROUP + token)[None, :],
                     (y_t * (1.0 / s_y)[:, None]).to(tl.int8))
        if DISCARD:
            tl.debug_barrier()
            solution.discard_from_l2(slot, GROUP * BLOCK_H * 2 // 128, CUDA_ARCH)


@triton.jit
def _stream_kernel(x_ptr, grad_y_ptr, grad_q_ptr, y_q_ptr, n_y, BLOCK: tl.constexpr):
    """The task's bytes as flat streams: x and grad_y read, grad_input_q and y_q_t written, all
    contiguous (x and grad_input_q two elements per y element)."""
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    a = tl.load(x_ptr + i, eviction_policy="evict_first")
    b = tl.load(x_ptr + n_y + i, eviction_policy="evict_first")
    g = tl.load(grad_y_ptr + i, eviction_policy="evict_first")
    tl.store(grad_q_ptr + i, (a.to(tl.float32) * 8.0).to(tl.int8))
    tl.store(grad_q_ptr + n_y + i, (b.to(tl.float32) * 8.0).to(tl.int8))
    tl.store(y_q_ptr + i, (g.to(tl.float32) * 8.0).to(tl.int8))


# Ablations of the pattern: which part of it costs what (Y_MODE 0: no y at all, 1: parked in the slot,
# 2: y_q_t stored from each slice, 3: the same bytes stored untransposed; SCALES: the four-byte scale
# stores; REDUCE: the group max reductions). Modes 0, 2 and 3 have no y groups: no y max, no y_s_t.
ABLATIONS = {
    "full": dict(Y_MODE=1, SCALES=True, REDUCE=True, DISCARD=True),
    "no discard": dict(Y_MODE=1, SCALES=True, REDUCE=True, DISCARD=False),
    "no scale stores": dict(Y_MODE=1, SCALES=False, REDUCE=True, DISCARD=True),
    "no scale stores, no reductions": dict(Y_MODE=1, SCALES=False, REDUCE=False, DISCARD=True),
    "y_q_t from each slice, no slot": dict(Y_MODE=2, SCALES=True, REDUCE=True, DISCARD=False),
    "y_q_t from each slice, no slot, no scales": dict(Y_MODE=2, SCALES=False, REDUCE=True, DISCARD=False),
    "y_q_t from each slice untransposed, no slot, no scales": dict(Y_MODE=3, SCALES=False, REDUCE=True, DISCARD=False),
    "grad_input only, with scales": dict(Y_MODE=0, SCALES=True, REDUCE=True, DISCARD=False),
    "grad_input only, no scales": dict(Y_MODE=0, SCALES=False, REDUCE=False, DISCARD=False),
}


def launch_mover(x, grad_y, outs, settings, scratch, cuda_arch, ablation="full"):
    """cuda_arch: the compute capability as the solution's CUDA_ARCH takes it (90 for sm_90)."""
    M, H = grad_y.shape
    grid = (H // (settings.groups * solution.GROUP_SIZE), M // solution.GROUP_SIZE)
    options = {"num_warps": settings.num_warps, "num_stages": 1}
    if settings.maxnreg is not None:
        options["maxnreg"] = settings.maxnreg
    return _mover_kernel[grid](x, grad_y, *outs, scratch, M, H, GROUP=solution.GROUP_SIZE,
                               GROUPS=settings.groups, CHUNK=settings.chunk, Y_CHUNK=settings.y_chunk,
                               SLOT_BY_SLICE=settings.slot_by_slice, **ABLATIONS[ablation], CUDA_ARCH=cuda_arch,
                               **options)


def launch_stream(x, grad_y, outs, block=4096):
    n_y = grad_y.numel()
    return _stream_kernel[(n_y // block,)](x, grad_y, outs[0], outs[2], n_y, BLOCK=block, num_warps=8)


def compiled_counts(ablation, settings=MoverSettings(8, 32, 64, 80), arch=90):
    """What the mover compiles to for cuda `arch` (no GPU needed): its stores, scale stores, group max
    reductions, slot discards and layout changes, counted in the TTIR and TTGIR. The tests read these to
    see that each ablation leaves out what its name says."""
    from triton.backends.compiler import GPUTarget
    import compile_matrix
    signature = {"x_ptr": "*bf16", "grad_y_ptr": "*bf16", "grad_q_ptr": "*i8", "grad_s_ptr": "*fp32",
                 "y_q_ptr": "*i8", "y_s_ptr": "*fp32", "scratch_ptr": "*bf16", "M": "i32", "H": "i32"}
    constexprs = dict(GROUP=solution.GROUP_SIZE, GROUPS=settings.groups, CHUNK=settings.chunk,
                      Y_CHUNK=settings.y_chunk, SLOT_BY_SLICE=settings.slot_by_slice, **ABLATIONS[ablation],
                      CUDA_ARCH=arch)
    launch = solution.KernelLaunch("mover", _mover_kernel, None, signature, constexprs,
                                   {"num_warps": settings.num_warps, "num_stages": 1})
    target = GPUTarget("cuda", arch, 32)
    kernel = triton.compile(compile_matrix.ast_source(launch, target), target=target, options=launch.options)
    ttir, ttgir = kernel.asm["ttir"], kernel.asm["ttgir"]
    return {"stores": ttir.count("tt.store"), "scale_stores": ttir.count("st.global.b32"),
            "reductions": ttir.count("\"tt.reduce\""), "discards": ttir.count("discard.global.L2"),
            # The TritonGPU dialect is spelled triton_gpu on Triton 3.0-3.2 and ttg on 3.6.
            "layout_changes": len(re.findall(r"\b(?:ttg|triton_gpu)\.convert_layout\b", ttgir))}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--variants-file", help="JSON list of MoverSettings field sets (default: the nvidia route's per shape)")
    parser.add_argument("--ablations", nargs="*", default=["full"], choices=list(ABLATIONS))
    parser.add_argument("--shapes", nargs="*", default=["benchmark"])
    parser.add_argument("--json")
    parser.add_argument("--compiled-counts", action="store_true",
                        help="print compiled_counts of every ablation as JSON and exit (CPU: compiles for sm_90)")
    args = parser.parse_args()
    if args.compiled_counts:
        print(json.dumps({name: compiled_counts(name) for name in ABLATIONS}))
        return
    properties = torch.cuda.get_device_properties(0)
    sm_count = properties.multi_processor_count
    cuda_arch = 10 * properties.major + properties.minor
    variants = ([MoverSettings(**v) for v in json.loads(Path(args.variants_file).read_text())]
                if args.variants_file else [None])
    rows = [{"kernel": "streams", "us": {}, "floor_pct": {}}]
    rows += [{"kernel": "tile mover", "variant": v._asdict() if v else "route default", "ablation": a,
              "us": {}, "floor_pct": {}} for v in variants for a in args.ablations]
    copy_us = {}
    for label, M, H in harness.expand_shape_args(args.shapes, ["benchmark"]):
        x, gy = harness.make_inputs(M, H, seed=0, device="cuda")
        outs = harness.new_outputs(M, H, "cuda")
        scratch = torch.empty(M * H, dtype=torch.bfloat16, device="cuda")
        copy_us[label] = same_bytes_copy_us(harness.min_bytes(M, H))
        for row in rows:
            if row["kernel"] == "streams":
                run = lambda: launch_stream(x, gy, outs)  # noqa: E731
            else:
                v = row["variant"]
                settings = (MoverSettings(*solution.launch_settings("nvidia", M, H, sm_count)) if v == "route default"
                            else MoverSettings(**v))
                if H % (settings.groups * solution.GROUP_SIZE):
                    continue
                run = lambda: launch_mover(x, gy, outs, settings, scratch, cuda_arch, row["ablation"])  # noqa: E731
            k = run()
            row.update(regs=k.n_regs, spills=k.n_spills)
            us = do_bench(run)
            row["us"][label] = round(us, 2)
            row["floor_pct"][label] = round(100 * copy_us[label] / us, 1)
        print(label, "copy", round(copy_us[label], 1), " ".join(str(r["us"].get(label, "-")) for r in rows), flush=True)
    print("\n% of the same-bytes copy per shape (copy us / mover us), movers as numbered below")
    print(f"{'shape':>12} {'copy us':>8} " + " ".join(f"{i:>6}" for i in range(len(rows))))
    for label in copy_us:
        print(f"{label:>12} {copy_us[label]:8.1f} " + " ".join(f"{r['floor_pct'].get(label, '-'):>6}" for r in rows))
    for i, r in enumerate(rows):
        print(f"{i:>2} {r['kernel']} {json.dumps(r.get('variant', ''))} {r.get('ablation', '')}: regs {r.get('regs')} "
              f"spills {r.get('spills')} min % floor {min(r['floor_pct'].values(), default=None)}")
    if args.json:
        Path(args.json).write_text(json.dumps({"env": harness.environment("cuda"), "copy_us": copy_us, "rows": rows},
                                              indent=2))


if __name__ == "__main__":
    main()
