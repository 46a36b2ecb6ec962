"""How often the witness's runs see a race: a solution (copy) called once at one shape in fresh processes, each with
the witness run RUNS times on a rung relying on an ordering, inputs out of L2 before each run; prints each process's
warnings (a race's names every run's wrong elements) and whether the call's bytes match the reference.

    python tools/research/race_runs.py SOLUTION [--shape ExTxH] [--runs N] [--processes P]
"""
import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ONE = """
import sys, warnings, torch
sys.path.insert(0, {root!r})
import harness
solution = harness.load_solution({solution!r}, name="race_runs")
if {runs}:
    solution._WITNESS_RUNS = {runs}
x, gy = harness.make_inputs({M}, {H}, seed=0, device="cuda")
out = harness.new_outputs({M}, {H}, device="cuda")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    solution.silu_dot_fwd_bwd_quant_fuse(x, gy, *out)
torch.cuda.synchronize()
said = [str(w.message) for w in caught if "silu_dot" in str(w.message)]
same = harness.compare(out, harness.run_reference(x, gy))["passed"]
print("route", solution.route_for("cuda"), "| judge passed", same, "| race found", any("a race" in s for s in said))
for s in said:
    print("  ", s[:600])
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("solution")
    parser.add_argument("--shape", default="8x128x2560")
    parser.add_argument("--runs", type=int, default=0, help="the witness's runs (0: the solution's own)")
    parser.add_argument("--processes", type=int, default=10)
    args = parser.parse_args()
    e, t, h = (int(v) for v in args.shape.split("x"))
    found = 0
    for p in range(args.processes):
        code = ONE.format(root=str(ROOT), solution=str(Path(args.solution).resolve()), runs=args.runs, M=e * t, H=h)
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
        text = proc.stdout + (proc.stderr.strip().splitlines() or [""])[-1] if proc.returncode else proc.stdout
        print(f"process {p + 1}:", text.strip())
        found += "race found True" in proc.stdout
    print(f"race found before the first output in {found} of {args.processes} fresh processes "
          f"({args.solution}, {args.shape}, runs {args.runs or 'default'})")


if __name__ == "__main__":
    main()
