"""Two research copies of copies/fault_fma_split.py (tools/solution_copies.py writes it) that bound what any IEEE
division without fma could cost in the fused kernel: its quantizer's IEEE form (tl.math.div_rn) replaced by

  division_floor.py    q = v * (1/s): one multiply, the least any form can cost. Not exact: the group's absmax
                       element, whose quotient lies within an ulp of 127, and quotients near other integers
                       truncate wrong.
  division_bracket.py  q = v * (1/s) and v * (1/s) * (1 + 2**-21) truncated alike are exact; a slice holding
                       any other element (the absmax's excluded, so still not exact there) divides with div_rn,
                       through a block-wide reduction and branch: the cheapest fast path of a branching form.

    python tools/research/division_bounds.py [--copies DIR]

Both are timed by sweep.py (variants-issue34-division-bounds.json); they are bounds, never solutions: their
differing bytes are expected. PERF_NOTES.md, fifteenth round, says what they showed.
"""
import argparse
import sys
from pathlib import Path

IEEE_DIVISION = "    if IEEE_DIVISION:\n        q = tl.math.div_rn(v, scale)\n"
FORMS = {
    "division_floor.py": "    if IEEE_DIVISION:\n        q = v * inv_scale  # division_bounds.py: the floor, not exact\n",
    "division_bracket.py": '''    if IEEE_DIVISION:
        # division_bounds.py: q and q * (1 + 2**-21) truncate alike (exact there); a slice holding another
        # element (the absmax's, near 127, left out: not exact there) divides with div_rn.
        q = v * inv_scale
        q_above = v * (inv_scale * 1.000000476837158)
        near = (q.to(tl.int32) != q_above.to(tl.int32)) & (tl.abs(q) < 126.5)
        if tl.max(tl.max(near.to(tl.int32), 1), 0) > 0:
            q = tl.math.div_rn(v, scale)
''',
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", default="copies", help="where fault_fma_split.py is and the bounds go")
    args = parser.parse_args()
    source = Path(args.copies) / "fault_fma_split.py"
    if not source.is_file():
        sys.exit(f"division_bounds.py: {source} not found: run python tools/solution_copies.py {args.copies} first")
    text = source.read_text()
    if text.count(IEEE_DIVISION) != 1:
        sys.exit(f"division_bounds.py: {source} no longer has quantize's IEEE division line once; "
                 "expected 'q = tl.math.div_rn(v, scale)' under 'if IEEE_DIVISION:'")
    for name, form in FORMS.items():
        (Path(args.copies) / name).write_text(text.replace(IEEE_DIVISION, form))
        print(Path(args.copies) / name)


if __name__ == "__main__":
    main()
