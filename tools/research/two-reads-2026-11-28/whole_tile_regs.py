import sys, tempfile
from pathlib import Path
# The repository root (solution.py, compile_matrix.py) and this folder: the session imported the kernel as `wt` from
# /work/main/.lab/whole_tile (not kept); whole_tile_kernel.py beside this file is the kernel its record names.
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2])); sys.path.insert(0, str(HERE))
import triton, solution, compile_matrix as cm
from triton.backends.compiler import GPUTarget
import whole_tile_kernel as wt
target = GPUTarget("cuda", 90, 32)
def regs(kernel, route, warps, chunk=32, y_chunk=64, maxnreg=None, arch=90):
    plan = solution.launch_plan("nvidia", 8192, 4096, route=route) if False else None
    rc = solution._route_constexprs(route, arch)
    cons = {"CHUNK": chunk, "Y_CHUNK": y_chunk, **rc, "PERSISTENT": False, "INDEX_64": False, "PREFETCH": False}
    opts = {"num_warps": warps, "num_stages": 1, "enable_fp_fusion": False}
    if maxnreg: opts["maxnreg"] = maxnreg
    launch = solution.KernelLaunch("main", kernel, (1, 1, 1), solution._signature(kernel), cons, opts)
    src = cm.ast_source(launch, target)
    c = triton.compile(src, target=target, options=opts)
    with tempfile.TemporaryDirectory() as d:
        u = cm.ptxas_usage(c.asm["ptx"], 90, opts, d)
    return u, c.metadata.shared
for route in sys.argv[1].split(","):
    for w in (8, 16, 32):
        print(route, "whole", w, regs(wt._whole_tile_kernel, route, w), flush=True)
    print(route, "shipped16", regs(solution._silu_mul_quant_kernel, route, 16), flush=True)
