"""What check.py, bench.py and the tests share: shapes, inputs, the reference, the comparison, and
the command line's argument types and one-line errors."""
import argparse
import ast
import contextlib
import datetime
import importlib.util
import json
import os
import platform
import random
import re
import sys
import zlib
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent
GROUP_SIZE = 128
OUTPUT_NAMES = ("grad_input_q", "grad_input_s", "y_q_t", "y_s_t")
# The judge's tolerances (torch.testing semantics: |a - e| <= atol + rtol * |e|).
SCALE_TOL = {"atol": 1e-4, "rtol": 1e-5}
DEQUANT_TOL = {"atol": 0.25, "rtol": 0.25}
POISON_Q = -128  # no int8 the quantizer can produce (it clamps to +-127; NaN converts to 0)
# A quiet NaN whose payload no computation here produces (NaNs made from bf16 inputs have zero low
# bits; NaNs made by inf*0 are 0xFFC00000 on x86, 0x7FFFFFFF on NVIDIA GPUs). The reference writes
# NaN scales for groups holding a NaN, so "unwritten" means these bits, not any NaN.
POISON_SCALE_BITS = 0x7FC0DEAD
FAMILIES = ("randn", "zeros", "large", "tiny", "heavy", "specials")
# The variable that forces one of a solution's routes (its ROUTES), read at its first call on a device.
ROUTE_ENV = "SILU_DOT_ROUTE"


def use_interpreter_if_no_gpu():
    """Without a GPU, Triton kernels can only run under the interpreter; set it before triton is imported."""
    if not torch.cuda.is_available():
        os.environ["TRITON_INTERPRET"] = "1"
        return "cpu"
    return "cuda"


def version_tuple(version):
    """(major, minor) of a version string: '3.1.0+corex' -> (3, 1), '2.4.6' -> (2, 4)."""
    return tuple(int(part) for part in re.findall(r"\d+", version)[:2])


# Before Triton 3.2 the interpreter's compiled load and store (libtriton's interpreter module) misread numpy 2
# arrays: loads return garbage and stores write nothing, and nothing is raised (measured on 3.0.0 and 3.1.0).
INTERPRETER_NEEDS_NUMPY_1_BELOW = (3, 2)


def interpreter_problem():
    """None, or one line saying why the Triton interpreter gives wrong results here and what to do.
    Imports triton: call it once the interpreter is chosen."""
    import numpy
    import triton
    if (version_tuple(triton.__version__) < INTERPRETER_NEEDS_NUMPY_1_BELOW
            and version_tuple(numpy.__version__) >= (2, 0)):
        return (f"Triton {triton.__version__}'s interpreter misreads numpy {numpy.__version__} arrays (loads read "
                "garbage, stores write nothing), so every result would be wrong: install numpy<2 here "
                "(pip install 'numpy<2'), or Triton 3.2 or later")
    return None


class SolutionError(Exception):
    """A solution file that cannot be run; its message is one line that names the file."""


def parse_solution(path):
    """The AST of a solution file, or SolutionError (file, line, message) when it does not parse."""
    try:
        return ast.parse(Path(path).read_text(), filename=str(path))
    except SyntaxError as exc:
        raise SolutionError(f"{path} line {exc.lineno}: {exc.msg}") from None
    except ValueError as exc:  # undecodable bytes, or a null byte before Python 3.12
        raise SolutionError(f"{path} cannot be parsed: {one_line(str(exc))}") from None


def load_solution(path, name=None):
    """The one way the kit loads a solution file: imported as a module (registered in sys.modules under
    name), which must define silu_dot_fwd_bwd_quant_fuse. SolutionError (one line, chained to the cause)
    when the file is missing, importing it raises, or the function is not there."""
    path = Path(path).resolve()
    if not path.is_file():
        raise SolutionError(f"no solution file at {path}")
    name = name or f"solution_under_test_{abs(hash(str(path)))}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        raise SolutionError(f"importing {path} raised {type(exc).__name__}: {one_line(str(exc))}") from exc
    if not callable(getattr(module, "silu_dot_fwd_bwd_quant_fuse", None)):
        raise SolutionError(f"{path} defines no function silu_dot_fwd_bwd_quant_fuse")
    return module


def check_route(module, route):
    """ValueError (one line) unless route is one of the solution module's ROUTES: the tools take the route
    names from the solution they run, never from a list of their own."""
    routes = getattr(module, "ROUTES", None)
    if not isinstance(routes, (tuple, list)) or not routes:
        raise ValueError(f"{module.__file__} has no ROUTES to force {route!r} from")
    if route not in routes:
        raise ValueError(f"{route!r} is not a route of {Path(module.__file__).name} (its ROUTES: "
                         f"{', '.join(map(str, routes))})")


def one_shape_and_route(parser, args, name):
    """(label, M, H) of args.shape, which must name one shape, after checking args.route (None: none forced) against
    args.solution's ROUTES: parser.error (one line, exit 2) otherwise. name: the module name to load the solution
    under for that check."""
    shapes = load_shapes(args.shape)
    if len(shapes) != 1:
        parser.error(f"argument --shape: one shape, got the group {args.shape!r} of {len(shapes)}")
    if args.route:
        try:
            check_route(load_solution(args.solution, name=name), args.route)
        except (ValueError, SolutionError) as exc:
            parser.error(f"argument --route: {exc}")
    return shapes[0]


@contextlib.contextmanager
def route_forced(route):
    """ROUTE_ENV set to route inside the block (None: unset, so the solution chooses), as it was after.
    A solution reads it at its first call on a device, so that call belongs inside the block."""
    before = os.environ.get(ROUTE_ENV)
    if route is None:
        os.environ.pop(ROUTE_ENV, None)
    else:
        os.environ[ROUTE_ENV] = route
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(ROUTE_ENV, None)
        else:
            os.environ[ROUTE_ENV] = before


@contextlib.contextmanager
def first_call_warnings(raised):
    """Holds the warnings of a solution's first call, then shows them unless raised() says the call raised:
    a solution that cannot run is one line, and the warnings on the way (a rung left, a feature turned
    IEEE) are in that line's reason or beside the point."""
    import warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    if not raised():
        for w in caught:
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)


def raised(exc):
    """How a call that raised is reported: its exception's type and words."""
    return f"raised {type(exc).__name__}: {exc}"


def cannot_run(who, forced_route, how_it_raised):
    """The one line for a solution (who: "the solution", "the baseline") whose first call raised (how_it_raised:
    raised's text), naming the route it was on: the forced one (ROUTE_ENV), else its own choice."""
    on = f"{who}'s forced route {forced_route}" if forced_route else f"{who} (on its own choice of route)"
    return one_line(f"{on} cannot run here: its first call {how_it_raised}", limit=1000)


def route_name(module, device):
    """The backend route a solution module takes on device: its route_for(device), or "unknown"."""
    route_for = getattr(module, "route_for", None)
    if not callable(route_for):
        return "unknown"
    try:
        return str(route_for(device))
    except Exception as exc:  # reported, not fatal: the calls themselves will show what is wrong
        return f"unknown (route_for raised {type(exc).__name__}: {exc})"


def route_ladder(module, device):
    """[(route, how it stands)] of the solution module's ladder on device (its ladder_for(device)): the
    rungs left and why, the one taken, those not tried. [] where the solution has none or it raised."""
    ladder_for = getattr(module, "ladder_for", None)
    if not callable(ladder_for):
        return []
    try:
        return [(str(route), str(how)) for route, how in ladder_for(device)]
    except Exception:  # route_name reports it
        return []


def reference_fn():
    return load_solution(ROOT / "reference.py", name="reference_for_harness").silu_dot_fwd_bwd_quant_fuse


def min_bytes(M, H):
    """Each input read once, each output written once."""
    return 2 * M * 2 * H + 2 * M * H + M * 2 * H + 4 * M * (2 * H // GROUP_SIZE) + H * M + 4 * H * (M // GROUP_SIZE)


# ---------------------------------------------------------------- shapes

def _check_dimensions(label, dimensions):
    """ValueError unless every (name, value, how it was written) is a positive multiple of GROUP_SIZE."""
    wrong = [f"{name} = {written}" for name, value, written in dimensions if value < 1 or value % GROUP_SIZE]
    if wrong:
        verb = "is not a positive multiple" if len(wrong) == 1 else "are not positive multiples"
        raise ValueError(f"shape {label!r}: {' and '.join(wrong)} {verb} of {GROUP_SIZE} "
                         f"(the quantization groups are {GROUP_SIZE} wide)")


def load_shapes(group):
    """group: 'benchmark', 'hidden_like', 'cpu_small', 'MxH', or a benchmark label 'ExTxH' (M = E*T).
    Returns [(label, M, H)]; ValueError for an unknown group or an M or H not a multiple of 128."""
    parts = group.split("x")
    if len(parts) in (2, 3) and all(p.isdigit() for p in parts):
        *m_factors, H = (int(p) for p in parts)
        M = m_factors[0] * (m_factors[1] if len(m_factors) == 2 else 1)
        m_written = str(M) if len(m_factors) == 1 else f"{parts[0]}x{parts[1]} = {M}"
        _check_dimensions(group, [("M", M, m_written), ("H", H, parts[-1])])
        return [(group, M, H)]
    spec = json.loads((ROOT / "shapes.json").read_text())
    if group not in spec or group.startswith("_"):
        names = [k for k in spec if not k.startswith("_")]
        raise ValueError(f"unknown shape group {group!r}; expected one of {names}, MxH like 1024x2560 "
                         f"or ExTxH like 8x128x2560")
    shapes = []
    for s in spec[group]:
        if "num_experts" in s:
            M = s["num_experts"] * s["tokens_per_expert"]
            label = f"{s['num_experts']}x{s['tokens_per_expert']}x{s['H']}"
        else:
            M = s["M"]
            label = f"{M}x{s['H']}"
        shapes.append((label, M, s["H"]))
    return shapes


def expand_shape_args(args_shapes, default_groups):
    shapes = []
    for group in (args_shapes or default_groups):
        for shape in load_shapes(group):
            if shape not in shapes:
                shapes.append(shape)
    return shapes


# ---------------------------------------------------------------- inputs and outputs

def _powers_of_two(z):
    """2**round(1.5*z), clamped to 2**-8..2**8, built from the exponent bits so it is exact."""
    k = torch.round(1.5 * z).clamp_(-8, 8).to(torch.int32)
    return ((k + 127) << 23).view(torch.float32)


def input_seed(M, H, seed, family):
    """The generator seed of one input set. It depends on the family's name (crc32: the same in every
    process, unlike hash()), not on its place in FAMILIES, so adding a family changes no other's inputs."""
    return seed * 1_000_003 + zlib.crc32(family.encode()) + M * 31 + H


def _sprinkle_specials(x, gy, placer):
    """Puts a handful of NaN, +inf and -inf into gates, ups and grad_y (float32, in place), each on a
    row of its own at a column drawn from placer (a random.Random), so most groups stay finite."""
    M, H = gy.shape
    nan, inf = float("nan"), float("inf")
    gate, up, grad = (x, 0), (x, H), (gy, 0)  # (tensor, first column)
    placements = [(gate, inf), (gate, -inf), (gate, nan), (up, nan), (up, -inf), (grad, nan), (grad, inf),
                  (grad, -inf)]
    rows = placer.sample(range(M), len(placements) + 1)
    for ((tensor, first), value), row in zip(placements, rows):
        tensor[row, first + placer.randrange(H)] = value
    # inf * 0: an inf up where grad_y is 0 makes d_gate = 0 * inf * ... = NaN while d_up = 0.
    row, col = rows[-1], placer.randrange(H)
    x[row, H + col] = inf
    gy[row, col] = 0.0


def make_inputs(M, H, seed, family="randn", device="cpu"):
    """Seeded bf16 inputs (x [M, 2H], grad_y [M, H]) of one family."""
    if family not in FAMILIES:
        raise ValueError(f"unknown input family {family!r}; expected one of {FAMILIES}")
    gen = torch.Generator(device=device)
    gen.manual_seed(input_seed(M, H, seed, family))

    def randn(*shape):
        return torch.randn(*shape, generator=gen, device=device, dtype=torch.float32)

    x, gy = randn(M, 2 * H), randn(M, H)
    if family == "zeros":
        gy[: min(8, M)] = 0.0                  # whole grad_input rows: every group zero
        x[:, :GROUP_SIZE] = 0.0                # gate = 0 on channels 0..127
        x[:, H:H + GROUP_SIZE] = 0.0           # up = 0 there: y and d_up groups zero
        x[-GROUP_SIZE:, H - GROUP_SIZE:H] = 0.0  # one more zero y group (gate only)
    elif family == "large":
        x, gy = x * 64.0, gy * 16.0            # exp overflow/underflow, int8 at full range
    elif family == "tiny":
        x, gy = x * 2.0**-10, gy * 2.0**-10     # grad scales hit the 1e-10 floor
    elif family == "heavy":
        # Log-normal-like spread by exact powers of two. torch.exp on the CPU
        # (MKL VML / SLEEF) is not bit-reproducible from call to call, which
        # made the "same seed, same inputs" guarantee fail on CI once.
        x = x * _powers_of_two(randn(M, 2 * H))
        gy = gy * _powers_of_two(randn(M, H))
    elif family == "specials":
        _sprinkle_specials(x, gy, random.Random(input_seed(M, H, seed, family)))
    return x.to(torch.bfloat16), gy.to(torch.bfloat16)


def output_shapes(M, H):
    """(shape, dtype) of grad_input_q, grad_input_s, y_q_t, y_s_t."""
    return (((M, 2 * H), torch.int8), ((M, 2 * H // GROUP_SIZE), torch.float32),
            ((H, M), torch.int8), ((H, M // GROUP_SIZE), torch.float32))


def poisoned(shape, dtype, device="cpu"):
    """A tensor of poison: int8 POISON_Q, or float32 NaN with the payload POISON_SCALE_BITS."""
    if dtype == torch.int8:
        return torch.full(shape, POISON_Q, dtype=torch.int8, device=device)
    if dtype == torch.float32:
        return torch.full(shape, POISON_SCALE_BITS, dtype=torch.int32, device=device).view(torch.float32)
    raise ValueError(f"no poison for {dtype}")


def new_outputs(M, H, device="cpu"):
    """Output buffers filled with poison, so anything left unwritten shows."""
    return tuple(poisoned(shape, dtype, device) for shape, dtype in output_shapes(M, H))


def run_reference(x, grad_y, reference=None):
    reference = reference or reference_fn()
    M, H = x.shape[0], x.shape[1] // 2
    outputs = new_outputs(M, H, x.device)
    reference(x, grad_y, *outputs)
    return outputs


# ---------------------------------------------------------------- comparison

def unwritten(outputs):
    """Elements still holding the poison: int8 -128, or the poison NaN's exact bits in the scales."""
    return {name: int((t == POISON_Q).sum()) if t.dtype == torch.int8 else
            int((t.view(torch.int32) == POISON_SCALE_BITS).sum())
            for name, t in zip(OUTPUT_NAMES, outputs)}


def differing_bytes(actual, expected):
    """Bytes that differ between two tensors of one shape and dtype. A NaN equals any NaN, whatever its
    sign and payload (compilers and GPUs make different NaN bits for the same operation); every other
    byte must match exactly."""
    if actual.shape != expected.shape or actual.dtype != expected.dtype:
        raise ValueError(f"cannot compare {actual.dtype} {tuple(actual.shape)} with "
                         f"{expected.dtype} {tuple(expected.shape)}")
    a = actual.contiguous().reshape(-1)
    e = expected.contiguous().reshape(-1)
    differ = a.view(torch.uint8) != e.view(torch.uint8)
    if a.is_floating_point():
        both_nan = torch.isnan(a) & torch.isnan(e)
        differ &= ~both_nan.repeat_interleave(a.element_size())
    return int(differ.sum())


def quantize_like_reference(values, absmax):
    """The reference quantizer's arithmetic (reference._quantize_groups) for values whose group absmax is
    given and broadcasts against them: tools/exhaustive_exactness.py feeds it (value, absmax) pairs.
    tests/test_harness.py shows it equal to the reference's own function."""
    scales = torch.clamp(absmax / 127.0, min=1e-10)
    return torch.clamp(values / scales, -127.0, 127.0).to(torch.int8), scales


def dequantize(q, scales):
    return q.float() * scales.repeat_interleave(GROUP_SIZE, dim=1)


def _first_failures(actual, expected, bad, limit=3):
    idx = bad.nonzero()[:limit]
    return [{"index": [int(i) for i in row], "actual": float(actual[tuple(row)]),
             "expected": float(expected[tuple(row)])} for row in idx]


def _judge(name, actual, expected, tol):
    """One of the judge's comparisons, torch.testing.assert_close(actual, expected, **tol) with its
    defaults. assert_close fails an element exactly where torch.isclose(actual, expected, **tol) is
    False: |a - e| > atol + rtol * |e|, an infinity against anything but the same infinity, and any NaN
    -- a NaN against a NaN too (equal_nan=False).

    So where the reference itself is NaN (the specials family), the judge as written fails every
    solution, the reference included. Those elements (NaN in both) are counted apart as nan_pairs:
    `passed_as_written` is the judge's literal verdict, `passed` (check.py's) holds NaN equal to NaN;
    `mismatches` are all the other failing elements. A NaN against a number fails both."""
    actual, expected = actual.float(), expected.float()
    nan_pairs = torch.isnan(actual) & torch.isnan(expected)
    bad = ~torch.isclose(actual, expected, **tol) & ~nan_pairs
    same = (actual == expected) | nan_pairs  # equal infinities included

    def zero_where_same_inf_where_nan(v):
        return torch.where(same, 0.0, torch.where(torch.isnan(v), float("inf"), v))

    diff = zero_where_same_inf_where_nan((actual - expected).abs())
    used = zero_where_same_inf_where_nan(diff / (tol["atol"] + tol["rtol"] * expected.abs()))
    mismatches, n_nan_pairs = int(bad.sum()), int(nan_pairs.sum())
    return {
        "name": name,
        "passed": mismatches == 0,
        "passed_as_written": mismatches == 0 and n_nan_pairs == 0,
        "mismatches": mismatches,
        "nan_pairs": n_nan_pairs,
        "max_abs_err": float(diff.max()) if diff.numel() else 0.0,
        "tol_used": float(used.max()) if used.numel() else 0.0,
        "first_failures": _first_failures(actual, expected, bad),
    }


# compare()'s totals: counts add up over runs, the others take the largest.
SUMMED_TOTALS = ("scale_mismatches", "dequant_mismatches", "nan_pairs", "differing_bytes", "nonfinite_groups")
LARGEST_TOTALS = ("max_scale_err", "max_dequant_err", "scale_tol_used", "scale_ulps", "int8_steps")


def no_totals():
    """Totals over no runs."""
    return {**dict.fromkeys(SUMMED_TOTALS, 0), **dict.fromkeys(LARGEST_TOTALS, 0.0)}


def add_totals(running, totals):
    """Adds one comparison's totals into running (a dict holding every key of no_totals())."""
    for key in SUMMED_TOTALS:
        running[key] += totals[key]
    for key in LARGEST_TOTALS:
        running[key] = max(running[key], totals[key])


def _distance(q, s, ref_q, ref_s):
    """(scale ulps, int8 steps) of one quantized output over the groups whose reference scale is finite:
    the largest |scale - reference's| in units of one bf16 ulp of the group's absmax over 127 (the step
    by which a scale moves when its largest element rounds to a neighbouring bf16), and the largest
    |int8 - reference's|. 0 and 0 for the same bytes; a tolerant rung aims at 1 and 1 at most."""
    finite = torch.isfinite(ref_s)
    if not finite.any():
        return 0.0, 0
    # The group's absmax is a bf16 value: scale * 127 rounds back to it (a power of two lands just below).
    absmax = (ref_s[finite] * 127).to(torch.bfloat16).double().clamp(min=2.0**-133)
    ulp = torch.exp2(torch.floor(torch.log2(absmax)) - 7) / 127
    ulps = float(((s[finite].double() - ref_s[finite].double()).abs() / ulp).nan_to_num(nan=float("inf")).max())
    in_finite = finite.repeat_interleave(GROUP_SIZE, dim=1)
    steps = int((q.int() - ref_q.int()).abs()[in_finite].max())
    return ulps, steps


def compare(outputs, ref_outputs):
    """The judge's two comparisons per quantized output, exactness figures, and their totals per kind."""
    gq, gs, yq, ys = outputs
    rgq, rgs, ryq, rys = ref_outputs
    scale_checks = [_judge("grad_input_s", gs, rgs, SCALE_TOL), _judge("y_s_t", ys, rys, SCALE_TOL)]
    dequant_checks = [_judge("grad_input_dequant", dequantize(gq, gs), dequantize(rgq, rgs), DEQUANT_TOL),
                      _judge("y_dequant", dequantize(yq, ys), dequantize(ryq, rys), DEQUANT_TOL)]
    checks = scale_checks + dequant_checks
    differing = {n: differing_bytes(a, e) for n, a, e in zip(OUTPUT_NAMES, outputs, ref_outputs)}
    scale_tol_used = max(c["tol_used"] for c in scale_checks)
    distances = [_distance(gq, gs, rgq, rgs), _distance(yq, ys, ryq, rys)]
    return {
        "passed": all(c["passed"] for c in checks),
        "passed_as_written": all(c["passed_as_written"] for c in checks),
        "checks": checks,
        "differing_bytes": differing,
        "scale_tol_used": scale_tol_used,
        "totals": {
            "scale_mismatches": sum(c["mismatches"] for c in scale_checks),
            "dequant_mismatches": sum(c["mismatches"] for c in dequant_checks),
            "nan_pairs": sum(c["nan_pairs"] for c in checks),
            "max_scale_err": max(c["max_abs_err"] for c in scale_checks),
            "max_dequant_err": max(c["max_abs_err"] for c in dequant_checks),
            "differing_bytes": sum(differing.values()),
            "scale_tol_used": scale_tol_used,
            "scale_ulps": max(d[0] for d in distances),
            "int8_steps": max(d[1] for d in distances),
            "nonfinite_groups": int((~torch.isfinite(rgs)).sum() + (~torch.isfinite(rys)).sum()),
        },
    }


# ---------------------------------------------------------------- command line (check.py, bench.py)

class ArgumentParser(argparse.ArgumentParser):
    """argparse whose usage errors are one line on stderr, `PROG: error: MESSAGE`, with exit code 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}\n")


def one_line(text, limit=300):
    """text on one line (its line breaks and runs of spaces made single spaces), cut to limit characters."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def at_least_one(what):
    """An argparse type: a whole number of `what`, 1 or more."""
    def whole_number(text):
        try:
            n = int(text)
        except ValueError:
            n = 0
        if n < 1:
            raise argparse.ArgumentTypeError(f"expected a whole number of {what}, 1 or more; got {text!r}")
        return n
    whole_number.__name__ = f"number of {what}"
    return whole_number


def positive_seconds(text):
    """argparse type of a time limit: seconds, more than 0."""
    try:
        seconds = float(text)
    except ValueError:
        seconds = 0.0
    if not seconds > 0:
        raise argparse.ArgumentTypeError(f"expected seconds, more than 0; got {text!r}")
    return seconds


def existing_file(text):
    """argparse type of a solution path: a file that exists."""
    path = Path(text)
    if not path.exists():
        raise argparse.ArgumentTypeError(f"no such file: {text}")
    if not path.is_file():
        raise argparse.ArgumentTypeError(f"not a file: {text}")
    return text


def shape_group(text):
    """argparse type of --shapes: one of load_shapes' forms, kept as written once it loads."""
    try:
        load_shapes(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def json_destination(text):
    """argparse type of --json: a file name in a folder that exists, checked before any long run."""
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a folder; expected a file name")
    if not path.parent.is_dir():
        raise argparse.ArgumentTypeError(f"no folder {path.parent} to write {path.name} in (make it first)")
    return text


# ---------------------------------------------------------------- environment for records

def environment(device):
    import triton
    env = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "device": device,
        "gpu": torch.cuda.get_device_name() if device == "cuda" else None,
        "torch": torch.__version__,
        "triton": triton.__version__,
        "python": platform.python_version(),
        "interpreter": os.environ.get("TRITON_INTERPRET") == "1",
    }
    return env
