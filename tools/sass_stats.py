"""Compile the solution's kernel for sm_90 without a GPU and count its SASS instructions by kind.

Usage: python tools/sass_stats.py [--settings JSON] [--dump PATH]
Costs no device time: Triton compiles for a named target, its bundled nvdisasm disassembles.
"""
import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import solution  # noqa: E402


def compile_kernel(settings):
    fn = solution._silu_dot_quant_kernel
    signature = {"x_ptr": "*bf16", "grad_y_ptr": "*bf16", "grad_q_ptr": "*i8", "grad_s_ptr": "*fp32",
                 "y_q_ptr": "*i8", "y_s_ptr": "*fp32", "table_ptr": "*fp32", "scratch_ptr": "*bf16",
                 "M": "i32", "H": "i32"}
    options = {"num_warps": settings["num_warps"], "num_stages": 1, "enable_fp_fusion": False}
    if settings.get("maxnreg"):
        options["maxnreg"] = settings["maxnreg"]
    constexprs = {"GROUP": 128, "LUT_LO": solution._LUT_LO, "LUT_N": solution._LUT_N,
                  **{k.upper(): v for k, v in settings.items() if k not in ("num_warps", "maxnreg")},
                  "INTERPRET": False}
    signature.update({k: "constexpr" for k in constexprs})
    attrs = {(i,): [["tt.divisibility", 16]] for i in range(10)}
    src = ASTSource(fn=fn, signature=signature, constexprs=constexprs, attrs=attrs)
    return triton.compile(src, target=GPUTarget("cuda", 90, 32), options=options)


def resources(kernel):
    """(registers, stack bytes, shared bytes, SASS text) of a compiled kernel, read with the bundled tools."""
    nvdisasm = Path(triton.__file__).parent / "backends/nvidia/bin/nvdisasm"
    with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as f:
        f.write(kernel.asm["cubin"])
    sass = subprocess.run([str(nvdisasm), "-c", f.name], capture_output=True, text=True).stdout
    usage = subprocess.run([str(nvdisasm.parent / "cuobjdump"), "-res-usage", f.name],
                           capture_output=True, text=True).stdout
    os.unlink(f.name)
    regs = re.search(r"REG:(\d+)", usage)
    stack = re.search(r"STACK:(\d+)", usage)
    return (int(regs.group(1)) if regs else None, int(stack.group(1)) if stack else None,
            kernel.metadata.shared, sass)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--settings", help="JSON launch settings (default: solution._launch_settings)")
    p.add_argument("--dump")
    a = p.parse_args()
    settings = json.loads(a.settings) if a.settings else solution._launch_settings(8192, 4096)
    k = compile_kernel(settings)
    regs, stack, shared, sass = resources(k)
    if a.dump:
        Path(a.dump).write_text(sass)
    ops = collections.Counter()
    for line in sass.splitlines():
        m = re.match(r"\s*/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)(\.[A-Z0-9_.]+)?", line)
        if m:
            ops[m.group(1)] += 1
    total = sum(ops.values())
    print(f"{json.dumps(settings)}: regs={regs} stack={stack} "
          f"shared={shared} static SASS={total} (loop bodies counted once)")
    for op, n in ops.most_common(40):
        print(f"  {op:10s} {n:6d}")


if __name__ == "__main__":
    main()
