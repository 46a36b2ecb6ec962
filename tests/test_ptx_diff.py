"""tools/ptx_diff.py: a file against itself is identical (exit 0) on its default shapes, and bad arguments are one
line each."""
import harness
from fixtures.compiling_tools import run_tool


def _run(*args):
    return run_tool("ptx_diff.py", *args)


def test_the_solution_against_itself_is_identical_on_the_default_shapes():
    out = _run("--baseline", str(harness.ROOT / "solution.py"), "--routes", "nvidia_per_element")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["nvidia_per_element 8192x4096: ordering identical, main identical",
                                       "nvidia_per_element 4096x2560: ordering identical, main identical",
                                       "every per-call kernel identical"]


def test_bad_arguments_are_one_line_each(tmp_path):
    for args, words in ((["--shapes", "100x3"], "M and H must be positive multiples of 128"),
                        (["--shapes", "big"], "is not MxH"),
                        (["--routes", "bogus"], "are not routes of both files"),
                        (["--solution", str(tmp_path / "none.py")], "no solution file")):
        out = _run("--baseline", str(harness.ROOT / "solution.py"), *args)
        assert out.returncode == 2 and words in out.stderr and "Traceback" not in out.stderr, out.stderr
