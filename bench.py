"""Times a solution against the reference on the benchmark shapes (GPU only).

    python bench.py [--solution PATH] [--baseline PATH] [--shapes GROUP|MxH|ExTxH ...] [--repeat N]
                    [--route ROUTE] [--baseline-route ROUTE] [--modes MODE ...] [--json PATH]

Each do_bench time is triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median") (measure.py
holds the settings): warmup and rep are milliseconds, and do_bench clears L2 (writes a 256 MB
buffer) before every timed call, so every call starts cold. A shape whose result fails the judge's
comparison is reported as failing and not timed. GB/s counts the minimum traffic (each input read
once, each output written once, 9.09375 * M * H bytes); % copy is that rate over a measured 1 GiB
device-to-device copy.

"copy us" is a device-to-device copy that moves the same minimum bytes (half read, half written),
timed the same way. It is the floor for the shape under this timing: do_bench clears L2 by writing
a buffer, so L2 starts full of dirty lines and every call, copy included, pays for writing them back
as it brings in its own data -- on the small shapes a fifth to a quarter of a copy's time
(results/l2-flush-probe-h100-2026-11-21.txt: 13.4 against 10.9 us on 8x128x2560). "% floor" is
copy us over solution us, and "copy-speed ceiling" is the mean speedup that a kernel running at copy
speed on every shape would get against the same reference times.

"ref gpu us" is the device time of the reference's kernels in one call (torch.profiler, summed).
The reference launches dozens of small PyTorch kernels; where its do_bench time is far above its
GPU time, the rest is the GPU waiting for the host to launch them, and that host time is what
makes the reference's time, and with it every speedup, swing from run to run.

--repeat N times everything N times in rounds: round r times, shape by shape, the reference, the
copy, the solution and the baseline (then the modes, below), so that a drift in the machine hits all
of them alike; even rounds time the baseline before the solution, so that neither always runs in the
other's wake. With N > 1 a table of each time's median and min-max over the rounds follows the
rounds, and each mean below is taken per round and reported as its median over the rounds with min-max.
do_bench's summary lines are the arithmetic-mean speedup (the leaderboard number) and the geometric
mean; with --baseline, also the solution's time over the baseline's: per round the geometric mean over
shapes of solution us / baseline us (below 1: the solution is faster).

--route forces one of the solution's ROUTES (default: SILU_DOT_ROUTE as set, else the solution's own
choice), --baseline-route one of the baseline's (default: the baseline's own choice), so that a forced
rung can be timed against the baseline's automatic route in one run. A solution reads SILU_DOT_ROUTE at
its first call on a device: each solution makes its first calls with the variable set to its own route
(unset for its own choice), and is timed on that route from then on. The route each took is printed (its
route_for(device); "unknown" if it has none).

The judge's timing method is not published, so beside do_bench each shape is timed in host-clock modes
(time.perf_counter, no L2 clear; the inputs and outputs made before, one untimed warm-up call), for the
reference, the solution and the baseline, in every round after the shape's do_bench times (--modes picks
them; default: all, "none" for do_bench alone):
  host-timed    synchronize, call, synchronize: the median over 50 calls (a harness timing
                `synchronize(); op(...); synchronize()`: host path, kernels and the wait for them);
  cloned        the same with x.clone() and grad_y.clone() inside the timed region;
  back-to-back  200 calls back to back, then one synchronize: the total over 200 (host and device overlap);
  host-us       the host time of one call: 200 calls, no synchronisation between, the clock stopped before
                the device is waited for (host_us_per_call's measure, at every shape).
Before the rounds the L2 clear's device time is measured (zero_() of do_bench's 256 MB buffer between CUDA
events). do_bench starts its clock as the clear ends, so where a solution's host-us on a shape exceeds the
clear, its call launches its kernel after the clock started and its do_bench time there can hold host time:
that time ends in '!', and a footnote under the rounds names each one (the reference is never marked). A
table of the modes' times (a column a mode and series, each the median over the rounds) and one line a mode
follow do_bench's summary: each solution's arithmetic-mean speedup in that mode (reference us / its us, the
mean over shapes) and, with --baseline, solution time / baseline time (the geometric mean over shapes),
each per round and then, as do_bench's, the median over the rounds with min-max.

The --json record holds every round's times as rounds[r][shape][series] in microseconds
(series: reference, reference_gpu, copy, solution, baseline); rows hold the medians. The modes are under
"modes": what was timed ("timed", "calls"), "l2_clear_us", every round's times as rounds[r][shape][mode]
[series], the marks as host_over_l2_clear[r][shape] (the solutions marked), the means ("over_rounds"
[mode]); each row has rows[i]["modes"][mode][series] ({"us", "us_range", and "speedup" for a solution})
and rows[i]["host_over_l2_clear_rounds"][name] (the rounds, from 1, that marked its do_bench time).

Each solution's first call (seed 0 randn inputs of the smallest shape, under its own route) comes before
any timing: where it raises (a forced route whose rung was left: its probe fails, or a kernel does not
compile or load; or any other exception), bench.py says so in one line on stderr, naming the route and
giving the solution's own words, and exits 1. A later call that raises fails its shape's check, with its
exception printed below the shape's line and kept in the record's row ("raised").

Exit code: 0 when the solution passed the check on every shape, 1 when it failed one (or a solution
file does not parse or import, or a first call raises), 2 for a usage error or when there is no GPU; the
arguments (the routes against the solutions' ROUTES included) are checked first.
"""
import argparse
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path
from typing import NamedTuple

import torch

import harness
import measure

# The host-clock modes: how a judge may time a call, beside do_bench (the module's docstring says what each is).
# Each is timed after one untimed warm-up call, on inputs and outputs made before it.
MODES = ("host-timed", "cloned", "back-to-back", "host-us")
MODE_CALLS = {"host-timed": 50, "cloned": 50, "back-to-back": 200, "host-us": 200}

# ---------------------------------------------------------------- command line

def parse_args(argv=None):
    """The arguments, each checked before anything runs; a usage error exits 2 with one line."""
    parser = harness.ArgumentParser(prog="bench.py", description=__doc__,
                                    formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--solution", type=harness.existing_file, default=str(harness.ROOT / "solution.py"),
                        metavar="PATH", help="the solution file (default: solution.py beside bench.py)")
    parser.add_argument("--baseline", type=harness.existing_file, metavar="PATH",
                        help="a second solution file, timed side by side")
    parser.add_argument("--shapes", nargs="+", type=harness.shape_group, metavar="SHAPES",
                        help="shape groups from shapes.json, MxH or ExTxH, M and H multiples of 128 "
                        "(default: benchmark)")
    parser.add_argument("--repeat", type=harness.at_least_one("rounds"), default=1, metavar="N",
                        help="time every shape N times, in interleaved rounds (default: 1)")
    parser.add_argument("--route", metavar="ROUTE",
                        help=f"force one of the solution's ROUTES (default: {harness.ROUTE_ENV} as set, else the "
                        "solution chooses)")
    parser.add_argument("--baseline-route", metavar="ROUTE",
                        help="force one of the baseline's ROUTES (default: the baseline chooses)")
    parser.add_argument("--modes", nargs="+", type=mode_name, metavar="MODE",
                        help=f"the host-clock modes timed beside do_bench: any of {', '.join(MODES)}, or none "
                        "(default: all)")
    parser.add_argument("--json", type=harness.json_destination, metavar="PATH",
                        help="write the record here (into a folder that exists)")
    args = parser.parse_args(argv)
    if args.baseline_route and not args.baseline:
        parser.error("argument --baseline-route: there is no --baseline to force it on")
    if args.modes and "none" in args.modes and len(set(args.modes)) > 1:
        parser.error("argument --modes: none times no mode, so it takes no other")
    args.modes = [mode for mode in MODES if args.modes is None or mode in args.modes]
    return args


def mode_name(text):
    """argparse type of a --modes word: one of MODES, or none (do_bench alone, as before the modes)."""
    if text not in (*MODES, "none"):
        raise argparse.ArgumentTypeError(f"unknown mode {text!r}; expected {', '.join(MODES)} or none")
    return text


def load_solutions(args):
    """{name: module} of the solution and the baseline, each parsed and loaded: SolutionError otherwise."""
    paths = {"solution": args.solution, **({"baseline": args.baseline} if args.baseline else {})}
    for path in paths.values():
        harness.parse_solution(path)
    return {name: harness.load_solution(path, name=f"{name}_for_bench") for name, path in paths.items()}


def forced_routes(args, modules):
    """{name: the route forced on it, or None for its own choice}: the solution's from --route or, without
    it, the environment; the baseline's from --baseline-route. ValueError (one line) for a route that is
    not among that solution's ROUTES."""
    asked = {"solution": (args.route, "argument --route"),
             "baseline": (args.baseline_route, "argument --baseline-route")}
    if not args.route and os.environ.get(harness.ROUTE_ENV):
        asked["solution"] = (os.environ[harness.ROUTE_ENV], harness.ROUTE_ENV)
    forced = {}
    for name, module in modules.items():
        route, source = asked[name]
        if route:
            try:
                harness.check_route(module, route)
            except ValueError as exc:
                raise ValueError(f"{source}: {exc}") from None
        forced[name] = route or None
    return forced


def error(message, exit_code):
    print(f"bench.py: error: {message}", file=sys.stderr)
    return exit_code


def header(env):
    return f"bench.py on {env['gpu']} (torch {env['torch']}, triton {env['triton']}); {measure.settings_text()}"


# ---------------------------------------------------------------- aggregation (plain numbers, no GPU)
# A round is {shape label: {series: us}}, series being "reference", "reference_gpu", "copy" and each
# solution's name; a solution that failed the check on a shape has no time there.

def spread(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def per_shape_spreads(rounds):
    """{shape: {series: spread}} over the rounds in which each series has a time."""
    collected = {}
    for round_times in rounds:
        for shape, times in round_times.items():
            for series, us in times.items():
                collected.setdefault(shape, {}).setdefault(series, []).append(us)
    return {shape: {series: spread(values) for series, values in by_series.items()}
            for shape, by_series in collected.items()}


def mean_speedup(round_times, name):
    """Arithmetic mean over shapes of reference us / name us: the leaderboard number of one round."""
    speedups = [t["reference"] / t[name] for t in round_times.values() if name in t]
    return statistics.fmean(speedups) if speedups else math.nan


def geometric_mean_speedup(round_times, name):
    speedups = [t["reference"] / t[name] for t in round_times.values() if name in t]
    return statistics.geometric_mean(speedups) if speedups else math.nan


def paired_time_ratio(round_times, name, other):
    """Geometric mean over the shapes both were timed on of name us / other us, in one round."""
    ratios = [t[name] / t[other] for t in round_times.values() if name in t and other in t]
    return statistics.geometric_mean(ratios) if ratios else math.nan


def over_rounds(rounds, per_round, *args):
    values = [per_round(round_times, *args) for round_times in rounds]
    return {"per_round": values, **spread(values)}


def means_over_rounds(rounds, names):
    summary = {"copy_speed_ceiling": over_rounds(rounds, mean_speedup, "copy")}
    for name in names:
        summary[name] = {"arithmetic_mean_speedup": over_rounds(rounds, mean_speedup, name),
                         "geometric_mean_speedup": over_rounds(rounds, geometric_mean_speedup, name)}
    if "baseline" in names:
        summary["solution_over_baseline_time"] = over_rounds(rounds, paired_time_ratio, "solution", "baseline")
    return summary


def merge_checks(merged, shape_checks):
    """Fold one round's checks of a shape into merged: a solution passes only if it passed every round; the
    first exception a call raised is kept."""
    for name, check in shape_checks.items():
        entry = merged.setdefault(name, {"passed": True, "differing_bytes": 0})
        entry["passed"] = entry["passed"] and check["passed"]
        entry["differing_bytes"] = max(entry["differing_bytes"], check["differing_bytes"])
        if "raised" in check:
            entry.setdefault("raised", check["raised"])


def solution_figures(min_bytes, reference_us, copy_us, us, copy_gbps):
    gbps = min_bytes / (us * 1e-6) / 1e9
    return {"us": us, "speedup": reference_us / us, "gbps": gbps, "pct_copy": 100 * gbps / copy_gbps,
            "pct_floor": 100 * copy_us / us}


def record_rows(shapes, spreads, checks, names, copy_gbps):
    """The JSON record's per-shape rows: median times with their [min, max], and each solution's
    check and figures from the medians."""
    rows = []
    for label, M, H in shapes:
        s = spreads[label]
        row = {"shape": label, "M": M, "H": H, "min_bytes": harness.min_bytes(M, H)}
        for series, key in (("reference", "reference_us"), ("reference_gpu", "reference_gpu_us"),
                            ("copy", "same_bytes_copy_us")):
            if series in s:
                row[key], row[key + "_range"] = s[series]["median"], [s[series]["min"], s[series]["max"]]
        for name in names:
            entry = dict(checks[label][name])
            if name in s:
                entry.update(solution_figures(row["min_bytes"], row["reference_us"], row["same_bytes_copy_us"],
                                              s[name]["median"], copy_gbps))
                entry["us_range"] = [s[name]["min"], s[name]["max"]]
            row[name] = entry
        rows.append(row)
    return rows


# The modes' rounds are [{shape: {mode: {series: us}}}]: a mode's view of them is laid out as do_bench's rounds,
# so that the functions above serve both.

def mode_view(mode_rounds, mode):
    """One mode's times, [{shape: {series: us}}] a round, as do_bench's rounds are laid out."""
    return [{shape: by_mode[mode] for shape, by_mode in round_modes.items() if mode in by_mode}
            for round_modes in mode_rounds]


def mode_means_over_rounds(mode_rounds, modes, names):
    """{mode: {name: {"arithmetic_mean_speedup": ...}, "solution_over_baseline_time": ... (with a baseline)}}: the
    leaderboard's formula on each mode's times (reference us / name us, the mean over shapes) and the paired
    ratio, each per round, then its median over the rounds with min-max, as do_bench's means are taken."""
    stats = {}
    for mode in modes:
        view = mode_view(mode_rounds, mode)
        stats[mode] = {name: {"arithmetic_mean_speedup": over_rounds(view, mean_speedup, name)} for name in names}
        if "baseline" in names:
            stats[mode]["solution_over_baseline_time"] = over_rounds(view, paired_time_ratio, "solution", "baseline")
    return stats


def host_bound(mode_times, l2_clear_us, names):
    """The solutions among names whose host time per call on a shape in one round (mode_times["host-us"])
    exceeded the L2 clear's device time: do_bench starts its clock as the clear ends, so such a call's do_bench
    time there can hold host time (its cell is marked '!'). [] where host-us was not timed or the clear not
    measured."""
    host = mode_times.get("host-us", {})
    if l2_clear_us is None:
        return []
    return [name for name in names if name in host and host[name] > l2_clear_us]


def flagged_rounds(flags, label, name):
    """The rounds (counted from 1) in which name's do_bench time on shape label was marked host-bound; flags is
    [{shape: [names]}] a round."""
    return [r for r, round_flags in enumerate(flags, 1) if name in round_flags.get(label, ())]


def add_mode_rows(rows, mode_rounds, flags, modes, names):
    """Adds to each record row (record_rows') its "modes", {mode: {series: {"us": median, "us_range": [min, max]}
    and, for a solution timed beside the reference, "speedup": the reference's median / its median}}, and
    "host_over_l2_clear_rounds", {name: the rounds its do_bench time there was marked '!'}."""
    spreads = {mode: per_shape_spreads(mode_view(mode_rounds, mode)) for mode in modes}
    for row in rows:
        row["modes"] = {}
        for mode in modes:
            by_series = spreads[mode].get(row["shape"], {})
            cells = {}
            for series, stat in by_series.items():
                cells[series] = {"us": stat["median"], "us_range": [stat["min"], stat["max"]]}
                if series != "reference" and "reference" in by_series:
                    cells[series]["speedup"] = by_series["reference"]["median"] / stat["median"]
            row["modes"][mode] = cells
        row["host_over_l2_clear_rounds"] = {name: flagged_rounds(flags, row["shape"], name) for name in names}
    return rows


def rounds_note(stat, n_rounds, digits=2, unit="x"):
    """'' for one round (the output of a single run stays as it was), else 'median of N rounds, min-max'."""
    if n_rounds == 1:
        return ""
    return f"median of {n_rounds} rounds, {stat['min']:.{digits}f}-{stat['max']:.{digits}f}{unit}"


def parenthesis(*parts):
    return "(" + "; ".join(part for part in parts if part) + ")"


# ---------------------------------------------------------------- printing

def table_header(names):
    cols = "".join(f" {n + ' us':>14} {'speedup':>8} {'GB/s':>7} {'% copy':>7} {'% floor':>7}" for n in names)
    return f"{'shape':>12} {'M':>6} {'H':>5} {'reference us':>13} {'ref gpu us':>10} {'copy us':>8}{cols}"


def shape_line(label, M, H, times, names, copy_gbps, flagged=()):
    """One round's line for one shape; the us of each solution in flagged (host_bound's) ends in '!'."""
    gpu = f"{times['reference_gpu']:.1f}" if "reference_gpu" in times else "-"
    line = f"{label:>12} {M:>6} {H:>5} {times['reference']:>13.1f} {gpu:>10} {times['copy']:>8.1f}"
    for name in names:
        if name in times:
            figures = solution_figures(harness.min_bytes(M, H), times["reference"], times["copy"], times[name],
                                       copy_gbps)
            us = f"{figures['us']:.1f}" + ("!" if name in flagged else "")
            line += (f" {us:>14} {figures['speedup']:>8.2f} {figures['gbps']:>7.0f}"
                     f" {figures['pct_copy']:>6.1f}% {figures['pct_floor']:>6.1f}%")
        else:
            line += f" {'FAILS CHECK':>14} {'-':>8} {'-':>7} {'-':>7} {'-':>7}"
    return line


def spread_cell(spreads, series):
    if series not in spreads:
        return "-"
    s = spreads[series]
    return f"{s['median']:.1f} ({s['min']:.1f}-{s['max']:.1f})"


def spread_header(names):
    cols = "".join(f" {n + ' us':>22} {'speedup':>8}" for n in names)
    return f"{'shape':>12} {'reference us':>22} {'ref gpu us':>22} {'copy us':>22}{cols}"


def spread_line(label, spreads, names, flagged=()):
    """One shape's medians and ranges over the rounds; a solution in flagged (marked in any round) ends in '!'."""
    line = (f"{label:>12} {spread_cell(spreads, 'reference'):>22} {spread_cell(spreads, 'reference_gpu'):>22}"
            f" {spread_cell(spreads, 'copy'):>22}")
    for name in names:
        speedup = (f"{spreads['reference']['median'] / spreads[name]['median']:.2f}" if name in spreads else "-")
        cell = spread_cell(spreads, name) + ("!" if name in flagged else "")
        line += f" {cell:>22} {speedup:>8}"
    return line


def flag_note(flags, l2_clear_us, modes, names, labels):
    """The footnote to the '!' marks (flags as Timings'): each solution of names and shape of labels, in their
    order, whose do_bench time was marked (and in which rounds), or that none was, or why none can be; None where
    no mode was timed (the output as before the modes)."""
    if not modes:
        return None
    if "host-us" not in modes:
        return "no ! marks: host-us is not among --modes (a mark compares its time with the L2 clear's)"
    clear = (f"the L2 clear's {l2_clear_us:.1f} us (device time of zero_() on do_bench's "
             f"{measure.L2_CLEAR_BYTES // 2**20} MB buffer)")
    hits = {(name, label): flagged_rounds(flags, label, name) for name in names for label in labels}
    hits = {key: rounds for key, rounds in hits.items() if rounds}
    if not hits:
        return f"no ! marks: no solution's host us per call exceeded {clear}"

    def where(name, label, rounds):
        if len(flags) == 1:
            return f"{name} {label}"
        return f"{name} {label} ({'round' if len(rounds) == 1 else 'rounds'} {', '.join(map(str, rounds))})"

    return (f"! host us per call above {clear}: do_bench starts its clock as the clear ends, before such a call has "
            "launched its kernel, so that do_bench time can hold host time; marked: "
            + ", ".join(where(name, label, rounds) for (name, label), rounds in hits.items()))


def mode_legend(modes):
    """What each timed mode is, a line each."""
    words = {"host-timed": f"synchronize, call, synchronize ({MODE_CALLS['host-timed']} calls, their median)",
             "cloned": f"the same with x.clone() and grad_y.clone() in the call ({MODE_CALLS['cloned']})",
             "back-to-back": f"{MODE_CALLS['back-to-back']} calls, then one synchronize: the total over "
                             f"{MODE_CALLS['back-to-back']}",
             "host-us": f"host time of one call, {MODE_CALLS['host-us']} calls unsynchronized"}
    return [f"  {mode}: {words[mode]}" for mode in modes]


def modes_header(modes, series):
    """Two lines: each mode's name over its group of columns, then a column a series in each group."""
    group = 10 * len(series) - 1
    top = f"{'':>12}" + "".join(f" {' ' + mode + ' ':-^{group}}" for mode in modes)
    return top + "\n" + f"{'shape':>12}" + "".join(f" {name:>9}" for _ in modes for name in series)


def modes_line(label, mode_spreads, modes, series):
    """One shape's row of the modes' table: each mode's median us of each series, '-' where it was not timed."""
    line = f"{label:>12}"
    for mode in modes:
        for name in series:
            stat = mode_spreads[mode].get(label, {}).get(name)
            line += f" {stat['median']:>9.1f}" if stat else f" {'-':>9}"
    return line


def mode_summary_line(mode, stats, names, n_rounds):
    """One mode's means: each solution's arithmetic-mean speedup and, with a baseline, solution / baseline time."""
    def note(stat, **kwargs):
        return " " + parenthesis(rounds_note(stat, n_rounds, **kwargs)) if n_rounds > 1 else ""

    line = f"{mode}: arithmetic-mean speedup " + ", ".join(
        f"{name} {stats[name]['arithmetic_mean_speedup']['median']:.2f}x{note(stats[name]['arithmetic_mean_speedup'])}"
        for name in names)
    if "baseline" in names:
        ratio = stats["solution_over_baseline_time"]
        line += f"; solution time / baseline time {ratio['median']:.3f}{note(ratio, digits=3, unit='')}"
    return line


# ---------------------------------------------------------------- GPU

def synchronized_median_us(call, calls):
    """Median over calls of one call's host-clock time between two synchronisations: synchronize, start the
    clock, call, synchronize, stop it. What a harness timing `synchronize(); op(...); synchronize()` sees:
    the host path, the kernels and the wait for the device to finish, with no L2 clear before the call."""
    call()
    times = []
    for _ in range(calls):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        call()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6


def back_to_back_us(call, calls):
    """Host-clock time of calls calls queued back to back, then one synchronisation, over calls: each call's
    host path overlaps the device's work on the calls before it, so this is the slower of the two per call."""
    call()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        call()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / calls * 1e6


def mode_us(mode, fn, x, gy, outs):
    """One mode's time of fn(x, gy, *outs) in microseconds, MODE_CALLS[mode] calls; cloned times
    fn(x.clone(), gy.clone(), *outs), the clones inside the timed region."""
    call = lambda: fn(x, gy, *outs)  # noqa: E731
    if mode == "host-timed":
        return synchronized_median_us(call, MODE_CALLS[mode])
    if mode == "cloned":
        return synchronized_median_us(lambda: fn(x.clone(), gy.clone(), *outs), MODE_CALLS[mode])
    if mode == "back-to-back":
        return back_to_back_us(call, MODE_CALLS[mode])
    if mode == "host-us":
        return measure.host_us(call, MODE_CALLS[mode])
    raise ValueError(f"unknown mode {mode!r}; expected one of {', '.join(MODES)}")


def host_us_per_call(fn, M, H, calls=200):
    """Host time of one call (launch path only) on seed 0 randn inputs of M x H: measure.host_us."""
    x, gy = harness.make_inputs(M, H, 0, "randn", "cuda")
    outs = harness.new_outputs(M, H, "cuda")
    return measure.host_us(lambda: fn(x, gy, *outs), calls)


def verify(fn, x, gy, ref):
    outs = harness.new_outputs(x.shape[0], x.shape[1] // 2, "cuda")
    fn(x, gy, *outs)
    torch.cuda.synchronize()
    return harness.compare(outs, ref), outs


def first_call_raised(fn, M, H):
    """None, or how a solution's first call (seed 0 randn inputs of M x H) raised: then it cannot run here."""
    x, gy = harness.make_inputs(M, H, 0, "randn", "cuda")
    how = None
    with harness.first_call_warnings(lambda: how is not None):
        try:
            fn(x, gy, *harness.new_outputs(M, H, "cuda"))
            torch.cuda.synchronize()
        except Exception as exc:
            how = harness.raised(exc)
    return how


class CannotRun(Exception):
    """A solution whose first call raised; its message is harness.cannot_run's line."""


def time_modes(modes, timed, x, gy):
    """{mode: {series: us}}: each mode in turn and, in it, each series of timed ({series: (fn, its outputs)}) in
    its order, on the same inputs, so that a drift within the shape hits every series of a mode alike."""
    return {mode: {series: mode_us(mode, fn, x, gy, outs) for series, (fn, outs) in timed.items()}
            for mode in modes}


def time_shape(M, H, reference, solutions, modes=()):
    """One round on one shape, in order: reference, its GPU time, same-bytes copy, each solution (in
    the dict's order) under do_bench, then the modes (time_modes: the reference, then the solutions).
    Returns ({series: us}, {name: check}, reference kernels per call, {mode: {series: us}}); a solution
    that fails the check, or whose call raises (the check's "raised"), is not timed."""
    x, gy = harness.make_inputs(M, H, 0, "randn", "cuda")
    ref = harness.run_reference(x, gy, reference)
    ref_outs = harness.new_outputs(M, H, "cuda")
    times = {"reference": measure.do_bench(lambda: reference(x, gy, *ref_outs))}
    gpu_us, kernels = measure.device_time_us(lambda: reference(x, gy, *ref_outs))
    if gpu_us is not None:
        times["reference_gpu"] = gpu_us
    times["copy"] = measure.same_bytes_copy_us(harness.min_bytes(M, H))
    checks, timed = {}, {"reference": (reference, ref_outs)}
    for name, fn in solutions.items():
        try:
            comparison, outs = verify(fn, x, gy, ref)
        except Exception as exc:
            checks[name] = {"passed": False, "differing_bytes": 0, "raised": harness.raised(exc)}
            continue
        checks[name] = {"passed": comparison["passed"],
                        "differing_bytes": sum(comparison["differing_bytes"].values())}
        if comparison["passed"]:
            times[name] = measure.do_bench(lambda: fn(x, gy, *outs))
            timed[name] = (fn, outs)
    return times, checks, kernels, time_modes(modes, timed, x, gy)


def set_up(modules, forced, shape):
    """Each solution's first calls on the GPU, on one shape, with ROUTE_ENV set to its own forced route (unset
    for its own choice): {name: host us per call}, {name: the route it took}. CannotRun where a first call
    raises."""
    device = torch.device("cuda", torch.cuda.current_device())
    host_us, routes = {}, {}
    for name, module in modules.items():
        with harness.route_forced(forced[name]):
            raised = first_call_raised(module.silu_dot_fwd_bwd_quant_fuse, shape[1], shape[2])
            if raised:
                raise CannotRun(harness.cannot_run(f"the {name}", forced[name], raised))
            host_us[name] = host_us_per_call(module.silu_dot_fwd_bwd_quant_fuse, shape[1], shape[2])
            routes[name] = harness.route_name(module, device)
    return host_us, routes


def route_line(routes, forced):
    """'route: R' for the solution, then the baseline's, each marked where it was forced."""
    taken = {name: route + (" (forced)" if forced[name] else "") for name, route in routes.items()}
    return f"route: {taken['solution']}" + (f"; baseline: {taken['baseline']}" if "baseline" in taken else "")


class Timings(NamedTuple):
    """What the rounds measured: do_bench's rounds ([{shape: {series: us}}]), the merged checks ({shape: {name:
    check}}), the reference's kernel counts seen, the modes' rounds ([{shape: {mode: {series: us}}}]) and the
    marks ([{shape: [the solutions whose do_bench time there host_bound marked]}])."""
    rounds: list
    checks: dict
    kernel_counts: set
    mode_rounds: list
    flags: list


def time_rounds(shapes, reference, solutions, n_rounds, copy_gbps, modes=(), l2_clear_us=None):
    """Every shape timed in n_rounds rounds, do_bench and the modes, one line a shape as it is timed; even rounds
    time the solutions in reverse order. Returns Timings."""
    names = list(solutions)
    print(f"\n{table_header(names)}")
    rounds, checks, kernel_counts, mode_rounds, flags = [], {}, set(), [], []
    for r in range(1, n_rounds + 1):
        if n_rounds > 1:
            print(f"round {r} of {n_rounds}", flush=True)
        in_turn = solutions if r % 2 else dict(reversed(solutions.items()))
        round_times, round_modes, round_flags = {}, {}, {}
        for label, M, H in shapes:
            times, shape_checks, kernels, mode_times = time_shape(M, H, reference, in_turn, modes)
            round_times[label], round_modes[label] = times, mode_times
            flagged = host_bound(mode_times, l2_clear_us, names)
            if flagged:
                round_flags[label] = flagged
            merge_checks(checks.setdefault(label, {}), shape_checks)
            if kernels:
                kernel_counts.add(kernels)
            print(shape_line(label, M, H, times, names, copy_gbps, flagged), flush=True)
            for name, check in shape_checks.items():
                if "raised" in check:
                    print(f"  {label} {name}: {harness.one_line(check['raised'])}", flush=True)
        rounds.append(round_times)
        mode_rounds.append(round_modes)
        flags.append(round_flags)
    if kernel_counts:
        low, high = min(kernel_counts), max(kernel_counts)
        counts = str(low) if low == high else f"{low}-{high}"
        print(f"ref gpu us: device time of the reference's {counts} kernels in one cold-L2 call (torch.profiler); "
              f"the rest of reference us is mostly the GPU waiting for the host to launch them")
    note = flag_note(flags, l2_clear_us, modes, names, [label for label, _, _ in shapes])
    if note:
        print(note)
    return Timings(rounds, checks, kernel_counts, mode_rounds, flags)


def print_summary(shapes, rounds, checks, names, flags=()):
    """The per-shape spreads (over several rounds; '!' on a solution marked in any round, flags as Timings'),
    and each solution's means. Returns (the means over rounds, {name: its leaderboard and geometric means and
    the shapes it failed})."""
    n_rounds = len(rounds)
    if n_rounds > 1:
        spreads = per_shape_spreads(rounds)
        print(f"\nmedian (min-max) over {n_rounds} rounds\n{spread_header(names)}")
        for label, _, _ in shapes:
            marked = {name for name in names if flagged_rounds(flags, label, name)}
            print(spread_line(label, spreads[label], names, marked))
    stats = means_over_rounds(rounds, names)
    ceiling = stats["copy_speed_ceiling"]
    print(f"\ncopy-speed ceiling: {ceiling['median']:.2f}x "
          + parenthesis("arithmetic mean of reference us / copy us", rounds_note(ceiling, n_rounds)))
    results = {}
    for name in names:
        failed = [label for label in checks if not checks[label][name]["passed"]]
        mean, geo = stats[name]["arithmetic_mean_speedup"], stats[name]["geometric_mean_speedup"]
        results[name] = {"arithmetic_mean_speedup": mean["median"], "geometric_mean_speedup": geo["median"],
                         "failed_shapes": failed}
        note = f"  ({len(failed)} shapes FAIL the check: the judge would reject this)" if failed else ""
        geo_note = " " + parenthesis(rounds_note(geo, n_rounds)) if n_rounds > 1 else ""
        print(f"{name}: geometric-mean speedup {geo['median']:.2f}x over {len(shapes) - len(failed)} shapes"
              f"{geo_note}{note}")
        print(f"{name}: arithmetic-mean speedup {mean['median']:.2f}x "
              + parenthesis("leaderboard number", rounds_note(mean, n_rounds)))
    if "baseline" in names:
        ratio = stats["solution_over_baseline_time"]
        print(f"solution time / baseline time: {ratio['median']:.3f} "
              + parenthesis("geometric mean over shapes", rounds_note(ratio, n_rounds, digits=3, unit=""))
              + "; below 1: the solution is faster")
    return stats, results


def print_modes(shapes, mode_rounds, modes, names):
    """The modes' block, after do_bench's: what each mode is, the table (a column a mode and series: its us a call,
    the median over the rounds) and a summary line a mode. Returns the modes' means over the rounds ({} and
    nothing printed where no mode was timed)."""
    if not modes:
        return {}
    n_rounds, series = len(mode_rounds), ["reference", *names]
    spreads = {mode: per_shape_spreads(mode_view(mode_rounds, mode)) for mode in modes}
    each = "" if n_rounds == 1 else f", the median of {n_rounds} rounds (min-max in the --json record)"
    print(f"\nhost-clock modes (time.perf_counter, no L2 clear), us a call{each}:", *mode_legend(modes), sep="\n")
    print(modes_header(modes, series))
    for label, _, _ in shapes:
        print(modes_line(label, spreads, modes, series))
    stats = mode_means_over_rounds(mode_rounds, modes, names)
    paired = ("; solution time / baseline time: the geometric mean over shapes (below 1: the solution is faster)"
              if "baseline" in names else "")
    print(f"a mode's arithmetic-mean speedup: reference us / solution us in that mode, the mean over shapes{paired}")
    for mode in modes:
        print(mode_summary_line(mode, stats[mode], names, n_rounds))
    return stats


class Start(NamedTuple):
    """What the run knows before its rounds: the environment, the shapes, the routes forced ({name: route or
    None}) and taken, the copy bandwidth, each solution's host time per call and the L2 clear's device time
    (None where host-us is not timed)."""
    env: dict
    shapes: list
    forced: dict
    routes: dict
    copy_gbps: float
    host_us: dict
    l2_clear_us: float = None


def start(args, modules, forced):
    """Everything before the rounds: the header, the copy bandwidth, each solution's set-up under its route."""
    env = harness.environment("cuda")
    shapes = harness.expand_shape_args(args.shapes, ["benchmark"])
    print(header(env), flush=True)
    copy_gbps = measure.copy_bandwidth_gbps()
    smallest = min(shapes, key=lambda s: s[1] * s[2])
    host_us, routes = set_up(modules, forced, smallest)
    print(f"copy bandwidth: {copy_gbps:.0f} GB/s (1 GiB device-to-device, read + write)")
    print("host time per call: " + ", ".join(f"{n} {us:.1f} us" for n, us in host_us.items())
          + f" (shape {smallest[0]})")
    print(route_line(routes, forced), flush=True)
    l2_clear_us = None
    if "host-us" in args.modes:
        l2_clear_us = measure.l2_clear_us()
        print(f"L2 clear: {l2_clear_us:.1f} us (device time of zero_() on do_bench's {measure.L2_CLEAR_BYTES // 2**20} "
              "MB buffer; a do_bench time whose call's host us is above it is marked !)", flush=True)
    return Start(env, shapes, forced, routes, copy_gbps, host_us, l2_clear_us)


def write_record(path, argv, begun, timings, stats, results, modes, mode_stats):
    """The --json record: the run's settings and set-up, every round's times, the rows of medians, the means;
    the modes' under "modes" and each row's "modes" and "host_over_l2_clear_rounds" (add_mode_rows)."""
    names = list(results)
    rows = record_rows(begun.shapes, per_shape_spreads(timings.rounds), timings.checks, names, begun.copy_gbps)
    record = {"tool": "bench", "environment": begun.env, "command": "python bench.py " + " ".join(argv),
              "do_bench": measure.settings_record(), "repeat": len(timings.rounds),
              "route": {name: {"requested": begun.forced[name] or "automatic", "taken": begun.routes[name]}
                        for name in names},
              "copy_gbps": begun.copy_gbps, "copy_speed_ceiling": stats["copy_speed_ceiling"]["median"],
              "host_us_per_call": begun.host_us, "reference_kernels_per_call": sorted(timings.kernel_counts),
              "rows": add_mode_rows(rows, timings.mode_rounds, timings.flags, modes, names),
              "rounds": timings.rounds, "arithmetic_mean_speedup": results["solution"]["arithmetic_mean_speedup"],
              "summary": results, "over_rounds": stats,
              "modes": {"timed": list(modes), "calls": {mode: MODE_CALLS[mode] for mode in modes},
                        "l2_clear_us": begun.l2_clear_us, "rounds": timings.mode_rounds,
                        "host_over_l2_clear": timings.flags, "over_rounds": mode_stats}}
    Path(path).write_text(json.dumps(record, indent=2))


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    try:
        modules = load_solutions(args)
        forced = forced_routes(args, modules)
    except harness.SolutionError as exc:
        return error(exc, 1)
    except ValueError as exc:
        return error(exc, 2)
    if not torch.cuda.is_available():
        return error("timing needs a CUDA GPU and none was found; use check.py for correctness on the CPU", 2)
    try:
        begun = start(args, modules, forced)
    except CannotRun as exc:
        return error(exc, 1)
    solutions = {name: module.silu_dot_fwd_bwd_quant_fuse for name, module in modules.items()}
    timings = time_rounds(begun.shapes, harness.reference_fn(), solutions, args.repeat, begun.copy_gbps, args.modes,
                          begun.l2_clear_us)
    stats, results = print_summary(begun.shapes, timings.rounds, timings.checks, list(solutions), timings.flags)
    mode_stats = print_modes(begun.shapes, timings.mode_rounds, args.modes, list(solutions))
    if args.json:
        write_record(args.json, argv, begun, timings, stats, results, args.modes, mode_stats)
    return 0 if not results["solution"]["failed_shapes"] else 1


if __name__ == "__main__":
    sys.exit(main())
