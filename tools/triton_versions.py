"""The solution on every Triton minor version from 3.0 on: runs on CPU and compiles for cuda and hip.

    python tools/triton_versions.py [--versions 3.2.0 3.9.0 ...] [--out PATH] [--timeout S]

For each version (default: the newest patch of every minor from 3.0 that `pip index versions triton`
lists) a venv in /tmp/triton-venvs/<version> with --system-site-packages (torch is reused) gets that
Triton (and numpy<2 before 3.2, whose interpreter misreads numpy 2 arrays: harness.interpreter_problem),
and runs:
  check      python check.py --shapes cpu_small --seeds 1 (no GPU here: the Triton interpreter)
  interp     the solution alone under the interpreter on the cpu_small shapes, judged by
             harness.compare (seed 0, randn): whether the solution runs, apart from check.py's watcher
  cuda:90 / hip:gfx942   python compile_matrix.py --targets cuda:90,hip:gfx942
and the table is written to --out. No GPU needed; a few minutes and ~1 GB of disk per version.
"""
import argparse
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import harness  # noqa: E402

VENVS = Path("/tmp/triton-venvs")
FIRST_MINOR = (3, 0)
MATRIX_TARGETS = ("cuda:90", "hip:gfx942")
WATCHER_MISSING = "type object 'InterpretedFunction' has no attribute 'run'"

INTERPRETER_PROBE = """
import sys
sys.path.insert(0, {root!r})
import harness
harness.use_interpreter_if_no_gpu()
fn = harness.load_solution({solution!r}).silu_dot_fwd_bwd_quant_fuse
failed = []
for label, M, H in harness.load_shapes("cpu_small"):
    x, gy = harness.make_inputs(M, H, 0, "randn")
    ref = harness.run_reference(x, gy, harness.reference_fn())
    outputs = harness.new_outputs(M, H)
    fn(x, gy, *outputs)
    bad = [c["name"] for c in harness.compare(outputs, ref)["checks"] if not c["passed"]]
    if bad:
        failed.append(label + ": " + ",".join(bad))
print("INTERP " + ("ok" if not failed else "FAIL " + "; ".join(failed)))
"""


def newest_patches():
    """The newest patch of each minor version from FIRST_MINOR on, as pip lists them."""
    out = subprocess.run([sys.executable, "-m", "pip", "index", "versions", "triton"], capture_output=True,
                         text=True, check=True).stdout
    listed = re.search(r"Available versions: (.*)", out).group(1).split(", ")
    newest = {}
    for v in listed:
        parts = tuple(int(p) for p in v.split("."))
        if parts[:2] >= FIRST_MINOR and parts > newest.get(parts[:2], (0,)):
            newest[parts[:2]] = parts
    return [".".join(map(str, v)) for _, v in sorted(newest.items())]


def venv_python(version):
    """The python of a venv holding this Triton (made and installed once)."""
    venv = VENVS / version
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    have = subprocess.run([str(python), "-c", "import triton; print(triton.__version__)"], capture_output=True,
                          text=True).stdout.strip()
    if have != version:
        subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", f"triton=={version}"], check=True)
    if harness.version_tuple(version) < harness.INTERPRETER_NEEDS_NUMPY_1_BELOW:
        numpy_version = subprocess.run([str(python), "-c", "import numpy; print(numpy.__version__)"],
                                       capture_output=True, text=True, check=True).stdout.strip()
        if harness.version_tuple(numpy_version) >= (2, 0):
            subprocess.run([str(python), "-m", "pip", "install", "-q", "numpy<2"], check=True)
    return python


def _first_failure(text):
    for line in text.splitlines():
        if re.search(r": (raised|seed)|FAIL", line) and "PASS" not in line:
            return line.strip()
    return text.strip().splitlines()[-1] if text.strip() else "no output"


def run_check(python, timeout):
    proc = subprocess.run([str(python), "check.py", "--shapes", "cpu_small", "--seeds", "1"], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)
    out = proc.stdout + proc.stderr
    if proc.returncode == 0:
        return "PASS", ""
    if WATCHER_MISSING in out:
        return "FAIL (watcher: fixed on branch check)", f"check.py's launch watcher: {WATCHER_MISSING}"
    return "FAIL", _first_failure(out)


def run_interpreter_probe(python, timeout):
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    code = INTERPRETER_PROBE.format(root=str(ROOT), solution=str(ROOT / "solution.py"))
    proc = subprocess.run([str(python), "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                          env=env)
    verdict = [line[len("INTERP "):] for line in proc.stdout.splitlines() if line.startswith("INTERP ")]
    if proc.returncode == 0 and verdict and verdict[0] == "ok":
        return "PASS", ""
    if verdict:
        return "FAIL", verdict[0]
    return "FAIL", (proc.stderr.strip().splitlines() or ["no output"])[-1]


def run_matrix(python, timeout):
    """{target: (verdict, details)} from compile_matrix.py's JSON report."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "matrix.json"
        proc = subprocess.run([str(python), "compile_matrix.py", "--targets", ",".join(MATRIX_TARGETS),
                               "--json", str(report), "--timeout", str(timeout)], cwd=ROOT, capture_output=True,
                              text=True)
        if not report.exists():
            message = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            return {t: ("FAIL", message) for t in MATRIX_TARGETS}
        rows = json.loads(report.read_text())["rows"]
    verdicts = {}
    for target in MATRIX_TARGETS:
        mine = [r for r in rows if r["target"] == target]
        failed = [r for r in mine if not r["ok"]]
        unlinked = [r for r in mine if r["ok"] and not r["result"]["binary"]]
        verdict = f"{len(mine) - len(failed)}/{len(mine)} ok"
        if unlinked:
            verdict += " (asm, not linked)"
        details = [f"{r['route']} {r['kernel']} [{r['settings']}]: {r['detail']}" for r in failed + unlinked[:1]]
        verdicts[target] = (verdict, details)
    return verdicts


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--versions", nargs="+", help="Triton versions (default: newest patch of each minor >= 3.2)")
    parser.add_argument("--out", default=str(ROOT / "results" / f"triton-versions-{datetime.date.today()}.txt"))
    parser.add_argument("--timeout", type=int, default=300, help="seconds per compile and per CPU run")
    args = parser.parse_args()
    versions = args.versions or newest_patches()
    rows = []
    for version in versions:
        print(f"== triton {version}", flush=True)
        python = venv_python(version)
        check = run_check(python, args.timeout)
        interp = run_interpreter_probe(python, args.timeout)
        matrix = run_matrix(python, args.timeout)
        rows.append((version, check, interp, matrix))
        print(f"   check {check[0]}; interpreter {interp[0]}; "
              + "; ".join(f"{t} {v}" for t, (v, _) in matrix.items()), flush=True)

    head = ["triton", "check.py cpu_small seeds 1", "solution under interpreter", *MATRIX_TARGETS]
    body = [[v, c[0], i[0], *(m[t][0] for t in MATRIX_TARGETS)] for v, c, i, m in rows]
    widths = [max(len(x) for x in col) for col in zip(head, *body)]
    lines = ["  ".join(x.ljust(w) for x, w in zip(line, widths)).rstrip() for line in [head, *body]]
    lines.insert(1, "-" * max(len(line) for line in lines))
    lines += ["", "Details:"]
    for v, c, i, m in rows:
        notes = [f"check.py: {c[1]}"] * bool(c[1]) + [f"interpreter: {i[1]}"] * bool(i[1])
        notes += [f"{t}: {d}" for t, (_, details) in m.items() for d in details]
        lines += [f"  {v}: {note}" for note in notes] or []
    text = (f"Triton versions, {datetime.date.today()}: python {sys.version.split()[0]}, "
            f"torch from the system site-packages, no GPU.\n"
            f"Compile matrix: python compile_matrix.py --targets {','.join(MATRIX_TARGETS)} "
            "(benchmark + hidden_like launch settings; ok = compiled, no stderr errors, no lost stores).\n\n"
            + "\n".join(lines) + "\n")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text)
    print("\n" + text)
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
