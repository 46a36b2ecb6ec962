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


class _FakeEvent:
    """A CUDA event on the CPU: record() takes the next of a list of times (ms) and logs itself."""
    times, log = [], []

    def __init__(self, enable_timing=False):
        assert enable_timing
        self.ms = None

    def record(self):
        self.ms = _FakeEvent.times.pop(0)
        _FakeEvent.log.append("record")

    def elapsed_time(self, end):
        return end.ms - self.ms


def test_l2_clear_us_times_each_zero_between_two_events_and_takes_the_median(monkeypatch):
    import torch
    real_zero = torch.Tensor.zero_
    sizes = []

    def logged_zero(tensor):
        _FakeEvent.log.append("zero")
        sizes.append((tensor.dtype, tensor.numel()))
        return real_zero(tensor)

    # Three clears of 0.05, 0.5 and 0.06 ms: the median is 60 us (a mean would be 203 us).
    monkeypatch.setattr(_FakeEvent, "times", [0.0, 0.05, 1.0, 1.5, 2.0, 2.06])
    monkeypatch.setattr(_FakeEvent, "log", [])
    monkeypatch.setattr(torch.cuda, "Event", _FakeEvent)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: _FakeEvent.log.append("synchronize"))
    monkeypatch.setattr(torch.Tensor, "zero_", logged_zero)
    assert measure.l2_clear_us(reps=3, n_bytes=4096, device="cpu") == pytest.approx(60.0)
    assert _FakeEvent.log == ["zero"] + ["record", "zero", "record"] * 3 + ["synchronize"]
    assert sizes == [(torch.int32, 1024)] * 4  # n_bytes of int32, as triton's driver allocates it
    assert measure.L2_CLEAR_BYTES == 256 * 1024 * 1024
