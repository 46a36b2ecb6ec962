"""measure.py, the one home of the kit's timing settings (who imports it: test_imports.py)."""
import subprocess
import sys
import types

import pytest
from torch.autograd import DeviceType

import harness
import measure


def test_importing_measure_needs_no_triton():
    code = "import sys, measure; sys.exit(1 if 'triton' in sys.modules else 0)"
    assert subprocess.run([sys.executable, "-c", code], cwd=harness.ROOT).returncode == 0


def test_do_bench_passes_the_settings_and_returns_microseconds(monkeypatch):
    import triton.testing
    seen = {}

    def fake_do_bench(fn, **kwargs):
        seen.update(kwargs)
        fn()
        return 0.025  # ms

    monkeypatch.setattr(triton.testing, "do_bench", fake_do_bench)
    calls = []
    assert measure.do_bench(lambda: calls.append(1)) == pytest.approx(25.0)
    assert calls == [1]
    assert seen == {"warmup": measure.WARMUP_MS, "rep": measure.REP_MS, "return_mode": measure.RETURN_MODE}


def test_settings_text_and_record_state_the_constants():
    text = measure.settings_text()
    assert f"warmup={measure.WARMUP_MS} ms" in text and f"rep={measure.REP_MS} ms" in text
    assert measure.RETURN_MODE in text
    assert measure.settings_record() == {"warmup_ms": measure.WARMUP_MS, "rep_ms": measure.REP_MS,
                                         "return_mode": measure.RETURN_MODE, "cold_l2": True}


def _event(device_type, start, end):
    return types.SimpleNamespace(device_type=device_type, time_range=types.SimpleNamespace(
        elapsed_us=lambda: end - start))


def test_device_activity_sums_only_device_events():
    events = [_event(DeviceType.CPU, 0, 100), _event(DeviceType.CUDA, 10, 14), _event(DeviceType.CUDA, 20, 22.5)]
    assert measure.device_activity(events) == (pytest.approx(6.5), 2)
    assert measure.device_activity([_event(DeviceType.CPU, 0, 100)]) == (None, 0)
