"""The real solution kernels against the reference, under the interpreter, and every bad-input error."""
import pytest
import torch

import harness
import solution

SHAPES = [(128, 128), (256, 128), (128, 384)]


@pytest.mark.parametrize("family", harness.FAMILIES)
@pytest.mark.parametrize("M,H", SHAPES)
def test_matches_reference_within_judge_tolerances(M, H, family):
    x, gy = harness.make_inputs(M, H, seed=1, family=family)
    ref = harness.run_reference(x, gy)
    out = harness.new_outputs(M, H)
    returned = solution.silu_dot_fwd_bwd_quant_fuse(x, gy, *out)
    assert all(r is o for r, o in zip(returned, out))
    assert not any(harness.unwritten(out).values())
    result = harness.compare(out, ref)
    assert result["passed"], result["checks"]


def test_scales_agree_to_far_below_tolerance():
    # Under the interpreter the exp differs from torch's by an ulp at most, so scales may differ
    # by a bf16 ulp of a rare group's max; far more than a few would mean a real error.
    x, gy = harness.make_inputs(256, 256, seed=2)
    ref = harness.run_reference(x, gy)
    out = harness.new_outputs(256, 256)
    solution.silu_dot_fwd_bwd_quant_fuse(x, gy, *out)
    n_scales = out[1].numel() + out[3].numel()
    diff = harness.differing_bytes(out[1], ref[1]) + harness.differing_bytes(out[3], ref[3])
    assert diff <= 0.05 * 4 * n_scales


def _valid(M=128, H=128):
    x, gy = harness.make_inputs(M, H, seed=0)
    return [x, gy, *harness.new_outputs(M, H)]


BAD_INPUTS = {
    "group_size": (lambda a: (a, {"group_size": 64}), "group_size must be 128"),
    "x dtype": (lambda a: ([a[0].float(), *a[1:]], {}), "x must be torch.bfloat16"),
    "grad_y dtype": (lambda a: ([a[0], a[1].half(), *a[2:]], {}), "grad_y must be torch.bfloat16"),
    "x rank": (lambda a: ([a[0].reshape(1, 128, 256), *a[1:]], {}), "x must be 2-D"),
    "not a tensor": (lambda a: ([a[0], a[1].tolist(), *a[2:]], {}), "grad_y must be a torch.Tensor"),
    "M not multiple": (lambda a: ([a[0][:100], a[1][:100], *a[2:]], {}), "multiples of 128"),
    "odd columns": (lambda a: ([a[0][:, :255], *a[1:]], {}), "even number of columns"),
    "grad_y shape": (lambda a: ([a[0], a[1][:, :64], *a[2:]], {}), "grad_y must have shape (128, 128)"),
    "q dtype": (lambda a: ([*a[:2], a[2].to(torch.int16), *a[3:]], {}), "grad_input_q must be torch.int8"),
    "scale shape": (lambda a: ([*a[:3], torch.empty(128, 3), *a[4:]], {}), "grad_input_s must have shape (128, 2)"),
    "y_q_t shape": (lambda a: ([*a[:4], a[4].T.contiguous()[:, :64], a[5]], {}), "y_q_t must have shape (128, 128)"),
    "y_s_t dtype": (lambda a: ([*a[:5], a[5].double()], {}), "y_s_t must be torch.float32"),
    "non-contiguous": (lambda a: ([*a[:4], a[4].T, a[5]], {}), "y_q_t must be contiguous"),
    "device": (lambda a: ([*a[:5], a[5].to("meta")], {}), "one device"),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_raises_clear_value_error(case):
    make, message = BAD_INPUTS[case]
    args, kwargs = make(_valid())
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        solution.silu_dot_fwd_bwd_quant_fuse(*args, **kwargs)


def test_h_not_multiple_of_128_is_rejected():
    x = torch.zeros(128, 2 * 192, dtype=torch.bfloat16)
    gy = torch.zeros(128, 192, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="H=192"):
        solution.silu_dot_fwd_bwd_quant_fuse(x, gy, *harness.new_outputs(128, 128))


def test_launch_settings_pick_sixteen_warps_only_when_they_need_no_more_rounds():
    eight, sixteen = (solution._launch_settings(2048, 4096, None),
                      solution._launch_settings(2048, 4096, 132))
    assert eight["num_warps"] == 8 and sixteen["num_warps"] == 16  # 512 tiles: 2 rounds either way
    assert solution._launch_settings(4096, 2560, 132)["num_warps"] == 8  # 640 tiles: 2 rounds vs 3
    assert solution._launch_settings(1024, 4096, 132)["num_warps"] == 8  # 256 tiles: one round of three
    assert solution._launch_settings(8192, 4096, 132)["num_warps"] == 8  # 2048 tiles: 6 rounds vs 8
