"""The two-pass rungs under the interpreter: Ascend's two rungs give the IEEE rungs'
bytes on every cpu_small shape (every input family on one tile, two or three on the others), bytes that pass the
judge's comparison with the reference (the one home of that for the Ascend rungs); the tolerant rung stays within one
step of the reference (the interpreter's bf16 cast truncates, as a backend's own cast may round otherwise)."""
import pytest

import harness
import solution

ASCEND_RUNGS = tuple(r for r in solution.BACKENDS["ascend"].routes if solution.ROUTE_TABLE[r].exact)
FINITE_FAMILIES = [f for f in harness.FAMILIES if f != "specials"]


def _runs(monkeypatch, route, inputs):
    """The route's outputs for each (x, gy) of inputs, on one device set up for the route (its probe and proofs run
    by the first call, as on a GPU; setting a device up costs more than a call of these shapes under the
    interpreter). Every call must have taken the route."""
    monkeypatch.setenv(solution.ROUTE_ENV, route)
    monkeypatch.setattr(solution, "_devices", {})
    outs = []
    for x, gy in inputs:
        M, H = gy.shape
        out = harness.new_outputs(M, H)
        solution.silu_dot_fwd_bwd_quant_fuse(x, gy, *out)
        assert solution.route_for("cpu") == route
        outs.append(out)
    return outs


def test_the_ascend_ladder_is_two_exact_rungs_then_the_tolerant_one():
    routes = [solution.ROUTE_TABLE[r] for r in solution.BACKENDS["ascend"].routes]
    assert [r.name for r in routes] == ["ascend_transposed", "ascend_columns", "tolerant_npu"]
    assert ASCEND_RUNGS == ("ascend_transposed", "ascend_columns")
    for route in routes:  # no scratch slot, no libdevice, the NPU's own division, a 32-byte scale store
        assert route.two_pass and not route.libdevice and route.npu_division and route.scale_groups == 8
    assert routes[0].transpose_in_registers and not routes[1].transpose_in_registers
    assert routes[0].exact and routes[1].exact and not routes[2].exact


CPU_SMALL = harness.load_shapes("cpu_small")
# A value's path through the kernels does not depend on where its tile lies: every family on the first shape
# (one tile); on the shapes of several tiles and programs the one of NaN and inf groups among finite values, the
# random one on the first of them too, and zeros where H > 128 (there its groups mix zero and nonzero values), on the
# smaller such shape. Each Ascend rung costs about 8 s a family at 384x256 under the interpreter.
SHAPES_AND_FAMILIES = [pytest.param(CPU_SMALL[0], harness.FAMILIES, id=f"{CPU_SMALL[0][0]}-every-family")] + [
    pytest.param(shape, families, id=f"{shape[0]}-{'-'.join(families)}")
    for shape, families in zip(CPU_SMALL[1:], [("randn", "specials"), ("specials", "zeros"), ("specials",)])]


@pytest.mark.parametrize("shape, families", SHAPES_AND_FAMILIES)
def test_the_ascend_rungs_give_the_ieee_rungs_bytes_on_every_family(shape, families, monkeypatch):
    _, M, H = shape
    inputs = [harness.make_inputs(M, H, seed=0, family=family) for family in families]
    expected = _runs(monkeypatch, "generic_per_element", inputs)
    for family, (x, gy), want in zip(families, inputs, expected):  # so the Ascend rungs' bytes pass it too
        result = harness.compare(want, harness.run_reference(x, gy))
        assert result["passed"], (family, result["checks"])
    for route in ASCEND_RUNGS:
        for family, out, want in zip(families, _runs(monkeypatch, route, inputs), expected):
            assert [harness.differing_bytes(o, e) for o, e in zip(out, want)] == [0, 0, 0, 0], (route, family)
            assert not any(harness.unwritten(out).values()), (route, family)


@pytest.mark.parametrize("M, H, kernel, routes", [pytest.param(128, 1024, "grad", ASCEND_RUNGS[:1], id="128-1024-grad"),
                                                  pytest.param(1024, 128, "y", ASCEND_RUNGS, id="1024-128-y")])
def test_the_ascend_rungs_store_eight_groups_scales_at_once(M, H, kernel, routes, monkeypatch):
    """H = 1024: 8 channel groups a grad_input scale store, in the grad kernel that both rungs launch alike (the first
    runs it here; their y kernels store one group's scales at a time there, as on every cpu_small shape); M = 1024: 8
    token groups a y_s_t store, in each rung's own y kernel. cpu_small reaches neither."""
    for backend in ("ascend", "interpreter"):
        plans = [solution.launch_plan(backend, M, H, route=route) for route in ASCEND_RUNGS]
        assert [plan[kernel].constexprs["GROUPS"] for plan in plans] == [8, 8]
        assert plans[0]["grad"] == plans[1]["grad"] and plans[0]["y"].kernel is not plans[1]["y"].kernel
    families = ("specials",)  # its groups of NaN and inf among finite ones
    inputs = [harness.make_inputs(M, H, seed=2, family=family) for family in families]
    expected = _runs(monkeypatch, "generic_per_element", inputs)
    for route in routes:
        for family, out, want in zip(families, _runs(monkeypatch, route, inputs), expected):
            assert [harness.differing_bytes(o, e) for o, e in zip(out, want)] == [0, 0, 0, 0], (route, family)


@pytest.mark.parametrize("route", ["tolerant", "tolerant_npu"])
def test_the_tolerant_rung_is_within_one_step_of_the_reference(route, monkeypatch):
    M, H = 128, 256
    inputs = [harness.make_inputs(M, H, seed=1, family=family) for family in FINITE_FAMILIES]
    for family, (x, gy), out in zip(FINITE_FAMILIES, inputs, _runs(monkeypatch, route, inputs)):
        totals = harness.compare(out, harness.run_reference(x, gy))["totals"]
        # One step, plus the scale's own fp32 rounding (2**-16 of a bf16 step): absmax / 127 against the
        # reference's absmax * (1 / 127).
        assert totals["scale_ulps"] <= 1 + 2**-10 and totals["int8_steps"] <= 1, (family, totals)
        assert not any(harness.unwritten(out).values()), family
    assert solution.ladder_for("cpu")[0][1].startswith("taken (not byte-exact")
