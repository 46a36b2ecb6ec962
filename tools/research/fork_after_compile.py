"""Why forked compile children died on Triton 3.0 and 3.1 once the process had compiled other kernels, reproduced
without a GPU: this process compiles a kernel of its own first (for a stand-in target, cuda:90 by default), as
another solution's JIT would, then asks a solution's _in_children to compile the solution's main kernel in a forked
child, as its first call at a new shape does.

    python tools/research/fork_after_compile.py [--solution PATH] [--collect] [--no-parent-compile]

--collect makes the child run a full garbage collection before it compiles (a large compile triggers one sooner
or later; the kit's own smaller compiles on a CPU seldom do). Prints the child's verdict. On Triton 3.0/3.1 a
solution that forks without freezing the parent's garbage gives "no child" (the child hangs in a thread join
until the timeout) or "died" (SIGSEGV, as on the GPU); one that freezes it gives "compiled".
"""
import argparse
import gc
import sys
import time
from pathlib import Path

import torch
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import harness  # noqa: E402


@triton.jit
def _twice(v):
    return v * 2


@triton.jit
def _plus_one(v):
    return v + 1


@triton.jit
def _other_kernel(out, BLOCK: tl.constexpr):
    """Another solution's kernel: with helpers, so that MLIR's inliner works on several functions in parallel and
    the context's thread pool starts its threads."""
    offsets = tl.arange(0, BLOCK)
    tl.store(out + offsets, _plus_one(_twice(offsets.to(tl.float32))))


def compile_other(target, block):
    if harness.version_tuple(triton.__version__) >= (3, 3):
        source = ASTSource(_other_kernel, {"out": "*fp32", "BLOCK": "constexpr"}, constexprs={"BLOCK": block})
    else:
        source = ASTSource(_other_kernel, {0: "*fp32"}, constants={1: block})
    triton.compile(source, target=target)


class Collecting:
    """The solution's kernel, compiled after a full garbage collection in the child."""

    def __init__(self, kernel):
        self.kernel = kernel

    def warmup(self, *args, **kwargs):
        gc.collect()
        return self.kernel.warmup(*args, **kwargs)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--solution", default=str(harness.ROOT / "solution.py"))
    parser.add_argument("--collect", action="store_true")
    parser.add_argument("--no-parent-compile", action="store_true")
    parser.add_argument("--target", default="cuda:90")
    parser.add_argument("--timeout", type=float, default=20.0, help="the child's deadline, seconds")
    args = parser.parse_args()
    backend, _, arch = args.target.partition(":")
    target = GPUTarget(backend, int(arch) if arch.isdigit() else arch, 64 if backend == "hip" else 32)
    solution = harness.load_solution(args.solution, name="solution_under_test")
    solution.CHILD_COMPILE_TIMEOUT_S = args.timeout
    if not args.no_parent_compile:
        compile_other(target, 128)
    M = H = 128
    launch = solution.launch_plan("nvidia" if backend == "cuda" else "amd", M, H, route="generic_per_element",
                                  arch=90)["main"]
    tensors = {"*bf16": torch.bfloat16, "*i8": torch.int8, "*fp32": torch.float32}
    kernel_args = tuple(torch.zeros(M * H * 2, dtype=tensors[kind]) if kind in tensors else M
                        for name, kind in solution.KERNEL_ARGUMENTS if name in launch.signature)
    kernel = Collecting(launch.kernel) if args.collect else launch.kernel
    begun = time.monotonic()
    [(verdict, detail)] = solution._in_children(
        [(kernel, kernel_args, launch.grid, {**launch.constexprs, **launch.options})], target, 0)
    print(f"triton {triton.__version__}, {Path(args.solution).name}, parent compiled first: "
          f"{not args.no_parent_compile}, child collects: {args.collect}: {verdict} {detail} "
          f"({time.monotonic() - begun:.1f} s)")


if __name__ == "__main__":
    main()
