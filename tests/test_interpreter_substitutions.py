"""Each interpreter-only substitution in solution.py, proven against PyTorch under the interpreter.

The GPU path is proven by tools/exhaustive_exactness.py; these show that the CPU path, which CI runs,
computes what it stands in for.
"""
import numpy as np
import pytest
import torch
import triton
import triton.language as tl

import solution

TABLE = solution.launch_plan("nvidia", 128, 128)["sigmoid_table"]  # the table's kernel, as the solution launches it
LUT_N = solution._LUT_N


@triton.jit
def _round_kernel(src_ptr, dst_ptr, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    v = tl.load(src_ptr + offs, mask=mask)
    tl.store(dst_ptr + offs, solution.bf16_round(v, IEEE=solution.IEEE_ALL), mask=mask)


@triton.jit
def _native_cast_kernel(src_ptr, dst_ptr, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    v = tl.load(src_ptr + offs, mask=mask)
    tl.store(dst_ptr + offs, v.to(tl.bfloat16).to(tl.float32), mask=mask)


@triton.jit
def _quantize_kernel(v_ptr, s_ptr, q_ptr, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    v = tl.load(v_ptr + offs, mask=mask, other=0.0)
    s = tl.load(s_ptr + offs, mask=mask, other=1.0)
    q = solution.quantize(v, s, tl.math.div_rn(1.0, s), IEEE=solution.IEEE_ALL, CUDA_ARCH=0)
    tl.store(q_ptr + offs, q, mask=mask)


def _run(kernel, *tensors, block=1024):
    n = tensors[0].numel()
    kernel[(triton.cdiv(n, block),)](*tensors, n, BLOCK=block)


def _bf16_edge_and_random_values():
    gen = torch.Generator().manual_seed(0)
    random = torch.randn(200_000, generator=gen) * torch.exp(4 * torch.randn(200_000, generator=gen))
    # Exact ties: a bf16 value plus half its ulp, with even and odd last mantissa bits.
    base = torch.randn(50_000, generator=gen).to(torch.bfloat16)
    bits = base.view(torch.int16).to(torch.int32) << 16
    ties = (bits | 0x8000).view(torch.float32)
    special = torch.tensor([0.0, -0.0, 1.0, -1.0, 3.3895314e38, 1e-40, -1e-40, float("inf"), float("-inf")])
    return torch.cat([random, ties, special]).contiguous()


def test_bit_level_rounding_equals_torch_round_to_nearest_even():
    values = _bf16_edge_and_random_values()
    out = torch.empty_like(values)
    _run(_round_kernel, values, out)
    expected = values.to(torch.bfloat16).float()
    assert torch.equal(out.view(torch.int32), expected.view(torch.int32))


def test_interpreter_native_cast_does_not_round_to_nearest():
    # Why the substitution exists. If a Triton release fixes the interpreter, this fails and the
    # substitution in solution.bf16_round can go.
    values = _bf16_edge_and_random_values()[:200_000]
    out = torch.empty_like(values)
    _run(_native_cast_kernel, values, out)
    expected = values.to(torch.bfloat16).float()
    assert (out.view(torch.int32) != expected.view(torch.int32)).float().mean() > 0.1


def test_interpreter_quantizer_equals_torch_division_and_truncation():
    gen = torch.Generator().manual_seed(1)
    groups = (torch.randn(4096, 128, generator=gen) * torch.exp(3 * torch.randn(4096, 1, generator=gen)))
    groups = groups.to(torch.bfloat16).float()
    absmax = groups.abs().amax(dim=1, keepdim=True)
    scales = torch.clamp(absmax / 127.0, min=1e-10).expand_as(groups).contiguous()
    v = groups.contiguous()
    q = torch.empty(v.shape, dtype=torch.int8)
    _run(_quantize_kernel, v.view(-1), scales.view(-1), q.view(-1))
    expected = torch.clamp(v / scales, -127.0, 127.0).to(torch.int8)
    assert torch.equal(q, expected)
    assert int(q.abs().max()) == 127  # the full range was exercised


@triton.jit
def _sigmoid_kernel(g_ptr, out_ptr, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    tl.store(out_ptr + offs, solution.sigmoid(tl.load(g_ptr + offs, mask=mask), NO_LIBDEVICE=True,
                                                     IEEE=solution.IEEE_ALL, CUDA_ARCH=0), mask=mask)


def test_interpreter_sigmoid_with_numpy_exp_is_within_two_ulps_of_torch():
    # libdevice.exp's stand-in: over every finite bf16 gate, the sigmoid stays within 2 ulps of
    # torch.sigmoid (bit-exactness against the GPU reference is the GPU script's job).
    bits = torch.arange(-32768, 32768, dtype=torch.int32).to(torch.int16)
    gates = bits.view(torch.bfloat16).float()
    gates = gates[torch.isfinite(gates)].contiguous()
    out = torch.empty_like(gates)
    _run(_sigmoid_kernel, gates, out)
    expected = torch.sigmoid(gates)
    ulps = (out.view(torch.int32).long() - expected.view(torch.int32).long()).abs()
    normal = expected.abs() > 1.2e-38
    assert int(ulps[normal].max()) <= 2


@triton.jit
def _lookup_kernel(g_ptr, table_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    g = tl.load(g_ptr + offs)
    tl.store(out_ptr + offs, solution.sigmoid_lookup(g, table_ptr, BLOCK, NO_LIBDEVICE=True, SIGMOID_TABLE=True,
                                                     IEEE=solution.IEEE_ALL, CUDA_ARCH=0))


def _every_gate_its_table_and_direct_sigmoid():
    """All 65,536 bf16 gates (fp32, in bit order), the sigmoid table as the solution fills it, and the
    direct IEEE sigmoid of every gate."""
    gates = torch.arange(-32768, 32768, dtype=torch.int32).to(torch.int16).view(torch.bfloat16).float().contiguous()
    table = torch.empty(2 * LUT_N, dtype=torch.float32)
    TABLE.kernel[TABLE.grid](table, **TABLE.constexprs, **TABLE.options)
    direct = torch.empty_like(gates)
    _run(_sigmoid_kernel, gates, direct)
    return gates, table, direct


@pytest.mark.skipif(not hasattr(tl, "gather"), reason=f"the table is read with tl.gather, which Triton "
                    f"{triton.__version__} lacks (the solution computes the sigmoid there)")
def test_sigmoid_table_lookup_equals_the_direct_sigmoid_for_every_bf16_gate():
    # The table and the direct path share one exp here (numpy's), so equality proves the table's
    # layout, the index arithmetic and the clamping of magnitudes below 2**-25 and above 127.5 --
    # for all 65,536 bf16 bit patterns, +-0, subnormals and +-inf included (NaN gates excepted:
    # they make every output NaN through the gate itself).
    gates, table, direct = _every_gate_its_table_and_direct_sigmoid()
    looked_up = torch.empty_like(gates)
    _lookup_kernel[(gates.numel() // 4096,)](gates, table, looked_up, BLOCK=4096)
    not_nan = ~torch.isnan(gates)
    assert int(not_nan.sum()) == 65536 - 254
    differ = (direct.view(torch.int32) != looked_up.view(torch.int32)) & not_nan
    assert int(differ.sum()) == 0, gates[differ][:10]
    # The clamped ends really are constant: tiny gates give 0.5, large ones 1 (or 0 when negative).
    assert looked_up[gates.abs() < 2**-25].eq(0.5).all()
    assert looked_up[gates >= 128].eq(1.0).all() and looked_up[gates <= -128].eq(0.0).all()


@triton.jit
def _per_element_ieee_kernel(g_ptr, table_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    g = tl.load(g_ptr + offs)
    tl.store(out_ptr + offs, solution.sigmoid_lookup(g, table_ptr, BLOCK, NO_LIBDEVICE=True, SIGMOID_TABLE=False,
                                                     IEEE=solution.IEEE_ALL, CUDA_ARCH=0))


def test_the_ieee_sigmoid_per_element_reads_the_three_subnormal_ones_from_the_table():
    """sigmoid_lookup per element in the IEEE form divides with div_rn and reads the gates whose sigmoid is
    subnormal from the table: the same bits as the direct IEEE sigmoid for every bf16 gate but NaN. With the
    table's three entries marked, exactly those gates come out marked."""
    gates, table, direct = _every_gate_its_table_and_direct_sigmoid()
    per_element = torch.empty_like(gates)
    _per_element_ieee_kernel[(gates.numel() // 4096,)](gates, table, per_element, BLOCK=4096)
    not_nan = ~torch.isnan(gates)
    differ = (direct.view(torch.int32) != per_element.view(torch.int32)) & not_nan
    assert int(differ.sum()) == 0, gates[differ][:10]
    subnormal = (direct != 0) & (direct.abs() < 2.0**-126)
    assert gates[subnormal].tolist() == [-87.5, -88.0, -88.5]
    lut_lo = solution._LUT_LO
    entries = [2 * (bits - lut_lo) + 1 for bits in (0x42AF, 0x42B0, 0x42B1)]
    table[entries] = torch.tensor([1.0, 2.0, 3.0])
    _per_element_ieee_kernel[(gates.numel() // 4096,)](gates, table, per_element, BLOCK=4096)
    marked = per_element >= 1.0
    assert gates[marked & (gates < 0)].tolist() == [-87.5, -88.0, -88.5]
    assert per_element[marked & (gates < 0)].tolist() == [1.0, 2.0, 3.0]


@triton.jit
def _absmax_kernel(v_ptr, out_ptr, GROUP: tl.constexpr):
    rows = tl.program_id(0) * 4 + tl.arange(0, 4)
    v = tl.load(v_ptr + rows[:, None] * GROUP + tl.arange(0, GROUP)[None, :])
    tl.store(out_ptr + rows, solution.group_absmax(v, 1))


def test_group_absmax_keeps_nan_as_torch_amax():
    gen = torch.Generator().manual_seed(12)
    v = torch.randn(16, 128, generator=gen) * 10
    v[1, 5], v[2, 7], v[3, 9], v[4] = float("nan"), float("inf"), float("-inf"), -0.0
    v[5, 3], v[5, 4] = float("-inf"), float("nan")
    v[6, 0] = -float("nan")
    out = torch.empty(16)
    _absmax_kernel[(4,)](v, out, GROUP=128)
    expected = v.abs().amax(dim=1)
    assert torch.equal(out.isnan(), expected.isnan())
    assert torch.equal(out.nan_to_num(nan=1.0), expected.nan_to_num(nan=1.0))
    assert int(expected.isnan().sum()) == 3


@triton.jit
def _grad_groups_kernel(v_ptr, rounded_ptr, absmax_ptr, GROUP: tl.constexpr):
    rows = tl.program_id(0) * 4 + tl.arange(0, 4)
    offs = rows[:, None] * GROUP + tl.arange(0, GROUP)[None, :]
    rounded, absmax = solution.grad_groups(tl.load(v_ptr + offs), IEEE=solution.IEEE_ALL)
    tl.store(rounded_ptr + offs, rounded)
    tl.store(absmax_ptr + rows, absmax)


def test_grad_groups_keeps_a_groups_nan_in_its_max_and_rounds_every_other_element():
    """The IEEE form rounds each element with no NaN test and finds NaN in the group's max: every element but
    NaN rounds as torch's bf16 cast, and every group's max is the max of the rounded magnitudes, NaN where a
    NaN is in the group, whatever its payload (the canonical 0x7FFFFFFF carries into the sign bit when
    rounded alone, 0x7F800001 leaves inf)."""
    gen = torch.Generator().manual_seed(34)
    v = torch.randn(16, 128, generator=gen) * torch.exp(torch.randn(16, 128, generator=gen) * 8)
    bits = v.view(torch.int32)
    bits[0, :8] = torch.tensor([0x3F808000, 0x3F818000, 0x3F807FFF, 0x7F7FFFFF, 0x7F7F8000, 0x00008000,
                                0x7F800000, -0x00800000], dtype=torch.int32)  # ties, max float, subnormal, +-inf
    for row, payload in ((1, 0x7FFFFFFF), (2, 0x7F800001), (3, -0x00000001), (4, 0x7FC00000)):
        bits[row, 17] = payload  # NaNs; row 5 holds inf and a NaN
    bits[5, 3], bits[5, 90] = 0x7F800000, 0x7FFFFFFF
    rounded, absmax = torch.empty(16, 128), torch.empty(16)
    _grad_groups_kernel[(4,)](v, rounded, absmax, GROUP=128)
    expected = v.to(torch.bfloat16).float()
    not_nan = ~v.isnan()
    assert torch.equal(rounded.view(torch.int32)[not_nan], expected.view(torch.int32)[not_nan])
    expected_max = expected.abs().amax(dim=1)
    assert torch.equal(absmax.isnan(), expected_max.isnan()) and int(absmax.isnan().sum()) == 5
    assert torch.equal(absmax.nan_to_num(nan=1.0).view(torch.int32), expected_max.nan_to_num(nan=1.0).view(torch.int32))


def test_the_ieee_int8_is_0_by_the_groups_scale_not_by_the_casts_nan(monkeypatch):
    """Where the scale is NaN or inf every quotient is NaN or 0, and the IEEE int8 conversion makes it 0 from
    the scale's bits, whatever a backend's fp32 -> int32 cast does with NaN: here it gives 0x7FFFFFFF (int8
    -1 once truncated), where numpy's happens to give -2**31 (int8 0)."""
    from triton.runtime import interpreter
    original = interpreter.InterpreterBuilder.cast_impl

    def nan_to_int_max(self, src, dst_type, *rounding_mode):
        out = original(self, src, dst_type, *rounding_mode)
        if src.dtype.scalar == tl.float32 and dst_type.scalar == tl.int32:
            out.data[np.isnan(src.data)] = 0x7FFFFFFF
        return out
    monkeypatch.setattr(interpreter.InterpreterBuilder, "cast_impl", nan_to_int_max)
    nan, inf = float("nan"), float("inf")
    v = torch.tensor([1.0, -3.5, 0.0, inf, -inf, nan, 2.0**-130, 7.0] * 2)
    s = torch.tensor([nan] * 8 + [inf] * 8)
    q = torch.empty(16, dtype=torch.int8)
    _quantize_kernel[(1,)](v, s, q, 16, BLOCK=16)
    assert q.tolist() == [0] * 16
    v, s = torch.tensor([nan, 100.0, -127.0]), torch.tensor([1.0, 1.0, 1.0])  # the cast's own NaN shows
    q = torch.empty(3, dtype=torch.int8)
    _quantize_kernel[(1,)](v, s, q, 3, BLOCK=4)
    assert q.tolist() == [-1, 100, -127]
