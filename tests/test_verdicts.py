"""The last line of check.py says what failed. A static failure is named while the shapes pass; a
solution whose first call raises (a forced route whose rung is left included) is one line and exit 1, in
check.py and bench.py, with no table; a shape whose calls raised says `raised`, never "0 bytes differ"."""
import argparse
import json

import pytest

import bench
import check
import harness
from fixtures.broken_solutions import PIPELINE_ALWAYS_DIFFERS, SIGNATURE
from test_bench import fake_gpu  # noqa: F401  (a fixture: bench.main on the CPU, GPU timings faked)
from test_check import make_broken, run_check
from test_cli_errors import TINY, assert_one_line_error, run

# A jitted helper that divides with '/': the static numerics check flags it, and nothing calls it, so every
# byte the copy writes is the solution's own.
SLASH_RECIPROCAL = "\n\n@triton.jit\ndef _reciprocal_by_slash(d):\n    return 1.0 / d\n"
RAISES_ON_256_ROWS = SIGNATURE + "    if x.shape[0] == 256:\n        raise RuntimeError('no kernel for 256 rows')\n"
PROBE_FAILS = ("its first call raised RuntimeError: silu_dot_fwd_bwd_quant_fuse: the native_per_element route, the "
               "last one remaining on this interpreter device, cannot run: its probe found ")


def raising_copy(tmp_path, text="NotImplementedError('not yet\\nsecond line')"):
    """A copy of solution.py whose every call raises."""
    return make_broken([(SIGNATURE, SIGNATURE + f"    raise {text}\n")], tmp_path)


def assert_no_shape_was_checked(proc):
    assert not [line for line in proc.stdout.splitlines() if line.startswith(("route:", "  128x128:", "FAILED",
                                                                               "PASSED"))], proc.stdout


# ---------------------------------------------------------------- the verdict, in-process

def args_of(strict=False):
    return argparse.Namespace(strict=strict, seeds=1, families=["randn"], json=None, solution="solution.py")


def row_of(shape, failing=()):
    """A row of one run that failed the named checks in failing."""
    return {"shape": shape, "M": 128, "H": 128, "runs": 1, "compared": 1, "passed": not failing,
            "checks": {name: {"where": "seed 0 randn" if name in failing else "",
                              "problems": ["a problem"] if name in failing else []} for name in check.NAMED_CHECKS},
            **harness.no_totals()}


NO_STATIC = {"single_file": [], "numerics": []}
SLASH = "line 9 in f: '/' on tensors is div.full (approximate); use tl.math.div_rn"


@pytest.mark.parametrize("strict, device, static, rows, line", [
    (False, "cpu", NO_STATIC, [row_of("a"), row_of("b")],
     "PASSED: 2/2 shapes, 2 runs, seeds=1, families=randn, strict=False"),
    (True, "cuda", NO_STATIC, [row_of("a", ["judge", "exact"]), row_of("b", ["exact"])],
     "FAILED: judge on 1/2 shapes, exact on 2/2"),
    (True, "cpu", NO_STATIC, [row_of("a", ["judge", "exact"]), row_of("b", ["exact"])],  # exact counts on a GPU
     "FAILED: judge on 1/2 shapes"),
    (True, "cpu", {"single_file": [], "numerics": [SLASH, "another"]}, [row_of("a"), row_of("b")],
     f"FAILED: static numerics ({SLASH}; and 1 more); every shape passed at run time (2/2)"),
    (False, "cpu", {"single_file": [], "numerics": [SLASH]}, [row_of("a")],  # numerics counts with --strict
     "PASSED: 1/1 shapes, 1 runs, seeds=1, families=randn, strict=False"),
    (False, "cpu", {"single_file": ["line 3: imports 'os2'"], "numerics": []}, [row_of("a", ["raised"]), row_of("b")],
     "FAILED: static single_file (line 3: imports 'os2'); raised on 1/2 shapes"),
    (False, "cpu", NO_STATIC, [{**row_of("a"), "runs": 0}], "FAILED: nothing was checked (0 runs)"),
])
def test_the_last_line_names_each_failed_check(strict, device, static, rows, line):
    outcome = check.verdict(args_of(strict), static, rows, device)
    assert outcome["line"] == line
    assert outcome["passed"] is line.startswith("PASSED")


def test_the_json_verdict_holds_the_printed_line_and_which_checks_failed_where(tmp_path, capsys):
    args = argparse.Namespace(**{**vars(args_of(strict=True)), "json": str(tmp_path / "report.json")})
    static = {"single_file": [], "numerics": [SLASH]}
    rows = [row_of("a", ["judge"]), row_of("b"), row_of("c", ["judge", "replay"])]
    assert check.report(args, {}, "cpu", {"taken": "generic_per_element", "ladder": []}, static, rows, set()) == 1
    printed = capsys.readouterr().out.splitlines()[-1]
    assert printed == f"FAILED: static numerics ({SLASH}); judge on 2/3 shapes, replay on 1/3"
    record = json.loads((tmp_path / "report.json").read_text())
    assert record["passed"] is False
    assert record["verdict"] == {"passed": False, "line": printed, "runs": 3, "shapes": 3,
                                 "static_failed": {"numerics": [SLASH]},
                                 "failed_on_shapes": {"judge": ["a", "c"], "replay": ["c"]}}


# ---------------------------------------------------------------- check.py end to end

def test_a_static_failure_is_named_while_every_shape_passes(tmp_path):
    source = (harness.ROOT / "solution.py").read_text() + SLASH_RECIPROCAL
    path = tmp_path / "slash.py"
    path.write_text(source)
    line_number = source.splitlines().index("    return 1.0 / d") + 1
    proc, report = run_check(path, "--strict", tmp_path=tmp_path, fast=TINY)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert [line for line in lines if line.startswith("  128x128: ")][0].startswith("  128x128: PASS (1 runs, ")
    assert lines[-1] == (f"FAILED: static numerics (line {line_number} in _reciprocal_by_slash: '/' on tensors is "
                         "div.full (approximate); use tl.math.div_rn); every shape passed at run time (1/1)")
    assert report["verdict"]["static_failed"] == {"numerics": report["static"]["numerics"]}
    assert report["verdict"]["failed_on_shapes"] == {}
    # Without --strict the numerics check warns, and the PASS line is as it was.
    proc, report = run_check(path, tmp_path=tmp_path, fast=TINY)
    assert proc.returncode == 0 and report["passed"]
    assert proc.stdout.splitlines()[-1] == "PASSED: 1/1 shapes, 1 runs, seeds=1, families=randn, strict=False"


def test_a_solution_whose_first_call_raises_is_one_line(tmp_path):
    proc = run("check.py", "--solution", raising_copy(tmp_path), *TINY, "--json", tmp_path / "report.json")
    assert_one_line_error(proc, "check.py", 1, "the solution (on its own choice of route) cannot run here: its first "
                          "call raised NotImplementedError: not yet second line")
    assert_no_shape_was_checked(proc)


def test_a_forced_route_whose_probe_fails_is_one_line_naming_the_route_and_the_probe(tmp_path):
    # A probe whose pipeline check always differs: no feature in its IEEE form explains it, so the native
    # rung is left, and a forced native route has no rung below it to take.
    proc = run("check.py", "--solution", make_broken([PIPELINE_ALWAYS_DIFFERS], tmp_path),
               "--route", "native_per_element", *TINY)
    line = assert_one_line_error(proc, "check.py", 1, "the solution's forced route native_per_element cannot run "
                                 "here: " + PROBE_FAILS, "differences from IEEE arithmetic in pipeline")
    assert len(line) <= 1000 + len("check.py: error: ")
    assert_no_shape_was_checked(proc)


def test_a_forced_route_of_a_solution_that_raises_is_one_line(tmp_path):
    path = tmp_path / "routed.py"
    path.write_text("ROUTES = ('fast', 'portable')\n\n\ndef silu_dot_fwd_bwd_quant_fuse(*args, **kwargs):\n"
                    "    raise ValueError('not implemented')\n")
    assert_one_line_error(run("check.py", "--solution", path, "--route", "portable", *TINY), "check.py", 1,
                          "the solution's forced route portable cannot run here: its first call raised ValueError: "
                          "not implemented")


def test_a_shape_whose_calls_raise_says_raised(tmp_path):
    path = make_broken([(SIGNATURE, RAISES_ON_256_ROWS)], tmp_path)
    proc, report = run_check(path, tmp_path=tmp_path, fast=["--shapes", "128x128", "256x128", *TINY[2:]])
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[lines.index("  256x128: FAIL (raised RuntimeError: no kernel for 256 rows)") - 1].startswith(
        "  128x128: PASS (1 runs, ")
    table_row = next(line for line in lines if line.split()[:1] == ["256x128"])
    assert table_row.split()[4:] == ["FAIL"] + ["-"] * len(check.TABLE_FIGURES) + ["raised"]  # nothing compared
    assert "256x128 raised: seed 0 randn" in lines
    assert lines[-1] == "FAILED: raised on 1/2 shapes"
    assert report["verdict"]["failed_on_shapes"] == {"raised": ["256x128"]}
    raised_row = report["rows"][1]
    assert raised_row["compared"] == 0
    assert {name for name, result in raised_row["checks"].items() if result["problems"]} == {"raised"}
    assert report["rows"][0]["passed"]


# ---------------------------------------------------------------- bench.py, GPU timings faked

def test_bench_with_a_forced_route_whose_probe_fails_is_one_line(fake_gpu, tmp_path, capsys):
    solution = str(make_broken([PIPELINE_ALWAYS_DIFFERS], tmp_path))
    assert bench.main(["--solution", solution, "--shapes", "128x128", "--route", "native_per_element"]) == 1
    captured = capsys.readouterr()
    assert captured.err.startswith("bench.py: error: the solution's forced route native_per_element cannot run "
                                   "here: " + PROBE_FAILS)
    assert len(captured.err.splitlines()) == 1
    assert "route:" not in captured.out and fake_gpu == []  # nothing was timed


def test_bench_with_a_baseline_whose_first_call_raises_is_one_line(fake_gpu, tmp_path, capsys):
    baseline = tmp_path / "baseline.py"
    baseline.write_text("def silu_dot_fwd_bwd_quant_fuse(*args):\n    raise ValueError('not implemented')\n")
    assert bench.main(["--solution", str(harness.ROOT / "reference.py"), "--baseline", str(baseline),
                       "--shapes", "128x128"]) == 1
    assert capsys.readouterr().err == ("bench.py: error: the baseline (on its own choice of route) cannot run here: "
                                       "its first call raised ValueError: not implemented\n")
    assert fake_gpu == []


def test_bench_fails_a_shape_whose_call_raises_and_says_why(fake_gpu, tmp_path, capsys):
    path = tmp_path / "raises_on_256_rows.py"
    path.write_text("import harness\n\n_reference = harness.reference_fn()\n\n\n"
                    "def silu_dot_fwd_bwd_quant_fuse(x, *args):\n    if x.shape[0] == 256:\n"
                    "        raise RuntimeError('no kernel for 256 rows')\n    return _reference(x, *args)\n")
    record_path = tmp_path / "bench.json"
    assert bench.main(["--solution", str(path), "--shapes", "128x128", "256x128", "--json", str(record_path)]) == 1
    lines = capsys.readouterr().out.splitlines()
    failing = next(i for i, line in enumerate(lines) if line.split()[:1] == ["256x128"])
    assert "FAILS CHECK" in lines[failing]
    assert lines[failing + 1] == "  256x128 solution: raised RuntimeError: no kernel for 256 rows"
    rows = json.loads(record_path.read_text())["rows"]
    assert "raised" not in rows[0]["solution"] and rows[0]["solution"]["passed"]
    assert rows[1]["solution"] == {"passed": False, "differing_bytes": 0,
                                   "raised": "raised RuntimeError: no kernel for 256 rows"}
