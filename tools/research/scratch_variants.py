"""Lab copies that price the fused rungs' scratch write-back: a solution with one route's record changed (persistent,
threads, slices, y rows), as sweep.py and dram_bytes.py take them ("solution" of a variant).

Each copy is the solution's text with NVIDIA's ladder replaced by the portable one (solution_copies.PORTABLE) and
one ROUTE_TABLE entry replaced; an mt_ copy also launches as Moore Threads does (solution_copies.MTHREADS_SETTINGS).
The gen_ copies change `generic`, a route dropped since: they need a solution that has it (445d650's, which the
records in results/scratch-bytes-2026-11-28/ ran).
Usage: python tools/research/scratch_variants.py OUTDIR [--solution PATH]
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from solution_copies import MTHREADS_SETTINGS, PORTABLE, write_copies  # noqa: E402

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



def copies(solution_text):
    """{file name: text} of every variant, and of each with Moore Threads' launch (mt_)."""
    made = {}
    for name, (route, fields) in VARIANTS.items():
        if route is not None and f'Route("{route}"' not in solution_text:
            continue  # a route this solution no longer has (gen_: `generic`)
        made[f"{name}.py"] = variant_text(solution_text, route, fields)
        made[f"mt_{name}.py"] = variant_text(solution_text, route, fields, MTHREADS_SETTINGS)
    return made


def main():
    write_copies(__doc__.splitlines()[0], copies)


if __name__ == "__main__":
    main()
