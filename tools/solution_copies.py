"""Copies of solution.py that put the H100 in another chip's place, for the GPU records.

    python tools/solution_copies.py OUTDIR [--solution PATH]

Writes into OUTDIR:
  portable.py             NVIDIA's ladder replaced by the portable one (native rungs first, each proven by
                          its probe at first use): what Hygon, Iluvatar, MetaX, Moore Threads and T-Head take.
  mthreads_settings.py    portable.py whose NVIDIA entry launches as Moore Threads' does (its warps a
                          program and thread cap), the device still recognised as NVIDIA.
  flushing_division.py    portable.py with the sigmoid table off (as where tl.gather is missing) and the
                          native sigmoid's division (reciprocal_native) flushing a subnormal quotient to
                          zero, as Triton 3.0-3.5 compile tl.math.div_rn on NVIDIA (div.rn.ftz.f32).
Each change is appended to, or replaced once in, the solution's text: a change that no longer applies
stops the tool with a one-line error rather than writing a copy that is not what its name says.
"""
import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PORTABLE = '''

# solution_copies.py: NVIDIA takes the portable ladder.
BACKENDS["nvidia"] = BACKENDS["nvidia"]._replace(routes=BACKENDS["unknown"].routes)
'''
MTHREADS_SETTINGS = '''
# solution_copies.py: NVIDIA launches as Moore Threads does.
BACKENDS["nvidia"] = BACKENDS["nvidia"]._replace(**{field: getattr(BACKENDS["mthreads"], field) for field in (
    "warps", "max_threads", "max_chunk", "max_y_chunk", "options")})
'''
TABLE_OFF = '''
# solution_copies.py: the sigmoid per element, as on a Triton without tl.gather.
_SIGMOID_TABLE = False
'''
FLUSH = '''

@triton.jit
def _flushed(q):
    """What a flushing division makes of a subnormal quotient (solution_copies.py)."""
    return tl.where(tl.abs(q) < 1.1754943508222875e-38, 0.0, q)
'''
NATIVE_DIVISION = "    return tl.math.div_rn(1.0, d)\n"


def replaced_once(text, old, new, what):
    if text.count(old) != 1:
        sys.exit(f"solution_copies.py: cannot make {what}: expected {old.strip()!r} once in the solution, "
                 f"found it {text.count(old)} times")
    return text.replace(old, new)


def copies(solution_text):
    """{file name: text} of every copy."""
    portable = solution_text + PORTABLE
    flushing = replaced_once(portable, NATIVE_DIVISION, "    return _flushed(tl.math.div_rn(1.0, d))\n",
                             "flushing_division.py") + TABLE_OFF + FLUSH
    return {"portable.py": portable,
            "mthreads_settings.py": portable + MTHREADS_SETTINGS,
            "flushing_division.py": flushing}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("outdir")
    parser.add_argument("--solution", default=str(ROOT / "solution.py"))
    args = parser.parse_args()
    out = Path(args.outdir)
    out.mkdir(parents=True, exist_ok=True)
    for name, text in copies(Path(args.solution).read_text()).items():
        (out / name).write_text(text)
        print(out / name)


if __name__ == "__main__":
    main()
