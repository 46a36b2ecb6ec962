"""The lab copies of results/noinline-persistent-2026-11-28 (run from the repository root at 29e56a5)."""
import sys
sys.path.insert(0, "tools")
from solution_copies import MTHREADS_SETTINGS, PORTABLE
base = open("solution.py").read()
ni = base.replace("@triton.jit\ndef _silu_mul_quant_tile(", "@triton.jit(noinline=True)\ndef _silu_mul_quant_tile(")
def route(text, name, **fields):
    ch = ", ".join(f"{k}={v!r}" for k, v in fields.items())
    return text + PORTABLE + f'\nROUTE_TABLE["{name}"] = ROUTE_TABLE["{name}"]._replace({ch})\n'
copies = {
  "ni_p256c16": route(ni, "native_per_element", persistent=True, threads=256, chunk=16),
  "ni_p512c16": route(ni, "native_per_element", persistent=True, threads=512, chunk=16),
  "ni_p512c32": route(ni, "native_per_element", persistent=True, threads=512, chunk=32),
  "in_p256c16": route(base, "native_per_element", persistent=True, threads=256, chunk=16),
  "ni_gpe_p256c16": route(ni, "generic_per_element", persistent=True, threads=256, chunk=16),
  "ni_mt_p": route(ni, "native_per_element", persistent=True) + MTHREADS_SETTINGS,
}
for k, v in copies.items():
    open(f".lab/ni/{k}.py", "w").write(v)
