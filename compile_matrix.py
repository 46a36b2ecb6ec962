"""Compile matrix: every kernel a solution's routes launch, compiled for named GPU targets without a GPU.

    python compile_matrix.py --targets cuda:90,hip:gfx942 [--solution PATH] [--json PATH]
    (or python check.py --targets ..., which calls this)

The judge's chips, each compiled with its own Triton (check.py --targets judge), are judge_targets.py,
which builds on this module.

For each target backend:arch the solution's backend is the entry of its BACKENDS that SOLUTION_BACKEND
names for the target's backend, the warp size the one parse_target gives (as Triton's HIPOptions sets it
on hip; on npu 0, as triton-ascend's driver reports), and every kernel of its
launch_plan(backend, M, H, route=...) for every rung of its ladder of routes is compiled, once per
distinct launch (kernel, constexprs, compile options) that the benchmark and hidden_like shapes choose.

Each compile runs in its own Python process with a fresh Triton cache (a crash, such as LLVM
aborting on inline PTX compiled for AMD, kills only that process, and cached kernels cannot hide a
compile's messages). A compile fails when the process fails or dies, when it prints an error on
stderr, or when its assembly has fewer global stores than the kernel has store sites.

Store sites are counted in the kernel's own Triton IR (TTIR, after inlining and constant folding):
every tt.store, plus every inline asm whose text stores to global memory (st.global). Each site
stores a tensor, so it becomes at least one global store instruction in the assembly -- PTX
st.global on cuda, AMDGCN global_store / buffer_store / flat_store on hip. Fewer instructions than
sites means a store was lost on the way down (as inline PTX compiled for AMD does).

Where Triton cannot link AMD code objects without ROCm's ld.lld (before 3.5), the AMDGCN
assembly, which is produced before linking, is checked instead, and the row says so.

An npu target (Ascend, e.g. npu:Ascend910B3) compiles only under triton-ascend, with ascendnpu-ir's
bishengir-compile: see _prepare_npu_toolchain. There the stores are counted in the HIVM IR that
bishengir-compile hands to hivmc, the last step before the binary, which is never made here.
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import NamedTuple

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
    plan_call = job["plan"]
    return solution.launch_plan(*plan_call["args"], **plan_call["kwargs"])[job["launch"]]


def ladder(solution, backend):
    """The routes of a backend's ladder that this Triton can have (the solution's route_available, where it
    has one): the rungs a device could take, so the rungs to compile."""
    available = getattr(solution, "route_available", None)
    return [r for r in backend.routes if not callable(available) or available(r)]


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
        for route, (label, M, H) in ((r, s) for r in ladder(solution, solution_backend) for s in shapes):
            plan_call = {"args": [solution_backend.name, M, H],
                         "kwargs": {"route": route, "arch": arch, "sm_count": sm_count, "warp_size": warp_size}}
            for name, launch in solution.launch_plan(*plan_call["args"], **plan_call["kwargs"]).items():
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


def compile_one(job, solution_path):
    """Compiles one job's launch; returns {sites, stores, asm, binary, no_binary, gathers, inline_asm}:
    store sites in TTIR and global stores in the asm stage, whether the binary was made (and why not),
    and how many tt.gather and inline asm ops the TTIR holds. Raises on a failed compile."""
    import triton
    from triton.backends.compiler import GPUTarget
    solution = harness.load_solution(solution_path, name="solution_under_compile")
    launch = planned_launch(solution, job)
    target = GPUTarget(job["backend"], job["arch"], job["warp_size"])
    no_binary = None
    if job["backend"] == "npu":
        no_binary = _prepare_npu_toolchain(job["arch"])
    src = ast_source(launch, target)
    stages_seen = _record_stages(job["backend"])
    try:
        triton.compile(src, target=target, options=dict(launch.options))
    except Exception as exc:
        # Before Triton 3.5 linking needs ROCm's ld.lld; the assembly before it is what we check then.
        if "amdgcn" not in stages_seen or "lld" not in str(exc):
            raise
        print(f"note: not linked ({type(exc).__name__}: {str(exc).splitlines()[0]})", file=sys.stderr)
        no_binary = "not linked: needs ROCm ld.lld"
    toolchain = TOOLCHAINS[job["backend"]]
    ttir = stages_seen["ttir"]
    stores = len(re.findall(toolchain.store, stages_seen[toolchain.stage], re.M))
    return {"sites": _count_store_sites(ttir), "stores": stores,
            "asm": toolchain.asm, "binary": no_binary is None, "no_binary": no_binary,
            "gathers": _count_ops(ttir, "tt.gather"), "inline_asm": _count_ops(ttir, "tt.elementwise_inline_asm")}


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
    returns why no binary is made. bishengir-compile (ascendnpu-ir) goes on PATH with the hivmc stand-in
    before it, and triton-ascend's query of the device's arch (NPUUtils, a C++ extension built against
    CANN) answers `arch` instead."""
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
    return "hivmc is a stand-in: no binary"


def _record_stages(backend):
    """{stage: its output as text}, filled while triton.compile runs: it holds the stages reached even
    when a later one (linking) fails."""
    from triton.backends import backends  # the classes triton.compile uses (some versions load them by path)
    Backend = backends[TOOLCHAINS[backend].triton_backend].compiler
    seen = {}
    add_stages = Backend.add_stages

    def recording_add_stages(self, stages, *args, **kwargs):
        add_stages(self, stages, *args, **kwargs)
        for name, stage in list(stages.items()):
            def recorded(src, metadata, _stage=stage, _name=name):
                out = _stage(src, metadata)
                seen[_name] = out.decode(errors="replace") if isinstance(out, bytes) else str(out)
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


def run_script(args, timeout, python=sys.executable, script=__file__):
    """Runs `python script *args` in a clean process with a fresh Triton cache; a CompletedProcess."""
    with tempfile.TemporaryDirectory(prefix="compile-matrix-") as cache_dir:
        return subprocess.run([str(python), str(Path(script).resolve()), *args], env=_clean_env(cache_dir),
                              capture_output=True, text=True, timeout=timeout, cwd=ROOT, preexec_fn=_cap_memory)


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
        return False, f"exit code {proc.returncode}: {message}", None
    lost = result["stores"] < result["sites"]
    stores = f"{result['stores']} global stores for {result['sites']} store sites in {result['asm']}"
    if errors or lost:
        problems = ([f"stderr: {errors[0]}"] if errors else []) + [stores + (" (stores lost)" if lost else "")]
        return False, "; ".join(problems), result
    detail = f"ok: {stores}"
    if not result["binary"]:
        detail += f" ({result['no_binary']})"
    return True, detail, result


def run_matrix(solution_path, targets, log=print, timeout=COMPILE_TIMEOUT_S):
    """Plans and compiles; returns (rows, shape count). Each row: the job plus ok, detail, seconds."""
    solution_path = str(Path(solution_path).resolve())
    spec = ",".join(target_label(b, a) for b, a, _ in targets)
    proc = run_script(["--plan", "--solution", solution_path, "--targets", spec], timeout=COMPILE_TIMEOUT_S)
    if proc.returncode != 0:
        raise RuntimeError(f"planning the compiles failed:\n{proc.stderr.strip()}")
    planned = json.loads(proc.stdout.splitlines()[-1])
    rows = []
    for job in planned["jobs"]:
        start = time.time()
        try:
            proc = run_script(["--worker", json.dumps(job), "--solution", solution_path], timeout=timeout)
            ok, detail, result = compile_verdict(proc)
        except subprocess.TimeoutExpired:
            ok, detail, result = False, f"timed out after {timeout} s", None
        row = {**job, "ok": ok, "detail": detail, "result": result, "seconds": round(time.time() - start, 1)}
        rows.append(row)
        log(f"  {row['target']} {row['route']} {row['kernel']}: {'ok' if ok else 'FAIL'} ({row['seconds']} s)",
            flush=True)
    return rows, planned["shapes"]


def format_table(rows, shape_count):
    head = ["target", "route", "kernel", "settings", "shapes", "result"]
    body = [[r["target"], r["route"], r["kernel"], r["settings"], f"{r['shapes']}/{shape_count}",
             r["detail"] if r["ok"] else "FAIL: " + r["detail"]] for r in rows]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body)]
    lines = ["  ".join(str(x).ljust(w) for x, w in zip(line[:-1], widths)) + "  " + line[-1]
             for line in [head, *body]]
    lines.insert(1, "-" * len(lines[0]))
    return "\n".join(lines)


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
    args = parser.parse_args(argv)
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
