"""The compile matrix (check.py --targets): the solution compiles for NVIDIA and AMD targets on this CPU
machine, and a solution that puts inline PTX on the AMD route fails it."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import compile_matrix
from fixtures.broken_solutions import COMPILE
from test_check import make_broken

ROOT = Path(__file__).resolve().parents[1]


def run_targets(targets, tmp_path, solution=ROOT / "solution.py"):
    report = tmp_path / "matrix.json"
    # Compiling needs Triton without the interpreter that conftest.py turns on.
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    proc = subprocess.run([sys.executable, str(ROOT / "check.py"), "--targets", targets, "--solution", str(solution),
                           "--json", str(report)], capture_output=True, text=True, cwd=ROOT, env=env, timeout=900)
    return proc, (json.loads(report.read_text()) if report.exists() else None)


def test_every_kernel_compiles_for_cuda_90_and_hip_gfx942(tmp_path):
    proc, report = run_targets("cuda:90,hip:gfx942", tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    compiled = {(r["target"], r["route"], r["kernel"]) for r in report["rows"] if r["ok"]}
    ladders = {"cuda:90": ("nvidia", "nvidia_per_element", "native", "native_per_element", "generic",
                           "generic_per_element"),
               "hip:gfx942": ("native", "native_per_element", "generic", "generic_per_element")}
    mains = {(target, route, "_silu_dot_quant_kernel") for target, routes in ladders.items() for route in routes}
    probes = {(target, route, "_probe_kernel") for target in ladders for route in ("native", "native_per_element")}
    plain = {(target, "plain", kernel) for target in ladders for kernel in ("_plain_grad_kernel", "_plain_y_kernel")}
    # One table launch serves every table rung; its row names the first.
    tables = {("cuda:90", "nvidia", "_sigmoid_table_kernel"), ("hip:gfx942", "native", "_sigmoid_table_kernel")}
    assert compiled == mains | probes | plain | tables
    for row in report["rows"]:
        assert row["result"]["stores"] >= row["result"]["sites"] > 0, row


@pytest.mark.parametrize("name", sorted(COMPILE))
def test_broken_solution_fails_the_compile_matrix(name, tmp_path):
    edits, targets, kernel = COMPILE[name]
    proc, report = run_targets(targets, tmp_path, make_broken(edits, tmp_path))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    failed = [r for r in report["rows"] if not r["ok"]]
    assert failed and all(r["kernel"] in kernel for r in failed), report["rows"]
    assert "FAIL: " in proc.stdout and "FAILED" in proc.stdout


@pytest.mark.parametrize("text, message", [("cuda:abc", "compute capability"), ("hip:942", "gfx name"),
                                           ("rocm:gfx942", "backends: cuda, hip"), ("cuda90", "backend:arch"),
                                           (",", "no targets")])
def test_bad_targets_are_refused_with_the_expected_form(text, message):
    with pytest.raises(ValueError, match=message):
        compile_matrix.parse_targets(text)


def test_targets_parse_with_triton_amd_warp_sizes():
    assert compile_matrix.parse_targets("cuda:90,hip:gfx90a,hip:gfx942,hip:gfx1100") == [
        ("cuda", 90, 32), ("hip", "gfx90a", 64), ("hip", "gfx942", 64), ("hip", "gfx1100", 32)]


def test_an_npu_target_is_an_ascend_soc_with_the_warp_size_its_driver_reports():
    assert compile_matrix.parse_target("npu:Ascend910B3") == ("npu", "Ascend910B3", 0)
    with pytest.raises(ValueError, match="Ascend SoC"):
        compile_matrix.parse_target("npu:910B3")


def _process(returncode=0, stdout="", stderr=""):
    return subprocess.CompletedProcess([], returncode, stdout, stderr)


UB_OVERFLOW = """
///------------------[ERROR][Triton][BEG]------------------
[ConvertLinalgRToBinary] encounters error:
[NOTE] Ub overflow detected; automatically set enable-code-motion to false and retrying compilation.
loc("/tmp/tmp4lm03oqc/kernel.ttadapter.mlir":1:1): error: Failed to run BiShengHIR pipeline

loc("/tmp/tmp4lm03oqc/kernel.ttadapter.mlir":2:3): error: ub overflow, requires 7380992 bits while 1572864 bits available! (possible reason: tiling basic block is too large)
[ERROR] Failed to run BiShengIR pipeline
///------------------[ERROR][Triton][END]------------------
"""


def test_a_bishengir_ub_overflow_fails_the_compile_with_its_own_words():
    class MLIRCompilationError(Exception):
        pass
    line = compile_matrix.exception_line(MLIRCompilationError(UB_OVERFLOW))
    assert line.startswith("MLIRCompilationError: error: ub overflow, requires 7380992 bits while 1572864 bits")
    process = subprocess.CompletedProcess([], 1, "", "Traceback (most recent call last):\n  ...\n" + line + "\n")
    ok, detail, _ = compile_matrix.compile_verdict(process)
    assert not ok and "ub overflow, requires 7380992 bits" in detail


def test_a_frontend_error_names_its_cause_and_place():
    try:
        try:
            raise TypeError("unsupported operand type(s) for +: 'float' and 'NoneType'")
        except TypeError as cause:
            CompilationError = type("CompilationError", (Exception,), {})
            raise CompilationError("at 3:31:\ndef sigmoid(gate):\n    return 1.0 + None") from cause
    except Exception as exc:
        line = compile_matrix.exception_line(exc)
    assert line == "TypeError: unsupported operand type(s) for +: 'float' and 'NoneType' (in sigmoid, at 3:31)"


def _result(stores, sites=7):
    return "RESULT " + json.dumps({"stores": stores, "sites": sites, "asm": "amdgcn", "binary": True,
                                   "no_binary": None})


@pytest.mark.parametrize("process, reason", [
    (_process(stdout=_result(9)), None),
    (_process(stdout=_result(1)), "stores lost"),
    (_process(stdout=_result(9), stderr="error: could not allocate output register for constraint 'r'\n"),
     "stderr: error: could not allocate"),
    (_process(returncode=-6, stderr="LLVM ERROR: something\n"), "crashed (SIGABRT): LLVM ERROR: something"),
    (_process(returncode=1, stderr="Traceback (most recent call last):\nKeyError: 'ttir'\n"), "exit code 1: KeyError"),
])
def test_a_compile_fails_on_a_crash_an_error_message_or_lost_stores(process, reason):
    ok, detail, _ = compile_matrix.compile_verdict(process)
    assert ok is (reason is None), detail
    if reason:
        assert reason in detail
