"""The proofs of issue 44, under the interpreter: the ordering the fused rungs rely on (the ordering check, and the
self-test run twice), and the witness, every rung's kernels on real values. Each fault copy is tools/solution_copies.py's:
a race (simulated: outputs that differ from one launch to the next) or a violated ordering costs every rung relying on
the ordering, at once; a fault only real values show costs its one rung; a fault in the witness costs none."""
import math
import warnings

import pytest
import torch

import harness
import solution

pytestmark = pytest.mark.skipif(not solution._INTERPRET, reason="the proofs run under the interpreter here")

FUSED = [r for r in solution.ROUTES if not solution.ROUTE_TABLE[r].two_pass]


def _said(caught):
    return [str(w.message) for w in caught if "silu_dot" in str(w.message)]


def _bytes(outputs):
    return [o.view(torch.uint8).clone() if o.dtype == torch.int8 else o.view(torch.int32).clone() for o in outputs]


def _first_call(copy, M=128, H=256, family="heavy"):
    x, gy = harness.make_inputs(M, H, seed=7, family=family)
    out = harness.new_outputs(M, H)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        copy.silu_dot_fwd_bwd_quant_fuse(x, gy, *out)
    return x, gy, out, _said(caught)


def _forced_bytes(copy, route, x, gy, monkeypatch):
    monkeypatch.setattr(copy, "_devices", {})
    out = harness.new_outputs(*gy.shape)
    with harness.route_forced(route):
        copy.silu_dot_fwd_bwd_quant_fuse(x, gy, *out)
    monkeypatch.setattr(copy, "_devices", {})
    return _bytes(out)


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


@pytest.mark.parametrize("name, mechanism_words", [
    ("fault_fused_flaky.py", "its self-test's 2 runs found different wrong elements ("),
    ("fault_ordering_check.py", "its ordering check found "),
])
def test_a_race_leaves_every_fused_rung_at_once_and_the_two_pass_rungs_bytes_come_out(name, mechanism_words,
                                                                                    solution_copy_dir, monkeypatch):
    copy = harness.load_solution(solution_copy_dir / name, name=f"proofs_{name[:-3]}")
    monkeypatch.setattr(copy, "_SELF_TEST_RUNS", 2)  # as on a device: the interpreter runs one (no race can show)
    x, gy, out, said = _first_call(copy)
    fused_here = [r for r in copy.BACKENDS["interpreter"].routes if r in FUSED]
    assert len(said) == 1, said
    assert said[0].startswith(f"silu_dot_fwd_bwd_quant_fuse: left the {', '.join(fused_here)} routes on this "
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
    with harness.route_forced("generic"), pytest.raises(RuntimeError) as raised:
        copy.silu_dot_fwd_bwd_quant_fuse(x, gy, *harness.new_outputs(128, 128))
    message = str(raised.value)
    assert "\n" not in message and message.startswith(
        "silu_dot_fwd_bwd_quant_fuse: the generic route, the last one left on this interpreter device, cannot run: its "
        "ordering check found ")


def test_a_fault_only_real_values_show_costs_its_one_rung(solution_copy_dir, monkeypatch):
    """The fault is in the fused kernel's math for gates in (-3, -1), on the table rung only: the probe does not run
    that code and the self-test never uses such gates; the witness leaves that rung, and the next gives its bytes."""
    copy = harness.load_solution(solution_copy_dir / "fault_real_values.py", name="proofs_real_values")
    x, gy, out, said = _first_call(copy)
    assert len(said) == 1 and said[0].startswith(
        "silu_dot_fwd_bwd_quant_fuse: left the generic route on this interpreter device: its witness found "), said
    assert " on real values, written by its main kernel, first found at [" in said[0]
    assert said[0].endswith("; taking the generic_per_element route")
    assert copy.route_for("cpu") == "generic_per_element"
    assert all(map(torch.equal, _bytes(out), _forced_bytes(copy, "generic_per_element", x, gy, monkeypatch)))


def test_a_fault_in_the_witness_costs_no_rung(solution_copy_dir):
    copy = harness.load_solution(solution_copy_dir / "fault_witness_expectation.py", name="proofs_witness_fault")
    x, gy, out, said = _first_call(copy, family="randn")
    assert len(said) == 1 and said[0].startswith(
        "silu_dot_fwd_bwd_quant_fuse: the witness cannot judge the kernels on this interpreter device (its expectation "
        "of y_q_t[") and ", where its arbiter computes " in said[0], said
    assert copy.route_for("cpu") == "generic" and not copy._devices[-1].left
    assert dict(copy.ladder_for("cpu"))["generic"].startswith("taken (unproven by the witness: it cannot judge ")
    assert harness.compare(out, harness.run_reference(x, gy))["passed"]


def test_a_witness_input_the_device_wrote_wrong_costs_no_rung(monkeypatch):
    """The arbiter reads the input back over the reported group: an input kernel that disagrees with its host twin
    is the witness's fault."""
    real = solution.witness_input
    monkeypatch.setattr(solution, "_devices", {})
    monkeypatch.setattr(solution, "_witness_inputs", {})
    monkeypatch.setattr(solution, "witness_input",
                        lambda t, h, *a: (real(t, h, *a)[0], -real(t, h, *a)[1], real(t, h, *a)[2]) if (t, h) == (3, 9)
                        else real(t, h, *a))
    _, _, _, said = _first_call(solution, family="randn")
    assert len(said) == 1 and said[0].startswith(
        "silu_dot_fwd_bwd_quant_fuse: the witness cannot judge the kernels on this interpreter device (its input "
        "kernel wrote (gate, up, grad_y) ("), said
    assert solution.route_for("cpu") == "generic"


def test_the_witness_input_kernel_writes_its_host_twin_and_zeros_outside_the_region():
    for finite_only in (False, True):
        M, H = 256, 256  # larger than the region (128 x 128 under the interpreter) both ways
        x = torch.empty(M, 2 * H, dtype=torch.bfloat16)
        gy = torch.empty(M, H, dtype=torch.bfloat16)
        route = "tolerant" if finite_only else "generic"
        make = solution.self_test_plan("interpreter", M, H, route=route)["witness_input"]
        make.kernel[(M // 128 * (H // 128), 1, 1)](x, gy, M, H, x.stride(0), gy.stride(0), **make.constexprs,
                                                  **make.options)
        xs, gs = x.float().tolist(), gy.float().tolist()
        channels = solution.WITNESS_CHANNELS
        for t in range(M):
            for h in range(H):
                got = (xs[t][h], xs[t][H + h], gs[t][h])
                want = solution.witness_input(t, h, finite_only) if t < 128 and h < channels else (0.0, 0.0, 0.0)
                assert all(map(solution._same_value, got, want)), (t, h, got, want)
        gates = [solution.witness_input(t, h, finite_only)[0] for t in range(128) for h in range(channels)]
        assert any(g != g for g in gates) is not finite_only  # inf gates: the device's region (the coverage test)


def test_the_witness_covers_its_gates_and_its_groups_are_informative():
    """Every fourth bf16 gate pattern under the interpreter (every one on a device, where the region is 512 channels:
    checked here through the host twin), both signs of up and grad_y over a wide spread of exponents, and groups of
    zeros, NaN and inf among the expectations."""
    for channels in (128, 512):
        gates = [solution.witness_input(t, h, False, channels)[0] for t in range(128) for h in range(channels)]
        distinct = len({struct_bits(g) for g in gates if g == g}) + sum(g != g for g in gates)
        assert distinct == 128 * channels  # every pattern sampled, each once
        assert math.inf in gates and -math.inf in gates or channels < 512
    ups = [solution.witness_input(t, h)[1] for t in range(128) for h in range(solution.WITNESS_CHANNELS)]
    exponents = {math.frexp(u)[1] for u in ups if u}
    assert min(exponents) < -100 and max(exponents) > 100 and any(u < 0 for u in ups) and any(u > 0 for u in ups)
    table = _table()
    expected = solution._witness_expected(solution.WITNESS_CHANNELS, False, table)
    for scales in (expected["grad_input_s"], expected["y_s_t"]):
        assert any(s != s for s in scales) and any(s == solution._FLOOR_F32 for s in scales)
        assert sum(1 for s in scales if math.isfinite(s) and s > solution._FLOOR_F32) > len(scales) // 3
    assert any(math.isinf(s) for s in expected["grad_input_s"])
    for q in (expected["grad_input_q"], expected["y_q_t"]):
        assert min(q) == -127 and max(q) == 127


def struct_bits(value):
    import struct
    return struct.unpack("<I", struct.pack("<f", value))[0] >> 16


def _table():
    table = torch.empty(2 * solution._LUT_N, dtype=torch.float32)
    fill = solution.self_test_plan("interpreter", 128, 128, route="plain")["witness_table"]
    fill.kernel[fill.grid](table, **fill.constexprs, **fill.options)
    return table.tolist()


def test_the_arbiter_agrees_with_the_expectations_on_every_group():
    table = _table()
    channels = solution.WITNESS_CHANNELS
    for finite_only in (False, True):
        expected = solution._witness_expected(channels, finite_only, table)
        for output, per in (("grad_input_q", 128), ("y_q_t", 128)):
            for index in range(0, len(expected[output]), per):
                q, scale = solution._arbiter_group(output, index, channels, finite_only, table)
                scales = "grad_input_s" if output == "grad_input_q" else "y_s_t"
                assert q == expected[output][index:index + per], (output, index)
                assert solution._same_value(scale, expected[scales][index // per]), (output, index)


@pytest.mark.parametrize("finite_only", [False, True])
def test_the_expectations_are_the_references_outputs_on_the_witness_input(finite_only):
    """The reference on the CPU divides absmax by 127 where the GPU's multiplies by fp32(1/127), as the kernels and the
    expectations do: its scales within one fp32 ulp, its int8 within one step, of the expectations."""
    channels = solution.WITNESS_CHANNELS
    x = torch.empty(128, 2 * channels, dtype=torch.bfloat16)
    gy = torch.empty(128, channels, dtype=torch.bfloat16)
    make = solution.self_test_plan("interpreter", 128, channels, route="tolerant" if finite_only else "plain")
    make = make["witness_input"]
    make.kernel[make.grid](x, gy, 128, channels, x.stride(0), gy.stride(0), **make.constexprs, **make.options)
    reference = harness.run_reference(x, gy)
    got = solution._witness_region(reference, channels, channels)
    expected = solution._witness_expected(channels, finite_only, _table())
    for output in solution.SELF_TEST_OUTPUTS:
        for a, b in zip(got[output], expected[output]):
            if output.endswith("_s") or output == "y_s_t":
                assert solution._same_value(a, b) or abs(a - b) <= abs(b) * 2**-23, (output, a, b)
            else:
                assert abs(a - b) <= 1, (output, a, b)
    differing = sum(a != b for a, b in zip(got["y_q_t"], expected["y_q_t"]))
    assert differing < len(expected["y_q_t"]) // 100


def test_the_witness_runs_the_calls_binaries_at_its_shape():
    """For every backend, route and benchmark shape, the launches planned at the witness's shape with the call's
    settings are the call's: the same kernels, constexprs and options (the binary a specialization gives)."""
    shapes = [(M, H) for _, M, H in harness.load_shapes("benchmark")] + [(128, 128), (1152, 1408), (640, 5120)]
    for backend in solution.BACKENDS.values():
        for name in backend.routes:
            route = solution.ROUTE_TABLE[name]
            for M, H in shapes:
                try:
                    settings = solution.launch_settings(backend, M, H, 132, route, None, 3)
                    call = solution.launch_plan(backend, M, H, route=name, arch=90, sm_count=132, settings=settings)
                except ValueError:
                    continue
                Mw, Hw = solution._witness_shape(route, M, H)
                assert Mw >= 128 and Hw >= solution.WITNESS_CHANNELS and M % 128 == 0 and H % 128 == 0
                witness = solution.launch_plan(backend, Mw, Hw, route=name, arch=90, sm_count=132, settings=settings)
                for launch in solution._call_kernels(call):
                    mine = witness[launch.name]
                    assert (mine.kernel, mine.constexprs, mine.options) == (launch.kernel, launch.constexprs,
                                                                            launch.options), (backend.name, name, M, H)


def test_a_tolerant_rung_passes_its_witness_within_its_bounds(monkeypatch):
    for route in ("tolerant", "tolerant_npu"):
        monkeypatch.setattr(solution, "_devices", {})
        with harness.route_forced(route):
            _, _, _, said = _first_call(solution, family="randn")
        assert said == [], said


def test_each_proof_runs_once_for_what_it_proves(monkeypatch):
    """The ordering check once per launch settings, the self-test once per shape and specialization, the witness
    once per binary: a second shape of the same binaries runs the self-test alone."""
    monkeypatch.setattr(solution, "_devices", {})
    runs = []
    for proof, run in list(solution._PROOF_RUNS.items()):
        monkeypatch.setitem(solution._PROOF_RUNS, proof,
                            lambda device, key, *a, proof=proof, run=run: runs.append((proof, key[:2])) or run(
                                device, key, *a))
    for M, H in ((128, 256), (128, 256), (256, 128)):
        x, gy = harness.make_inputs(M, H, seed=1)
        solution.silu_dot_fwd_bwd_quant_fuse(x, gy, *harness.new_outputs(M, H))
    assert runs == [("ordering", (128, 256)), ("self-test", (128, 256)), ("witness", (128, 256)),
                    ("self-test", (256, 128))]


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
    pairs = device._proof_pairs(128, 128, False, device._stand_in_arguments())
    stand_in = dict(zip((launch.name for launch, _ in pairs), (args for _, args in pairs)))["witness_table"]
    for a in stand_in:
        if isinstance(a, torch.Tensor):
            a.fill_(0)
    asked = []
    device._witness_meanwhile(pairs, lambda i: asked.append(pairs[i][0].name) or "compiled")
    assert asked == ["witness_table"] and torch.equal(device.table, filled)
    assert device.table_values == filled.tolist() and False in device.expectations
    assert all(not a.any() for a in stand_in if isinstance(a, torch.Tensor))


def test_an_ordering_check_that_does_not_compile_costs_the_proof_not_the_rung(monkeypatch):
    """The check's own compile failing says the ordering cannot be judged here, in one warning, and keeps the rung
    (the self-test's two runs still stand behind it)."""
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
        "kernel does not compile (RuntimeError: PassManager::run failed)): the generic route"), said
    assert solution.route_for("cpu") == "generic" and not solution._devices[-1].left
    assert harness.compare(out, harness.run_reference(x, gy))["passed"]


def test_the_self_test_poisons_the_scratch_a_stale_read_would_meet():
    M, H = 256, 128
    x = torch.empty(M, 2 * H, dtype=torch.bfloat16)
    gy = torch.empty(M, H, dtype=torch.bfloat16)
    out = harness.new_outputs(M, H)
    scratch = torch.zeros(M * H, dtype=torch.bfloat16)
    make = solution.self_test_plan("interpreter", M, H, route="generic")["self_test_input"]
    make.kernel[make.grid](x, gy, *out, scratch, M, H, x.stride(0), gy.stride(0), *(o.stride(0) for o in out),
                           **make.constexprs, **make.options)
    assert scratch.float().isnan().all()
