"""Tests run on CPU through the Triton interpreter; set it before anything imports triton."""
import os
import sys
from pathlib import Path

import pytest

os.environ["TRITON_INTERPRET"] = "1"
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import harness  # noqa: E402  (after the path and the interpreter are set)


@pytest.fixture(scope="session")
def solution_copy_dir(tmp_path_factory):
    """A folder holding every copy tools/solution_copies.py makes of solution.py."""
    sys.path.insert(0, str(harness.ROOT / "tools"))
    import solution_copies
    out = tmp_path_factory.mktemp("copies")
    for name, text in solution_copies.copies((harness.ROOT / "solution.py").read_text()).items():
        (out / name).write_text(text)
    return out


def pytest_addoption(parser):
    parser.addoption("--slow", action="store_true", help="also run the tests marked slow (they install Tritons "
                     "in venvs, as check.py --targets judge does, or compile every rung for cuda:90 or hip:gfx942)")


def pytest_configure(config):
    problem = harness.interpreter_problem()
    if problem:
        pytest.exit(problem, returncode=2)
    config.addinivalue_line("markers", "slow: installs a Triton venv or compiles for a GPU target; run with --slow")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--slow"):
        return
    skip = pytest.mark.skip(reason="slow: run with --slow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
