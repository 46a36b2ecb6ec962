"""Compile matrix: every kernel a solution's routes launch, compiled for named GPU targets without a GPU.

    python compile_matrix.py --targets cuda:90,hip:gfx942 [--solution PATH] [--json PATH]
    (or python check.py --targets ..., which calls this)

The judge's chips, each compiled with its own Triton (check.py --targets judge), are judge_targets.py,
which builds on this module.

For each target backend:arch the solution's backend is the entry of its BACKENDS that SOLUTION_BACKEND
names for the target's backend, the warp size the one parse_target gives (as Triton's HIPOptions sets it
on hip; on npu 0, as triton-ascend's driver reports), and every kernel of its
launch_plan(backend, M, H, route=...) for every rung of its ladder of routes is compiled, with the
witness's kernels (witness_plan, where the solution has one), once per distinct launch (kernel,
constexprs, compile options) that the benchmark and hidden_like shapes choose.

Each compile runs in its own Python process with a fresh Triton cache (a crash, such as LLVM
aborting on inline PTX compiled for AMD, kills only that process, and cached kernels cannot hide a
compile's messages), forked from a server process that has imported torch and Triton once
(CompileServers). A compile fails when the process fails or dies, when it prints an error on stderr, or
when its assembly has fewer global stores than the kernel has store sites.

Store sites are counted in the kernel's own Triton IR (TTIR, after inlining and constant folding):
every tt.store, plus every inline asm whose text stores to global memory (st.global). Each site
stores a tensor, so it becomes at least one global store instruction in the assembly -- PTX
st.global on cuda, AMDGCN global_store / buffer_store / flat_store on hip. Fewer instructions than
sites means a store was lost on the way down (as inline PTX compiled for AMD does).

Where Triton cannot link AMD code objects without ROCm's ld.lld (before 3.5), the AMDGCN
assembly, which is produced before linking, is checked instead, and the row says so.

On cuda each compile's PTX also goes through the ptxas that Triton bundles, with -v, as Triton runs it:
the row gives the kernel's registers, spill stores and loads, and Triton's shared memory bytes, and on a
target whose SM limits are known (SM_LIMITS: sm_80, the A100) how many programs an SM holds. On hip the row gives
the AMDGCN's own VGPRs, SGPRs, spills, scratch bytes and waves a SIMD, linked or not (parse_amdgcn_usage), and
Triton's shared memory bytes, from the compile's stages where it was not linked. On both, where the kernel's
loops are known (kernel_loops), the row's result has the instructions a thread executes per element it handles,
estimated from the SASS or the AMDGCN with each loop's body counted once per trip (instructions_per_element).

An npu target (Ascend, e.g. npu:Ascend910B3) compiles only under triton-ascend, with ascendnpu-ir's
bishengir-compile: see _prepare_npu_toolchain. There the stores are counted in the HIVM IR that
bishengir-compile hands to hivmc, the last step before the binary, which is never made here. That IR also
holds bishengir's own plan of the kernel's unified buffer (UB): the row gives the planned bytes (ub_plan)
and fails above UB_LIMIT_BYTES, and says so where the plan is of bishengir's retry after an overflow.
"""
import argparse
import contextlib
import io
import itertools
import json
import math
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path
from typing import Callable, NamedTuple, Optional

import harness  # imports no triton

ROOT = Path(__file__).resolve().parent


class Toolchain(NamedTuple):
    """How a Triton target backend's compile is checked here: the Triton backend package that compiles
    it, the stage whose text holds the global stores, what that text is, and how one store looks there."""
    triton_backend: str
    stage: str
    asm: str
    store: str


TOOLCHAINS = {
    "cuda": Toolchain("nvidia", "ptx", "ptx", r"^\s*(?:@!?%p\w+\s+)?st\.global\b"),
    "hip": Toolchain("amd", "amdgcn", "amdgcn", r"^\s*(?:global|buffer|flat)_store\w*"),
    # The npubin stage's output is the HIVM IR itself, as the hivmc stand-in writes it (no binary).
    "npu": Toolchain("ascend", "npubin", "hivm", r"\bcall @store_ubuf_to_gm_\w+"),
}
TARGET_BACKENDS = tuple(TOOLCHAINS)
# The solution's backend (an entry of its BACKENDS table) that each Triton target backend compiles for.
SOLUTION_BACKEND = {"cuda": "nvidia", "hip": "amd", "npu": "ascend"}
SHAPE_GROUPS = ("benchmark", "hidden_like")
# SMs / CUs of a typical part per target (on npu the vector cores, as bishengir-compile's target spec
# gives them: Ascend910B3 has 20 AI cores of 2): they only choose among a route's launch settings.
MULTIPROCESSORS = {("cuda", 80): 108, ("cuda", 90): 132, ("cuda", 100): 148, ("cuda", 120): 170,
                   ("hip", "gfx90a"): 110, ("hip", "gfx942"): 304, ("hip", "gfx950"): 256,
                   ("hip", "gfx1100"): 96, ("npu", "Ascend910B3"): 40}
DEFAULT_MULTIPROCESSORS = {"cuda": 132, "hip": 304, "npu": 40}


class SmLimits(NamedTuple):
    """What one SM of a target's typical part holds at once (its count is MULTIPROCESSORS'): registers,
    allocated a warp at a time in units of register_unit a thread; shared memory, allocated in units of
    shared_unit with shared_reserved more a program (the CUDA runtime's own); threads; programs."""
    part: str
    registers: int
    register_unit: int
    shared: int
    shared_unit: int
    shared_reserved: int
    threads: int
    programs: int


# The parts whose SM limits are known here, by target: the A100 (sm_80; NVIDIA's CUDA C++ Programming
# Guide, compute capability 8.0: 164 KB of shared memory an SM, 1 KB of it reserved a block).
SM_LIMITS = {("cuda", 80): SmLimits("A100", registers=65536, register_unit=8, shared=164 * 1024, shared_unit=128,
                                    shared_reserved=1024, threads=2048, programs=32)}


def programs_per_sm(limits, registers, threads, shared, warp_size=32):
    """(how many programs of a kernel one SM holds at once, what limits it: "registers", "shared memory",
    "threads" or "programs"), from the kernel's registers a thread, threads a program and shared bytes."""
    warp_registers = -(-registers // limits.register_unit) * limits.register_unit * warp_size
    shared_bytes = -(-(shared + limits.shared_reserved) // limits.shared_unit) * limits.shared_unit
    by = {"registers": (limits.registers // warp_registers) // (threads // warp_size) if registers else limits.programs,
          "shared memory": limits.shared // shared_bytes,
          "threads": limits.threads // threads,
          "programs": limits.programs}
    limiter = min(by, key=by.get)
    return by[limiter], limiter


def occupancy_text(backend, arch, result):
    """"3 programs/SM of an A100 (registers)" for a compile result with ptxas' registers and Triton's shared
    bytes on a target whose SM_LIMITS are known; "" otherwise."""
    limits = SM_LIMITS.get((backend, arch))
    usage = (result or {}).get("ptxas") or {}
    if limits is None or usage.get("registers") is None or not result.get("threads"):
        return ""
    shared = (result.get("shared") or 0) + (usage.get("static_shared") or 0)
    programs, limiter = programs_per_sm(limits, usage["registers"], result["threads"], shared)
    return f"{programs} programs/SM of an {limits.part} ({limiter})"


def multiprocessors(backend, arch):
    """The SM (CU, vector core) count launch_plan is told for a target: MULTIPROCESSORS' or the backend's
    default."""
    return MULTIPROCESSORS.get((backend, arch), DEFAULT_MULTIPROCESSORS[backend])

# Constexprs that are the same in every launch the plans make, left out of a row's settings.
HIDDEN_CONSTEXPRS = {"GROUP", "LUT_LO", "LUT_N", "BLOCK", "INDEX_64"}
COMPILE_TIMEOUT_S = 300
TARGET_FORM = ("backend:arch, e.g. cuda:90 (a compute capability), hip:gfx942 (a gfx name) or npu:Ascend910B3 "
               "(an Ascend SoC, under triton-ascend only)")


# ---------------------------------------------------------------- targets

def parse_target(text):
    """'cuda:90' -> ('cuda', 90, 32); 'hip:gfx942' -> ('hip', 'gfx942', 64); 'npu:Ascend910B3' ->
    ('npu', 'Ascend910B3', 0) (warp size 0, as triton-ascend's driver reports). ValueError otherwise."""
    backend, sep, arch = text.strip().partition(":")
    if not sep or backend not in TARGET_BACKENDS:
        raise ValueError(f"bad target {text!r}: expected {TARGET_FORM}; backends: {', '.join(TARGET_BACKENDS)}")
    if backend == "cuda":
        if not arch.isdigit():
            raise ValueError(f"bad target {text!r}: a cuda arch is a compute capability like 80 or 90; "
                             f"expected {TARGET_FORM}")
        return backend, int(arch), 32
    if backend == "npu":
        if not re.fullmatch(r"Ascend\w+", arch):
            raise ValueError(f"bad target {text!r}: an npu arch is an Ascend SoC name like Ascend910B3; "
                             f"expected {TARGET_FORM}")
        return backend, arch, 0
    match = re.fullmatch(r"gfx(\d+)([0-9a-f]{2})", arch)
    if not match:
        raise ValueError(f"bad target {text!r}: a hip arch is a gfx name like gfx90a or gfx942; "
                         f"expected {TARGET_FORM}")
    return backend, arch, 32 if int(match.group(1)) >= 10 else 64


def parse_targets(text):
    """A list of (backend, arch, warp size). ValueError otherwise."""
    targets = [parse_target(t) for t in text.split(",") if t.strip()]
    if not targets:
        raise ValueError(f"no targets given: expected a comma-separated list of {TARGET_FORM}")
    return targets


def target_label(backend, arch):
    return f"{backend}:{arch}"


# ---------------------------------------------------------------- plan (run in a clean process)

def settings_text(launch):
    options = {k: v for k, v in launch.options.items() if k not in ("enable_fp_fusion", "num_stages")}
    constexprs = {k: v for k, v in launch.constexprs.items() if k not in HIDDEN_CONSTEXPRS}
    return " ".join(f"{k}={v}" for k, v in {**options, **constexprs}.items())


def launch_key(launch):
    """What makes two launches one compile: kernel, argument types, constexprs and compile options."""
    return (launch.kernel.__name__, repr(sorted(launch.signature.items())),
            repr(sorted(launch.constexprs.items())), repr(sorted(launch.options.items())))


def planned_launch(solution, job):
    """The launch a job compiles, rebuilt from the launch_plan call that made it: job["plan"] holds that
    call's arguments, job["launch"] the launch's key in what it returned."""
    return planned(solution, job["plan"])[job["launch"]]


def plan_calls(solution, backend_name, M, H, route, ieee, **kwargs):
    """The calls that plan a route's launches for a shape, in one of its compositions: launch_plan's and, where
    the solution has a witness (witness_plan), the witness's kernels', which no composition changes."""
    calls = [{"args": [backend_name, M, H], "kwargs": plan_kwargs(route, ieee, **kwargs)}]
    if callable(getattr(solution, "witness_plan", None)) and not ieee:
        calls.append({"function": "witness_plan", "args": [backend_name, M, H],
                      "kwargs": {"route": route, "warp_size": kwargs.get("warp_size")}})
    return calls


def planned(solution, plan_call):
    """{name: launch} of one of plan_calls' calls."""
    return getattr(solution, plan_call.get("function", "launch_plan"))(*plan_call["args"], **plan_call["kwargs"])


def ladder(solution, backend):
    """The routes of a backend's ladder that this Triton can have (the solution's route_available, where it
    has one): the rungs a device could take, so the rungs to compile."""
    available = getattr(solution, "route_available", None)
    return [r for r in backend.routes if not callable(available) or available(r)]


def compositions(solution, route):
    """The feature sets a route can run in their IEEE form (the solution's route_compositions, where it has
    one): each compiles apart."""
    each = getattr(solution, "route_compositions", None)
    return each(route) if callable(each) else [()]


def plan_kwargs(route, ieee, **kwargs):
    """launch_plan's keyword arguments for a route and one of its compositions (none: not passed, so that a
    solution without compositions takes them)."""
    return {"route": route, **({"ieee": list(ieee)} if ieee else {}), **kwargs}


def plan(solution_path, targets):
    """The distinct compiles of every target: one job per (kernel, constexprs, options), with the first
    shape that chose it (a worker rebuilds the launch from it) and how many shapes chose it."""
    solution = harness.load_solution(solution_path, name="solution_under_compile")
    shapes = [s for group in SHAPE_GROUPS for s in harness.load_shapes(group)]
    jobs = []
    for backend, arch, warp_size in targets:
        sm_count = multiprocessors(backend, arch)
        solution_backend = solution.BACKENDS[SOLUTION_BACKEND[backend]]
        seen, labels = {}, {}
        for route, ieee, (label, M, H) in ((r, i, s) for r in ladder(solution, solution_backend)
                                           for i in compositions(solution, r) for s in shapes):
            calls = plan_calls(solution, solution_backend.name, M, H, route, ieee, arch=arch, sm_count=sm_count,
                               warp_size=warp_size)
            for plan_call, (name, launch) in ((c, item) for c in calls for item in planned(solution, c).items()):
                key = launch_key(launch)
                if key in seen:
                    seen[key]["shapes"] += label not in labels[key]
                    labels[key].add(label)
                    continue
                labels[key] = {label}
                seen[key] = {"target": target_label(backend, arch), "backend": backend, "arch": arch,
                             "warp_size": warp_size, "route": route, "plan": plan_call, "launch": name,
                             "kernel": launch.kernel.__name__, "settings": settings_text(launch), "shapes": 1}
        jobs.extend(seen.values())
    return jobs, len(shapes)


# ---------------------------------------------------------------- one compile (run in its own process)

def ast_source(launch, target):
    """ASTSource of a launch for a GPUTarget, with every pointer 16-byte aligned and every specialized
    integer divisible by 16, as contiguous inputs give (the kernel's do_not_specialize arguments are
    left alone). Each Triton version takes constexprs and argument attributes in its own form."""
    from triton.compiler import ASTSource
    names = list(launch.kernel.arg_names)
    skip = set(launch.kernel.do_not_specialize or ())
    specialized = [i for i, n in enumerate(names) if n in launch.signature and n not in skip and i not in skip]
    if "constexprs" in ASTSource.__init__.__code__.co_varnames:  # Triton 3.3+
        attrs = {(i,): [["tt.divisibility", 16]] for i in specialized}
        signature = {**launch.signature, **{k: "constexpr" for k in launch.constexprs}}
        return ASTSource(fn=launch.kernel, signature=signature, constexprs=launch.constexprs, attrs=attrs)
    from triton.compiler.compiler import make_backend
    backend = make_backend(target)
    if hasattr(backend, "get_attrs_descriptor"):  # Triton 3.2: a descriptor built from argument values
        attrs = backend.get_attrs_descriptor(launch.kernel.params, [launch.constexprs.get(n, 16) for n in names])
    else:  # Triton 3.0 and 3.1: the divisible arguments' indices
        from triton.compiler import AttrsDescriptor
        attrs = AttrsDescriptor(divisible_by_16=set(specialized))
    return ASTSource(fn=launch.kernel, signature=dict(launch.signature), constants=dict(launch.constexprs),
                     attrs=attrs)


def _ttir_lines(ttir):
    return [line for line in ttir.splitlines() if not line.lstrip().startswith("#loc")]


def _count_store_sites(ttir):
    lines = _ttir_lines(ttir)
    stores = sum(1 for line in lines if re.search(r"\btt\.store\b", line))
    asm_stores = sum(1 for line in lines if "tt.elementwise_inline_asm" in line and "st.global" in line)
    return stores + asm_stores


def _count_ops(ttir, op):
    return sum(1 for line in _ttir_lines(ttir) if re.search(rf"\b{re.escape(op)}\b", line))


PTXAS_USAGE = {"registers": r"Used (\d+) registers", "stack": r"(\d+) bytes stack frame",
               "spill_stores": r"(\d+) bytes spill stores", "spill_loads": r"(\d+) bytes spill loads",
               "static_shared": r"(\d+) bytes smem"}


def parse_ptxas_verbose(text):
    """{registers, stack, spill_stores, spill_loads, static_shared} of the one kernel in a `ptxas -v` log
    (None where the log does not say; ptxas leaves out smem when there is none, so that one is 0)."""
    usage = {key: int(m.group(1)) if (m := re.search(pattern, text)) else None for key, pattern in PTXAS_USAGE.items()}
    if usage["registers"] is not None and usage["static_shared"] is None:
        usage["static_shared"] = 0
    return usage


# The AMDGPU code object's own figures, as LLVM writes them into the assembly (its metadata and its kernel-info
# comments): registers a lane, spills, scratch bytes a lane and waves a SIMD.
AMDGCN_USAGE = {"vgprs": r"\.vgpr_count:\s+(\d+)", "sgprs": r"\.sgpr_count:\s+(\d+)",
                "vgpr_spills": r"\.vgpr_spill_count:\s+(\d+)", "sgpr_spills": r"\.sgpr_spill_count:\s+(\d+)",
                "scratch": r"\.private_segment_fixed_size:\s+(\d+)", "occupancy": r";\s*Occupancy:\s+(\d+)"}


def parse_amdgcn_usage(asm):
    """{vgprs, sgprs, vgpr_spills, sgpr_spills, scratch, occupancy} of the one kernel in an AMDGCN assembly (None
    where it does not say), or None where it says none of them."""
    usage = {key: int(m.group(1)) if (m := re.search(pattern, asm)) else None for key, pattern in AMDGCN_USAGE.items()}
    return usage if any(v is not None for v in usage.values()) else None


# ---------------------------------------------------------------- instructions per element (static, loops weighted)

class Instruction(NamedTuple):
    """One instruction of a listing: its place (SASS: its address; AMDGCN: its index), opcode, whether it is
    conditional (a predicated SASS instruction; AMDGCN's s_cbranch_*), the label it goes to where it is a branch,
    and the source line it comes from, (file name, line), where the listing says."""
    place: int
    opcode: str
    conditional: bool
    target: Optional[str] = None
    source: Optional[tuple] = None


class Isa(NamedTuple):
    """How a listing is read: its parser (text -> (instructions, {label: place of the instruction after it})),
    the opcode that ends the kernel, its NOP, and the call of a slow path that a conditional branch skips (None:
    not looked for)."""
    parse: Callable
    end: str
    nop: str
    call: Optional[str]


class Loop(NamedTuple):
    """A loop of a kernel: its trip count (None: not known), how many loops hold it and its source line, (file
    name, line), where known."""
    trips: Optional[int]
    depth: int
    source: Optional[tuple] = None


_SASS_LINE = re.compile(r"\s*/\*([0-9a-f]+)\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)\S*(.*)")
_SASS_SOURCE = re.compile(r'\s*//## File "([^"]*)", line (\d+)')


def parse_sass(sass):
    """(instructions, labels) of an nvdisasm listing (with -g, each instruction's source line)."""
    instructions, labels, pending, source = [], {}, [], None
    for line in sass.splitlines():
        if (label := re.match(r"\s*(\.L_x_\d+):", line)):
            pending.append(label.group(1))
        elif (where := _SASS_SOURCE.match(line)):
            source = (os.path.basename(where.group(1)), int(where.group(2)))
        elif (m := _SASS_LINE.match(line)):
            place = int(m.group(1), 16)
            labels.update((name, place) for name in pending)
            pending = []
            target = re.search(r"(\.L_x_\d+)", m.group(4)) if m.group(3) == "BRA" else None
            instructions.append(Instruction(place, m.group(3), bool(m.group(2)), target and target.group(1), source))
    return instructions, labels


def parse_amdgcn(asm):
    """(instructions, labels) of an AMDGCN assembly, each instruction with its source line (.file and .loc)."""
    instructions, labels, files, source = [], {}, {}, None
    for line in asm.splitlines():
        text = line.split(";")[0].rstrip()
        if (label := re.match(r"([\w.$]+):", text)):
            labels[label.group(1)] = len(instructions)
        elif (file := re.match(r'\s*\.file\s+(\d+)\s+(?:"[^"]*"\s+)?"([^"]*)"', text)):
            files[file.group(1)] = os.path.basename(file.group(2))
        elif (where := re.match(r"\s*\.loc\s+(\d+)\s+(\d+)", text)):
            source = (files.get(where.group(1)), int(where.group(2))) if int(where.group(2)) else None
        elif (m := re.match(r"\s+([a-z][a-z0-9_]*)\b(.*)", text)):
            opcode = m.group(1)
            branch = opcode == "s_branch" or opcode.startswith("s_cbranch_")
            target = m.group(2).split(",")[0].strip() if branch else None
            instructions.append(Instruction(len(instructions), opcode, opcode.startswith("s_cbranch_"), target, source))
    return instructions, labels


ISAS = {"sass": Isa(parse_sass, "EXIT", "NOP", "CALL"), "amdgcn": Isa(parse_amdgcn, "s_endpgm", "s_nop", None)}


def listing_loops(instructions, labels):
    """The loops of a listing, [(head, end)] in the order they open (of two at one place, the outer first): for each
    label that a branch goes back to, from the label to the last branch back to it, and on to the end of any loop
    whose head is inside it (an inner loop whose exit branches back to the outer loop's head: LLVM lays out the
    rest of the inner loop after that branch)."""
    ends = {}
    for ins in instructions:
        head = labels.get(ins.target)
        if head is not None and head <= ins.place:
            ends[ins.target] = max(ends.get(ins.target, ins.place), ins.place)
    loops = sorted(([labels[label], end] for label, end in ends.items()), key=lambda loop: (loop[0], -loop[1]))
    for outer in reversed(loops):  # inner loops first, so that an outer loop takes their extended ends
        outer[1] = max([outer[1]] + [end for head, end in loops if outer[0] < head <= outer[1]])
    return [tuple(loop) for loop in loops]


def _listing_parents(loops):
    """The innermost loop holding each of listing_loops' loops, by index, or None."""
    return [max((j for j, (h, e) in enumerate(loops) if j != i and h <= head and end <= e),
                key=lambda j: loops[j][0], default=None) for i, (head, end) in enumerate(loops)]


def _nest_parents(nest):
    """The loop holding each loop of a nest (Loops in the order they open), by index, or None."""
    return [next((j for j in range(i - 1, -1, -1) if nest[j].depth < loop.depth), None) for i, loop in enumerate(nest)]


def _slow_path(body, labels, isa):
    """The places of the regions that a conditional forward branch skips where a region holds the ISA's call and no
    branch: the call of the division's slow path, with its argument moves, never run on normal operands."""
    skipped = set()
    for ins in body if isa.call else ():
        target = labels.get(ins.target) if ins.conditional else None
        region = [other for other in body if target is not None and ins.place < other.place < target]
        if any(other.opcode == isa.call for other in region) and not any(other.target for other in region):
            skipped.update(other.place for other in region)
    return skipped


def _kept_loops(loops, body, nest):
    """Each way the listing's loops can be the nest's loops that the compiler kept as loops (the others unrolled:
    their copies are in the listing): tuples of the nest's indices, one a listing loop, in order and nesting; where
    a nest loop's source line is known and the listing has source lines, its listing loop holds an instruction of
    that line."""
    parents, nest_parents = _listing_parents(loops), _nest_parents(nest)
    lines = [{ins.source for ins in body if head <= ins.place <= end} for head, end in loops]
    lined = any(ins.source for ins in body)

    def kept_parent(j, kept):  # the innermost loop of the nest holding loop j that the compiler kept
        j = nest_parents[j]
        while j is not None and j not in kept:
            j = nest_parents[j]
        return j
    for kept in itertools.combinations(range(len(nest)), len(loops)):
        if any(kept_parent(j, kept) != (None if p is None else kept[p]) for j, p in zip(kept, parents)):
            continue
        if lined and any(nest[j].source and nest[j].source not in sources for j, sources in zip(kept, lines)):
            continue
        yield kept


def instructions_per_element(text, isa, nest, elements_per_thread):
    """The instructions a thread executes per element it handles, estimated from a static listing (text, of ISAS'
    isa) and the kernel's loops (nest: Loops in the order they open): the kernel's body up to its last end (EXIT,
    s_endpgm; the subroutines after it, such as div_rn's slow path, never run on normal operands), each instruction
    counted once per trip of every loop that holds it, without NOPs and the slow path's call (_slow_path). The
    listing's loops (listing_loops) are matched to the nest's (_kept_loops). None where the listing has no end, its
    loops match no part of the nest, or two matches give different figures."""
    instructions, labels = isa.parse(text)
    ends = [i for i, ins in enumerate(instructions) if ins.opcode == isa.end]
    if not ends:
        return None
    body = instructions[:ends[-1] + 1]
    loops = listing_loops(body, labels)
    skipped = _slow_path(body, labels, isa)
    counted = [ins for ins in body if ins.opcode != isa.nop and ins.place not in skipped]
    figures = set()
    for kept in _kept_loops(loops, body, nest):
        executed = sum(math.prod(nest[j].trips for j, (head, end) in zip(kept, loops) if head <= ins.place <= end)
                       for ins in counted)
        figures.add(round(executed / elements_per_thread, 1))
    return figures.pop() if len(figures) == 1 else None


def _loc_source(loc, definitions):
    """(file name, line) of a TTIR location (the text inside loc(...)): a call site's callee, a name's location,
    an alias's definition; None where unknown."""
    for _ in range(len(definitions) + 1):
        if (where := re.match(r'"([^"]*)":(\d+):\d+$', loc)):
            return os.path.basename(where.group(1)), int(where.group(2))
        alias = re.match(r"(?:callsite\()?(#loc\d*)\b|\"[^\"]*\"\((#loc\d*)\)$", loc)
        if not alias:
            return None
        loc = definitions.get(alias.group(1) or alias.group(2), "")
    return None


def ttir_loops(ttir):
    """The loops of a TTIR in the order they open: scf.for (its trip count where its bounds are constants) and
    scf.while (its trip count not known), each with its depth and source line."""
    lines = ttir.splitlines()
    definitions = dict(m.groups() for m in (re.match(r"(#loc\d*) = loc\((.*)\)\s*$", line) for line in lines) if m)
    constants = dict(re.findall(r"(%\w+) = arith\.constant (-?\d+) : i\d+", ttir))
    loops, stack = [], []
    for line in lines:
        text = line.strip()
        if text.startswith("}"):
            index = stack.pop() if stack else None
            if text.endswith("{"):  # "} do {", "} else {": the op's next region
                stack.append(index)
            elif index is not None and (loc := re.search(r"\bloc\((.*)\)\s*$", text)):
                loops[index] = loops[index]._replace(source=_loc_source(loc.group(1), definitions))
        elif text.endswith("{"):
            op = re.search(r"\bscf\.(for|while)\b", text)
            if op:
                bounds = re.search(r"= (%\w+) to (%\w+) step (%\w+)", text) if op.group(1) == "for" else None
                values = [constants.get(v) for v in bounds.groups()] if bounds else [None]
                trips = None if None in values else max(0, -(-(int(values[1]) - int(values[0])) // int(values[2])))
                loops.append(Loop(trips, sum(i is not None for i in stack)))
            stack.append(len(loops) - 1 if op else None)
    return loops


def kernel_loops(kernel, constexprs, threads):
    """(the loops of a solution kernel, Loops in the order they open, and the elements a thread handles in them),
    from its source and constexprs; None for a kernel whose loops are not known here (the probe, the table's, the
    ordering check's, the witness's). A loop over a kernel's tiles (the persistent fused kernel's, the two-pass
    kernels') counts one trip: the figure is per tile. A loop of one trip is no loop (the compiler folds it)."""
    c = {"GROUP": 128, **constexprs}  # the kernels' group: solution.GROUP, a constexpr global
    if kernel == "_silu_mul_quant_kernel":
        slices = [c["GROUP"] // c["CHUNK"], c["GROUP"] // c["Y_CHUNK"]]  # the grad_input slices, the y rows
        tiles = [Loop(1, 0)] if c["PERSISTENT"] else []
        return [*tiles, *(Loop(trips, len(tiles)) for trips in slices if trips > 1)], c["GROUP"] ** 2 / threads
    if kernel == "_grad_rows_kernel":  # a tile: ROWS tokens x GROUPS groups
        elements = c["ROWS"] * c["GROUPS"] * c["GROUP"]
    elif kernel in ("_y_columns_kernel", "_y_kept_kernel", "_y_transposed_kernel"):  # CHANNELS x GROUPS groups
        elements = c["CHANNELS"] * c["GROUPS"] * c["GROUP"]
    else:
        return None
    return [Loop(1, 0), *([Loop(c["GROUPS"], 1)] if c["GROUPS"] > 1 else [])], elements / threads


def per_element(listing, isa, kernel, constexprs, threads, ttir=None):
    """instructions_per_element of a kernel's listing at its launch's constexprs and threads (kernel_loops), to 0.1,
    the loops' source lines from the compile's TTIR where given (whose loops must be kernel_loops', in order and
    depth, with the same trip counts where constant); None where any of it is not known."""
    known = kernel_loops(kernel, constexprs, threads) if listing else None
    if not known:
        return None
    nest, elements = known
    if ttir is not None:
        found = ttir_loops(ttir)
        if [loop.depth for loop in found] != [loop.depth for loop in nest] or any(
                f.trips is not None and f.trips != loop.trips for f, loop in zip(found, nest)):
            return None
        nest = [loop._replace(source=f.source) for f, loop in zip(found, nest)]
    return instructions_per_element(listing, ISAS[isa], nest, elements)


PER_ELEMENT_LEGEND = (
    "instr/elem: instructions a thread executes per element it handles, estimated from the static SASS (cubin "
    "rows) or AMDGCN (hip rows): the body up to its last EXIT or s_endpgm, each instruction counted once per trip "
    "of the loops that hold it (trip counts from the launch's constexprs), without NOPs or the division's slow-path "
    "call; per tile for the persistent fused kernel and the two-pass kernels. '-': no listing (Ascend, a failed "
    "compile), a kernel whose loops are not known here (the table's, the probe's, the ordering check's, the "
    "witness's), or a listing whose loops are not the kernel's")


def per_element_text(result):
    """A compile result's instructions per element as a table shows it: "71.0", or "-" where not known."""
    figure = (result or {}).get("per_element")
    return "-" if figure is None else f"{figure:.1f}"


def disassemble(cubin):
    """The SASS of a cubin as this Triton's bundled nvdisasm prints it, with source lines (-g); None where it
    cannot."""
    import triton
    try:
        from triton import knobs  # 3.4+: a knobs tool
        nvdisasm = knobs.nvidia.nvdisasm.path
    except (ImportError, AttributeError):
        nvdisasm = str(Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "nvdisasm")
    with tempfile.TemporaryDirectory(prefix="nvdisasm-") as workdir:
        path = Path(workdir) / "kernel.cubin"
        path.write_bytes(cubin)
        try:
            proc = subprocess.run([nvdisasm, "-c", "-g", str(path)], capture_output=True, text=True,
                                  timeout=COMPILE_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired):
            return None
    return proc.stdout if proc.returncode == 0 else None


def _ptxas_path(arch):
    """The ptxas this Triton compiles with (its bundled one, or TRITON_PTXAS_PATH), however the version
    names it."""
    from triton.backends.nvidia import compiler as nvidia
    if hasattr(nvidia, "get_ptxas"):  # 3.2+: a knobs tool (3.6: per arch, Blackwell's own)
        try:
            tool = nvidia.get_ptxas(arch)
        except TypeError:
            tool = nvidia.get_ptxas()
        return tool.path if hasattr(tool, "path") else tool[0]
    return nvidia._path_to_binary("ptxas")[0]


def ptxas_usage(ptx, arch, options, workdir):
    """Registers, stack and spills of a kernel's PTX, from `ptxas -v` run as Triton runs it (-lineinfo,
    --fmad=false without fp fusion, the PTX's own .target as the GPU name): parse_ptxas_verbose's dict,
    with "error" (and None usage) where ptxas fails. A second ptxas run: compile_one takes the compile's own
    log instead where its Triton prints one (3.5+)."""
    gpu = re.search(r"^\s*\.target\s+(sm_\w+)", ptx, re.M)
    source = Path(workdir) / "usage.ptx"
    source.write_text(ptx)
    try:
        command = [_ptxas_path(arch), "-lineinfo", *([] if options.get("enable_fp_fusion", True) else ["--fmad=false"]),
                   "-v", f"--gpu-name={gpu.group(1) if gpu else f'sm_{arch}'}", str(source), "-o", str(source) + ".o"]
        proc = subprocess.run(command, capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S)
    except Exception as exc:  # the compile itself is done and checked: only the usage is missing
        return {**parse_ptxas_verbose(""), "error": f"{type(exc).__name__}: {exc}"}
    usage = parse_ptxas_verbose(proc.stderr + proc.stdout)
    if proc.returncode != 0:
        usage["error"] = f"ptxas exit code {proc.returncode}"
    return usage


# ---------------------------------------------------------------- Ascend's unified buffer (UB)

# The unified buffer of one Ascend 910B vector core: 192 KB (bishengir-compile's target spec of the
# Ascend910B3: UB_SIZE = 1572864 bits, which the HIVM IR carries and ub_plan reads where it can).
UB_BYTES = 192 * 1024
# The most UB a kernel's plan may take: a margin below the 192 KB UB, as NaN outputs were reported
# at 188.8 KB of it (hw-native-sys/pto-isa issue #170). The one home of the limit.
UB_LIMIT_BYTES = 150 * 1024

_MEMREF_BITS = {"i1": 1, "i8": 8, "si8": 8, "ui8": 8, "i16": 16, "si16": 16, "ui16": 16, "i32": 32, "si32": 32,
                "ui32": 32, "i64": 64, "si64": 64, "ui64": 64, "f16": 16, "bf16": 16, "f32": 32, "f64": 64,
                "f8E4M3FN": 8, "f8E5M2": 8, "index": 64}
_I64_CONSTANT = re.compile(r"(%[\w$.]+)\s*=\s*arith\.constant\s+(-?\d+)\s*:\s*i64\b")
_POINTER_CAST = re.compile(r"\bhivm\.hir\.pointer_cast\(([^)]*)\)")
_UB_SIZE = re.compile(r'dl_entry<"UB_SIZE",\s*(\d+)')
_UB_RETRY = re.compile(r"Ub overflow detected; automatically set ([\w-]+) to false and retrying", re.I)
_UB_OVERFLOW = re.compile(r"ub overflow, requires (\d+) bits while (\d+) bits available", re.I)
# What bishengir's retries turn off, by its option's name.
_RETRY_WORDS = {"enable-code-motion": "code motion", "enable-auto-multi-buffer": "multibuffer"}


def _memref_type(text):
    """The memref<...> type at the start of text (nested <> balanced), or None."""
    if not text.startswith("memref<"):
        return None
    depth = 0
    for i, c in enumerate(text):
        depth += {"<": 1, ">": -1}.get(c, 0)
        if depth == 0 and c == ">":
            return text[:i + 1]
    return None


def _memref_bytes(memref):
    """Bytes of a static memref type ("memref<16x128xf32, ...>": 8192; i1 is a bit, rounded up to a byte),
    or None for a dynamic shape or an element type not known here."""
    *dims, element = memref[len("memref<"):].split(",")[0].strip().split("x")
    if element not in _MEMREF_BITS or not all(d.isdigit() for d in dims):
        return None
    return (math.prod(int(d) for d in dims) * _MEMREF_BITS[element] + 7) // 8


def ub_plan(hivm, bishengir_stderr=""):
    """bishengir-compile's plan of a kernel's unified buffer, from the HIVM IR it hands to hivmc (after its
    PlanMemory pass every UB buffer is `hivm.hir.pointer_cast(%cOFF_i64[, ...]) : memref<SHAPExT, ...,
    #hivm.address_space<ub>>`, OFF a byte offset into the UB; a multibuffered buffer is a cast per copy):
    {bytes: the top of the highest buffer (offset + size, the most of the UB the kernel takes), available:
    the UB's bytes (the IR's target spec, else UB_BYTES), buffers: UB buffers read, unread: UB buffers of
    unknown size or offset, retried_without: what bishengir turned off after its first plan overflowed
    (its stderr's "[NOTE] Ub overflow detected ... retrying" lines: "code motion", "multibuffer"), so that
    the plan is of a retry, or []}. None where the IR has no UB buffer."""
    top, buffers, unread = 0, 0, 0
    for function in re.split(r"(?=\bfunc\.func\b)", hivm):  # constants are named per function
        constants = {name: int(value) for name, value in _I64_CONSTANT.findall(function)}
        for line in function.splitlines():
            cast = _POINTER_CAST.search(line)
            if not cast:
                continue
            typed = line[cast.end():].lstrip()
            memref = _memref_type(typed[1:].lstrip()) if typed.startswith(":") else None
            if memref is None or "#hivm.address_space<ub>" not in memref:
                continue
            size = _memref_bytes(memref)
            offsets = [constants.get(operand.strip()) for operand in cast.group(1).split(",") if operand.strip()]
            if size is None or not offsets or None in offsets:
                unread += 1
                continue
            buffers += 1
            top = max(top, max(offsets) + size)
    if not buffers and not unread:
        return None
    ub_size = _UB_SIZE.search(hivm)
    retried = [_RETRY_WORDS.get(flag, flag) for flag in _UB_RETRY.findall(bishengir_stderr or "")]
    return {"bytes": top, "available": int(ub_size.group(1)) // 8 if ub_size else UB_BYTES, "buffers": buffers,
            "unread": unread, "retried_without": list(dict.fromkeys(retried))}


def kb(nbytes):
    """Bytes as KB (1024 bytes), with one decimal where not whole: 90828 -> "88.7", 196608 -> "192"."""
    text = f"{nbytes / 1024:.1f}"
    return text.removesuffix(".0")


def ub_text(ub):
    """"UB 88.7 KB of 192 KB planned", with the retry it is of and the buffers it could not read."""
    text = f"UB {ub['bytes'] / 1024:.1f} KB of {kb(ub['available'])} KB planned"
    if ub.get("retried_without"):
        text += (f" after bishengir's retry without {' and '.join(ub['retried_without'])} (its first plan "
                 "overflowed the UB; the judge's bishengir may plan otherwise)")
    if ub.get("unread"):
        text += f", {ub['unread']} UB buffers of unknown size or offset not counted"
    return text


def ub_problem(ub):
    """Why a kernel's UB plan (ub_plan's, or None) fails its row, or None: no plan found, buffers not read,
    or more than UB_LIMIT_BYTES."""
    if ub is None:
        return "no UB plan in the HIVM IR (no hivm.hir.pointer_cast to the UB)"
    if ub["unread"]:
        return f"{ub['unread']} UB buffers of unknown size or offset: the UB plan cannot be checked"
    if ub["bytes"] > UB_LIMIT_BYTES:
        return (f"UB {ub['bytes'] / 1024:.1f} KB ({ub['bytes']} bytes) planned, more than the "
                f"{kb(UB_LIMIT_BYTES)} KB limit "
                f"({UB_LIMIT_BYTES} bytes, a margin below the {kb(ub['available'])} KB UB)")
    return None


def ub_overflow_text(message):
    """For a compile bishengir failed with "ub overflow, requires N bits while M bits available": the UB its
    last plan needed (it retries without code motion, then without multibuffer, before it fails), else ""."""
    match = _UB_OVERFLOW.search(message)
    if not match:
        return ""
    return (f"UB {int(match.group(1)) / 8192:.1f} KB of {kb(int(match.group(2)) // 8)} KB needed by bishengir's "
            "last plan (after its retries)")


def compile_one(job, solution_path):
    """Compiles one job's launch; returns {sites, stores, asm, binary, no_binary, gathers, inline_asm, ttir,
    threads, shared, ptxas, amdgcn, per_element}: store sites in TTIR and global stores in the asm stage, whether
    the binary was made (and why not), how many tt.gather and inline asm ops the TTIR holds, the TTIR itself
    (without its #loc lines, for the judge's TTIR rules), threads a program, Triton's shared memory bytes, on cuda
    ptxas' registers, stack and spills (from the compile's own `ptxas -v` where this Triton prints it, else
    ptxas_usage), on hip the AMDGCN's (parse_amdgcn_usage), the instructions a thread executes per element
    (per_element, of the SASS or the AMDGCN; None where not known), and on npu bishengir's UB plan (ub_plan).
    Raises on a failed compile."""
    import triton
    from triton.backends.compiler import GPUTarget
    solution = harness.load_solution(solution_path, name="solution_under_compile")
    launch = planned_launch(solution, job)
    target = GPUTarget(job["backend"], job["arch"], job["warp_size"])
    no_binary, bishengir_stderr = None, None
    if job["backend"] == "npu":
        no_binary, bishengir_stderr = _prepare_npu_toolchain(job["arch"])
    src = ast_source(launch, target)
    stages_seen = _record_stages(job["backend"])
    compiled = None
    try:
        compiled = triton.compile(src, target=target, options=dict(launch.options))
    except Exception as exc:
        # Before Triton 3.5 linking needs ROCm's ld.lld; the assembly before it is what we check then.
        if "amdgcn" not in stages_seen or "lld" not in str(exc):
            raise
        print(f"note: not linked ({type(exc).__name__}: {str(exc).splitlines()[0]})", file=sys.stderr)
        no_binary = "not linked: needs ROCm ld.lld"
    toolchain = TOOLCHAINS[job["backend"]]
    ttir = stages_seen["ttir"]
    stores = len(re.findall(toolchain.store, stages_seen[toolchain.stage], re.M))
    metadata = getattr(compiled, "metadata", None)
    # triton-ascend's metadata says 1 byte of shared memory whatever the kernel: its UB plan says instead. Where
    # linking failed (hip before 3.5), what the stages before it set.
    shared = None
    if job["backend"] != "npu":
        shared = getattr(metadata, "shared", stages_seen.shared)
    usage = None
    if job["backend"] == "cuda" and stages_seen.ptxas_log and "Used " in stages_seen.ptxas_log:
        usage = parse_ptxas_verbose(stages_seen.ptxas_log)
    elif job["backend"] == "cuda" and "ptx" in stages_seen:
        with tempfile.TemporaryDirectory(prefix="ptxas-usage-") as workdir:
            usage = ptxas_usage(stages_seen["ptx"], job["arch"], launch.options, workdir)
    amdgcn = parse_amdgcn_usage(stages_seen["amdgcn"]) if "amdgcn" in stages_seen else None
    threads = launch.options.get("num_warps", 4) * job["warp_size"]
    listing = (None, None)
    # Disassembling takes nvdisasm about a second a cubin: only for a kernel whose loops are known (per_element).
    if (job["backend"] == "cuda" and compiled is not None
            and kernel_loops(launch.kernel.__name__, launch.constexprs, threads) is not None):
        listing = ("sass", disassemble(compiled.asm["cubin"]))
    elif "amdgcn" in stages_seen:
        listing = ("amdgcn", stages_seen["amdgcn"])
    return {"sites": _count_store_sites(ttir), "stores": stores,
            "asm": toolchain.asm, "binary": no_binary is None, "no_binary": no_binary,
            "gathers": _count_ops(ttir, "tt.gather"), "inline_asm": _count_ops(ttir, "tt.elementwise_inline_asm"),
            "ttir": "\n".join(_ttir_lines(ttir)), "threads": threads, "shared": shared, "ptxas": usage,
            "amdgcn": amdgcn,
            "per_element": per_element(listing[1], listing[0], launch.kernel.__name__, launch.constexprs, threads,
                                       ttir),
            **({"ub": ub_plan(stages_seen[toolchain.stage], "".join(bishengir_stderr))}
               if job["backend"] == "npu" else {})}


# Stands in for CANN's hivmc (HIVM IR to NPU binary), which no package registry has: where the binary would
# go it writes the HIVM IR that bishengir-compile handed it, so the npubin stage's output is that text.
HIVMC_STAND_IN = """#!/bin/sh
if [ "$1" = "--version" ]; then echo "hivmc stand-in"; exit 0; fi
out=""; previous=""
for arg in "$@"; do [ "$previous" = "-o" ] && out="$arg"; previous="$arg"; done
cp "$1" "$out.o"
"""


def _prepare_npu_toolchain(arch):
    """Readies this process to compile for an npu target on a machine with neither an NPU nor CANN, and
    returns (why no binary is made, a list that gathers bishengir-compile's stderr). bishengir-compile
    (ascendnpu-ir) goes on PATH with the hivmc stand-in before it, triton-ascend's query of the device's arch
    (NPUUtils, a C++ extension built against CANN) answers `arch` instead, and its runs of bishengir-compile
    keep their stderr (triton-ascend drops it when the compile succeeds, and with it the notes of a retry
    after a UB overflow)."""
    import ascendnpuir
    from triton.backends import backends
    stand_in_dir = Path(os.environ.get("TRITON_CACHE_DIR") or tempfile.mkdtemp())  # run_script removes it
    stand_in_dir.mkdir(parents=True, exist_ok=True)
    hivmc = stand_in_dir / "hivmc"
    hivmc.write_text(HIVMC_STAND_IN)
    hivmc.chmod(0o755)
    bishengir_bin = Path(ascendnpuir.__file__).resolve().parent / "bin"
    os.environ["PATH"] = os.pathsep.join([str(stand_in_dir), str(bishengir_bin), os.environ.get("PATH", "")])
    # The class the ascend compiler module itself refers to (triton loads backend modules by path).
    npu_utils = backends["ascend"].compiler.add_stages.__globals__["NPUUtils"]
    npu_utils.__init__ = lambda self: None
    npu_utils.get_arch = lambda self: arch
    return "hivmc is a stand-in: no binary", _keep_bishengir_stderr()


def _keep_bishengir_stderr():
    """Makes subprocess.run (this process's, for the compile) add the stderr of each bishengir-compile run,
    failed or not, to the list it returns."""
    kept, run = [], subprocess.run

    def text(stderr):
        return stderr.decode(errors="replace") if isinstance(stderr, bytes) else stderr or ""

    def keeping_run(args, *rest, **kwargs):
        command = args if isinstance(args, (list, tuple)) else [args]
        ours = bool(command) and Path(str(command[0])).name == "bishengir-compile"
        try:
            proc = run(args, *rest, **kwargs)
        except subprocess.CalledProcessError as exc:
            if ours:
                kept.append(text(exc.stderr))
            raise
        if ours:
            kept.append(text(proc.stderr))
        return proc
    subprocess.run = keeping_run
    return kept


class _Stages(dict):
    """{stage: its output as text}; shared: the shared memory bytes that the stages set in the compile's metadata
    (the LLVM IR stage does, before any binary; None until one does); ptxas_log: what the cubin stage's own
    `ptxas -v` printed, where this Triton prints it (3.5+: knobs.nvidia.dump_ptxas_log; else None)."""
    shared = None
    ptxas_log = None


def _log_ptxas():
    """Whether this Triton's cubin stage now prints its `ptxas -v` log (Triton 3.5+'s knob, set here)."""
    try:
        from triton import knobs
        knobs.nvidia.dump_ptxas_log = True
        return knobs.nvidia.dump_ptxas_log is True
    except (ImportError, AttributeError):
        return False


def _record_stages(backend):
    """_Stages filled while triton.compile runs: it holds the stages reached, and the shared memory bytes, even
    when a later stage (linking) fails and there is no compiled kernel to ask; on cuda, the cubin stage's `ptxas
    -v` log where this Triton prints it (taken from its stdout: the compile's registers and spills, which
    ptxas_usage would otherwise run ptxas a second time for)."""
    from triton.backends import backends  # the classes triton.compile uses (some versions load them by path)
    Backend = backends[TOOLCHAINS[backend].triton_backend].compiler
    seen = _Stages()
    add_stages = Backend.add_stages
    log_ptxas = backend == "cuda" and _log_ptxas()

    def recording_add_stages(self, stages, *args, **kwargs):
        add_stages(self, stages, *args, **kwargs)
        for name, stage in list(stages.items()):
            def recorded(src, metadata, _stage=stage, _name=name):
                if _name == "cubin" and log_ptxas:
                    printed = io.StringIO()
                    with contextlib.redirect_stdout(printed):
                        out = _stage(src, metadata)
                    seen.ptxas_log = printed.getvalue()
                else:
                    out = _stage(src, metadata)
                seen[_name] = out.decode(errors="replace") if isinstance(out, bytes) else str(out)
                if isinstance(metadata, dict) and metadata.get("shared") is not None:
                    seen.shared = metadata["shared"]
                return out
            stages[name] = recorded
    Backend.add_stages = recording_add_stages
    if backend == "hip":
        # Before Triton 3.5 the AMD backend's cache key asks ROCm's ld.lld for its version; the cache here
        # is a fresh directory per compile, so a key without it is as good, and compiling goes on to the
        # AMDGCN assembly (linking, the last stage, then fails for the same reason, and is reported).
        key = Backend.hash

        def key_without_linker(self):
            try:
                return key(self)
            except Exception as exc:
                if "lld" not in str(exc):
                    raise
                return f"no-linker-{self.target}"
        Backend.hash = key_without_linker
    return seen


def worker_main(job_json, solution_path):
    job = json.loads(job_json)
    try:
        result = compile_one(job, solution_path)
    except Exception as exc:
        traceback.print_exc()
        print(exception_line(exc), file=sys.stderr)  # last, where compile_verdict looks for the exception
        return 1
    print("RESULT " + json.dumps(result))
    return 0


def exception_line(exc):
    """One line for a failed compile: the root exception of a chain of Triton CompilationErrors (with the
    function and place of the innermost), and of an MLIR tool's output only its "error:" diagnostics
    (bishengir-compile's "ub overflow, requires N bits while M bits available", for one)."""
    chain = [exc]
    while chain[-1].__cause__ is not None:
        chain.append(chain[-1].__cause__)
    root = chain[-1]
    lines = [line.strip() for line in str(root).splitlines() if line.strip()]
    frontend = [e for e in chain if type(e).__name__ == "CompilationError"]
    if frontend and root is frontend[-1]:
        # Triton's frontend error, not chained to its cause (some versions): the cause's repr ends the text.
        cause = re.fullmatch(r"""(\w+)\((['"])(.*)\2\)""", lines[-1]) if lines else None
        text = (f"{cause.group(1)}: {cause.group(3)}" if cause else
                f"{type(root).__name__}: {lines[-1] if lines else ''}")
    else:
        diagnostics = [re.sub(r"^loc\(.*?\):\s*", "", line) for line in lines if re.search(r"error:\s*\S", line)]
        specific = [d for d in diagnostics if "Failed to run" not in d]
        text = f"{type(root).__name__}: {' | '.join(specific or diagnostics) or (lines[0] if lines else '')}"
    if frontend:
        where = str(frontend[-1])
        function = re.search(r"def (\w+)\(", where)
        place = re.match(r"at (\d+:\d+)", where)
        text += f" (in {function.group(1) if function else '?'}{', at ' + place.group(1) if place else ''})"
    return text


# ---------------------------------------------------------------- the matrix (the parent process)

def _clean_env(cache_dir):
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["TRITON_CACHE_DIR"] = cache_dir
    return env


# A compile's address space is capped (some Triton versions' compiles of this kernel grow past 10 GB).
MEMORY_CAP_BYTES = 12 * 2**30


def _cap_memory():
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP_BYTES, MEMORY_CAP_BYTES))


def run_script(args, timeout, python=sys.executable, script=__file__, servers=None):
    """Runs `python script *args` in a clean process with a fresh Triton cache; a CompletedProcess. With
    servers (CompileServers), a run of this module is forked from the server that python runs instead of
    started afresh: its own process all the same, with the same environment, cache and memory cap."""
    if servers is not None and Path(script).resolve() == Path(__file__).resolve():
        return servers.run(args, timeout, python)
    with tempfile.TemporaryDirectory(prefix="compile-matrix-") as cache_dir:
        return subprocess.run([str(python), str(Path(script).resolve()), *args], env=_clean_env(cache_dir),
                              capture_output=True, text=True, timeout=timeout, cwd=ROOT, preexec_fn=_cap_memory)


# ---------------------------------------------------------------- compile servers (fork, not start)

# What every compile process imports, whichever its Triton: a server imports it once, and each compile is a
# process forked from the server. Starting a Python that imports torch costs about 1.3 s of CPU, more than most
# compiles here: CI's compiles (a few hundred) spent two thirds of their time starting.
SERVER_IMPORTS = ("torch", "triton", "triton.language", "triton.compiler", "triton.backends.compiler")


class _ServerLost(Exception):
    """A compile server stopped answering (the compile goes to a process of its own instead)."""


class _Server:
    """One `python compile_matrix.py --serve` process: it reads a JSON line per compile (the script's
    arguments, the timeout) and answers one (returncode, stdout, stderr, timed_out)."""

    def __init__(self, python):
        self.python = str(python)
        self.proc = subprocess.Popen([self.python, str(Path(__file__).resolve()), "--serve"], cwd=ROOT,
                                     env=_clean_env(""), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)

    def run(self, args, timeout):
        try:
            self.proc.stdin.write((json.dumps({"args": list(args), "timeout": timeout}) + "\n").encode())
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()  # the server enforces the timeout
        except OSError as exc:
            raise _ServerLost(str(exc)) from exc
        if not line:
            raise _ServerLost(f"exit code {self.proc.poll()}")
        try:
            answer = json.loads(line)
        except ValueError as exc:
            raise _ServerLost(f"answered {line[:80]!r}") from exc
        command = [self.python, str(Path(__file__).resolve()), *args]
        if answer["timed_out"]:
            raise subprocess.TimeoutExpired(command, timeout, answer["stdout"], answer["stderr"])
        return subprocess.CompletedProcess(command, answer["returncode"], answer["stdout"], answer["stderr"])

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()  # the server ends at the end of its input
                self.proc.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()


class CompileServers:
    """Compile servers, one per calling thread for the python it asks for (a thread that moves on to another
    python closes its last one: ask for the compiles of one python together). A server that is lost leaves
    its compile, and every later one of its python, to a process started afresh (run_script without servers).
    A context manager: closes them all."""

    def __init__(self):
        self._lock = threading.Lock()
        self._local = threading.local()
        self._all = []
        self._lost = set()  # the pythons whose server was lost: their compiles start afresh from then on

    def run(self, args, timeout, python=sys.executable):
        if str(python) in self._lost:
            return run_script(args, timeout, python=python)
        server = getattr(self._local, "server", None)
        if server is None or server.python != str(python):
            if server is not None:
                server.close()
            server = self._local.server = _Server(python)
            with self._lock:
                self._all.append(server)
        try:
            return server.run(args, timeout)
        except _ServerLost:
            server.close()
            self._local.server = None
            with self._lock:
                self._lost.add(str(python))
            return run_script(args, timeout, python=python)

    def close(self):
        with self._lock:
            servers, self._all = self._all, []
        for server in servers:
            server.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _wait(pid, timeout):
    """The exit status of child pid (os.waitpid's), or None after timeout seconds."""
    deadline = time.monotonic() + timeout
    delay = 0.002
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        time.sleep(min(delay, left))
        delay = min(delay * 2, 0.05)


def serve():
    """The server's loop (compile_matrix.py --serve): SERVER_IMPORTS once, then per line of input one
    compile process forked from this one, run as `python compile_matrix.py *args` would run in run_script: a
    fresh Triton cache, the memory cap, its stdout and stderr its own; killed (with what it started) after its
    timeout. Ends at the end of its input."""
    import importlib
    replies = os.fdopen(os.dup(1), "w")
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 1)  # nothing but the answers goes to the client (not what an import prints either)
    for name in SERVER_IMPORTS:
        try:
            importlib.import_module(name)
        except Exception:  # a Triton without one: the compile imports what it has, as a process of its own would
            pass
    # Triton's key of itself (a hash of its sources and libraries, lru-cached: 0.4 s a compile otherwise), once.
    for module in [m for name, m in list(sys.modules.items()) if name.startswith("triton.")]:
        triton_key = getattr(module, "triton_key", None)
        if callable(triton_key) and hasattr(triton_key, "cache_info"):
            try:
                triton_key()
            except Exception:
                pass
    for line in sys.stdin:
        request = json.loads(line)
        with tempfile.TemporaryDirectory(prefix="compile-matrix-") as workdir:
            cache_dir, out_path, err_path = (os.path.join(workdir, name) for name in ("cache", "stdout", "stderr"))
            os.mkdir(cache_dir)
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:  # the compile's process
                code = 1
                try:
                    os.setpgid(0, 0)
                    replies.close()
                    os.dup2(os.open(out_path, os.O_WRONLY | os.O_CREAT, 0o644), 1)
                    os.dup2(os.open(err_path, os.O_WRONLY | os.O_CREAT, 0o644), 2)
                    os.dup2(devnull, 0)
                    os.environ["TRITON_CACHE_DIR"] = cache_dir
                    _cap_memory()
                    sys.argv = [str(Path(__file__).resolve()), *request["args"]]
                    code = main(request["args"])
                except SystemExit as exc:
                    code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
                except BaseException:
                    traceback.print_exc()
                finally:
                    try:
                        sys.stdout.flush()
                        sys.stderr.flush()
                    finally:
                        os._exit(code or 0)
            status = _wait(pid, request["timeout"])
            timed_out = status is None
            if timed_out:
                for kill in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
                    try:
                        kill()
                    except OSError:
                        pass
                os.waitpid(pid, 0)
            texts = [Path(path).read_bytes().decode(errors="replace") if os.path.exists(path) else ""
                     for path in (out_path, err_path)]
            answer = {"returncode": None if timed_out else os.waitstatus_to_exitcode(status), "stdout": texts[0],
                      "stderr": texts[1], "timed_out": timed_out}
        replies.write(json.dumps(answer) + "\n")
        replies.flush()
    return 0


ERROR_LINE = re.compile(r"error", re.I)


def compile_verdict(proc):
    """(ok, detail, result) of one compile process: the process's fate first, then stderr, then the stores."""
    result = None
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            result = json.loads(line[len("RESULT "):])
    stderr = [line.strip() for line in proc.stderr.splitlines() if line.strip()]
    errors = [line for line in stderr if ERROR_LINE.search(line)]
    first_error = errors[0] if errors else (stderr[-1] if stderr else "no message")
    if proc.returncode < 0:
        return False, f"crashed ({signal.Signals(-proc.returncode).name}): {first_error}", None
    if proc.returncode != 0 or result is None:
        # A Python exception's last line names it; an LLVM fatal error exits with its message first.
        last = stderr[-1] if stderr else "no message"
        message = last if re.match(r"^[\w.]+(Error|Exception)\b", last) else first_error
        overflow = ub_overflow_text(message)
        return False, f"exit code {proc.returncode}: {message}" + (f"; {overflow}" if overflow else ""), None
    lost = result["stores"] < result["sites"]
    stores = f"{result['stores']} global stores for {result['sites']} store sites in {result['asm']}"
    ub = ub_problem(result["ub"]) if "ub" in result else None
    if errors or lost or ub:
        problems = ([f"stderr: {errors[0]}"] if errors else []) + [stores + (" (stores lost)" if lost else "")]
        if "ub" in result:
            problems.append(ub or ub_text(result["ub"]))
        return False, "; ".join(problems), result
    detail = f"ok: {stores}"
    if not result["binary"]:
        detail += f" ({result['no_binary']})"
    usage = usage_text(result)
    return True, detail + (f"; {usage}" if usage else ""), result


def usage_text(result):
    """"80 registers, 0/0 B spilled (stores/loads), 33792 B shared" for a compile result with ptxas'
    usage (cuda); "80 VGPRs, 48 SGPRs, 0/0 spilled (VGPRs/SGPRs), 0 B scratch a lane, 6 waves/SIMD, 8192 B shared"
    with the AMDGCN's own (hip); else Triton's shared bytes alone where known; on npu "UB 88.7 KB of 192 KB planned"
    (ub_text); else ""."""
    usage = result.get("ptxas") or {}
    amdgcn = result.get("amdgcn") or {}
    shared = result.get("shared")
    parts = [ub_text(result["ub"])] if result.get("ub") else []
    if usage.get("error"):
        parts.append(f"no register count ({usage['error']})")
    elif usage.get("registers") is not None:
        parts.append(f"{usage['registers']} registers, {usage['spill_stores']}/{usage['spill_loads']} B spilled "
                     f"(stores/loads)")
    if amdgcn.get("vgprs") is not None:
        parts.append(f"{amdgcn['vgprs']} VGPRs, {amdgcn['sgprs']} SGPRs, {amdgcn['vgpr_spills']}/"
                     f"{amdgcn['sgpr_spills']} spilled (VGPRs/SGPRs), {amdgcn['scratch']} B scratch a lane"
                     + (f", {amdgcn['occupancy']} waves/SIMD" if amdgcn.get("occupancy") is not None else ""))
    if shared is not None:
        parts.append(f"{shared} B shared")
    return ", ".join(parts)


def run_matrix(solution_path, targets, log=print, timeout=COMPILE_TIMEOUT_S):
    """Plans and compiles; returns (rows, shape count). Each row: the job plus ok, detail, seconds."""
    solution_path = str(Path(solution_path).resolve())
    spec = ",".join(target_label(b, a) for b, a, _ in targets)
    proc = run_script(["--plan", "--solution", solution_path, "--targets", spec], timeout=COMPILE_TIMEOUT_S)
    if proc.returncode != 0:
        raise RuntimeError(f"planning the compiles failed:\n{proc.stderr.strip()}")
    planned = json.loads(proc.stdout.splitlines()[-1])
    rows = []
    with CompileServers() as servers:
        for job in planned["jobs"]:
            start = time.time()
            try:
                proc = run_script(["--worker", json.dumps(job), "--solution", solution_path], timeout=timeout,
                                  servers=servers)
                ok, detail, result = compile_verdict(proc)
            except subprocess.TimeoutExpired:
                ok, detail, result = False, f"timed out after {timeout} s", None
            result = without_ttir(result)
            occupancy = occupancy_text(job["backend"], job["arch"], result) if ok else ""
            row = {**job, "ok": ok, "detail": detail + (f"; {occupancy}" if occupancy else ""), "result": result,
                   "seconds": round(time.time() - start, 1)}
            rows.append(row)
            log(f"  {row['target']} {row['route']} {row['kernel']}: {'ok' if ok else 'FAIL'} ({row['seconds']} s)",
                flush=True)
    return rows, planned["shapes"]


def without_ttir(result):
    """A compile result as a row keeps it: without the TTIR text (the judge's rules read it first)."""
    return None if result is None else {k: v for k, v in result.items() if k != "ttir"}


def format_table(rows, shape_count):
    head = ["target", "route", "kernel", "settings", "shapes", "instr/elem", "result"]
    body = [[r["target"], r["route"], r["kernel"], r["settings"], f"{r['shapes']}/{shape_count}",
             per_element_text(r["result"]), r["detail"] if r["ok"] else "FAIL: " + r["detail"]] for r in rows]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body)]
    lines = ["  ".join(str(x).ljust(w) for x, w in zip(line[:-1], widths)) + "  " + line[-1]
             for line in [head, *body]]
    lines.insert(1, "-" * len(lines[0]))
    return "\n".join(lines + ["", PER_ELEMENT_LEGEND])


def environment():
    import platform
    import triton
    return {"triton": triton.__version__, "python": platform.python_version(), "host": platform.node()}


def main(argv=None, solution_path=None):
    parser = harness.ArgumentParser(prog="compile_matrix.py", description=__doc__,
                                    formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--targets", help=f"comma-separated targets, each {TARGET_FORM}")
    parser.add_argument("--solution", type=harness.existing_file, default=solution_path or str(ROOT / "solution.py"))
    parser.add_argument("--json", type=harness.json_destination, help="write the matrix here")
    parser.add_argument("--timeout", type=harness.positive_seconds, default=COMPILE_TIMEOUT_S,
                        help="seconds a compile may take")
    parser.add_argument("--plan", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        return serve()
    if args.worker:
        return worker_main(args.worker, args.solution)
    if not args.targets:
        parser.error(f"--targets is required: a comma-separated list of {TARGET_FORM}")
    try:
        targets = parse_targets(args.targets)
    except ValueError as exc:
        parser.error(str(exc))
    if args.plan:
        jobs, shapes = plan(args.solution, targets)
        print(json.dumps({"jobs": jobs, "shapes": shapes}))
        return 0
    return report(args.solution, targets, args.json, args.timeout)


def report(solution_path, targets, json_path=None, timeout=COMPILE_TIMEOUT_S):
    """Runs the matrix, prints it; 0 when every compile is ok, 1 otherwise."""
    start = time.time()
    env = environment()
    print(f"compile matrix: {solution_path} on Triton {env['triton']} (each compile in its own process)")
    rows, shape_count = run_matrix(solution_path, targets, timeout=timeout)
    counts = f"{sum(r['ok'] for r in rows)}/{len(rows)} compiles ok, {len(targets)} targets"
    return finish(rows, format_table(rows, shape_count), counts, start, json_path,
                  {"tool": "compile_matrix", "environment": env, "solution": str(solution_path),
                   "shape_groups": SHAPE_GROUPS})


def finish(rows, table, counts, start, json_path, record):
    """The end of a compile report (this matrix's or the judge's): the table, the verdict line with its
    counts and seconds, the --json record with the rows and the verdict. Returns the exit code."""
    passed = all(r["ok"] for r in rows)
    print()
    print(table)
    print(f"\n{'PASSED' if passed else 'FAILED'}: {counts}, {time.time() - start:.0f} s")
    if json_path:
        Path(json_path).write_text(json.dumps({**record, "rows": rows, "passed": passed}, indent=2, default=str))
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
