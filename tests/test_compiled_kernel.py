"""The kernel as the GPU runs it: compiled for sm_90 on this CPU machine (no GPU needed)."""
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _sass_stats(*args):
    """(registers, stack bytes) of the kernel compiled by tools/sass_stats.py with these arguments."""
    # The interpreter replaces @triton.jit functions, so compile in a process without it.
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    out = subprocess.run([sys.executable, str(ROOT / "tools" / "sass_stats.py"), *args],
                         env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    return tuple(map(int, re.search(r"regs=(\d+) stack=(\d+)", out.stdout).groups()))


def test_kernel_fits_three_programs_per_sm_and_drops_its_scratch_from_l2(tmp_path):
    dump = tmp_path / "kernel.sass"
    regs, stack = _sass_stats("--dump", str(dump))
    # 3 programs x 256 threads x 80 registers fill the 64K-register file; a spill would go to memory.
    assert regs <= 80 and stack == 0, (regs, stack)
    sass = dump.read_text()
    assert "CCTL.E.RML2" in sass  # discard.global.L2 of the scratch slot
    assert "BAR.SYNC" in sass
    assert "F2IP.S8.F32.TRUNC" in sass  # int8 conversion packed two values at a time (cvt.rzi + cvt.pack)


def test_sixteen_warp_settings_fit_two_programs_per_sm_without_spilling():
    regs, stack = _sass_stats("--settings", '{"num_warps": 16, "chunk": 32, "y_chunk": 64, "maxnreg": 64}')
    assert regs <= 64 and stack == 0, (regs, stack)  # 2 programs x 512 threads x 64 registers = 64K
