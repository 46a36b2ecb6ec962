"""Two research copies of the fma-fault copy (tools/solution_copies.py's fault_fma_split.py) that bound what any
IEEE division without fma could cost in the fused kernel: its quantizer's IEEE form (tl.math.div_rn) replaced by

  division_floor.py    q = v * (1/s): one multiply, the least any form can cost. Not exact: the group's absmax
                       element, whose quotient lies within an ulp of 127, and quotients near other integers
                       truncate wrong.
  division_bracket.py  q = v * (1/s) and v * (1/s) * (1 + 2**-21) truncated alike are exact; a slice holding
                       any other element (the absmax's excluded, so still not exact there) divides with div_rn,
                       through a block-wide reduction and branch: the cheapest fast path of a branching form.

    python tools/research/division_bounds.py [--solution PATH] [--copies DIR]

Both are timed by sweep.py (variants-issue34-division-bounds.json); they are bounds, never solutions: their
differing bytes are expected. PERF_NOTES.md, fifteenth round, says what they showed.
"""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))
import harness  # noqa: E402
import solution_copies  # noqa: E402

IEEE_DIVISION = "    if IEEE_DIVISION & IEEE:\n        q = tl.math.div_rn(v, scale)\n"
FORMS = {
    "division_floor.py": "    if IEEE_DIVISION & IEEE:\n        q = v * inv_scale  # division_bounds.py: the floor, not exact\n",
    "division_bracket.py": '''    if IEEE_DIVISION & IEEE:
        # division_bounds.py: q and q * (1 + 2**-21) truncate alike (exact there); a slice holding another
        # element (the absmax's, near 127, left out: not exact there) divides with div_rn.
        q = v * inv_scale
        q_above = v * (inv_scale * 1.000000476837158)
        near = (q.to(tl.int32) != q_above.to(tl.int32)) & (tl.abs(q) < 126.5)
        if tl.max(tl.max(near.to(tl.int32), 1), 0) > 0:
            q = tl.math.div_rn(v, scale)
''',
}


def bounds(solution_text):
    """{file name: text} of the two bounds, from the fma-fault copy of solution_text."""
    fault = solution_copies.copies(solution_text)["fault_fma_split.py"]
    return {name: solution_copies.replaced_once(fault, IEEE_DIVISION, form, name) for name, form in FORMS.items()}


def main():
    parser = harness.ArgumentParser(prog="division_bounds.py", description=__doc__.splitlines()[0])
    parser.add_argument("--solution", default=str(ROOT / "solution.py"))
    parser.add_argument("--copies", default="copies", help="where the bounds are written")
    args = parser.parse_args()
    out = Path(args.copies)
    out.mkdir(parents=True, exist_ok=True)
    for name, text in bounds(Path(args.solution).read_text()).items():
        (out / name).write_text(text)
        print(out / name)


if __name__ == "__main__":
    main()
