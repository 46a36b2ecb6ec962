"""The probe: a native route proves its arithmetic on the device at first use, and a route whose
probe finds a difference from IEEE arithmetic is left for the next rung with one warning, the call's bytes
unchanged. Under the interpreter the native arithmetic is numpy's; an exact stand-in of it is the baseline,
and each fault a chip's compiler could have is injected into it."""
import sys
import warnings

import numpy as np

import pytest
import torch
import triton
import triton.language as tl
from triton.runtime import interpreter

import harness
import solution

sys.path.insert(0, str(harness.ROOT / "tools"))

from fixtures.native_arithmetic import ORIGINAL_FMA, exact_cast, portable_interpreter

pytestmark = pytest.mark.skipif(not solution._INTERPRET, reason="the faults are injected into the interpreter")


@pytest.fixture
def native_interpreter(monkeypatch):
    """A fresh device whose ladder is the portable one, on an interpreter whose native arithmetic is exact."""
    portable_interpreter(monkeypatch, solution)
    return monkeypatch


def _call(M=128, H=128):
    x, gy = harness.make_inputs(M, H, seed=5, family="specials")
    out = harness.new_outputs(M, H)
    solution.silu_dot_fwd_bwd_quant_fuse(x, gy, *out)
    return out


def _bytes(outputs):
    return [t.view(torch.uint8).flatten() if t.dtype != torch.float32 else t.view(torch.int32).flatten()
            for t in outputs]


def test_the_exact_stand_in_passes_the_probe_and_runs_the_native_route(native_interpreter):
    out = _call()
    assert solution.route_for("cpu") == "native"
    assert solution.ladder_for("cpu")[0] == ("native", "taken (its probe: no difference from IEEE arithmetic in "
                                                       "sigmoid, bf16 rounding, quantizer, fma, pipeline)")
    reference = harness.run_reference(*harness.make_inputs(128, 128, seed=5, family="specials"))
    assert harness.compare(out, reference)["passed"]


def test_the_persistent_native_route_walks_every_tile_in_one_slot_a_program(native_interpreter):
    """Two programs for six tiles: each takes every other tile, in its own scratch slot."""
    M, H = 256, 384
    settings = solution.LaunchSettings(num_warps=8, chunk=32, y_chunk=32, maxnreg=None, programs=2)
    assert solution.launch_plan("interpreter", M, H, route="native", settings=settings)["main"].grid == (2, 1, 1)
    x, gy = harness.make_inputs(M, H, seed=6, family="specials")
    out = harness.new_outputs(M, H)
    solution.launch(x, gy, *out, settings=settings)
    assert solution.route_for("cpu") == "native"
    assert harness.compare(out, harness.run_reference(x, gy))["passed"]


def test_native_per_element_writes_the_same_bytes_at_its_launch_for_many_tiles(native_interpreter):
    """The launch a grid of many tiles takes (Route.many_tiles: fewer threads, 16-token slices) and the rung's own."""
    _per_element_ladder(native_interpreter)
    crowded = solution.launch_settings("unknown", 8192, 4096, 132, route="native_per_element")
    assert (crowded.chunk, crowded.num_warps * 32) == (16, 256)
    x, gy = harness.make_inputs(256, 128, seed=7, family="specials")
    outputs = []
    for settings in (None, crowded):
        out = harness.new_outputs(256, 128)
        solution.launch(x, gy, *out, settings=settings)
        outputs.append(_bytes(out))
    assert solution.route_for("cpu") == "native_per_element"
    assert all(torch.equal(a, b) for a, b in zip(*outputs))
    assert harness.compare(out, harness.run_reference(x, gy))["passed"]


def _ieee_bytes(monkeypatch, route="generic_per_element"):
    """The bytes of the IEEE rung a fallback takes (a NaN's payload may differ between rungs)."""
    monkeypatch.setattr(solution, "_devices", {})
    monkeypatch.setenv(solution.ROUTE_ENV, route)
    out = _bytes(_call())
    monkeypatch.delenv(solution.ROUTE_ENV)
    monkeypatch.setattr(solution, "_devices", {})
    return out


def _only_the_feature_turns_ieee(monkeypatch, feature, checks, route="native", first_at=""):
    """The fault's feature alone runs IEEE on the route's rung (one warning naming it and the probe's finding),
    every other native; the bytes are those of the IEEE rung."""
    expected = _ieee_bytes(monkeypatch)
    if route == "native_per_element":
        _per_element_ladder(monkeypatch)
    with pytest.warns(RuntimeWarning, match=rf"the {route} route on this interpreter device runs its {feature} in "
                                            rf"the IEEE form: its probe found \d+ differences from IEEE arithmetic "
                                            rf"in ({checks}), the first at {first_at}"):
        out = _bytes(_call())
    assert solution.route_for("cpu") == route
    taken = dict(solution.ladder_for("cpu"))[route]
    assert taken.count("in its IEEE form:") == 1 and f"({feature} in its IEEE form: its first probe found" in taken
    # On the table rung a NaN scale's payload may differ from the per-element rung's: any NaN equals any NaN.
    differing = [harness.differing_bytes(*(t.view(torch.float32) if t.dtype == torch.int32 else t for t in pair))
                 for pair in zip(out, expected)]
    assert differing == [0, 0, 0, 0], f"the composition's bytes differ from IEEE's: {differing}"
    return taken


def _truncate_bf16_casts(monkeypatch):
    """The interpreter's native fp32 -> bf16 cast truncates (its other casts stay exact)."""
    def truncating(self, src, dst_type, *rounding_mode):
        if src.dtype.scalar == tl.float32 and dst_type.scalar == tl.bfloat16:
            return interpreter.TensorHandle((src.data.view(np.uint32) >> 16).astype(np.uint16), dst_type.scalar)
        return exact_cast(self, src, dst_type)
    monkeypatch.setattr(interpreter.InterpreterBuilder, "cast_impl", truncating)
    monkeypatch.setattr(interpreter.InterpreterBuilder, "create_fp_to_fp", truncating)


def test_bf16_by_truncation_turns_the_bf16_rounding_alone_ieee(native_interpreter):
    _truncate_bf16_casts(native_interpreter)
    _only_the_feature_turns_ieee(native_interpreter, "bf16 rounding", "bf16 rounding")


def test_an_fma_split_into_a_multiply_and_an_add_turns_the_division_alone_ieee(native_interpreter):
    native_interpreter.setattr(interpreter.InterpreterBuilder, "create_fma", ORIGINAL_FMA)  # x * y + z
    taken = _only_the_feature_turns_ieee(native_interpreter, "division", "quantizer|fma")
    assert "; fma: " in taken and "differences, unused by the features in their IEEE form" in taken


def test_int8_of_nan_not_zero_turns_the_int8_conversion_alone_ieee(native_interpreter):
    def nan_to_minus_128(self, src, dst_type):
        out = exact_cast(self, src, dst_type)
        if src.dtype.scalar == tl.float32 and dst_type.scalar == tl.int8:
            out.data[np.isnan(src.data)] = -128
        return out
    native_interpreter.setattr(interpreter.InterpreterBuilder, "cast_impl", nan_to_minus_128)
    _only_the_feature_turns_ieee(native_interpreter, "int8 conversion", "quantizer")


@triton.jit
def _reordered_in_the_native_form(gate, up, gy, sig, IEEE: tl.constexpr):
    """silu_mul_fwd_bwd whose native form adds 1 where it should add gate * (1 - sig) too: a fault of the
    pipeline alone, as a compiler that reassociates inside the big kernel would make."""
    silu = gate * sig
    if solution.IEEE_BF16 & IEEE:
        d_gate = gy * up * sig * (1.0 + gate * (1.0 - sig))
    else:
        d_gate = gy * up * sig * (1.0 + gate)
    return solution.bf16_round(silu * up, IEEE).to(tl.bfloat16), d_gate, gy * silu


def test_a_fault_no_feature_explains_leaves_the_rung(native_interpreter):
    """The pipeline alone differing points at no feature: both native rungs are left, and the IEEE rung's
    bytes come out."""
    native_interpreter.setattr(solution, "silu_mul_fwd_bwd", _reordered_in_the_native_form)
    expected = _ieee_bytes(native_interpreter)
    with pytest.warns(RuntimeWarning, match=r"left the native route .*its probe found \d+ differences from IEEE "
                                            r"arithmetic in pipeline, the first at "):
        out = _bytes(_call())
    ladder = dict(solution.ladder_for("cpu"))
    assert [route for route, how in ladder.items() if how.startswith("left:")] == ["native", "native_per_element"]
    assert all(torch.equal(a, b) for a, b in zip(out, expected))


def _per_element_ladder(monkeypatch):
    """The interpreter's ladder from the native rung per element (as where tl.gather is missing)."""
    monkeypatch.setattr(solution, "BACKENDS", {**solution.BACKENDS, "interpreter": solution.BACKENDS[
        "interpreter"]._replace(routes=("native_per_element", "generic_per_element", "plain", "tolerant"))})


@triton.jit
def _one_ulp_off(e):
    """A native reciprocal of d = 1 + e one ulp off for d in (1.5, 1.75): a sigmoid fault and nothing else."""
    r = solution.reciprocal_keeping_subnormals(1.0 + e)
    return tl.where((e > 0.5) & (e < 0.75), (r.to(tl.int32, bitcast=True) + 1).to(tl.float32, bitcast=True), r)


def test_a_sigmoid_one_ulp_off_turns_the_sigmoid_ieee(native_interpreter):
    native_interpreter.setattr(solution, "reciprocal_native", _one_ulp_off)
    _only_the_feature_turns_ieee(native_interpreter, "sigmoid", "sigmoid", "native_per_element", "gate 0x")


def test_a_flushing_division_leaves_the_native_sigmoid_native(native_interpreter):
    """div_rn flushing a subnormal quotient, as Triton 3.0-3.5 compile it on NVIDIA: the native sigmoid divides
    2**24 by d, a normal quotient for every gate, so the probe finds nothing, the rung keeps every feature
    native and writes the IEEE rung's bytes (the three subnormal gates among the probe's)."""
    import ftz_safe_sigmoid
    expected = _ieee_bytes(native_interpreter)
    _per_element_ladder(native_interpreter)
    with ftz_safe_sigmoid.division(flushing=True), warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*IEEE form", category=RuntimeWarning)
        out = _bytes(_call())
    assert dict(solution.ladder_for("cpu"))["native_per_element"].startswith("taken (its probe: no difference")
    assert all(torch.equal(a, b) for a, b in zip(out, expected))


def test_a_flushing_sigmoid_turns_the_sigmoid_ieee(native_interpreter):
    """The native reciprocal flushed where subnormal (a backend whose multiply flushes): the probe finds the three
    gates whose sigmoid is subnormal, and the rung keeps every other native feature."""
    native_interpreter.setattr(solution, "reciprocal_native", _flushed_reciprocal)
    _only_the_feature_turns_ieee(native_interpreter, "sigmoid", "sigmoid", "native_per_element", "gate 0xc2af")


@triton.jit
def _flushed_reciprocal(e):
    r = solution.reciprocal_keeping_subnormals(1.0 + e)
    return tl.where(tl.abs(r) < 1.1754943508222875e-38, 0.0, r)


def test_two_faults_turn_their_two_features_ieee(native_interpreter):
    """A sigmoid one ulp off and an fma split: the rung keeps its bf16 rounding and int8 conversion native."""
    native_interpreter.setattr(solution, "reciprocal_native", _one_ulp_off)
    native_interpreter.setattr(interpreter.InterpreterBuilder, "create_fma", ORIGINAL_FMA)
    expected = _ieee_bytes(native_interpreter, "generic_per_element")
    _per_element_ladder(native_interpreter)
    with pytest.warns(RuntimeWarning, match=r"runs its division, sigmoid in the IEEE form"):
        out = _bytes(_call())
    assert solution.route_for("cpu") == "native_per_element"
    taken = dict(solution.ladder_for("cpu"))["native_per_element"]
    assert "(sigmoid in its IEEE form:" in taken and "(division in its IEEE form:" in taken
    assert taken.count("in its IEEE form:") == 2
    assert all(torch.equal(a, b) for a, b in zip(out, expected))


def test_the_first_call_under_graph_capture_says_to_call_once_before(monkeypatch):
    monkeypatch.setattr(solution, "_devices", {})
    monkeypatch.setattr(solution, "_device_module", lambda x: type("Capturing", (), {
        "is_current_stream_capturing": staticmethod(lambda: True)}))
    with pytest.raises(RuntimeError, match="call it once before capturing"):
        _call()


def test_native_two_pass_runs_the_probed_native_arithmetic_and_writes_plains_bytes(native_interpreter):
    """The two-pass kernels with the fused kernel's native arithmetic, proven by the same probe: plain's bytes; with
    a native bf16 cast that truncates, its bf16 rounding alone runs IEEE, and the bytes are plain's still."""
    expected = _ieee_bytes(native_interpreter, "plain")
    native_interpreter.setenv(solution.ROUTE_ENV, "native_two_pass")
    out = _bytes(_call())
    assert solution.ladder_for("cpu") == [("native_two_pass", "taken (its probe: no difference from IEEE arithmetic "
                                                              "in sigmoid, bf16 rounding, quantizer, fma, pipeline)")]
    assert all(torch.equal(a, b) for a, b in zip(out, expected)), "native_two_pass's bytes differ from plain's"

    _truncate_bf16_casts(native_interpreter)
    native_interpreter.setattr(solution, "_devices", {})
    with pytest.warns(RuntimeWarning, match=r"the native_two_pass route on this interpreter device runs its bf16 "
                                            r"rounding in the IEEE form"):
        out = _bytes(_call())
    assert all(torch.equal(a, b) for a, b in zip(out, expected)), "with bf16 IEEE, its bytes differ from plain's"
