"""Whether two solution files compile a route's kernels to the same PTX, without a GPU.

    python tools/ptx_diff.py --baseline PATH [--solution PATH] [--routes R ...] [--shapes MxH ...] [--arch 90]

Each kernel of launch_plan("nvidia", M, H, route=R) is compiled for cuda:ARCH by the Triton installed here
and its PTX compared with the baseline's, less what only names source lines (.loc, .file, line labels,
comments and the debug sections). Identical PTX is the same binary: a change that leaves a route's kernels
identical cannot change its speed, so no GPU run is needed to show it. Prints one line a route and shape,
and the first differing lines of each kernel that differs. Exit code 0 when every kernel is identical.
"""
import argparse
import difflib
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import compile_matrix  # noqa: E402
import harness  # noqa: E402


def code_lines(ptx):
    """The PTX's instructions and declarations: no debug sections, comments, .loc/.file or line labels."""
    text = re.sub(r"//.*", "", ptx.split("\t.section\t.debug")[0])
    return [line.rstrip() for line in text.splitlines()
            if line.strip() and not line.strip().startswith((".loc", ".file", "$L__"))]


def compiled(solution, route, M, H, arch):
    import triton
    from triton.backends.compiler import GPUTarget
    target = GPUTarget("cuda", arch, 32)
    return {name: code_lines(triton.compile(compile_matrix.ast_source(launch, target), target=target,
                                            options=launch.options).asm["ptx"])
            for name, launch in solution.launch_plan("nvidia", M, H, route=route, arch=arch, sm_count=132).items()}


def shape(text):
    """An MxH argument: M and H multiples of 128 (the kernels' groups)."""
    try:
        M, H = (int(n) for n in text.split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not MxH, e.g. 8192x4096") from None
    if M <= 0 or H <= 0 or M % 128 or H % 128:
        raise argparse.ArgumentTypeError(f"{text!r}: M and H must be positive multiples of 128")
    return M, H


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", required=True)
    parser.add_argument("--solution", default=str(ROOT / "solution.py"))
    parser.add_argument("--routes", nargs="+", default=["nvidia", "nvidia_per_element"])
    parser.add_argument("--shapes", nargs="+", default=[(8192, 4096), (4096, 2560)], type=shape,
                        help="MxH, multiples of 128")
    parser.add_argument("--arch", type=int, default=90)
    args = parser.parse_args()
    try:
        solution = harness.load_solution(args.solution, name="solution_ptx")
        baseline = harness.load_solution(args.baseline, name="baseline_ptx")
    except harness.SolutionError as exc:
        parser.error(str(exc))
    unknown = [r for r in args.routes if r not in solution.ROUTES or r not in baseline.ROUTES]
    if unknown:
        parser.error(f"--routes {unknown} are not routes of both files; expected some of {solution.ROUTES}")
    identical = True
    for route in args.routes:
        for M, H in args.shapes:
            ours, theirs = compiled(solution, route, M, H, args.arch), compiled(baseline, route, M, H, args.arch)
            same = {name: ours.get(name) == lines for name, lines in theirs.items()}
            print(f"{route} {M}x{H}: " + ", ".join(f"{n} {'identical' if s else 'differs'}" for n, s in same.items()))
            for name in (n for n, s in same.items() if not s):
                identical &= name not in ("main", "grad", "y")  # a per-device kernel runs once, not per call
                diff = difflib.unified_diff(theirs[name], ours.get(name, []), lineterm="", n=0)
                print("    " + "\n    ".join(list(diff)[2:8]))
    print("every per-call kernel identical" if identical else "a per-call kernel differs")
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
