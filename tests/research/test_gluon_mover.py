"""tools/research/gluon_mover.py's Gluon variants must compile for sm_90 without spilling, or the lead's GPU run
(issue 19, step 1) would time a different kernel than the one designed. Compiled in a subprocess: conftest
sets TRITON_INTERPRET=1, and these are compiled, not interpreted."""
import json
import os
import subprocess
import sys

import pytest

import harness

pytest.importorskip("triton.experimental.gluon", reason="this Triton has no Gluon (triton.experimental.gluon)")

# What the design needs of every variant on an H100: y's tile in shared memory (16 or 32 KB), and for the
# second round's rings their slots (12-24 KB a slot); at least three programs per SM, two where a ring of
# 48 KB or more sits beside the y tile; shared-memory accesses as wide as the layouts allow.
MAX_SHARED_BYTES = 110 * 1024
MIN_PROGRAMS_PER_SM = 3
MIN_PROGRAMS_PER_SM_BESIDE_A_LARGE_RING = 2
LARGE_RING_BYTES = 48 * 1024


# The tests that read the variants as compiled for sm_90 (20 s of a 2-core CI's tests) run with --slow only: a lab
# kernel's, not the solution's.
@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    out = tmp_path_factory.mktemp("gluon_mover") / "compile.json"
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}  # compiling, not interpreting
    tool = harness.ROOT / "tools" / "research" / "gluon_mover.py"
    proc = subprocess.run([sys.executable, str(tool), "--compile-only", "--json", str(out)], capture_output=True,
                          text=True, cwd=harness.ROOT, env=env, timeout=600)
    record = json.loads(out.read_text()) if out.exists() else None
    return proc, record


@pytest.mark.slow
def test_every_variant_compiles_for_sm90_without_spills(compiled):
    proc, record = compiled
    assert record is not None, proc.stderr
    assert record["failed"] == [], record["failed"]
    for row in record["rows"]:
        assert (row["stack_bytes"], row["spill_instructions"]) == (0, 0), row["variant"]
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.slow
def test_every_variant_fits_its_programs_per_sm(compiled):
    _, record = compiled
    for row in record["rows"]:
        assert row["shared_bytes"] <= MAX_SHARED_BYTES, row["variant"]
        expected_tile = 128 * 128 * (2 if row["y_dtype"] == "bf16" else 1)
        large_ring = row["designed_shared_bytes"] - expected_tile >= LARGE_RING_BYTES
        least = MIN_PROGRAMS_PER_SM_BESIDE_A_LARGE_RING if large_ring else MIN_PROGRAMS_PER_SM
        assert row["programs_per_sm"]["programs"] >= least, row["variant"]
        assert row["designed_shared_bytes"] >= expected_tile, row["variant"]
        designed = row["designed_shared_bytes"]  # the tile, the ring, padding
        assert designed <= row["shared_bytes"] <= designed + 512, row["variant"]


@pytest.mark.slow
def test_the_conflict_free_layouts_move_y_in_wide_accesses_without_bank_conflicts(compiled):
    """The padded and XOR layouts were designed so that the slices' 8- or 16-byte writes and the
    transposed read-back cost no extra shared-memory wavefronts; the vector widths are what the PTX has."""
    _, record = compiled
    rows = {row["variant"]: row for row in record["rows"]}
    for name, row in rows.items():
        if row["shared"] in ("padded", "xor"):
            assert row["modeled_wavefronts"] == {"write": 1.0, "read": 1.0}, name
        widths = set(row["shared_accesses"])
        if row["y_dtype"] == "bf16":
            assert "st.shared.v4.b32" in widths and widths & {"ld.shared.v4.b16", "ld.shared.v4.b32"}, name
    assert rows["bf16-swizzled-w8"]["modeled_wavefronts"]["read"] > 1.0  # the slice-able swizzle conflicts


@pytest.mark.slow
def test_the_second_round_copies_what_its_names_say(compiled):
    """ringN variants copy gate, up and grad_y into shared memory with 16-byte cp.async only, tmaN ones with
    TMA only (three boxes a slice), the others (the register prefetch, the first round) with neither, and
    a ring's slots take the shared memory its name says: 3 inputs x N slots x chunk tokens x 128 bf16."""
    _, record = compiled
    rows = {row["variant"]: row for row in record["rows"]}
    seen = set()
    for name, row in rows.items():
        kind = row["pipeline"].rstrip("0123456789")
        seen.add(kind)
        copies = row["async_copies"]
        if kind == "ring":
            assert set(copies) == {"cp.async 16 B"}, name
        elif kind == "tma":
            assert set(copies) == {"tma"} and copies["tma"] % 3 == 0, name
        else:
            assert copies == {}, name
        if kind in ("ring", "tma"):
            stages = int(row["pipeline"][len(kind):])
            ring = 3 * stages * row["chunk"] * 128 * 2
            assert row["designed_shared_bytes"] == 128 * 128 * 2 + ring + (8 * stages if kind == "tma" else 0), name
    assert seen == {"", "regs", "ring", "tma"}


def test_the_default_gpu_run_leaves_out_only_the_misaligned_tile(monkeypatch):
    """int8-padded-rows-w8 faults on the H100 ("misaligned address") and is left out of the default GPU run,
    selectable by name; every other variant is in it, the second round's among them, each name once."""
    monkeypatch.syspath_prepend(str(harness.ROOT / "tools" / "research"))
    import gluon_mover
    names = [v.name for v in gluon_mover.VARIANTS]
    assert len(names) == len(set(names))
    left_out = {v.name for v in gluon_mover.VARIANTS} - {v.name for v in gluon_mover.DEFAULT_VARIANTS}
    assert left_out == {"int8-padded-rows-w8"}
    assert sum(1 for v in gluon_mover.DEFAULT_VARIANTS if v.pipeline) >= 10
    for v in gluon_mover.VARIANTS:
        if v.pipeline:
            assert v.y_dtype == "bf16" and v.stages >= 1 and 128 % v.chunk == 0, v.name
            assert v.stages <= 128 // v.chunk, v.name  # the ring reaches at most one tile ahead


def test_a_persistent_variant_launches_one_wave(monkeypatch):
    """A persistent variant's grid: programs per SM of the kernel as compiled (here 73 registers and 68 KB
    of shared memory at 8 warps: 3) times the SMs, never more programs than tiles."""
    import types

    import torch
    monkeypatch.syspath_prepend(str(harness.ROOT / "tools" / "research"))
    import gluon_mover
    class Compiled:  # as Triton's CompiledKernel: n_regs appears when the binary is loaded
        metadata = types.SimpleNamespace(shared=69632)

        def _init_handles(self):
            self.n_regs = 73

    fake_kernel = types.SimpleNamespace(warmup=lambda *args, **kwargs: Compiled())
    monkeypatch.setattr(gluon_mover, "_gluon_mover_pipelined_kernel", fake_kernel)
    monkeypatch.setattr(gluon_mover, "_PROGRAMS_PER_SM", {})
    monkeypatch.setattr(gluon_mover, "_SM_COUNT", {})
    monkeypatch.setattr(torch.cuda, "get_device_properties",
                        lambda device: types.SimpleNamespace(multi_processor_count=132))
    variant = next(v for v in gluon_mover.VARIANTS if v.name == "bf16-xor-w8-persist-ring3-c16")
    assert gluon_mover.persistent_grid(variant, (), 2048, "cuda") == 3 * 132
    assert gluon_mover.persistent_grid(variant, (), 160, "cuda") == 160


def test_preflight_finds_the_variants_that_fault_or_hang_in_child_processes(monkeypatch):
    """The second round's kernels first run in child processes: if the child running them all dies, times
    out or sees an exception, each runs alone; those that fault, hang or raise alone are reported, wrong
    bytes are left to the main check, and the rest are fine."""
    import subprocess
    import types
    monkeypatch.syspath_prepend(str(harness.ROOT / "tools" / "research"))
    import gluon_mover
    names = ["bf16-xor-w8-regs", "bf16-xor-w8-ring2", "bf16-xor-w8-persist-tma3", "bf16-xor-w8-persist-ring3"]
    variants = [v for v in gluon_mover.VARIANTS if v.name in names]
    children = []

    def run(command, **kwargs):
        ran = command[command.index("--variants") + 1:command.index("--shapes")]
        assert command[command.index("--shapes") + 1:] == ["8x128x2560", "8192x4096"]
        children.append(ran)
        if len(ran) > 1:  # every variant in one child: it dies of the fault
            return types.SimpleNamespace(returncode=1, stdout="", stderr="torch.AcceleratorError: CUDA error: "
                                         "an illegal memory access was encountered")
        if ran == ["bf16-xor-w8-persist-tma3"]:
            raise subprocess.TimeoutExpired(command, kwargs["timeout"])
        failures = {"bf16-xor-w8-ring2": "1024x2560: RuntimeError: Triton Error [CUDA]: misaligned address",
                    "bf16-xor-w8-regs": "1024x2560: differing bytes {...}"}
        mine = {n: why for n, why in failures.items() if n in ran}
        return types.SimpleNamespace(returncode=0, stdout="compiling\n" + gluon_mover.PREFLIGHT_MARK
                                     + json.dumps(mine) + "\n", stderr="")

    monkeypatch.setattr(gluon_mover, "DEVICE", "cuda")
    monkeypatch.setattr(gluon_mover.subprocess, "run", run)
    shapes = harness.expand_shape_args(["8x128x2560", "8192x4096"], [])
    isolated = gluon_mover.preflight(variants, shapes)
    assert sorted(isolated) == ["bf16-xor-w8-persist-tma3", "bf16-xor-w8-ring2"]
    assert "misaligned" in isolated["bf16-xor-w8-ring2"] and "hang" in isolated["bf16-xor-w8-persist-tma3"]
    assert children[0] == [v.name for v in variants] and sorted(map(tuple, children[1:])) == sorted((n,) for n in names)

    children.clear()
    monkeypatch.setattr(gluon_mover.subprocess, "run", lambda command, **kwargs: types.SimpleNamespace(
        returncode=0, stdout=gluon_mover.PREFLIGHT_MARK + "{}\n", stderr=""))
    assert gluon_mover.preflight(variants, shapes) == {}


HUNG = "bf16-xor-w8-persist-ring3-c16"


@pytest.mark.parametrize("broken", [None, "bf16-xor-w8", HUNG])
def test_the_gpu_mode_times_only_variants_whose_every_byte_is_right(monkeypatch, tmp_path, broken):
    """The GPU mode's bookkeeping, run on the CPU with stand-in kernels that write the expected bytes
    (one of them with a byte wrong, or one that the preflight saw hang): a wrong variant is reported,
    never timed, and the exit status is 1; one that hung is never launched here; the stop rule's verdict
    follows the times."""
    import types

    import torch
    monkeypatch.syspath_prepend(str(harness.ROOT / "tools" / "research"))
    import gluon_mover
    import measure
    import movers
    fake_kernel = types.SimpleNamespace(n_regs=64, n_spills=0, metadata=types.SimpleNamespace(shared=32768))
    launched = []

    def launch(variant, x, grad_y, outs):
        for out, want in zip(outs, gluon_mover.expected_outputs(x, grad_y)):
            out.copy_(want)
        assert variant.name != HUNG or broken != HUNG
        if variant.name == broken:
            outs[2].view(-1)[-1] += 1  # one byte of y_q_t
        launched.append(variant.name)
        return fake_kernel

    def tl_mover(*args):
        launched.append("tl-mover")
        return fake_kernel

    timed = []
    us_by_kernel = {"bf16-padded-w8": 95.0, "tl-mover": 130.0}  # the copy takes 90 us: 94.7% and 69.2%

    def do_bench(fn):
        fn()
        timed.append(launched[-1])
        return us_by_kernel.get(launched[-1], 120.0)

    monkeypatch.setattr(gluon_mover, "DEVICE", "cpu")
    monkeypatch.setattr(gluon_mover, "launch", launch)
    monkeypatch.setattr(gluon_mover, "preflight", lambda vs, shapes: {HUNG: "no result after 240 s in a child process"}
                        if broken == HUNG and HUNG in [v.name for v in vs] else {})
    monkeypatch.setattr(movers, "launch_mover", tl_mover)
    monkeypatch.setattr(measure, "do_bench", do_bench)
    monkeypatch.setattr(measure, "same_bytes_copy_us", lambda n_bytes: 90.0)
    monkeypatch.setattr(torch.cuda, "get_device_properties",
                        lambda i: types.SimpleNamespace(major=9, minor=0, multi_processor_count=132))
    variants = [v for v in gluon_mover.VARIANTS
                if v.name in ("bf16-padded-w8", "bf16-xor-w8", "int8-xor-w8", "bf16-xor-w8-persist-ring3-c16")]
    shapes = harness.expand_shape_args(["1024x128", "4096x128"], [])
    record = tmp_path / "gpu.json"
    status = gluon_mover.gpu_main(variants, shapes, 1, str(record))
    result = json.loads(record.read_text())
    assert status == (1 if broken else 0)
    assert list(result["failures"]) == ([broken] if broken else [])
    if broken:
        assert ("child process" if broken == HUNG else "y_q_t") in result["failures"][broken]
        assert broken not in timed
    assert sorted(set(timed)) == sorted({"tl-mover", *(v.name for v in variants)} - {broken})
    assert result["verdicts"]["bf16-padded-w8"]["passes"] and not result["verdicts"]["tl-mover"]["passes"]
    assert result["go"] and result["floor_pct"]["bf16-padded-w8"]["4096x128"] == pytest.approx(100 * 90 / 95)
