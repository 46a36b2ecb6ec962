"""The judge's chips on a CPU: each compiled with the Triton its compiler is built on, as far as a CPU can
go, and every launch of the solution's plan checked against the chip's known limits.

    python check.py --targets judge[:CHIP,...] [--solution PATH] [--json PATH]
    python judge_targets.py [--chips NAME ...] [--solution PATH] [--json PATH] [--jobs N]
    python judge_targets.py --install-only [--chips NAME ...]     # the venvs only (CI: beside the tests)

What each chip is (Triton base version, routes, warp size, thread and grid limits, compile options) is the
solution's own table, solution.BACKENDS. What this module knows is how far each one can be compiled here:
JUDGE_CHIPS, keyed by the names of BACKENDS, the one home of the judge rows (judge_rows):

<the chips, from JUDGE_CHIPS>

Upstream Triton of the chip's base version compiles the chip's own routes (launch_plan for that backend)
for the stand-in target; a stand-in has the chip's warp size, so programs have the chip's thread count. It
shows what that Triton's frontend and common passes accept and what the route's code lowers to on a real
target of that Triton, not what the vendor's own lowering does. launch_plan is told the target's arch and
SM count (compile_matrix.multiprocessors) where the target is the chip's own; on a stand-in, only an arch
the entry names.

Each row says how far it got, never more:
  compiled to binary                            cubin (NVIDIA; on a stand-in, the stand-in's binary)
  compiled to the last stage before the binary  AMDGCN assembly where ROCm's ld.lld is missing (hip before
                                                Triton 3.5); on Ascend the HIVM IR that bishengir-compile
                                                hands to hivmc, after its unified-buffer planning
  limits checked only                           the plan was checked, the compile failed (the row fails)
  not checked                                   neither; the row says why (a Triton that did not install,
                                                a shape launch_plan refused, a row the table contradicts)
A row fails when its compile fails (compile_matrix's verdict: crash, error, lost stores; on Ascend also
bishengir-compile's errors, "ub overflow" among them, and a unified-buffer plan above
compile_matrix.UB_LIMIT_BYTES), when a launch breaks a limit, when the compiled TTIR has inline asm on a
chip other than NVIDIA or breaks one of TTIR_RULES that applies to the row, or when the source rule is
broken; the row names the rule and the first offending line:

<the rules, from TTIR_RULES>

Rows compiled to cubin also give each kernel's registers, spills (ptxas -v) and shared memory (Triton's
metadata), and on a chip's own target whose SM limits compile_matrix.SM_LIMITS knows (sm_80, the A100),
how many of its programs an SM holds. hip rows give the AMDGCN's own VGPRs, SGPRs, spills, scratch bytes and, where
its LLVM says, waves a SIMD (compile_matrix.parse_amdgcn_usage), linked or not, and Triton's shared memory bytes (from
the compile's stages where it was not linked). Ascend rows give each kernel's unified buffer (UB) as bishengir's own
plan has it (compile_matrix.ub_plan: "UB 88.7 KB of 192 KB planned", and whether the plan is of bishengir's
retry after its first plan overflowed); --json has it as the row's result's "ub". Cubin and hip rows also give, in
their instr/elem column, the instructions a thread executes per element it handles, estimated from the SASS or the
AMDGCN with each loop counted once per trip (compile_matrix.instructions_per_element; "-" where the kernel's loops
are not known, and on Ascend); --json has it as the row's result's "per_element".

Each Triton lives in a venv of its own (python -m venv --system-site-packages --without-pip: the system
site-packages' torch is reused, and its pip installs; pip install --no-deps: nothing else is pulled in),
made once in $SILU_DOT_JUDGE_VENVS (default ~/.cache/silu-dot-judge-venvs) and reused; where the running
Python already has that exact Triton, it is used instead. Each compile runs in its own process with a fresh
Triton cache (compile_matrix's worker, forked from a server process of that python that has imported torch
and Triton once), --jobs at a time.
"""
import argparse
import ast
import contextlib
import fcntl
import importlib.metadata
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable, NamedTuple, Optional

import compile_matrix
import harness  # imports no triton

ROOT = Path(__file__).resolve().parent
VENVS = Path(os.environ.get("SILU_DOT_JUDGE_VENVS", Path.home() / ".cache" / "silu-dot-judge-venvs"))
PIP_TIMEOUT_S = 900
PLAN_TIMEOUT_S = 300
# What --targets names the judge's chips by: "judge", or "judge:NAME,..." for some.
SELECTION = "judge"


class JudgeChip(NamedTuple):
    """How one judge chip (an entry of the solution's BACKENDS, by its name) is compiled here: for `target`
    (compile_matrix's backend:arch), which stands in for `stands_in_for` where given, else is the chip's own.
    plan_arch: the real device's arch, told to launch_plan on a stand-in where known. tritons: the Triton
    minors it is compiled with, each with why, where not only the backend's base version. more_targets:
    the chip's other own targets (MoreTarget), each with why (the judge's part may be any of them)."""
    label: str
    target: str
    stands_in_for: Optional[str] = None
    plan_arch: object = None
    tritons: tuple = ()
    more_targets: tuple = ()


class MoreTarget(NamedTuple):
    """A chip's other own target and why; tritons: the Triton minors it is compiled with, each with why, where not
    the chip's own (its `tritons`, else its backend's base version)."""
    target: str
    why: str
    tritons: Optional[tuple] = None


_TRITON_36 = ("3.6", "FlagGems' CI runs Triton 3.6.0")
JUDGE_CHIPS = {
    # sm_90 (the H100 and H200 of this kit's GPU sessions, which run every exact rung with Triton 3.0, 3.1, 3.5 and
    # 3.6) with CI's Triton; the judge's part with 3.5: an A100 at the one station that lists it, with PyTorch 2.9.0,
    # which pins triton 3.5.0 (PLATFORMS.md). The A100 with 3.6 pairs a target and a Triton each compiled in another
    # row; it took 133 of the judge run's 700 compile-seconds, and CI's 20 minutes were passed.
    "nvidia": JudgeChip("NVIDIA", "cuda:90", tritons=(_TRITON_36,),
                        more_targets=(MoreTarget("cuda:80", "the judge's NVIDIA GPU is probably an A100 (sm_80)",
                                                 (("3.5", "the competition asks for Triton 3.5 compatibility"),)),)),
    "hygon": JudgeChip("Hygon DCU", "hip:gfx90a", "gfx936 (BW1000), which upstream Triton lacks", plan_arch="gfx936"),
    "iluvatar": JudgeChip("Iluvatar (TianShu)", "hip:gfx90a", "Iluvatar CoreX's cuda fork (64-wide warps)"),
    "metax": JudgeChip("MetaX", "hip:gfx90a", "maca (64-wide warps)"),
    "thead": JudgeChip("T-Head PPU", "cuda:80", "the T-Head PPU's cuda fork (32-wide warps)"),
    "mthreads": JudgeChip("Moore Threads", "cuda:80", "musa (32-wide warps)"),
    "ascend": JudgeChip("Ascend", "npu:Ascend910B3"),
}


class JudgeRow(NamedTuple):
    """One chip compiled one way: `target` with the Triton of the backend's base version, or `triton` where
    given (`why` says why). launch_plan is told `plan_arch` (the real device's, where known) and `sm_count`: the
    target's, a stand-in's too, so that every launch a device picks by its SM count and the shape is compiled."""
    backend: str
    label: str
    target: str
    stands_in_for: Optional[str] = None
    triton: Optional[str] = None
    plan_arch: object = None
    sm_count: Optional[int] = None
    why: str = ""


def chip_targets(chip):
    """A chip's targets, each with the Tritons it is compiled with ((minor, why) pairs; none: the backend's base
    version): its target, then its more_targets (its own, as the first is where it is no stand-in)."""
    return ((chip.target, chip.tritons),
            *((more.target, chip.tritons if more.tritons is None else more.tritons) for more in chip.more_targets))


def judge_rows():
    """The rows of JUDGE_CHIPS, in its order: one per chip, target and Triton it is compiled with."""
    rows = []
    for name, chip in JUDGE_CHIPS.items():
        for target, tritons in chip_targets(chip):
            target_backend, arch, _ = compile_matrix.parse_target(target)
            own_target = chip.stands_in_for is None or target != chip.target
            stands_in_for = None if own_target else chip.stands_in_for
            plan_arch = arch if own_target else chip.plan_arch
            sm_count = compile_matrix.multiprocessors(target_backend, arch)
            for triton, why in tritons or ((None, ""),):
                rows.append(JudgeRow(name, chip.label, target, stands_in_for, triton, plan_arch, sm_count, why))
    return tuple(rows)


def describe_chips():
    """JUDGE_CHIPS as the module docstring (and --help) lists them."""
    lines = [f"  {'chip':<20} {'Triton':<30} compiled for"]
    for chip in JUDGE_CHIPS.values():
        targets = chip_targets(chip)
        every = list(dict.fromkeys(version for _, tritons in targets for version, _ in tritons))
        tritons = " and ".join(every) or "its base version (BACKENDS)"
        target = " and ".join(t + ("" if [v for v, _ in versions] == every else
                                   f" ({' and '.join(v for v, _ in versions)} only)") for t, versions in targets)
        target += f", stand-in for {chip.stands_in_for}" if chip.stands_in_for else ""
        lines.append(f"  {chip.label:<20} {tritons:<30} {target}")
    return "\n".join(lines)


__doc__ = __doc__.replace("<the chips, from JUDGE_CHIPS>", describe_chips())  # JUDGE_CHIPS is their one home
LEVELS = ("compiled to binary", "compiled to the last stage before the binary", "limits checked only", "not checked")


# ---------------------------------------------------------------- limits (pure: the tests call these)

# Compile options every Triton backend takes; any other must be among the backend's own `options`.
COMMON_OPTIONS = ("num_warps", "num_stages", "enable_fp_fusion")


def launch_problems(backend, launch):
    """What in one launch (solution.KernelLaunch) breaks a known limit of backend (solution.Backend): its
    threads a program, compile options and programs along each grid dimension."""
    problems = []
    num_warps = launch.options.get("num_warps", 4)
    threads = num_warps * backend.warp_size
    if backend.max_threads and threads > backend.max_threads:
        problems.append(f"{threads} threads a program ({num_warps} warps of {backend.warp_size}), "
                        f"more than {backend.max_threads}")
    foreign = sorted(set(launch.options) - set(COMMON_OPTIONS) - set(backend.options))
    if foreign:
        problems.append(f"compile options it does not take: {', '.join(foreign)}")
    grid = tuple(launch.grid)
    if any(n > limit for n, limit in zip(grid, backend.max_grid)):
        problems.append(f"grid {grid}, more programs than {tuple(backend.max_grid)} along a dimension")
    if math.prod(grid) < 1:
        problems.append(f"grid {grid} has no programs")
    return problems


def compiled_problems(chip, result, exact=True):
    """What a compile's TTIR uses that the judge chip (its backend's name) is not known to take, and the TTIR
    rules it breaks (TTIR_RULES, those that apply to the chip and to an exact or inexact route): result is
    compile_matrix.compile_one's, its "ttir" the text."""
    problems = []
    if chip != "nvidia" and result.get("inline_asm"):
        problems.append(f"{result['inline_asm']} inline asm in TTIR, on the {chip} chip (the only asm known to "
                        "compile on a judge chip is NVIDIA's PTX)")
    ttir = result.get("ttir")
    for rule in TTIR_RULES if ttir else ():
        line = rule.applies(chip, exact) and rule.check(ttir)
        if line:
            problems.append(f"TTIR rule {rule.name} ({rule.text}): {line}")
    return problems


# ---------------------------------------------------------------- TTIR rules (pure: the tests call these)

_LOC = re.compile(r"\s*\bloc\(")


def strip_locs(line):
    """A TTIR line without its loc(...) annotations (balanced parentheses; quoted names may hold any)."""
    out, i = [], 0
    while (match := _LOC.search(line, i)) is not None:
        out.append(line[i:match.start()])
        j, depth, quoted = match.end(), 1, False
        while j < len(line) and depth:
            if line[j] == '"' and line[j - 1] != "\\":
                quoted = not quoted
            elif not quoted:
                depth += {"(": 1, ")": -1}.get(line[j], 0)
            j += 1
        i = j
    out.append(line[i:])
    return re.sub(r"\s+", " ", "".join(out)).strip()


def ttir_lines(ttir):
    """The TTIR's lines, stripped, without locations, blank lines or #loc definitions."""
    lines = (strip_locs(line) for line in ttir.splitlines() if not line.lstrip().startswith("#loc"))
    return [line for line in lines if line]


class Reduction(NamedTuple):
    """One tt.reduce of a TTIR: its line (the op with its types), axis, operand types and the ops of its
    combine region (without the block's arguments and tt.reduce.return)."""
    line: str
    axis: int
    operand_types: tuple
    ops: tuple


_REDUCE = re.compile(r'"tt\.reduce"\((?P<operands>[^)]*)\)\s*<?\{\s*axis\s*=\s*(?P<axis>\d+)\s*:\s*i32\s*\}>?')


def reductions(ttir):
    """Every tt.reduce of a TTIR, as Triton 3.0 to 3.6 print it: the op's line opens its combine region
    ("({"), the region's block follows a line at a time, and "}) : (operand types) -> result types" closes it."""
    lines, found, i = ttir_lines(ttir), [], 0
    while i < len(lines):
        match = _REDUCE.search(lines[i])
        if not match:
            i += 1
            continue
        head, body = lines[i], []
        i += 1
        while i < len(lines) and not lines[i].startswith("})"):
            body.append(lines[i])
            i += 1
        tail = lines[i][2:].strip() if i < len(lines) else ""
        types = re.match(r":\s*\((.*?)\)\s*->", tail)
        operand_types = tuple(t.strip() for t in types.group(1).split(",")) if types else ()
        ops = tuple(line for line in body if not line.startswith("^") and not line.startswith("tt.reduce.return"))
        found.append(Reduction(f"{head.removesuffix('({').strip()} {tail}".strip(), int(match.group("axis")),
                               operand_types, ops))
        i += 1
    return found


def tensor_rank(type_text):
    """The rank of a TTIR tensor type (tensor<128x32xf32>: 2), 0 for a scalar."""
    match = re.match(r"tensor<((?:\d+x)+)", type_text.strip())
    return match.group(1).count("x") if match else 0


# The combine ops of tl.sum, tl.max and tl.min (ints signed or unsigned); NaN-propagating maximumf/minimumf
# (tl.maximum with propagate_nan) are not among them.
PLAIN_COMBINE = re.compile(r"^%[\w#]+ = arith\.(addf|addi|maxnumf|minnumf|maxsi|minsi|maxui|minui) %[\w#]+, %[\w#]+ : \w+$")


def custom_combine_reduction(ttir):
    """The first tt.reduce whose combine region is anything but one add/max/min of tl.sum/tl.max/tl.min
    (a tl.reduce with a function of its own, a NaN-propagating max, an argmax's pair), or None."""
    for reduction in reductions(ttir):
        if len(reduction.operand_types) != 1 or len(reduction.ops) != 1 or not PLAIN_COMBINE.match(reduction.ops[0]):
            shown = "; ".join(reduction.ops[:2]) + ("; ..." if len(reduction.ops) > 2 else "")
            return f"{reduction.line} combining with {shown or 'nothing'}"
    return None


def reduction_off_the_last_axis(ttir):
    """The first tt.reduce along an axis other than its operand's last (axis 0 of a 1-D tensor is its
    last; axis 0 of a 2-D one is not), or None."""
    for reduction in reductions(ttir):
        rank = tensor_rank(reduction.operand_types[0]) if reduction.operand_types else 0
        if rank and reduction.axis != rank - 1:
            return f"{reduction.line} (axis {reduction.axis} of a rank-{rank} tensor)"
    return None


def _first_line(ttir, matches):
    return next((line for line in ttir_lines(ttir) if matches(line)), None)


UNSIGNED_OPS = re.compile(r"\barith\.(shrui|divui|remui|ceildivui|extui|uitofp|fptoui|maxui|minui)\b"
                          r"|\barith\.cmpi (ult|ule|ugt|uge)\b")


def unsigned_op(ttir):
    """The first unsigned integer operation (shifts, division, remainder, extension, conversions, max, min,
    comparisons), or None."""
    return _first_line(ttir, UNSIGNED_OPS.search)


_MEMORY_OP = re.compile(r"\btt\.(load|store) (%[\w#]+(?:, %[\w#]+)*)")


def masked_load_or_store(ttir):
    """The first tt.load with a mask operand (tt.load %ptr, %mask[, %other]) or tt.store with one
    (tt.store %ptr, %value, %mask), or a block pointer's with a boundary check, or None."""
    def masked(line):
        match = _MEMORY_OP.search(line)
        if not match:
            return False
        operands = match.group(2).count("%")
        return operands >= (2 if match.group(1) == "load" else 3) or bool(re.search(r"boundaryCheck = array<i32: \d", line))
    return _first_line(ttir, masked)


_CMPF = re.compile(r"\barith\.cmpf \w+, (%[\w#]+), (%[\w#]+)")


def float_compare_with_itself(ttir):
    """The first arith.cmpf of an SSA value with itself (x != x, the NaN test), or None."""
    return _first_line(ttir, lambda line: (m := _CMPF.search(line)) is not None and m.group(1) == m.group(2))


# ---- pointer arguments: where each pointer a kernel loads or stores comes from

_VALUE = r"%[\w$.]+(?:#\d+)?"
_VALUE_RE = re.compile(_VALUE)
# Ops that read or write memory through their first operand (a pointer, a block pointer or a descriptor);
# an atomic does both.
_LOADS = re.compile(r"\btt\.(?:load|(?:experimental_)?descriptor_(?:load|gather))\b")
_STORES = re.compile(r"\btt\.(?:store|(?:experimental_)?descriptor_(?:store|scatter))\b")
_BOTH = re.compile(r"\btt\.(?:atomic_rmw|atomic_cas|(?:experimental_)?descriptor_reduce)\b")
_POINTER_TYPE = re.compile(r"!tt\.(?:ptr|tensordesc)<")
_ANY = "*"  # the origin of a pointer this analysis cannot follow: any pointer argument


def _split_top(text):
    """text split at the commas outside (), <>, [] and {}."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c in "(<[{":
            depth += 1
        elif c in ")>]}" and not (c == ">" and text[i - 1] == "-"):
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [part.strip() for part in parts if part.strip()]


def _parenthesized(text, start):
    """The text inside the parentheses that open at text[start], and the index after them."""
    depth = 0
    for i in range(start, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return text[start + 1:i], i + 1
    return text[start + 1:], len(text)


def _function_arguments(header):
    """[(name, is a pointer)] of a tt.func line's arguments, in order."""
    opening = header.find("(", header.find("@"))
    if opening < 0:
        return []
    inside, _ = _parenthesized(header, opening)
    arguments = []
    for argument in _split_top(inside):
        name, _, kind = argument.partition(":")
        arguments.append((name.strip(), bool(_POINTER_TYPE.match(kind.strip()))))
    return arguments


def _results(definition):
    """The values an op's result list defines: "%r" -> [%r]; "%r:2" -> [%r#0, %r#1]; "%a, %b" -> [%a, %b]."""
    names = []
    for part in definition.split(","):
        name, _, count = part.strip().partition(":")
        names += [f"{name}#{i}" for i in range(int(count))] if count.isdigit() and int(count) > 1 else [name]
    return names


def _pairs(text):
    """"%a = %x, %b = %y" -> [(%a, %x), (%b, %y)] (iter_args and scf.while's arguments)."""
    pairs = []
    for part in _split_top(text):
        name, _, init = part.partition("=")
        pairs.append((name.strip(), init.strip().split(" ")[0]))
    return pairs


def _memory_accesses(lines):
    """The flow of values in one function's TTIR lines and its memory accesses: (edges: [(from, to)], a value
    flows into another; accesses: [(line, value of the pointer, loads, stores)]). Every op's operands flow
    into its results, but a load's (what memory held: where a pointer is loaded, its origin is any
    argument); scf.for, scf.while and scf.if pass their operands, yields and conditions to the block
    arguments and results they belong to, position by position; cf.br and cf.cond_br their operands to
    the arguments of the blocks they branch to (by label, over the whole function)."""
    edges, accesses, stack, blocks, branches = [], [], [], {}, []
    for line in lines:
        text = line
        if text.startswith("}"):
            owner = stack.pop() if stack else None
            text = text[1:].lstrip(")").strip()
            if text.endswith("{") and owner is not None:  # "} else {", "} do {": the op's next region
                owner["region"] += 1
                stack.append(owner)
            continue
        definition, op = (text.split(" = ", 1) if re.match(rf"{_VALUE}(?::\d+)?(?:, {_VALUE})* = ", text)
                          else ("", text))
        results = _results(definition) if definition else []
        name = op.split("(")[0].split(" ")[0].strip('"')
        entry = {"op": name, "results": results, "region": 0, "args": []}
        if name == "scf.for":
            iter_args = re.search(r"\biter_args\(", op)
            pairs = _pairs(_parenthesized(op, iter_args.end() - 1)[0]) if iter_args else []
            entry["args"] = [arg for arg, _ in pairs]
            edges += [(init, arg) for arg, init in pairs] + list(zip(entry["args"], results))
        elif name == "scf.while":
            pairs = _pairs(_parenthesized(op, op.index("("))[0])
            entry["args"] = [arg for arg, _ in pairs]
            edges += [(init, arg) for arg, init in pairs]
        elif name == "scf.yield" and stack:
            owner, values = stack[-1], _VALUE_RE.findall(op.split(":")[0])
            if owner["op"] in ("scf.for", "scf.while"):
                edges += list(zip(values, owner["args"]))
            if owner["op"] in ("scf.for", "scf.if"):
                edges += list(zip(values, owner["results"]))
            if owner["op"] not in ("scf.for", "scf.while", "scf.if"):  # a region of its own: all into all
                edges += [(v, r) for v in values for r in owner["results"]]
        elif name == "scf.condition" and stack:
            owner, values = stack[-1], _VALUE_RE.findall(op.split(":")[0])[1:]
            edges += list(zip(values, owner["results"]))
            edges += [(v, ("after", id(owner), i)) for i, v in enumerate(values)]  # the do region's arguments
        elif name.startswith("^"):
            arguments = [a.split(":")[0].strip() for a in _split_top(_parenthesized(op, op.index("("))[0])] \
                if "(" in op else []
            blocks.setdefault(name.rstrip(":"), []).append(arguments)
            if stack and stack[-1]["op"] == "scf.while" and stack[-1]["region"] == 1:
                edges += [(("after", id(stack[-1]), i), a) for i, a in enumerate(arguments)]
        elif name in ("cf.br", "cf.cond_br"):
            for label, operands in re.findall(r"(\^\w+)\(([^:)]*)", op):
                branches += [(label, i, v) for i, v in enumerate(_VALUE_RE.findall(operands))]
        elif name.endswith((".return", ".yield")):  # tt.reduce.return and the like: into the op's results
            values = _VALUE_RE.findall(op.split(":")[0])
            edges += [(v, r) for v in values for r in (stack[-1]["results"] if stack else [])]
        else:
            operands = _VALUE_RE.findall(op)
            load = _LOADS.search(name) and not _BOTH.search(name)
            if load:  # tt.load's one type is its pointer's: it loads a pointer where that points to one
                types = op.rsplit("->", 1)[-1] if "->" in op else op.rsplit(" : ", 1)[-1]
                pointer_result = len(_POINTER_TYPE.findall(types)) >= (1 if "->" in op else 2)
                edges += [(_ANY, r) for r in results] if pointer_result else []
            else:
                edges += [(v, r) for v in operands for r in results]
            stores, both = _STORES.search(name), _BOTH.search(name)
            if (load or stores or both) and operands:
                accesses.append((line, operands[0], bool(load or both), bool(stores or both)))
            if name == "tt.call":  # what a function call does with a pointer is not followed: both
                accesses += [(line, v, True, True) for v in operands]
        if text.endswith("{"):
            stack.append(entry)
    for label, i, value in branches:
        for arguments in blocks.get(label, []):
            if i < len(arguments):
                edges.append((value, arguments[i]))
    return edges, accesses


def _origins(edges, seeds):
    """{value: the pointer arguments it comes from}, seeds (argument: itself) carried along the edges."""
    origins = {value: {value} for value in seeds}
    origins[_ANY] = {_ANY}
    successors = {}
    for source, target in edges:
        successors.setdefault(source, []).append(target)
    work = list(origins)
    while work:
        value = work.pop()
        for target in successors.get(value, ()):
            known = origins.setdefault(target, set())
            if not origins[value] <= known:
                known |= origins[value]
                work.append(target)
    return origins


def _functions(lines):
    """[(the tt.func line, its body's lines)] of a TTIR's lines."""
    functions = []
    for line in lines:
        if re.match(r"tt\.func\b", line):
            functions.append((line, []))
        elif functions:
            functions[-1][1].append(line)
    return functions


def pointer_loaded_and_stored(ttir):
    """The first pointer argument of a kernel that the kernel both loads from and stores to (a scratch
    buffer), as "%arg is loaded (first such load) and stored (first such store)", or None. A pointer
    comes from every argument it is computed from (tt.splat, tt.addptr, tt.broadcast, tt.expand_dims,
    tt.reshape, arith.select, ... and scf loops' and branches' block arguments, _memory_accesses); a pointer
    that was itself loaded counts as any argument's, and an atomic's and one passed to tt.call as both loaded
    and stored."""
    for header, body in _functions(ttir_lines(ttir)):
        arguments = [name for name, pointer in _function_arguments(header) if pointer]
        if not arguments:
            continue
        edges, accesses = _memory_accesses(body)
        origins = _origins(edges, arguments)

        def touched(value):
            found = origins.get(value) or origins.get(value.split("#")[0]) or set()
            return set(arguments) if _ANY in found else found & set(arguments)
        loads = [(line, touched(v)) for line, v, loads, _ in accesses if loads]
        stores = [(line, touched(v)) for line, v, _, stores in accesses if stores]
        for argument in arguments:
            load = next((line for line, args in loads if argument in args), None)
            store = next((line for line, args in stores if argument in args), None)
            if load and store:
                return f"{argument} is loaded ({load}) and stored ({store})"
    return None


TOLERANT_RUNG_OPS = re.compile(r"\b(tt\.precise_divf|tt\.extern_elementwise|tt\.gather|gpu\.barrier"
                               r"|tt\.elementwise_inline_asm)\b")


def op_beyond_the_last_rung(ttir):
    """The first div_rn (tt.precise_divf), libdevice call (tt.extern_elementwise), tt.gather, barrier or
    inline asm, or None."""
    return _first_line(ttir, TOLERANT_RUNG_OPS.search)


# Which rows a rule applies to: (chip, exact) -> bool, the chip's backend name and whether the row's route is
# exact (its Route record's `exact`, route_is_exact).
ROW_SCOPES = {
    "every row": lambda chip, exact: True,
    "Ascend rows": lambda chip, exact: chip == "ascend",
    "inexact routes": lambda chip, exact: not exact,  # Route.exact False: the last rung, "tolerant"
}


class TtirRule(NamedTuple):
    """A rule over a kernel's TTIR: its name, the rows it applies to (a key of ROW_SCOPES), what it keeps
    (shown when broken) and the check (the TTIR's first offending line, or None)."""
    name: str
    rows: str
    text: str
    check: Callable

    def applies(self, chip, exact):
        return ROW_SCOPES[self.rows](chip, exact)


TTIR_RULES = (
    TtirRule("custom-combine reduction", "every row", "every reduction combines with the one op of tl.sum, tl.max "
             "or tl.min (not maximumf)",
             custom_combine_reduction),
    TtirRule("reduction axis", "every row", "every reduction runs along its operand's last axis",
             reduction_off_the_last_axis),
    TtirRule("unsigned op", "Ascend rows", "no unsigned integer operation on Ascend", unsigned_op),
    TtirRule("masked memory op", "Ascend rows", "no masked tt.load or tt.store on Ascend", masked_load_or_store),
    TtirRule("float self-compare", "Ascend rows", "no float compare of a value with itself on Ascend",
             float_compare_with_itself),
    TtirRule("scratch argument", "Ascend rows", "no pointer argument is both loaded and stored on Ascend (its "
             "compiler corrupts a load of what the same program stored)", pointer_loaded_and_stored),
    TtirRule("last rung op", "inexact routes", "the inexact last rung has no div_rn, libdevice, tl.gather, barrier "
             "or inline asm", op_beyond_the_last_rung),
)


def route_is_exact(solution, route):
    """Whether a route of the solution is exact: its ROUTE_TABLE record's `exact`, True where it has none."""
    record = (getattr(solution, "ROUTE_TABLE", None) or {}).get(route)
    return bool(getattr(record, "exact", True))


# ---------------------------------------------------------------- the source rule (pure: the tests call it)

SOURCE_WORD = "dot"


def _is_jit(decorator):
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return (isinstance(target, ast.Attribute) and target.attr == "jit") or (isinstance(target, ast.Name)
                                                                            and target.id == "jit")


def jitted_sources(source):
    """{name: (first line number, its source lines)} of every @triton.jit function of a Python source: from
    `def` (Triton's JITFunction.src starts there) to its last line, with the comments after its last
    statement that are indented as its body (inspect.getsource keeps those)."""
    lines, found = source.splitlines(), {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(map(_is_jit, node.decorator_list)):
            end, body_column = node.end_lineno, node.body[0].col_offset
            for k in range(node.end_lineno, len(lines)):
                text = lines[k]
                if not text.strip():
                    continue
                if text.lstrip().startswith("#") and len(text) - len(text.lstrip()) >= body_column:
                    end = k + 1
                    continue
                break
            found[node.name] = (node.lineno, lines[node.lineno - 1:end])
    return found


def dot_in_jitted_sources(source):
    """[(function, line number, line)]: each @triton.jit function whose source holds "dot" anywhere (name,
    docstring, comments, code), with its first such line. Iluvatar's JIT sets `use_sme = 'dot' in src` for a
    kernel and every jitted function it calls, and takes a matmul path for such kernels
    (../shared/BACKENDS.md)."""
    offenders = []
    for name, (first, lines) in jitted_sources(source).items():
        hit = next((i for i, line in enumerate(lines) if SOURCE_WORD in line), None)
        if hit is not None:
            offenders.append((name, first + hit, lines[hit].strip()))
    return sorted(offenders, key=lambda offender: offender[1])


def describe_rules():
    """TTIR_RULES and the source rule as the module docstring (and --help) lists them."""
    lines = [f"  {rule.rows:<16} {rule.name}: {rule.text}" for rule in TTIR_RULES]
    lines.append(f"  {'every row':<16} source rule: no @triton.jit function of the solution has '{SOURCE_WORD}' "
                 "in its source (Iluvatar's JIT takes a matmul path for one)")
    return "\n".join(lines)


__doc__ = __doc__.replace("<the rules, from TTIR_RULES>", describe_rules())  # TTIR_RULES is their one home


def source_problems(solution_path):
    """The source rule's problem for every row, as one line ([] when no jitted function has "dot")."""
    offenders = dot_in_jitted_sources(Path(solution_path).read_text(encoding="utf-8"))
    if not offenders:
        return []
    name, line_number, line = offenders[0]
    more = f" (and {len(offenders) - 1} more jitted functions)" if len(offenders) > 1 else ""
    return [f"source rule (no '{SOURCE_WORD}' in a jitted function's source: Iluvatar's JIT takes a matmul path): "
            f"{name}, line {line_number}: {line}{more}"]


def problem_lines(problems_by_shape):
    """[(shape label, problem)] -> one line per problem, with how many shapes and the first."""
    shapes = {}
    for label, problem in problems_by_shape:
        shapes.setdefault(problem, []).append(label)
    return [f"{problem} ({len(labels)} shapes, first {labels[0]})" for problem, labels in shapes.items()]


def reached(compiled_ok, result):
    """How far a limit-checked row got, as one of LEVELS."""
    if compiled_ok:
        return LEVELS[0] if result["binary"] else LEVELS[1]
    return LEVELS[2]


# ---------------------------------------------------------------- which Triton, in which venv

class Installation(NamedTuple):
    """A Triton to compile with: the venv's name and what pip installs into it."""
    name: str
    requirements: tuple


def installation(row, backend):
    """The Triton a row compiles with: upstream triton==<minor>.0 of the backend's base version (or the
    row's own), or triton-ascend for an npu target, with ascendnpu-ir for bishengir-compile and pybind11,
    which triton-ascend imports without declaring it."""
    minor = ".".join(str(row.triton or backend["triton"]).split(".")[:2])
    if compile_matrix.parse_target(row.target)[0] == "npu":
        return Installation(f"triton-ascend-{minor}.0",
                            (f"triton-ascend=={minor}.0", "ascendnpu-ir==1.2.0", "pybind11"))
    return Installation(f"triton-{minor}.0", (f"triton=={minor}.0",))


def _pinned_here(requirements):
    """Whether the running Python already has every requirement, each pinned with ==."""
    for requirement in requirements:
        name, sep, version = requirement.partition("==")
        if not sep:
            return False
        try:
            if importlib.metadata.version(name) != version:
                return False
        except importlib.metadata.PackageNotFoundError:
            return False
    return True


@contextlib.contextmanager
def _locked(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two runs at once build one venv once
        yield


def python_for(install, log=print):
    """The python that has this installation: the running one if it has it, else the venv in VENVS,
    made and installed once (its installed.json says what it holds). Raises RuntimeError with pip's
    last lines when an install fails."""
    if _pinned_here(install.requirements):
        return sys.executable
    venv = VENVS / install.name
    python = venv / "bin" / "python"
    record = venv / "installed.json"
    with _locked(VENVS / f"{install.name}.lock"):
        if record.exists() and json.loads(record.read_text()) == list(install.requirements) and python.exists():
            return str(python)
        start = time.time()
        shutil.rmtree(venv, ignore_errors=True)
        # No pip of its own (ensurepip costs about as much as the install) where the system site-packages' pip,
        # which installs into the venv it runs in, is seen from it.
        subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)],
                       check=True, capture_output=True)
        if subprocess.run([str(python), "-c", "import pip"], capture_output=True).returncode != 0:
            subprocess.run([str(python), "-m", "ensurepip", "--default-pip"], check=True, capture_output=True)
        proc = subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps",
                               *install.requirements], capture_output=True, text=True, timeout=PIP_TIMEOUT_S)
        if proc.returncode != 0:
            last = [line for line in (proc.stderr + proc.stdout).splitlines() if line.strip()][-3:]
            raise RuntimeError(f"pip install {' '.join(install.requirements)} failed: {' / '.join(last)}")
        record.write_text(json.dumps(list(install.requirements)))
        log(f"  venv {install.name}: {' '.join(install.requirements)} ({time.time() - start:.0f} s)", flush=True)
        return str(python)


# ---------------------------------------------------------------- plans (run in the row's Triton's process)

def backend_table(solution_path):
    """{name: Backend as a dict} from the solution's BACKENDS."""
    solution = harness.load_solution(solution_path, name="solution_under_compile")
    table = getattr(solution, "BACKENDS", None)
    if not isinstance(table, dict):
        raise RuntimeError(f"{solution_path} has no BACKENDS table (name -> Backend)")
    return {name: backend._asdict() for name, backend in table.items()}


def plan_row(solution, row_index, shapes):
    """The distinct compiles of one judge row, each with the limit problems of every launch it stands for:
    (jobs, problems that belong to no compile: launch_plan refusing a shape)."""
    row = judge_rows()[row_index]
    backend = solution.BACKENDS[row.backend]
    target_backend, arch, warp_size = compile_matrix.parse_target(row.target)
    # What the device's driver would report: 0 on Ascend (launch_plan then uses the table's warp size).
    reported_warp_size = 0 if target_backend == "npu" else backend.warp_size
    jobs, refused = {}, []
    for route, ieee, (label, M, H) in ((r, i, s) for r in compile_matrix.ladder(solution, backend)
                                       for i in compile_matrix.compositions(solution, r) for s in shapes):
        calls = compile_matrix.plan_calls(solution, row.backend, M, H, route, ieee, arch=row.plan_arch,
                                          sm_count=row.sm_count, warp_size=reported_warp_size)
        try:
            launches = [(call, name, launch) for call in calls
                        for name, launch in compile_matrix.planned(solution, call).items()]
        except Exception as exc:
            refused.append((label, f"the {route} route's launch_plan raised {type(exc).__name__}: {exc}"))
            continue
        for plan_call, name, launch in launches:
            key = compile_matrix.launch_key(launch)
            job = jobs.get(key)
            if job is None:
                job = jobs[key] = {
                    "row": row_index, "chip": row.backend, "key": repr(key), "target": row.target, "backend": target_backend, "arch": arch,
                    "warp_size": warp_size, "route": route, "exact": route_is_exact(solution, route),
                    "plan": plan_call, "launch": name,
                    "kernel": launch.kernel.__name__, "settings": compile_matrix.settings_text(launch),
                    "shapes": 0, "launches_checked": 0, "limit_problems": [], "labels": []}
            if label not in job["labels"]:  # a launch two rungs share (the sigmoid table) counts a shape once
                job["labels"].append(label)
                job["shapes"] += 1
            job["launches_checked"] += 1
            job["limit_problems"] += [(label, p) for p in launch_problems(backend, launch)]
    for job in jobs.values():
        job["limit_problems"] = problem_lines(job["limit_problems"])
        del job["labels"]
    return list(jobs.values()), problem_lines(refused)


def plan_rows(solution_path, row_indices):
    solution = harness.load_solution(solution_path, name="solution_under_compile")
    shapes = [s for group in compile_matrix.SHAPE_GROUPS for s in harness.load_shapes(group)]
    plans = {}
    for index in row_indices:
        jobs, refused = plan_row(solution, index, shapes)
        plans[index] = {"jobs": jobs, "refused": refused}
    import triton
    return {"plans": plans, "shapes": len(shapes), "triton": triton.__version__}


# ---------------------------------------------------------------- the run (the parent process)

def contradictions(row, backend):
    """Where a judge row contradicts the solution's table (backend: its entry as a dict, or None): the
    kit's mistakes, or the table's, which fail the row before anything is compiled."""
    if backend is None:
        return [f"the solution's BACKENDS has no {row.backend!r}"]
    target_backend, _, warp_size = compile_matrix.parse_target(row.target)
    if row.stands_in_for is None and target_backend not in backend["targets"]:
        return [f"{row.target} is not among the backend's targets {backend['targets']} and is no stand-in"]
    if target_backend != "npu" and warp_size != backend["warp_size"]:
        return [f"{row.target} has {warp_size}-wide warps, the backend {backend['warp_size']}: its programs "
                "would not have the backend's thread count"]
    return []


def _read_json(proc, what):
    if proc.returncode != 0:
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        raise RuntimeError(f"{what} failed: {lines[-1] if lines else 'no message'}")
    return json.loads(proc.stdout.splitlines()[-1])


def is_selection(text):
    """Whether a --targets text names the judge's chips (SELECTION, alone or with names)."""
    return text.strip().partition(":")[0] == SELECTION


def parse_selection(text):
    """'judge' -> None (every chip); 'judge:ascend,metax' -> ('ascend', 'metax'). ValueError otherwise."""
    head, sep, names = text.strip().partition(":")
    if head != SELECTION:
        raise ValueError(f"not a judge selection: {text!r}")
    if not sep:
        return None
    selected = tuple(name.strip() for name in names.split(",") if name.strip())
    unknown = [name for name in selected if name not in JUDGE_CHIPS]
    if unknown or not selected:
        raise ValueError(f"judge chips are {', '.join(sorted(JUDGE_CHIPS))}; got {names!r}")
    return selected


def run_judge(solution_path, jobs=2, timeout=compile_matrix.COMPILE_TIMEOUT_S, log=print, chips=None):
    """The judge rows (of the named chips, or all), planned, limit-checked and compiled. Returns
    (rows, shape count)."""
    solution_path = str(Path(solution_path).resolve())
    rows, installs = _rows_by_installation(solution_path, chips, log)
    compiles, shape_count = [], 0
    for install, (python, planned) in _install_and_plan(installs, solution_path, jobs, log).items():
        if python is None:
            rows += [_unchecked_row(i, f"{install.name} (not installed)", planned) for i in installs[install]]
            continue
        triton = f"{install.requirements[0].split('==')[0]} {planned['triton']}"
        shape_count = planned["shapes"]
        for index in installs[install]:
            plan = planned["plans"][str(index)]
            if plan["refused"]:
                rows.append(_unchecked_row(index, triton, "; ".join(plan["refused"])))
            compiles += [(python, {**job, "triton": triton}) for job in plan["jobs"]]
    rows += _compile_rows(compiles, solution_path, jobs, timeout, log, source_problems(solution_path))
    return sorted(rows, key=lambda r: r["row"]), shape_count


def _rows_by_installation(solution_path, chips=None, log=print):
    """(the rows the solution's BACKENDS contradicts, unchecked; {installation: indices of the rows it compiles})."""
    table = _read_json(compile_matrix.run_script(["--table", "--solution", solution_path], PLAN_TIMEOUT_S,
                                                 script=__file__), "reading the solution's BACKENDS")
    missing = sorted(set(table) - set(JUDGE_CHIPS) - {"unknown"})
    if missing:
        log(f"  note: no judge chip for BACKENDS' {', '.join(missing)}")
    rows, installs = [], {}
    for index, row in enumerate(judge_rows()):
        if chips and row.backend not in chips:
            continue
        problems = contradictions(row, table.get(row.backend))
        if problems:
            rows.append(_unchecked_row(index, "-", "; ".join(problems)))
        else:
            installs.setdefault(installation(row, table[row.backend]), []).append(index)
    return rows, installs


def install_only(solution_path, chips=None):
    """Makes the venv of every Triton the judge rows (of the named chips, or all) compile with, and compiles
    nothing: CI runs it beside the tests, which leave the network idle. 0 when every one is ready."""
    start = time.time()
    try:
        _, installs = _rows_by_installation(str(Path(solution_path).resolve()), chips)
    except RuntimeError as exc:
        print(f"FAILED: {exc}")
        return 1
    failed = []

    def ready(install):
        try:
            print(f"  {install.name}: {python_for(install)}", flush=True)
        except Exception as exc:
            failed.append(f"{install.name}: {type(exc).__name__}: {exc}")

    with ThreadPoolExecutor(max_workers=max(len(installs), 1)) as pool:  # pip waits on the network
        list(pool.map(ready, installs))
    if failed:
        print(f"FAILED: {'; '.join(failed)}")
        return 1
    print(f"ready: {len(installs)} Tritons (venvs in {VENVS}; {time.time() - start:.0f} s)")
    return 0


def _unchecked_row(row_index, triton, why):
    """A row for what was neither compiled nor limit-checked: a judge row the table contradicts, a Triton
    that did not install, a shape launch_plan refused."""
    return {"row": row_index, "triton": triton, "target": judge_rows()[row_index].target, "kernel": "-",
            "settings": "", "shapes": 0, "launches_checked": 0, "limit_problems": [], "ok": False,
            "reached": LEVELS[3], "compile": f"not compiled: {why}", "result": None, "seconds": 0.0}


def _install_and_plan(installs, solution_path, jobs, log):
    """{installation: (its python, the plans of its rows)}, or (None, why) where it failed."""
    start = time.time()

    def install_and_plan(install):
        try:
            python = python_for(install, log)
            args = ["--plan", "--rows", ",".join(map(str, installs[install])), "--solution", solution_path]
            return python, _read_json(compile_matrix.run_script(args, PLAN_TIMEOUT_S, python=python, script=__file__),
                                      f"planning under {install.name}")
        except Exception as exc:
            return None, f"{type(exc).__name__}: {exc}"

    with ThreadPoolExecutor(max_workers=max(jobs, len(installs), 1)) as pool:  # pip waits on the network
        planned = dict(zip(installs, pool.map(install_and_plan, installs)))
    log(f"  Tritons ready and plans made ({time.time() - start:.0f} s)", flush=True)
    return planned


def _compile_rows(compiles, solution_path, jobs, timeout, log, source=()):
    """One row per (python, job), each job's launch compiled in its own process, `jobs` at a time.
    Rows that compile the same launch for the same target with the same Triton share one compile. A row
    fails on its compile, its limits, compiled_problems and the source rule's problems (source). A row on
    a chip's own target with known SM limits says how many of its programs an SM holds."""
    unique = {}
    for python, job in compiles:
        unique.setdefault((python, job["target"], job["key"]), job)

    def compile_once(item):
        (python, _, _), job = item
        started = time.time()
        try:
            proc = compile_matrix.run_script(["--worker", json.dumps(job), "--solution", solution_path], timeout,
                                             python=python, servers=servers)
            verdict = compile_matrix.compile_verdict(proc)
        except subprocess.TimeoutExpired:
            verdict = False, f"timed out after {timeout} s", None
        seconds = round(time.time() - started, 1)
        log(f"  {job['triton']} {job['target']} {job['kernel']} [{job['settings']}]: "
            f"{'ok' if verdict[0] else 'FAIL'} ({seconds} s)", flush=True)
        return (*verdict, seconds)

    # Each compile a process forked from a server of its Triton's python (compile_matrix.CompileServers);
    # unique holds one python's compiles together, so each thread's server changes as seldom as the python.
    with compile_matrix.CompileServers() as servers, ThreadPoolExecutor(max_workers=jobs) as pool:
        compiled = dict(zip(unique, pool.map(compile_once, unique.items())))
    rows, judge = [], judge_rows()
    for python, job in compiles:
        ok, detail, result, seconds = compiled[(python, job["target"], job["key"])]
        problems = (compiled_problems(job["chip"], result, job.get("exact", True)) if result else []) + list(source)
        result = compile_matrix.without_ttir(result)
        if ok and not judge[job["row"]].stands_in_for:
            occupancy = compile_matrix.occupancy_text(job["backend"], job["arch"], result)
            detail += f"; {occupancy}" if occupancy else ""
        rows.append({**job, "ok": ok and not problems and not job["limit_problems"], "reached": reached(ok, result),
                     "compile": detail if ok and not problems else "FAIL: " + "; ".join(problems + [detail]),
                     "result": result, "seconds": seconds})
    return rows


def format_table(rows, shape_count):
    head = ["backend", "Triton", "compiled for", "kernel", "settings", "shapes", "verdict", "reached", "limits",
            "instr/elem", "compile"]
    judge = judge_rows()
    body = []
    for r in rows:
        row = judge[r["row"]]
        target = r["target"] + (" (stand-in)" if row.stands_in_for else "")
        limits = ("FAIL: " + "; ".join(r["limit_problems"]) if r["limit_problems"] else
                  f"ok ({r['launches_checked']} launches)" if r["launches_checked"] else "-")
        body.append([row.label, r["triton"], target, r["kernel"], r["settings"], f"{r['shapes']}/{shape_count}",
                     "PASS" if r["ok"] else "FAIL", r["reached"], limits, compile_matrix.per_element_text(r["result"]),
                     r["compile"]])
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body)]
    lines = ["  ".join(str(x).ljust(w) for x, w in zip(line[:-1], widths)) + "  " + line[-1] for line in [head, *body]]
    lines.insert(1, "-" * len(lines[0]))
    shown = [judge[i] for i in sorted({r["row"] for r in rows})]
    notes = [f"  {row.label} on {row.target}: a stand-in for {row.stands_in_for}" for row in shown if row.stands_in_for]
    for row in shown:
        chip = JUDGE_CHIPS.get(row.backend)
        why = {more.target: more.why for more in chip.more_targets}.get(row.target) if chip else None
        limits = compile_matrix.SM_LIMITS.get(compile_matrix.parse_target(row.target)[:2])
        if why:
            notes.append(f"  {row.label} on {row.target}: {why}")
        if limits and not row.stands_in_for:
            notes.append(f"  {row.label} on {row.target}: programs/SM of an {limits.part} ({row.sm_count} SMs, each "
                         f"{limits.registers} registers, {limits.shared // 1024} KB shared memory, {limits.threads} "
                         f"threads, {limits.programs} programs)")
    notes += [f"  {row.label} on Triton {row.triton}: {row.why}" for row in shown if row.why]
    notes = list(dict.fromkeys(notes))
    return "\n".join(lines + ["", compile_matrix.PER_ELEMENT_LEGEND]
                      + (["", "Stand-ins and extra rows:"] + notes if notes else []))


def report(solution_path, json_path=None, jobs=2, timeout=compile_matrix.COMPILE_TIMEOUT_S, chips=None):
    """Runs the judge rows (of the named chips, or all), prints the table; 0 when every row passed."""
    start = time.time()
    print(f"judge chips: {solution_path}, each compiled with its own Triton, {jobs} compiles at a time "
          f"(venvs in {VENVS})", flush=True)
    try:
        rows, shape_count = run_judge(solution_path, jobs, timeout, chips=chips)
    except RuntimeError as exc:
        print(f"FAILED: {exc}")
        return 1
    judge = judge_rows()
    checked = {judge[r["row"]].backend for r in rows}
    failed = {judge[r["row"]].backend for r in rows if not r["ok"]}
    counts = f"{len(checked) - len(failed)}/{len(checked)} chips, {sum(r['ok'] for r in rows)}/{len(rows)} rows ok"
    return compile_matrix.finish(rows, format_table(rows, shape_count), counts, start, json_path,
                                 {"tool": "judge_targets", "solution": str(solution_path),
                                  "shape_groups": compile_matrix.SHAPE_GROUPS,
                                  "judge_rows": [r._asdict() for r in judge]})


def parse_args(argv=None):
    """The arguments; a usage error exits 2 with one line."""
    parser = harness.ArgumentParser(prog="judge_targets.py", description=__doc__,
                                    formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--solution", type=harness.existing_file, default=str(ROOT / "solution.py"), metavar="PATH")
    parser.add_argument("--json", type=harness.json_destination, metavar="PATH", help="write the rows here")
    parser.add_argument("--jobs", type=harness.at_least_one("compiles"), default=2, metavar="N",
                        help="compiles at a time (default 2)")
    parser.add_argument("--timeout", type=harness.positive_seconds, default=compile_matrix.COMPILE_TIMEOUT_S,
                        metavar="S", help="seconds a compile may take")
    parser.add_argument("--chips", nargs="+", choices=sorted(JUDGE_CHIPS), help="only these chips' rows (default: all)")
    parser.add_argument("--install-only", action="store_true",
                        help="make the venv of each chip's Triton, compile nothing (needs the network once)")
    parser.add_argument("--table", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--plan", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--rows", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.install_only and args.json:
        parser.error("--install-only compiles nothing and writes no rows: drop --json")
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.table:
        print(json.dumps(backend_table(args.solution)))
        return 0
    if args.plan:
        print(json.dumps(plan_rows(args.solution, [int(i) for i in args.rows.split(",")])))
        return 0
    if args.install_only:
        return install_only(args.solution, args.chips)
    return report(args.solution, args.json, args.jobs, args.timeout, args.chips)


if __name__ == "__main__":
    sys.exit(main())
