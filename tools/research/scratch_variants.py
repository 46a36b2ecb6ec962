"""Lab copies that price the fused rungs' scratch write-back: a solution with one route's record changed (persistent,
threads, slices, y rows), as sweep.py and dram_bytes.py take them ("solution" of a variant).

Each copy is the solution's text with NVIDIA's ladder replaced by the portable one (solution_copies.PORTABLE) and
one ROUTE_TABLE entry replaced; an mt_ copy also launches as Moore Threads does (solution_copies.MTHREADS_SETTINGS).
The gen_ copies change `generic`, a route dropped since: they need a solution that has it (445d650's, which the
records in results/scratch-bytes-2026-11-28/ ran).
Usage: python tools/research/scratch_variants.py OUTDIR [--solution PATH]
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from solution_copies import MTHREADS_SETTINGS, PORTABLE, ROOT  # noqa: E402

# name: (route, the Route fields changed); "base" changes none.
VARIANTS = {
    "base": (None, {}),
    "npe_p512c16": ("native_per_element", {"persistent": True, "chunk": 16}),
    "npe_p512c16y32": ("native_per_element", {"persistent": True, "chunk": 16, "y_chunk": 32}),
    "npe_p512c32": ("native_per_element", {"persistent": True}),
    "npe_p256c32": ("native_per_element", {"persistent": True, "threads": 256}),
    "npe_p256c32y32": ("native_per_element", {"persistent": True, "threads": 256, "y_chunk": 32}),
    "npe_p256c16": ("native_per_element", {"persistent": True, "threads": 256, "chunk": 16}),
    "gpe_p512c16": ("generic_per_element", {"persistent": True, "chunk": 16}),
    "gen_p256": ("generic", {"persistent": True}),
    "gen_p512c16": ("generic", {"persistent": True, "threads": 512, "chunk": 16}),
    "nat_512c16": ("native", {"threads": 512, "chunk": 16}),
}


def variant_text(solution_text, route, fields, launch=""):
    """The copy: launch is appended before the route's change (MTHREADS_SETTINGS, or nothing)."""
    text = solution_text + PORTABLE + launch
    if route is None:
        return text
    changed = ", ".join(f"{name}={value!r}" for name, value in fields.items())
    return text + f'\n# scratch_variants.py\nROUTE_TABLE["{route}"] = ROUTE_TABLE["{route}"]._replace({changed})\n'



def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("outdir")
    parser.add_argument("--solution", default=str(ROOT / "solution.py"))
    args = parser.parse_args()
    out = Path(args.outdir)
    out.mkdir(parents=True, exist_ok=True)
    text = Path(args.solution).read_text()
    for name, (route, fields) in VARIANTS.items():
        (out / f"{name}.py").write_text(variant_text(text, route, fields))
        (out / f"mt_{name}.py").write_text(variant_text(text, route, fields, MTHREADS_SETTINGS))
        print(out / f"{name}.py", out / f"mt_{name}.py")


if __name__ == "__main__":
    main()
