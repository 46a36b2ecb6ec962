"""The proofs a rung passes before its first output, under the interpreter: the ordering check (the scratch slot's
barrier the fused rungs rely on) and the witness (the call's own kernels at its shape on real values, every output
byte compared with the host's own IEEE expectations; run several times where the rung relies on an ordering). Each
fault copy is tools/solution_copies.py's: a race (simulated: outputs that differ from one launch to the next) or a
violated ordering costs every rung relying on the ordering at once; a fault of one rung's kernels costs that rung,
and the next rung's bytes come out; a fault in the witness itself costs none."""
import math
import os
import re
import struct
import subprocess
import sys
import warnings

import pytest
import torch
import triton
import triton.language as tl

import harness
import solution

sys.path.insert(0, str(harness.ROOT / "tools"))

import solution_copies  # noqa: E402
from check import watch_compute  # noqa: E402

pytestmark = pytest.mark.skipif(not solution._INTERPRET, reason="the proofs run under the interpreter here")

FUSED = [r for r in solution.ROUTES if not solution.ROUTE_TABLE[r].two_pass]
# copy: (shape, the rungs left in order, the output, the kernel that wrote it, the rung whose bytes it gives)
FAULTS = {
    "fault_fused_y_swapped.py": ((128, 256), ["generic_per_element"], "y_q_t", "main", "plain"),
    "fault_grad_scale_neighbour.py": ((128, 256), ["plain"], "grad_input_s", "grad", "generic_per_element"),
    "fault_y_tail_unwritten.py": ((256, 128), ["plain"], "y_s_t", "grad and y", "generic_per_element"),
    "fault_y_not_kept.py": ((128, 256), ["plain"], "y_q_t", "grad and y", "generic_per_element"),
    # Faults that only real values show (gates in (-3, -1), in the fused kernel): values chosen for their known outputs
    # would not show them, nor would a region that stops at the first token group or the first 512 channels.
    "fault_real_values.py": ((128, 256), ["generic_per_element"], None, "main", "plain"),
    "fault_later_tokens.py": ((256, 128), ["generic_per_element"], None, "main", "plain"),
    "fault_later_channels.py": ((128, 640), ["generic_per_element"], None, "main", "plain"),
    # Faults that only a real row's pattern shows: gates of both signs, gates of more than 4 binades (a region whose
    # groups each held one sign and neighbouring exponents passed them: the test below).
    "fault_mixed_signs.py": ((128, 256), ["generic_per_element"], "grad_input_q", "main", "plain"),
    "fault_many_binades.py": ((128, 256), ["generic_per_element"], "grad_input_q", "main", "plain"),
}


def _said(caught):
    return [str(w.message) for w in caught if "silu_dot" in str(w.message)]


def _bytes(outputs):
    return [o.view(torch.uint8).clone() if o.dtype == torch.int8 else o.view(torch.int32).clone() for o in outputs]


def _first_call(copy, M=128, H=256, family="heavy", torch_fault=False):
    """(x, grad_y, the outputs, the solution's warnings) of a call, whose every path through the proofs (a rung left, a
    race, an arbiter's verdict) passes check.py's triton_only; but where the fault is simulated with PyTorch ops
    (torch_fault), which are the test's, not the solution's."""
    x, gy = harness.make_inputs(M, H, seed=7, family=family)
    out = harness.new_outputs(M, H)
    with warnings.catch_warnings(record=True) as caught, watch_compute((x, gy), out) as watch:
        warnings.simplefilter("always")
        copy.silu_dot_fwd_bwd_quant_fuse(x, gy, *out)
    assert torch_fault or (watch.host == [] and watch.ops == []), (watch.host, watch.ops)
    return x, gy, out, _said(caught)


def _forced_bytes(copy, route, x, gy, monkeypatch):
    monkeypatch.setattr(copy, "_devices", {})
    out = harness.new_outputs(*gy.shape)
    with harness.route_forced(route):
        copy.silu_dot_fwd_bwd_quant_fuse(x, gy, *out)
    monkeypatch.setattr(copy, "_devices", {})
    return _bytes(out)


def _witness_buffers(M, H, route="generic_per_element", channels=None):
    """The witness's x and grad_y written over M x H by its input kernel from the region's upload, and the outputs and
    scratch it poisoned."""
    x = torch.empty(M, 2 * H, dtype=torch.bfloat16)
    gy = torch.empty(M, H, dtype=torch.bfloat16)
    out = harness.new_outputs(M, H)
    scratch = torch.zeros(M * H, dtype=torch.bfloat16)
    channels = channels or solution.WITNESS_CHANNELS
    planes = solution._witness_region(channels, route == "tolerant")
    region = torch.tensor([b - ((b >> 15) << 16) for b in planes], dtype=torch.int16).view(torch.bfloat16)
    make = solution.witness_plan("interpreter", M, H, route=route)["witness_input"]
    make.kernel[make.grid](x, gy, *out, scratch, region, M, H, x.stride(0), gy.stride(0), *(o.stride(0) for o in out),
                           **{**make.constexprs, "CHANNELS": channels}, **make.options)
    return x, gy, out, scratch


def _table():
    table = torch.empty(2 * solution._LUT_N, dtype=torch.float32)
    fill = solution.witness_plan("interpreter", 128, 128, route="plain")["witness_table"]
    fill.kernel[fill.grid](table, **fill.constexprs, **fill.options)
    return table.tolist()


def test_the_ordering_is_a_field_of_the_route_and_only_the_fused_rungs_rely_on_it():
    for name, route in solution.ROUTE_TABLE.items():
        assert (route.ordering == "slot barrier") is (not route.two_pass), name
        assert route.ordering is None or route.ordering in solution.ORDERINGS
        for backend in solution.BACKENDS.values():
            if name not in backend.routes:
                continue
            plan = solution.launch_plan(backend, 1024, 2560, route=name, arch=90, sm_count=132)
            assert ("ordering" in plan) is bool(route.ordering), (backend.name, name)
            if route.ordering:  # at the route's own settings and options
                ordering, main = plan["ordering"], plan["main"]
                assert ordering.options == main.options
                assert [ordering.constexprs[k] for k in ("CHUNK", "Y_CHUNK", "CUDA_ARCH")] == [
                    main.constexprs[k] for k in ("CHUNK", "Y_CHUNK", "CUDA_ARCH")]
    assert all(solution.ROUTE_TABLE[r].ordering is None for r in solution.BACKENDS["ascend"].routes)


def test_the_witness_evicts_its_input_only_where_the_rung_relies_on_an_ordering(monkeypatch):
    """On a device: twice the L2 the device tells (else _EVICT_BYTES_UNKNOWN_L2), written before each run."""
    monkeypatch.setattr(solution, "_INTERPRET", False)
    for name, route in solution.ROUTE_TABLE.items():
        plan = solution.witness_plan("nvidia", 1024, 2560, route=name, evict_bytes=100 * 2**20)
        assert ("witness_evict" in plan) is bool(route.ordering), name
        if route.ordering:
            evict = plan["witness_evict"]
            assert evict.grid[0] * 4 * evict.constexprs["BLOCK"] >= 100 * 2**20
    evict = solution.witness_plan("nvidia", 1024, 2560, route="nvidia")["witness_evict"]
    assert evict.grid[0] * 4 * evict.constexprs["BLOCK"] == solution._EVICT_BYTES_UNKNOWN_L2


@pytest.mark.parametrize("name, mechanism_words", [
    ("fault_fused_flaky.py", "its witness's 2 runs found different wrong elements ("),
    ("fault_ordering_check.py", "its ordering check found "),
])
def test_a_race_leaves_every_fused_rung_at_once_and_the_two_pass_rungs_bytes_come_out(name, mechanism_words,
                                                                                    solution_copy_dir, monkeypatch):
    copy = harness.load_solution(solution_copy_dir / name, name=f"proofs_{name[:-3]}")
    monkeypatch.setattr(copy, "_WITNESS_RUNS", 2)  # as on a device: the interpreter runs one (no race can show)
    x, gy, out, said = _first_call(copy, torch_fault=name == "fault_fused_flaky.py")
    fused_here = [r for r in copy.BACKENDS["interpreter"].routes if r in FUSED]
    assert len(said) == 1, said
    routes = "routes" if len(fused_here) > 1 else "route"
    assert said[0].startswith(f"silu_dot_fwd_bwd_quant_fuse: left the {', '.join(fused_here)} {routes} on this "
                              f"interpreter device: {mechanism_words}"), said[0]
    assert "a race" in said[0] and "every rung relying on the slot barrier" in said[0]
    assert said[0].endswith("; taking the plain route")
    assert copy.route_for("cpu") == "plain"
    ladder = copy.ladder_for("cpu")
    assert [route for route, how in ladder if how.startswith("left")] == fused_here  # and no other
    assert [how for _, how in ladder][-2:] == ["taken", "not tried"]
    assert all(map(torch.equal, _bytes(out), _forced_bytes(copy, "plain", x, gy, monkeypatch)))


def test_a_forced_fused_route_that_races_raises_one_line(solution_copy_dir):
    copy = harness.load_solution(solution_copy_dir / "fault_ordering_check.py", name="proofs_forced_ordering")
    x, gy = harness.make_inputs(128, 128, seed=1)
    with harness.route_forced("generic_per_element"), pytest.raises(RuntimeError) as raised:
        copy.silu_dot_fwd_bwd_quant_fuse(x, gy, *harness.new_outputs(128, 128))
    message = str(raised.value)
    assert "\n" not in message and message.startswith(
        "silu_dot_fwd_bwd_quant_fuse: the generic_per_element route, the last one remaining on this interpreter "
        "device, cannot run: its ordering check found ")


@pytest.mark.parametrize("name", sorted(FAULTS))
def test_a_fault_of_a_rungs_kernels_costs_its_rungs_and_the_next_rung_gives_its_bytes(name, solution_copy_dir,
                                                                                    monkeypatch):
    (M, H), left, output, kernel, next_rung = FAULTS[name]
    copy = harness.load_solution(solution_copy_dir / name, name=f"fault_{name[:-3]}")
    x, gy, out, said = _first_call(copy, M, H)
    assert len(said) == len(left), said
    for message, rung, following in zip(said, left, left[1:] + [next_rung]):
        assert message.startswith(f"silu_dot_fwd_bwd_quant_fuse: left the {rung} route on this interpreter device: "
                                  f"its witness found "), message
        assert f" wrong elements in {output or ''}" in message and f", written by its {kernel} kernel" in message
        assert ": got " in message and ", expected " in message and message.endswith(f"; taking the {following} route")
    assert copy.route_for("cpu") == next_rung
    assert all(map(torch.equal, _bytes(out), _forced_bytes(copy, next_rung, x, gy, monkeypatch)))


@pytest.mark.parametrize("name", ["fault_mixed_signs.py", "fault_many_binades.py"])
def test_a_real_rows_fault_passes_a_region_whose_groups_hold_one_sign_and_reaches_the_user(name, solution_copy_dir,
                                                                                          monkeypatch):
    """The copies are what their names say: on the region as it was laid before its groups mixed (gate bits 512 t +
    c * step + t % step, each grad_input group one sign and at most 4 neighbouring exponents) the witness passes them,
    and their bytes on randn data are not the next rung's."""
    copy = harness.load_solution(solution_copy_dir / name, name=f"one_sign_{name[:-3]}")
    monkeypatch.setattr(copy, "_witness_gate", lambda t, c, channels: t * 512 + c * (512 // channels)
                        + t % (512 // channels))
    x, gy, out, said = _first_call(copy, family="randn")
    assert said == [] and copy.route_for("cpu") == "generic_per_element"
    assert not all(map(torch.equal, _bytes(out), _forced_bytes(copy, "plain", x, gy, monkeypatch)))


@pytest.mark.parametrize("name, shape", [("fault_later_tokens.py", (128, 256)), ("fault_later_channels.py", (128, 512))])
def test_a_later_fault_is_absent_where_its_place_is(name, shape, solution_copy_dir):
    """The copies are what their names say: within the first token group, or the first 512 channels, they are right."""
    copy = harness.load_solution(solution_copy_dir / name, name=f"absent_{name[:-3]}")
    x, gy, out, said = _first_call(copy, *shape)
    assert said == [] and copy.route_for("cpu") == "generic_per_element"


def test_the_faults_are_of_different_kinds():
    made = solution_copies.copies((harness.ROOT / "solution.py").read_text())
    original = (harness.ROOT / "solution.py").read_text()
    for name in FAULTS:
        assert made[name] != original
    kinds = {"fault_fused_y_swapped.py": "(local ^ 1)", "fault_grad_scale_neighbour.py": "(tokens ^ 1)",
             "fault_y_tail_unwritten.py": "mask=first_group + groups[None, :] < M // GROUP - 1",
             "fault_y_not_kept.py": "mask=(tokens % ROWS != 0)[:, None]",
             "fault_later_tokens.py": "(rows[:, None] >= 128)", "fault_later_channels.py": "(cols[None, :] >= 512)",
             "fault_fused_barrier_call.py": "no barrier between parking y and reading it back",
             "fault_mixed_signs.py": "(tl.min(gate, 1) < 0.0) & (tl.max(gate, 1) > 0.0)",
             "fault_many_binades.py": "tl.max(binades, 1) - tl.min(binades, 1) > 4"}
    for name, marker in kinds.items():
        assert marker in made[name] and all(marker not in made[other] for other in kinds if other != name)


def test_a_fault_in_the_witness_expectations_costs_no_rung(solution_copy_dir):
    copy = harness.load_solution(solution_copy_dir / "fault_witness_expectation.py", name="proofs_witness_fault")
    x, gy, out, said = _first_call(copy, family="randn")  # the arbiter's reads pass triton_only
    assert len(said) == 1 and said[0].startswith(
        "silu_dot_fwd_bwd_quant_fuse: the witness cannot judge the kernels on this interpreter device (its expectation "
        "of y_q_t[") and ", where its arbiter computes " in said[0], said
    assert copy.route_for("cpu") == "generic_per_element" and not copy._devices[-1].left
    assert dict(copy.ladder_for("cpu"))["generic_per_element"].startswith(
        "taken (unproven by the witness: it cannot judge ")
    assert harness.compare(out, harness.run_reference(x, gy))["passed"]


@pytest.mark.parametrize("name, proof", [("fault_witness_record_stale.py", "witness"),
                                         ("fault_ordering_record_stale.py", "ordering")])
def test_a_proof_cannot_pass_on_a_record_its_check_kernel_never_wrote(name, proof, solution_copy_dir):
    """The proof's second run finds the first run's passing record in a buffer handed back untouched, its check kernel's
    launch not run: it cannot judge, and no rung is left."""
    copy = harness.load_solution(solution_copy_dir / name, name=f"stale_{proof}")
    x, gy, out, said = _first_call(copy)
    assert len(said) == 1 and re.fullmatch(
        rf"silu_dot_fwd_bwd_quant_fuse: the {proof} cannot judge the kernels on this interpreter device \(its check "
        r"kernel did not write (\d+) of its \1 records \(one holds the stamp (\d+), not its run's (?!\2)\d+\)\): the "
        r"generic_per_element route and every later one run unproven by it", said[0]), said
    assert copy.route_for("cpu") == "generic_per_element" and not copy._devices[-1].left
    assert harness.compare(out, harness.run_reference(x, gy))["passed"]


def test_a_witness_input_the_device_wrote_wrong_costs_no_rung(monkeypatch):
    """The input is written again and read back over the reported group: an input kernel that lays out another region
    than the host's (here the upload's up at token 3, channel 9 negated) is the witness's fault."""
    monkeypatch.setattr(solution, "_devices", {})
    real = solution._witness_expectations

    def one_wrong(device, finite_only):
        lists, on_device = real(device, finite_only)
        region = on_device["region_ptr"].clone()
        region[128 * solution.WITNESS_CHANNELS + 3 * solution.WITNESS_CHANNELS + 9] *= -1
        return lists, {**on_device, "region_ptr": region}

    monkeypatch.setattr(solution, "_witness_expectations", one_wrong)
    _, _, _, said = _first_call(solution, family="randn", torch_fault=True)
    assert len(said) == 1 and said[0].startswith(
        "silu_dot_fwd_bwd_quant_fuse: the witness cannot judge the kernels on this interpreter device (its input "
        "kernel wrote (gate, up, grad_y) ("), said
    assert solution.route_for("cpu") == "generic_per_element"


def test_a_check_kernel_that_expects_wrong_costs_no_rung(monkeypatch):
    """The device's expectation of one element wrong, the host's right: the host reads the element back and judges it
    again, and the rung is kept."""
    monkeypatch.setattr(solution, "_devices", {})
    real = solution._witness_expectations

    def one_wrong(device, finite_only):
        lists, on_device = real(device, finite_only)
        changed = on_device["expected_gq_ptr"].clone()
        changed[300] = -changed[300] - 1
        return lists, {**on_device, "expected_gq_ptr": changed}

    monkeypatch.setattr(solution, "_witness_expectations", one_wrong)
    x, gy, out, said = _first_call(solution, family="randn", torch_fault=True)
    assert len(said) == 1 and said[0].startswith(
        "silu_dot_fwd_bwd_quant_fuse: the witness cannot judge the kernels on this interpreter device (its check "
        "kernel found grad_input_q[") and said[0].endswith(
        "as the host expects): the generic_per_element route and every later one run unproven by it"), said
    assert solution.route_for("cpu") == "generic_per_element" and not solution._devices[-1].left
    assert harness.compare(out, harness.run_reference(x, gy))["passed"]


@pytest.mark.parametrize("channels", [128, 512])
def test_the_input_kernel_lays_the_region_over_the_call_and_poisons_outputs_and_slots(channels):
    """At every place of the call, x and grad_y hold witness_input at the place's source (witness_source: the check
    kernel's indexing), at the interpreter's 128 channels and a device's 512."""
    for route in ("generic_per_element", "tolerant"):
        M, H = 256, max(256, channels)
        x, gy, out, scratch = _witness_buffers(M, H, route, channels)
        finite_only = route == "tolerant"
        xs, gs = x.float().tolist(), gy.float().tolist()
        for m in range(M):
            for h in range(H):
                source = solution.witness_source("grad_input_q", m, h, H, channels)[1]
                got = (xs[m][h], xs[m][H + h], gs[m][h])
                want = solution.witness_input(*source, finite_only, channels)
                assert all(map(solution._same_value, got, want)), (m, h, got)
        assert bool(torch.isfinite(x.float()).all()) == finite_only
        assert all(bool((o == -128).all()) if o.dtype == torch.int8 else bool((o == -1).all()) for o in out)
        assert scratch.float().isnan().all()
    tags = {solution._witness_tags.fn(tm, th, 512) for tm in range(2) for th in range(2)}
    assert len({t[1] for t in tags}) == len({t[2] for t in tags}) == 4  # neighbouring tiles differ in both rotations


def test_the_witness_covers_its_gates_and_its_groups_are_informative():
    """Every fourth bf16 gate pattern under the interpreter (every one on a device, where the region is 512 channels:
    checked here through the host twin), both signs of up and grad_y over a wide spread of exponents, and groups of
    zeros, NaN and inf among the expectations."""
    for channels in (128, 512):
        gates = [solution.witness_input(t, h, False, channels)[0] for t in range(128) for h in range(channels)]
        distinct = len({_bf16_bits(g) for g in gates if g == g}) + sum(g != g for g in gates)
        assert distinct == 128 * channels  # every pattern sampled, each once
        assert math.inf in gates and -math.inf in gates
    ups = [solution.witness_input(t, h)[1] for t in range(128) for h in range(solution.WITNESS_CHANNELS)]
    exponents = {math.frexp(u)[1] for u in ups if u}
    assert min(exponents) < -100 and max(exponents) > 100 and any(u < 0 for u in ups) and any(u > 0 for u in ups)
    expected = solution._witness_expected(solution.WITNESS_CHANNELS, False, _table())
    for scales in (expected["grad_input_s"], expected["y_s_t"]):
        assert any(s != s for s in scales) and any(s == solution._FLOOR_F32 for s in scales)
        assert any(math.isinf(s) for s in scales)
        assert sum(1 for s in scales if math.isfinite(s) and s > solution._FLOOR_F32) > len(scales) // 2
    for q in (expected["grad_input_q"], expected["y_q_t"]):
        assert min(q) == -127 and max(q) == 127


def _special(bits):
    return bits & 0x7F80 == 0x7F80


@pytest.mark.parametrize("channels", [128, 512])
def test_the_witness_groups_mix_signs_and_binades_as_a_users_rows_do(channels):
    """Each grad_input group (a row's 128 channels) and each y group (a channel's 128 tokens) of finite gates holds
    both signs and at least 8 binades, as a row of randn data does; the gates of exponent 255 (NaN, inf) fill groups
    of their own (on a device, two grad_input groups, wholly), and the groups of zeros and of inf are those chosen
    for them. Every other group's scale is finite, above the floor, and its int8 are not all 0."""
    groups = channels // 128
    bits = [[_bf16_bits(solution.witness_input(t, h, False, channels)[0]) for h in range(channels)] for t in range(128)]
    rows = {(t, j): bits[t][j * 128:(j + 1) * 128] for t in range(128) for j in range(groups)}
    columns = {h: [bits[t][h] for t in range(128)] for h in range(channels)}
    least = {}
    for kind, members in (("grad", rows), ("y", columns)):
        finite = [gates for gates in members.values() if not any(map(_special, gates))]
        least[kind] = (min(len({g >> 15 for g in gates}) for gates in finite),
                       min(len({(g >> 7) & 0xFF for g in gates}) for gates in finite))
        assert least[kind][0] == 2 and least[kind][1] >= 8, (kind, least[kind])
    special_rows = {key for key, gates in rows.items() if any(map(_special, gates))}
    special_columns = {h for h, gates in columns.items() if any(map(_special, gates))}
    if channels == 512:
        assert special_rows == {(63, 3), (127, 3)} and all(map(_special, rows[63, 3] + rows[127, 3]))
        assert special_columns == set(range(384, 512))
    else:
        assert special_rows == {(63, 0), (127, 0)} and special_columns == set(range(96, 128))
    expected = solution._witness_expected(channels, False, _table())
    for output, scales, keys, zero, inf in (
            ("grad_input_q", expected["grad_input_s"], [(t, half, j) for t in range(128) for half in range(2)
                                                        for j in range(groups)], {7}, {11}),
            ("y_q_t", expected["y_s_t"], list(range(channels)), {5}, {9})):
        for i, (key, scale) in enumerate(zip(keys, scales)):
            q = expected[output][i * 128:(i + 1) * 128]
            if output == "y_q_t":
                place, special = key, key in special_columns
            else:
                place, special = key[0], (key[0], key[2]) in special_rows
            if special:
                assert scale != scale, (output, key)
            elif place in zero:
                assert scale == solution._FLOOR_F32 and not any(q), (output, key)
            elif place in inf and (output == "y_q_t" or key[1] == 1):
                assert math.isinf(scale) and not any(q), (output, key)
            elif not (place in inf and output == "grad_input_q"):  # token 11's d_gate: whatever its huge grad_y makes
                assert math.isfinite(scale) and scale > solution._FLOOR_F32 and any(q), (output, key, scale)


def _flushed_groups(channels, table, flush):
    """{output: [(int8 of a group, its scale)]} of the region, element by element as _arbiter_group computes them,
    every subnormal operand and result of an fp32 operation made zero where flush (as a backend that flushes does)."""
    def f(x):
        return math.copysign(0.0, x) if flush and 0 < abs(x) < 2.0**-126 else x

    def r(x):
        return f(solution._round_f32_struct(x))

    def bf16(v):
        if v != v:
            return v
        bits = struct.unpack("<I", struct.pack("<f", v))[0]
        return f(struct.unpack("<f", struct.pack("<I", (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000))[0])

    values = {}
    for t in range(128):
        for h in range(channels):
            gate, up, gy = map(f, solution.witness_input(t, h, False, channels))
            bits = struct.unpack("<I", struct.pack("<f", gate))[0] >> 16
            sig = f(table[solution._table_entry(bits)])
            silu = r(gate * sig)
            values[t, h] = (bf16(r(r(r(gy * up) * sig) * r(1.0 + r(gate * r(1.0 - sig))))), bf16(r(gy * silu)),
                            bf16(r(silu * up)))

    def group(vs):
        nan = any(v != v for v in vs)
        r = solution._round_f32_struct
        scale = math.nan if nan else max(r(max(abs(v) for v in vs) * solution._INV_127_F32), solution._FLOOR_F32)
        return ([0] * 128 if nan or math.isinf(scale) else [math.trunc(r(v / scale)) for v in vs]), scale

    grad = [group([values[t, h][half] for h in range(j * 128, (j + 1) * 128)])
            for t in range(128) for half in range(2) for j in range(channels // 128)]
    return grad, [group([values[t, h][2] for t in range(128)]) for h in range(channels)]


@pytest.mark.parametrize("channels", [128, 512])
def test_no_expectation_depends_on_how_a_backend_treats_a_subnormal(channels):
    """The region's outputs with every subnormal input, operand and result flushed to zero are its outputs: a judge's
    chip that flushes computes the same reference. Under the interpreter (whose load of a subnormal bf16 reads 0) the
    witness's own runs show it at 128 channels; this shows it at a device's 512 too."""
    table = _table()
    kept, flushed = _flushed_groups(channels, table, False), _flushed_groups(channels, table, True)
    for output, (a, b) in zip(("grad_input", "y"), zip(kept, flushed)):
        for i, ((q, scale), (q_f, scale_f)) in enumerate(zip(a, b)):
            assert q == q_f and solution._same_value(scale, scale_f), (output, i)


def _bf16_bits(value):
    return struct.unpack("<I", struct.pack("<f", value))[0] >> 16


def test_the_arbiter_agrees_with_the_expectations_on_every_group():
    table = _table()
    channels = solution.WITNESS_CHANNELS
    for finite_only in (False, True):
        expected = solution._witness_expected(channels, finite_only, table)
        for output, scales in (("grad_input_q", "grad_input_s"), ("y_q_t", "y_s_t")):
            for index in range(0, len(expected[output]), 128):  # each group's first element: its places in the region
                t, half, c = index // (2 * channels), index // channels % 2, index % channels
                places, half = ([(t, c + i) for i in range(128)], half) if scales == "grad_input_s" else (
                    [(i, index // 128) for i in range(128)], 2)
                inputs = [solution.witness_input(*place, finite_only, channels) for place in places]
                q, scale = solution._arbiter_group(inputs, half, table)
                assert q == expected[output][index:index + 128], (output, index)
                assert solution._same_value(scale, expected[scales][index // 128]), (output, index)


@pytest.mark.parametrize("finite_only", [False, True])
def test_the_expectations_are_the_references_outputs_at_every_place(finite_only):
    """The reference's outputs of the witness's input over a 256 x 256 call, read through witness_source (the host's
    twin of the check kernel's indexing) against the expectations. The reference on the CPU divides absmax by 127
    where the GPU's multiplies by fp32(1/127), as the kernels and the expectations do: its scales within one fp32
    ulp, its int8 within one step."""
    M, H = 256, 256
    x, gy, _, _ = _witness_buffers(M, H, "tolerant" if finite_only else "generic_per_element")
    expected = solution._witness_expected(solution.WITNESS_CHANNELS, finite_only, _table())
    differing = 0
    for output, values in zip(solution.WITNESS_OUTPUTS, harness.run_reference(x, gy)):
        for row, line in enumerate(values.tolist()):
            for col, got in enumerate(line):
                want = expected[output][solution.witness_source(output, row, col, H)[0]]
                if output.endswith("s_t") or output.endswith("_s"):
                    assert solution._same_value(got, want) or abs(got - want) <= abs(want) * 2**-23, (output, row, col)
                else:
                    assert abs(got - want) <= 1, (output, row, col, got, want)
                    differing += got != want
    assert differing < M * H // 100


@pytest.mark.parametrize("rows, programs", [(8, None), (128, None), (128, 3)])
def test_the_check_kernel_finds_and_places_a_wrong_element_in_every_output_in_any_slicing(rows, programs, monkeypatch):
    """The check kernel at the device's 8-row slices and at the interpreter's whole tiles, and with fewer programs
    than tiles: on a rung's exact outputs of the witness's input, nothing wrong and every element compared; with one
    element of each output changed, that element, found and placed."""
    M, H = (128, 256) if programs is None else (256, 512)
    if programs is not None:
        monkeypatch.setattr(solution, "_WITNESS_CHECK_PROGRAMS", programs)
    monkeypatch.setattr(solution, "_devices", {})
    x, gy, _, _ = _witness_buffers(M, H)
    good = harness.new_outputs(M, H)
    with harness.route_forced("plain"):
        solution.silu_dot_fwd_bwd_quant_fuse(x, gy, *good)
    device = solution._devices[-1]
    check = solution.witness_plan("interpreter", M, H, route="generic_per_element")["witness_check"]
    assert programs is None or check.grid[0] == programs
    _, on_device = solution._witness_expectations(device, False)

    def findings(outputs):
        record = torch.empty(check.grid[0] * 16, dtype=torch.int32)
        expected = (on_device[f"expected_{short}_ptr"] for short in ("gq", "gs", "yq", "ys"))
        check.kernel[check.grid](*outputs, *expected, record, 1, M, H, *(o.stride(0) for o in outputs),
                                 **{**check.constexprs, "SLICE": rows}, **check.options)
        return solution.witness_findings(record.tolist(), H)

    totals = [o.numel() for o in good]
    assert [f[:2] for f in findings(good)] == [(0, total) for total in totals]
    places = ({"grad_input_q": (37, 300), "grad_input_s": (101, 3), "y_q_t": (77, 21), "y_s_t": (250, 0)}
              if programs is None else
              {"grad_input_q": (200, 900), "grad_input_s": (255, 7), "y_q_t": (460, 250), "y_s_t": (511, 1)})
    for i, (name, (row, col)) in enumerate(places.items()):
        wrong = [r.clone() for r in good]
        wrong[i][row, col] = -5 if wrong[i].dtype == torch.int8 and wrong[i][row, col] != -5 else 7.0
        found = findings(wrong)
        assert found[i] == (1, totals[i], (row, col)), (name, found)
        assert all(f[0] == 0 for j, f in enumerate(found) if j != i)


def test_a_tolerant_rung_passes_its_witness_within_its_bounds(monkeypatch):
    for route in ("tolerant", "tolerant_npu"):
        monkeypatch.setattr(solution, "_devices", {})
        with harness.route_forced(route):
            _, _, _, said = _first_call(solution, family="randn")
        assert said == [], said


def test_each_proof_runs_once_for_what_it_proves(monkeypatch):
    """The ordering check once per launch settings, the witness once per shape and specialization: a second call of
    a shape runs neither, a new shape the witness alone, and a misaligned view (another specialization) it again."""
    monkeypatch.setattr(solution, "_devices", {})
    runs = []
    for proof, run in list(solution._PROOF_RUNS.items()):
        monkeypatch.setitem(solution._PROOF_RUNS, proof,
                            lambda device, key, *a, proof=proof, run=run: runs.append((proof, key[:2])) or run(
                                device, key, *a))
    for M, H in ((128, 256), (128, 256), (256, 128)):
        x, gy = harness.make_inputs(M, H, seed=1)
        solution.silu_dot_fwd_bwd_quant_fuse(x, gy, *harness.new_outputs(M, H))
    wide = torch.empty(256, 2 * 128 + 8, dtype=torch.bfloat16)[:, 1:257]  # misaligned rows: another specialization
    wide.copy_(x)
    solution.silu_dot_fwd_bwd_quant_fuse(wide, gy, *harness.new_outputs(256, 128))
    assert runs == [("ordering", (128, 256)), ("witness", (128, 256)), ("witness", (256, 128)),
                    ("witness", (256, 128))]


def test_the_table_filled_while_the_children_compile_is_the_devices_own(monkeypatch):
    """Where the table's child has compiled it, the parent fills the device's table at once and computes the
    expectations from it, while the other children compile; the compile's stand-in arguments are left alone (a
    stand-in table filled in its place cost Triton 3.1 its table on the H100)."""
    monkeypatch.setattr(solution, "_devices", {})
    with harness.route_forced("plain"):  # its table is the witness's
        _first_call(solution, family="randn")
    device = solution._devices[-1]
    filled = device.table.clone()
    device.table.fill_(0.25)
    device.table_values, device.expectations = None, {}
    pairs = solution._stand_ins(solution.witness_plan(device.backend, 128, 128, route=device.route).values(), device)
    stand_in = dict(zip((launch.name for launch, _ in pairs), (args for _, args in pairs)))["witness_table"]
    for a in stand_in:
        if isinstance(a, torch.Tensor):
            a.fill_(0)
    asked = []
    solution._witness_host_work(device, pairs, lambda i: asked.append(pairs[i][0].name) or "compiled")
    assert asked == ["witness_table"] and torch.equal(device.table, filled)
    assert device.table_values == filled.tolist() and False in device.expectations
    assert all(not a.any() for a in stand_in if isinstance(a, torch.Tensor))


def test_an_ordering_check_that_does_not_compile_costs_the_proof_not_the_rung(monkeypatch):
    """The check's own compile failing says the ordering cannot be judged here, in one warning, and keeps the rung
    (the witness's runs still stand behind it)."""
    monkeypatch.setattr(solution, "_devices", {})
    real = solution._compile

    def refusing(launch, args):
        if launch.name == "ordering":
            raise RuntimeError("PassManager::run failed")
        return real(launch, args)

    monkeypatch.setattr(solution, "_compile", refusing)
    x, gy, out, said = _first_call(solution, family="randn")
    assert len(said) == 1 and said[0].startswith(
        "silu_dot_fwd_bwd_quant_fuse: the ordering cannot judge the kernels on this interpreter device (its ordering "
        "kernel does not compile (RuntimeError: PassManager::run failed)): the generic_per_element route"), said
    assert solution.route_for("cpu") == "generic_per_element" and not solution._devices[-1].left
    assert harness.compare(out, harness.run_reference(x, gy))["passed"]


def test_a_forced_route_whose_witness_fails_raises_one_line(solution_copy_dir):
    copy = harness.load_solution(solution_copy_dir / "fault_fused_y_swapped.py", name="forced_fused_y_swapped")
    x, gy = harness.make_inputs(128, 128, seed=1)
    with harness.route_forced("generic_per_element"), pytest.raises(RuntimeError) as raised:
        copy.silu_dot_fwd_bwd_quant_fuse(x, gy, *harness.new_outputs(128, 128))
    message = str(raised.value)
    assert "\n" not in message and message.startswith(
        "silu_dot_fwd_bwd_quant_fuse: the generic_per_element route, the last one remaining on this interpreter "
        "device, cannot run: its witness found ") and "in y_q_t on real values, written by its main kernel" in message


def test_check_refuses_a_forced_route_whose_witness_fails_in_one_line(solution_copy_dir):
    """check.py (and bench.py, which needs a GPU: its records under results/) print the first call's error as one
    line and exit 1 (harness.cannot_run, shared by both)."""
    proc = subprocess.run([sys.executable, str(harness.ROOT / "check.py"), "--solution",
                           str(solution_copy_dir / "fault_fused_y_swapped.py"), "--route", "generic_per_element",
                           "--shapes", "128x128", "--seeds", "1", "--families", "randn"], capture_output=True, text=True,
                          cwd=harness.ROOT, env={**os.environ, "PYTHONWARNINGS": "ignore"}, timeout=600)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 1 and len(lines) == 1, proc.stdout + proc.stderr
    assert lines[0].startswith("check.py: error: the solution's forced route generic_per_element cannot run here: its "
                               "first call raised RuntimeError: silu_dot_fwd_bwd_quant_fuse: the generic_per_element "
                               "route, the last one remaining on this interpreter device, cannot run: its witness found "), lines[0]


def test_a_shape_not_yet_proven_refuses_graph_capture_in_one_line(monkeypatch):
    monkeypatch.setattr(solution, "_devices", {})
    x, gy = harness.make_inputs(128, 128, seed=1)
    solution.silu_dot_fwd_bwd_quant_fuse(x, gy, *harness.new_outputs(128, 128))
    device = solution._devices[-1]

    class Capturing:
        @staticmethod
        def is_current_stream_capturing():
            return True

        @staticmethod
        def current_device():
            return device.index

    monkeypatch.setattr(device, "module", Capturing)
    solution.silu_dot_fwd_bwd_quant_fuse(x, gy, *harness.new_outputs(128, 128))  # proven: captured as it is
    x, gy = harness.make_inputs(256, 128, seed=1)
    with pytest.raises(RuntimeError, match=r"^silu_dot_fwd_bwd_quant_fuse: the first call of each shape proves its "
                                           r"kernels on the device and reads the verdict back, which a graph capture "
                                           r"cannot hold: call it once before capturing$"):
        solution.silu_dot_fwd_bwd_quant_fuse(x, gy, *harness.new_outputs(256, 128))


@pytest.mark.parametrize("route", ["generic_per_element", "plain", "tolerant"])
def test_the_first_call_with_its_witness_runs_no_pytorch_compute(route, monkeypatch):
    monkeypatch.setattr(solution, "_devices", {})
    x, gy = harness.make_inputs(128, 256, seed=4)
    out = harness.new_outputs(128, 256)
    with harness.route_forced(route), watch_compute((x, gy), out) as watch:
        solution.silu_dot_fwd_bwd_quant_fuse(x, gy, *out)
    assert watch.ops == [] and watch.host == []
    assert watch.launches >= 4  # the input, the call's own kernels, the check, the call
    # The witness's region and expectations, uploaded in this call, reach no launch that takes the outputs: the
    # witness's launches work in buffers of its own.
    assert watch.compared_launches == 0
