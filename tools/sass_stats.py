"""Compile the solution's kernel for sm_90 without a GPU and count its SASS instructions by kind.

Usage: python tools/sass_stats.py [--route R] [--ieee FEATURE ...] [--settings JSON] [--dump PATH]
       python tools/sass_stats.py --ablation [--route R ...]
--ieee: the features (solution.IEEE_FEATURES) that run in their IEEE form, as a native rung runs them where its
probe found them wrong. --ablation: for each route (default: the native and IEEE rungs this Triton has, the
fused kernel's), every composition it can take
(solution.route_compositions) against the all-native one: registers, stack, static SASS and the opcodes that
change most, in all and in the kernel's body alone ("body": no subroutines, such as div_rn's slow path, though
the calls' argument moves stay). Static counts are not time: a loop body counts once; "executed per element" weighs
each instruction by its loops' trips (compile_matrix.per_element, as the compile matrix's rows give it).
Costs no device time: Triton compiles for a named target, its bundled nvdisasm disassembles.
"""
import argparse
import collections
import json
import re
import sys
import tempfile
from pathlib import Path

import triton
from triton.backends.compiler import GPUTarget

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import compile_matrix  # noqa: E402
import solution  # noqa: E402


def compile_kernel(settings=None, route="nvidia", arch=90, M=8192, H=4096, ieee=()):
    """(the compiled kernel, its launch): the route's main kernel as solution.launch_plan describes it (ieee: its
    features in the IEEE form), compiled for cuda `arch` with every pointer 16-byte aligned and every specialized
    integer divisible by 16 (contiguous inputs)."""
    launch = solution.launch_plan("nvidia", M, H, route=route, arch=arch, sm_count=132, settings=settings,
                                  ieee=ieee)["main"]
    target = GPUTarget("cuda", arch, 32)
    return triton.compile(compile_matrix.ast_source(launch, target), target=target, options=launch.options), launch


def resources(kernel, options=None):
    """(registers, stack bytes, shared bytes, SASS text) of a compiled kernel: registers and stack from the
    compile matrix's `ptxas -v` (compile_matrix.ptxas_usage, the one home of that reading), the SASS from
    the bundled nvdisasm (compile_matrix.disassemble)."""
    with tempfile.TemporaryDirectory() as workdir:
        usage = compile_matrix.ptxas_usage(kernel.asm["ptx"], kernel.metadata.target.arch,
                                           options or {"enable_fp_fusion": False}, workdir)
    return usage["registers"], usage["stack"], kernel.metadata.shared, compile_matrix.disassemble(kernel.asm["cubin"])


def per_element(kernel, launch, sass):
    """The instructions a thread executes per element, as the compile matrix's rows give it
    (compile_matrix.per_element), as text."""
    figure = compile_matrix.per_element(sass, "sass", launch.kernel.__name__, launch.constexprs,
                                        launch.options["num_warps"] * 32, kernel.asm.get("ttir"))
    return compile_matrix.per_element_text({"per_element": figure})


def opcodes(sass, subroutines=True):
    """Counter of a SASS listing's instructions by opcode; subroutines=False: the kernel's body only, up to its
    last EXIT (the subroutines that follow it, such as div_rn's slow path, never run on normal operands)."""
    lines = sass.splitlines()
    if not subroutines:
        last_exit = max((i for i, line in enumerate(lines) if re.search(r"\bEXIT\b", line)), default=len(lines))
        lines = lines[:last_exit + 1]
    ops = collections.Counter()
    for line in lines:
        m = re.match(r"\s*/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)(\.[A-Z0-9_.]+)?", line)
        if m:
            ops[m.group(1)] += 1
    return ops


def ablation(routes):
    """Per route, each composition's registers, stack and static SASS against the all-native one."""
    for route in routes:
        base = base_body = None
        for composition in solution.route_compositions(route):
            kernel, launch = compile_kernel(route=route, ieee=composition)
            regs, stack, _, sass = resources(kernel)
            ops = opcodes(sass)
            base = base or ops
            changed = sorted(((op, ops[op] - base[op]) for op in set(ops) | set(base) if ops[op] != base[op]),
                             key=lambda item: -abs(item[1]))[:8]
            body = sum(opcodes(sass, subroutines=False).values())
            base_body = base_body if base_body is not None else body
            print(f"{route} IEEE {_ieee_label(route, composition)}: regs={regs} stack={stack} "
                  f"static SASS={sum(ops.values())} ({sum(ops.values()) - sum(base.values()):+d}), "
                  f"body {body} ({body - base_body:+d}), executed per element {per_element(kernel, launch, sass)} "
                  + " ".join(f"{op} {n:+d}" for op, n in changed), flush=True)


def _ieee_label(route, composition):
    return ", ".join(composition) or ("none" if solution.ROUTE_TABLE[route].native_math else "every feature")


def main():
    fused = [r for r in solution.ROUTES if not solution.ROUTE_TABLE[r].two_pass]
    p = argparse.ArgumentParser()
    p.add_argument("--route", nargs="+", choices=fused, help="a route of the fused kernel; default: nvidia (with "
                   "--ablation: the native and IEEE rungs this Triton has)")
    p.add_argument("--ieee", nargs="*", default=[], choices=list(solution.IEEE_FEATURES), metavar="FEATURE",
                   help=f"features in the IEEE form: some of {list(solution.IEEE_FEATURES)}")
    p.add_argument("--ablation", action="store_true")
    p.add_argument("--settings", help="JSON LaunchSettings fields (default: the route's for 8192x4096)")
    p.add_argument("--dump")
    a = p.parse_args()
    unavailable = [r for r in a.route or [] if not solution.route_available(r)]
    if unavailable:
        p.error(f"--route {unavailable}: this Triton ({triton.__version__}) has no tl.gather that compiles")
    if a.ablation:
        if a.ieee or a.settings or a.dump:
            p.error("--ablation compiles every composition at the routes' own settings: no --ieee, --settings "
                    "or --dump with it")
        ablation(a.route or [r for r in ("native", "native_per_element", "generic_per_element")
                             if solution.route_available(r)])
        return
    if a.route and len(a.route) > 1:
        p.error("one --route without --ablation")
    route = a.route[0] if a.route else "nvidia"
    turnable = {f for composition in solution.route_compositions(route) for f in composition}
    if set(a.ieee) - turnable:
        can = (f"it can turn {sorted(turnable)}" if turnable else "its arithmetic is fixed (IEEE_FEATURES apply "
               "to the native rungs that a probe proves)")
        p.error(f"--ieee {sorted(set(a.ieee) - turnable)}: not a composition of the {route} route; {can}")
    try:
        settings = solution.LaunchSettings(**json.loads(a.settings)) if a.settings else None
    except (ValueError, TypeError) as exc:
        p.error(f"--settings {a.settings!r}: {exc}; expected a JSON object of {list(solution.LaunchSettings._fields)}")
    k, launch = compile_kernel(settings, route=route, ieee=a.ieee)
    settings = settings or solution.launch_settings("nvidia", 8192, 4096, 132, route)
    regs, stack, shared, sass = resources(k)
    if a.dump:
        Path(a.dump).write_text(sass)
    ops = opcodes(sass)
    total = sum(ops.values())
    print(f"{route} IEEE {_ieee_label(route, a.ieee)} {json.dumps(settings._asdict())}: regs={regs} "
          f"stack={stack} shared={shared} static SASS={total} (loop bodies counted once), body "
          f"{sum(opcodes(sass, subroutines=False).values())} (no subroutines), executed per element "
          f"{per_element(k, launch, sass)} (loops weighted by their trips)")
    for op, n in ops.most_common(40):
        print(f"  {op:10s} {n:6d}")


if __name__ == "__main__":
    main()
