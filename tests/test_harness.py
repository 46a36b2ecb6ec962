"""The shared comparison and byte-count helpers that check.py and bench.py rely on."""
import os
import types

import pytest
import torch

import harness


def _reference_case(M=128, H=256, family="randn"):
    x, gy = harness.make_inputs(M, H, seed=3, family=family)
    return harness.run_reference(x, gy)


def _copy(outputs):
    return tuple(t.clone() for t in outputs)


def test_compare_counts_nothing_for_equal_outputs_and_one_byte_for_one_changed_int8():
    ref = _reference_case()
    result = harness.compare(_copy(ref), ref)
    assert result["passed"] and result["totals"] == harness.no_totals()
    out = _copy(ref)
    out[2][3, 7] = ref[2][3, 7] + (1 if ref[2][3, 7] < 127 else -1)
    result = harness.compare(out, ref)
    assert result["differing_bytes"] == {"grad_input_q": 0, "grad_input_s": 0, "y_q_t": 1, "y_s_t": 0}
    assert result["totals"]["differing_bytes"] == 1
    assert 0 < result["totals"]["max_dequant_err"] == max(c["max_abs_err"] for c in result["checks"])
    assert result["totals"]["scale_tol_used"] == result["scale_tol_used"] == 0


def test_scale_one_bf16_ulp_of_absmax_off_fails_the_scale_check():
    # absmax in [2, 4): one bf16 ulp is 2**-6, over 127 that is 1.23e-4 > atol 1e-4.
    ref = _reference_case()
    out = _copy(ref)
    out[1][5, 1] = 3.0 / 127.0
    ref[1][5, 1] = (3.0 + 2.0**-6) / 127.0
    result = harness.compare(out, ref)
    failed = [c["name"] for c in result["checks"] if not c["passed"]]
    assert "grad_input_s" in failed
    check = next(c for c in result["checks"] if c["name"] == "grad_input_s")
    assert check["mismatches"] == 1
    assert check["first_failures"][0]["index"] == [5, 1]


def test_int8_off_by_one_passes_at_small_scale_and_fails_at_large_scale():
    # Why the 'large' input family exists: rounding instead of truncating moves an int8 by one,
    # which the dequant tolerance only notices once scale > 0.25 + 0.25 * |value|.
    for family, should_pass in (("randn", True), ("large", False)):
        ref = _reference_case(family=family)
        out = _copy(ref)
        q = out[2].to(torch.int16)
        out[2].copy_(torch.clamp(q + torch.sign(q), -127, 127).to(torch.int8))
        assert harness.compare(out, ref)["passed"] is should_pass, family


def test_differing_bytes_counts_bytes_not_elements():
    a = torch.zeros(4, dtype=torch.float32)
    b = a.clone()
    b[2] = 1.0  # 0x3F800000: two of its four bytes are non-zero
    assert harness.differing_bytes(a, b) == 2
    assert harness.differing_bytes(torch.tensor([1, 2], dtype=torch.int8), torch.tensor([1, 3], dtype=torch.int8)) == 1


def test_unwritten_finds_the_poison_and_not_other_nans():
    out = harness.new_outputs(128, 128)
    counts = harness.unwritten(out)
    assert counts == {"grad_input_q": 128 * 256, "grad_input_s": 256, "y_q_t": 128 * 128, "y_s_t": 128}
    out[0].zero_(); out[1].fill_(float("nan")); out[2].zero_(); out[3].fill_(-float("nan"))
    assert not any(harness.unwritten(out).values())  # a written NaN scale is a result, not poison


def test_differing_bytes_holds_any_nan_equal_to_any_nan_and_nothing_else():
    bits = torch.tensor([0x7FC00000, -0x400000, 0x7FC0DEAD, 0x7F800000, 0x3F800000], dtype=torch.int32)
    values = bits.view(torch.float32)  # NaN, -NaN, NaN with a payload, inf, 1.0
    nans = torch.tensor([0x7FFFFFFF] * 3, dtype=torch.int32).view(torch.float32)
    assert harness.differing_bytes(values[:3], nans) == 0
    assert harness.differing_bytes(values[3:], values[3:].clone()) == 0
    assert harness.differing_bytes(values[3:4], nans[:1]) == 3  # inf 0x7F800000 against NaN 0x7FFFFFFF
    assert harness.differing_bytes(values[4:], nans[:1]) == 4   # 1.0 0x3F800000 against NaN
    with pytest.raises(ValueError, match="cannot compare"):
        harness.differing_bytes(values, values.double())


JUDGE_CASES = {  # expected, actual
    "equal": ([1.0, 2.0], [1.0, 2.0]),
    "inside atol": ([0.0], [0.99e-4]),
    "outside atol": ([0.0], [1.01e-4]),
    "equal infinities": ([float("inf"), -float("inf")], [float("inf"), -float("inf")]),
    "opposite infinities": ([float("inf")], [-float("inf")]),
    "NaN against NaN": ([float("nan")], [float("nan")]),
    "NaN against a number": ([float("nan")], [1.0]),
    "a number against NaN": ([1.0], [float("nan")]),
}


@pytest.mark.parametrize("case", sorted(JUDGE_CASES))
def test_judge_as_written_is_assert_close_and_passed_forgives_only_nan_pairs(case):
    expected, actual = (torch.tensor(v) for v in JUDGE_CASES[case])
    try:
        torch.testing.assert_close(actual, expected, **harness.SCALE_TOL)
        assert_close_passes = True
    except AssertionError:
        assert_close_passes = False
    result = harness._judge(case, actual, expected, harness.SCALE_TOL)
    assert result["passed_as_written"] is assert_close_passes
    nan_pairs = int((torch.isnan(actual) & torch.isnan(expected)).sum())
    assert result["nan_pairs"] == nan_pairs
    assert result["passed"] is (assert_close_passes or case == "NaN against NaN")
    # A NaN pair or equal infinities are no error; an infinity or NaN against anything else is an infinite one.
    infinite = {"opposite infinities", "NaN against a number", "a number against NaN"}
    assert (result["max_abs_err"] == float("inf")) is (case in infinite)


def test_dequantize_applies_each_scale_to_its_group():
    q = torch.ones(1, 256, dtype=torch.int8)
    s = torch.tensor([[2.0, 3.0]])
    d = harness.dequantize(q, s)
    assert torch.equal(d[0, :128], torch.full((128,), 2.0)) and torch.equal(d[0, 128:], torch.full((128,), 3.0))


@pytest.mark.parametrize("family", harness.FAMILIES)
def test_input_families_are_seeded_and_not_all_zero(family):
    x1, g1 = harness.make_inputs(128, 512, seed=7, family=family)
    x2, g2 = harness.make_inputs(128, 512, seed=7, family=family)
    x3, _ = harness.make_inputs(128, 512, seed=8, family=family)
    def same_bits(a, b):
        return torch.equal(a.view(torch.int16), b.view(torch.int16))  # NaN inputs (specials) too

    assert same_bits(x1, x2) and same_bits(g1, g2)
    assert not same_bits(x1, x3)
    assert x1.dtype == torch.bfloat16 and x1.shape == (128, 1024) and g1.shape == (128, 512)
    assert (x1 != 0).float().mean() > 0.5 and (g1 != 0).float().mean() > 0.5


def test_a_familys_inputs_do_not_depend_on_the_order_or_number_of_families(monkeypatch):
    before = {f: harness.make_inputs(128, 256, seed=1, family=f) for f in harness.FAMILIES}
    monkeypatch.setattr(harness, "FAMILIES", ("added_family",) + tuple(reversed(harness.FAMILIES)))
    for family, (x, gy) in before.items():
        x2, gy2 = harness.make_inputs(128, 256, seed=1, family=family)
        assert x.view(torch.int16).equal(x2.view(torch.int16)) and gy.view(torch.int16).equal(gy2.view(torch.int16))


def test_specials_family_holds_every_special_and_the_reference_makes_nonfinite_groups():
    M, H = 128, 256
    x, gy = harness.make_inputs(M, H, seed=0, family="specials")
    gate, up, gy = x[:, :H].float(), x[:, H:].float(), gy.float()
    inf = float("inf")
    assert (gate == inf).any() and (gate == -inf).any() and gate.isnan().any()
    assert up.isnan().any() and gy.isnan().any() and (gy == inf).any() and (gy == -inf).any()
    assert ((up == inf) & (gy == 0)).any()  # inf * 0
    assert int((~torch.isfinite(x.float())).sum() + (~torch.isfinite(gy)).sum()) <= 12  # a handful
    ref = harness.run_reference(*harness.make_inputs(M, H, seed=0, family="specials"))
    assert ref[1].isnan().any() and ref[1].isinf().any() and ref[3].isnan().any() and ref[3].isinf().any()
    assert torch.isfinite(ref[1]).float().mean() > 0.9  # most groups stay finite
    result = harness.compare(_copy(ref), ref)
    assert result["totals"]["nonfinite_groups"] == int((~torch.isfinite(ref[1])).sum() + (~torch.isfinite(ref[3])).sum())
    # The reference against itself: the judge as written fails (NaN != NaN), check.py's rule passes.
    assert result["passed"] and not result["passed_as_written"] and result["totals"]["nan_pairs"] > 0
    assert result["totals"]["differing_bytes"] == 0


def test_a_finite_scale_for_a_nan_group_fails_the_judge_and_exactness():
    ref = harness.run_reference(*harness.make_inputs(128, 256, seed=0, family="specials"))
    out = _copy(ref)
    nan_group = out[1].isnan().nonzero()[0].tolist()
    out[1][tuple(nan_group)] = 1.0
    result = harness.compare(out, ref)
    check = next(c for c in result["checks"] if c["name"] == "grad_input_s")
    assert not check["passed"] and check["mismatches"] == 1 and check["first_failures"][0]["index"] == nan_group
    assert result["differing_bytes"]["grad_input_s"] > 0


def test_zeros_family_produces_zero_groups_and_the_scale_floor():
    ref = _reference_case(family="zeros")
    assert (ref[1] == torch.tensor(1e-10)).any() and (ref[3] == torch.tensor(1e-10)).any()


def test_min_bytes_is_the_documented_9_09375_per_element():
    assert harness.min_bytes(8192, 4096) == int(9.09375 * 8192 * 4096)


def test_benchmark_labels_name_their_shape():
    assert harness.load_shapes("8x128x2560") == [("8x128x2560", 1024, 2560)]
    assert harness.load_shapes("1024x2560") == [("1024x2560", 1024, 2560)]
    with pytest.raises(ValueError, match="ExTxH"):
        harness.load_shapes("8x128x2560x4")


def test_shape_groups_and_explicit_shapes():
    bench = harness.load_shapes("benchmark")
    assert len(bench) == 12 and ("32x256x4096", 8192, 4096) in bench
    assert harness.load_shapes("384x640") == [("384x640", 384, 640)]
    with pytest.raises(ValueError, match="unknown shape group"):
        harness.load_shapes("nope")


@pytest.mark.parametrize("shape, message", [
    ("100x100", "M = 100 and H = 100 are not positive multiples of 128"),
    ("128x127", "H = 127 is not a positive multiple of 128"),
    ("8x100x256", "M = 8x100 = 800 is not a positive multiple of 128"),
    ("0x128", "M = 0 is not a positive multiple of 128"),
])
def test_shapes_must_be_positive_multiples_of_128(shape, message):
    with pytest.raises(ValueError, match=message):
        harness.load_shapes(shape)


def test_route_name_asks_the_module_or_says_unknown():
    seen = []
    module = types.SimpleNamespace(route_for=lambda device: seen.append(device) or "nvidia")
    assert harness.route_name(module, "cuda:0") == "nvidia"
    assert seen == ["cuda:0"]
    assert harness.route_name(types.SimpleNamespace(), "cuda:0") == "unknown"


def test_route_is_checked_against_the_solutions_own_routes():
    module = types.SimpleNamespace(ROUTES=("fast", "portable"), __file__="/x/candidate.py")
    harness.check_route(module, "portable")
    with pytest.raises(ValueError, match=r"^'nvidia' is not a route of candidate.py \(its ROUTES: fast, portable\)$"):
        harness.check_route(module, "nvidia")
    with pytest.raises(ValueError, match="has no ROUTES"):
        harness.check_route(types.SimpleNamespace(__file__="/x/old.py"), "fast")


@pytest.mark.parametrize("before", [None, "outer"])
@pytest.mark.parametrize("route", [None, "inner"])
def test_route_forced_sets_or_unsets_the_variable_and_restores_it(before, route, monkeypatch):
    monkeypatch.setenv(harness.ROUTE_ENV, "")  # recorded, so the test leaves the variable as it found it
    if before is None:
        monkeypatch.delenv(harness.ROUTE_ENV)
    else:
        monkeypatch.setenv(harness.ROUTE_ENV, before)
    with harness.route_forced(route):
        assert os.environ.get(harness.ROUTE_ENV) == route
    assert os.environ.get(harness.ROUTE_ENV) == before


@pytest.mark.parametrize("text, message", [
    ("def something_else():\n    pass\n", "defines no function silu_dot_fwd_bwd_quant_fuse"),
    ("raise RuntimeError('no device\\nsecond line')\n", "raised RuntimeError: no device second line"),
])
def test_load_solution_refuses_in_one_line(text, message, tmp_path):
    path = tmp_path / "candidate.py"
    path.write_text(text)
    with pytest.raises(harness.SolutionError, match=message) as refused:
        harness.load_solution(path)
    assert "\n" not in str(refused.value)
    with pytest.raises(harness.SolutionError, match="no solution file at"):
        harness.load_solution(tmp_path / "missing.py")


def test_quantize_like_reference_is_the_references_quantizer():
    reference = harness.load_solution(harness.ROOT / "reference.py", name="reference_for_quantizer_test")
    quantize_groups = reference._quantize_groups
    gen = torch.Generator().manual_seed(11)
    values = torch.randn(64, 4 * harness.GROUP_SIZE, generator=gen) * torch.rand(64, 1, generator=gen) * 100
    values = values.to(torch.bfloat16).float()
    values[0, 5], values[1, 7], values[2, 9], values[3] = float("nan"), float("inf"), float("-inf"), 0.0
    expected_q, expected_s = quantize_groups(values, harness.GROUP_SIZE)
    grouped = values.view(64, 4, harness.GROUP_SIZE)
    q, s = harness.quantize_like_reference(grouped, grouped.abs().amax(dim=2, keepdim=True))
    assert torch.equal(q.view(64, -1), expected_q)
    assert torch.equal(s[..., 0].isnan(), expected_s.isnan())
    assert torch.equal(s[..., 0].nan_to_num(nan=1.0), expected_s.nan_to_num(nan=1.0))


@pytest.mark.parametrize("triton_version, numpy_version, refused", [
    ("3.0.0", "2.4.6", True), ("3.1.0+corex", "2.0.0", True), ("3.1.0", "1.26.4", False),
    ("3.2.0", "2.4.6", False), ("3.6.0", "2.4.6", False)])
def test_the_interpreter_is_refused_only_before_triton_3_2_under_numpy_2(triton_version, numpy_version, refused,
                                                                        monkeypatch):
    import numpy
    import triton
    monkeypatch.setattr(triton, "__version__", triton_version)
    monkeypatch.setattr(numpy, "__version__", numpy_version)
    problem = harness.interpreter_problem()
    assert (problem is not None) is refused
    if refused:
        assert "\n" not in problem and "numpy<2" in problem and triton_version in problem
