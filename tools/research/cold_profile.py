"""Where a cold start's time goes (GPU): one fresh process per solution with an empty Triton cache, timing one first
call (8192x4096) as a timeline of [start s, duration s, what]: each batch of child compiles, each child's end (the
parent waits for them in order), each compile and load in the parent, each C build (Triton's launchers and
utilities) and the _Device steps. Run from the repository root:

    python tools/research/cold_profile.py solution.py .lab/release_be0cf31.py copies/portable.py

Issue 44's proofs (the ordering check, the self-test, the witness) and the witness's host work are timed each, and
so are the first calls of two further shapes: 2048x4096 (the nvidia route's 16-warp settings) and 1024x2560.
"""
import json, os, subprocess, sys, tempfile
ONE = r'''
import os, sys, time, tempfile, json
os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp()
import torch
sys.path.insert(0, ".")
import harness, triton
import triton.runtime.build as build
torch.cuda.init()
T0 = None
events = []
def now(): return time.perf_counter() - T0 if T0 is not None else -1
def wrap(mod, name, label):
    f = getattr(mod, name)
    def w(*a, **k):
        s = now(); r = f(*a, **k); events.append((round(s, 3), round(now() - s, 3), label(a, k))); return r
    setattr(mod, name, w)
wrap(build, "_build", lambda a, k: "C build " + str(a[0]))
t_import = time.perf_counter()
solution = harness.load_solution(SOL, name="solution_cold")
t_import = time.perf_counter() - t_import
wrap(solution, "_in_children", lambda a, k: "children: " + ",".join(getattr(j[0], "__name__", str(j[0])) for j in a[0]))
wrap(solution, "_child_verdict", lambda a, k: "child done " + str(a[0]))
wrap(solution, "_compile", lambda a, k: "parent compile+load " + a[0].name)
for name in ("_take_first_rung", "_take_rung", "_set_up_rung", "_call_launches", "_prove"):
    if hasattr(solution, name):
        wrap(solution, name, lambda a, k, n=name: n)
for proof in list(getattr(solution, "_PROOF_RUNS", {})):  # issue 44's proofs, each run timed
    def timed(*a, _run=solution._PROOF_RUNS[proof], _label="proof " + proof, **k):
        s = now(); r = _run(*a, **k); events.append((round(s, 3), round(now() - s, 3), _label)); return r
    solution._PROOF_RUNS[proof] = timed
for name in ("_witness_values", "_witness_expected"):
    if hasattr(solution, name):
        wrap(solution, name, lambda a, k, n=name: n)
x, gy = harness.make_inputs(8192, 4096, seed=0, device="cuda")
out = harness.new_outputs(8192, 4096, device="cuda")
torch.cuda.synchronize()
T0 = time.perf_counter()
solution.silu_dot_fwd_bwd_quant_fuse(x, gy, *out)
torch.cuda.synchronize()
first = now()
print(json.dumps({"solution": SOL, "import_s": round(t_import, 3), "first_call_s": round(first, 3),
                  "events": sorted(events)}))
for M, H in ((2048, 4096), (1024, 2560)):  # a further shape of new launch settings (16 warps), one of the same
    events.clear()
    x, gy = harness.make_inputs(M, H, seed=0, device="cuda")
    out = harness.new_outputs(M, H, device="cuda")
    torch.cuda.synchronize()
    T0 = time.perf_counter()
    solution.silu_dot_fwd_bwd_quant_fuse(x, gy, *out)
    torch.cuda.synchronize()
    print(json.dumps({"solution": SOL, "shape": f"{M}x{H}", "first_call_s": round(now(), 3),
                      "events": sorted(events)}))
'''
for sol in sys.argv[1:]:
    r = subprocess.run([sys.executable, "-c", f"SOL={sol!r}\n" + ONE], capture_output=True, text=True)
    print(r.stdout[-6000:]); print(r.stderr[-3000:])
