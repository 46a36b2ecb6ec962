"""Where one program's time goes: a copy of solution.py that stamps %globaltimer after each phase.

The copy is made by text edits of solution.py (each must apply, or this stops and says which);
thread 0 of every program stores the time at its start, after each 32-token slice and after the y
phase, and its SM id. Each call starts after a dirty-L2 clear, as under do_bench.
Usage: python tools/phase_timeline.py [--shapes GROUP|MxH|ExTxH ...] [--calls N]   (GPU only)
"""
import argparse
import importlib.util
import sys
import tempfile
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import harness  # noqa: E402
import measure  # noqa: E402

STAMP = '''@triton.jit
def _stamp(dbg, k, dummy):
    t = tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l,r", [dummy], dtype=tl.int64,
                                  is_pure=False, pack=1)
    tl.store(dbg + k, t)


@triton.jit
def _discard_from_l2('''

EDITS = [
    ("@triton.jit\ndef _discard_from_l2(", STAMP),
    ("table_ptr, scratch_ptr,\n    M, H,", "table_ptr, scratch_ptr, dbg_ptr,\n    M, H,"),
    ('"table_ptr": "*fp32", "scratch_ptr": "*bf16",', '"table_ptr": "*fp32", "scratch_ptr": "*bf16", "dbg_ptr": "*i64",'),
    ("    cols = pid_h * GROUP + local\n",
     "    cols = pid_h * GROUP + local\n    dbg = dbg_ptr + (pid_m * (H // GROUP) + pid_h) * 8\n    _stamp(dbg, 0, pid_h)\n"),
    ('                 y, eviction_policy="evict_last")\n',
     '                 y, eviction_policy="evict_last")\n        _stamp(dbg, 1 + c, pid_h)\n'),
    ("        _discard_from_l2(slot, GROUP * GROUP * 2 // 128, CUDA_ARCH)\n",
     "        _discard_from_l2(slot, GROUP * GROUP * 2 // 128, CUDA_ARCH)\n    _stamp(dbg, 5, pid_h)\n"
     "    tl.store(dbg + 6, tl.inline_asm_elementwise(\"mov.u32 $0, %smid;\", \"=r,r\", [pid_h], dtype=tl.int32,\n"
     "                                                is_pure=False, pack=1).to(tl.int64))\n"),
    ("    args = (x, grad_y, grad_input_q, grad_input_s, y_q_t, y_s_t, device.table, scratch)\n",
     "    global STAMPS\n"
     "    STAMPS = torch.zeros((M // GROUP_SIZE) * (H // GROUP_SIZE) * 8, dtype=torch.int64, device=x.device)\n"
     "    args = (x, grad_y, grad_input_q, grad_input_s, y_q_t, y_s_t, device.table, scratch, STAMPS)\n"),
]


def instrumented_source(source):
    for old, new in EDITS:
        if source.count(old) != 1:
            raise SystemExit(f"phase_timeline.py: edit no longer applies to solution.py: {old.strip()[:60]!r}")
        source = source.replace(old, new)
    return source


def load_instrumented():
    source = instrumented_source((ROOT / "solution.py").read_text())
    path = Path(tempfile.mkdtemp()) / "solution_timed.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("solution_timed", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shapes", nargs="+")
    parser.add_argument("--calls", type=int, default=5)
    args = parser.parse_args()
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
            runs.append(timed.STAMPS.view(-1, 8).cpu())
        stamps = sorted(runs, key=lambda d: int((d[:, 5] - d[:, 0].min()).max()))[len(runs) // 2]
        t = (stamps[:, :6] - stamps[:, 0].min()).double() / 1e3  # µs from the first program's start
        phases = [t[:, k + 1] - t[:, k] for k in range(5)]
        per_sm = int(torch.bincount(stamps[:, 6]).max())
        settings = timed.launch(x, gy, *outs).metadata
        print(f"{label} ({M}x{H}, {stamps.shape[0]} programs, {settings.num_warps} warps, up to {per_sm} per SM "
              f"over the call): kernel span {float(t[:, 5].max()):.1f} us (median of {args.calls} calls)")
        print("  phase medians, us: " + ", ".join(
            f"{name} {float(p.median()):.2f}" for name, p in zip(("slice 0", "slice 1", "slice 2", "slice 3", "y"), phases))
            + f"; program {float((t[:, 5] - t[:, 0]).median()):.2f}")


if __name__ == "__main__":
    main()
