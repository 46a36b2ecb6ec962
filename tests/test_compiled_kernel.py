"""The kernel as the GPU runs it: compiled for sm_90 on this CPU machine (no GPU needed), by tools/sass_stats.py,
whose static ablation lists every composition of a rung and whose bad arguments are one line each."""
import re

import pytest
import triton

import harness
import solution
from fixtures.compiling_tools import run_tool
# Measured stack bytes of the 8-warp, 80-register kernel: 16 on Triton 3.0 and 3.1, 80 on 3.2, 88 on 3.3,
# 64 on 3.4, 0 on 3.5 and 3.6.
SPILLS_BEFORE = (3, 5)


def _sass_stats(*args):
    """(registers, stack bytes) of the kernel compiled by tools/sass_stats.py with these arguments."""
    out = run_tool("sass_stats.py", *args)
    assert out.returncode == 0, out.stderr
    return tuple(map(int, re.search(r"regs=(\d+) stack=(\d+)", out.stdout).groups()))


@pytest.fixture(scope="module")
def eight_warp_kernel(tmp_path_factory):
    """(registers, stack bytes, SASS) of the nvidia route's 8-warp kernel."""
    dump = tmp_path_factory.mktemp("sass") / "kernel.sass"
    regs, stack = _sass_stats("--dump", str(dump))
    return regs, stack, dump.read_text()


def test_kernel_drops_its_scratch_from_l2_and_packs_int8_conversions(eight_warp_kernel):
    regs, _, sass = eight_warp_kernel
    assert regs <= 80, regs  # 3 programs x 256 threads x 80 registers fill the 64K-register file
    assert "CCTL.E.RML2" in sass  # discard.global.L2 of the scratch slot
    assert "BAR.SYNC" in sass
    assert "F2IP.S8.F32.TRUNC" in sass  # int8 conversion packed two values at a time (cvt.rzi + cvt.pack)


@pytest.mark.xfail(harness.version_tuple(triton.__version__) < SPILLS_BEFORE, strict=True,
                   reason=f"Triton {triton.__version__} spills this kernel at 80 registers (see SPILLS_BEFORE)")
def test_kernel_fits_three_programs_per_sm_without_spilling(eight_warp_kernel):
    _, stack, _ = eight_warp_kernel
    assert stack == 0, stack  # a spill would go to memory


def test_sixteen_warp_settings_fit_two_programs_per_sm_without_spilling():
    regs, stack = _sass_stats("--settings", '{"num_warps": 16, "chunk": 32, "y_chunk": 64, "maxnreg": 64}')
    assert regs <= 64 and stack == 0, (regs, stack)  # 2 programs x 512 threads x 64 registers = 64K


def test_the_ablation_compiles_every_composition_of_the_rung():
    out = run_tool("sass_stats.py", "--ablation", "--route", "native_per_element")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    compositions = solution.route_compositions("native_per_element")
    assert len(lines) == len(compositions)
    assert lines[0].startswith("native_per_element IEEE none: regs=") and "(+0)" in lines[0]
    for line, composition in zip(lines[1:], compositions[1:]):
        assert line.startswith(f"native_per_element IEEE {', '.join(composition)}: regs=")
        assert re.search(r"regs=\d+ stack=\d+ static SASS=\d+ \([+-]\d+\)", line)
    # Each with the instructions a thread executes per element, its loops weighed by their trips (as the compile
    # matrix's rows give them).
    assert all(re.search(r"executed per element \d+\.\d ", line) for line in lines), lines


def test_bad_arguments_are_one_line_each():
    for args, words in ((["--route", "plain"], "invalid choice"),
                        (["--route", "generic_per_element", "--ieee", "division"], "its arithmetic is fixed"),
                        (["--route", "native", "--ieee", "sigmoid"], "not a composition of the native route"),
                        (["--ablation", "--ieee", "division"], "no --ieee, --settings or --dump"),
                        (["--settings", "{bad"], "expected a JSON object of"),
                        (["--settings", '{"warps": 8}'], "expected a JSON object of"),
                        (["--route", "native", "nvidia"], "one --route without --ablation")):
        out = run_tool("sass_stats.py", *args)
        assert out.returncode == 2 and words in out.stderr and "Traceback" not in out.stderr, (args, out.stderr)
