"""tools/research/two_pass_kernels.py takes its settings on the command line: each a ROWS (or CHANNELS), GROUPS,
warps triple, a malformed one refused with what was expected. The timing itself needs a GPU."""
import argparse
import importlib.util

import pytest

import harness

spec = importlib.util.spec_from_file_location("two_pass_kernels",
                                              harness.ROOT / "tools" / "research" / "two_pass_kernels.py")
two_pass_kernels = importlib.util.module_from_spec(spec)
spec.loader.exec_module(two_pass_kernels)


def test_a_setting_is_three_positive_integers():
    assert two_pass_kernels.settings_triple("16,1,4") == (16, 1, 4)
    for bad in ("16,1", "16,1,4,2", "a,1,4", "16,0,4", ""):
        with pytest.raises(argparse.ArgumentTypeError, match="expected three positive integers"):
            two_pass_kernels.settings_triple(bad)

