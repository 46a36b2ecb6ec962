"""Why forked compile children died on Triton 3.0 and 3.1 once the process had compiled other kernels, reproduced
without a GPU (a stand-in target: nothing is launched). This process compiles a kernel with helpers first, as
another solution's JIT would (MLIR's inliner then works on several functions at once, and the context starts its
thread pool); Triton 3.0/3.1 leave that MLIR context to the garbage collector. Then it forks a child that compiles
another kernel, as the kit's compile children do: a child that collects the context runs its destructor, which
joins threads the child does not have.

    python tools/research/fork_after_compile.py [--no-parent-compile] [--freeze] [--collect] [--timeout S]

--freeze: the parent freezes its garbage (gc.freeze) around the fork and the child collects nothing (gc.disable),
as the kit's children now do. --collect: the child runs a full collection before it compiles (a large compile
triggers one sooner or later). Prints the child's fate: on Triton 3.1 on a CPU the child hangs (cut off at the
timeout; on an H200 it died of SIGSEGV); with --freeze, or without the parent's compile, it compiles.
"""
import argparse
import gc
import os
import signal
import sys
import time
from pathlib import Path

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource


@triton.jit
def _twice(v):
    return v * 2


@triton.jit
def _plus_one(v):
    return v + 1


@triton.jit
def _kernel(out, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(out + offsets, _plus_one(_twice(offsets.to(tl.float32))))


def compile_for(target, block):
    version = tuple(int(p) for p in triton.__version__.split(".")[:2])
    if version >= (3, 3):
        source = ASTSource(_kernel, {"out": "*fp32", "BLOCK": "constexpr"}, constexprs={"BLOCK": block})
    else:
        source = ASTSource(_kernel, {0: "*fp32"}, constants={1: block})
    triton.compile(source, target=target)


def main():
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    import harness
    parser = harness.ArgumentParser(prog="fork_after_compile.py", description=__doc__,
                                    formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-parent-compile", action="store_true")
    parser.add_argument("--freeze", action="store_true")
    parser.add_argument("--collect", action="store_true")
    parser.add_argument("--timeout", type=harness.positive_seconds, default=20.0)
    args = parser.parse_args()
    target = GPUTarget("cuda", 90, 32)
    if not args.no_parent_compile:
        compile_for(target, 128)
    if args.freeze:
        gc.freeze()
    pid = os.fork()
    if pid == 0:
        if args.freeze:
            gc.disable()
        if args.collect:
            gc.collect()
        compile_for(target, 256)
        os._exit(0)
    if args.freeze:
        gc.unfreeze()
    begun, status = time.monotonic(), None
    while status is None and time.monotonic() - begun < args.timeout:
        done, reaped = os.waitpid(pid, os.WNOHANG)
        status = reaped if done else time.sleep(0.01)
    if status is None:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        fate = f"hung (killed after {args.timeout:.0f} s)"
    elif os.WIFSIGNALED(status):
        fate = f"died of {signal.Signals(os.WTERMSIG(status)).name}"
    else:
        fate = "compiled" if os.WEXITSTATUS(status) == 0 else f"exited with {os.WEXITSTATUS(status)}"
    print(f"triton {triton.__version__}; parent compiled first: {not args.no_parent_compile}; freeze: {args.freeze}; "
          f"child collects first: {args.collect}: the child {fate} ({time.monotonic() - begun:.1f} s)")


if __name__ == "__main__":
    main()
