"""The judge's chips on a CPU: each compiled with the Triton its compiler is built on, as far as a CPU can
go, and every launch of the solution's plan checked against the chip's known limits.

    python check.py --targets judge[:CHIP,...] [--solution PATH] [--json PATH]
    python judge_targets.py [--chips NAME ...] [--solution PATH] [--json PATH] [--jobs N]

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
bishengir-compile's errors, "ub overflow" among them), when a launch breaks a limit, or when the compiled
TTIR has inline asm on a chip other than NVIDIA.

Each Triton lives in a venv of its own (python -m venv --system-site-packages: the system site-packages'
torch is reused; pip install --no-deps: nothing else is pulled in), made once in $SILU_DOT_JUDGE_VENVS
(default ~/.cache/silu-dot-judge-venvs) and reused; where the running Python already has that exact Triton,
it is used instead. Each compile runs in its own process with a fresh Triton cache (compile_matrix's
worker), --jobs at a time.
"""
import argparse
import contextlib
import fcntl
import importlib.metadata
import json
import math
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple, Optional

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
    minors it is compiled with, each with why, where not only the backend's base version."""
    label: str
    target: str
    stands_in_for: Optional[str] = None
    plan_arch: object = None
    tritons: tuple = ()


JUDGE_CHIPS = {
    "nvidia": JudgeChip("NVIDIA", "cuda:90", tritons=(("3.6", "FlagGems' CI runs Triton 3.6.0"),
                                                      ("3.5", "the competition asks for Triton 3.5 compatibility"))),
    "hygon": JudgeChip("Hygon DCU", "hip:gfx90a", "gfx936 (BW1000), which upstream Triton lacks", plan_arch="gfx936"),
    "iluvatar": JudgeChip("Iluvatar (TianShu)", "hip:gfx90a", "Iluvatar CoreX's cuda fork (64-wide warps)"),
    "metax": JudgeChip("MetaX", "hip:gfx90a", "maca (64-wide warps)"),
    "thead": JudgeChip("T-Head PPU", "cuda:80", "the T-Head PPU's cuda fork (32-wide warps)"),
    "mthreads": JudgeChip("Moore Threads", "cuda:80", "musa (32-wide warps)"),
    "ascend": JudgeChip("Ascend", "npu:Ascend910B3"),
}


class JudgeRow(NamedTuple):
    """One chip compiled one way: `target` with the Triton of the backend's base version, or `triton` where
    given (`why` says why). launch_plan is told `plan_arch` and `sm_count`: the real device's, where known."""
    backend: str
    label: str
    target: str
    stands_in_for: Optional[str] = None
    triton: Optional[str] = None
    plan_arch: object = None
    sm_count: Optional[int] = None
    why: str = ""


def judge_rows():
    """The rows of JUDGE_CHIPS, in its order: one per chip and Triton it is compiled with."""
    rows = []
    for name, chip in JUDGE_CHIPS.items():
        target_backend, arch, _ = compile_matrix.parse_target(chip.target)
        own_target = chip.stands_in_for is None
        plan_arch = arch if own_target else chip.plan_arch
        sm_count = compile_matrix.multiprocessors(target_backend, arch) if own_target else None
        for triton, why in chip.tritons or ((None, ""),):
            rows.append(JudgeRow(name, chip.label, chip.target, chip.stands_in_for, triton, plan_arch, sm_count, why))
    return tuple(rows)


def describe_chips():
    """JUDGE_CHIPS as the module docstring (and --help) lists them."""
    lines = [f"  {'chip':<20} {'Triton':<30} compiled for"]
    for chip in JUDGE_CHIPS.values():
        tritons = " and ".join(version for version, _ in chip.tritons) or "its base version (BACKENDS)"
        target = chip.target + (f", stand-in for {chip.stands_in_for}" if chip.stands_in_for else "")
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


def compiled_problems(chip, result):
    """What a compile's TTIR uses that the judge chip (its backend's name) is not known to take: result is
    compile_matrix.compile_one's."""
    if chip != "nvidia" and result.get("inline_asm"):
        return [f"{result['inline_asm']} inline asm in TTIR, on the {chip} chip (the only asm known to compile "
                "on a judge chip is NVIDIA's PTX)"]
    return []


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
        subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True,
                       capture_output=True)
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
    for route, (label, M, H) in ((r, s) for r in compile_matrix.ladder(solution, backend) for s in shapes):
        plan_call = {"args": [row.backend, M, H], "kwargs": {"route": route, "arch": row.plan_arch,
                                                              "sm_count": row.sm_count, "warp_size": reported_warp_size}}
        try:
            launches = solution.launch_plan(*plan_call["args"], **plan_call["kwargs"])
        except Exception as exc:
            refused.append((label, f"the {route} route's launch_plan raised {type(exc).__name__}: {exc}"))
            continue
        for name, launch in launches.items():
            key = compile_matrix.launch_key(launch)
            job = jobs.get(key)
            if job is None:
                job = jobs[key] = {
                    "row": row_index, "chip": row.backend, "key": repr(key), "target": row.target, "backend": target_backend, "arch": arch,
                    "warp_size": warp_size, "route": route, "plan": plan_call, "launch": name,
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
    rows += _compile_rows(compiles, solution_path, jobs, timeout, log)
    return sorted(rows, key=lambda r: r["row"]), shape_count


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


def _compile_rows(compiles, solution_path, jobs, timeout, log):
    """One row per (python, job), each job's launch compiled in its own process, `jobs` at a time.
    Rows that compile the same launch for the same target with the same Triton share one compile."""
    unique = {}
    for python, job in compiles:
        unique.setdefault((python, job["target"], job["key"]), job)

    def compile_once(item):
        (python, _, _), job = item
        started = time.time()
        try:
            proc = compile_matrix.run_script(["--worker", json.dumps(job), "--solution", solution_path], timeout,
                                             python=python)
            verdict = compile_matrix.compile_verdict(proc)
        except subprocess.TimeoutExpired:
            verdict = False, f"timed out after {timeout} s", None
        seconds = round(time.time() - started, 1)
        log(f"  {job['triton']} {job['target']} {job['kernel']} [{job['settings']}]: "
            f"{'ok' if verdict[0] else 'FAIL'} ({seconds} s)", flush=True)
        return (*verdict, seconds)

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        compiled = dict(zip(unique, pool.map(compile_once, unique.items())))
    rows = []
    for python, job in compiles:
        ok, detail, result, seconds = compiled[(python, job["target"], job["key"])]
        problems = compiled_problems(job["chip"], result) if result else []
        rows.append({**job, "ok": ok and not problems and not job["limit_problems"], "reached": reached(ok, result),
                     "compile": detail if ok and not problems else "FAIL: " + "; ".join(problems + [detail]),
                     "result": result, "seconds": seconds})
    return rows


def format_table(rows, shape_count):
    head = ["backend", "Triton", "compiled for", "kernel", "settings", "shapes", "verdict", "reached", "limits",
            "compile"]
    judge = judge_rows()
    body = []
    for r in rows:
        row = judge[r["row"]]
        target = r["target"] + (" (stand-in)" if row.stands_in_for else "")
        limits = ("FAIL: " + "; ".join(r["limit_problems"]) if r["limit_problems"] else
                  f"ok ({r['launches_checked']} launches)" if r["launches_checked"] else "-")
        body.append([row.label, r["triton"], target, r["kernel"], r["settings"], f"{r['shapes']}/{shape_count}",
                     "PASS" if r["ok"] else "FAIL", r["reached"], limits, r["compile"]])
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body)]
    lines = ["  ".join(str(x).ljust(w) for x, w in zip(line[:-1], widths)) + "  " + line[-1] for line in [head, *body]]
    lines.insert(1, "-" * len(lines[0]))
    shown = [judge[i] for i in sorted({r["row"] for r in rows})]
    notes = [f"  {row.label} on {row.target}: a stand-in for {row.stands_in_for}" for row in shown if row.stands_in_for]
    notes += [f"  {row.label} on Triton {row.triton}: {row.why}" for row in shown if row.why]
    return "\n".join(lines + (["", "Stand-ins and extra rows:"] + notes if notes else []))


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
    parser.add_argument("--table", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--plan", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--rows", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    if args.table:
        print(json.dumps(backend_table(args.solution)))
        return 0
    if args.plan:
        print(json.dumps(plan_rows(args.solution, [int(i) for i in args.rows.split(",")])))
        return 0
    return report(args.solution, args.json, args.jobs, args.timeout, args.chips)


if __name__ == "__main__":
    sys.exit(main())
