"""Correctness gate for a silu_dot_fwd_bwd_quant_fuse submission.

    python check.py [--solution PATH] [--shapes GROUP|MxH|ExTxH ...] [--seeds N] [--families F ...]
                    [--route ROUTE] [--strict] [--json PATH]
    python check.py --targets [TARGET,...] [--solution PATH] [--json PATH]

<the checks, from CHECKS>

With --targets, nothing runs: every kernel the solution's routes launch is compiled for each named
target (backend:arch) instead, no GPU needed; see compile_matrix.py. --targets alone means
--targets judge: the judge's chips, each compiled with the Triton its compiler is built on and every
launch checked against the chip's limits (judge:NAME,... for some); see judge_targets.py.

With no GPU, kernels run under the Triton interpreter on small shapes. There the reference's
CPU sigmoid is not the GPU's, so differing bytes are reported but never fail: bit-exactness is a
GPU property, checked with --strict on a GPU.

--route must be one of the loaded solution's ROUTES; it sets SILU_DOT_ROUTE before the solution's first
call, forcing that route; the route it takes is printed (its route_for(device), or "unknown" if it has none).

The solution's first call (seed 0 of the first shape and family) is made before the route is asked for. Where it
raises, the solution cannot run here (a forced route whose rung was left: its probe fails, or a kernel does not
compile or load; or any other exception): one line on stderr, naming the route and giving the solution's own
words, and exit code 1; no shape is checked. A shape whose calls raise later fails `raised`.

The last line is the verdict: PASSED with the counts, or FAILED naming each check that failed the run, a static
one with its first problem, a per-shape one with the number of shapes it failed on, e.g.
    FAILED: static numerics (line 191 in reciprocal_native: '/' on tensors is div.full (approximate); use
    tl.math.div_rn); every shape passed at run time (20/20)
    FAILED: judge on 4/20 shapes, exact on 20/20
The --json report holds the same facts under "verdict".

Exit code: 0 when every check that counts passed, 1 when the solution fails (a check, a file that does not
parse or import, or a first call that raises), 2 for a usage error.
"""
import argparse
import ast
import contextlib
import json
import os
import sys
import textwrap
import warnings
from pathlib import Path
from typing import NamedTuple, Optional

import torch
from torch.utils._python_dispatch import TorchDispatchMode

import compile_matrix  # imports no triton either: each compile runs in its own process
import harness  # imports no triton: main() picks the device (and the interpreter) before anything does
import judge_targets

ALLOWED_IMPORTS = {"torch", "triton", "numpy"} | set(sys.stdlib_module_names)
# Allocation and metadata: everything else PyTorch runs during the call is compute.
ALLOWED_OPS = {"aten::empty", "aten::empty_strided", "aten::empty_like", "aten::new_empty",
               "aten::new_empty_strided", "aten::detach", "aten::alias", "aten::lift_fresh",
               "aten::sym_size", "aten::sym_stride", "aten::sym_numel", "aten::sym_storage_offset"}
# What triton_only lets pass between the host and the device during a call, each as narrowly as the solution's proofs
# need it, and why. Anything else that carries data of x, grad_y or the outputs to the host, or host data into the
# outputs, fails (ComputeWatch says how each is seen, and what it cannot see).
HOST_TRAFFIC_ALLOWED = (
    ("uploads into fresh tensors",
     "host data may fill tensors that share no memory with x, grad_y or the outputs; a launch handed it, or a tensor "
     "that such a launch took, may read the outputs but must leave every byte of them as it was. The witness uploads "
     "its expectations once per device, and its check kernel compares the outputs with them. A constant that an "
     "output-writing kernel reads (a lookup table computed on the host) is host data during a call: upload it before "
     "the call, or compute it with a Triton kernel, as the sigmoid table is"),
    ("read-back of what holds none of the inputs",
     "a tensor that shares no memory with x, grad_y, the outputs, or a tensor that a launch handed x or grad_y took, "
     "may be read to the host. The proofs' records, the probe's verdict and the sigmoid table are read back so"),
    ("single elements of an output that holds none of the inputs",
     "one element at a time, copied (not a view of its memory, which the host could write), before any launch handed "
     "x or grad_y takes the output. The witness's arbiter reads an element of the witness's bytes back, to judge it "
     "again on the host"),
)
# Under the interpreter host and device are one: these reach a tensor's data with no PyTorch op, and are watched by
# name while a call runs. The methods are watched on host tensors only (on a device data reaches the host through a
# copy, which the dispatch sees); the constructors that dispatch nothing mark what they make as host data.
HOST_METHODS = ("numpy", "tolist", "__array__", "__dlpack__", "__reduce_ex__")
ALIASING_HOST_METHODS = ("numpy", "__array__", "__dlpack__")  # a view of the tensor's memory, not a copy
HOST_CONSTRUCTORS = ("tensor", "as_tensor", "asarray", "from_numpy", "frombuffer", "from_dlpack")
# Branches the numerics check does not read: code for where libdevice does not exist (the interpreter,
# Ascend), whose tl.exp is the only exp there; code that divides with the backend's own division where
# that is the reference's (Ascend's vector divide) or where exactness is not the aim (the tolerant rung);
# and the else branch of an EXACT test, the tolerant rung's arithmetic, held to the judge's tolerance.
EXEMPT_BRANCHES = ("INTERPRET", "NO_LIBDEVICE", "NPU_DIVISION")
EXEMPT_ELSE_BRANCHES = ("EXACT",)
FAST_MATH_CALLS = {"sigmoid", "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "fdiv", "div_full"}
# The `layouts` check: extra columns per row of each tensor's buffer (the tensor is the buffer's first
# columns: unit column stride, a longer row stride). Rows 16-byte aligned, then one element wider.
LAYOUTS = {
    "16-byte-aligned rows": {"x": 64, "grad_y": 8, "grad_input_q": 16, "grad_input_s": 4, "y_q_t": 16, "y_s_t": 4},
    "unaligned rows": dict.fromkeys(("x", "grad_y") + harness.OUTPUT_NAMES, 1),
}
INPUT_PADDING = 1e30  # what the input buffers' padding columns hold: a solution that reads them shows it
DEFAULT_SHAPE_GROUPS = {"cuda": ["benchmark", "hidden_like"], "cpu": ["cpu_small"]}
# Failure details as printed (the --json report keeps them all): the first few problems of a check, each
# on a line of its own, cut to a width.
PROBLEMS_SHOWN = 3
PROBLEM_WIDTH = 150


# ---------------------------------------------------------------- the checks and the verdict

# When a failed check fails the run.
ALWAYS = "always"
WITH_STRICT = "with --strict"
WITH_STRICT_ON_A_GPU = "with --strict on a GPU"  # on the CPU the reference's sigmoid is not the GPU's


# What a failed `judge` check tells (README, "Scoring": the real judge passed an entry that this check fails).
JUDGE_FAIL_MEANS = ("a FAIL means the judge can fail the solution on some input, not that it will: every seed and "
                    "family here is more inputs than one judge run")


class Check(NamedTuple):
    name: str
    per_shape: bool  # run on every shape (over every seed and family); otherwise on the file's text
    policy: str  # ALWAYS, WITH_STRICT or WITH_STRICT_ON_A_GPU
    doc: str


CHECKS = (
    Check("raised", True, ALWAYS, "every call returns without raising (a call that raises is checked no further; "
          "its exception is the detail)"),
    Check("judge", True, ALWAYS, "the judge's comparisons: scales atol 1e-4 rtol 1e-5; dequantized int8 atol 0.25 "
          "rtol 0.25, with a NaN equal to a NaN (the judge as written fails those; they are counted as NaN pairs); "
          + JUDGE_FAIL_MEANS),
    Check("unwritten", True, ALWAYS, "outputs are poisoned (int8 -128, scales a NaN of one payload) before every "
          "call; none may survive"),
    Check("replay", True, ALWAYS, "a second call, new inputs in the same input and output buffers, matches its own "
          "reference"),
    Check("inputs", True, ALWAYS, "x and grad_y are bit-identical after the call"),
    Check("in_place", True, ALWAYS, "the returned tensors are the given output tensors"),
    Check("triton_only", True, ALWAYS, "no PyTorch compute op runs during the call, at least one Triton kernel "
          "launches, and no output is computed outside Triton: no data of x, grad_y or the outputs reaches the host "
          "(.cpu(), .to('cpu'), .tolist(), .item(), .numpy(), __array__, any copy), directly or through a tensor that "
          "a launch handed them took, and no host data reaches the outputs (a copy into them, or a launch handed host "
          "data that changes them). Allowed, as the proofs need them: "
          + "; ".join(f"({i}) {what}: {why}" for i, (what, why) in enumerate(HOST_TRAFFIC_ALLOWED, 1))),
    Check("layouts", True, ALWAYS, "row-strided views (unit column stride) of wider buffers, inputs and outputs, "
          "give the same bytes as contiguous tensors and leave the padding columns untouched (first seed and "
          "family; triton_only watches these calls too)"),
    Check("exact", True, WITH_STRICT_ON_A_GPU, "0 bytes differ from the reference, a NaN equal to any NaN"),
    Check("single_file", False, ALWAYS, "imports only torch, triton, numpy, the standard library; the function "
          "defined at top level"),
    Check("numerics", False, WITH_STRICT, "no fast-math constructs in @triton.jit code, and no launch without "
          "enable_fp_fusion=False: JIT launches (kernel[grid](...)) in the text, any launch at run time"),
)
CHECKS_BY_NAME = {c.name: c for c in CHECKS}
NAMED_CHECKS = tuple(c.name for c in CHECKS if c.per_shape)
STATIC_CHECKS = tuple(c.name for c in CHECKS if not c.per_shape)


def describe_checks():
    """The checks as the module docstring (and --help) lists them."""
    def entries(checks):
        for c in checks:
            doc = c.doc + ("" if c.policy == ALWAYS else f" (fails only {c.policy})")
            yield textwrap.fill(f"{c.name:<12} {doc}", width=108, initial_indent="  ", subsequent_indent=" " * 15,
                                break_on_hyphens=False)
    return "\n".join(["Named checks, per shape (each over every seed x input family):",
                      *entries(c for c in CHECKS if c.per_shape),
                      "Static checks on the file:",
                      *entries(c for c in CHECKS if not c.per_shape)])


__doc__ = __doc__.replace("<the checks, from CHECKS>", describe_checks())  # CHECKS is the list's one home


def counts(name, strict, device):
    """Whether a failed check fails the run, by its policy in CHECKS."""
    if name not in CHECKS_BY_NAME:
        raise ValueError(f"unknown check {name!r}")
    policy = CHECKS_BY_NAME[name].policy
    if policy == WITH_STRICT_ON_A_GPU:
        return strict and device == "cuda"
    if policy == WITH_STRICT:
        return strict
    return True


def failed_checks(problems, strict, device):
    """The names of the failed checks that fail the run, from {name: [problem, ...]} (no problem: passed)."""
    return [name for name, found in problems.items() if found and counts(name, strict, device)]


def problems_by_check(row):
    """{name: [problem, ...]} of one shape's row."""
    return {name: result["problems"] for name, result in row["checks"].items()}


# ---------------------------------------------------------------- static checks

def _dotted(node):
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else node.attr
    return ""


def static_checks(tree):
    """{name: [problem, ...]} of the static checks, on the solution's AST."""
    return {"single_file": check_single_file(tree), "numerics": check_numerics(tree)}


def check_single_file(tree):
    """Imports only torch/triton/numpy/stdlib, no dynamic imports, the function at top level."""
    problems = []
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
    """Nodes of a kernel body, leaving out the bodies of `if` tests that are a flag of EXEMPT_BRANCHES alone
    (`if NO_LIBDEVICE:`, `if _INTERPRET:`) and the else branches of those that are one of
    EXEMPT_ELSE_BRANCHES alone (a test that combines flags is read whole)."""
    stack = list(nodes)
    while stack:
        node = stack.pop()
        test = ast.unparse(node.test).lstrip("_") if isinstance(node, ast.If) else None
        if test in EXEMPT_BRANCHES:
            stack.extend(node.orelse)
            continue
        if test in EXEMPT_ELSE_BRANCHES:
            stack.extend(node.body)
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


def check_numerics(tree):
    """Constructs that round differently from PyTorch's kernels on the GPU."""
    flags = []
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
    """Records, while a solution runs (watch_compute), the PyTorch compute ops it runs, its Triton launches (JIT or of
    an already compiled kernel), and for triton_only its host traffic that HOST_TRAFFIC_ALLOWED does not allow (host,
    one line each). inputs, outputs: the call's x and grad_y, and its four outputs.

    How host traffic is seen. On a device, data reaches the host only through PyTorch's copies (aten::_to_copy and
    aten::copy_ to a host tensor, aten::_local_scalar_dense for .item()), and host data reaches the device through a
    copy from a host tensor or a constructor (aten::lift_fresh; HOST_CONSTRUCTORS): all pass this dispatch mode. Under
    the interpreter, where the device's memory is the host's, HOST_METHODS reach the data with no op: watch_compute
    wraps them. The inputs' data is followed through launches: a launch handed x or grad_y (or a tensor marked so, or an address in one's memory as an integer) may
    have written into any tensor it took, so each is marked as holding the inputs' data; likewise host data. Tensors
    are told apart by the memory their storage spans, so that a view or another tensor over the same memory is found
    too; a marked tensor is held until the call ends, so that its memory is not handed out again and taken for it.
    A launch handed host data that takes an output has the output's bytes compared before and after it.

    What it cannot see: memory reached through ctypes or from another argument's pointer; what a launch writes where an
    integer argument points, but into an output; torch._C.TensorBase's methods called directly or a watched method or constructor
    bound before the call; a launcher's C function called without its launcher class; torch.save; a kernel's
    device_print; under the interpreter, Python run inside a kernel's body. A solution that goes to such lengths
    cheats on purpose; triton_only fails one that computes its outputs on the host and moves them in by ordinary
    means.

    Ops issued inside a Triton launch (the interpreter copies tensors to and from the host), and the watch's own,
    belong to the launch or the watch, not to the solution, and are not counted.
    """

    def __init__(self, inputs=(), outputs=()):
        super().__init__()
        self.ops = []
        self.host = []  # problems of host traffic, in order, each once
        self.launches = 0
        self.fused_launches = set()  # kernels launched without enable_fp_fusion=False
        self.compared_launches = 0  # launches handed host data whose outputs' bytes were compared
        self._inside_launch = 0
        self.outputs = [(name, t, _footprint(t)) for name, t in zip(harness.OUTPUT_NAMES, outputs)]
        self.call_tensors = ([(name, _footprint(t)) for name, t in zip(("x", "grad_y"), inputs)]
                             + [(name, footprint) for name, _, footprint in self.outputs])
        self.from_inputs = _Marks(zip(("x", "grad_y"), inputs))
        self.from_host = _Marks()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if self._inside_launch:
            return func(*args, **kwargs)
        name = func._schema.name
        if name not in ALLOWED_OPS and not func.is_view and not _moves_bytes(name, args, kwargs):
            self.ops.append(name)
        read, written = _host_traffic(name, args, kwargs)
        if read is not None:
            self.read(read, name)
        if written is not None:
            self.host_wrote(written, name)
        result = func(*args, **kwargs)
        if _makes_host_data(name, args, kwargs):
            self.from_host.add(result, f"host data ({name})")
        return result

    @contextlib.contextmanager
    def own(self):
        """The watch's own work (its comparisons, a watched method's inner calls): not the solution's."""
        self._inside_launch += 1
        try:
            yield
        finally:
            self._inside_launch -= 1

    def problem(self, text):
        if text not in self.host:
            self.host.append(text)

    def _output_at(self, footprint):
        return next((name for name, _, held in self.outputs if _overlap(held, footprint)), None)

    def read(self, t, how, aliases=False):
        """t's data reached the host (how): a problem where it holds the inputs' data (or may), or where it is an
        output's beyond one element, or at all where the host gets a view of its memory, which it can write
        (aliases: .numpy(), __array__, __dlpack__ under the interpreter), not a copy."""
        footprint = _footprint(t)
        origin = self.from_inputs.find(footprint)
        if origin is not None:
            self.problem(f"{how} read {origin} to the host")
            return
        output = self._output_at(footprint)
        if output is not None and aliases:
            self.problem(f"{how} handed the host a writable view of {output}")
        elif output is not None and t.numel() != 1:
            self.problem(f"{how} read {t.numel()} elements of {output} to the host (an output may be read one element "
                         "at a time, before a launch handed x or grad_y takes it: the witness's arbiter)")

    def host_wrote(self, t, how):
        """Host data was copied into t (how): a problem where t is the call's; otherwise t holds host data."""
        footprint = _footprint(t)
        name = next((name for name, held in self.call_tensors if _overlap(held, footprint)), None)
        if name is not None:
            self.problem(f"{how} copied host data into {name}")
        else:
            self.from_host.add(t, f"host data ({how})")

    def before_launch(self, arguments):
        """(the arguments' footprints, the first one's host data label or None, [(output, its bytes)] of each output
        an argument overlaps where one holds host data) before a launch handed arguments (_launch_arguments)."""
        footprints = [_footprint(a) for a in arguments]
        host = next((label for label in map(self.from_host.find, footprints) if label), None)
        if host is None:
            return footprints, None, []
        taken = [(name, t) for name, t, held in self.outputs if any(_overlap(held, f) for f in footprints)]
        with self.own():
            return footprints, host, [(name, t, t.clone()) for name, t in taken]

    def after_launch(self, kernel, arguments, before):
        """Judges a launch of kernel handed arguments by what before_launch found, and marks its arguments."""
        footprints, host, taken = before
        if taken:
            self.compared_launches += 1
            with self.own():
                _synchronize(taken[0][1].device)  # every stream's work: the launch's, wherever it went
                for name, t, bytes_before in taken:
                    changed = _bytes_changed(t, bytes_before)
                    if changed:
                        self.problem(f"{kernel}, handed {host}, changed {changed} bytes of {name}")
        # An integer is marked by the output it points into, or not at all: most are sizes and strides, not memory.
        markable = [(a if not isinstance(a, int) else next((t for _, t, held in self.outputs if _overlap(held, f)),
                                                          None), f) for a, f in zip(arguments, footprints)]
        if host is not None:
            for argument, footprint in markable:
                if argument is not None and self._output_at(footprint) is None:
                    self.from_host.add(argument, host)
        origin = next((label for label in map(self.from_inputs.find, footprints) if label), None)
        if origin is not None:
            for argument, footprint in markable:
                output = self._output_at(footprint)
                if argument is not None:
                    self.from_inputs.add(argument, f"{output} (which {kernel} took with {origin})" if output else
                                         f"a tensor that {kernel} took with {origin}")

    def finish(self):
        """After the call: an output whose memory was replaced (out.data = ...) holds what no launch was handed."""
        for name, t, footprint in self.outputs:
            if _footprint(t) != footprint:
                self.problem(f"{name}'s memory was replaced during the call (its .data or storage set anew)")


class _Marks:
    """Tensors whose data is of one kind (the call's inputs', or the host's), each with a label that says where its
    data came from, found by the memory their storage spans (_footprint). Each is held until the call ends."""

    def __init__(self, labelled=()):
        self.held = []  # (footprint, label, the tensor)
        for label, t in labelled:
            self.add(t, label)

    def add(self, t, label):
        footprint = _footprint(t)
        if footprint is not None and self.find(footprint) is None:
            self.held.append((footprint, label, t))

    def find(self, footprint):
        """The label of the first tensor held whose memory overlaps footprint's, or None."""
        if footprint is None:
            return None
        return next((label for held, label, _ in self.held if _overlap(held, footprint)), None)


def _footprint(obj):
    """The memory a tensor's data lies in: (device, its storage's first byte, the byte past its last), or (device,
    the storage, None) where the device has no addresses (meta); a pointer-like launch argument's (data_ptr(), no
    storage), (None, its address, the next), as an integer's, which a launch may take for an address; None where
    there is none."""
    if isinstance(obj, int) and not isinstance(obj, bool):
        return None, obj, obj + 1
    if isinstance(obj, torch.Tensor):
        try:
            storage = obj.untyped_storage()
        except Exception:  # a tensor without a storage (sparse, a subclass)
            return None
        start = storage.data_ptr()
        if start:
            return str(obj.device), start, start + storage.nbytes()
        return (str(obj.device), storage._cdata, None) if obj.device.type == "meta" else None
    base = getattr(obj, "base", None)  # a tensor descriptor
    if isinstance(base, torch.Tensor):
        return _footprint(base)
    data_ptr = getattr(obj, "data_ptr", None)
    if callable(data_ptr):
        try:
            start = int(data_ptr())
        except Exception:
            return None
        return None, start, start + 1
    return None


def _overlap(a, b):
    """Whether two footprints (_footprint) share memory; False where either is None."""
    if a is None or b is None:
        return False
    (device_a, start_a, end_a), (device_b, start_b, end_b) = a, b
    if device_a is not None and device_b is not None and device_a != device_b:
        return False
    if end_a is None or end_b is None:
        return end_a is None and end_b is None and start_a == start_b
    return start_a < end_b and start_b < end_a


def _launch_arguments(args, kwargs):
    """A launch's arguments that point at memory (tensors, tensor descriptors, pointer-like objects, integers, which
    a compiled kernel's launcher takes for addresses), however deep in lists and tuples (named tuples too: Triton takes
    nested tuples as arguments)."""
    found = []
    pending = list(args) + list(kwargs.values())
    while pending:
        item = pending.pop()
        if isinstance(item, (list, tuple)):
            pending.extend(item)
        elif _footprint(item) is not None:
            found.append(item)
    return found


def _bytes_changed(t, before):
    """How many bytes of t differ from before's (a clone of it)."""
    return int((t.contiguous().view(torch.uint8) != before.contiguous().view(torch.uint8)).sum())


def _synchronize(device):
    """Waits for every stream of a device (a no-op on the host)."""
    synchronize = getattr(getattr(torch, device.type, None), "synchronize", None)
    if device.type != "cpu" and callable(synchronize):
        synchronize(device)


def _copy_target(args, kwargs):
    """The device type an aten::_to_copy writes to: its device argument's, else its source's."""
    return torch.device(kwargs.get("device") or args[0].device).type


def _moves_bytes(name, args, kwargs):
    """A copy between the host and the device that keeps its dtype, or .item(): moves bytes, computes nothing (what it
    moves is _host_traffic's to judge)."""
    if name == "aten::_local_scalar_dense":
        return True
    if name == "aten::_to_copy":
        target = _copy_target(args, kwargs)
        return (kwargs.get("dtype") in (None, args[0].dtype) and target != args[0].device.type
                and "cpu" in (target, args[0].device.type))
    if name == "aten::copy_":
        return (args[0].dtype == args[1].dtype and args[0].device.type != args[1].device.type
                and "cpu" in (args[0].device.type, args[1].device.type))
    return False


def _host_traffic(name, args, kwargs):
    """(the tensor whose data an op carries to the host, the tensor it copies host data into), either None: .item()
    (on any device: under the interpreter the device's memory is the host's), a copy to a host tensor, a copy from
    one."""
    if name == "aten::_local_scalar_dense":
        return args[0], None
    if name == "aten::_to_copy":
        return (args[0] if _copy_target(args, kwargs) == "cpu" else None), None
    if name == "aten::copy_":
        destination, source = args[0], args[1]
        return (source if destination.device.type == "cpu" else None), (
            destination if source.device.type == "cpu" else None)
    return None, None


def _makes_host_data(name, args, kwargs):
    """Whether an op's result holds host data: a tensor made from Python or numpy data (aten::lift_fresh, which
    torch.tensor and torch.from_numpy dispatch), a copy from a host tensor to a device."""
    if name in ("aten::lift_fresh", "aten::lift_fresh_copy"):
        return True
    if name == "aten::_to_copy":
        return args[0].device.type == "cpu" and _copy_target(args, kwargs) != "cpu"
    return False


def _launch_entry_points():
    """(class, attribute, kind) for every place a Triton launch passes through, on any Triton from 3.0
    on; kind "launch" is the launch itself, "launcher" returns the callable that launches.

    JITFunction.run: every compiled launch, kernel[grid](...) and kernel.run(...).
    CompiledKernel.__getitem__: a kernel compiled earlier, launched directly (compiled[grid](...)).
    The active driver's launcher class, __call__ (kind "launcher call"): every compiled launch on a
    device, a compiled kernel's run called without its runner too.
    GridExecutor.__call__: every launch under the interpreter. (InterpretedFunction.run, which builds
    one, exists only from Triton 3.6; before that InterpretedFunction.__getitem__ returns one, and a
    run attribute is set per instance.) Attributes a version lacks are left out, and the launcher
    class where no driver is active (a host without a device).
    """
    from triton.runtime import interpreter, jit
    try:
        from triton.compiler.compiler import CompiledKernel
    except ImportError:
        CompiledKernel = None
    candidates = [(jit, "JITFunction", "run", "launch"), (interpreter, "GridExecutor", "__call__", "launch")]
    points = [(getattr(module, cls_name, None), attr, kind) for module, cls_name, attr, kind in candidates]
    points.append((CompiledKernel, "__getitem__", "launcher"))
    if os.environ.get("TRITON_INTERPRET", "0") != "1":  # interpreted, no launcher runs (and none is set up here)
        try:
            from triton.runtime import driver
            points.append((driver.active.launcher_cls, "__call__", "launcher call"))
        except Exception:  # no device, so no driver: no compiled launch either
            pass
    return [(cls, attr, kind) for cls, attr, kind in points if cls is not None and callable(getattr(cls, attr, None))]


def _kernel_name(launcher):
    """The kernel's name, from a JITFunction, the interpreter's GridExecutor or a compiled kernel."""
    name = getattr(launcher, "name", None)  # a compiled kernel's
    if isinstance(name, str):
        return name
    fn = getattr(launcher, "fn", launcher)
    return getattr(fn, "__name__", None) or getattr(getattr(fn, "fn", None), "__name__", repr(fn))


@contextlib.contextmanager
def watch_compute(inputs=(), outputs=()):
    """A ComputeWatch of a call on inputs (x, grad_y) into outputs, with Triton's launch entry points, HOST_METHODS
    and HOST_CONSTRUCTORS wrapped while it runs, and restored after."""
    watch = ComputeWatch(inputs, outputs)

    def counted(launch, takes_options, kernel=None):
        def counted_launch(*args, **kwargs):
            if watch._inside_launch:  # a launch made by a launch is the same launch
                return launch(*args, **kwargs)
            name = kernel or _kernel_name(args[0])
            watch.launches += 1
            if takes_options and kwargs.get("enable_fp_fusion", True) is not False:
                watch.fused_launches.add(name)
            arguments = [] if kwargs.get("warmup") else _launch_arguments(args, kwargs)  # a warmup runs nothing
            before = watch.before_launch(arguments)
            with watch.own():
                result = launch(*args, **kwargs)
            watch.after_launch(name, arguments, before)
            return result
        return counted_launch

    def patched(original, kind):
        if kind == "launch":  # self, then the kernel's arguments and the compile options
            return counted(original, takes_options=True)
        if kind == "launcher call":  # self, the grid, stream, function, metadata and hooks, then the arguments
            return counted(original, takes_options=False, kernel="a compiled kernel (through its launcher)")
        # A compiled kernel's launcher takes no compile options: they were fixed when it was compiled.
        return lambda self, *args, **kwargs: counted(original(self, *args, **kwargs), takes_options=False,
                                                     kernel=_kernel_name(self))

    def watched_method(original, name):
        def method(self, *args, **kwargs):
            if watch._inside_launch or self.device.type != "cpu":
                return original(self, *args, **kwargs)
            watch.read(self, f".{name}()", aliases=name in ALIASING_HOST_METHODS)
            with watch.own():  # __array__ calls numpy(): one read
                return original(self, *args, **kwargs)
        return method

    def watched_constructor(original, name):
        def construct(*args, **kwargs):
            if watch._inside_launch or (args and isinstance(args[0], torch.Tensor)):
                return original(*args, **kwargs)
            with watch.own():
                made = original(*args, **kwargs)
            if isinstance(made, torch.Tensor):
                watch.from_host.add(made, f"host data (torch.{name})")
            return made
        return construct

    wrapped = ([(cls, attr, patched(getattr(cls, attr), kind)) for cls, attr, kind in _launch_entry_points()]
               + [(torch.Tensor, name, watched_method(getattr(torch.Tensor, name), name)) for name in HOST_METHODS]
               + [(torch, name, watched_constructor(getattr(torch, name), name)) for name in HOST_CONSTRUCTORS])
    restore = []
    try:
        for owner, attr, wrapper in wrapped:
            restore.append((owner, attr, owner.__dict__.get(attr)))
            setattr(owner, attr, wrapper)
        with watch:
            yield watch
        watch.finish()
    finally:
        for owner, attr, original in reversed(restore):
            if original is None:  # it was inherited
                delattr(owner, attr)
            else:
                setattr(owner, attr, original)


# ---------------------------------------------------------------- one call, all its checks

def _sync(device):
    if device == "cuda":
        torch.cuda.synchronize()


def _same_bits(a, b):
    return torch.equal(a.contiguous().view(torch.uint8), b.contiguous().view(torch.uint8))


class CallResult(NamedTuple):
    problems: dict  # {check: [problem, ...]} of the checks one call decides; no problem: passed
    comparison: dict  # harness.compare's, or None when the call raised
    fused_launches: frozenset  # names of the kernels launched without enable_fp_fusion=False


def judge_problem(comparison):
    """One of harness.compare's failed comparisons, with its first failing elements, on one line."""
    first = ", ".join(f"{f['index']} {f['actual']:.4g} vs {f['expected']:.4g}" for f in comparison["first_failures"])
    return (f"{comparison['name']}: {comparison['mismatches']} mismatches, max err {comparison['max_abs_err']:.3g}; "
            f"first (solution vs reference): {first}")


def call_and_check(fn, x, grad_y, outputs, ref_outputs, device):
    """Calls fn into outputs and checks what one call decides. A call that raises fails `raised` alone:
    nothing else of it can be checked."""
    x_before, gy_before = x.clone(), grad_y.clone()
    try:
        with watch_compute((x, grad_y), outputs) as watch:
            returned = fn(x, grad_y, *outputs)
        _sync(device)
    except Exception as exc:
        return CallResult({"raised": [harness.raised(exc)]}, None, frozenset())

    problems = {"raised": []}
    in_place = (isinstance(returned, (tuple, list)) and len(returned) == 4
                and all(r is o for r, o in zip(returned, outputs)))
    problems["in_place"] = [] if in_place else [
        "must return (grad_input_q, grad_input_s, y_q_t, y_s_t): the given tensors, in order"]
    same = _same_bits(x, x_before) and _same_bits(grad_y, gy_before)
    problems["inputs"] = [] if same else ["x or grad_y changed during the call"]
    problems["unwritten"] = [f"poison left in {n} elements of {name}"
                             for name, n in harness.unwritten(outputs).items() if n]
    problems["triton_only"] = watch.host + [f"PyTorch compute op during the call: {op}"
                                            for op in sorted(set(watch.ops))]
    if not watch.launches:
        problems["triton_only"].append("no Triton kernel was launched")
    comparison = harness.compare(outputs, ref_outputs)
    problems["judge"] = [judge_problem(c) for c in comparison["checks"] if not c["passed"]]
    problems["exact"] = [f"{name}: {n} bytes differ" for name, n in comparison["differing_bytes"].items() if n]
    return CallResult(problems, comparison, frozenset(watch.fused_launches))


def padded_view(shape, dtype, device, extra_columns, fill):
    """(view, buffer): a buffer extra_columns wider than shape, all of it fill (a value, or "poison":
    harness.poisoned), and the view of its first columns: shape, unit column stride, a longer row stride."""
    rows, cols = shape
    wide = (rows, cols + extra_columns)
    buffer = (harness.poisoned(wide, dtype, device) if fill == "poison" else
              torch.full(wide, fill, dtype=dtype, device=device))
    return buffer[:, :cols], buffer


def check_layouts(fn, x, grad_y, contiguous_outputs, device):
    """The `layouts` check's problems. Every tensor a row-strided view of a wider buffer, for each of
    LAYOUTS; the outputs must hold the same bytes as the solution's own contiguous call on the same
    inputs (contiguous_outputs; a NaN equals any NaN), the padding must be untouched and the inputs
    unchanged. Judged against the contiguous call, not the reference, so that it tests the layout
    alone, on the CPU too; the contiguous call is held to the reference by judge and exact.
    A ValueError refusing a layout fails too: any row stride with unit column stride must work. Returns (the
    layouts problems, the triton_only problems of these calls: the same watch as the contiguous call's)."""
    problems, outside_triton = [], []
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
            with watch_compute((x_view, gy_view), out_views) as watch:  # triton_only's rules, on these calls too
                fn(x_view, gy_view, *out_views)
                _sync(device)
        except Exception as exc:
            problems.append(f"{layout}: raised {type(exc).__name__}: {exc}")
            continue
        outside_triton += [f"{layout} layout: {problem}" for problem in
                           watch.host + [f"PyTorch compute op during the call: {op}" for op in sorted(set(watch.ops))]]
        problems += [f"{layout}: {n} bytes of {name} differ from the contiguous call's"
                     for name, v, e in zip(harness.OUTPUT_NAMES, out_views, contiguous_outputs)
                     if (n := harness.differing_bytes(v, e))]
        problems += [f"{layout}: padding columns written in {name}"
                     for name, v, b, before in zip(harness.OUTPUT_NAMES, out_views, out_buffers, padding_before)
                     if not _same_bits(b[:, v.shape[1]:], before)]
        if not (_same_bits(x_buffer, inputs_before[0]) and _same_bits(gy_buffer, inputs_before[1])):
            problems.append(f"{layout}: the x or grad_y buffer changed")
    return problems, outside_triton


class Run(NamedTuple):
    """One call on one seed and family of a shape: its inputs, its outputs and what was checked of it."""
    x: torch.Tensor
    grad_y: torch.Tensor
    outputs: tuple
    call: CallResult


def run_once(fn, reference, M, H, seed, family, device):
    """The solution called on one seed and family's inputs, into poisoned outputs, and checked."""
    x, gy = harness.make_inputs(M, H, seed, family, device)
    ref = harness.run_reference(x, gy, reference)
    outputs = harness.new_outputs(M, H, device)
    return Run(x, gy, outputs, call_and_check(fn, x, gy, outputs, ref, device))


def check_shape(fn, reference, label, M, H, seeds, families, device, first_run=None):
    """One shape's row: every named check over every seed and family (each check keeps the problems of
    its first failing call, and where that was), the totals; and the kernels launched without
    enable_fp_fusion=False. first_run: the run of seed 0 and the first family, where it was made before."""
    row = {"shape": label, "M": M, "H": H, "runs": 0, "compared": 0,
           "checks": {name: {"where": "", "problems": []} for name in NAMED_CHECKS}, **harness.no_totals()}
    fused_launches = set()

    def record(name, problems, where):
        if problems and not row["checks"][name]["problems"]:
            row["checks"][name] = {"where": where, "problems": problems}

    for seed in range(seeds):
        for family in families:
            where = f"seed {seed} {family}"
            made_before = first_run is not None and seed == 0 and family == families[0]
            x, gy, outputs, call = first_run if made_before else run_once(fn, reference, M, H, seed, family, device)
            row["runs"] += 1
            fused_launches |= call.fused_launches
            for name, problems in call.problems.items():
                record(name, problems, where)
            if call.comparison is None:
                continue
            row["compared"] += 1
            harness.add_totals(row, call.comparison["totals"])

            if seed == 0 and family == families[0]:
                layout_problems, outside_triton = check_layouts(fn, x, gy, outputs, device)
                record("layouts", layout_problems, where)
                record("triton_only", outside_triton, where)
                # Replay: new inputs into the same buffers, outputs not re-poisoned.
                x2, gy2 = harness.make_inputs(M, H, seed + 1000, family, device)
                x.copy_(x2)
                gy.copy_(gy2)
                ref2 = harness.run_reference(x, gy, reference)
                replay = call_and_check(fn, x, gy, outputs, ref2, device)
                fused_launches |= replay.fused_launches
                record("replay", replay.problems["raised"] or replay.problems["judge"],
                       where + ", second call into the same buffers")
    return row, fused_launches


def first_call(fn, shapes, families, device):
    """The solution's first call, on seed 0 and the first family of the first shape: the Run that check_shape
    would make first. Where it raises, the solution cannot run here (a forced route's rung was left, or any
    other exception), and nothing else is checked."""
    _, M, H = shapes[0]
    run = None
    with harness.first_call_warnings(lambda: bool(run.call.problems["raised"])):
        run = run_once(fn, harness.reference_fn(), M, H, 0, families[0], device)
    return run


def run_shapes(fn, shapes, seeds, families, strict, device, first_run):
    """Rows of every shape, each printed as it finishes, and the kernels launched without enable_fp_fusion=False.
    first_run: first_call's, the first shape's first run."""
    reference = harness.reference_fn()
    rows, fused_launches = [], set()
    for label, M, H in shapes:
        row, fused = check_shape(fn, reference, label, M, H, seeds, families, device,
                                 first_run=None if rows else first_run)
        row["passed"] = not failed_checks(problems_by_check(row), strict, device)
        rows.append(row)
        fused_launches |= fused
        print(f"  {label}: {row_summary(row, strict, device)}", flush=True)
    return rows, fused_launches


def row_summary(row, strict, device):
    """A shape's verdict as printed when it finishes: PASS or FAIL with its runs and differing bytes and the
    checks it failed; a shape whose calls raised shows the first exception, as no bytes of it were compared."""
    failed = failed_checks(problems_by_check(row), strict, device)
    if not failed:
        return f"PASS ({row['runs']} runs, {row['differing_bytes']} bytes differ)"
    if "raised" in failed:
        others = [name for name in failed if name != "raised"]
        failed_too = f"; failed too: {', '.join(others)}" if others else ""
        return f"FAIL ({harness.one_line(row['checks']['raised']['problems'][0], PROBLEM_WIDTH)}{failed_too})"
    return f"FAIL ({', '.join(failed)}; {row['runs']} runs, {row['differing_bytes']} bytes differ)"


# ---------------------------------------------------------------- report

def print_problems(problems, more_in_json):
    """A check's first PROBLEMS_SHOWN problems, one short line each, and how many more there are."""
    for problem in problems[:PROBLEMS_SHOWN]:
        print("    " + harness.one_line(problem, PROBLEM_WIDTH))
    if len(problems) > PROBLEMS_SHOWN:
        where_all_are = " (all in the --json report)" if more_in_json else ""
        print(f"    ... and {len(problems) - PROBLEMS_SHOWN} more{where_all_are}")


def print_static(static, strict, device, heading="static"):
    failing = failed_checks(static, strict, device)
    for name, problems in static.items():
        print(f"{heading} {name}: {'ok' if not problems else 'FAIL' if name in failing else 'warning'}")
        print_problems(problems, more_in_json=False)


# The table's columns of figures: (the row's key, width, format).
TABLE_FIGURES = (("scale_mismatches", 10, ""), ("dequant_mismatches", 9, ""), ("max_scale_err", 13, ".3g"),
                 ("max_dequant_err", 11, ".3g"), ("differing_bytes", 12, ""), ("scale_tol_used", 14, ".3g"),
                 ("scale_ulps", 10, ".3g"), ("int8_steps", 10, ""), ("nonfinite_groups", 9, ""), ("nan_pairs", 9, ""))


def print_table(rows, strict, device):
    head = (f"{'shape':>14} {'M':>6} {'H':>5} {'runs':>4}  {'verdict':7} {'scale mism':>10} {'deq mism':>9} "
            f"{'max scale err':>13} {'max deq err':>11} {'bytes differ':>12} {'scale tol used':>14} "
            f"{'scale ulps':>10} {'int8 steps':>10} {'nonfinite':>9} {'NaN pairs':>9}  failed checks")
    print(head)
    print("-" * len(head))
    for r in rows:
        failed = failed_checks(problems_by_check(r), strict, device)
        # A row whose every call raised compared nothing: its figures are "-", not zeros.
        figures = " ".join(f"{r[key]:>{width}{form}}" if r["compared"] else f"{'-':>{width}}"
                           for key, width, form in TABLE_FIGURES)
        print(f"{r['shape']:>14} {r['M']:>6} {r['H']:>5} {r['runs']:>4}  {'PASS' if not failed else 'FAIL':7} "
              f"{figures}  {', '.join(failed) or '-'}")


def print_failures(rows, strict, device, more_in_json):
    """Each failing check's problems on the first shape it fails, and the other shapes it fails on."""
    failing_shapes = {}
    for r in rows:
        for name in failed_checks(problems_by_check(r), strict, device):
            failing_shapes.setdefault(name, []).append(r)
    for name, failing in failing_shapes.items():
        first = failing[0]
        print(f"{first['shape']} {name}: {first['checks'][name]['where']}")
        print_problems(first["checks"][name]["problems"], more_in_json)
        if len(failing) > 1:
            print(f"    (fails on {len(failing) - 1} more shapes too: {', '.join(r['shape'] for r in failing[1:])})")


def report(args, env, device, route, static, rows, fused_launches):
    """Prints the verdict and its details, writes the --json report (route: {"taken", "ladder"}); returns
    the exit code."""
    if fused_launches:
        static["numerics"] += [f"{name} was launched without enable_fp_fusion=False (FMA contraction changes "
                               "rounding)" for name in sorted(fused_launches)]
        print_static({"numerics": static["numerics"]}, args.strict, device, heading="static (launches seen)")
    print()
    print_table(rows, args.strict, device)
    print_failures(rows, args.strict, device, more_in_json=bool(args.json))

    if any("judge" in failed_checks(problems_by_check(r), args.strict, device) for r in rows):
        print(f"\nnote: judge: {JUDGE_FAIL_MEANS} (README.md, Scoring).")
    nan_pairs = sum(r["nan_pairs"] for r in rows)
    if nan_pairs:
        print(f"note: {nan_pairs} compared elements are NaN in both the solution and the reference "
              f"({sum(r['nonfinite_groups'] for r in rows)} reference groups held a NaN or an inf). The judge "
              "as written (torch.testing.assert_close, equal_nan=False) fails every one of them, for any "
              "solution and for the reference itself; check.py counts a NaN equal to a NaN.")
    if args.strict and device != "cuda":
        print("note: --strict on CPU checks the static numerics only; differing bytes against the CPU "
              "reference are reported, not failed")
    outcome = verdict(args, static, rows, device)
    print(f"\n{outcome['line']}")
    if args.json:
        record = {"tool": "check", "environment": env, "solution": args.solution, "strict": args.strict,
                  "seeds": args.seeds, "families": args.families,
                  "route": {"requested": os.environ.get(harness.ROUTE_ENV, "automatic"), **route},
                  "static": static, "rows": rows, "passed": outcome["passed"], "verdict": outcome}
        Path(args.json).write_text(json.dumps(record, indent=2))
    return 0 if outcome["passed"] else 1


def verdict(args, static, rows, device):
    """The run's verdict, the one home of the last line and of the --json report's "verdict": passed, line,
    runs, shapes (how many), static_failed ({check: its problems}) and failed_on_shapes ({check: the shapes
    it failed on}), each holding only the checks that fail the run. It passes when every check that counts
    passed and something ran; a failed line names each failed check, and says how the shapes fared."""
    static_failed = {name: static[name] for name in failed_checks(static, args.strict, device)}
    failed_per_row = [(r["shape"], failed_checks(problems_by_check(r), args.strict, device)) for r in rows]
    failed_on_shapes = {}
    for name in NAMED_CHECKS:
        shapes = [shape for shape, failed in failed_per_row if name in failed]
        if shapes:
            failed_on_shapes[name] = shapes
    runs, n = sum(r["runs"] for r in rows), len(rows)
    passed = runs > 0 and not static_failed and not failed_on_shapes
    if passed:
        line = (f"PASSED: {n}/{n} shapes, {runs} runs, seeds={args.seeds}, families={','.join(args.families)}, "
                f"strict={args.strict}")
    else:
        parts = [f"static {name} ({static_summary(problems)})" for name, problems in static_failed.items()]
        if runs == 0:
            parts.append("nothing was checked (0 runs)")
        elif failed_on_shapes:
            parts.append(", ".join(f"{name} on {len(shapes)}/{n}" + (" shapes" if i == 0 else "")
                                   for i, (name, shapes) in enumerate(failed_on_shapes.items())))
        else:
            parts.append(f"every shape passed at run time ({n}/{n})")
        line = "FAILED: " + "; ".join(parts)
    return {"passed": passed, "line": line, "runs": runs, "shapes": n, "static_failed": static_failed,
            "failed_on_shapes": failed_on_shapes}


def static_summary(problems):
    """A failed static check's first problem, short, and how many more there are."""
    more = f"; and {len(problems) - 1} more" if len(problems) > 1 else ""
    return harness.one_line(problems[0], PROBLEM_WIDTH) + more


# ---------------------------------------------------------------- command line

def parse_args(argv=None):
    """The arguments, each checked before anything runs; a usage error exits 2 with one line."""
    parser = harness.ArgumentParser(prog="check.py", description=__doc__,
                                    formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--solution", type=harness.existing_file, default=str(harness.ROOT / "solution.py"),
                        metavar="PATH", help="the solution file (default: solution.py beside check.py)")
    parser.add_argument("--shapes", nargs="+", type=harness.shape_group, metavar="SHAPES",
                        help="shape groups from shapes.json, MxH or ExTxH, M and H multiples of 128 (default: "
                        "benchmark and hidden_like on a GPU, cpu_small without one)")
    parser.add_argument("--seeds", type=harness.at_least_one("seeds"), default=3, metavar="N",
                        help="input seeds per shape and family (default: 3)")
    parser.add_argument("--families", nargs="+", default=list(harness.FAMILIES), choices=harness.FAMILIES,
                        metavar="F", help=f"input families (default: all of {', '.join(harness.FAMILIES)})")
    parser.add_argument("--route", metavar="ROUTE",
                        help=f"force one of the solution's ROUTES (sets {harness.ROUTE_ENV}; default: the solution "
                        "chooses)")
    parser.add_argument("--strict", action="store_true", help="also require 0 differing bytes and clean numerics")
    parser.add_argument("--json", type=harness.json_destination, metavar="PATH",
                        help="write the full report here (into a folder that exists)")
    parser.add_argument("--targets", nargs="?", const=judge_targets.SELECTION, metavar="LIST",
                        help="compile matrix instead of a run: comma-separated targets, each "
                        f"{compile_matrix.TARGET_FORM}; --targets alone means --targets {judge_targets.SELECTION}")
    args = parser.parse_args(argv)
    if args.targets is not None:
        try:
            args.targets = parse_targets(args.targets)
        except ValueError as exc:
            parser.error(f"argument --targets: {exc}")
    return args


class JudgeSelection(NamedTuple):
    """--targets judge[:NAME,...]: the judge's chips (judge_targets.py), all (None) or the named ones."""
    chips: Optional[tuple]


def parse_targets(text):
    """A JudgeSelection for judge[:NAME,...], else compile_matrix's list of targets. ValueError otherwise."""
    if judge_targets.is_selection(text):
        return JudgeSelection(judge_targets.parse_selection(text))
    return compile_matrix.parse_targets(text)


def compile_report(solution, targets, json_path):
    """The --targets run: the judge's chips or the compile matrix; its exit code."""
    if isinstance(targets, JudgeSelection):
        return judge_targets.report(solution, json_path, chips=targets.chips)
    return compile_matrix.report(solution, targets, json_path)


def solution_failed(error):
    """A solution that cannot be run fails: one line on stderr, exit code 1."""
    print(f"check.py: error: {error}", file=sys.stderr)
    return 1


def print_header(env, device):
    if device == "cuda":
        print(f"check.py on {env['gpu']} (torch {env['torch']}, triton {env['triton']})")
    else:
        print("check.py: no GPU found -- running the Triton interpreter (TRITON_INTERPRET=1) on small CPU shapes; "
              "byte-exactness and speed need a GPU")


def main(argv=None):
    args = parse_args(argv)
    try:
        tree = harness.parse_solution(args.solution)
    except harness.SolutionError as exc:
        return solution_failed(exc)
    if args.targets is not None:
        return compile_report(args.solution, args.targets, args.json)

    device = harness.use_interpreter_if_no_gpu()  # before anything imports triton
    problem = harness.interpreter_problem() if device == "cpu" else None
    if problem:
        print(f"check.py: cannot run: {problem}", file=sys.stderr)
        return 2
    # exp(-gate) overflowing to inf is IEEE behaviour the math relies on (sigmoid -> 0), a native rung's
    # probe multiplies and divides values up to inf on purpose, and the specials family's NaN and inf make
    # invalid operations on purpose: none is an error of the solution.
    warnings.filterwarnings("ignore", message="overflow encountered in (exp|multiply|divide)")
    warnings.filterwarnings("ignore", message="invalid value encountered")
    env = harness.environment(device)
    print_header(env, device)

    static = static_checks(tree)
    print_static(static, args.strict, device)
    try:
        module = harness.load_solution(args.solution, name="solution_for_check")
    except harness.SolutionError as exc:
        return solution_failed(exc)
    if args.route:
        try:
            harness.check_route(module, args.route)
        except ValueError as exc:
            print(f"check.py: error: argument --route: {exc}", file=sys.stderr)
            return 2
        os.environ[harness.ROUTE_ENV] = args.route  # before the solution's first call: first_call's
    fn = module.silu_dot_fwd_bwd_quant_fuse
    shapes = harness.expand_shape_args(args.shapes, DEFAULT_SHAPE_GROUPS[device])
    first_run = first_call(fn, shapes, args.families, device)  # before route_for: the call says why it cannot run
    if first_run.call.comparison is None:
        return solution_failed(harness.cannot_run("the solution", os.environ.get(harness.ROUTE_ENV),
                                                  first_run.call.problems["raised"][0]))
    route = harness.route_name(module, device)
    print(f"route: {route}")
    print_ladder(harness.route_ladder(module, device))
    rows, fused_launches = run_shapes(fn, shapes, args.seeds, args.families, args.strict, device, first_run)
    route_after = harness.route_name(module, device)
    ladder = harness.route_ladder(module, device)
    if route_after != route:
        print(f"route after the calls: {route_after} (the {route} route fell back; its warning is above)")
        print_ladder(ladder)
    return report(args, env, device, {"taken": route_after, "ladder": ladder}, static, rows, fused_launches)


def print_ladder(ladder):
    """The rungs above the one taken, each with why it was left, and the rungs below in one line."""
    below = [route for route, how in ladder if how == "not tried"]
    for route, how in ladder:
        if how != "not tried":
            print(f"  {route}: {how}")
    if below:
        print(f"  not tried, below it: {', '.join(below)}")


if __name__ == "__main__":
    sys.exit(main())
