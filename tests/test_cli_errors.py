"""A new user's mistakes with check.py and bench.py: each gets one line on stderr and a nonzero exit
(2 for a usage error, 1 for a solution that fails), never a traceback and never a PASS on nothing.
Each runs the real command line in a subprocess."""
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import check
import compile_matrix
import judge_targets

ROOT = Path(__file__).resolve().parents[1]
TINY = ["--shapes", "128x128", "--seeds", "1", "--families", "randn"]
NO_FUNCTION = "import torch\n\n\ndef something_else():\n    pass\n"
SYNTAX_ERROR = "import torch\n\n\ndef silu_dot_fwd_bwd_quant_fuse(x,\n    return x\n"
# Writes every output with a PyTorch op: fails judge, replay and triton_only, with many problems each.
WRITES_ONES = ("def silu_dot_fwd_bwd_quant_fuse(x, grad_y, grad_input_q, grad_input_s, y_q_t, y_s_t, group_size=128):\n"
               "    for t in (grad_input_q, grad_input_s, y_q_t, y_s_t):\n"
               "        t.fill_(1)\n"
               "    return grad_input_q, grad_input_s, y_q_t, y_s_t\n")


def run(tool, *args):
    return subprocess.run([sys.executable, str(ROOT / tool), *map(str, args)], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)


def assert_one_line_error(proc, tool, exit_code, *fragments):
    assert proc.returncode == exit_code, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{tool}: error: "), proc.stderr
    for fragment in fragments:
        assert fragment in lines[0]
    return lines[0]


@pytest.fixture
def solution_file(tmp_path):
    def write(text, name="candidate.py"):
        path = tmp_path / name
        path.write_text(text)
        return path
    return write


# ---------------------------------------------------------------- check.py

@pytest.mark.parametrize("seeds", ["0", "-1"])
def test_no_seeds_is_refused_and_nothing_passes(seeds):
    proc = run("check.py", "--seeds", seeds, "--shapes", "128x128")
    assert_one_line_error(proc, "check.py", 2, "argument --seeds", "1 or more", repr(seeds))
    assert "PASSED" not in proc.stdout


@pytest.mark.parametrize("tool", ["check.py", "bench.py"])
@pytest.mark.parametrize("shape, wrong", [("100x100", "M = 100 and H = 100 are not positive multiples of 128"),
                                          ("128x127", "H = 127 is not a positive multiple of 128")])
def test_shapes_must_be_multiples_of_128(tool, shape, wrong):
    assert_one_line_error(run(tool, "--shapes", shape), tool, 2, "argument --shapes", wrong)


def test_an_unknown_shape_group_is_one_line():
    assert_one_line_error(run("check.py", "--shapes", "foo"), "check.py", 2, "unknown shape group 'foo'",
                          "MxH like 1024x2560")


@pytest.mark.parametrize("tool, option", [("check.py", "--solution"), ("bench.py", "--solution"),
                                          ("bench.py", "--baseline")])
def test_a_missing_solution_file_is_named(tool, option, tmp_path):
    missing = tmp_path / "nonexistent.py"
    assert_one_line_error(run(tool, option, missing), tool, 2, f"argument {option}: no such file: {missing}")


@pytest.mark.parametrize("tool, option", [("check.py", "--solution"), ("bench.py", "--solution"),
                                          ("bench.py", "--baseline")])
def test_a_syntax_error_gives_file_line_and_message(tool, option, solution_file):
    path = solution_file(SYNTAX_ERROR)
    line = assert_one_line_error(run(tool, option, path, "--shapes", "128x128"), tool, 1, f"{path} line 4: ")
    assert "never closed" in line or "invalid syntax" in line  # the message's words vary with the Python version


def test_a_solution_without_the_function_fails_without_a_traceback(solution_file):
    path = solution_file(NO_FUNCTION)
    proc = run("check.py", "--solution", path, *TINY)
    assert_one_line_error(proc, "check.py", 1, f"{path} defines no function silu_dot_fwd_bwd_quant_fuse")
    assert "static single_file: FAIL" in proc.stdout.splitlines()
    assert "PASSED" not in proc.stdout


def test_a_solution_that_raises_on_import_fails_in_one_line(solution_file):
    path = solution_file("import torch\n\nraise RuntimeError('no device\\nsecond line')\n")
    assert_one_line_error(run("check.py", "--solution", path, *TINY), "check.py", 1,
                          f"importing {path} raised RuntimeError: no device second line")


def test_targets_alone_means_the_judge_chips_and_other_targets_the_matrix(monkeypatch):
    ran = []
    monkeypatch.setattr(judge_targets, "report", lambda solution, json_path, chips: ran.append(("judge", chips)) or 0)
    monkeypatch.setattr(compile_matrix, "report", lambda solution, targets, json_path: ran.append(targets) or 0)
    assert check.main(["--targets"]) == 0
    assert check.main(["--targets", "--json", "x.json"]) == 0
    assert check.main(["--targets", "judge:ascend,metax"]) == 0
    assert check.main(["--targets", "cuda:90"]) == 0
    assert ran == [("judge", None), ("judge", None), ("judge", ("ascend", "metax")), [("cuda", 90, 32)]]


@pytest.mark.parametrize("targets, message", [("judge:amd", "judge chips are ascend, hygon"),
                                              ("cuda:abc", "compute capability")])
def test_bad_targets_are_one_line(targets, message):
    assert_one_line_error(run("check.py", "--targets", targets), "check.py", 2, "argument --targets", message)


@pytest.mark.parametrize("tool, option", [("check.py", "--route"), ("bench.py", "--route"),
                                          ("bench.py", "--baseline-route")])
def test_a_route_the_solution_does_not_have_is_one_line_naming_its_routes(tool, option, solution_file):
    path = solution_file("ROUTES = ('fast', 'portable')\n\n\ndef silu_dot_fwd_bwd_quant_fuse(*args):\n    pass\n")
    solutions = ["--solution", path] + (["--baseline", path] if option == "--baseline-route" else [])
    proc = run(tool, *solutions, option, "intel", *TINY[:2])
    assert_one_line_error(proc, tool, 2, f"argument {option}: 'intel' is not a route of candidate.py "
                          "(its ROUTES: fast, portable)")
    assert "PASSED" not in proc.stdout


def test_a_baseline_route_without_a_baseline_is_refused():
    assert_one_line_error(run("bench.py", "--baseline-route", "generic_per_element"), "bench.py", 2,
                          "argument --baseline-route: there is no --baseline")


@pytest.mark.parametrize("words, message", [(["host us"], "unknown mode 'host us'; expected host-timed, cloned, "
                                                           "back-to-back, host-us or none"),
                                            (["none", "host-us"], "none times no mode, so it takes no other")])
def test_a_bad_bench_mode_is_one_line(words, message):
    proc = run("bench.py", "--modes", *words, *TINY[:2])
    assert_one_line_error(proc, "bench.py", 2, f"argument --modes: {message}")
    assert proc.stdout == ""


@pytest.mark.parametrize("tool", ["check.py", "bench.py"])
def test_json_into_a_missing_folder_is_refused_before_anything_runs(tool, tmp_path):
    destination = tmp_path / "new" / "dir" / "x.json"
    proc = run(tool, "--json", destination, *TINY[:2])
    assert_one_line_error(proc, tool, 2, f"no folder {destination.parent}")
    assert proc.stdout == "" and not (tmp_path / "new").exists()


def test_failure_details_are_capped_per_check_and_kept_short(solution_file, tmp_path):
    proc = run("check.py", "--solution", solution_file(WRITES_ONES), "--shapes", "128x128", "256x128",
               "--seeds", "1", "--families", "randn", "--json", tmp_path / "report.json")
    assert proc.returncode == 1 and proc.stderr == ""
    lines = proc.stdout.splitlines()
    # judge fails four comparisons: three are shown, then the count; once, for the first shape.
    judge = lines.index("128x128 judge: seed 0 randn")
    details = lines[judge:lines.index("", judge)]
    assert max(len(line) for line in details) <= 4 + check.PROBLEM_WIDTH
    assert {line.split(":")[0] for line in details if not line.startswith(" ")} == {
        "128x128 judge", "128x128 replay", "128x128 triton_only"}
    assert lines[judge + 4] == "    ... and 1 more (all in the --json report)"
    assert lines[judge + 5] == "    (fails on 1 more shapes too: 256x128)"
    assert f"note: judge: {check.JUDGE_FAIL_MEANS} (README.md, Scoring)." in lines  # what the FAIL means
    assert len(proc.stdout) < 3000


# ---------------------------------------------------------------- help and README

def test_help_gives_the_defaults_and_one_example_of_targets():
    help_text = " ".join(run("check.py", "--help").stdout.split())
    assert "--seeds N input seeds per shape and family (default: 3)" in help_text
    assert "(default: solution.py beside check.py)" in help_text
    assert "(default: all of randn, zeros" in help_text
    targets_help = help_text[help_text.index("--targets [LIST] "):]
    assert targets_help.count("e.g.") == 1
    assert "python check.py --targets [TARGET,...]" in help_text


def _requirement_lines(path):
    for line in path.read_text().splitlines():
        line = line.split("#")[0].strip()
        if line.startswith("-r "):
            yield from _requirement_lines(path.parent / line[3:].strip())
        elif line:
            yield line


def test_the_readme_install_commands_agree_on_one_triton():
    pins = {}
    for command in re.findall(r"^\s+(pip install [^&\n]+)", (ROOT / "README.md").read_text(), flags=re.M):
        words = shlex.split(command.split("  #")[0])  # a comment after the command is not part of it
        requirements = [w for w in words if w.startswith("triton")]
        requirements += [line for i, w in enumerate(words) if w == "-r" for line in _requirement_lines(ROOT / words[i + 1])
                         if line.startswith("triton")]
        if not requirements and "-r" not in words:  # a CPU torch alone, say: it chooses no Triton
            continue
        exact = {r for r in requirements if "==" in r}
        assert len(exact) == 1, (command, requirements)
        pins[command] = exact.pop()
    assert len(pins) >= 2 and len(set(pins.values())) == 1, pins


@pytest.mark.parametrize("args, fragment", [
    (["--shape", "100x7"], "not positive multiples of 128"),
    (["--shape", "benchmark"], "one shape, got the group 'benchmark'"),
    (["--route", "nope"], "'nope' is not a route of solution.py"),
    (["--runs", "0"], "1 or more"),
    (["--solution", "no_such_solution.py"], "no such file"),
])
def test_cold_start_mistakes_are_one_line(args, fragment):
    proc = run("tools/cold_start.py", *args)
    assert_one_line_error(proc, "cold_start.py", 2, fragment)


def test_cold_start_without_a_gpu_says_so_in_one_line():
    proc = run("tools/cold_start.py")
    assert proc.returncode == 2 and proc.stderr.splitlines() == [
        "cold_start.py: needs a GPU (the first call's compile and load are what it times)"]


@pytest.mark.parametrize("args, fragment", [
    (["--shape", "100x7"], "not positive multiples of 128"),
    (["--shape", "benchmark"], "one shape, got the group 'benchmark'"),
    (["--route", "nope"], "'nope' is not a route of solution.py"),
    (["--calls", "0"], "1 or more"),
    (["--rounds", "x"], "1 or more"),
    (["--solution", "no_such_solution.py"], "no such file"),
])
def test_host_time_mistakes_are_one_line(args, fragment):
    proc = run("tools/host_time.py", *args)
    assert_one_line_error(proc, "host_time.py", 2, fragment)


def test_host_time_without_a_gpu_says_so_in_one_line():
    proc = run("tools/host_time.py")
    assert proc.returncode == 2 and proc.stderr.splitlines() == [
        "host_time.py: needs a GPU (it times calls that launch kernels on one)"]
