"""tools/sass_stats.py on a CPU: the static ablation lists every composition of a rung, and bad arguments are one
line each (issue 34)."""
import os
import re
import subprocess
import sys

import harness
import solution

TOOL = str(harness.ROOT / "tools" / "sass_stats.py")
ENV = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}  # it compiles, not interprets


def _run(*args):
    return subprocess.run([sys.executable, TOOL, *args], env=ENV, capture_output=True, text=True, timeout=900)


def test_the_ablation_compiles_every_composition_of_the_rung():
    out = _run("--ablation", "--route", "native_per_element")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    compositions = solution.route_compositions("native_per_element")
    assert len(lines) == len(compositions)
    assert lines[0].startswith("native_per_element IEEE none: regs=") and "(+0)" in lines[0]
    for line, composition in zip(lines[1:], compositions[1:]):
        assert line.startswith(f"native_per_element IEEE {', '.join(composition)}: regs=")
        assert re.search(r"regs=\d+ stack=\d+ static SASS=\d+ \([+-]\d+\)", line)


def test_bad_arguments_are_one_line_each():
    for args, words in ((["--route", "plain"], "invalid choice"),
                        (["--route", "generic", "--ieee", "division"], "its arithmetic is fixed"),
                        (["--route", "native", "--ieee", "sigmoid"], "not a composition of the native route"),
                        (["--ablation", "--ieee", "division"], "no --ieee, --settings or --dump"),
                        (["--settings", "{bad"], "expected a JSON object of"),
                        (["--settings", '{"warps": 8}'], "expected a JSON object of"),
                        (["--route", "native", "nvidia"], "one --route without --ablation")):
        out = _run(*args)
        assert out.returncode == 2 and words in out.stderr and "Traceback" not in out.stderr, (args, out.stderr)
