"""bench.py without a GPU: its command line, the aggregation over rounds, and main's flow with the
GPU timings replaced by fakes."""
import json
import math
import os
import statistics
import time

import pytest
import torch

import bench
import harness
import measure


# ---------------------------------------------------------------- command line

@pytest.mark.parametrize("value", ["0", "-1", "abc", "1.5"])
def test_repeat_below_one_or_not_a_whole_number_is_refused(value, capsys):
    with pytest.raises(SystemExit) as exit_info:
        bench.main(["--repeat", value])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "argument --repeat" in err
    assert "1 or more" in err and repr(value) in err


def test_repeat_defaults_to_one_round():
    assert bench.parse_args([]).repeat == 1
    assert bench.parse_args(["--repeat", "5"]).repeat == 5


def test_modes_default_to_all_and_a_choice_is_kept_in_their_order():
    assert bench.parse_args([]).modes == list(bench.MODES)
    assert bench.parse_args(["--modes", "host-us", "cloned", "host-us"]).modes == ["cloned", "host-us"]
    assert bench.parse_args(["--modes", "none"]).modes == []
    assert bench.parse_args(["--modes", "none", "none"]).modes == []


@pytest.mark.parametrize("words, message", [
    (["host us"], "argument --modes: unknown mode 'host us'; expected host-timed, cloned, back-to-back, host-us "
                  "or none"),
    (["cloned", "do_bench"], "argument --modes: unknown mode 'do_bench'; expected"),
    (["none", "cloned"], "argument --modes: none times no mode, so it takes no other"),
    ([], "argument --modes: expected at least one argument"),
])
def test_a_bad_modes_argument_is_one_line_and_exits_2(words, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        bench.main(["--modes", *words])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"bench.py: error: {message}") and err.count("\n") == 1


def test_a_route_is_refused_unless_the_solution_has_it(capsys):
    import solution
    assert bench.main(["--route", "intel"]) == 2
    err = capsys.readouterr().err
    assert err == (f"bench.py: error: argument --route: 'intel' is not a route of solution.py (its ROUTES: "
                   f"{', '.join(solution.ROUTES)})\n")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU exit")
def test_valid_arguments_without_a_gpu_exit_2_with_a_message(capsys, monkeypatch):
    monkeypatch.setenv(harness.ROUTE_ENV, "")  # recorded, so a --route that main sets is undone
    monkeypatch.delenv(harness.ROUTE_ENV)
    assert bench.main(["--repeat", "3", "--route", "generic_per_element"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("bench.py: error: timing needs a CUDA GPU") and err.count("\n") == 1


def test_header_states_measures_do_bench_settings():
    text = bench.header({"gpu": "Some GPU", "torch": "2.x", "triton": "3.x"})
    assert measure.settings_text() in text
    assert f"warmup={measure.WARMUP_MS} ms" in text
    assert f"rep={measure.REP_MS} ms" in text
    assert measure.RETURN_MODE in text


# ---------------------------------------------------------------- aggregation

def _round(ref_a, sol_a, base_a, ref_b, sol_b, base_b):
    return {"a": {"reference": ref_a, "copy": 5.0, "solution": sol_a, "baseline": base_a},
            "b": {"reference": ref_b, "copy": 10.0, "solution": sol_b, "baseline": base_b}}


def test_spread_is_median_min_max():
    assert bench.spread([3.0, 1.0, 10.0, 2.0]) == {"median": 2.5, "min": 1.0, "max": 10.0}


def test_per_shape_spreads_skip_rounds_where_a_series_has_no_time():
    rounds = [_round(100, 10, 20, 60, 20, 30), _round(300, 12, 18, 90, 21, 33), _round(200, 11, 19, 80, 22, 31)]
    del rounds[1]["b"]["solution"]  # failed the check in round 2: not timed
    spreads = bench.per_shape_spreads(rounds)
    assert spreads["a"]["reference"] == {"median": 200, "min": 100, "max": 300}
    assert spreads["a"]["solution"] == {"median": 11, "min": 10, "max": 12}
    assert spreads["b"]["solution"] == {"median": 21, "min": 20, "max": 22}


def test_one_rounds_leaderboard_number_is_the_arithmetic_mean_of_speedups():
    round_times = _round(100, 10, 20, 60, 20, 30)
    round_times["c"] = {"reference": 80, "copy": 4.0, "solution": 40}  # speedups 10, 3 and 2
    assert bench.mean_speedup(round_times, "solution") == pytest.approx((10 + 3 + 2) / 3)
    assert bench.geometric_mean_speedup(round_times, "solution") == pytest.approx(60 ** (1 / 3))
    del round_times["c"]
    assert bench.mean_speedup(round_times, "copy") == pytest.approx((20 + 6) / 2)


def test_leaderboard_number_leaves_out_shapes_that_failed():
    round_times = _round(100, 10, 20, 60, 20, 30)
    del round_times["b"]["solution"]
    assert bench.mean_speedup(round_times, "solution") == pytest.approx(10)
    del round_times["a"]["solution"]
    assert math.isnan(bench.mean_speedup(round_times, "solution"))


def test_paired_ratio_is_the_geometric_mean_of_time_ratios():
    round_times = _round(100, 10, 20, 60, 30, 15)  # ratios 0.5 and 2
    assert bench.paired_time_ratio(round_times, "solution", "baseline") == pytest.approx(1.0)
    round_times = _round(100, 10, 20, 60, 16, 20)  # ratios 0.5 and 0.8
    assert bench.paired_time_ratio(round_times, "solution", "baseline") == pytest.approx(math.sqrt(0.4))


def test_summary_takes_each_number_per_round_then_its_median():
    # The reference drifts from round to round; the leaderboard number is not computed from
    # per-shape medians but per round, then the median over rounds is taken.
    rounds = [_round(100, 10, 20, 60, 20, 40), _round(300, 10, 20, 90, 20, 25), _round(200, 10, 10, 60, 20, 40)]
    summary = bench.means_over_rounds(rounds, ["solution", "baseline"])
    per_round = [(10 + 3) / 2, (30 + 4.5) / 2, (20 + 3) / 2]
    mean = summary["solution"]["arithmetic_mean_speedup"]
    assert mean["per_round"] == pytest.approx(per_round)
    assert mean["median"] == pytest.approx(statistics.median(per_round))
    assert (mean["min"], mean["max"]) == pytest.approx((min(per_round), max(per_round)))
    base = summary["baseline"]["arithmetic_mean_speedup"]
    assert base["per_round"] == pytest.approx([(5 + 1.5) / 2, (15 + 3.6) / 2, (20 + 1.5) / 2])
    ratio = summary["solution_over_baseline_time"]
    assert ratio["per_round"] == pytest.approx([math.sqrt(0.5 * 0.5), math.sqrt(0.5 * 0.8), math.sqrt(1 * 0.5)])
    assert ratio["median"] == pytest.approx(math.sqrt(0.4))
    ceiling = summary["copy_speed_ceiling"]
    assert ceiling["per_round"] == pytest.approx([(20 + 6) / 2, (60 + 9) / 2, (40 + 6) / 2])


def test_summary_without_baseline_has_no_paired_ratio():
    summary = bench.means_over_rounds([_round(100, 10, 20, 60, 20, 40)], ["solution"])
    assert "solution_over_baseline_time" not in summary and "baseline" not in summary
    assert summary["solution"]["arithmetic_mean_speedup"]["median"] == pytest.approx(6.5)


def test_a_shape_that_fails_in_any_round_fails():
    merged = {}
    bench.merge_checks(merged, {"solution": {"passed": True, "differing_bytes": 0}})
    bench.merge_checks(merged, {"solution": {"passed": False, "differing_bytes": 7}})
    bench.merge_checks(merged, {"solution": {"passed": True, "differing_bytes": 0}})
    assert merged == {"solution": {"passed": False, "differing_bytes": 7}}


def test_record_rows_hold_medians_ranges_and_checks():
    rounds = [_round(100, 10, 20, 60, 20, 30), _round(300, 12, 18, 90, 21, 33), _round(200, 11, 19, 80, 22, 31)]
    del rounds[0]["b"]["baseline"]
    checks = {"a": {"solution": {"passed": True, "differing_bytes": 0}, "baseline": {"passed": True, "differing_bytes": 0}},
              "b": {"solution": {"passed": True, "differing_bytes": 0}, "baseline": {"passed": False, "differing_bytes": 3}}}
    shapes = [("a", 128, 128), ("b", 256, 128)]
    rows = bench.record_rows(shapes, bench.per_shape_spreads(rounds), checks, ["solution", "baseline"], 1000.0)
    assert rows[0]["reference_us"] == 200 and rows[0]["reference_us_range"] == [100, 300]
    assert "reference_gpu_us" not in rows[0]
    assert rows[0]["solution"]["us"] == 11 and rows[0]["solution"]["us_range"] == [10, 12]
    assert rows[0]["solution"]["speedup"] == pytest.approx(200 / 11)
    assert rows[1]["baseline"]["passed"] is False and rows[1]["baseline"]["differing_bytes"] == 3
    assert rows[1]["baseline"]["us_range"] == [31, 33]


def test_one_round_prints_no_range():
    stat = {"median": 2.0, "min": 1.0, "max": 3.0}
    assert bench.rounds_note(stat, 1) == ""
    assert bench.rounds_note(stat, 4) == "median of 4 rounds, 1.00-3.00x"
    assert bench.parenthesis("leaderboard number", "") == "(leaderboard number)"


def test_shape_line_figures_and_failing_solution():
    M, H = 128, 128
    times = {"reference": 100.0, "reference_gpu": 40.0, "copy": 5.0, "solution": 10.0}
    line = bench.shape_line("128x128", M, H, times, ["solution", "baseline"], copy_gbps=1000.0)
    figures = bench.solution_figures(harness.min_bytes(M, H), 100.0, 5.0, 10.0, 1000.0)
    assert figures["speedup"] == pytest.approx(10.0) and figures["pct_floor"] == pytest.approx(50.0)
    assert figures["gbps"] == pytest.approx(harness.min_bytes(M, H) / 10e-6 / 1e9)
    assert line.split()[3:7] == ["100.0", "40.0", "5.0", "10.0"]
    assert line.split()[7] == "10.00"
    assert "FAILS CHECK" in line


# ---------------------------------------------------------------- the host-clock modes, on a stand-in device

class StandInDevice:
    """A solution and its stream on the CPU: each call sleeps host_s (its host path), then queues device_s of
    work, which starts when the call's host path ends or the work queued before it ends, whichever is later;
    synchronize() sleeps until the queue is empty. The first slow_first calls' host paths take slow_s instead."""

    def __init__(self, host_s, device_s, slow_first=0, slow_s=0.0):
        self.host_s, self.device_s, self.slow_first, self.slow_s = host_s, device_s, slow_first, slow_s
        self.busy_until, self.calls, self.args = 0.0, 0, []

    def solution(self, x, gy, *outs):
        self.calls += 1
        time.sleep(self.slow_s if self.calls <= self.slow_first else self.host_s)
        self.busy_until = max(time.perf_counter(), self.busy_until) + self.device_s
        self.args.append((x, gy))

    def synchronize(self):
        delay = self.busy_until - time.perf_counter()
        if delay > 0:
            time.sleep(delay)


HOST_S, DEVICE_S, CALLS = 0.002, 0.006, 10


@pytest.fixture
def stand_in(monkeypatch):
    device = StandInDevice(HOST_S, DEVICE_S)
    monkeypatch.setattr(torch.cuda, "synchronize", device.synchronize)
    for mode in bench.MODES:
        monkeypatch.setitem(bench.MODE_CALLS, mode, CALLS)
    return device


def test_the_modes_call_counts_are_the_stated_defaults():
    assert bench.MODES == ("host-timed", "cloned", "back-to-back", "host-us")
    assert bench.MODE_CALLS == {"host-timed": 50, "cloned": 50, "back-to-back": 200, "host-us": 200}


def _mode_us(mode, device):
    x, gy = torch.ones(2, 4), torch.zeros(2, 2)
    us = bench.mode_us(mode, device.solution, x, gy, ())
    return us, x, gy


def test_host_timed_holds_the_host_path_and_the_device_work_of_one_call(stand_in):
    us, x, gy = _mode_us("host-timed", stand_in)
    # synchronize, call (2 ms host, then 6 ms queued), synchronize: 8 ms, never less.
    assert 1e6 * (HOST_S + DEVICE_S) <= us < 1e6 * (HOST_S + DEVICE_S) * 1.5
    assert stand_in.calls == CALLS + 1  # one warm-up, untimed
    assert all(a is x and b is gy for a, b in stand_in.args)  # the inputs made before, never copied


def test_host_timed_is_the_median_not_the_mean(monkeypatch):
    # The warm-up and the first two timed calls take 40 ms of host time: the median of 10 does not see them.
    device = StandInDevice(HOST_S, DEVICE_S, slow_first=3, slow_s=0.04)
    monkeypatch.setattr(torch.cuda, "synchronize", device.synchronize)
    monkeypatch.setitem(bench.MODE_CALLS, "host-timed", CALLS)
    us, _, _ = _mode_us("host-timed", device)
    assert us < 1e6 * (HOST_S + DEVICE_S) * 1.5


def test_cloned_calls_on_copies_made_inside_the_timed_region(stand_in):
    us, x, gy = _mode_us("cloned", stand_in)
    assert 1e6 * (HOST_S + DEVICE_S) <= us < 1e6 * (HOST_S + DEVICE_S) * 1.5
    assert len(stand_in.args) == CALLS + 1
    for a, b in stand_in.args:
        assert a is not x and b is not gy and torch.equal(a, x) and torch.equal(b, gy)


def test_back_to_back_overlaps_the_host_path_with_the_device_work_before_it(stand_in):
    us, _, _ = _mode_us("back-to-back", stand_in)
    # The device is the slower: 6 ms a call, plus one host path (2 ms) before the first work is queued, over 10.
    assert 1e6 * DEVICE_S <= us < 1e6 * (DEVICE_S + HOST_S / CALLS) * 1.05


def test_host_us_times_the_host_path_only(stand_in):
    us, _, _ = _mode_us("host-us", stand_in)
    assert 1e6 * HOST_S <= us < 1e6 * DEVICE_S / 2
    assert stand_in.busy_until <= time.perf_counter()  # the device was waited for before it returned


def test_host_us_per_call_times_its_own_inputs_of_the_shape(stand_in, monkeypatch):
    real_make_inputs, real_new_outputs = harness.make_inputs, harness.new_outputs
    monkeypatch.setattr(harness, "make_inputs", lambda M, H, seed, family, device: real_make_inputs(M, H, seed, family))
    monkeypatch.setattr(harness, "new_outputs", lambda M, H, device="cpu": real_new_outputs(M, H))
    us = bench.host_us_per_call(stand_in.solution, 128, 256, calls=CALLS)
    assert 1e6 * HOST_S <= us < 1e6 * DEVICE_S / 2
    assert [tuple(x.shape) for x, _ in stand_in.args] == [(128, 512)] * (CALLS + 1)


def test_an_unknown_mode_is_refused():
    with pytest.raises(ValueError, match="unknown mode 'host us'"):
        bench.mode_us("host us", lambda *args: None, None, None, ())


# ---------------------------------------------------------------- main, GPU timings faked

@pytest.fixture
def fake_gpu(monkeypatch):
    """main() on the CPU: tensors made on the CPU, and every GPU measurement replaced by a fake that
    logs its kind and returns the next of a rising series of times."""
    calls = []

    def fake_time(kind):
        calls.append(kind)
        return 10.0 + len(calls)

    def fake_do_bench(fn):
        fn()
        return fake_time("do_bench")

    real_make_inputs, real_new_outputs = harness.make_inputs, harness.new_outputs
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(harness, "make_inputs", lambda M, H, seed, family, device: real_make_inputs(M, H, seed, family))
    monkeypatch.setattr(harness, "new_outputs", lambda M, H, device="cpu": real_new_outputs(M, H))
    monkeypatch.setattr(harness, "environment", lambda device: {"gpu": "fake", "torch": "t", "triton": "t"})
    monkeypatch.setattr(measure, "do_bench", fake_do_bench)
    monkeypatch.setattr(measure, "device_time_us", lambda fn: (fake_time("profile"), 23))
    monkeypatch.setattr(measure, "same_bytes_copy_us", lambda n_bytes: fake_time("copy"))
    monkeypatch.setattr(measure, "copy_bandwidth_gbps", lambda: 1000.0)
    monkeypatch.setattr(bench, "host_us_per_call", lambda fn, M, H: 20.0)
    monkeypatch.setenv(harness.ROUTE_ENV, "")  # recorded, so main's --route is undone after the test
    monkeypatch.delenv(harness.ROUTE_ENV)
    return calls


def test_main_interleaves_rounds_and_records_every_round(fake_gpu, tmp_path, capsys):
    # reference.py stands in for both solutions: plain PyTorch, fast on the CPU, and always exact.
    reference = str(harness.ROOT / "reference.py")
    record_path = tmp_path / "bench.json"
    code = bench.main(["--solution", reference, "--baseline", reference, "--shapes", "128x128", "256x128",
                       "--repeat", "3", "--json", str(record_path)])
    assert code == 0
    per_shape = ["do_bench", "profile", "copy", "do_bench", "do_bench"]  # reference, its GPU time, copy, solution, baseline
    assert fake_gpu == per_shape * 2 * 3

    out = capsys.readouterr().out
    assert "route: unknown; baseline: unknown" in out
    assert [line for line in out.splitlines() if line.startswith("round ")] == ["round 1 of 3", "round 2 of 3",
                                                                               "round 3 of 3"]
    assert "median (min-max) over 3 rounds" in out
    assert "the reference's 23 kernels in one cold-L2 call" in out
    assert "solution: arithmetic-mean speedup" in out and "median of 3 rounds" in out
    assert "solution time / baseline time:" in out

    record = json.loads(record_path.read_text())
    assert record["repeat"] == 3
    assert record["route"] == {"solution": {"requested": "automatic", "taken": "unknown"},
                               "baseline": {"requested": "automatic", "taken": "unknown"}}
    assert record["do_bench"] == measure.settings_record()
    assert len(record["rounds"]) == 3
    first = record["rounds"][0]["128x128"]
    assert first == {"reference": 11.0, "reference_gpu": 12.0, "copy": 13.0, "solution": 14.0, "baseline": 15.0}
    # Round 1 covers every shape before round 2 starts: the second shape's times follow the first's.
    assert record["rounds"][0]["256x128"]["reference"] == 16.0
    assert record["rounds"][1]["128x128"]["reference"] == 21.0
    # Even rounds time the baseline first.
    assert (record["rounds"][1]["128x128"]["baseline"], record["rounds"][1]["128x128"]["solution"]) == (24.0, 25.0)
    references = [r["128x128"]["reference"] for r in record["rounds"]]
    row = record["rows"][0]
    assert row["reference_us"] == statistics.median(references)
    assert row["reference_us_range"] == [min(references), max(references)]
    assert row["solution"]["passed"] and row["solution"]["differing_bytes"] == 0
    per_round = [bench.mean_speedup(r, "solution") for r in record["rounds"]]
    assert record["over_rounds"]["solution"]["arithmetic_mean_speedup"]["per_round"] == pytest.approx(per_round)
    assert record["arithmetic_mean_speedup"] == pytest.approx(statistics.median(per_round))


def test_main_refuses_a_solution_without_the_function_in_one_line(fake_gpu, tmp_path, capsys):
    path = tmp_path / "no_function.py"
    path.write_text("def something_else():\n    pass\n")
    assert bench.main(["--solution", str(path), "--shapes", "128x128"]) == 1
    assert capsys.readouterr().err == f"bench.py: error: {path} defines no function silu_dot_fwd_bwd_quant_fuse\n"
    assert fake_gpu == []  # nothing was timed


def test_main_with_one_round_prints_todays_summary_lines(fake_gpu, capsys):
    reference = str(harness.ROOT / "reference.py")
    assert bench.main(["--solution", reference, "--shapes", "128x128"]) == 0
    out = capsys.readouterr().out
    assert not [line for line in out.splitlines() if line.startswith("round ")]
    assert "median of" not in out and "min-max" not in out
    assert os.environ.get(harness.ROUTE_ENV) is None
    lines = out.splitlines()
    # reference 11, copy 13, solution 14 (the fakes' rising times)
    assert f"copy-speed ceiling: {11 / 13:.2f}x (arithmetic mean of reference us / copy us)" in lines
    assert f"solution: geometric-mean speedup {11 / 14:.2f}x over 1 shapes" in lines
    assert f"solution: arithmetic-mean speedup {11 / 14:.2f}x (leaderboard number)" in lines


# Stands in for a solution with routes: the route is fixed at its first call (route_for's or the function's),
# from SILU_DOT_ROUTE as it is then, as solution.py fixes it per device; the results are the reference's.
ROUTED_SOLUTION = """import os

import harness

ROUTES = ("fast", "portable")
_reference = harness.reference_fn()
_route = []


def route_for(device):
    if not _route:
        _route.append(os.environ.get("SILU_DOT_ROUTE") or "automatic")
    return _route[0]


def silu_dot_fwd_bwd_quant_fuse(*args):
    route_for(None)
    return _reference(*args)
"""


@pytest.mark.parametrize("exported, args, expected", [
    (None, ["--route", "portable"], {"solution": ("portable", "portable"), "baseline": ("automatic", "automatic")}),
    ("portable", ["--baseline-route", "fast"], {"solution": ("portable", "portable"), "baseline": ("fast", "fast")}),
    ("portable", ["--route", "fast"], {"solution": ("fast", "fast"), "baseline": ("automatic", "automatic")}),
])
def test_the_solution_and_the_baseline_each_take_their_own_route(exported, args, expected, fake_gpu, tmp_path,
                                                                  capsys, monkeypatch):
    if exported:
        monkeypatch.setenv(harness.ROUTE_ENV, exported)
    path = tmp_path / "routed.py"
    path.write_text(ROUTED_SOLUTION)
    record_path = tmp_path / "bench.json"
    assert bench.main(["--solution", str(path), "--baseline", str(path), "--shapes", "128x128", *args,
                       "--json", str(record_path)]) == 0
    record = json.loads(record_path.read_text())
    assert {name: (r["requested"], r["taken"]) for name, r in record["route"].items()} == expected
    forced = {name: " (forced)" if requested != "automatic" else "" for name, (requested, _) in expected.items()}
    line = (f"route: {expected['solution'][1]}{forced['solution']}; "
            f"baseline: {expected['baseline'][1]}{forced['baseline']}")
    assert line in capsys.readouterr().out.splitlines()
    assert os.environ.get(harness.ROUTE_ENV) == exported  # as it was before the run
