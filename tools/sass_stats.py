"""Compile the solution's kernel for sm_90 without a GPU and count its SASS instructions by kind.

Usage: python tools/sass_stats.py [--num-warps 8] [--dump PATH]
Costs no device time: Triton compiles for a named target, its bundled nvdisasm disassembles.
"""
import argparse
import collections
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


def compile_kernel(num_warps):
    fn = solution._silu_dot_quant_kernel
    signature = {"x_ptr": "*bf16", "grad_y_ptr": "*bf16", "grad_q_ptr": "*i8", "grad_s_ptr": "*fp32",
                 "y_q_ptr": "*i8", "y_s_ptr": "*fp32", "M": "i32", "H": "i32",
                 "GROUP": "constexpr", "INTERPRET": "constexpr"}
    constexprs = {"GROUP": 128, "INTERPRET": False}
    attrs = {(i,): [["tt.divisibility", 16]] for i in range(8)}
    src = ASTSource(fn=fn, signature=signature, constexprs=constexprs, attrs=attrs)
    return triton.compile(src, target=GPUTarget("cuda", 90, 32),
                          options={"num_warps": num_warps, "num_stages": 1, "enable_fp_fusion": False})


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--num-warps", type=int, default=8)
    p.add_argument("--dump")
    a = p.parse_args()
    k = compile_kernel(a.num_warps)
    nvdisasm = Path(triton.__file__).parent / "backends/nvidia/bin/nvdisasm"
    with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as f:
        f.write(k.asm["cubin"])
    sass = subprocess.run([str(nvdisasm), "-c", f.name], capture_output=True, text=True).stdout
    usage = subprocess.run([str(nvdisasm.parent / "cuobjdump"), "-res-usage", f.name],
                           capture_output=True, text=True).stdout
    regs = re.search(r"REG:(\d+)", usage)
    stack = re.search(r"STACK:(\d+)", usage)
    os.unlink(f.name)
    if a.dump:
        Path(a.dump).write_text(sass)
    ops = collections.Counter()
    for line in sass.splitlines():
        m = re.match(r"\s*/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)(\.[A-Z0-9_.]+)?", line)
        if m:
            ops[m.group(1)] += 1
    total = sum(ops.values())
    elems = 128 * 128 / (a.num_warps * 32)   # tile elements per thread
    print(f"warps={a.num_warps}: regs={regs and regs.group(1)} "
          f"stack={stack and stack.group(1)} SASS={total} (static; straight-line kernel), per element ~{total / elems:.1f}")
    for op, n in ops.most_common(40):
        print(f"  {op:10s} {n:6d}  {n / elems:6.2f}/elem")


if __name__ == "__main__":
    main()
