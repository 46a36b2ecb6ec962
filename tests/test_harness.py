"""The shared comparison and byte-count helpers that check.py and bench.py rely on."""
import sys

import pytest
import torch

import harness


def _reference_case(M=128, H=256, family="randn"):
    x, gy = harness.make_inputs(M, H, seed=3, family=family)
    return harness.run_reference(x, gy)


def _copy(outputs):
    return tuple(t.clone() for t in outputs)


def test_identical_outputs_pass_with_zero_differences():
    ref = _reference_case()
    result = harness.compare(_copy(ref), ref)
    assert result["passed"]
    assert sum(result["differing_bytes"].values()) == 0
    assert result["scale_tol_used"] == 0


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


def test_unwritten_finds_poison_and_nan():
    out = harness.new_outputs(128, 128)
    counts = harness.unwritten(out)
    assert counts == {"grad_input_q": 128 * 256, "grad_input_s": 256, "y_q_t": 128 * 128, "y_s_t": 128}
    out[0].zero_(); out[1].zero_(); out[2].zero_(); out[3].zero_()
    assert not any(harness.unwritten(out).values())


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
    assert torch.equal(x1, x2) and torch.equal(g1, g2)
    assert not torch.equal(x1, x3)
    assert x1.dtype == torch.bfloat16 and x1.shape == (128, 1024) and g1.shape == (128, 512)
    assert (x1 != 0).float().mean() > 0.5 and (g1 != 0).float().mean() > 0.5


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


def test_phase_timeline_edits_still_apply_to_the_solution():
    import importlib.util
    spec = importlib.util.spec_from_file_location("phase_timeline", harness.ROOT / "tools" / "phase_timeline.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    source = tool.instrumented_source((harness.ROOT / "solution.py").read_text())
    assert source.count("_stamp(dbg, ") == 4 and "STAMPS" in source  # the helper and three stamps
    compile(source, "solution_timed.py", "exec")


def test_quantize_like_reference_is_the_references_quantizer():
    reference = harness.load_solution(harness.ROOT / "reference.py", name="reference_for_quantizer_test")
    quantize_groups = sys.modules["reference_for_quantizer_test"]._quantize_groups
    gen = torch.Generator().manual_seed(11)
    values = torch.randn(64, 4 * harness.GROUP_SIZE, generator=gen) * torch.rand(64, 1, generator=gen) * 100
    values = values.to(torch.bfloat16).float()
    values[0, 5], values[1, 7], values[2, 9], values[3] = float("nan"), float("inf"), float("-inf"), 0.0
    expected_q, expected_s = quantize_groups(values, harness.GROUP_SIZE)
    grouped = values.view(64, 4, harness.GROUP_SIZE)
    q, s = harness.quantize_like_reference(grouped, grouped.abs().amax(dim=2, keepdim=True))
    assert reference is not None
    assert torch.equal(q.view(64, -1), expected_q)
    assert torch.equal(s[..., 0].isnan(), expected_s.isnan())
    assert torch.equal(s[..., 0].nan_to_num(nan=1.0), expected_s.nan_to_num(nan=1.0))
