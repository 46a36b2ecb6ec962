"""Correctness gate for a silu_dot_fwd_bwd_quant_fuse submission.

    python check.py [--solution PATH] [--shapes GROUP|MxH|ExTxH ...] [--seeds N] [--families F ...]
                    [--route nvidia|amd|generic] [--strict] [--json PATH]
    python check.py --targets cuda:90,hip:gfx942 [--solution PATH] [--json PATH]
    python check.py --targets judge[:BACKEND,...] [--solution PATH] [--json PATH]

Named checks, per shape (each over every seed x input family):
  judge        the judge's comparisons: scales atol 1e-4 rtol 1e-5; dequantized int8 atol 0.25 rtol 0.25,
               with a NaN equal to a NaN (the judge as written fails those; they are counted as NaN pairs)
  unwritten    outputs are poisoned (int8 -128, scales a NaN of one payload) before every call; none may survive
  replay       a second call, new inputs in the same input and output buffers, matches its own reference
  inputs       x and grad_y are bit-identical after the call
  in_place     the returned tensors are the given output tensors
  triton_only  no PyTorch compute op runs during the call, and at least one Triton kernel launches
  layouts      row-strided views (unit column stride) of wider buffers, inputs and outputs, give the same
               bytes as contiguous tensors and leave the padding columns untouched (first seed and family)
  exact        0 bytes differ from the reference, a NaN equal to any NaN (fails only with --strict on a GPU)
Static checks on the file: single_file (imports only torch, triton, numpy, the standard library;
the function defined at top level) and numerics (fast-math constructs in @triton.jit code and
JIT launches (kernel[grid](...)) without enable_fp_fusion=False; fails only with --strict).

With --targets, nothing runs: every kernel the solution's routes launch is compiled for each named
target (backend:arch) instead, no GPU needed; see compile_matrix.py. --targets judge compiles for the
judge's seven backends instead, each with the Triton its compiler is built on, and checks every launch
against the backend's known limits; see judge_targets.py.

With no GPU, kernels run under the Triton interpreter on small shapes. There the reference's
CPU sigmoid is not the GPU's, so differing bytes are reported but never fail: bit-exactness is a
GPU property, checked with --strict on a GPU.

--route sets SILU_DOT_ROUTE before the solution is loaded, forcing its backend route; the route it
takes is printed (its route_for(device), or "unknown" if it has none).
"""
import argparse
import ast
import contextlib
import json
import os
import sys
import warnings
from pathlib import Path

import torch
from torch.utils._python_dispatch import TorchDispatchMode

import compile_matrix  # imports no triton either: each compile runs in its own process
import harness  # imports no triton: main() picks the device (and the interpreter) before anything does

NAMED_CHECKS = ("judge", "unwritten", "replay", "inputs", "in_place", "triton_only", "layouts", "exact")
STATIC_CHECKS = ("single_file", "numerics")
# Kernels the solution launched without enable_fp_fusion=False, seen at run time by the launch watcher
# (what a launch passes in a dict of options is invisible to the static check): a numerics problem.
FUSED_LAUNCHES = set()
ALLOWED_IMPORTS = {"torch", "triton", "numpy"} | set(sys.stdlib_module_names)
# Allocation and metadata: everything else PyTorch runs during the call is compute.
ALLOWED_OPS = {"aten::empty", "aten::empty_strided", "aten::empty_like", "aten::new_empty",
               "aten::new_empty_strided", "aten::detach", "aten::alias", "aten::lift_fresh",
               "aten::sym_size", "aten::sym_stride", "aten::sym_numel", "aten::sym_storage_offset"}
FAST_MATH_CALLS = {"sigmoid", "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "fdiv", "div_full"}
# The `layouts` check: extra columns per row of each tensor's buffer (the tensor is the buffer's first
# columns: unit column stride, a longer row stride). Rows 16-byte aligned, then one element wider.
LAYOUTS = {
    "16-byte-aligned rows": {"x": 64, "grad_y": 8, "grad_input_q": 16, "grad_input_s": 4, "y_q_t": 16, "y_s_t": 4},
    "unaligned rows": dict.fromkeys(("x", "grad_y") + harness.OUTPUT_NAMES, 1),
}
INPUT_PADDING = 1e30  # what the input buffers' padding columns hold: a solution that reads them shows it


# ---------------------------------------------------------------- the verdict

def counts(name, strict, device):
    """The verdict policy, its one home: whether a failed check fails the run. `exact` counts only with
    --strict on a GPU (on the CPU the reference's sigmoid is not the GPU's), the static `numerics`
    only with --strict, every other check always."""
    if name not in NAMED_CHECKS + STATIC_CHECKS:
        raise ValueError(f"unknown check {name!r}")
    if name == "exact":
        return strict and device == "cuda"
    if name == "numerics":
        return strict
    return True


def failed_checks(checks, strict, device):
    """The names of the failed checks that fail the run, from {name: (passed, detail)}."""
    return [name for name, (passed, _) in checks.items() if not passed and counts(name, strict, device)]


def static_results(static):
    """{name: (passed, detail)} from the static checks' {name: [problem, ...]}."""
    return {name: (not problems, "; ".join(problems)) for name, problems in static.items()}


# ---------------------------------------------------------------- static checks

def _dotted(node):
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else node.attr
    return ""


def check_single_file(source):
    """Imports only torch/triton/numpy/stdlib, no dynamic imports, the function at top level."""
    problems = []
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                problems.append(f"line {node.lineno}: relative import")
                continue
            names = [node.module or ""]
        elif isinstance(node, ast.Call) and _dotted(node.func) in ("__import__", "importlib.import_module",
                                                                    "import_module"):
            problems.append(f"line {node.lineno}: dynamic import {_dotted(node.func)}()")
            continue
        else:
            continue
        for name in names:
            if name.split(".")[0] not in ALLOWED_IMPORTS:
                problems.append(f"line {node.lineno}: imports {name!r} (allowed: torch, triton, numpy, stdlib)")
    if not any(isinstance(n, ast.FunctionDef) and n.name == "silu_dot_fwd_bwd_quant_fuse" for n in tree.body):
        problems.append("no top-level 'def silu_dot_fwd_bwd_quant_fuse'")
    return problems


def _is_jit(fn):
    return any(_dotted(d.func if isinstance(d, ast.Call) else d).endswith("jit") for d in fn.decorator_list)


def _walk_gpu_path(nodes):
    """Nodes of a kernel body, leaving out the bodies of `if ...INTERPRET...:` (interpreter-only code)."""
    stack = list(nodes)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and "INTERPRET" in ast.unparse(node.test):
            stack.extend(node.orelse)
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


def check_numerics(source):
    """Constructs that round differently from PyTorch's kernels on the GPU."""
    flags = []
    tree = ast.parse(source)
    for fn in ast.walk(tree):
        if not (isinstance(fn, ast.FunctionDef) and _is_jit(fn)):
            continue
        for node in _walk_gpu_path(fn.body):
            if isinstance(node, ast.Call):
                name = _dotted(node.func)
                leaf = name.rsplit(".", 1)[-1]
                if name.startswith(("tl.", "triton.language.")) and leaf in FAST_MATH_CALLS:
                    flags.append(f"line {node.lineno} in {fn.name}: {name}() is approximate on the GPU")
                elif leaf.startswith("fast_"):
                    flags.append(f"line {node.lineno} in {fn.name}: {name}() is fast-math")
            elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
                if not (isinstance(node.left, ast.Constant) and isinstance(node.right, ast.Constant)):
                    flags.append(f"line {node.lineno} in {fn.name}: '/' on tensors is div.full (approximate); "
                                 "use tl.math.div_rn")
    # Launches that compile: jit_function[grid](...). A kernel compiled by such a launch and
    # launched again later (compiled[grid](...)) takes no compile options, so it is not flagged.
    jit_names = {fn.name for fn in ast.walk(tree) if isinstance(fn, ast.FunctionDef) and _is_jit(fn)}
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript)
                and _dotted(node.func.value).rsplit(".", 1)[-1] in jit_names):
            fusion = [k for k in node.keywords if k.arg == "enable_fp_fusion"]
            if not fusion or not (isinstance(fusion[0].value, ast.Constant) and fusion[0].value.value is False):
                flags.append(f"line {node.lineno}: launch without enable_fp_fusion=False (FMA contraction "
                             "changes rounding)")
    return flags


# ---------------------------------------------------------------- what runs during a call

class ComputeWatch(TorchDispatchMode):
    """Records PyTorch compute ops and Triton launches (JIT or of an already compiled kernel) while a solution runs.

    Ops issued inside a Triton launch (the interpreter copies tensors to and from the host)
    belong to the launch, not to the solution, and are not counted.
    """

    def __init__(self):
        super().__init__()
        self.ops = []
        self.launches = 0
        self.fused_launches = set()  # kernels launched without enable_fp_fusion=False
        self._inside_launch = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func._schema.name
        if not self._inside_launch and name not in ALLOWED_OPS and not func.is_view:
            self.ops.append(name)
        return func(*args, **(kwargs or {}))


def _launch_entry_points():
    """(class, attribute, kind) for every place a Triton launch passes through, on any Triton from 3.2
    on; kind "launch" is the launch itself, "launcher" returns the callable that launches.

    JITFunction.run: every compiled launch, kernel[grid](...) and kernel.run(...).
    CompiledKernel.__getitem__: a kernel compiled earlier, launched directly (compiled[grid](...)).
    GridExecutor.__call__: every launch under the interpreter. (InterpretedFunction.run, which builds
    one, exists only from Triton 3.6; before that InterpretedFunction.__getitem__ returns one, and a
    run attribute is set per instance.) Attributes a version lacks are left out.
    """
    from triton.runtime import interpreter, jit
    try:
        from triton.compiler.compiler import CompiledKernel
    except ImportError:
        CompiledKernel = None
    candidates = [(jit, "JITFunction", "run", "launch"), (interpreter, "GridExecutor", "__call__", "launch")]
    points = [(getattr(module, cls_name, None), attr, kind) for module, cls_name, attr, kind in candidates]
    points.append((CompiledKernel, "__getitem__", "launcher"))
    return [(cls, attr, kind) for cls, attr, kind in points if cls is not None and callable(getattr(cls, attr, None))]


def _kernel_name(launcher):
    """The kernel's name, from a JITFunction or the interpreter's GridExecutor."""
    fn = getattr(launcher, "fn", launcher)
    return getattr(fn, "__name__", None) or getattr(getattr(fn, "fn", None), "__name__", repr(fn))


@contextlib.contextmanager
def watch_compute():
    watch = ComputeWatch()

    def counted(launch, takes_options):
        def counted_launch(*args, **kwargs):
            if not watch._inside_launch:  # a launch made by a launch is the same launch
                watch.launches += 1
                if takes_options and kwargs.get("enable_fp_fusion", True) is not False:
                    watch.fused_launches.add(_kernel_name(args[0]))
            watch._inside_launch += 1
            try:
                return launch(*args, **kwargs)
            finally:
                watch._inside_launch -= 1
        return counted_launch

    def patched(original, kind):
        if kind == "launch":  # self, then the kernel's arguments and the compile options
            return counted(original, takes_options=True)
        # A compiled kernel's launcher takes no compile options: they were fixed when it was compiled.
        return lambda self, *args, **kwargs: counted(original(self, *args, **kwargs), takes_options=False)

    restore = []
    try:
        for cls, attr, kind in _launch_entry_points():
            restore.append((cls, attr, cls.__dict__.get(attr)))
            setattr(cls, attr, patched(getattr(cls, attr), kind))
        with watch:
            yield watch
    finally:
        for cls, attr, original in reversed(restore):
            if original is None:  # it was inherited
                delattr(cls, attr)
            else:
                setattr(cls, attr, original)


# ---------------------------------------------------------------- one call, all its checks

def _sync(device):
    if device == "cuda":
        torch.cuda.synchronize()


def _same_bits(a, b):
    return torch.equal(a.contiguous().view(torch.uint8), b.contiguous().view(torch.uint8))


def call_and_check(fn, x, grad_y, outputs, ref_outputs, device):
    """Calls fn into outputs; returns {check: (passed, detail)} for the checks one call decides, and the
    comparison with the reference (None if the call raised: then every named check fails)."""
    results = {}
    x_before, gy_before = x.clone(), grad_y.clone()
    try:
        with watch_compute() as watch:
            returned = fn(x, grad_y, *outputs)
        _sync(device)
    except Exception as exc:
        detail = f"raised {type(exc).__name__}: {exc}"
        return {name: (False, detail) for name in NAMED_CHECKS}, None
    FUSED_LAUNCHES.update(watch.fused_launches)

    in_place = (isinstance(returned, (tuple, list)) and len(returned) == 4
                and all(r is o for r, o in zip(returned, outputs)))
    results["in_place"] = (in_place, "" if in_place else
                           "must return (grad_input_q, grad_input_s, y_q_t, y_s_t): the given tensors, in order")
    same = _same_bits(x, x_before) and _same_bits(grad_y, gy_before)
    results["inputs"] = (same, "" if same else "x or grad_y changed during the call")
    left = {k: v for k, v in harness.unwritten(outputs).items() if v}
    results["unwritten"] = (not left, "" if not left else f"poison left in {left}")
    torch_ops = sorted(set(watch.ops))
    ok = not torch_ops and watch.launches > 0
    results["triton_only"] = (ok, "" if ok else
                              f"PyTorch compute ops during the call: {torch_ops}" if torch_ops else
                              "no Triton kernel was launched")
    comparison = harness.compare(outputs, ref_outputs)
    failed = [c for c in comparison["checks"] if not c["passed"]]
    results["judge"] = (not failed, "; ".join(
        f"{c['name']}: {c['mismatches']} mismatches, max err {c['max_abs_err']:.3g}, first {c['first_failures']}"
        for c in failed))
    differing = {name: n for name, n in comparison["differing_bytes"].items() if n}
    results["exact"] = (not differing, f"bytes differ: {differing}" if differing else "")
    return results, comparison


def padded_view(shape, dtype, device, extra_columns, fill):
    """(view, buffer): a buffer extra_columns wider than shape, all of it fill (a value, or "poison":
    harness.poisoned), and the view of its first columns: shape, unit column stride, a longer row stride."""
    rows, cols = shape
    wide = (rows, cols + extra_columns)
    buffer = (harness.poisoned(wide, dtype, device) if fill == "poison" else
              torch.full(wide, fill, dtype=dtype, device=device))
    return buffer[:, :cols], buffer


def check_layouts(fn, x, grad_y, contiguous_outputs, device):
    """The `layouts` check: (passed, detail). Every tensor a row-strided view of a wider buffer, for
    each of LAYOUTS; the outputs must hold the same bytes as the solution's own contiguous call on the
    same inputs (contiguous_outputs; a NaN equals any NaN), the padding must be untouched and the
    inputs unchanged. Judged against the contiguous call, not the reference, so that it tests the
    layout alone, on the CPU too; the contiguous call is held to the reference by judge and exact.
    A ValueError refusing a layout fails too: any row stride with unit column stride must work."""
    failures = []
    for layout, extra in LAYOUTS.items():
        x_view, x_buffer = padded_view(x.shape, x.dtype, device, extra["x"], INPUT_PADDING)
        gy_view, gy_buffer = padded_view(grad_y.shape, grad_y.dtype, device, extra["grad_y"], INPUT_PADDING)
        x_view.copy_(x)
        gy_view.copy_(grad_y)
        inputs_before = (x_buffer.clone(), gy_buffer.clone())
        out_views, out_buffers = zip(*(padded_view(t.shape, t.dtype, device, extra[name], "poison")
                                       for name, t in zip(harness.OUTPUT_NAMES, contiguous_outputs)))
        padding_before = [b[:, v.shape[1]:].clone() for v, b in zip(out_views, out_buffers)]
        try:
            fn(x_view, gy_view, *out_views)
            _sync(device)
        except Exception as exc:
            failures.append(f"{layout}: raised {type(exc).__name__}: {exc}")
            continue
        differing = {name: n for name, v, e in zip(harness.OUTPUT_NAMES, out_views, contiguous_outputs)
                     if (n := harness.differing_bytes(v, e))}
        if differing:
            failures.append(f"{layout}: bytes differ from the contiguous call's: {differing}")
        written = [name for name, v, b, before in zip(harness.OUTPUT_NAMES, out_views, out_buffers, padding_before)
                   if not _same_bits(b[:, v.shape[1]:], before)]
        if written:
            failures.append(f"{layout}: padding columns written in {written}")
        if not (_same_bits(x_buffer, inputs_before[0]) and _same_bits(gy_buffer, inputs_before[1])):
            failures.append(f"{layout}: the x or grad_y buffer changed")
    return not failures, "; ".join(failures)


def check_shape(fn, reference, label, M, H, seeds, families, device):
    row = {"shape": label, "M": M, "H": H, "runs": 0, "checks": {n: [True, ""] for n in NAMED_CHECKS},
           **harness.no_totals()}

    def record(name, passed, detail, where):
        if not passed and row["checks"][name][0]:
            row["checks"][name] = [False, f"{where}: {detail}"]

    for seed in range(seeds):
        for family in families:
            where = f"seed {seed} {family}"
            x, gy = harness.make_inputs(M, H, seed, family, device)
            ref = harness.run_reference(x, gy, reference)
            outputs = harness.new_outputs(M, H, device)
            results, comparison = call_and_check(fn, x, gy, outputs, ref, device)
            row["runs"] += 1
            for name, (passed, detail) in results.items():
                record(name, passed, detail, where)
            if comparison is None:
                continue
            harness.add_totals(row, comparison["totals"])

            if seed == 0 and family == families[0]:
                record("layouts", *check_layouts(fn, x, gy, outputs, device), where)
                # Replay: new inputs into the same buffers, outputs not re-poisoned.
                x2, gy2 = harness.make_inputs(M, H, seed + 1000, family, device)
                x.copy_(x2)
                gy.copy_(gy2)
                ref2 = harness.run_reference(x, gy, reference)
                results2, _ = call_and_check(fn, x, gy, outputs, ref2, device)
                passed, detail = results2["judge"]
                record("replay", passed, "second call into the same buffers: " + detail, where)
    return row


# ---------------------------------------------------------------- report

def print_table(rows, strict, device):
    head = (f"{'shape':>14} {'M':>6} {'H':>5} {'runs':>4}  {'verdict':7} {'scale mism':>10} {'deq mism':>9} "
            f"{'max scale err':>13} {'max deq err':>11} {'bytes differ':>12} {'scale tol used':>14} "
            f"{'nonfinite':>9} {'NaN pairs':>9}  failed checks")
    print(head)
    print("-" * len(head))
    for r in rows:
        failed = failed_checks(r["checks"], strict, device)
        print(f"{r['shape']:>14} {r['M']:>6} {r['H']:>5} {r['runs']:>4}  {'PASS' if not failed else 'FAIL':7} "
              f"{r['scale_mismatches']:>10} {r['dequant_mismatches']:>9} {r['max_scale_err']:>13.3g} "
              f"{r['max_dequant_err']:>11.3g} {r['differing_bytes']:>12} {r['scale_tol_used']:>14.3g} "
              f"{r['nonfinite_groups']:>9} {r['nan_pairs']:>9}  {', '.join(failed) or '-'}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--solution", default=str(harness.ROOT / "solution.py"))
    parser.add_argument("--shapes", nargs="+", help="shape groups from shapes.json, MxH or ExTxH (default: benchmark "
                        "and hidden_like on a GPU, cpu_small without one)")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--families", nargs="+", default=list(harness.FAMILIES), choices=harness.FAMILIES)
    parser.add_argument("--route", choices=harness.ROUTES,
                        help=f"force the solution's backend route (sets {harness.ROUTE_ENV}; default: the solution "
                        "chooses)")
    parser.add_argument("--strict", action="store_true", help="also require 0 differing bytes and clean numerics")
    parser.add_argument("--json", help="write the full report here")
    parser.add_argument("--targets", help="compile matrix instead of a run: comma-separated targets, each "
                        f"{compile_matrix.TARGET_FORM} (e.g. cuda:80,cuda:90,hip:gfx942); or 'judge': the judge's "
                        "seven backends, each with its own Triton (judge_targets.py), or judge:ascend,metax for some")
    args = parser.parse_args(argv)
    if args.targets is not None and args.targets.partition(":")[0] == "judge":
        import judge_targets  # imports no triton: each Triton runs in processes of its own
        try:
            backends = judge_targets.parse_selection(args.targets)
        except ValueError as exc:
            parser.error(str(exc))
        return judge_targets.report(args.solution, args.json, backends=backends)
    if args.targets is not None:
        try:
            targets = compile_matrix.parse_targets(args.targets)
        except ValueError as exc:
            parser.error(str(exc))
        return compile_matrix.report(args.solution, targets, args.json)

    device = harness.use_interpreter_if_no_gpu()  # before anything imports triton
    # exp(-gate) overflowing to inf is IEEE behaviour the math relies on (sigmoid -> 0), and the specials
    # family's NaN and inf make invalid operations on purpose: neither is an error of the solution.
    warnings.filterwarnings("ignore", message="overflow encountered in exp")
    warnings.filterwarnings("ignore", message="invalid value encountered")
    if args.route:
        os.environ[harness.ROUTE_ENV] = args.route  # before the solution is loaded

    env = harness.environment(device)
    if device == "cuda":
        print(f"check.py on {env['gpu']} (torch {env['torch']}, triton {env['triton']})")
    else:
        print("check.py: no GPU found -- running the Triton interpreter (TRITON_INTERPRET=1) on small CPU shapes; "
              "byte-exactness and speed need a GPU")
    default_groups = ["benchmark", "hidden_like"] if device == "cuda" else ["cpu_small"]
    shapes = harness.expand_shape_args(args.shapes, default_groups)

    source = Path(args.solution).read_text()
    static = {"single_file": check_single_file(source), "numerics": check_numerics(source)}
    static_failed = failed_checks(static_results(static), args.strict, device)
    for name, problems in static.items():
        print(f"static {name}: {'ok' if not problems else 'FAIL' if name in static_failed else 'warning'}")
        for p in problems:
            print(f"    {p}")

    module = harness.load_solution_module(args.solution, name="solution_for_check")
    fn = harness.solution_function(module)
    route = harness.route_name(module, device)
    print(f"route: {route}")
    reference = harness.reference_fn()
    rows = []
    for label, M, H in shapes:
        row = check_shape(fn, reference, label, M, H, args.seeds, args.families, device)
        row["passed"] = not failed_checks(row["checks"], args.strict, device)
        rows.append(row)
        print(f"  {label}: {'PASS' if row['passed'] else 'FAIL'} ({row['runs']} runs, "
              f"{row['differing_bytes']} bytes differ)", flush=True)

    if FUSED_LAUNCHES:
        static["numerics"] += [f"{name} was launched without enable_fp_fusion=False (FMA contraction changes "
                               "rounding)" for name in sorted(FUSED_LAUNCHES)]
        static_failed = failed_checks(static_results(static), args.strict, device)
        print(f"static numerics (launches seen): {'FAIL' if 'numerics' in static_failed else 'warning'}")
        for name in sorted(FUSED_LAUNCHES):
            print(f"    {name} was launched without enable_fp_fusion=False")

    print()
    print_table(rows, args.strict, device)
    for r in rows:
        for name in failed_checks(r["checks"], args.strict, device):
            print(f"{r['shape']} {name}: {r['checks'][name][1]}")

    passed = not static_failed and all(r["passed"] for r in rows)
    nan_pairs = sum(r["nan_pairs"] for r in rows)
    if nan_pairs:
        print(f"note: {nan_pairs} compared elements are NaN in both the solution and the reference "
              f"({sum(r['nonfinite_groups'] for r in rows)} reference groups held a NaN or an inf). The judge "
              "as written (torch.testing.assert_close, equal_nan=False) fails every one of them, for any "
              "solution and for the reference itself; check.py counts a NaN equal to a NaN.")
    if args.strict and device != "cuda":
        print("note: --strict on CPU checks the static numerics only; differing bytes against the CPU "
              "reference are reported, not failed")
    print(f"\n{'PASSED' if passed else 'FAILED'}: {sum(r['passed'] for r in rows)}/{len(rows)} shapes, "
          f"{sum(r['runs'] for r in rows)} runs, seeds={args.seeds}, families={','.join(args.families)}, "
          f"strict={args.strict}")
    if args.json:
        report = {"tool": "check", "environment": env, "solution": args.solution, "strict": args.strict,
                  "seeds": args.seeds, "families": args.families,
                  "route": {"requested": os.environ.get(harness.ROUTE_ENV, "automatic"), "taken": route},
                  "static": static, "rows": rows, "passed": passed}
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(report, indent=2))
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
