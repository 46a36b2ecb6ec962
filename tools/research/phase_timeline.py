"""Where one program's time goes: a copy of solution.py that stamps %globaltimer after each phase.

The copy is made by text edits of solution.py (each must apply where it expects to, or this stops
and says which). A pointer to a record of stamps is threaded from the main kernel's arguments into
its tile function; each tile's record holds the time at its start, after each slice and after the
y phase, then its SM id. The number of slices, GROUP // CHUNK, comes from the launch that
launch_plan gives the shape, and sizes the record. Each call starts after a dirty-L2 clear, as
under do_bench.
Usage: python tools/research/phase_timeline.py [--shapes GROUP|MxH|ExTxH ...] [--calls N]   (GPU only)
       python tools/research/phase_timeline.py --compiled-stamps   (CPU: the stamps in the kernel compiled for sm_90)
"""
import argparse
import importlib.util
import json
import sys
import tempfile
from pathlib import Path
from typing import NamedTuple

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
import harness  # noqa: E402
import measure  # noqa: E402

# A tile's record: [start, end of slice 0, ..., end of slice SLICES - 1, end of the y phase, SM id].
SLOTS_BEYOND_SLICES = 3

STAMP_HELPERS = '''@triton.jit
def _stamp(record, k):
    tl.store(record + k, tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64,
                                                   is_pure=False, pack=1))


@triton.jit
def _sm_id():
    return tl.inline_asm_elementwise("mov.u32 $0, %smid;", "=r", [], dtype=tl.int32, is_pure=False, pack=1)


'''
SLICES_IN_KERNEL = "GROUP // CHUNK"
SLICES_IN_LAUNCHER = 'GROUP_SIZE // main_constexprs["CHUNK"]'


class Edit(NamedTuple):
    old: str
    new: str
    sites: int = 1  # how many times old must appear


EDITS = [
    Edit("# ---------------------------------------------------------------- kernels\n",
         STAMP_HELPERS + "# ---------------------------------------------------------------- kernels\n"),
    Edit('("scratch_ptr", "*bf16"),', '("scratch_ptr", "*bf16"), ("stamps_ptr", "*i64"),'),
    # The kernel's and the tile function's parameters, and the kernel's two calls of the tile function.
    Edit("y_s_ptr, table_ptr, scratch_ptr, M, H,\n", "y_s_ptr, table_ptr, scratch_ptr, stamps_ptr, M, H,\n"),
    Edit("table_ptr, scratch_ptr, pid_h,\n", "table_ptr, scratch_ptr, stamps_ptr, pid_h,\n"),
    Edit("table_ptr, scratch_ptr,\n", "table_ptr, scratch_ptr, stamps_ptr,\n", sites=2),
    Edit("    slot = scratch_ptr + slot_index * (GROUP * GROUP)\n",
         "    slot = scratch_ptr + slot_index * (GROUP * GROUP)\n"
         f"    record = stamps_ptr + (pid_m * (H // GROUP) + pid_h) * ({SLICES_IN_KERNEL} + {SLOTS_BEYOND_SLICES})\n"
         "    _stamp(record, 0)\n"),
    Edit("        _park_slice(slot, y, local, tokens)\n",
         "        _park_slice(slot, y, local, tokens)\n"
         "        _stamp(record, 1 + c)\n"),
    Edit("    _release_slot(slot, CUDA_ARCH)\n\n\n# The scratch slot's handoff",
         "    _release_slot(slot, CUDA_ARCH)\n"
         f"    _stamp(record, {SLICES_IN_KERNEL} + 1)\n"
         f"    tl.store(record + {SLICES_IN_KERNEL} + 2, _sm_id().to(tl.int64))\n\n\n# The scratch slot's handoff"),
    # The proofs would run the stamped kernels with arguments of their own, which have no stamps.
    Edit("    for proof in PROOFS:\n", "    for proof in ():  # phase_timeline.py: run unproven\n"),
    # Every call the long way: a ready call's launches take no stamps.
    Edit("    stream = None if device is None else _current_stream(device)\n",
         "    stream = None  # phase_timeline.py: no ready calls\n"),
    Edit("    args = (*tensors, device.table, scratch, M, H, *strides)\n",
         '    main_constexprs = device._plan(M, H, index_64, settings)["main"].constexprs\n'
         "    global STAMPS\n"
         "    STAMPS = torch.zeros(((M // GROUP_SIZE) * (H // GROUP_SIZE),\n"
         f"                          {SLICES_IN_LAUNCHER} + {SLOTS_BEYOND_SLICES}),\n"
         "                         dtype=torch.int64, device=x.device)\n"
         "    args = (x, grad_y, grad_input_q, grad_input_s, y_q_t, y_s_t, device.table, scratch, STAMPS, M, H,\n"
         "            *strides)\n"),
]


def instrumented_source(source):
    for edit in EDITS:
        found = source.count(edit.old)
        if found != edit.sites:
            raise SystemExit(f"phase_timeline.py: edit no longer applies to solution.py ({found} sites, "
                             f"{edit.sites} expected): {edit.old.strip()[:60]!r}")
        source = source.replace(edit.old, edit.new)
    return source


def load_instrumented():
    source = instrumented_source((ROOT / "solution.py").read_text())
    path = Path(tempfile.mkdtemp()) / "solution_timed.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("solution_timed", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def compiled_stamps(M=1024, H=2560, arch=90, sm_count=132):
    """The stamps in the instrumented main kernel as the nvidia route launches it for (M, H), compiled
    for cuda `arch` (no GPU needed): timer reads and SM id reads in its TTIR (the slice stamp is one
    read, in the slice loop)."""
    import triton
    from triton.backends.compiler import GPUTarget
    import compile_matrix
    timed = load_instrumented()
    launch = timed.launch_plan("nvidia", M, H, arch=arch, sm_count=sm_count)["main"]
    target = GPUTarget("cuda", arch, 32)
    kernel = triton.compile(compile_matrix.ast_source(launch, target), target=target, options=launch.options)
    ttir = kernel.asm["ttir"]
    return {"timer_reads": ttir.count("%globaltimer"), "sm_id_reads": ttir.count("%smid")}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shapes", nargs="+")
    parser.add_argument("--calls", type=int, default=5)
    parser.add_argument("--compiled-stamps", action="store_true",
                        help="print compiled_stamps() as JSON and exit (CPU: compiles for sm_90)")
    args = parser.parse_args()
    if args.compiled_stamps:
        print(json.dumps(compiled_stamps()))
        return
    timed = load_instrumented()
    flush = torch.empty(measure.L2_CLEAR_BYTES // 4, dtype=torch.int32, device="cuda")
    for label, M, H in harness.expand_shape_args(args.shapes, ["benchmark"]):
        x, gy = harness.make_inputs(M, H, seed=0, device="cuda")
        outs = harness.new_outputs(M, H, "cuda")
        timed.silu_dot_fwd_bwd_quant_fuse(x, gy, *outs)
        runs = []
        for _ in range(args.calls):
            flush.zero_()
            timed.silu_dot_fwd_bwd_quant_fuse(x, gy, *outs)
            torch.cuda.synchronize()
            runs.append(timed.STAMPS.cpu())
        slices = runs[0].shape[1] - SLOTS_BEYOND_SLICES
        y_end, sm_id = slices + 1, slices + 2
        stamps = sorted(runs, key=lambda d: int((d[:, y_end] - d[:, 0].min()).max()))[len(runs) // 2]
        t = (stamps[:, :y_end + 1] - stamps[:, 0].min()).double() / 1e3  # µs from the first program's start
        phases = [t[:, k + 1] - t[:, k] for k in range(y_end)]
        per_sm = int(torch.bincount(stamps[:, sm_id]).max())
        metadata = timed.launch(x, gy, *outs).metadata
        print(f"{label} ({M}x{H}, {stamps.shape[0]} programs, {metadata.num_warps} warps, up to {per_sm} per SM "
              f"over the call): kernel span {float(t[:, y_end].max()):.1f} us (median of {args.calls} calls)")
        names = [f"slice {c}" for c in range(slices)] + ["y"]
        print("  phase medians, us: " + ", ".join(f"{name} {float(p.median()):.2f}" for name, p in zip(names, phases))
              + f"; program {float((t[:, y_end] - t[:, 0]).median()):.2f}")


if __name__ == "__main__":
    main()
