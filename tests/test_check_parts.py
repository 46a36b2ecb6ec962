"""check.py's parts in-process: the verdict policy, no device chosen at import, the launch watcher."""
import argparse
import os
import subprocess
import sys

import pytest
import torch
import triton
import triton.language as tl

import check
import harness


@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_the_verdict_policy(strict, device):
    everything_failed = {name: ["a problem"] for name in check.NAMED_CHECKS + check.STATIC_CHECKS}
    failed = set(check.failed_checks(everything_failed, strict, device))
    expected = set(everything_failed) - {"exact", "numerics"}
    expected |= {"numerics"} if strict else set()
    expected |= {"exact"} if strict and device == "cuda" else set()
    assert failed == expected
    assert check.failed_checks({name: [] for name in everything_failed}, strict, device) == []
    with pytest.raises(ValueError, match="unknown check"):
        check.counts("judge_typo", strict, device)


def test_the_docstring_lists_every_check_with_its_policy():
    docstring = " ".join(check.__doc__.split())
    for c in check.CHECKS:
        policy = "" if c.policy == check.ALWAYS else f" (fails only {c.policy})"
        assert " ".join(f"{c.name} {c.doc}{policy}".split()) in docstring


def test_a_report_of_no_runs_never_passes(capsys):
    row = {"shape": "128x128", "M": 128, "H": 128, "runs": 0, "compared": 0, "passed": True,
           "checks": {name: {"where": "", "problems": []} for name in check.NAMED_CHECKS}, **harness.no_totals()}
    args = argparse.Namespace(strict=False, seeds=0, families=["randn"], json=None, solution="solution.py")
    static = {name: [] for name in check.STATIC_CHECKS}
    assert check.report(args, {}, "cpu", "generic_per_element", static, [row], set()) == 1
    assert capsys.readouterr().out.splitlines()[-1] == "FAILED: nothing was checked (0 runs)"


def test_importing_check_chooses_no_device_and_imports_no_triton():
    code = "import os, sys, check; print('triton' in sys.modules, os.environ.get('TRITON_INTERPRET'))"
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=harness.ROOT, env=env,
                          timeout=120)
    assert proc.stdout.split() == ["False", "None"], proc.stdout + proc.stderr


@triton.jit
def _add_one(ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(ptr + offs, tl.load(ptr + offs) + 1.0)


def _launch_twice_and_watch():
    t = torch.zeros(16)
    with check.watch_compute() as watch:
        _add_one[(1,)](t, 16)
        _add_one[(1,)](t, 16)
    assert torch.equal(t, torch.full((16,), 2.0))
    return watch


def test_watcher_counts_interpreted_launches_and_restores_what_it_patched():
    before = {(cls, attr): cls.__dict__.get(attr) for cls, attr, _ in check._launch_entry_points()}
    watch = _launch_twice_and_watch()
    assert watch.launches == 2 and watch.ops == []  # the interpreter's own host copies are not the solution's
    assert {(cls, attr): cls.__dict__.get(attr) for cls, attr, _ in check._launch_entry_points()} == before


def test_watcher_works_where_interpreted_functions_have_no_run_method(monkeypatch):
    # Before Triton 3.6 InterpretedFunction has no run(); kernel[grid] returns a GridExecutor directly.
    # From 3.6 on, run() is taken away and __getitem__ made to work that way.
    from triton.runtime.interpreter import GridExecutor, InterpretedFunction
    if "run" in InterpretedFunction.__dict__:
        monkeypatch.delattr(InterpretedFunction, "run")
        monkeypatch.setattr(InterpretedFunction, "__getitem__",
                            lambda self, grid: GridExecutor(self.rewrite(), self.arg_names, grid))
    assert "run" not in InterpretedFunction.__dict__
    assert _launch_twice_and_watch().launches == 2


def test_watcher_sees_torch_compute():
    t = torch.zeros(16)
    with check.watch_compute() as watch:
        t.add_(1.0)
    assert watch.launches == 0 and watch.ops == ["aten::add_"]


def test_padded_view_is_a_row_strided_view_of_a_filled_buffer():
    view, buffer = check.padded_view((3, 4), torch.float32, "cpu", 2, -1.0)
    assert view.stride() == (6, 1) and view.shape == (3, 4) and view.data_ptr() == buffer.data_ptr()
    assert torch.equal(buffer, torch.full((3, 6), -1.0))
    view, buffer = check.padded_view((2, 3), torch.float32, "cpu", 1, "poison")
    assert view.stride() == (4, 1) and harness.unwritten((buffer,) * 4)["grad_input_s"] == 8
