"""Failures past a compile that raises: a binary that does not load, a compiler that kills its
process, a machine where no child process can compile. Each costs a rung, never the run."""
import os
import subprocess
import sys
import textwrap
import time
import types
import warnings
from pathlib import Path

import pytest
from triton.runtime.errors import OutOfResources

import harness
import solution

ROOT = Path(__file__).resolve().parents[1]


def _fresh_device(monkeypatch):
    monkeypatch.delenv(solution.ROUTE_ENV, raising=False)
    monkeypatch.setattr(solution, "_devices", {})


class _DoesNotLoad:
    """A kernel that compiles and whose binary the loader refuses, as Triton 3.x's _init_handles refuses
    one that needs more shared memory than the device has (Iluvatar's also one with too many threads)."""

    def __init__(self, kernel):
        self.kernel, self.arg_names = kernel, kernel.arg_names

    def warmup(self, *args, **kwargs):
        return self  # the compiled kernel

    def _init_handles(self):
        raise OutOfResources(300000, 232448, "shared memory")

    def __getitem__(self, grid):
        return self.kernel[grid]


def test_a_binary_that_does_not_load_leaves_the_rung_with_a_warning(monkeypatch):
    _fresh_device(monkeypatch)
    monkeypatch.setattr(solution, "_silu_mul_quant_kernel", _DoesNotLoad(solution._silu_mul_quant_kernel))
    M, H = 128, 256
    x, gy = harness.make_inputs(M, H, seed=4, family="heavy")
    out = harness.new_outputs(M, H)
    with pytest.warns(RuntimeWarning) as warned:
        solution.silu_dot_fwd_bwd_quant_fuse(x, gy, *out)
    left = [str(w.message) for w in warned if "left the" in str(w.message)]
    assert len(left) == 1 and all("its main kernel does not load (OutOfResources: out of resource: shared memory, "
                                  "Required: 300000, Hardware limit: 232448" in why for why in left), left
    assert solution.route_for("cpu") == "plain"
    assert harness.compare(out, harness.run_reference(x, gy))["passed"]


def test_a_kernel_failure_inside_the_child_compile_leaves_the_rung(monkeypatch):
    """The ladder's side of a compiler that dies (the death itself is real in the next test)."""
    _fresh_device(monkeypatch)

    def dies(launch, args, device=None):
        if launch.name == "main":
            raise solution.KernelFailure("kills its compiler", "the compiling process died of signal 6 (SIGABRT)")
    monkeypatch.setattr(solution, "_compile", dies)
    with pytest.warns(RuntimeWarning, match="left the generic_per_element route on this interpreter device: its main kernel "
                                            r"kills its compiler \(the compiling process died of signal 6"):
        solution.silu_dot_fwd_bwd_quant_fuse(*harness.make_inputs(128, 128, seed=1), *harness.new_outputs(128, 128))
    assert solution.route_for("cpu") == "plain"


_CHILD_COMPILES = textwrap.dedent("""
    import sys, torch
    sys.path.insert(0, {root!r})
    import solution
    from triton.backends.compiler import GPUTarget
    target = GPUTarget("hip", "gfx942", 64)
    M = H = 128
    tensors = {{"*bf16": torch.bfloat16, "*i8": torch.int8, "*fp32": torch.float32}}
    for route in ("generic_per_element", "nvidia"):
        launch = solution.launch_plan("amd", M, H, route=route, arch=90)["main"]
        args = tuple(torch.zeros(M * H * 2, dtype=tensors[kind]) if kind in tensors else M
                     for name, kind in solution.KERNEL_ARGUMENTS if name in launch.signature)
        try:
            solution._compile_in_children([(launch, args)], target, 0, torch.zeros(128))  # with the canary
            print(route, "compiled", flush=True)
        except solution.KernelFailure as exc:
            print(route, exc.what, "|", exc.why, flush=True)
    launches = [(solution.launch_plan("amd", M, H, route=route, arch=90)["main"], args) for route in ("generic_per_element", "nvidia")]
    try:  # both at once: the one that died is named
        solution._compile_in_children(launches, target, 0, torch.zeros(128))
    except solution.KernelFailure as exc:
        print("together:", exc.launch is launches[1][0], exc.what, flush=True)
    print("parent alive", flush=True)
""")


def test_a_compiler_that_kills_its_process_kills_only_the_child():
    """A real crash, no mock: the nvidia route's inline PTX compiled for AMD makes LLVM abort ("couldn't
    allocate output register for constraint 'r'"). Compiled in a child, it costs that kernel (the canary, a
    trivial kernel compiled in a second child, lives), and the generic_per_element route's kernel compiles there as it
    would here. Not under the interpreter: a process of its own."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["TRITON_CACHE_DIR"] = str(ROOT / ".pytest_cache" / "triton-child-compile")
    result = subprocess.run([sys.executable, "-c", _CHILD_COMPILES.format(root=str(ROOT))], env=env,
                            capture_output=True, text=True, timeout=600)
    lines = result.stdout.splitlines()
    assert result.returncode == 0 and lines[-1] == "parent alive", (result.stdout, result.stderr[-2000:])
    assert lines[0] == "generic_per_element compiled", lines
    assert lines[1].startswith("nvidia kills its compiler | the compiling process "), lines
    assert lines[2] == "together: True kills its compiler", lines


def test_where_no_child_can_be_started_the_compile_runs_here_with_one_warning(monkeypatch):
    monkeypatch.setattr(solution, "_no_children", [])
    launch = solution.launch_plan("interpreter", 128, 128)["main"]

    def fork_fails():
        raise OSError("Resource temporarily unavailable")
    monkeypatch.setattr(os, "fork", fork_fails)
    with pytest.warns(RuntimeWarning, match=r"compiling in this process, as no child process can compile here "
                                            r"\(os.fork failed \(OSError: Resource temporarily unavailable\)\)"):
        solution._compile_in_children([(launch, ())], object(), 0)
    with warnings.catch_warnings(record=True) as again:
        warnings.simplefilter("always")
        solution._compile_in_children([(launch, ())], object(), 0)
    assert again == []  # one warning a process: children stay off
    monkeypatch.delattr(os, "fork")
    monkeypatch.setattr(solution, "_no_children", [])
    with pytest.warns(RuntimeWarning, match=r"\(this platform has no os.fork\)"):
        solution._compile_in_children([(launch, ())], object(), 0)
    monkeypatch.setattr(solution, "_no_children", [])
    with pytest.warns(RuntimeWarning, match=r"\(Triton's driver gives no target\)"):
        solution._compile_in_children([(launch, ())], None, 0)  # no target to compile for: no child either


def test_children_that_die_whatever_they_compile_are_turned_off_not_the_rung(monkeypatch):
    """Where a child dies compiling the canary too, the fault is the children's (a vendor runtime that does
    not survive a fork, say): no rung is left, and the process compiles alone from then on."""
    monkeypatch.setattr(solution, "_no_children", [])
    compiled = []

    def every_child_dies(jobs, target, index, meanwhile=None):
        compiled.extend(kernel for kernel, _, _, _ in jobs)
        return [("died", "the compiling process died of signal 11 (SIGSEGV)")] * len(jobs)
    monkeypatch.setattr(solution, "_in_children", every_child_dies)
    launch = solution.launch_plan("interpreter", 128, 128)["main"]
    with pytest.warns(RuntimeWarning, match=r"no child process can compile here \(a child dies compiling a trivial "
                                            r"kernel too \(the compiling process died of signal 11"):
        solution._compile_in_children([(launch, ())], object(), 0, object())
    assert compiled == [launch.kernel, solution._canary_kernel]
    solution._compile_in_children([(launch, ())], object(), 0, object())
    assert len(compiled) == 2  # children stay off


def test_a_child_builds_its_launcher_after_its_verdict_and_a_slow_build_keeps_it(monkeypatch, tmp_path):
    """A child tells its verdict, then builds its kernel's launcher (_launcher_builder) for the parent's load: a
    build that fails changes nothing, and one that runs past the deadline is cut off with the verdict kept."""
    class Compiles:
        def warmup(self, *args, **kwargs):
            return types.SimpleNamespace(src="src", metadata="metadata")

    def builder_that(behaves, mark):
        def build(src, metadata):
            mark.write_text(f"{src} {metadata}")  # in the child
            behaves()
        return lambda: build

    def fails():
        raise RuntimeError("no C compiler")
    for behaves, timeout, mark in ((fails, 30, tmp_path / "failed"), (lambda: time.sleep(60), 1, tmp_path / "slow")):
        monkeypatch.setattr(solution, "_launcher_builder", builder_that(behaves, mark))
        monkeypatch.setattr(solution, "CHILD_COMPILE_TIMEOUT_S", timeout)
        started = time.monotonic()
        assert solution._in_children([(Compiles(), (), (1,), {})], object(), 0) == [("compiled", "")]
        assert time.monotonic() - started < 20 and mark.read_text() == "src metadata"
