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


def _off_by_one_ulp(direction):
    def divide(d):
        q = ftz.ieee_reciprocal(d)
        return (q.view(np.uint32).astype(np.int64) + direction).astype(np.uint32).view(np.float32)
    return divide


def test_the_model_equals_ieee_division_and_needs_no_subnormal_from_its_division():
    d = _sample_divisors()
    expected = ftz.ieee_reciprocal(d)
    assert (expected < 2.0**-126).sum() == d.size - 1  # all subnormal but 1/2**126 itself
    model, divisors, quotients = ftz.model_reciprocal(d)
    assert ftz.differing(model, expected) == 0
    assert divisors.min() >= 2.0**-126 and quotients.min() >= 2.0**-126  # a flush has nothing to flush
    assert ftz.differing(ftz.model_reciprocal(d, ftz.flushing_reciprocal)[0], expected) == 0
    assert ftz.differing(ftz.flushing_reciprocal(d), expected) == d.size - 1  # what it replaces


@pytest.mark.parametrize("direction", [-1, 1])
def test_the_integer_correction_repairs_a_division_one_ulp_off(direction):
    d = _sample_divisors(count=1 << 14, seed=1)
    expected = ftz.ieee_reciprocal(d)
    divide = _off_by_one_ulp(direction)
    assert ftz.differing(ftz.model_reciprocal(d, divide)[0], expected) == 0
    # Without the correction the off quotient would be wrong: the rounding alone is not enough.
    truncated = (divide(ftz.model_reciprocal(d)[1]) + np.float32(0.5)).astype(np.int64)
    assert ftz.differing(truncated.astype(np.uint32).view(np.float32), expected) > 0


def test_the_jit_helper_equals_ieee_division_under_the_interpreter():
    d = np.concatenate([_sample_divisors(count=1 << 18, seed=2),
                        np.array([1.0, 1.5, 3.0, 2.0**125, np.nextafter(2.0**126, 0), np.inf, np.nan], np.float32)])
    assert ftz.differing(ftz.jit_reciprocal(d, block=1 << 14), ftz.ieee_reciprocal(d)) == 0


def test_the_sigmoid_keeps_the_three_subnormal_bf16_gates_and_matches_every_other():
    gates = ftz.every_bf16_gate()
    got, expected = ftz.interpreted_sigmoid(gates), ftz.numpy_sigmoid(gates)
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
