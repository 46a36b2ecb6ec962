"""bench.py without a GPU: its command line, the aggregation over rounds, the host-clock modes (their timers on a
stand-in device whose calls sleep a known host and device time, their marks, means and record rows), and main's
flow with the GPU timings replaced by fakes."""
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


# ---------------------------------------------------------------- the modes' marks, means and rows

def test_host_bound_marks_a_solution_whose_host_us_is_above_the_clear():
    mode_times = {"host-timed": {"reference": 900.0, "solution": 99.0, "baseline": 99.0},
                  "host-us": {"reference": 500.0, "solution": 61.0, "baseline": 60.0}}
    assert bench.host_bound(mode_times, 60.0, ["solution", "baseline"]) == ["solution"]  # 60 is not above 60
    assert bench.host_bound(mode_times, 59.0, ["baseline", "solution"]) == ["baseline", "solution"]
    assert bench.host_bound(mode_times, 100.0, ["solution", "baseline"]) == []  # the reference is never marked
    assert bench.host_bound(mode_times, None, ["solution"]) == []  # no clear measured
    assert bench.host_bound({"host-timed": mode_times["host-timed"]}, 1.0, ["solution"]) == []  # no host-us
    del mode_times["host-us"]["solution"]  # failed the check there: not timed, not marked
    assert bench.host_bound(mode_times, 1.0, ["solution", "baseline"]) == ["baseline"]


def test_flagged_rounds_count_from_one():
    flags = [{}, {"a": ["solution"]}, {"a": ["solution", "baseline"], "b": ["baseline"]}]
    assert bench.flagged_rounds(flags, "a", "solution") == [2, 3]
    assert bench.flagged_rounds(flags, "b", "baseline") == [3]
    assert bench.flagged_rounds(flags, "b", "solution") == []


def test_the_flag_note_names_each_marked_time_or_says_why_there_is_none():
    names, labels = ["solution", "baseline"], ["a", "b"]
    assert bench.flag_note([{}], None, [], names, labels) is None  # --modes none: the output as before
    assert bench.flag_note([{}], None, ["cloned"], names, labels) == (
        "no ! marks: host-us is not among --modes (a mark compares its time with the L2 clear's)")
    clear = "the L2 clear's 61.5 us (device time of zero_() on do_bench's 256 MB buffer)"
    assert bench.flag_note([{}, {}], 61.5, list(bench.MODES), names, labels) == (
        f"no ! marks: no solution's host us per call exceeded {clear}")
    one_round = bench.flag_note([{"b": ["solution"]}], 61.5, ["host-us"], names, labels)
    assert one_round.startswith(f"! host us per call above {clear}: do_bench starts its clock as the clear ends")
    assert one_round.endswith("; marked: solution b")
    flags = [{"b": ["baseline"]}, {"a": ["solution", "baseline"], "b": ["baseline"]}]
    assert bench.flag_note(flags, 61.5, ["host-us"], names, labels).endswith(
        "; marked: solution a (round 2), baseline a (round 2), baseline b (rounds 1, 2)")


def test_a_marked_time_ends_in_an_exclamation_mark_and_keeps_the_columns():
    times = {"reference": 100.0, "reference_gpu": 40.0, "copy": 5.0, "solution": 10.0, "baseline": 20.0}
    plain = bench.shape_line("128x128", 128, 128, times, ["solution", "baseline"], 1000.0)
    marked = bench.shape_line("128x128", 128, 128, times, ["solution", "baseline"], 1000.0, ["solution"])
    assert len(marked) == len(plain)
    assert marked.split()[6] == "10.0!" and plain.split()[6] == "10.0"
    assert marked.split()[:6] + marked.split()[7:] == plain.split()[:6] + plain.split()[7:]
    spreads = bench.per_shape_spreads([{"a": times}, {"a": dict(times, solution=12.0)}])
    line = bench.spread_line("a", spreads["a"], ["solution", "baseline"], {"baseline"})
    assert "11.0 (10.0-12.0) " in line and "20.0 (20.0-20.0)!" in line


def _mode_rounds():
    """Three rounds of two modes on two shapes: host-timed's speedups 10 and 4 (then 20 and 4, 5 and 2),
    host-us' all 2; the baseline twice the solution's time on a and equal on b (ratio sqrt(0.5))."""
    def shape(ref, sol, base, host):
        return {"host-timed": {"reference": ref, "solution": sol, "baseline": base},
                "host-us": {"reference": 2 * host, "solution": host, "baseline": host}}
    return [{"a": shape(100.0, 10.0, 20.0, 30.0), "b": shape(80.0, 20.0, 20.0, 40.0)},
            {"a": shape(200.0, 10.0, 20.0, 31.0), "b": shape(80.0, 20.0, 20.0, 41.0)},
            {"a": shape(50.0, 10.0, 20.0, 32.0), "b": shape(40.0, 20.0, 20.0, 42.0)}]


def test_a_mode_view_is_laid_out_as_do_bench_rounds():
    view = bench.mode_view(_mode_rounds(), "host-us")
    assert len(view) == 3 and view[0] == {"a": {"reference": 60.0, "solution": 30.0, "baseline": 30.0},
                                          "b": {"reference": 80.0, "solution": 40.0, "baseline": 40.0}}
    assert bench.mode_view([{"a": {"cloned": {"reference": 1.0}}}], "host-us") == [{}]


def test_each_modes_means_are_taken_per_round_then_their_median():
    stats = bench.mode_means_over_rounds(_mode_rounds(), ["host-timed", "host-us"], ["solution", "baseline"])
    timed = stats["host-timed"]["solution"]["arithmetic_mean_speedup"]
    assert timed["per_round"] == pytest.approx([(10 + 4) / 2, (20 + 4) / 2, (5 + 2) / 2])
    assert (timed["median"], timed["min"], timed["max"]) == pytest.approx((7.0, 3.5, 12.0))
    base = stats["host-timed"]["baseline"]["arithmetic_mean_speedup"]
    assert base["per_round"] == pytest.approx([(5 + 4) / 2, (10 + 4) / 2, (2.5 + 2) / 2])
    ratio = stats["host-timed"]["solution_over_baseline_time"]
    assert ratio["per_round"] == pytest.approx([math.sqrt(0.5)] * 3)
    assert ratio["median"] == pytest.approx(math.sqrt(0.5))
    host = stats["host-us"]
    assert host["solution"]["arithmetic_mean_speedup"]["per_round"] == pytest.approx([2.0] * 3)
    assert host["solution_over_baseline_time"]["median"] == pytest.approx(1.0)
    alone = bench.mode_means_over_rounds(_mode_rounds(), ["host-us"], ["solution"])
    assert list(alone) == ["host-us"] and list(alone["host-us"]) == ["solution"]


def test_a_modes_summary_line_gives_each_mean_and_with_rounds_their_range():
    rounds = _mode_rounds()
    stats = bench.mode_means_over_rounds(rounds, ["host-timed"], ["solution", "baseline"])["host-timed"]
    assert bench.mode_summary_line("host-timed", stats, ["solution", "baseline"], 3) == (
        "host-timed: arithmetic-mean speedup solution 7.00x (median of 3 rounds, 3.50-12.00x), "
        "baseline 4.50x (median of 3 rounds, 2.25-7.00x); solution time / baseline time 0.707 "
        "(median of 3 rounds, 0.707-0.707)")
    one = bench.mode_means_over_rounds(rounds[:1], ["host-timed"], ["solution"])["host-timed"]
    assert bench.mode_summary_line("host-timed", one, ["solution"], 1) == (
        "host-timed: arithmetic-mean speedup solution 7.00x")


def test_the_modes_table_has_a_column_a_mode_and_series():
    series = ["reference", "solution", "baseline"]
    header = bench.modes_header(["host-timed", "host-us"], series).splitlines()
    spreads = {mode: bench.per_shape_spreads(bench.mode_view(_mode_rounds(), mode))
               for mode in ["host-timed", "host-us"]}
    del spreads["host-us"]["b"]["baseline"]  # not timed there
    line = bench.modes_line("b", spreads, ["host-timed", "host-us"], series)
    assert header[1].split() == ["shape"] + series * 2
    assert len(header[0]) == len(header[1]) == len(line)
    assert header[0].split("-") != [header[0]] and "host-timed" in header[0] and "host-us" in header[0]
    assert line.split() == ["b", "80.0", "20.0", "20.0", "82.0", "41.0", "-"]


def test_record_rows_get_each_modes_medians_ranges_speedups_and_marks():
    rounds = _mode_rounds()
    del rounds[1]["b"]["host-us"]["solution"]  # failed the check in round 2: not timed
    flags = [{"a": ["solution"]}, {}, {"a": ["solution", "baseline"]}]
    rows = [{"shape": "a"}, {"shape": "b"}]
    bench.add_mode_rows(rows, rounds, flags, ["host-timed", "host-us"], ["solution", "baseline"])
    assert rows[0]["modes"]["host-timed"] == {
        "reference": {"us": 100.0, "us_range": [50.0, 200.0]},
        "solution": {"us": 10.0, "us_range": [10.0, 10.0], "speedup": 10.0},
        "baseline": {"us": 20.0, "us_range": [20.0, 20.0], "speedup": 5.0}}
    assert rows[1]["modes"]["host-us"]["solution"] == {"us": 41.0, "us_range": [40.0, 42.0],
                                                       "speedup": pytest.approx(82 / 41)}
    assert rows[0]["host_over_l2_clear_rounds"] == {"solution": [1, 3], "baseline": [3]}
    assert rows[1]["host_over_l2_clear_rounds"] == {"solution": [], "baseline": []}
    none = [{"shape": "a"}]
    assert bench.add_mode_rows(none, [{}], [{}], [], ["solution"]) == [
        {"shape": "a", "modes": {}, "host_over_l2_clear_rounds": {"solution": []}}]


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
REAL_MODE_US = bench.mode_us  # fake_gpu replaces it


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
    doc = " ".join(bench.__doc__.split())  # --help says the same
    assert "the median over 50 calls" in doc and "200 calls back to back" in doc and "host-us the host time of one " \
        "call: 200 calls" in doc


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
    # The device is the slower: 6 ms a call, plus one host path (2 ms) before the first work is queued, over 10
    # (6.2 ms); a synchronisation after each call would make it 8 ms. The bound leaves room for a loaded CPU.
    assert 1e6 * DEVICE_S <= us < 1e6 * (DEVICE_S + HOST_S) * 0.94


def test_host_us_times_the_host_path_only(stand_in):
    us, _, _ = _mode_us("host-us", stand_in)
    assert 1e6 * HOST_S <= us < 1e6 * DEVICE_S * 0.9  # 2 ms; with the device waited for, 6 ms
    assert stand_in.busy_until <= time.perf_counter()  # the device was waited for before it returned


def test_host_us_per_call_times_its_own_inputs_of_the_shape(stand_in, monkeypatch):
    real_make_inputs, real_new_outputs = harness.make_inputs, harness.new_outputs
    monkeypatch.setattr(harness, "make_inputs", lambda M, H, seed, family, device: real_make_inputs(M, H, seed, family))
    monkeypatch.setattr(harness, "new_outputs", lambda M, H, device="cpu": real_new_outputs(M, H))
    us = bench.host_us_per_call(stand_in.solution, 128, 256, calls=CALLS)
    assert 1e6 * HOST_S <= us < 1e6 * DEVICE_S * 0.9
    assert [tuple(x.shape) for x, _ in stand_in.args] == [(128, 512)] * (CALLS + 1)


def test_an_unknown_mode_is_refused():
    with pytest.raises(ValueError, match="unknown mode 'host us'"):
        bench.mode_us("host us", lambda *args: None, None, None, ())


# ---------------------------------------------------------------- main, GPU timings faked

FAKE_L2_CLEAR_US = 60.0


@pytest.fixture
def fake_gpu(monkeypatch):
    """main() on the CPU: tensors made on the CPU, and every GPU measurement replaced by a fake that
    logs its kind and returns the next of a rising series of times: do_bench, the profile, the copy, and
    each mode's time (logged as the mode's name). The L2 clear takes FAKE_L2_CLEAR_US, not logged."""
    calls = []

    def fake_time(kind):
        calls.append(kind)
        return 10.0 + len(calls)

    def fake_do_bench(fn):
        fn()
        return fake_time("do_bench")

    def fake_mode_us(mode, fn, x, gy, outs):
        fn(x, gy, *outs)
        return fake_time(mode)

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
    monkeypatch.setattr(bench, "mode_us", fake_mode_us)
    monkeypatch.setattr(measure, "l2_clear_us", lambda: FAKE_L2_CLEAR_US)
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
    # reference, its GPU time, copy, solution, baseline; then each mode for the reference and the two solutions
    per_shape = ["do_bench", "profile", "copy", "do_bench", "do_bench"] + [m for m in bench.MODES for _ in range(3)]
    assert fake_gpu == per_shape * 2 * 3
    step = len(per_shape)  # the fakes' time rises by this much from one shape to the next

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
    assert record["rounds"][0]["256x128"]["reference"] == 11.0 + step
    assert record["rounds"][1]["128x128"]["reference"] == 11.0 + 2 * step
    # Even rounds time the baseline first.
    assert (record["rounds"][1]["128x128"]["baseline"], record["rounds"][1]["128x128"]["solution"]) == (
        14.0 + 2 * step, 15.0 + 2 * step)
    # The modes follow do_bench on each shape, mode by mode, the reference first, then the solutions in turn.
    modes = record["modes"]["rounds"]
    assert modes[0]["128x128"]["host-timed"] == {"reference": 16.0, "solution": 17.0, "baseline": 18.0}
    assert modes[0]["128x128"]["host-us"] == {"reference": 25.0, "solution": 26.0, "baseline": 27.0}
    assert modes[1]["128x128"]["host-timed"] == {"reference": 16.0 + 2 * step, "baseline": 17.0 + 2 * step,
                                                 "solution": 18.0 + 2 * step}
    # Host us above the L2 clear's 60 us marks a do_bench time: in round 2 on 128x128 the baseline's host us is
    # the clear's 60 us, not above it (unmarked), and the solution's 61; from then on every later one is above.
    assert modes[1]["128x128"]["host-us"] == {"reference": 59.0, "baseline": 60.0, "solution": 61.0}
    assert record["modes"]["host_over_l2_clear"] == [{}, {"128x128": ["solution"], "256x128": ["solution", "baseline"]},
                                                     {"128x128": ["solution", "baseline"],
                                                      "256x128": ["solution", "baseline"]}]
    assert record["rows"][0]["host_over_l2_clear_rounds"] == {"solution": [2, 3], "baseline": [3]}
    assert "! host us per call above the L2 clear's 60.0 us" in out
    note = next(line for line in out.splitlines() if line.startswith("! host us"))
    assert note.endswith("; marked: solution 128x128 (rounds 2, 3), solution 256x128 (rounds 2, 3), "
                         "baseline 128x128 (round 3), baseline 256x128 (rounds 2, 3)")
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


# Each mode's time of each series on each shape (M rows): the reference's, the solution's, the baseline's. On 128
# rows the solution's host us (70) is above the fake L2 clear's 60 us, the baseline's (50) is not.
MODE_TABLE = {128: {"host-timed": (400.0, 20.0, 25.0), "cloned": (440.0, 40.0, 44.0),
                    "back-to-back": (300.0, 10.0, 12.0), "host-us": (250.0, 70.0, 50.0)},
              256: {"host-timed": (800.0, 40.0, 80.0), "cloned": (880.0, 88.0, 88.0),
                    "back-to-back": (600.0, 30.0, 60.0), "host-us": (500.0, 40.0, 45.0)}}
SERIES_OF_MODULE = {"reference_for_harness": 0, "solution_for_bench": 1, "baseline_for_bench": 2}


def test_main_prints_and_records_every_mode_and_marks_a_host_bound_time(fake_gpu, monkeypatch, tmp_path, capsys):
    def table_mode_us(mode, fn, x, gy, outs):
        fake_gpu.append(mode)
        return MODE_TABLE[x.shape[0]][mode][SERIES_OF_MODULE[fn.__module__]]

    monkeypatch.setattr(bench, "mode_us", table_mode_us)
    reference = str(harness.ROOT / "reference.py")
    record_path = tmp_path / "bench.json"
    assert bench.main(["--solution", reference, "--baseline", reference, "--shapes", "128x128", "256x128",
                       "--json", str(record_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert (f"L2 clear: {FAKE_L2_CLEAR_US:.1f} us (device time of zero_() on do_bench's 256 MB buffer; a do_bench "
            "time whose call's host us is above it is marked !)") in lines
    # do_bench's lines: the solution's time on 128x128 marked, nothing else.
    small = next(line for line in lines if line.split()[:1] == ["128x128"])
    large = next(line for line in lines if line.split()[:1] == ["256x128"])
    assert small.split()[6] == "14.0!" and small.split()[11] == "15.0" and "!" not in large
    assert [line for line in lines if "marked: " in line][0].endswith("; marked: solution 128x128")
    # The modes' table: a row a shape, each mode's reference, solution and baseline.
    table = [line for line in lines if line.split()[:1] == ["128x128"]]
    assert len(table) == 2 and table[1].split() == ["128x128"] + [f"{us:.1f}" for mode in bench.MODES
                                                                  for us in MODE_TABLE[128][mode]]
    # One summary line a mode: the mean over shapes of reference / solution, and the paired ratio.
    assert ("host-timed: arithmetic-mean speedup solution 20.00x, baseline 13.00x; solution time / baseline "
            f"time {math.sqrt(0.8 * 0.5):.3f}") in lines
    assert f"cloned: arithmetic-mean speedup solution {(11 + 10) / 2:.2f}x, baseline {(10 + 10) / 2:.2f}x; " \
           f"solution time / baseline time {math.sqrt(40 / 44):.3f}" in lines
    assert f"host-us: arithmetic-mean speedup solution {(250 / 70 + 500 / 40) / 2:.2f}x, " \
           f"baseline {(5 + 500 / 45) / 2:.2f}x; solution time / baseline time {math.sqrt(1.4 * 40 / 45):.3f}" in lines

    record = json.loads(record_path.read_text())
    # do_bench's rounds and rows keep their layout; the modes come beside them.
    assert set(record["rounds"][0]["128x128"]) == {"reference", "reference_gpu", "copy", "solution", "baseline"}
    assert record["modes"]["timed"] == list(bench.MODES) and record["modes"]["calls"] == bench.MODE_CALLS
    assert record["modes"]["l2_clear_us"] == FAKE_L2_CLEAR_US
    assert record["modes"]["rounds"][0]["256x128"]["back-to-back"] == {"reference": 600.0, "solution": 30.0,
                                                                       "baseline": 60.0}
    assert record["modes"]["host_over_l2_clear"] == [{"128x128": ["solution"]}]
    host_timed = record["modes"]["over_rounds"]["host-timed"]
    assert host_timed["solution"]["arithmetic_mean_speedup"]["median"] == pytest.approx(20.0)
    assert host_timed["solution_over_baseline_time"]["median"] == pytest.approx(math.sqrt(0.4))
    row = record["rows"][0]
    assert row["solution"]["us"] == 14.0 and row["reference_us"] == 11.0  # do_bench's, as before
    assert row["modes"]["host-us"]["solution"] == {"us": 70.0, "us_range": [70.0, 70.0], "speedup": 250 / 70}
    assert row["modes"]["host-us"]["reference"] == {"us": 250.0, "us_range": [250.0, 250.0]}
    assert row["host_over_l2_clear_rounds"] == {"solution": [1], "baseline": []}
    assert record["rows"][1]["host_over_l2_clear_rounds"] == {"solution": [], "baseline": []}


def test_main_with_modes_none_times_do_bench_alone_as_before(fake_gpu, monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(measure, "l2_clear_us", lambda: pytest.fail("the L2 clear was timed"))
    record_path = tmp_path / "bench.json"
    assert bench.main(["--solution", str(harness.ROOT / "reference.py"), "--shapes", "128x128", "--modes", "none",
                       "--json", str(record_path)]) == 0
    assert fake_gpu == ["do_bench", "profile", "copy", "do_bench"]
    out = capsys.readouterr().out
    assert "host-clock modes" not in out and "L2 clear:" not in out and "marks" not in out and "!" not in out
    assert out.splitlines()[-1] == f"solution: arithmetic-mean speedup {11 / 14:.2f}x (leaderboard number)"
    record = json.loads(record_path.read_text())
    assert record["modes"] == {"timed": [], "calls": {}, "l2_clear_us": None, "rounds": [{"128x128": {}}],
                               "host_over_l2_clear": [{}], "over_rounds": {}}
    assert record["rows"][0]["modes"] == {} and record["rows"][0]["host_over_l2_clear_rounds"] == {"solution": []}


def test_main_times_only_the_modes_asked_for(fake_gpu, monkeypatch, capsys):
    monkeypatch.setattr(measure, "l2_clear_us", lambda: pytest.fail("the L2 clear was timed"))
    assert bench.main(["--solution", str(harness.ROOT / "reference.py"), "--shapes", "128x128",
                       "--modes", "back-to-back", "cloned"]) == 0
    assert fake_gpu == ["do_bench", "profile", "copy", "do_bench", "cloned", "cloned", "back-to-back", "back-to-back"]
    lines = capsys.readouterr().out.splitlines()
    assert "no ! marks: host-us is not among --modes (a mark compares its time with the L2 clear's)" in lines
    assert [line.split(":")[0] for line in lines if ": arithmetic-mean speedup" in line] == [
        "solution", "cloned", "back-to-back"]


# Sleeps 2 ms a call and writes the reference's outputs, computed once per input shape and then copied, so that a
# call takes little more than its sleep.
SLEEPS_2_MS = """import time

import harness

_reference = harness.reference_fn()
_outputs = {}


def silu_dot_fwd_bwd_quant_fuse(x, grad_y, *outs, group_size=128):
    time.sleep(0.002)
    if x.shape not in _outputs:
        _outputs[x.shape] = harness.run_reference(x, grad_y, _reference)
    for out, computed in zip(outs, _outputs[x.shape]):
        out.copy_(computed)
    return outs
"""


def test_main_with_the_real_mode_timers_on_a_solution_that_sleeps(fake_gpu, monkeypatch, tmp_path, capsys):
    # The mode timers themselves, on the CPU (synchronize is a no-op there): the solution's 2 ms sleep is in every
    # mode's time, above the fake L2 clear's 60 us, so its do_bench time is marked.
    monkeypatch.setattr(bench, "mode_us", REAL_MODE_US)
    for mode in bench.MODES:
        monkeypatch.setitem(bench.MODE_CALLS, mode, 3)
    path = tmp_path / "sleeps.py"
    path.write_text(SLEEPS_2_MS)
    record_path = tmp_path / "bench.json"
    assert bench.main(["--solution", str(path), "--shapes", "128x128", "--json", str(record_path)]) == 0
    record = json.loads(record_path.read_text())
    modes = record["rows"][0]["modes"]
    for mode in bench.MODES:
        assert 2000 <= modes[mode]["solution"]["us"] < 100_000, mode
        assert modes[mode]["reference"]["us"] > 0
    assert record["modes"]["calls"] == dict.fromkeys(bench.MODES, 3)
    assert record["rows"][0]["host_over_l2_clear_rounds"] == {"solution": [1]}
    assert "marked: solution 128x128" in capsys.readouterr().out


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
