"""The ladder of routes: a route whose kernels do not compile on a device is left for the next
rung once, with a warning; an error at run time is raised, never hidden. The interpreter compiles
nothing, so a stand-in compile raises where a backend's compiler would."""
import pytest
import torch

import harness
import solution


def _fresh_device(monkeypatch, forced_route=None):
    if forced_route:
        monkeypatch.setenv(solution.ROUTE_ENV, forced_route)
    else:
        monkeypatch.delenv(solution.ROUTE_ENV, raising=False)
    monkeypatch.setattr(solution, "_devices", {})


def _refuse_to_compile(monkeypatch, launch_names, calls):
    def stand_in_compile(launch, args, device=None):
        calls.append(launch.name)
        if launch.name in launch_names:
            raise RuntimeError(f"PassManager::run failed\nstand-in compiler refuses {launch.name}")
    monkeypatch.setattr(solution, "_compile", stand_in_compile)


def _call_and_compare(M=128, H=256):
    x, gy = harness.make_inputs(M, H, seed=3, family="heavy")
    out = harness.new_outputs(M, H)
    solution.silu_dot_fwd_bwd_quant_fuse(x, gy, *out)
    result = harness.compare(out, harness.run_reference(x, gy))
    assert result["passed"] and not any(harness.unwritten(out).values()), result["checks"]


def test_every_backend_ends_its_ladder_on_the_tolerant_rung_and_only_there():
    for backend in solution.BACKENDS.values():
        assert backend.routes and len(set(backend.routes)) == len(backend.routes)
        last = solution.ROUTE_TABLE[backend.routes[-1]]
        assert last.two_pass and not last.exact and not last.libdevice and last.npu_division, backend.name
        assert all(solution.ROUTE_TABLE[r].exact for r in backend.routes[:-1]), backend.name
        assert all(route in solution.ROUTES for route in backend.routes)


def test_a_main_kernel_that_does_not_compile_falls_back_once_a_rung_with_a_warning(monkeypatch):
    _fresh_device(monkeypatch)
    calls = []
    _refuse_to_compile(monkeypatch, {"main"}, calls)
    with pytest.warns(RuntimeWarning) as warned:
        _call_and_compare()
    assert [str(w.message) for w in warned if "silu_dot" in str(w.message)] == [
        "silu_dot_fwd_bwd_quant_fuse: left the generic_per_element route on this interpreter device: its main "
        "kernel does not compile (RuntimeError: PassManager::run failed); taking the plain route"]
    assert solution.route_for("cpu") == "plain"
    # Each rung's settle compiles its per-device kernels, the proofs' (until they compile here: the witness's table
    # where the rung's own kernels read none) and the first call's; plain's are compiled again for the call's own
    # arguments.
    proofs = ["witness_input", "witness_check"]
    compiled = ["sigmoid_table"] + proofs + ["main"] + proofs + ["witness_table", "grad", "y", "grad", "y"]
    assert calls == compiled, calls
    _call_and_compare()  # the same shape again: nothing is compiled or retried
    assert calls == compiled, calls
    assert [how.split(":")[0] for _, how in solution.ladder_for("cpu")] == ["left", "taken", "not tried"]


def test_a_sigmoid_table_that_does_not_compile_costs_the_rungs_that_read_it(monkeypatch):
    """The IEEE per-element rung reads three entries of the table: it is left. The two-pass rung, which reads none,
    runs; the witness, whose expectations read the table, cannot judge it, and says so."""
    _fresh_device(monkeypatch)
    calls = []
    _refuse_to_compile(monkeypatch, {"sigmoid_table", "witness_table"}, calls)
    with pytest.warns(RuntimeWarning) as warned:
        _call_and_compare()
    said = [str(w.message) for w in warned if "silu_dot" in str(w.message)]
    assert said[0].split(":")[1].split(" on ")[0] == " left the generic_per_element route"
    assert "its sigmoid_table kernel does not compile" in said[0]
    assert len(said) == 2 and said[1].startswith(
        "silu_dot_fwd_bwd_quant_fuse: the witness cannot judge the kernels on this interpreter device (its "
        "witness_table kernel does not compile (RuntimeError: PassManager::run failed)): the plain route")
    assert solution.route_for("cpu") == "plain" and calls == [
        "sigmoid_table", "witness_input", "witness_check", "witness_table", "grad", "y", "grad", "y"]


def test_the_last_rung_and_a_forced_route_raise_their_compile_error(monkeypatch):
    _fresh_device(monkeypatch)
    _refuse_to_compile(monkeypatch, {"main", "y"}, [])
    with pytest.warns(RuntimeWarning, match="taking the tolerant route"):
        with pytest.raises(RuntimeError, match="PassManager::run failed"):
            _call_and_compare()
    _fresh_device(monkeypatch, forced_route="generic_per_element")
    with pytest.raises(RuntimeError, match="PassManager::run failed"):
        _call_and_compare()


class _FailsAtRunTime:
    """A kernel that compiles and then fails when launched, as an illegal memory access would."""

    def __init__(self, kernel):
        self.arg_names = kernel.arg_names

    def __getitem__(self, grid):
        def run(*args, **kwargs):
            raise RuntimeError("CUDA error: an illegal memory access was encountered")
        return run


def test_an_error_at_run_time_is_raised_and_the_route_kept(monkeypatch):
    _fresh_device(monkeypatch)
    _refuse_to_compile(monkeypatch, set(), [])
    monkeypatch.setattr(solution, "_silu_mul_quant_kernel", _FailsAtRunTime(solution._silu_mul_quant_kernel))
    with pytest.raises(RuntimeError, match="illegal memory access"):
        _call_and_compare()
    assert solution.route_for("cpu") == "generic_per_element"


# Ascend's two-pass rungs: tests/test_two_pass_rungs.py holds them to the same bytes on every cpu_small shape
# (its 256x128 launches their kernels with this shape's constexprs: one group's grad scales a store, two y's).
def test_the_plain_rung_gives_the_bytes_of_the_main_kernel(monkeypatch):
    M, H = 256, 384
    x, gy = harness.make_inputs(M, H, seed=9, family="specials")
    _fresh_device(monkeypatch)
    expected = harness.new_outputs(M, H)
    solution.silu_dot_fwd_bwd_quant_fuse(x, gy, *expected)
    _fresh_device(monkeypatch, forced_route="plain")
    out = harness.new_outputs(M, H)
    solution.silu_dot_fwd_bwd_quant_fuse(x, gy, *out)
    assert [harness.differing_bytes(o, e) for o, e in zip(out, expected)] == [0, 0, 0, 0]
    assert torch.isnan(expected[1]).any()  # the specials reach the scales
