"""tools/solution_copies.py's fault copies: each stands in for a chip whose toolchain has one flaw,
and under the interpreter, its native arithmetic made exact, the copy's probe turns that one feature IEEE and
keeps the rest native, with the bytes of the IEEE rung of the same sigmoid."""
import sys

import pytest
import torch

import harness
import solution

sys.path.insert(0, str(harness.ROOT / "tools"))

import solution_copies  # noqa: E402
from fixtures.native_arithmetic import portable_interpreter  # noqa: E402

pytestmark = pytest.mark.skipif(not solution._INTERPRET, reason="the copies run under the interpreter")

# copy: (the rung it takes, the feature its probe turns IEEE, the check that points at it)
FAULTS = {
    "fault_bf16_truncation.py": ("native", "bf16 rounding", "bf16 rounding"),
    "fault_fma_split.py": ("native", "division", "(quantizer|fma)"),
    "fault_nan_int8.py": ("native", "int8 conversion", "quantizer"),
    "fault_sigmoid_ulp.py": ("native_per_element", "sigmoid", "sigmoid"),
}


@pytest.fixture(scope="module")
def copies(solution_copy_dir):
    return solution_copy_dir


def test_every_fault_copy_is_made():
    assert set(FAULTS) <= set(solution_copies.copies((harness.ROOT / "solution.py").read_text()))


@pytest.mark.parametrize("name", sorted(FAULTS))
def test_the_fault_turns_its_feature_alone_ieee(name, copies, monkeypatch):
    route, feature, check = FAULTS[name]
    copy = harness.load_solution(copies / name, name=f"fault_copy_{name[:-3]}")
    portable_interpreter(monkeypatch, copy)
    x, gy = harness.make_inputs(128, 128, seed=5, family="specials")
    ieee = harness.new_outputs(128, 128)
    with harness.route_forced("generic_per_element"):
        copy.silu_dot_fwd_bwd_quant_fuse(x, gy, *ieee)
    monkeypatch.setattr(copy, "_devices", {})  # a fresh device, the route left to its ladder
    out = harness.new_outputs(128, 128)
    with pytest.warns(RuntimeWarning, match=rf"runs its {feature} in the IEEE form: its probe found \d+ "
                                            rf"differences from IEEE arithmetic in {check}"):
        copy.silu_dot_fwd_bwd_quant_fuse(x, gy, *out)
    assert copy.route_for("cpu") == route
    taken = dict(copy.ladder_for("cpu"))[route]
    assert taken.count("in its IEEE form:") == 1 and f"({feature} in its IEEE form:" in taken
    # A NaN scale's payload may differ between the table rung and the per-element one: any NaN equals any NaN.
    assert [harness.differing_bytes(a, b) for a, b in zip(out, ieee)] == [0, 0, 0, 0], \
        "the composition's bytes differ from the IEEE rung's"
    assert harness.compare(out, harness.run_reference(x, gy))["passed"]
