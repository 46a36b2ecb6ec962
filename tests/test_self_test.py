"""The self-test (issue 40): before a rung's kernels write a call's outputs at a new shape or specialization, they
run on an input whose exact outputs are known by construction, and a rung that writes one wrong byte is left
for the next rung, with one warning that names the kernel, the output and the first wrong element. Under the
interpreter: the expectations against the reference, one structural fault per kernel family (each of a kind no
probe sees), a fault in the self-test's own expectations, a forced route, graph capture and triton_only."""
import os
import subprocess
import sys
import warnings

import pytest
import torch

import harness
import solution

sys.path.insert(0, str(harness.ROOT / "tools"))

import solution_copies  # noqa: E402
from check import watch_compute  # noqa: E402

pytestmark = pytest.mark.skipif(not solution._INTERPRET, reason="the self-test runs under the interpreter here")

# copy: (shape, the rungs left in order, the output, the kernel that wrote it, the rung whose bytes it gives)
FAULTS = {
    "fault_fused_y_swapped.py": ((128, 256), ["generic", "generic_per_element"], "y_q_t", "main", "plain"),
    "fault_grad_scale_neighbour.py": ((128, 256), ["plain"], "grad_input_s", "grad", "generic"),
    "fault_y_tail_unwritten.py": ((256, 128), ["plain"], "y_s_t", "y", "generic"),
}


@pytest.fixture(scope="module")
def copies(solution_copy_dir):
    return solution_copy_dir


def _silu_warnings(caught):
    return [str(w.message) for w in caught if "silu_dot" in str(w.message)]


def _bytes(outputs):
    return [o.view(torch.uint8).clone() if o.dtype == torch.int8 else o.view(torch.int32).clone() for o in outputs]


@pytest.mark.parametrize("finite_only", [False, True])
def test_the_expectations_are_the_references_outputs_of_the_input(finite_only):
    """The host's twin of the input is what the input kernel writes, and the twin's expected values are the
    reference's own outputs of that input, element for element (every tile kind: 256 x 512 holds all seven)."""
    M, H = 256, 512
    assert {(3 * tm + th) % 7 for tm in range(M // 128) for th in range(H // 128)} == set(range(7))
    x = torch.empty(M, 2 * H, dtype=torch.bfloat16)
    gy = torch.empty(M, H, dtype=torch.bfloat16)
    out = harness.new_outputs(M, H)
    make = solution.self_test_plan("interpreter", M, H, route="tolerant" if finite_only else "generic")["self_test_input"]
    make.kernel[make.grid](x, gy, *out, torch.empty(M * H, dtype=torch.bfloat16), M, H, x.stride(0), gy.stride(0),
                           *(o.stride(0) for o in out),
                           **make.constexprs, **make.options)
    xs, gs = x.float().tolist(), gy.float().tolist()
    for m in range(M):
        for h in range(H):
            got = (xs[m][h], xs[m][H + h], gs[m][h])
            assert all(map(solution._same_value, got, solution.self_test_input(m, h, finite_only))), (m, h, got)
    assert all(torch.isfinite(x.float()).all() for _ in [0]) or not finite_only
    for name, values in zip(solution.SELF_TEST_OUTPUTS, harness.run_reference(x, gy)):
        for r, row in enumerate(values.tolist()):
            for c, v in enumerate(row):
                assert solution._same_value(float(v), float(solution.self_test_expected(name, r, c, H, finite_only))), \
                    (name, r, c, v)
    # Every kind of group the input promises: int8 at +-127, scales at the floor, NaN and inf.
    ref = harness.run_reference(x, gy)
    assert ref[0].min() == -127 and ref[0].max() == 127 and ref[2].min() == -127 and ref[2].max() == 127
    floor = torch.tensor(1e-10, dtype=torch.float32)
    for scales in (ref[1], ref[3]):
        assert (scales == floor).any() and (scales.isnan().any() != finite_only) and (scales.isinf().any() != finite_only)


@pytest.mark.parametrize("name", sorted(FAULTS))
def test_a_structural_fault_costs_its_rungs_and_the_next_rung_gives_its_bytes(name, copies, monkeypatch):
    (M, H), left, output, kernel, next_rung = FAULTS[name]
    copy = harness.load_solution(copies / name, name=f"structural_{name[:-3]}")
    x, gy = harness.make_inputs(M, H, seed=7, family="heavy")
    with harness.route_forced(next_rung):
        expected = harness.new_outputs(M, H)
        copy.silu_dot_fwd_bwd_quant_fuse(x, gy, *expected)
    monkeypatch.setattr(copy, "_devices", {})
    out = harness.new_outputs(M, H)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        copy.silu_dot_fwd_bwd_quant_fuse(x, gy, *out)
    said = _silu_warnings(caught)
    assert len(said) == len(left), said
    for message, rung, following in zip(said, left, left[1:] + [next_rung]):
        assert message.startswith(f"silu_dot_fwd_bwd_quant_fuse: left the {rung} route on this interpreter device: "
                                  f"its self-test found ")
        assert f" wrong elements in {output}, written by its {kernel} kernel, first found at [" in message
        assert ": got " in message and ", expected " in message and message.endswith(f"; taking the {following} route")
    assert copy.route_for("cpu") == next_rung
    assert all(map(torch.equal, _bytes(out), _bytes(expected))), "the bytes differ from the next rung's own"
    # The same shape again runs the rung it took, proven, without a second self-test or warning.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        copy.silu_dot_fwd_bwd_quant_fuse(x, gy, *out)
    assert not _silu_warnings(caught)


def test_the_faults_are_of_different_kinds_and_none_is_in_the_probes_arithmetic():
    made = solution_copies.copies((harness.ROOT / "solution.py").read_text())
    original = (harness.ROOT / "solution.py").read_text()
    for name in FAULTS:
        assert made[name] != original
    kinds = {"fault_fused_y_swapped.py": "(local ^ 1)", "fault_grad_scale_neighbour.py": "(tokens ^ 1)",
             "fault_y_tail_unwritten.py": "mask=first_group + groups[None, :] < M // GROUP - 1"}
    for name, marker in kinds.items():
        assert marker in made[name] and all(marker not in made[other] for other in kinds if other != name)


def test_a_fault_in_the_self_tests_expectations_keeps_the_rung_and_says_so(copies, monkeypatch):
    """A check kernel whose expectation is wrong where the rung is right is caught by the host's twin, which reads
    the element back and judges it again: the rung is kept, and the warning says the self-test cannot judge this
    device."""
    copy = harness.load_solution(copies / "fault_self_test_expectation.py", name="self_test_expectation")
    x, gy = harness.make_inputs(128, 256, seed=3, family="randn")
    out = harness.new_outputs(128, 256)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        copy.silu_dot_fwd_bwd_quant_fuse(x, gy, *out)
    said = _silu_warnings(caught)
    assert len(said) == 1 and said[0].startswith(
        "silu_dot_fwd_bwd_quant_fuse: the self-test cannot judge the kernels on this interpreter device (its check "
        "kernel found grad_input_q[") and "wrong, but it holds " in said[0] and said[0].endswith(
        "as the host expects): the generic route and every later one run unproven by it")
    assert copy.route_for("cpu") == "generic" and not copy._devices[-1].left
    taken = dict(copy.ladder_for("cpu"))["generic"]
    assert taken.startswith("taken (unproven by the self-test: it cannot judge this device: its check kernel found ")
    assert harness.compare(out, harness.run_reference(x, gy))["passed"]


def test_an_input_kernel_fault_is_told_apart_from_the_rungs(copies, monkeypatch):
    """An input the device wrote wrong is read back over the reported group and found to be the self-test's fault."""
    M, H = 128, 128
    x_test = torch.empty(M, 2 * H, dtype=torch.bfloat16)
    gy_test = torch.empty(M, H, dtype=torch.bfloat16)
    for m in range(M):
        for h in range(H):
            gate, up, gy = solution.self_test_input(m, h)
            x_test[m, h], x_test[m, H + h], gy_test[m, h] = gate, up, gy
    assert solution._self_test_input_fault("y_q_t", 5, 9, H, x_test, gy_test, False) is None
    gy_test[17, 5] = 3.0
    assert solution._self_test_input_fault("y_q_t", 6, 9, H, x_test, gy_test, False) is None  # not in that group
    assert solution._self_test_input_fault("grad_input_q", 17, 130, H, x_test, gy_test, False) == (
        f"its input kernel wrote grad_y 3.0 at [17, 5] where the host expects {solution.self_test_input(17, 5)[2]!r}")


def test_a_forced_route_whose_self_test_fails_raises_one_line(copies, monkeypatch):
    copy = harness.load_solution(copies / "fault_fused_y_swapped.py", name="forced_fused_y_swapped")
    x, gy = harness.make_inputs(128, 128, seed=1)
    with harness.route_forced("generic"), pytest.raises(RuntimeError) as raised:
        copy.silu_dot_fwd_bwd_quant_fuse(x, gy, *harness.new_outputs(128, 128))
    message = str(raised.value)
    assert "\n" not in message and message.startswith(
        "silu_dot_fwd_bwd_quant_fuse: the generic route, the last one left on this interpreter device, cannot run: "
        "its self-test found ") and "in y_q_t, written by its main kernel" in message


def test_check_refuses_a_forced_route_whose_self_test_fails_in_one_line(copies):
    """check.py (and bench.py, which needs a GPU: its records under results/) print the first call's error as one
    line and exit 1 (harness.cannot_run, shared by both)."""
    proc = subprocess.run([sys.executable, str(harness.ROOT / "check.py"), "--solution",
                           str(copies / "fault_fused_y_swapped.py"), "--route", "generic", "--shapes", "128x128",
                           "--seeds", "1", "--families", "randn"], capture_output=True, text=True, cwd=harness.ROOT,
                          env={**os.environ, "PYTHONWARNINGS": "ignore"}, timeout=600)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 1 and len(lines) == 1, proc.stdout + proc.stderr
    assert lines[0].startswith("check.py: error: the solution's forced route generic cannot run here: its first call "
                               "raised RuntimeError: silu_dot_fwd_bwd_quant_fuse: the generic route, the last one left "
                               "on this interpreter device, cannot run: its self-test found "), lines[0]


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


@pytest.mark.parametrize("route", ["generic", "plain", "tolerant"])
def test_the_first_call_with_its_self_test_runs_no_pytorch_compute(route, monkeypatch):
    monkeypatch.setattr(solution, "_devices", {})
    x, gy = harness.make_inputs(128, 256, seed=4)
    out = harness.new_outputs(128, 256)
    with harness.route_forced(route), watch_compute() as watch:
        solution.silu_dot_fwd_bwd_quant_fuse(x, gy, *out)
    assert watch.ops == [] and watch.launches >= 4  # the input, the call's own kernels, the check, the call


def test_every_new_specialization_and_shape_is_proven_once(monkeypatch):
    monkeypatch.setattr(solution, "_devices", {})
    calls = []
    real = solution._PROOF_RUNS["self-test"]
    monkeypatch.setitem(solution._PROOF_RUNS, "self-test", lambda device, key, *a: calls.append(key[:2]) or real(device, key, *a))
    for M, H in ((128, 128), (128, 128), (256, 128), (128, 128)):
        x, gy = harness.make_inputs(M, H, seed=1)
        solution.silu_dot_fwd_bwd_quant_fuse(x, gy, *harness.new_outputs(M, H))
    wide = torch.empty(128, 2 * 128 + 8, dtype=torch.bfloat16)[:, 1:257]  # misaligned rows: another specialization
    x, gy = harness.make_inputs(128, 128, seed=1)
    wide.copy_(x)
    solution.silu_dot_fwd_bwd_quant_fuse(wide, gy, *harness.new_outputs(128, 128))
    assert calls == [(128, 128), (256, 128), (128, 128)]


@pytest.mark.parametrize("rows, programs", [(8, None), (128, None), (128, 3)])
def test_the_check_kernel_finds_and_places_a_wrong_element_in_every_output_in_any_slicing(rows, programs, monkeypatch):
    """The check kernel at the device's 8-row slices and at the interpreter's whole tiles, and with fewer programs
    than tiles: on the reference's outputs of the self-test's input, nothing wrong and every element compared; with
    one element of each output changed, that element, found and placed."""
    M, H = (128, 256) if programs is None else (256, 512)
    if programs is not None:
        monkeypatch.setattr(solution, "_SELF_TEST_CHECK_PROGRAMS", programs)
    x = torch.empty(M, 2 * H, dtype=torch.bfloat16)
    gy = torch.empty(M, H, dtype=torch.bfloat16)
    out = harness.new_outputs(M, H)
    plan = solution.self_test_plan("interpreter", M, H, route="generic")
    assert programs is None or plan["self_test_check"].grid[0] == programs
    make, check = plan["self_test_input"], plan["self_test_check"]
    make.kernel[make.grid](x, gy, *out, torch.empty(M * H, dtype=torch.bfloat16), M, H, x.stride(0), gy.stride(0),
                           *(o.stride(0) for o in out),
                           **make.constexprs, **make.options)
    ref = harness.run_reference(x, gy)

    def findings(outputs):
        record = torch.empty(check.grid[0] * 16, dtype=torch.int32)
        check.kernel[check.grid](*outputs, record, M, H, *(o.stride(0) for o in outputs),
                                 **{**check.constexprs, "SLICE": rows}, **check.options)
        return solution._self_test_findings(record.tolist(), H, rows)

    assert [f[:2] for f in findings(ref)] == [(0, total) for total in solution._self_test_totals(M, H)]
    places = ({"grad_input_q": (37, 300), "grad_input_s": (101, 3), "y_q_t": (77, 21), "y_s_t": (250, 0)}
              if programs is None else
              {"grad_input_q": (200, 900), "grad_input_s": (255, 7), "y_q_t": (460, 250), "y_s_t": (511, 1)})
    for i, (name, (row, col)) in enumerate(places.items()):
        wrong = [r.clone() for r in ref]
        wrong[i][row, col] = -5 if wrong[i].dtype == torch.int8 and wrong[i][row, col] != -5 else 7.0
        found = findings(wrong)
        assert found[i] == (1, solution._self_test_totals(M, H)[i], (row, col)), (name, found)
        assert all(f[0] == 0 for j, f in enumerate(found) if j != i)
