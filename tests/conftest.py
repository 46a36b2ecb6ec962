"""Tests run on CPU through the Triton interpreter; set it before anything imports triton."""
import os
import sys
from pathlib import Path

os.environ["TRITON_INTERPRET"] = "1"
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import harness  # noqa: E402  (after the path and the interpreter are set)


def pytest_configure(config):
    problem = harness.interpreter_problem()
    if problem:
        import pytest
        pytest.exit(problem, returncode=2)
