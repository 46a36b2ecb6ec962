"""check.py end to end on CPU: the real solution passes; every broken fixture fails for its named reason."""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import check
import solution
from fixtures.broken_solutions import PIPELINE_ALWAYS_DIFFERS, BROKEN, STATIC
from fixtures.fake_solutions import FAKES, fake_source
from fixtures.host_cheats import CHEATS, cheat_source

ROOT = Path(__file__).resolve().parents[1]
FAST = ["--shapes", "128x128", "--seeds", "1"]


def run_check(solution, *args, tmp_path, fast=FAST):
    report = tmp_path / "report.json"
    proc = subprocess.run([sys.executable, str(ROOT / "check.py"), "--solution", str(solution), *fast, *args,
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
    """The checks that failed the report's verdict, by check.py's own policy."""
    return {name for row in report["rows"]
            for name in check.failed_checks(check.problems_by_check(row), report["strict"], report["environment"]["device"])}


def test_real_solution_passes_every_check(tmp_path):
    # Several tiles (the broken copies each show their fault on one), and groups that mix zeros with other values.
    several_tiles = ["--shapes", "256x256", "--seeds", "1"]
    proc, report = run_check(ROOT / "solution.py", "--strict", tmp_path=tmp_path, fast=several_tiles)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert report["passed"] and not failed_checks(report)
    assert report["static"] == {"single_file": [], "numerics": []}
    assert report["rows"][0]["nonfinite_groups"] > 0  # the specials family ran
    if not torch.cuda.is_available():
        assert proc.stdout.splitlines()[0].startswith("check.py: no GPU found")


def test_the_rung_taken_and_why_the_ones_above_were_left_are_printed(tmp_path):
    # The interpreter's own arithmetic is numpy's: its fp32 -> bf16 cast truncates and its fma rounds twice.
    # With the native rungs put on top of its ladder, the native rung's probe finds both and turns bf16
    # rounding and the quantizer's division IEEE, keeping the sigmoid and the int8 conversion native; with a pipeline check that always
    # differs besides, no feature explains it and the native rungs are left for the IEEE one.
    ladder = ('    Backend("interpreter", "cpu", (), "3.2", routes=("generic_per_element", "plain", "tolerant"), ',
              '    Backend("interpreter", "cpu", (), "3.2", routes=_PORTABLE_LADDER, ')
    fast = ["--shapes", "128x128", "--seeds", "1", "--families", "randn"]
    proc, report = run_check(make_broken([ladder], tmp_path), tmp_path=tmp_path, fast=fast)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    at = lines.index("route: native")
    taken = lines[at + 1]
    assert taken.startswith("  native: taken (its probe: no difference from IEEE arithmetic in sigmoid, bf16 rounding, "
                            "quantizer, pipeline; fma: "), taken
    for feature, check in (("bf16 rounding", "bf16 rounding"), ("division", "(quantizer|fma)")):
        assert re.search(rf"\({feature} in its IEEE form: its first probe found \d+ differences from IEEE arithmetic "
                         rf"in {check}, the first at ", taken), (feature, taken)
    assert taken.count("in its IEEE form:") == 2  # its int8 conversion and sigmoid stay native
    proc, report = run_check(make_broken([ladder, PIPELINE_ALWAYS_DIFFERS], tmp_path), tmp_path=tmp_path, fast=fast)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    at = lines.index("route: generic_per_element")
    assert re.fullmatch(r"  native: left: its probe found \d+ differences from IEEE arithmetic in pipeline, the "
                        r"first at row \d+, column \d+: native 0x[0-9a-f]{8}, IEEE 0x[0-9a-f]{8}", lines[at + 1])
    assert lines[at + 2].startswith("  native_per_element: left: its probe found")
    assert lines[at + 3:at + 5] == ["  generic_per_element: taken", "  not tried, below it: native_two_pass, plain, "
                                                                    "tolerant"]
    assert [route for route, _ in report["route"]["ladder"]] == list(solution.BACKENDS["unknown"].routes)


@pytest.mark.parametrize("name", sorted(FAKES))
def test_fake_solution_fails_the_check_it_is_made_for(name, tmp_path):
    _, _, check_name, detail = FAKES[name]
    path = tmp_path / f"{name}.py"
    path.write_text(fake_source(name))
    proc, report = run_check(path, tmp_path=tmp_path,
                             fast=["--shapes", "128x128", "--seeds", "1", "--families", "randn", "specials"])
    assert proc.returncode == 1  # triton_only, for every fake
    checks = report["rows"][0]["checks"]
    failed = {n for n, result in checks.items() if result["problems"]}
    if check_name is None:
        assert failed == {"triton_only"}, checks
    else:
        assert check_name in failed and any(detail in p for p in checks[check_name]["problems"]), checks
        assert f" {check_name}: " in proc.stdout or check_name == "exact"  # exact is printed only where it counts


@pytest.mark.parametrize("name", sorted(CHEATS))
def test_outputs_computed_on_the_host_fail_triton_only_naming_what_reached_the_host(name, tmp_path):
    """Each cheat reads x and grad_y to the host and moves numpy's outputs in its own way: only triton_only fails it
    (it passes the judge's comparisons), and its first problems say what reached the host and what moved in."""
    _, _, detail = CHEATS[name]
    path = tmp_path / f"{name}.py"
    path.write_text(cheat_source(name))
    proc, report = run_check(path, tmp_path=tmp_path,
                             fast=["--shapes", "128x128", "--seeds", "1", "--families", "randn"])
    assert proc.returncode == 1 and failed_checks(report) == {"triton_only"}, proc.stdout
    problems = report["rows"][0]["checks"]["triton_only"]["problems"]
    assert detail in problems[0] and any(" host data" in p for p in problems), problems
    assert f"    {problems[0]}" in proc.stdout.splitlines()


def test_a_solution_that_reads_only_strided_inputs_to_the_host_fails_triton_only(tmp_path):
    """The layouts check's calls are watched as the contiguous ones are: the solution itself, but for a row-strided x
    it reads x to the host first."""
    path = tmp_path / "strided_reader.py"
    path.write_text((ROOT / "solution.py").read_text() + (
        "\n\n_solution_itself = silu_dot_fwd_bwd_quant_fuse\n\n\n"
        "def silu_dot_fwd_bwd_quant_fuse(x, grad_y, *outputs, group_size=128):\n"
        "    if x.stride(0) != x.shape[1]:\n"
        "        x.tolist()\n"
        "    return _solution_itself(x, grad_y, *outputs, group_size=group_size)\n"))
    proc, report = run_check(path, tmp_path=tmp_path, fast=["--shapes", "128x128", "--seeds", "1", "--families", "randn"])
    assert proc.returncode == 1 and failed_checks(report) == {"triton_only"}, proc.stdout
    problems = report["rows"][0]["checks"]["triton_only"]["problems"]
    # On a CPU .tolist() itself is what reads; on a GPU the copy to the host it dispatches (aten::_to_copy) is seen first.
    assert problems and all(p.endswith(("layout: .tolist() read x to the host", "layout: aten::_to_copy read x to the host"))
                            for p in problems), problems


def test_route_is_forced_through_the_environment_and_reported(tmp_path):
    # A fake (the reference, NaN scales of another payload) that tells its route from the environment.
    path = tmp_path / "routed.py"
    path.write_text(fake_source("nan_scales_of_another_payload") + "\n\nimport os\n\nROUTES = ('fast', 'portable')\n\n\n"
                    "def route_for(device):\n    return os.environ.get('SILU_DOT_ROUTE', 'own') + ':' + str(device)\n")
    proc, report = run_check(path, "--route", "portable", tmp_path=tmp_path,
                             fast=["--shapes", "128x128", "--seeds", "1", "--families", "randn"])
    device = report["environment"]["device"]
    assert f"route: portable:{device}" in proc.stdout.splitlines()
    assert report["route"] == {"requested": "portable", "taken": f"portable:{device}", "ladder": []}


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


# A static problem is the source's (or, for a launch without enable_fp_fusion=False, any launch's): one small shape of
# one family shows it, and the rows that pass there are what keep a check that --strict alone fails from failing.
STATIC_FAST = ["--shapes", "128x128", "--seeds", "1", "--families", "randn"]


@pytest.mark.parametrize("name", sorted(STATIC))
def test_static_problems_are_reported(name, tmp_path):
    edits, check, fails_without_strict = STATIC[name]
    broken = make_broken(edits, tmp_path)
    proc, report = run_check(broken, tmp_path=tmp_path, fast=STATIC_FAST)
    assert report["static"][check], proc.stdout
    assert (proc.returncode == 1) is fails_without_strict
    assert report["rows"] and all(row["passed"] for row in report["rows"]), proc.stdout
    proc, report = run_check(broken, "--strict", tmp_path=tmp_path, fast=STATIC_FAST)
    assert proc.returncode == 1
