"""The quantizer's forms under the interpreter: every bf16 value against a sample of absmax values
(zero, the 1e-10 clamp, subnormal, normal, near the largest finite, inf, NaN and random ones), each quantized
by tools/exhaustive_exactness.py's kernel in each tl form a rung runs (QUANTIZER_FORMS, the native division's
fma made exact), against PyTorch's CPU division by the kernel's own scale: the same int8 for every value of a
group. The GPU proves every pair (tools/exhaustive_exactness.py); this is the part CI can run."""
import sys

import pytest
import torch
import triton

import harness
import solution

sys.path.insert(0, str(harness.ROOT / "tools"))

import exhaustive_exactness  # noqa: E402
from fixtures.native_arithmetic import install  # noqa: E402

pytestmark = pytest.mark.skipif(not solution._INTERPRET, reason="the quantizer runs under the interpreter")


def _absmax_sample():
    values = exhaustive_exactness.all_bf16("cpu").float()
    positive = values[(values >= 0) & torch.isfinite(values)].unique()
    picked = positive[torch.randint(0, positive.numel(), (12,), generator=torch.Generator().manual_seed(3))]
    edges = torch.tensor([0.0, 2.0**-133, 1e-12, 1.2e-8, 1.1171875, 1.6171875, 9152.0, 3.0e38,
                          float("inf"), float("nan")])
    return torch.cat([edges, picked, positive[-1:]])


@pytest.mark.parametrize("form", [f for f in exhaustive_exactness.QUANTIZER_FORMS if f[1] == 0], ids=lambda f: f[0])
def test_every_value_of_a_group_quantizes_as_ieee_division_and_truncation(form, monkeypatch):
    install(monkeypatch)  # the native division's fma rounds once, as the probe proves a device's does
    _, cuda_arch, ieee_division, ieee_int8 = form
    values = exhaustive_exactness.all_bf16("cpu").float()
    v = values[~torch.isnan(values)].contiguous()
    amax = _absmax_sample()
    q = torch.empty(amax.numel(), v.numel(), dtype=torch.int8)
    scale = torch.empty(amax.numel())
    exhaustive_exactness._quant_pairs_kernel[(amax.numel(), triton.cdiv(v.numel(), 4096))](
        amax, v, q, scale, v.numel(), BLOCK=4096, CUDA_ARCH=cuda_arch, IEEE_DIVISION=ieee_division,
        IEEE_INT8=ieee_int8)
    with torch.no_grad():
        quotient = v[None, :] / scale[:, None]
    expected = torch.where(torch.isnan(quotient), 0.0, quotient.clamp(-127, 127)).to(torch.int32).to(torch.int8)
    in_group = (v.abs()[None, :] <= amax[:, None]) | ~torch.isfinite(amax)[:, None]
    assert int(in_group.sum()) > 500_000
    differ = (q != expected) & in_group
    assert not differ.any(), f"{int(differ.sum())} differences, the first at {torch.nonzero(differ)[0].tolist()}"
