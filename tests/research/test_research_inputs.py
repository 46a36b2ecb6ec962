"""The research runner's inputs: every variants file names routes and settings the solution has, and
division_bounds.py writes its two bounds from the fma-fault copy, or says in one line why it cannot."""
import json
import subprocess
import sys

import pytest

import harness
import solution

sys.path.insert(0, str(harness.ROOT / "tools"))
import solution_copies  # noqa: E402

RESEARCH = harness.ROOT / "tools" / "research"


@pytest.mark.parametrize("path", sorted(RESEARCH.glob("variants-*.json")), ids=lambda p: p.name)
def test_every_variant_names_a_route_and_settings_the_solution_has(path):
    settings_fields = set(solution.LaunchSettings._fields)
    for variant in json.loads(path.read_text()):
        fields = set(variant) - {"route", "solution"}
        assert fields <= settings_fields, (variant, fields - settings_fields)
        assert variant.get("route", "nvidia") in solution.ROUTES, variant
        if fields:
            solution.LaunchSettings(**{k: variant[k] for k in fields})  # every field without a default given


def test_division_bounds_replace_the_ieee_division_of_the_fma_fault_copy(tmp_path):
    fault = solution_copies.copies((harness.ROOT / "solution.py").read_text())["fault_fma_split.py"]
    (tmp_path / "fault_fma_split.py").write_text(fault)
    run = subprocess.run([sys.executable, str(RESEARCH / "division_bounds.py"), "--copies", str(tmp_path)],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    for name, marker in (("division_floor.py", "q = v * inv_scale  #"), ("division_bracket.py", "q_above")):
        text = (tmp_path / name).read_text()
        assert marker in text and "\n        q = tl.math.div_rn(v, scale)\n    else:" not in text, name
        compile(text, name, "exec")


def test_division_bounds_without_the_fault_copy_says_what_to_run_first(tmp_path):
    run = subprocess.run([sys.executable, str(RESEARCH / "division_bounds.py"), "--copies", str(tmp_path)],
                         capture_output=True, text=True)
    assert run.returncode != 0 and len(run.stderr.strip().splitlines()) == 1
    assert "solution_copies.py" in run.stderr
