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
            solution._compile_in_children([(launch, args)], target, 0)
            print(route, "compiled", flush=True)
        except solution.KernelFailure as exc:
            print(route, exc.what, "|", exc.why, flush=True)
    launches = [(solution.launch_plan("amd", M, H, route=route, arch=90)["main"], args) for route in ("generic_per_element", "nvidia")]
    try:  # both at once: the one that died is named
        solution._compile_in_children(launches, target, 0)
    except solution.KernelFailure as exc:
        print("together:", exc.launch is launches[1][0], exc.what, flush=True)
    print("parent alive", flush=True)
""")


def test_a_compiler_that_kills_its_process_kills_only_the_child():
    """A real crash, no mock: the nvidia route's inline PTX compiled for AMD makes LLVM abort ("couldn't
    allocate output register for constraint 'r'"). Compiled in a child, it kills the child, and a fresh
    interpreter's compile too: it costs that kernel, and the generic_per_element route's kernel compiles there
    as it would here. Not under the interpreter: a process of its own."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["TRITON_CACHE_DIR"] = str(ROOT / ".pytest_cache" / "triton-child-compile")
    result = subprocess.run([sys.executable, "-c", _CHILD_COMPILES.format(root=str(ROOT))], env=env,
                            capture_output=True, text=True, timeout=600)
    lines = result.stdout.splitlines()
    assert result.returncode == 0 and lines[-1] == "parent alive", (result.stdout, result.stderr[-2000:])
    assert lines[0] == "generic_per_element compiled", lines
    assert lines[1].startswith("nvidia kills its compiler | the compiling process "), lines
    assert lines[1].endswith("; in a fresh interpreter too"), lines
    assert lines[2] == "together: True kills its compiler", lines


# A process whose forked children die compiling, whatever they compile, and whose fresh interpreters do not: each
# child, at the fork, gets an audit hook that kills it with SIGSEGV as its compile opens Triton's cache.
_SICK_FOR_CHILDREN = textwrap.dedent("""
    import os, signal, sys, warnings, torch
    sys.path.insert(0, {root!r})
    import solution
    from triton.backends.compiler import GPUTarget
    cache = os.environ["TRITON_CACHE_DIR"]
    def dies_on_the_cache(event, args):
        if event == "open" and args and cache in str(args[0]):
            os.kill(os.getpid(), signal.SIGSEGV)
    os.register_at_fork(after_in_child=lambda: sys.addaudithook(dies_on_the_cache))
    target = GPUTarget("hip", "gfx942", 64)
    M = H = 128
    tensors = {{"*bf16": torch.bfloat16, "*i8": torch.int8, "*fp32": torch.float32}}
    launch = solution.launch_plan("amd", M, H, route="generic_per_element", arch=90)["main"]
    args = tuple(torch.zeros(M * H * 2, dtype=tensors[kind]) if kind in tensors else M
                 for name, kind in solution.KERNEL_ARGUMENTS if name in launch.signature)
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        solution._compile_in_children([(launch, args)], target, 0)
    print("kept |", " | ".join(str(w.message) for w in warned), flush=True)
    print("children off:", bool(solution._no_children), flush=True)
    import triton
    triton.runtime.driver.set_active(solution._ChildDriver(target, 0))  # no device here: the compile alone
    launch.kernel.warmup(*args, grid=launch.grid, **launch.constexprs, **launch.options)
    print("compiled here", flush=True)
""")


def test_a_child_that_dies_for_the_process_s_sake_keeps_the_rung(tmp_path):
    """Children die (SIGSEGV) in this process whatever they compile, and a fresh interpreter compiles the same
    kernel: the death is not the kernel's. No KernelFailure, one warning, children off, the kernel compiled here."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["TRITON_CACHE_DIR"] = str(tmp_path / "triton-cache")
    result = subprocess.run([sys.executable, "-c", _SICK_FOR_CHILDREN.format(root=str(ROOT))], env=env,
                            capture_output=True, text=True, timeout=600)
    lines = result.stdout.splitlines()
    assert result.returncode == 0 and lines[-1] == "compiled here", (result.stdout, result.stderr[-2000:])
    assert lines[0] == ("kept | silu_dot_fwd_bwd_quant_fuse: compiling in this process, as no child process can "
                        "compile here (a child died compiling the main kernel (the compiling process died of signal "
                        "11 (SIGSEGV)), which a fresh interpreter compiles: the death was this process's): a "
                        "compiler that aborts would end the run"), lines
    assert lines[1] == "children off: True", lines


class _Garbage:
    """An object in a reference cycle, left for the collector, whose finalizer kills any process but the one that
    made it: what Triton 3.0 and 3.1 leave behind (an MLIR context whose destructor joins its thread pool's
    threads, which a forked child does not have)."""

    def __init__(self):
        self.maker, self.cycle = os.getpid(), self

    def __del__(self):
        if os.getpid() != self.maker:
            os._exit(70)  # dies: an exit before the child tells its verdict (a signal would print a fault's trace)


class _CollectsFirst:
    def warmup(self, *args, **kwargs):
        import gc
        gc.collect()
        return None


def test_a_child_never_collects_what_the_parent_left_for_the_collector(monkeypatch):
    """Seen dying without the freeze (the first half): the stand-in is real; with it, the child compiles."""
    import gc
    for frozen, expected in ((False, "died"), (True, "compiled")):
        with monkeypatch.context() as patched:
            patched.setattr(solution, "_launcher_builder", lambda: None)
            if not frozen:
                patched.delattr(gc, "freeze")
            gc.disable()  # the garbage stays uncollected here until the fork
            try:
                _Garbage()
                [(verdict, detail)] = solution._in_children([(_CollectsFirst(), (), (1,), {})], object(), 0)
            finally:
                gc.enable()
                gc.collect()  # here its finalizer does nothing
        assert verdict == expected, (frozen, verdict, detail)


class _NeverEnds:
    def warmup(self, *args, **kwargs):
        time.sleep(3600)


def test_a_child_that_never_ends_holds_the_first_call_for_the_deadline_only_and_keeps_the_rung(monkeypatch):
    assert solution.CHILD_COMPILE_TIMEOUT_S <= 30 and solution.FRESH_COMPILE_TIMEOUT_S <= 30
    monkeypatch.setattr(solution, "_no_children", [])
    monkeypatch.setattr(solution, "CHILD_COMPILE_TIMEOUT_S", 2)
    launch = solution.launch_plan("interpreter", 128, 128)["main"]
    launch = launch._replace(kernel=_NeverEnds())
    started = time.monotonic()
    with pytest.warns(RuntimeWarning, match=r"compiling in this process, as no child process can compile here "
                                            r"\(its compile in a child process took over 2 s\)"):
        solution._compile_in_children([(launch, ())], object(), 0)
    assert time.monotonic() - started < 10 and solution._no_children


def test_a_fresh_interpreter_that_cannot_tell_blames_the_kernel_in_its_words(monkeypatch, tmp_path):
    """Children die; the fresh interpreter that would tell whether the kernel is to blame hangs (cut off at its
    deadline) or never begins its compile: the death counts against the kernel, and says why."""
    monkeypatch.setattr(solution, "_no_children", [])
    forked_or_fresh = solution._in_children  # the fresh interpreters stay real
    monkeypatch.setattr(solution, "_in_children", lambda jobs, *a, fresh=False, **k: forked_or_fresh(
        jobs, *a, fresh=True, **k) if fresh else [("died", "it died")] * len(jobs))
    monkeypatch.setattr(solution, "FRESH_COMPILE_TIMEOUT_S", 2)
    launch = solution.launch_plan("interpreter", 128, 128)["main"]
    target = types.SimpleNamespace(backend="cuda", arch=90, warp_size=32)
    for script, why in (("sleep 60", "a fresh interpreter's compile took over 2 s"),
                        ("exit 3", "a fresh interpreter ended before its compile began (exit code 3)")):
        fake = tmp_path / "python"
        fake.write_text(f"#!/bin/sh\n{script}\n")
        fake.chmod(0o755)
        monkeypatch.setattr(sys, "executable", str(fake))
        started = time.monotonic()
        with pytest.raises(solution.KernelFailure) as failure:
            solution._compile_in_children([(launch, ())], target, 0)
        assert time.monotonic() - started < 10
        assert failure.value.what == "kills its compiler" and failure.value.launch is launch
        assert failure.value.why == f"it died; no fresh interpreter could tell whether it is the kernel's doing ({why})"
    assert not solution._no_children


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
