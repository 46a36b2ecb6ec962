"""The compile matrix (check.py --targets): the solution compiles for NVIDIA and AMD targets on this CPU
machine, and a solution that puts inline PTX on the AMD route fails it."""
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

import compile_matrix
import harness
from fixtures.broken_solutions import COMPILE
from test_check import make_broken

ROOT = Path(__file__).resolve().parents[1]


def run_targets(targets, tmp_path, solution=ROOT / "solution.py"):
    report = tmp_path / "matrix.json"
    # Compiling needs Triton without the interpreter that conftest.py turns on.
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    proc = subprocess.run([sys.executable, str(ROOT / "check.py"), "--targets", targets, "--solution", str(solution),
                           "--json", str(report)], capture_output=True, text=True, cwd=ROOT, env=env, timeout=900)
    return proc, (json.loads(report.read_text()) if report.exists() else None)


# With --slow only. cuda:90 with this Triton is compiled by every CI run's judge run too (the NVIDIA chip's cuda:90
# row, Triton 3.6); hip:gfx942 is the amd backend's, no judge chip's (the judge's HIP chips compile for gfx90a in the
# judge run), and took 117 s of a 2-core CI's tests, which with the judge run had passed 20 minutes.
@pytest.mark.parametrize("target, backend", [pytest.param("cuda:90", "nvidia", marks=pytest.mark.slow),
                                             pytest.param("hip:gfx942", "amd", marks=pytest.mark.slow)])
def test_every_kernel_compiles_for_cuda_90_and_hip_gfx942(target, backend, tmp_path):
    proc, report = run_targets(target, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    compiled = {(r["target"], r["kernel"]) for r in report["rows"] if r["ok"]}
    # Every kernel that every rung of the target's ladder launches compiles (a launch two rungs share is compiled
    # once, under the first): the route and kernel names are the solution's own.
    solution = harness.load_solution(ROOT / "solution.py", name="solution_for_matrix_test")
    kind, arch, warp_size = compile_matrix.parse_target(target)
    for route in compile_matrix.ladder(solution, solution.BACKENDS[backend]):
        plan = solution.launch_plan(backend, 1024, 4096, route=route, arch=arch, warp_size=warp_size,
                                    sm_count=compile_matrix.multiprocessors(kind, arch))
        assert {(target, launch.kernel.__name__) for launch in plan.values()} <= compiled, (target, route)
    # A probed rung's other composition (its sigmoid IEEE, where the probe finds the division flushing) too.
    sigmoid_alone = f"IEEE={solution.IEEE_SIGMOID.value}"
    ieee_sigmoid = {r["target"] for r in report["rows"]
                    if r["ok"] and r["route"] == "native_per_element" and sigmoid_alone in r["settings"].split()}
    assert ieee_sigmoid == {target}
    for row in report["rows"]:
        assert row["result"]["stores"] >= row["result"]["sites"] > 0, row
        if row["target"] == "cuda:90":
            assert row["result"]["ptxas"]["registers"] > 0 and row["result"]["shared"] is not None, row
        else:  # the AMDGCN's own figures, linked or not
            assert row["result"]["amdgcn"]["vgprs"] > 0 and row["result"]["amdgcn"]["occupancy"] > 0, row
            assert row["result"]["shared"] is not None, row
        assert "ttir" not in row["result"]
    # The fused kernel's instructions per element, from its SASS or AMDGCN, on every rung and composition.
    fused = [row for row in report["rows"] if row["kernel"] == "_silu_mul_quant_kernel"]
    assert fused and all(row["result"]["per_element"] > 0 for row in fused), [
        (row["route"], row["settings"], row["result"]["per_element"]) for row in fused]


STAGES_WITHOUT_A_BINARY = """
import sys
import triton
import triton.language as tl
from types import SimpleNamespace
from triton.backends import backends
from triton.backends.compiler import GPUTarget
sys.path.insert(0, sys.argv[1])
import compile_matrix

@triton.jit
def transposing_kernel(x_ptr, y_ptr):
    i = tl.arange(0, 64)
    tile = tl.load(x_ptr + i[:, None] * 64 + i[None, :])
    tl.store(y_ptr + i[:, None] + i[None, :] * 64, tile)  # another layout: through shared memory

def refuse(*args):
    raise RuntimeError("no binary here")

backends["nvidia"].compiler.make_cubin = refuse
stages = compile_matrix._record_stages("cuda")
launch = SimpleNamespace(kernel=transposing_kernel, signature={"x_ptr": "*fp32", "y_ptr": "*fp32"}, constexprs={})
target = GPUTarget("cuda", 90, 32)
try:
    triton.compile(compile_matrix.ast_source(launch, target), target=target, options={"num_warps": 4})
except RuntimeError as exc:
    print(exc, "ptx" in stages, stages.shared)
"""


def test_a_compile_that_fails_after_its_llvm_ir_still_gives_its_shared_memory(tmp_path):
    # As where linking fails (hip before Triton 3.5): no compiled kernel, but the stages before it set the bytes.
    # In a process of its own, without the interpreter that conftest.py turns on.
    env = {**{k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}, "TRITON_CACHE_DIR": str(tmp_path)}
    script = tmp_path / "stages_without_a_binary.py"  # a file: Triton reads a kernel's source from it
    script.write_text(STAGES_WITHOUT_A_BINARY)
    proc = subprocess.run([sys.executable, str(script), str(ROOT)], capture_output=True, text=True, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    message, reached_ptx, shared = proc.stdout.strip().rsplit(" ", 2)
    assert message.startswith("no binary here") and reached_ptx == "True" and int(shared) > 0, proc.stdout


@pytest.mark.parametrize("name", sorted(COMPILE))
def test_broken_solution_fails_the_compile_matrix(name, tmp_path):
    edits, targets, kernel = COMPILE[name]
    proc, report = run_targets(targets, tmp_path, make_broken(edits, tmp_path))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    failed = [r for r in report["rows"] if not r["ok"]]
    assert failed and all(r["kernel"] in kernel for r in failed), report["rows"]
    assert "FAIL: " in proc.stdout and "FAILED" in proc.stdout


def test_a_compile_forked_from_a_server_crashes_and_times_out_alone(tmp_path):
    """A compile forked from a server (CompileServers: what CI's compiles run in) is a process of its own: a
    crash is its own exit status and stderr, a timeout kills it and what it started, and the server goes on."""
    abort = tmp_path / "abort.py"
    abort.write_text("import os, sys\nprint('dying', file=sys.stderr)\nos.abort()\n")
    sleep = tmp_path / "sleep.py"
    marker = tmp_path / "started"
    sleep.write_text(f"import subprocess, time\nsubprocess.Popen(['sh', '-c', 'sleep 3 && touch {marker}'])\n"
                     "time.sleep(60)\n")
    with compile_matrix.CompileServers() as servers:
        def run(solution, timeout):
            return compile_matrix.run_script(["--worker", "{}", "--solution", str(solution)], timeout, servers=servers)
        proc = run(abort, 60)
        assert proc.returncode == -6 and compile_matrix.compile_verdict(proc)[:2] == (False, "crashed (SIGABRT): dying")
        with pytest.raises(subprocess.TimeoutExpired):
            run(sleep, 1)
        proc = run(abort, 60)  # the same server, after the timeout
        assert proc.returncode == -6
        assert len(servers._all) == 1
    time.sleep(3)
    assert not marker.exists()  # what the timed-out compile started was killed with it


@pytest.mark.parametrize("text, message", [("cuda:abc", "compute capability"), ("hip:942", "gfx name"),
                                           ("rocm:gfx942", "backends: cuda, hip"), ("cuda90", "backend:arch"),
                                           (",", "no targets")])
def test_bad_targets_are_refused_with_the_expected_form(text, message):
    with pytest.raises(ValueError, match=message):
        compile_matrix.parse_targets(text)


def test_targets_parse_with_triton_amd_warp_sizes():
    assert compile_matrix.parse_targets("cuda:90,hip:gfx90a,hip:gfx942,hip:gfx1100") == [
        ("cuda", 90, 32), ("hip", "gfx90a", 64), ("hip", "gfx942", 64), ("hip", "gfx1100", 32)]


def test_an_npu_target_is_an_ascend_soc_with_the_warp_size_its_driver_reports():
    assert compile_matrix.parse_target("npu:Ascend910B3") == ("npu", "Ascend910B3", 0)
    with pytest.raises(ValueError, match="Ascend SoC"):
        compile_matrix.parse_target("npu:910B3")


def _process(returncode=0, stdout="", stderr=""):
    return subprocess.CompletedProcess([], returncode, stdout, stderr)


UB_OVERFLOW = """
///------------------[ERROR][Triton][BEG]------------------
[ConvertLinalgRToBinary] encounters error:
[NOTE] Ub overflow detected; automatically set enable-code-motion to false and retrying compilation.
loc("/tmp/tmp4lm03oqc/kernel.ttadapter.mlir":1:1): error: Failed to run BiShengHIR pipeline

loc("/tmp/tmp4lm03oqc/kernel.ttadapter.mlir":2:3): error: ub overflow, requires 7380992 bits while 1572864 bits available! (possible reason: tiling basic block is too large)
[ERROR] Failed to run BiShengIR pipeline
///------------------[ERROR][Triton][END]------------------
"""


def test_a_bishengir_ub_overflow_fails_the_compile_with_its_own_words():
    class MLIRCompilationError(Exception):
        pass
    line = compile_matrix.exception_line(MLIRCompilationError(UB_OVERFLOW))
    assert line.startswith("MLIRCompilationError: error: ub overflow, requires 7380992 bits while 1572864 bits")
    process = subprocess.CompletedProcess([], 1, "", "Traceback (most recent call last):\n  ...\n" + line + "\n")
    ok, detail, _ = compile_matrix.compile_verdict(process)
    assert not ok and "ub overflow, requires 7380992 bits" in detail
    assert detail.endswith("; UB 901.0 KB of 192 KB needed by bishengir's last plan (after its retries)")


def test_a_frontend_error_names_its_cause_and_place():
    try:
        try:
            raise TypeError("unsupported operand type(s) for +: 'float' and 'NoneType'")
        except TypeError as cause:
            CompilationError = type("CompilationError", (Exception,), {})
            raise CompilationError("at 3:31:\ndef sigmoid(gate):\n    return 1.0 + None") from cause
    except Exception as exc:
        line = compile_matrix.exception_line(exc)
    assert line == "TypeError: unsupported operand type(s) for +: 'float' and 'NoneType' (in sigmoid, at 3:31)"


def _result(stores, sites=7):
    return "RESULT " + json.dumps({"stores": stores, "sites": sites, "asm": "amdgcn", "binary": True,
                                   "no_binary": None})


@pytest.mark.parametrize("process, reason", [
    (_process(stdout=_result(9)), None),
    (_process(stdout=_result(1)), "stores lost"),
    (_process(stdout=_result(9), stderr="error: could not allocate output register for constraint 'r'\n"),
     "stderr: error: could not allocate"),
    (_process(returncode=-6, stderr="LLVM ERROR: something\n"), "crashed (SIGABRT): LLVM ERROR: something"),
    (_process(returncode=1, stderr="Traceback (most recent call last):\nKeyError: 'ttir'\n"), "exit code 1: KeyError"),
])
def test_a_compile_fails_on_a_crash_an_error_message_or_lost_stores(process, reason):
    ok, detail, _ = compile_matrix.compile_verdict(process)
    assert ok is (reason is None), detail
    if reason:
        assert reason in detail


# Recorded: Triton 3.6.0's bundled ptxas (CUDA 12.8) -v on the nvidia_per_element main kernel's PTX for sm_80.
PTXAS_VERBOSE = """ptxas info    : 11 bytes gmem, 8 bytes cmem[4]
ptxas info    : Compiling entry function '_silu_dot_quant_kernel' for 'sm_80'
ptxas info    : Function properties for _silu_dot_quant_kernel
    8 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads
ptxas info    : Used 80 registers, used 1 barriers, 8 bytes cumulative stack size, 464 bytes cmem[0]
ptxas info    : Compile time = 75.064 ms
"""


def test_a_ptxas_verbose_log_gives_registers_spills_and_static_shared_memory():
    assert compile_matrix.parse_ptxas_verbose(PTXAS_VERBOSE) == {
        "registers": 80, "stack": 8, "spill_stores": 8, "spill_loads": 8, "static_shared": 0}
    with_smem = PTXAS_VERBOSE.replace("used 1 barriers, ", "used 1 barriers, 1024 bytes smem, ")
    assert compile_matrix.parse_ptxas_verbose(with_smem)["static_shared"] == 1024
    assert compile_matrix.parse_ptxas_verbose("ptxas fatal   : Unresolved extern function")["registers"] is None


def test_the_usage_shows_in_a_compiles_detail():
    result = {"ptxas": compile_matrix.parse_ptxas_verbose(PTXAS_VERBOSE), "shared": 8192}
    assert compile_matrix.usage_text(result) == "80 registers, 8/8 B spilled (stores/loads), 8192 B shared"
    assert compile_matrix.usage_text({"ptxas": None, "shared": None}) == ""


AMDGCN = """
; NumVgprs: 80
; ScratchSize: 16
; Occupancy: 6
amdhsa.kernels:
  - .group_segment_fixed_size: 8192
    .private_segment_fixed_size: 16
    .sgpr_count:     48
    .sgpr_spill_count: 2
    .vgpr_count:     80
    .vgpr_spill_count: 4
"""


def test_an_amdgcn_assembly_gives_registers_spills_scratch_and_waves():
    assert compile_matrix.parse_amdgcn_usage(AMDGCN) == {"vgprs": 80, "sgprs": 48, "vgpr_spills": 4,
                                                         "sgpr_spills": 2, "scratch": 16, "occupancy": 6}
    assert compile_matrix.parse_amdgcn_usage("s_endpgm") is None
    result = {"amdgcn": compile_matrix.parse_amdgcn_usage(AMDGCN), "shared": 8192}
    assert compile_matrix.usage_text(result) == ("80 VGPRs, 48 SGPRs, 4/2 spilled (VGPRs/SGPRs), 16 B scratch a lane, "
                                                 "6 waves/SIMD, 8192 B shared")


A100 = compile_matrix.SM_LIMITS[("cuda", 80)]


@pytest.mark.parametrize("registers, threads, shared, expected", [
    (80, 256, 32768, (3, "registers")),       # the nvidia route's 8-warp program: 3 x 80 x 256 of 65536
    (64, 512, 32768, (2, "registers")),       # its 16-warp program
    (75, 256, 0, (3, "registers")),           # allocated as 80 (8 a thread, 256 a warp)
    (32, 256, 60 * 1024, (2, "shared memory")),  # 61 KB with the runtime's 1 KB: 2 of 164 KB
    (16, 1024, 0, (2, "threads")),
    (16, 32, 0, (32, "programs")),
])
def test_programs_an_a100_sm_holds(registers, threads, shared, expected):
    assert compile_matrix.programs_per_sm(A100, registers, threads, shared) == expected


def test_occupancy_is_told_only_where_the_targets_sm_limits_are_known():
    result = {"ptxas": {"registers": 80, "static_shared": 0}, "shared": 32768, "threads": 256}
    assert compile_matrix.occupancy_text("cuda", 80, result) == "3 programs/SM of an A100 (registers)"
    assert compile_matrix.occupancy_text("cuda", 90, result) == ""
    assert compile_matrix.occupancy_text("cuda", 80, {**result, "ptxas": None}) == ""
    assert compile_matrix.MULTIPROCESSORS[("cuda", 80)] == 108  # the A100's SMs: their one home


# ---------------------------------------------------------------- Ascend's unified buffer (UB)

# The HIVM IR bishengir-compile hands to hivmc, cut down (as triton-ascend 3.2.0's ascendnpu-ir 1.2.0 prints
# it): UB buffers are pointer casts of byte offsets; the second is multibuffered (two offsets), the third
# 20 bits of i1 (3 bytes); a cast to global memory is not the UB's.
HIVM = """module attributes {dlti.target_system_spec = #dlti.target_system_spec<"NPU" : #hacc.target_device_spec<#dlti.dl_entry<"VECTOR_CORE_COUNT", 40 : i32>, #dlti.dl_entry<"UB_SIZE", 1572864 : i32>, #dlti.dl_entry<"UB_ALIGN_SIZE", 256 : i32>>>} {
  func.func private @vexp_1d_float(memref<?xf32, strided<[?], offset: ?>, #hivm.address_space<ub>>, memref<?xf32, strided<[?], offset: ?>, #hivm.address_space<ub>>) attributes {hacc.always_inline}
  func.func @k(%arg3: memref<?xbf16, #hivm.address_space<gm>>) attributes {hacc.entry} {
    %c20544_i64 = arith.constant 20544 : i64
    %c12352_i64 = arith.constant 12352 : i64
    %c4160_i64 = arith.constant 4160 : i64
    %c64_i64 = arith.constant 64 : i64
    %c0_i64 = arith.constant 0 : i64
    %0 = hivm.hir.pointer_cast(%c0_i64) : memref<16xf32, #hivm.address_space<ub>>
    %1 = hivm.hir.pointer_cast(%c64_i64) : memref<16x128xbf16, #hivm.address_space<ub>>
    %2 = hivm.hir.pointer_cast(%c4160_i64, %c12352_i64) : memref<16x128xf32, #hivm.address_space<ub>>
    %3 = hivm.hir.pointer_cast(%c20544_i64) : memref<20xi1, #hivm.address_space<ub>>
    %4 = hivm.hir.pointer_cast(%c0_i64) : memref<0xf32, #hivm.address_space<ub>>
    %5 = hivm.hir.pointer_cast(%c0_i64) : memref<1048576xf32, #hivm.address_space<gm>>
    call @vexp_1d_float(%0, %0) : (memref<16xf32, #hivm.address_space<ub>>, memref<16xf32, #hivm.address_space<ub>>) -> ()
    return
  }
}
"""
# A second function whose constant has a name the first one's has: constants are read per function.
HIVM_TWO = HIVM.rstrip().removesuffix("}") + """  func.func @k2() {
    %c64_i64 = arith.constant 30000 : i64
    %0 = hivm.hir.pointer_cast(%c64_i64) : memref<4x4xf32, strided<[4, 1]>, #hivm.address_space<ub>>
    return
  }
}
"""
RETRIED = ("[NOTE] Ub overflow detected; automatically set enable-code-motion to false and retrying compilation.\n"
           "[NOTE] Ub overflow detected; automatically set enable-auto-multi-buffer to false and retrying "
           "compilation.\n")


def test_the_ub_plan_is_the_top_of_the_highest_ub_buffer_of_the_hivm_ir():
    assert compile_matrix.ub_plan(HIVM) == {"bytes": 12352 + 16 * 128 * 4 + 3, "available": 192 * 1024, "buffers": 5,
                                            "unread": 0, "retried_without": []}
    assert compile_matrix.ub_plan(HIVM_TWO)["bytes"] == 30000 + 64
    dynamic = HIVM.replace("memref<20xi1, #hivm", "memref<?xi1, #hivm")
    assert compile_matrix.ub_plan(dynamic)["unread"] == 1
    assert compile_matrix.ub_plan("module {\n}\n") is None
    assert compile_matrix.ub_text(compile_matrix.ub_plan(HIVM)) == "UB 20.1 KB of 192 KB planned"


def test_a_plan_after_bishengirs_retry_says_so():
    ub = compile_matrix.ub_plan(HIVM, "warning: something\n" + RETRIED)
    assert ub["retried_without"] == ["code motion", "multibuffer"]
    assert compile_matrix.ub_text(ub).startswith(
        "UB 20.1 KB of 192 KB planned after bishengir's retry without code motion and multibuffer")
    assert compile_matrix.ub_problem(ub) is None


def _npu_result(ub_bytes, **ub):
    plan = {"bytes": ub_bytes, "available": 192 * 1024, "buffers": 36, "unread": 0, "retried_without": [], **ub}
    return _process(stdout="RESULT " + json.dumps({"stores": 2, "sites": 2, "asm": "hivm", "binary": False,
                                                   "no_binary": "hivmc is a stand-in: no binary", "ub": plan}))


def test_the_ub_limit_is_150_kb_and_a_plan_over_it_fails_the_compile():
    assert compile_matrix.UB_LIMIT_BYTES == 153600 < compile_matrix.UB_BYTES == 196608
    ok, detail, result = compile_matrix.compile_verdict(_npu_result(153600))
    assert ok and detail.endswith("; UB 150.0 KB of 192 KB planned") and result["ub"]["bytes"] == 153600
    ok, detail, _ = compile_matrix.compile_verdict(_npu_result(156160))
    assert not ok and "UB 152.5 KB (156160 bytes) planned, more than the 150 KB limit (153600 bytes" in detail
    ok, detail, _ = compile_matrix.compile_verdict(_npu_result(90000, unread=1))
    assert not ok and "1 UB buffers of unknown size or offset" in detail
    process = _npu_result(0)
    process.stdout = process.stdout.replace('"ub": {', '"ub": null, "x": {')
    ok, detail, _ = compile_matrix.compile_verdict(process)
    assert not ok and "no UB plan in the HIVM IR" in detail


# ---------------------------------------------------------------- instructions per element

def sass(*lines):
    """An nvdisasm listing: instructions at addresses 0x00, 0x10, ... (lines ending with ":" are labels, lines
    starting with "//" or "." are kept as they are)."""
    out, address = [], 0
    for line in lines:
        if line.endswith(":") or line.startswith(("//", ".")):
            out.append(line)
        else:
            out.append(f"        /*{address:04x}*/                   {line} ;")
            address += 0x10
    return "\n".join(out)


SASS_LOOP = sass("MOV R1, c[0x0][0x28]", "S2R R0, SR_TID.X",
                 ".L_x_0:", "FADD R2, R2, 1", "NOP", "ISETP.NE.AND P0, PT, R0, RZ, PT", "@P0 BRA `(.L_x_0)",
                 "EXIT", ".L_x_1:", "BRA `(.L_x_1)")  # the branch to itself after the last EXIT is no loop
SASS_NESTED = sass("MOV R1, c[0x0][0x28]",
                   ".L_x_0:", "IADD3 R2, R2, 0x1, RZ",
                   ".L_x_1:", "FFMA R3, R3, R4, R5", "@P1 BRA `(.L_x_1)",
                   "@P0 BRA `(.L_x_0)", "EXIT")
# A division: its slow path is a call that a predicated forward branch skips, the subroutine after the last EXIT.
SASS_SLOW_PATH = sass("FCHK P0, R2, R3", "FFMA R4, R2, R5, RZ", "@!P0 BRA `(.L_x_1)", "MOV R0, R2",
                      "CALL.REL.NOINC `($__internal_0_$__cuda_sm3x_div_rn_noftz_f32_slowpath)", "MOV R4, R0",
                      ".L_x_1:", "STG.E desc[UR4][R6.64], R4", "EXIT",
                      ".weak $__internal_0_$__cuda_sm3x_div_rn_noftz_f32_slowpath",
                      "$__internal_0_$__cuda_sm3x_div_rn_noftz_f32_slowpath:", "FMUL R0, R0, R2",
                      "RET.REL.NODEC R4 `(_kernel)")
# As LLVM writes a loop of 4 trips: entered in its middle, two branches back to its head, and a second loop (2
# trips) unrolled: its body twice, after the first. Their source lines (.loc) tell which loop is which.
AMDGCN_LOOPS = """	.text
	.globl	k
	.file	1 "/src" "solution.py"
k:
	.loc	1 10 0
	s_load_dwordx2 s[0:1], s[4:5], 0x0
	s_mov_b32 s2, 0
	s_branch .LBB0_2
.LBB0_1:
	.loc	1 20 5
	s_add_i32 s2, s2, 1
	s_cmp_lt_u32 s2, 3
	s_cbranch_scc0 .LBB0_3
.LBB0_2:
	.loc	1 21 7
	v_add_f32_e32 v1, v1, v2
	s_nop 1
	s_cbranch_execz .LBB0_1
	v_mul_f32_e32 v1, v1, v2   ; a comment
	s_branch .LBB0_1
.LBB0_3:
	.loc	1 30 5
	v_exp_f32_e32 v3, v1
	v_exp_f32_e32 v4, v1
	global_store_dword v[5:6], v3, off
	s_endpgm
.Lfunc_end0:
	.size	k, .Lfunc_end0-k
; NumVgprs: 8
"""
Loop = compile_matrix.Loop


@pytest.mark.parametrize("listing, nest, expected", [
    (SASS_LOOP, [Loop(4, 0)], (2 + 3 * 4 + 1) / 5),              # the NOP left out
    (SASS_NESTED, [Loop(2, 0), Loop(3, 1)], (1 + 1 * 2 + 2 * 3 * 2 + 1 * 2 + 1) / 5),
    (SASS_SLOW_PATH, [], 5 / 5),                                  # FCHK, FFMA, BRA, STG, EXIT
    (SASS_LOOP, [], None),                                        # a loop the kernel has not
    (SASS_NESTED, [Loop(2, 0), Loop(3, 0)], None),                # one loop in the other, not after it
])
def test_sass_instructions_per_element_weigh_each_loop_by_its_trips(listing, nest, expected):
    figure = compile_matrix.instructions_per_element(listing, compile_matrix.ISAS["sass"], nest, 5)
    assert figure == (None if expected is None else round(expected, 1))


def test_amdgcn_instructions_per_element_match_the_loops_kept_by_their_source_lines():
    amdgcn = compile_matrix.ISAS["amdgcn"]
    instructions, labels = amdgcn.parse(AMDGCN_LOOPS)
    assert [i.opcode for i in instructions][:3] == ["s_load_dwordx2", "s_mov_b32", "s_branch"]
    assert compile_matrix.listing_loops(instructions, labels) == [(3, 10)]  # one loop, two branches back
    assert instructions[3].source == ("solution.py", 20)
    # The loop is the first (line 20, 4 trips), the second unrolled: 7 instructions 4 times, 7 once (no s_nop).
    first, second = Loop(4, 0, ("solution.py", 20)), Loop(2, 0, ("solution.py", 30))
    assert compile_matrix.instructions_per_element(AMDGCN_LOOPS, amdgcn, [first, second], 7) == 5.0
    # Without source lines either loop could be the one kept: two figures, none told.
    assert compile_matrix.instructions_per_element(AMDGCN_LOOPS, amdgcn, [Loop(4, 0), Loop(2, 0)], 7) is None
    assert compile_matrix.instructions_per_element(AMDGCN_LOOPS, amdgcn, [second], 7) is None  # line 30: no loop
    assert compile_matrix.instructions_per_element("s_nop 0", amdgcn, [], 1) is None  # no s_endpgm


# As LLVM lays out a loop in a loop (AMDGCN, Triton 3.6): the inner loop's exit branches back to the outer loop's
# head before the rest of the inner loop, which is in the outer loop all the same.
AMDGCN_NESTED = """k:
	s_mov_b32 s0, 0
	s_branch .LBB0_3
.LBB0_2:
	s_add_i32 s0, s0, 1
	s_cbranch_scc0 .LBB0_13
.LBB0_3:
	v_mov_b32_e32 v0, 0
	s_branch .LBB0_11
.LBB0_10:
	s_add_i32 s1, s1, 1
	s_cbranch_scc0 .LBB0_2
.LBB0_11:
	v_add_f32_e32 v1, v1, v2
	s_branch .LBB0_10
.LBB0_13:
	s_endpgm
"""


def test_an_outer_loop_holds_the_inner_loop_it_branches_back_from():
    amdgcn = compile_matrix.ISAS["amdgcn"]
    assert compile_matrix.listing_loops(*amdgcn.parse(AMDGCN_NESTED)) == [(2, 9), (6, 9)]
    # 2 instructions once, 4 three times, 4 fifteen times, s_endpgm once.
    assert compile_matrix.instructions_per_element(AMDGCN_NESTED, amdgcn, [Loop(3, 0), Loop(5, 1)], 15) == 5.0

# A persistent kernel's TTIR (Triton 3.6's form): a while loop over tiles holding a for loop of 4 trips, which is
# inlined from another function (its location a call site).
TTIR_LOOPS = """#loc = loc("/src/solution.py":1:0)
module {
  tt.func public @k(%arg0: i32 loc("/src/solution.py":1:0)) attributes {noinline = false} {
    %c0_i32 = arith.constant 0 : i32 loc(#loc1)
    %c1_i32 = arith.constant 1 : i32 loc(#loc1)
    %c4_i32 = arith.constant 4 : i32 loc(#loc1)
    %t = scf.while (%t_1 = %c0_i32) : (i32) -> i32 {
      %0 = arith.cmpi slt, %t_1, %arg0 : i32 loc(#loc2)
      scf.condition(%0) %t_1 : i32 loc(#loc2)
    } do {
    ^bb0(%t_1: i32 loc("t"(#loc2))):
      scf.for %c = %c0_i32 to %c4_i32 step %c1_i32  : i32 {
        %1 = arith.addi %c, %c1_i32 : i32 loc(#loc3)
      } loc(#loc5)
      %2 = arith.addi %t_1, %c1_i32 : i32 loc(#loc2)
      scf.yield %2 : i32 loc(#loc2)
    } loc(#loc6)
    tt.return loc(#loc1)
  } loc(#loc)
} loc(#loc)
#loc1 = loc(unknown)
#loc2 = loc("/src/solution.py":12:8)
#loc3 = loc("/src/solution.py":20:19)
#loc4 = loc("/src/solution.py":15:16)
#loc5 = loc(callsite(#loc3 at #loc4))
#loc6 = loc("t"(#loc2))
"""


def test_the_ttirs_loops_with_trip_counts_depths_and_source_lines():
    assert compile_matrix.ttir_loops(TTIR_LOOPS) == [Loop(None, 0, ("solution.py", 12)),
                                                     Loop(4, 1, ("solution.py", 20))]


def test_the_fused_and_two_pass_kernels_loops_come_from_their_constexprs():
    fused = {"GROUP": 128, "CHUNK": 32, "Y_CHUNK": 64, "PERSISTENT": False}
    assert compile_matrix.kernel_loops("_silu_mul_quant_kernel", fused, 256) == ([Loop(4, 0), Loop(2, 0)], 64.0)
    persistent = {**fused, "Y_CHUNK": 128, "PERSISTENT": True}  # y in one row: no loop; per tile
    assert compile_matrix.kernel_loops("_silu_mul_quant_kernel", persistent, 512) == ([Loop(1, 0), Loop(4, 1)], 32.0)
    grad = {"GROUP": 128, "ROWS": 16, "GROUPS": 2}
    assert compile_matrix.kernel_loops("_grad_rows_kernel", grad, 128) == ([Loop(1, 0), Loop(2, 1)], 32.0)
    assert compile_matrix.kernel_loops("_probe_kernel", {}, 256) is None
    # The TTIR's loops must be these: the persistent kernel's are, the non-persistent one's are not.
    listing = sass(".L_x_0:", ".L_x_1:", "FADD R2, R2, 1", "@P1 BRA `(.L_x_1)", "@P0 BRA `(.L_x_0)", "EXIT")
    assert compile_matrix.per_element(listing, "sass", "_silu_mul_quant_kernel", persistent, 512,
                                      TTIR_LOOPS) == round((4 + 4 + 1 + 1) / 32, 1)
    assert compile_matrix.per_element(listing, "sass", "_silu_mul_quant_kernel", fused, 256, TTIR_LOOPS) is None
    assert compile_matrix.per_element(None, "sass", "_silu_mul_quant_kernel", fused, 256) is None
    assert compile_matrix.per_element_text({"per_element": 71.0}) == "71.0"
    assert compile_matrix.per_element_text(None) == compile_matrix.per_element_text({"per_element": None}) == "-"
