"""tools/research/phase_timeline.py times the kernel's phases in a copy of solution.py made by text edits. The edits
must still apply to the current solution.py, the copy must compile with each stamp where the nvidia route
runs it, and each tile's record must hold as many slice stamps as the launch has slices."""
import importlib.util
import json
import os
import subprocess
import sys

import triton
import triton.language as tl

import harness

TOOL = harness.ROOT / "tools" / "research" / "phase_timeline.py"


def test_the_instrumented_kernel_compiles_for_sm_90_with_every_stamp():
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}  # compiling, not interpreting
    proc = subprocess.run([sys.executable, str(TOOL), "--compiled-stamps"],
                          capture_output=True, text=True, cwd=harness.ROOT, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    # The start, the stamp in the slice loop and the end of the y phase; the SM id once.
    assert json.loads(proc.stdout) == {"timer_reads": 3, "sm_id_reads": 1}


FAKE_SM_ID = tl.constexpr(7)


@triton.jit
def _stamp_its_index(record, k):
    tl.store(record + k, k + 100)  # + 100: told apart from the zeros the record starts as


@triton.jit
def _fake_sm_id():
    return tl.full([], FAKE_SM_ID, tl.int32)


def test_each_tile_records_its_start_each_slice_the_y_phase_and_its_sm(monkeypatch):
    # Under the interpreter, with stand-ins for the PTX: a chunk of 64 tokens gives two slices.
    spec = importlib.util.spec_from_file_location("phase_timeline", TOOL)
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    timed = tool.load_instrumented()
    monkeypatch.setattr(timed, "_stamp", _stamp_its_index)
    monkeypatch.setattr(timed, "_sm_id", _fake_sm_id)
    M, H = 128, 256
    x, grad_y = harness.make_inputs(M, H, seed=0, device="cpu")
    timed.launch(x, grad_y, *harness.new_outputs(M, H, "cpu"),
                 settings=timed.LaunchSettings(num_warps=4, chunk=64, y_chunk=64, maxnreg=None))
    assert timed.STAMPS.tolist() == [[100, 101, 102, 103, FAKE_SM_ID.value]] * 2
