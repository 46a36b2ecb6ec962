"""The real solution kernels against the reference, under the interpreter, and every bad-input error."""
import contextlib
import os
import subprocess
import sys
import types

import pytest
import torch
import triton
import triton.language as tl

import harness
import solution
from fixtures import native_arithmetic

SHAPES = [(128, 128), (256, 128), (128, 384)]


@pytest.mark.parametrize("family", harness.FAMILIES)
@pytest.mark.parametrize("M,H", SHAPES)
def test_matches_reference_within_judge_tolerances(M, H, family):
    x, gy = harness.make_inputs(M, H, seed=1, family=family)
    ref = harness.run_reference(x, gy)
    out = harness.new_outputs(M, H)
    returned = solution.silu_dot_fwd_bwd_quant_fuse(x, gy, *out)
    assert all(r is o for r, o in zip(returned, out))
    assert not any(harness.unwritten(out).values())
    result = harness.compare(out, ref)
    assert result["passed"], result["checks"]


@pytest.mark.parametrize("family", ["randn", "heavy"])
def test_scales_are_within_one_fp32_ulp_of_the_cpu_reference(family):
    # The CPU reference divides absmax by 127 where PyTorch on the GPU (and the kernel) multiplies by
    # fp32(1/127): that moves a scale by one fp32 ulp at most, far below the judge's tolerance. A wrong
    # group max (a bf16 ulp of absmax, 2**16 fp32 ulps) or a wrong formula would show here.
    x, gy = harness.make_inputs(256, 256, seed=2, family=family)
    ref = harness.run_reference(x, gy)
    out = harness.new_outputs(256, 256)
    solution.silu_dot_fwd_bwd_quant_fuse(x, gy, *out)
    for actual, expected in ((out[1], ref[1]), (out[3], ref[3])):
        ulps = (actual.view(torch.int32).long() - expected.view(torch.int32).long()).abs()
        assert int(ulps.max()) <= 1


def _valid(M=128, H=128):
    x, gy = harness.make_inputs(M, H, seed=0)
    return [x, gy, *harness.new_outputs(M, H)]


BAD_INPUTS = {
    "group_size": (lambda a: (a, {"group_size": 64}), "group_size must be 128"),
    "x dtype": (lambda a: ([a[0].float(), *a[1:]], {}), "x must be torch.bfloat16"),
    "grad_y dtype": (lambda a: ([a[0], a[1].half(), *a[2:]], {}), "grad_y must be torch.bfloat16"),
    "x rank": (lambda a: ([a[0].reshape(1, 128, 256), *a[1:]], {}), "x must be 2-D"),
    "not a tensor": (lambda a: ([a[0], a[1].tolist(), *a[2:]], {}), "grad_y must be a torch.Tensor"),
    "M not multiple": (lambda a: ([a[0][:100], a[1][:100], *a[2:]], {}), "multiples of 128"),
    "odd columns": (lambda a: ([a[0][:, :255], *a[1:]], {}), "even number of columns"),
    "grad_y shape": (lambda a: ([a[0], a[1][:, :64], *a[2:]], {}), "grad_y must have shape (128, 128)"),
    "q dtype": (lambda a: ([*a[:2], a[2].to(torch.int16), *a[3:]], {}), "grad_input_q must be torch.int8"),
    "scale shape": (lambda a: ([*a[:3], torch.empty(128, 3), *a[4:]], {}), "grad_input_s must have shape (128, 2)"),
    "y_q_t shape": (lambda a: ([*a[:4], a[4].T.contiguous()[:, :64], a[5]], {}), "y_q_t must have shape (128, 128)"),
    "y_s_t dtype": (lambda a: ([*a[:5], a[5].double()], {}), "y_s_t must be torch.float32"),
    "column-strided": (lambda a: ([*a[:4], a[4].T, a[5]], {}), "y_q_t must have unit column stride"),
    "overlapping rows": (lambda a: ([*a[:2], a[2].as_strided(a[2].shape, (64, 1)), *a[3:]], {}),
                         "grad_input_q must have a row stride of at least its 256 columns"),
    "device": (lambda a: ([*a[:5], a[5].to("meta")], {}), "one device"),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_raises_clear_value_error(case):
    make, message = BAD_INPUTS[case]
    args, kwargs = make(_valid())
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        solution.silu_dot_fwd_bwd_quant_fuse(*args, **kwargs)


def test_a_grid_beyond_the_backends_is_rejected_and_a_two_pass_grid_loops_over_its_tiles():
    M = 65536 * 128  # one more row of tiles than a CUDA grid's second dimension holds
    with pytest.raises(ValueError, match=r"needs a grid of \(1, 65536, 1\) programs, more than the nvidia"):
        solution.launch_plan("nvidia", M, 128)
    plan = solution.launch_plan("ascend", M, 256)  # 8 tokens x 2 groups a grad tile: 1048576 tiles
    assert plan["grad"].grid == plan["y"].grid == (65535, 1, 1)  # each program takes every 65535th tile
    plan = solution.launch_plan("ascend", 8192, 4096, sm_count=40)  # one program a vector core
    assert plan["grad"].grid == plan["y"].grid == (40, 1, 1)
    plan = solution.launch_plan("ascend", 8192, 4096)  # no count: one a tile
    assert plan["grad"].grid == (8192 // 8 * 4, 1, 1) and plan["y"].grid == (4096 // 16 * 8, 1, 1)


def test_a_two_pass_route_stores_as_many_groups_scales_at_once_as_divide_a_row():
    plan = solution.launch_plan("ascend", 1024 * 3, 2560)  # 20 channel groups, 24 token groups
    assert plan["grad"].constexprs["GROUPS"] == 4 and plan["y"].constexprs["GROUPS"] == 8
    plan = solution.launch_plan("ascend", 128 * 5, 4096)
    assert plan["grad"].constexprs["GROUPS"] == 8 and plan["y"].constexprs["GROUPS"] == 1
    assert solution.launch_plan("nvidia", 8192, 4096, route="plain")["grad"].constexprs["GROUPS"] == 1


def test_the_compiled_kernel_cache_tells_apart_each_pointers_alignment():
    # A kernel compiled for x aligned and grad_y not must not be reused for the reverse (issue: review).
    buf = torch.zeros(4096, dtype=torch.bfloat16)
    aligned, offset = buf[0:128].data_ptr(), buf[1:129].data_ptr()
    strides = (256, 128, 256, 2, 128, 1)
    assert solution._specialization((aligned, offset), strides) != solution._specialization((offset, aligned), strides)
    assert solution._specialization((aligned,), strides, [2**20])[2] == (True,)  # AMD: storage under 2 GiB
    assert "M" in solution._UNSPECIALIZED  # M only counts tiles: every kernel takes it unspecialized


class _StandInJit:
    """A JIT that specializes as Iluvatar's does: each pointer on 64-byte alignment, each integer on % 8. Each JIT
    launch returns the binary for its key; a binary launched directly on arguments of another key is recorded."""

    def __init__(self):
        self.wrong = []

    @staticmethod
    def key(args):
        """(x_ptr, stride_x), the pointer a tensor (a JIT launch) or its address (a direct one)."""
        pointer, stride = args
        address = pointer.data_ptr() if isinstance(pointer, torch.Tensor) else pointer
        return address % 64 == 0, stride % 8 == 0

    def __getitem__(self, grid):
        def jit_launch(*args, **kwargs):
            return _StandInBinary(self, self.key(args))
        return jit_launch


class _StandInBinary:
    def __init__(self, jit, key):
        self.jit, self.built_for = jit, key

    def __getitem__(self, grid):
        def run(*args, stream=None):
            if self.jit.key(args) != self.built_for:
                self.jit.wrong.append((self.built_for, self.jit.key(args)))
        return run


def test_a_binary_is_launched_only_on_arguments_of_the_key_its_jit_compiled_it_for(monkeypatch):
    """Iluvatar's JIT keys pointers on 64-byte alignment and integers on % 8: a call whose pointers are 16- but not
    64-byte aligned, or whose stride is a multiple of 8 where another's is not (neither a multiple of 16), must not run a
    binary compiled for the other. Upstream's key (16 bytes, % 16) runs the first binary on both: d1e91f9 did
    (results/session-h200-2026-12-01/jit-key-standin-d1e91f9-cpu.txt)."""
    monkeypatch.setattr(solution, "_INTERPRET", False)
    jit = _StandInJit()
    launch = solution.KernelLaunch("main", jit, (1,), {"x_ptr": "*bf16", "stride_x": "i32"}, {}, {})
    device = types.SimpleNamespace(backend=solution.BACKENDS["iluvatar"])
    buf = torch.zeros(4096, dtype=torch.bfloat16)
    found = [(launch, (0, 1), {}, set())]
    for tensor, stride in ((buf[0:], 256), (buf[8:], 256), (buf[0:], 272), (buf[0:], 264), (buf[0:], 260),
                           (buf[0:], 256)):
        args = (tensor, stride)
        specialization = solution._specialization((tensor.data_ptr(),), (stride,))
        for _ in range(2):  # a JIT launch, then a direct one
            solution._launch_all(found, args, specialization, device)
    assert jit.wrong == []
    assert len(found[0][2]) == 5  # one binary a key: the first and the last call share one


def test_h_not_multiple_of_128_is_rejected():
    x = torch.zeros(128, 2 * 192, dtype=torch.bfloat16)
    gy = torch.zeros(128, 192, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="H=192"):
        solution.silu_dot_fwd_bwd_quant_fuse(x, gy, *harness.new_outputs(128, 128))


def test_launch_settings_pick_sixteen_warps_only_when_they_need_no_more_rounds():
    def warps(M, H, sm_count):
        return solution.launch_settings("nvidia", M, H, sm_count).num_warps
    assert warps(2048, 4096, None) == 8 and warps(2048, 4096, 132) == 16  # 512 tiles: 2 rounds either way
    assert warps(4096, 2560, 132) == 8  # 640 tiles: 2 rounds vs 3
    assert warps(1024, 4096, 132) == 8  # 256 tiles: one round of three
    assert warps(8192, 4096, 132) == 8  # 2048 tiles: 6 rounds vs 8


@pytest.mark.parametrize("name", sorted(solution.BACKENDS))
def test_every_backend_launches_within_its_limits_with_options_it_accepts(name):
    backend = solution.BACKENDS[name]
    assert backend.route in solution.ROUTES
    # None and 0: the driver reports none (Ascend reports 0); Moore Threads' warps are 128 wide before
    # capability 3.
    for warp_size in (None, 0, backend.warp_size) + ((128,) if name == "mthreads" else ()):
        for launch in solution.launch_plan(backend, 2048, 4096, sm_count=132, warp_size=warp_size).values():
            threads = launch.options["num_warps"] * (warp_size or backend.warp_size)
            assert launch.options["num_warps"] >= 1
            assert threads <= max(backend.max_threads, warp_size or 0), (launch.name, warp_size)
            assert set(launch.options) - {"num_warps", "num_stages", "enable_fp_fusion"} <= set(backend.options)
            assert launch.options["enable_fp_fusion"] is False
            assert all(n <= limit for n, limit in zip(launch.grid, backend.max_grid))


def test_other_routes_take_their_records_threads_within_the_backends_and_no_register_cap():
    for name, warp_size in (("amd", 64), ("unknown", 32), ("iluvatar", 64), ("metax", 64)):
        for route in solution.BACKENDS[name].routes:
            record = solution.ROUTE_TABLE[route]
            for M, H in ((1024, 4096), (2048, 4096)):  # 256 and 512 tiles on 132 SMs: two an SM, and more
                settings = solution.launch_settings(name, M, H, 132, route=route, warp_size=warp_size)
                crowded = record.many_tiles and M * H // 128**2 > solution.MANY_TILES_PER_SM * 132
                want_threads, want_chunk = record.many_tiles if crowded else (record.threads, record.chunk)
                threads = min(want_threads, solution.BACKENDS[name].max_threads)
                assert settings.num_warps * warp_size == threads and settings.maxnreg is None, (name, route)
                assert (settings.chunk, settings.y_chunk) == (want_chunk, record.y_chunk), (name, route)
    assert solution.launch_settings("amd", 2048, 4096, 132, route="native_per_element")[:3] == (4, 16, 64)
    assert solution.launch_settings("amd", 2048, 4096, None, route="native_per_element")[:3] == (8, 32, 64)
    assert solution.launch_settings("metax", 2048, 4096, route="native_per_element").num_warps * 64 == 512
    assert solution.launch_settings("nvidia", 2048, 4096, route="generic_per_element").maxnreg is None
    with pytest.raises(ValueError, match="unknown route 'cuda'"):
        solution.launch_settings("nvidia", 128, 128, route="cuda")


@pytest.mark.parametrize("warp_size", [None, 32, 128])
def test_moore_threads_launches_four_warps_of_any_width_in_short_slices(warp_size):
    """What the public entry that passes there launches: 4 warps, whatever the warp width the driver reports
    (128 on the S4000); slices and y rows capped for that many threads."""
    for route in solution.BACKENDS["mthreads"].routes:
        record = solution.ROUTE_TABLE[route]
        settings = solution.launch_settings("mthreads", 2048, 4096, 100, route=route, warp_size=warp_size)
        assert settings.num_warps == 4 and settings.maxnreg is None, route
        assert (settings.chunk, settings.y_chunk) == (min(record.chunk, 16), min(record.y_chunk, 32)), route


@pytest.mark.parametrize("release", [(3, 1), (3, 5), (3, 6), (3, 7)])
def test_only_programs_of_128_threads_load_a_slice_ahead_on_the_per_element_routes_from_triton_3_6(release,
                                                                                                   monkeypatch):
    """Moore Threads' 4 warps where they are 32 wide (None: the backend's 32); not at 128 wide (the S4000's
    512 threads), and no other backend's launch."""
    monkeypatch.setattr(solution, "_TRITON_VERSION", release)
    for warp_size, threads_allow in ((None, True), (32, True), (128, False)):
        for route in solution.ROUTES:
            record = solution.ROUTE_TABLE[route]
            per_element_fused = not record.two_pass and not record.sigmoid_table
            settings = solution.launch_settings("mthreads", 2048, 4096, route=route, warp_size=warp_size)
            assert settings.prefetch is (release >= (3, 6) and threads_allow and per_element_fused), (warp_size, route)
    for name, backend in solution.BACKENDS.items():
        for route in backend.routes if name != "mthreads" else ():
            assert not solution.launch_settings(name, 2048, 4096, 132, route=route).prefetch, (name, route)


def test_a_probed_route_compiles_each_feature_ieee_alone_and_all_together():
    compositions = {route: solution.route_compositions(route) for route in solution.ROUTES}
    each = tuple(solution.IEEE_FEATURES)
    assert compositions["native_per_element"] == [()] + [(f,) for f in each] + [each]
    assert all(c == [()] for route, c in compositions.items() if not solution.ROUTE_TABLE[route].probed)
    for feature, bit in solution.IEEE_FEATURES.items():
        ieee = solution.launch_plan("nvidia", 2048, 4096, route="native_per_element", ieee=[feature])
        plain = solution.launch_plan("nvidia", 2048, 4096, route="native_per_element")
        for name in ("probe", "main"):
            assert (plain[name].constexprs["IEEE"], ieee[name].constexprs["IEEE"]) == (0, bit)
        # the per-element sigmoid in its IEEE form reads three entries of the table: it is filled then only
        assert ("sigmoid_table" in ieee) is (feature == "sigmoid") and "sigmoid_table" not in plain
        every_ieee = solution.launch_plan("nvidia", 2048, 4096, route="generic_per_element")["main"].constexprs
        assert every_ieee["IEEE"] & bit


@pytest.mark.parametrize("failed, ieee, turned", [
    (["sigmoid"], (), {"sigmoid"}),
    (["bf16 rounding", "pipeline"], (), {"bf16 rounding"}),
    (["fma", "quantizer", "pipeline"], (), {"division"}),  # the quantizer's fma: its division
    (["quantizer", "pipeline"], (), {"int8 conversion"}),  # the conversion first ...
    (["quantizer"], ("int8 conversion",), {"division"}),  # ... then the division
    (["fma"], ("division",), set()),  # explained: the division no longer takes the fma
    (["pipeline"], (), None),  # no feature explains it: the rung is left
    (["quantizer"], ("int8 conversion", "division"), None),
])
def test_each_failed_check_turns_the_feature_it_points_at(failed, ieee, turned):
    turn = solution.ieee_features_for("native_per_element", failed, ieee)
    assert (set(turn) if turn is not None else None) == turned
    assert all(check in failed for check in (turn or {}).values())


def test_a_table_routes_sigmoid_check_has_no_ieee_form():
    """It proves the table's gather, which has none: the rung is left (its next rung computes the sigmoid)."""
    assert solution.ieee_features_for("native", ["sigmoid"]) is None
    assert "sigmoid" not in {f for c in solution.route_compositions("native") for f in c}


@pytest.mark.parametrize("device_type, target, name, expected", [
    ("cuda", "cuda", "NVIDIA H100 80GB HBM3", "nvidia"),
    ("cuda", "cuda", None, "nvidia"),
    ("cuda", "cuda", "Tesla V100-SXM2-16GB", "nvidia"),  # older drivers' names
    ("cuda", "cuda", "A100-SXM4-40GB", "nvidia"),
    ("cuda", "cuda", "GeForce RTX 3090", "nvidia"),
    ("cuda", "cuda", "H100 PCIe", "nvidia"),
    ("cuda", "cuda", "TITAN V", "nvidia"),
    ("cuda", "cuda", "Iluvatar BI-V150", "iluvatar"),
    ("cuda", "cuda", "PPU-ZW810", "thead"),
    ("cuda", "cuda", "Some CUDA-compatible card", "unknown"),
    ("cuda", "maca", "MetaX C500", "metax"),
    ("cuda", "hip", "AMD Instinct MI300X", "amd"),
    ("cuda", "hip", "HYGON DCU K100_AI", "hygon"),
    ("musa", "musa", "MTT S4000", "mthreads"),
    ("npu", "npu", "Ascend910B3", "ascend"),
    ("cpu", "interpreter", None, "interpreter"),
    ("xpu", "xpu", "Intel Data Center GPU Max", "unknown"),
])
def test_backends_are_recognised_by_device_type_target_and_name(device_type, target, name, expected):
    assert solution.backend_for(device_type, target, name).name == expected


def test_the_probe_on_a_device_fits_the_grid_of_every_backend_that_probes():
    """The device-sized probe is one launch of one grid dimension: it must fit the smallest first grid
    dimension of any backend whose ladder holds a probed route (the unknown backend's 65,535: a probe of 66,304
    programs there made every first call raise)."""
    programs = sum(solution._probe_programs_per_check(solution._PROBE_SIZE_ON_DEVICE))
    probing = [b for b in solution.BACKENDS.values() if any(solution.ROUTE_TABLE[r].probed for r in b.routes)]
    assert {b.name for b in probing} >= {"unknown", "nvidia", "hygon", "iluvatar", "thead", "metax", "mthreads"}
    assert programs == 33152 and all(programs <= b.max_grid[0] for b in probing), programs


def test_keep_y_is_a_two_pass_dataflow_of_column_loads():
    # keep_y picks the y kernel of a two-pass route; it would be ignored on a fused one, or hide a transposing one.
    for route in solution.ROUTE_TABLE.values():
        assert not route.keep_y or (route.two_pass and route.exact and not route.transpose_in_registers), route.name


def test_routes_take_their_features():
    for name, backend in solution.BACKENDS.items():
        for route_name in backend.routes:
            route = solution.ROUTE_TABLE[route_name]
            plan = solution.launch_plan(backend, 1024, 2560, route=route_name, arch=90, sm_count=132)
            # the table is filled where it is gathered, and where the sigmoid per element runs IEEE (it reads three)
            reads_table = route.sigmoid_table or (not route.native_math and not route.two_pass)
            assert ("sigmoid_table" in plan) is reads_table, (name, route_name)
            assert ("probe" in plan) is route.probed is (route.native_math and not route.ptx), (name, route_name)
            if route.two_pass:
                assert list(plan) == ["probe"] * route.probed + ["grad", "y"]
                assert plan["y"].kernel is (solution._y_kept_kernel if route.keep_y
                                            else solution._y_transposed_kernel if route.transpose_in_registers
                                            else solution._y_columns_kernel)
                # y handed through the scratch where the route keeps it, else computed again from x
                assert plan["grad"].constexprs["KEEP_Y"] is route.keep_y
                assert ("scratch_ptr" in plan["y"].signature) is route.keep_y is ("x_ptr" not in plan["y"].signature)
                for launch in (plan["grad"], plan["y"]):
                    assert launch.constexprs["EXACT"] is route.exact
                    assert launch.constexprs["NPU_DIVISION"] is route.npu_division
                # plain and Ascend's compute their IEEE sigmoid whole; a native one reads the table's three (every
                # kernel that computes a sigmoid: the y kernel of a route that keeps y computes none)
                for launch in (plan["grad"], plan["y"]):
                    assert launch.constexprs.get("TABLE_FREE", not route.native_math) is not route.native_math
                assert ("TABLE_FREE" in plan["y"].constexprs) is not route.keep_y
                continue
            main = plan["main"]
            assert ("maxnreg" in main.options) is (route.ptx and "maxnreg" in backend.options)
            assert main.constexprs["IEEE"] == (0 if route.native_math else solution.IEEE_ALL.value)
            assert main.constexprs["SIGMOID_TABLE"] is route.sigmoid_table
            # Under the interpreter no route runs PTX or libdevice (on the GPU, see test_compiled_kernel
            # and the compile matrix).
            assert main.constexprs["CUDA_ARCH"] == 0 and main.constexprs["NO_LIBDEVICE"]
            assert set(main.signature) | set(main.constexprs) == set(main.kernel.arg_names)
            if route.probed:  # the probe proves the main kernel's arithmetic under its options
                assert plan["probe"].options == main.options
                same = ("CUDA_ARCH", "NO_LIBDEVICE", "IEEE")
                assert {k: plan["probe"].constexprs[k] for k in same} == {k: main.constexprs[k] for k in same}


def test_a_persistent_route_launches_as_many_programs_as_the_device_holds():
    """sm_count * resident programs, never more than the tiles; one a tile where either is unknown."""
    def grid(M, H, **kwargs):
        return solution.launch_plan("nvidia", M, H, route="native", arch=90, **kwargs)["main"].grid
    assert solution.ROUTE_TABLE["native"].persistent
    assert grid(8192, 4096, sm_count=132, resident=3) == (396, 1, 1)  # 2048 tiles
    assert grid(1024, 2560, sm_count=132, resident=3) == (160, 1, 1)  # 160 tiles
    assert grid(8192, 4096, sm_count=132) == grid(8192, 4096, resident=3) == (2048, 1, 1)
    assert solution.launch_plan("nvidia", 8192, 4096, route="native")["main"].constexprs["PERSISTENT"]
    assert grid(128 * 1024, 128 * 600, sm_count=132, resident=3) == (396, 1, 1)
    assert solution.launch_plan("unknown", 128 * 1024, 128 * 600, route="native")["main"].grid == (65535, 1, 1)


def test_resident_programs_is_none_where_nothing_tells():
    assert solution.resident_programs(None, 0, 32) is None  # the interpreter compiles nothing


def test_every_ladder_drops_one_feature_at_a_time():
    """native + table, native per element, IEEE per element, then two-pass: native, IEEE (plain), tolerant: a rung
    below another never has a feature the one above lacks, but a two-pass rung below a fused one (nvidia's own rungs
    on top, Ascend's routes apart)."""
    order = ("exact", "native_math", "sigmoid_table")
    for name, backend in solution.BACKENDS.items():
        if name in ("ascend", "interpreter"):
            continue
        portable = [r for r in backend.routes if not solution.ROUTE_TABLE[r].ptx]
        assert portable == ["native", "native_per_element", "generic_per_element", "native_two_pass", "plain",
                            "tolerant"], name
        for above, below in zip(portable, portable[1:]):
            a, b = solution.ROUTE_TABLE[above], solution.ROUTE_TABLE[below]
            assert [getattr(b, f) for f in order] < [getattr(a, f) for f in order] or (b.two_pass and not a.two_pass), (
                above, below)


def test_the_route_variable_and_output_layout_are_the_kits():
    assert harness.ROUTE_ENV == solution.ROUTE_ENV
    layout = solution._expected_layout(256, 384)
    assert [layout[name] for name in harness.OUTPUT_NAMES] == list(harness.output_shapes(256, 384))


def _force_route(monkeypatch, route):
    """SILU_DOT_ROUTE is read when a device is first set up: set it, and forget the devices set up so far."""
    monkeypatch.setenv("SILU_DOT_ROUTE", route)
    monkeypatch.setattr(solution, "_devices", {})


def test_the_table_is_gathered_only_where_triton_compiles_the_gather():
    assert solution._SIGMOID_TABLE is (hasattr(tl, "gather") and solution._TRITON_VERSION >= (3, 4))
    assert solution._TRITON_VERSION == tuple(int(p) for p in triton.__version__.split(".")[:2])


@pytest.mark.parametrize("route", [r for r in solution.ROUTES if solution.ROUTE_TABLE[r].exact
                                   and r not in solution.BACKENDS["ascend"].routes])
@pytest.mark.parametrize("family", ["randn", "large", "heavy"])
def test_every_exact_route_matches_the_reference_under_the_interpreter(route, family, monkeypatch):
    """(Ascend's exact rungs and the tolerant ones: tests/test_two_pass_rungs.py, which holds the Ascend rungs to
    generic_per_element's bytes on every family and those bytes to the reference.)"""
    if solution.ROUTE_TABLE[route].native_math:  # numpy's own arithmetic fails the probe (tests/test_probe.py)
        native_arithmetic.install(monkeypatch)
    _force_route(monkeypatch, route)
    M, H = 256, 256
    x, gy = harness.make_inputs(M, H, seed=4, family=family)
    ref = harness.run_reference(x, gy)
    out = harness.new_outputs(M, H)
    solution.silu_dot_fwd_bwd_quant_fuse(x, gy, *out)
    assert solution.route_for("cpu") == route
    result = harness.compare(out, ref)
    assert result["passed"], result["checks"]


def test_the_computed_sigmoid_of_triton_without_gather_matches_too(monkeypatch):
    monkeypatch.setattr(solution, "_SIGMOID_TABLE", False)
    monkeypatch.delenv(solution.ROUTE_ENV, raising=False)
    monkeypatch.setattr(solution, "_devices", {})
    x, gy = harness.make_inputs(128, 256, seed=7, family="large")
    ref = harness.run_reference(x, gy)
    out = harness.new_outputs(128, 256)
    solution.launch(x, gy, *out)
    assert solution.route_for("cpu") == "generic_per_element"  # the table rungs are left out of the ladder
    assert harness.compare(out, ref)["passed"]
    _force_route(monkeypatch, "native")
    with pytest.raises(ValueError, match="SILU_DOT_ROUTE=native needs tl.gather"):
        solution.launch(x, gy, *out)


def test_a_forced_route_must_be_known(monkeypatch):
    _force_route(monkeypatch, "cuda")
    with pytest.raises(ValueError, match="SILU_DOT_ROUTE must be one of"):
        solution.silu_dot_fwd_bwd_quant_fuse(*_valid())


def _sprinkle_non_finite(x, gy):
    """NaN, +inf and -inf in gates, ups and grad_y, an inf gate, inf * 0, and a group whose absmax is inf."""
    H = gy.shape[1]
    x[0, 3] = float("nan")              # NaN gate: its row's groups and its y group are NaN
    x[5, H + 7] = float("nan")          # NaN up
    gy[9, 130] = float("nan")           # NaN grad_y
    x[12, 20], x[13, 21] = float("inf"), float("-inf")  # sigmoid saturates; -inf * 0 = NaN in silu
    x[40, H + 40] = float("inf")        # inf up: y is inf, d_up group absmax inf
    gy[40, 40] = 0.0                    # and gy * up = 0 * inf there
    gy[70, 200] = float("-inf")         # a grad group whose absmax is inf: v / inf and inf / inf
    return x, gy


@pytest.mark.parametrize("route", ["nvidia", "ascend_transposed", "ascend_columns"])
def test_non_finite_inputs_propagate_as_in_the_reference(route, monkeypatch):
    native_arithmetic.install(monkeypatch)  # the nvidia route's probe passes on it
    # The CPU reference divides absmax by 127 where the GPU's multiplies by 1/127, so a group's
    # largest int8 may differ by one here; groups with a non-finite absmax must match exactly.
    _force_route(monkeypatch, route)
    M, H = 128, 256
    x, gy = _sprinkle_non_finite(*harness.make_inputs(M, H, seed=5))
    ref = harness.run_reference(x, gy)
    out = harness.new_outputs(M, H)
    solution.silu_dot_fwd_bwd_quant_fuse(x, gy, *out)
    for name, q, s, ref_q, ref_s in (("grad_input", out[0], out[1], ref[0], ref[1]),
                                     ("y", out[2], out[3], ref[2], ref[3])):
        assert torch.equal(torch.isnan(s), torch.isnan(ref_s)), name
        assert torch.equal(torch.isinf(s), torch.isinf(ref_s)), name
        assert torch.isnan(ref_s).any(), name  # the fixture reaches both outputs
        non_finite = ~torch.isfinite(ref_s).repeat_interleave(harness.GROUP_SIZE, dim=1)
        assert torch.equal(q[non_finite], ref_q[non_finite]), name
        assert (q.int() - ref_q.int()).abs().max() <= 1, name
    assert torch.isinf(ref[1]).any()  # a group with an inf absmax


def test_row_strided_views_give_the_same_bytes_and_leave_the_padding_alone():
    M, H, pad = 256, 128, 48
    x, gy = harness.make_inputs(M, H, seed=6)
    ref = harness.new_outputs(M, H)  # the bytes of a call on contiguous tensors
    solution.silu_dot_fwd_bwd_quant_fuse(x, gy, *ref)
    x_buf = torch.full((M, 2 * H + pad), 3.0, dtype=torch.bfloat16)
    gy_buf = torch.full((M, H + pad), 3.0, dtype=torch.bfloat16)
    x_buf[:, :2 * H], gy_buf[:, :H] = x, gy
    bufs = [torch.full((t.shape[0], t.shape[1] + pad), 5, dtype=t.dtype) for t in harness.new_outputs(M, H)]
    views = [b[:, :t.shape[1]] for b, t in zip(bufs, ref)]
    solution.silu_dot_fwd_bwd_quant_fuse(x_buf[:, :2 * H], gy_buf[:, :H], *views)
    for view, expected, buf in zip(views, ref, bufs):
        assert harness.differing_bytes(view, expected) == 0
        assert (buf[:, expected.shape[1]:] == 5).all()


def _same_bytes_as_the_default_launch(monkeypatch, route, M=256, H=384, then=lambda: None):
    """The differing bytes of the route forced against the default one's, `then` called between the two."""
    x, gy = harness.make_inputs(M, H, seed=8, family="heavy")
    expected = harness.new_outputs(M, H)
    solution.silu_dot_fwd_bwd_quant_fuse(x, gy, *expected)
    then()
    _force_route(monkeypatch, route)
    out = harness.new_outputs(M, H)
    solution.silu_dot_fwd_bwd_quant_fuse(x, gy, *out)
    return [harness.differing_bytes(o, e) for o, e in zip(out, expected)]


@pytest.mark.parametrize("route", ["plain", "ascend_columns"])
def test_a_two_pass_grid_of_fewer_programs_than_tiles_writes_the_same_bytes(route, monkeypatch):
    # At most 5 programs (the backend's grid cap, set once the default route has run: its table fill takes 8):
    # each program walks several tiles of each kernel, some programs one tile more than others.
    M, H = 256, 256
    tiles = [launch.grid[0] for launch in solution.launch_plan("interpreter", M, H, route=route).values()]
    assert all(n > 2 * 5 and n % 5 for n in tiles), tiles

    def cap_the_grid():
        monkeypatch.setitem(solution.BACKENDS, "interpreter",
                            solution.BACKENDS["interpreter"]._replace(max_grid=(5, 1, 1)))
    assert _same_bytes_as_the_default_launch(monkeypatch, route, M=M, H=H, then=cap_the_grid) == [0, 0, 0, 0]
    [(grad, _, _, _), (y, _, _, _)], = solution._device(torch.empty(0)).launches.values()
    assert grad.grid == y.grid == (5, 1, 1)


@pytest.mark.parametrize("index_64", [False, True])
def test_loads_a_slice_ahead_write_the_same_bytes(index_64, monkeypatch):
    def prefetch():  # the interpreter's programs have 256 threads
        monkeypatch.setattr(solution, "_PREFETCH_MAX_THREADS", 256)
        monkeypatch.setattr(solution, "_PREFETCH_FROM", solution._TRITON_VERSION)
        check = solution._check_inputs
        monkeypatch.setattr(solution, "_check_inputs", lambda *args: (*check(*args)[:3], index_64, check(*args)[4]))
    assert _same_bytes_as_the_default_launch(monkeypatch, "generic_per_element", then=prefetch) == [0, 0, 0, 0]
    [(main, _, _, _)], = solution._device(torch.empty(0)).launches.values()
    assert main.constexprs["PREFETCH"] is True and main.constexprs["INDEX_64"] is index_64
    assert main.constexprs["CHUNK"] < solution.GROUP_SIZE


def test_64_bit_offsets_write_the_same_bytes(monkeypatch):
    check = solution._check_inputs
    monkeypatch.setattr(solution, "_check_inputs", lambda *args: (*check(*args)[:3], True, check(*args)[4]))
    assert _same_bytes_as_the_default_launch(monkeypatch, "generic_per_element") == [0, 0, 0, 0]
    [(main, _, _, _)], = solution._device(torch.empty(0)).launches.values()
    assert main.constexprs["INDEX_64"] is True


def test_offsets_widen_to_64_bits_only_past_2_to_the_31_elements():
    def needs_64(M, H, x_row_stride=None):
        x = torch.empty(M, 2 * H, dtype=torch.bfloat16, device="meta")
        if x_row_stride:
            x = torch.empty(M, x_row_stride, dtype=torch.bfloat16, device="meta")[:, :2 * H]
        args = [x, torch.empty(M, H, dtype=torch.bfloat16, device="meta"),
                *[torch.empty(shape, dtype=dtype, device="meta") for shape, dtype in harness.output_shapes(M, H)]]
        return solution._check_inputs(*args, 128)[3]
    assert not needs_64(131072, 8192)         # x spans exactly 2**31 elements
    assert needs_64(131072, 8192, 16384 + 128)  # a wider row stride takes it past
    assert needs_64(262144, 8192)


class _StandInDevice:
    """torch.musa / torch.npu as a backend's torch module would have them, recording each call."""

    def __init__(self, calls, name):
        self.calls, self.name = calls, name

    def __getattr__(self, attr):
        def record(*args, **kwargs):
            self.calls.append(f"{self.name}.{attr}")
            return {"current_device": 0, "get_device_name": "Stand-in", "is_current_stream_capturing": False}.get(
                attr, contextlib.nullcontext())
        return record


@pytest.mark.parametrize("device_type, backend", [("musa", "mthreads"), ("npu", "ascend")])
def test_a_device_that_is_not_cuda_never_reaches_torch_cuda(device_type, backend, monkeypatch):
    native_arithmetic.install(monkeypatch)  # Moore Threads' first rung is native: its probe runs here
    calls = []
    monkeypatch.setattr(torch, device_type, _StandInDevice(calls, device_type), raising=False)
    for attr in ("device", "current_device", "synchronize", "get_device_properties", "get_device_name"):
        monkeypatch.setattr(torch.cuda, attr, lambda *a, _attr=attr, **k: calls.append(f"cuda.{_attr}"))
    monkeypatch.setattr(solution, "_target", lambda x: (device_type, None, 0, None))
    monkeypatch.setattr(solution, "_devices", {})
    monkeypatch.delenv(solution.ROUTE_ENV, raising=False)
    empty = torch.empty  # the table lands on the CPU, where the interpreter fills it
    monkeypatch.setattr(torch, "empty", lambda *a, device=None, **k: empty(
        *a, device=None if isinstance(device, types.SimpleNamespace) else device, **k))
    x, gy = harness.make_inputs(128, 128, seed=0)
    x = _on_stand_in(x, device_type)
    device = solution._device(x)
    assert device.backend.name == backend and device.route == solution.BACKENDS[backend].route
    assert f"{device_type}.synchronize" in calls and f"{device_type}.get_device_name" in calls
    assert not [c for c in calls if c.startswith("cuda.")], calls


def _on_stand_in(t, device_type):
    """t, reporting itself to be on device_type:0 (its data stays on the CPU, where the interpreter runs)."""
    class OnStandIn(torch.Tensor):
        @property
        def device(self):
            return types.SimpleNamespace(type=device_type, index=0)

        def get_device(self):
            return 0
    return t.as_subclass(OnStandIn)


def test_a_proofs_run_stamp_compiles_no_binary_of_its_own():
    """The stamp changes every run: specialized, a stamp divisible by 16 (or equal to 1) would compile another binary
    in the middle of a proof. Read from the JIT functions, which the interpreter replaces: in a process of its own."""
    code = ("import solution\n"
            "for kernel in (solution._witness_check_kernel, solution._ordering_check_kernel):\n"
            "    assert 'stamp' in kernel.arg_names and 'stamp' in kernel.do_not_specialize, kernel\n"
            "print('ok')\n")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=harness.ROOT, env=env,
                          timeout=300)
    assert proc.stdout.strip() == "ok", proc.stderr[-2000:]


class _RecordingKernel:
    """A compiled kernel that records each launch: how (through its runner, kernel[grid](...), or its launcher,
    kernel.run, called as the runner calls it with no launch hook set), its grid, its arguments, its stream."""
    function, packed_metadata = object(), (1, 2, 3)

    def __init__(self):
        self.launches = []

    def __getitem__(self, grid):
        return lambda *args, stream: self.launches.append(("runner", grid, args, stream))

    def run(self, grid_x, grid_y, grid_z, stream, function, packed_metadata, launch_metadata, enter, leave, *args):
        assert (function, packed_metadata, launch_metadata, enter, leave) == (
            self.function, self.packed_metadata, None, None, None)
        self.launches.append(("launcher", (grid_x, grid_y, grid_z), args, stream))


def test_a_ready_call_launches_its_compiled_kernel_on_the_stream_with_the_calls_own_arguments(monkeypatch):
    """The ready path (a GPU's, after a key's first direct launch), on a stand-in device: a call whose key is ready
    launches the kernel kept for it, on the driver's stream, with the addresses of its own tensors, the device's table
    and the scratch kept for its stream, and its strides; a second call with the same arguments finds it through the memo; one being
    captured into a graph takes a scratch of its own and leaves the memo alone; another alignment is not ready. With no
    launch hook set the kernel's launcher is called as its runner calls it; with one set (a profiler's), the runner."""
    M, H = 128, 256
    x, gy = harness.make_inputs(M, H, seed=2)
    out = harness.new_outputs(M, H)
    kernel = _RecordingKernel()
    capturing = []
    device = types.SimpleNamespace(launches_ready=True, last_ready=None, ready={}, index=0,
                                   table=torch.zeros(8), capturing=lambda: bool(capturing),
                                   scratch=types.SimpleNamespace(), module=None)
    device.scratch_for = types.MethodType(solution._Device.scratch_for, device)
    monkeypatch.setitem(solution._devices, x.get_device(), device)
    monkeypatch.setattr(solution, "_current_stream", lambda device: 7)
    hooks = types.SimpleNamespace(launch_enter_hook=None, launch_exit_hook=types.SimpleNamespace(calls=[]))
    monkeypatch.setattr(solution, "_LAUNCH_HOOKS", hooks)
    _, _, strides, _, addresses = solution._check_inputs(x, gy, *out, 128)
    scratch = device.scratch_for(7, M * H)
    key = (M, H, None, solution._specialization(addresses + (device.table.data_ptr(), scratch.data_ptr()), strides))
    device.ready[key] = ((kernel, (2, 1, 1), None, (5,)),)
    for _ in range(2):
        assert solution.launch(x, gy, *out) is kernel
    assert device.last_ready[1] is scratch
    expected = ((2, 1, 1), (*(t.data_ptr() for t in (x, gy, *out, device.table, scratch)), M, H, *strides, 5), 7)
    assert kernel.launches == [("launcher", *expected)] * 2
    for hook_set in ({"launch_enter_hook": print}, {"launch_exit_hook": types.SimpleNamespace(calls=[print])}):
        monkeypatch.setattr(solution, "_LAUNCH_HOOKS", types.SimpleNamespace(**{**vars(hooks), **hook_set}))
        solution.launch(x, gy, *out)
        assert kernel.launches[-1] == ("runner", *expected)
    monkeypatch.setattr(solution, "_LAUNCH_HOOKS", None)  # where the runner reads its hooks is not known
    solution.launch(x, gy, *out)
    assert kernel.launches[-1] == ("runner", *expected)
    capturing.append(True)
    device.last_ready = None
    monkeypatch.setattr(solution, "_device", lambda *a: pytest.fail("a ready call took the long way"))
    try:
        solution.launch(x, gy, *out)  # the captured call's scratch is its own: its key is another's unless aligned
    except BaseException as exc:  # not ready at its fresh scratch's alignment: the long way, which fails here
        assert "long way" in str(exc)
    else:
        assert kernel.launches[-1][2][7] != scratch.data_ptr()
    assert device.last_ready is None
    capturing.clear()
    shifted = torch.empty(M * 2 * H + 8, dtype=torch.bfloat16)[8:].view(M, 2 * H)
    shifted.copy_(x)
    with pytest.raises(BaseException, match="long way"):
        solution.launch(shifted, gy, *out)  # x 16 bytes off: another key, not ready


def test_a_compiled_kernel_that_cannot_be_launched_directly_is_launched_through_its_jit(monkeypatch):
    """_launch_all on a stand-in: a compiled kernel whose launcher takes other arguments (TypeError), or which lacks
    what its runner would pass (a fork's CompiledKernel without packed_metadata), is launched through the JIT, for
    good; one that launches directly counts as direct."""
    monkeypatch.setattr(solution, "_LAUNCH_HOOKS", types.SimpleNamespace(launch_enter_hook=None, launch_exit_hook=None))
    jit_launches = []

    class Jit:
        def __getitem__(self, grid):
            return lambda *args, **kwargs: jit_launches.append(args) or "jit kernel"

    class Refusing:
        function, packed_metadata, constexpr_values = 1, (), ()

        def run(self, *args):
            raise TypeError("takes other arguments")

    class WithoutMetadata:
        function, constexpr_values = 1, ()

        def run(self, *args):
            pytest.fail("launched without its runner's metadata")

    planned = types.SimpleNamespace(kernel=Jit(), grid=(1, 1, 1), constexprs={}, options={})
    args = (torch.zeros(2), 3)
    for stand_in in (Refusing(), WithoutMetadata()):
        compiled = {"key": stand_in}
        kernel, direct = solution._launch_all([(planned, (0, 1), compiled, set())], args, "key", None, stream=7)
        assert (kernel, direct, compiled["key"]) == ("jit kernel", False, None)
    assert len(jit_launches) == 2
    launched = []
    direct_kernel = types.SimpleNamespace(function=1, packed_metadata=(), constexpr_values=(),
                                          run=lambda *a: launched.append(a))
    kernel, direct = solution._launch_all([(planned, (0, 1), {"key": direct_kernel}, set())], args, "key", None,
                                          stream=7)
    assert (kernel, direct) == (direct_kernel, True) and launched[0][:9] == (1, 1, 1, 7, 1, (), None, None, None)


def test_every_launch_compiled_before_a_call_gets_stand_ins_of_its_own_types():
    """The set-up's compile before a call (_stand_ins): a tensor of each pointer's dtype, GROUP_SIZE for each i32, for
    every launch any backend plans on any route; a pointer of a type it has no stand-in for is a KeyError, not an
    integer in its place."""
    dtypes = {"*bf16": torch.bfloat16, "*i8": torch.int8, "*fp32": torch.float32, "*i32": torch.int32}
    device = types.SimpleNamespace(table=torch.empty(0))
    launches = [launch for backend in solution.BACKENDS for route in solution.ROUTES
                for plan in (solution.launch_plan(backend, 128, 256, route=route, arch=90, sm_count=132),
                             solution.witness_plan(backend, 128, 256, route=route))
                for launch in plan.values()]
    assert {"probe", "ordering", "sigmoid_table", "witness_check"} <= {launch.name for launch in launches}
    for launch, args in solution._stand_ins(launches, device):
        assert len(args) == len(launch.signature)
        for kind, arg in zip(launch.signature.values(), args):
            assert arg == solution.GROUP_SIZE if kind == "i32" else arg.dtype == dtypes[kind], (launch.name, kind)
    odd = launches[0]._replace(signature={"half_ptr": "*fp16"})
    with pytest.raises(KeyError):
        solution._stand_ins([odd], device)
