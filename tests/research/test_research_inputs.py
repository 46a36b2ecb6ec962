"""The research runner's inputs: every variants file names routes and settings the solution has (or had: a retired
route), and
division_bounds.py writes its two bounds from the fma-fault copy, or says in one line why it cannot."""
import json
import subprocess
import sys

import pytest

import harness
import solution


RESEARCH = harness.ROOT / "tools" / "research"
# Routes that finished research timed and that the solution has since dropped (PERF_NOTES.md says when and why): a
# variant naming one reruns only against a solution that still has it (445d650's), not against today's.
RETIRED_ROUTES = {"generic"}


@pytest.mark.parametrize("path", sorted(RESEARCH.glob("variants-*.json")), ids=lambda p: p.name)
def test_every_variant_names_a_route_and_settings_the_solution_has(path):
    settings_fields = set(solution.LaunchSettings._fields)
    for variant in json.loads(path.read_text()):
        fields = set(variant) - {"route", "solution"}
        assert fields <= settings_fields, (variant, fields - settings_fields)
        assert variant.get("route", "nvidia") in solution.ROUTES + tuple(RETIRED_ROUTES), variant
        if fields:
            solution.LaunchSettings(**{k: variant[k] for k in fields})  # every field without a default given


def test_division_bounds_replace_the_ieee_division_of_the_fma_fault_copy(tmp_path):
    run = subprocess.run([sys.executable, str(RESEARCH / "division_bounds.py"), "--copies", str(tmp_path)],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    for name, marker in (("division_floor.py", "q = v * inv_scale  #"), ("division_bracket.py", "q_above")):
        text = (tmp_path / name).read_text()
        assert marker in text and "\n        q = tl.math.div_rn(v, scale)\n    else:" not in text, name
        assert "_split_fma(" in text, name  # the fma fault's copy underneath
        compile(text, name, "exec")  # Python syntax only: sweep.py compiles the kernels on a GPU


def test_division_bounds_of_a_solution_without_the_ieee_division_say_so_in_one_line(tmp_path):
    solution = tmp_path / "solution.py"
    solution.write_text((harness.ROOT / "solution.py").read_text().replace("q = tl.math.div_rn(v, scale)", "q = v / scale"))
    run = subprocess.run([sys.executable, str(RESEARCH / "division_bounds.py"), "--solution", str(solution),
                          "--copies", str(tmp_path / "out")], capture_output=True, text=True)
    assert run.returncode != 0 and len(run.stderr.strip().splitlines()) == 1, run.stderr
    assert "division_floor.py" in run.stderr and "q = tl.math.div_rn(v, scale)" in run.stderr


def test_division_bounds_usage_errors_are_one_line():
    run = subprocess.run([sys.executable, str(RESEARCH / "division_bounds.py"), "--no-such-option"],
                         capture_output=True, text=True)
    assert run.returncode == 2 and len(run.stderr.strip().splitlines()) == 1, run.stderr
