"""Compile the solution's kernel for sm_90 without a GPU and count its SASS instructions by kind.

Usage: python tools/sass_stats.py [--settings JSON] [--dump PATH]
Costs no device time: Triton compiles for a named target, its bundled nvdisasm disassembles.
"""
import argparse
import collections
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import triton
from triton.backends.compiler import GPUTarget

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import compile_matrix  # noqa: E402
import solution  # noqa: E402


def compile_kernel(settings=None, route="nvidia", arch=90, M=8192, H=4096):
    """The route's main kernel as solution.launch_plan describes it, compiled for cuda `arch` with every
    pointer 16-byte aligned and every specialized integer divisible by 16 (contiguous inputs)."""
    launch = solution.launch_plan("nvidia", M, H, route=route, arch=arch, sm_count=132, settings=settings)["main"]
    target = GPUTarget("cuda", arch, 32)
    return triton.compile(compile_matrix.ast_source(launch, target), target=target, options=launch.options)


def resources(kernel, options=None):
    """(registers, stack bytes, shared bytes, SASS text) of a compiled kernel: registers and stack from the
    compile matrix's `ptxas -v` (compile_matrix.ptxas_usage, the one home of that reading), the SASS from
    the bundled nvdisasm."""
    nvdisasm = Path(triton.__file__).parent / "backends/nvidia/bin/nvdisasm"
    with tempfile.TemporaryDirectory() as workdir:
        cubin = Path(workdir) / "kernel.cubin"
        cubin.write_bytes(kernel.asm["cubin"])
        sass = subprocess.run([str(nvdisasm), "-c", str(cubin)], capture_output=True, text=True).stdout
        usage = compile_matrix.ptxas_usage(kernel.asm["ptx"], kernel.metadata.target.arch,
                                           options or {"enable_fp_fusion": False}, workdir)
    return usage["registers"], usage["stack"], kernel.metadata.shared, sass


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--settings", help="JSON LaunchSettings fields (default: the nvidia route's for 8192x4096)")
    p.add_argument("--dump")
    a = p.parse_args()
    settings = solution.LaunchSettings(**json.loads(a.settings)) if a.settings else None
    k = compile_kernel(settings)
    settings = settings or solution.launch_settings("nvidia", 8192, 4096, 132)
    regs, stack, shared, sass = resources(k)
    if a.dump:
        Path(a.dump).write_text(sass)
    ops = collections.Counter()
    for line in sass.splitlines():
        m = re.match(r"\s*/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)(\.[A-Z0-9_.]+)?", line)
        if m:
            ops[m.group(1)] += 1
    total = sum(ops.values())
    print(f"{json.dumps(settings._asdict())}: regs={regs} stack={stack} "
          f"shared={shared} static SASS={total} (loop bodies counted once)")
    for op, n in ops.most_common(40):
        print(f"  {op:10s} {n:6d}")


if __name__ == "__main__":
    main()
