"""check.py end to end on CPU: the real solution passes; every broken fixture fails for its named reason."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from fixtures.broken_solutions import BROKEN, STATIC

ROOT = Path(__file__).resolve().parents[1]
FAST = ["--shapes", "256x256", "--seeds", "1"]


def run_check(solution, *args, tmp_path):
    report = tmp_path / "report.json"
    proc = subprocess.run([sys.executable, str(ROOT / "check.py"), "--solution", str(solution), *FAST, *args,
                           "--json", str(report)], capture_output=True, text=True, cwd=ROOT, timeout=300)
    return proc, json.loads(report.read_text())


def make_broken(edits, tmp_path):
    source = (ROOT / "solution.py").read_text()
    for old, new in edits:
        assert old in source, f"fixture edit no longer applies to solution.py: {old[:60]!r}"
        source = source.replace(old, new)
    path = tmp_path / "broken_solution.py"
    path.write_text(source)
    return path


def failed_checks(report):
    return {name for row in report["rows"] for name, (ok, _) in row["checks"].items() if not ok and name != "exact"}


def test_real_solution_passes_every_check(tmp_path):
    proc, report = run_check(ROOT / "solution.py", "--strict", tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert report["passed"] and not failed_checks(report)
    assert report["static"] == {"single_file": [], "numerics": []}
    assert proc.stdout.splitlines()[0].startswith("check.py: no GPU found")


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_broken_solution_fails_for_its_reason(name, tmp_path):
    edits, args, reason = BROKEN[name]
    proc, report = run_check(make_broken(edits, tmp_path), *args, tmp_path=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert reason in failed_checks(report), (failed_checks(report), proc.stdout)
    assert f" {reason}: " in proc.stdout  # the reason is printed with its first failure


def test_rounding_int8_is_only_caught_by_the_large_family(tmp_path):
    edits, _, _ = BROKEN["rounds_int8_instead_of_truncating"]
    proc, report = run_check(make_broken(edits, tmp_path), "--families", "randn", tmp_path=tmp_path)
    assert proc.returncode == 0 and report["passed"]


@pytest.mark.parametrize("name", sorted(STATIC))
def test_static_problems_are_reported(name, tmp_path):
    edits, check, fails_without_strict = STATIC[name]
    broken = make_broken(edits, tmp_path)
    proc, report = run_check(broken, tmp_path=tmp_path)
    assert report["static"][check], proc.stdout
    assert (proc.returncode == 1) is fails_without_strict
    proc, report = run_check(broken, "--strict", tmp_path=tmp_path)
    assert proc.returncode == 1
