"""tools/ftz_safe_sigmoid.py: 1/d with subnormal results kept, whatever the division flushes. The tool proves
it for every fp32 d in [2**126, 2**128); these are the same checks on a sample holding the edges."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import harness

sys.path.insert(0, str(harness.ROOT / "tools"))
import ftz_safe_sigmoid as ftz  # noqa: E402

EDGE_SIGNIFICANDS = [2**23, 2**23 + 1, 2**23 + 2, 3 * 2**22, 2**24 - 2, 2**24 - 1]


def _sample_divisors(count=1 << 16, seed=0):
    m = np.random.default_rng(seed).integers(2**23, 2**24, count)
    return ftz.subnormal_range_divisors(significands=np.concatenate([EDGE_SIGNIFICANDS, m]))


def test_the_model_equals_ieee_division_and_needs_no_subnormal_from_its_division():
    d = _sample_divisors()
    expected = ftz.ieee_reciprocal(d)
    assert (expected < 2.0**-126).sum() == d.size - 1  # all subnormal but 1/2**126 itself
    model, divisors, quotients, _ = ftz.model_reciprocal(d)
    assert ftz.differing(model, expected) == 0
    assert divisors.min() >= 2.0**-126 and quotients.min() >= 2.0**-126  # a flush has nothing to flush
    assert ftz.differing(ftz.model_reciprocal(d, ftz.flushing_reciprocal)[0], expected) == 0
    assert ftz.differing(ftz.flushing_reciprocal(d), expected) == d.size - 1  # what it replaces


def test_half_way_quotients_need_the_integer_decision():
    """The fp32 add alone rounds a half-way quotient to even, the wrong way for about half of them."""
    d = _sample_divisors(count=1 << 14, seed=1)
    expected = ftz.ieee_reciprocal(d)
    _, _, _, half_way = ftz.model_reciprocal(d)
    assert half_way.sum() > d.size // 4
    wrong = ftz.differing(ftz.model_reciprocal(d, decide_half_way=False)[0], expected)
    assert 0 < wrong < half_way.sum()


@pytest.mark.parametrize("flushing", [False, True])
def test_the_jit_helper_equals_ieee_division_under_the_interpreter(flushing):
    d = np.concatenate([_sample_divisors(count=1 << 18, seed=2),
                        np.array([1.0, 1.5, 3.0, 2.0**125, np.nextafter(2.0**126, 0), np.inf, np.nan], np.float32)])
    assert ftz.differing(ftz.jit_reciprocal(d, block=1 << 14, flushing=flushing), ftz.ieee_reciprocal(d)) == 0


def test_a_flushing_division_flushes_nothing_of_the_native_form():
    """The interpreter's division made to flush (the control: div_rn alone loses every subnormal quotient) leaves the
    native form, 2**24/d scaled back, as it was: its quotient is never subnormal. Its second rounding is wrong for
    some d whose 1/d is subnormal (the three gates that reach such a d are checked below and by the probe)."""
    d = _sample_divisors(count=1 << 10, seed=3)
    expected = ftz.ieee_reciprocal(d)
    assert np.count_nonzero(ftz.jit_reciprocal(d, block=1 << 10, bare=True, flushing=True) == 0) == d.size - 1
    native = ftz.jit_reciprocal(d, block=1 << 10, native=True)
    assert ftz.differing(ftz.jit_reciprocal(d, block=1 << 10, native=True, flushing=True), native) == 0
    assert np.count_nonzero(native == 0) == 0
    assert 0 < ftz.differing(native, expected) < d.size // 2


@pytest.mark.parametrize("flushing", [False, True])
def test_the_sigmoid_keeps_the_three_subnormal_bf16_gates_and_matches_every_other(flushing):
    gates = ftz.every_bf16_gate()
    got, expected = ftz.interpreted_sigmoid(gates, flushing=flushing), ftz.numpy_sigmoid(gates)
    not_nan = ~np.isnan(gates)
    assert ftz.differing(got[not_nan], expected[not_nan]) == 0
    subnormal = not_nan & (got != 0) & (np.abs(got) < 2.0**-126)
    assert gates[subnormal].tolist() == [-87.5, -88.0, -88.5]


def test_the_nvidia_variant_compiles_to_a_division_that_keeps_subnormals():
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}  # compiling, not interpreting
    code = "import json, ftz_safe_sigmoid as f; print(json.dumps(f.compiled_divisions()))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          cwd=harness.ROOT / "tools", timeout=600)
    assert proc.returncode == 0, proc.stderr
    divisions = json.loads(proc.stdout.splitlines()[-1])
    assert divisions["ptx"] == ["div.rn.f32"]
    assert len(divisions["integer"]) == 1 and divisions["integer"] == divisions["div_rn"]
