"""judge_targets: the judge's chips as rows, the limits check of a plan, how far a row says it got, and the
places derived from or checked against JUDGE_CHIPS. CPU only and no compiles here: CI compiles every row
with `check.py --targets judge`."""
import re
import sys
from types import SimpleNamespace

import pytest

import compile_matrix
import harness
import judge_targets
import solution
from fixtures.broken_solutions import JUDGE
from test_check import make_broken
from test_compile_matrix import run_targets


def test_the_judge_chips_are_the_competitions():
    # The competition's chips (README.md, Scoring): adding one is an entry of JUDGE_CHIPS and this line.
    assert set(judge_targets.JUDGE_CHIPS) == {"nvidia", "hygon", "iluvatar", "metax", "thead", "mthreads", "ascend"}


def fake_backend(**fields):
    defaults = dict(name="fake", device_type="cuda", targets=("cuda",), routes=("generic_per_element",), warp_size=32,
                    max_threads=1024, options=(), max_grid=(2**31 - 1, 65535, 65535), triton="3.6")
    return SimpleNamespace(**{**defaults, **fields})


def _kernel():
    pass


def fake_launch(num_warps=8, grid=(20, 8, 1), **options):
    return SimpleNamespace(name="main", kernel=_kernel, grid=grid, signature={"x_ptr": "*bf16"}, constexprs={"C": 1},
                           options={"num_warps": num_warps, "num_stages": 1, "enable_fp_fusion": False, **options})


def test_the_judge_rows_are_the_chips_each_on_a_target_compile_matrix_parses():
    rows = judge_targets.judge_rows()
    assert [row.backend for row in rows] == ["nvidia"] + list(judge_targets.JUDGE_CHIPS)
    nvidia = [row for row in rows if row.backend == "nvidia"]
    # No two rows of one chip compile with one Triton for one target (T-Head's cuda:80 rows share the A100's
    # Triton 3.5 compiles, Iluvatar's and MetaX's each other's: _compile_rows compiles each launch once).
    assert [(row.target, row.triton) for row in nvidia] == [("cuda:90", "3.6"), ("cuda:80", "3.5")]
    assert all(row.stands_in_for is None for row in nvidia)
    for row in rows:
        compile_matrix.parse_target(row.target)


def test_nvidia_compiles_for_the_a100_with_triton_3_5_told_its_arch_and_sms():
    a100 = [row for row in judge_targets.judge_rows() if row.backend == "nvidia" and row.target == "cuda:80"]
    assert [row.triton for row in a100] == ["3.5"]
    assert all((row.plan_arch, row.sm_count) == (80, 108) for row in a100)
    assert "cuda:90 (3.6 only) and cuda:80 (3.5 only)" in judge_targets.describe_chips()


def test_every_row_but_nvidia_and_ascend_compiles_for_a_stand_in():
    stand_ins = {row.backend for row in judge_targets.judge_rows() if row.stands_in_for}
    assert stand_ins == set(judge_targets.JUDGE_CHIPS) - {"nvidia", "ascend"}


def test_a_row_plans_with_its_chips_arch_where_known_and_its_targets_multiprocessors():
    rows = {}
    for row in judge_targets.judge_rows():
        rows.setdefault(row.backend, row)  # each chip's first row: its target
    assert (rows["nvidia"].plan_arch, rows["nvidia"].sm_count) == (90, compile_matrix.MULTIPROCESSORS[("cuda", 90)])
    assert (rows["ascend"].plan_arch, rows["ascend"].sm_count) == (
        "Ascend910B3", compile_matrix.MULTIPROCESSORS[("npu", "Ascend910B3")])
    # A stand-in: its chip's arch where known, and the stand-in's own count (each launch that a count picks by shape
    # is then compiled: native_per_element's programs of many tiles among them).
    gfx90a = compile_matrix.MULTIPROCESSORS[("hip", "gfx90a")]
    assert (rows["hygon"].plan_arch, rows["hygon"].sm_count) == ("gfx936", gfx90a)
    assert (rows["metax"].plan_arch, rows["metax"].sm_count) == (None, gfx90a)
    for M, H, warps in ((1024, 2560, 8), (8192, 4096, 4)):  # 160 and 2048 tiles on the stand-in's 110: both planned
        assert solution.launch_settings("metax", M, H, rows["metax"].sm_count, route="native_per_element",
                                        warp_size=64).num_warps == warps


def test_a_launch_over_the_backends_thread_limit_fails_it():
    problems = judge_targets.launch_problems(fake_backend(max_threads=128), fake_launch(num_warps=8))
    assert problems == ["256 threads a program (8 warps of 32), more than 128"]


@pytest.mark.parametrize("backend, launch, expected", [
    (fake_backend(), fake_launch(), []),
    (fake_backend(max_threads=None), fake_launch(num_warps=32), []),
    (fake_backend(warp_size=64, max_threads=512), fake_launch(num_warps=16), ["1024 threads a program"]),
    (fake_backend(), fake_launch(maxnreg=80), ["compile options it does not take: maxnreg"]),
    (fake_backend(options=("maxnreg",)), fake_launch(maxnreg=80), []),
    (fake_backend(max_grid=(65535, 1, 1)), fake_launch(grid=(65535, 1, 1)), []),
    (fake_backend(max_grid=(65535, 1, 1)), fake_launch(grid=(65536, 1, 1)), ["more programs than (65535, 1, 1)"]),
    (fake_backend(max_grid=(65535, 1, 1)), fake_launch(grid=(20, 8, 1)), ["more programs than (65535, 1, 1)"]),
    (fake_backend(), fake_launch(grid=(1, 65536, 1)), ["grid (1, 65536, 1), more programs than"]),
])
def test_launch_limits(backend, launch, expected):
    problems = judge_targets.launch_problems(backend, launch)
    assert len(problems) == len(expected), problems
    for problem, text in zip(problems, expected):
        assert text in problem


def fake_solution(backends, grid=(20, 8, 1)):
    def launch_plan(backend, M, H, *, route=None, arch=None, sm_count=None, warp_size=None, settings=None):
        return {"main": fake_launch(num_warps=8, grid=grid)}
    return SimpleNamespace(BACKENDS=backends, launch_plan=launch_plan)


def row_index_of(chip):
    return next(i for i, row in enumerate(judge_targets.judge_rows()) if row.backend == chip)


def test_a_plan_that_breaks_a_limit_on_every_shape_says_so_once_with_the_shape_count():
    row_index = row_index_of("mthreads")
    solution = fake_solution({"mthreads": fake_backend(name="mthreads", max_threads=128)})
    shapes = [("128x128", 128, 128), ("1024x2560", 1024, 2560)]
    jobs, refused = judge_targets.plan_row(solution, row_index, shapes)
    assert refused == [] and len(jobs) == 1  # one distinct launch for both shapes
    assert jobs[0]["shapes"] == jobs[0]["launches_checked"] == 2
    assert jobs[0]["limit_problems"] == [
        "256 threads a program (8 warps of 32), more than 128 (2 shapes, first 128x128)"]


def test_a_shape_the_plan_refuses_is_reported_not_dropped():
    row_index = row_index_of("ascend")

    def launch_plan(backend, M, H, **kwargs):
        if M > 1024:
            raise ValueError("too many programs")
        return {"main": fake_launch()}
    solution = SimpleNamespace(BACKENDS={"ascend": fake_backend(name="ascend")}, launch_plan=launch_plan)
    jobs, refused = judge_targets.plan_row(solution, row_index, [("a", 128, 128), ("b", 4096, 128)])
    assert len(jobs) == 1 and refused == ["the generic_per_element route's launch_plan raised ValueError: too many "
                                          "programs (1 shapes, first b)"]


def test_inline_asm_is_held_against_every_chip_but_nvidia():
    result = {"gathers": 1, "inline_asm": 2}
    problems = judge_targets.compiled_problems("metax", result)
    assert len(problems) == 1 and problems[0].startswith("2 inline asm in TTIR, on the metax chip")
    assert judge_targets.compiled_problems("nvidia", result) == []
    assert judge_targets.compiled_problems("metax", {"gathers": 1, "inline_asm": 0}) == []


def test_a_row_says_how_far_it_got_and_never_more():
    assert judge_targets.reached(True, {"binary": True}) == "compiled to binary"
    assert judge_targets.reached(True, {"binary": False}) == "compiled to the last stage before the binary"
    assert judge_targets.reached(False, None) == "limits checked only"


def test_a_stand_in_must_have_the_backends_warp_size():
    row = judge_targets.JudgeRow("metax", "MetaX", "cuda:80", "maca")
    problems = judge_targets.contradictions(row, {"targets": ("maca",), "warp_size": 64})
    assert problems and "32-wide warps, the backend 64" in problems[0]
    own = judge_targets.JudgeRow("nvidia", "NVIDIA", "hip:gfx90a")
    assert "no stand-in" in judge_targets.contradictions(own, {"targets": ("cuda",), "warp_size": 64})[0]
    assert "has no 'eighth'" in judge_targets.contradictions(judge_targets.JudgeRow("eighth", "E", "cuda:80"), None)[0]


def test_each_row_installs_the_triton_of_its_backends_base_version():
    rows = {(row.backend, row.triton): row for row in judge_targets.judge_rows()}
    assert judge_targets.installation(rows[("metax", None)], {"triton": "3.1"}).requirements == ("triton==3.1.0",)
    assert judge_targets.installation(rows[("nvidia", "3.5")], {"triton": "3.6"}).requirements == ("triton==3.5.0",)
    assert judge_targets.installation(rows[("hygon", None)], {"triton": "3.0"}).name == "triton-3.0.0"
    assert judge_targets.installation(rows[("ascend", None)], {"triton": "3.2"}).requirements == (
        "triton-ascend==3.2.0", "ascendnpu-ir==1.2.0", "pybind11")


def test_the_running_python_is_used_where_it_has_the_pinned_triton(tmp_path, monkeypatch):
    import importlib.metadata
    monkeypatch.setattr(judge_targets, "VENVS", tmp_path)
    here = judge_targets.Installation("here", (f"triton=={importlib.metadata.version('triton')}",))
    assert judge_targets.python_for(here) == sys.executable
    assert not list(tmp_path.iterdir())


def test_install_only_readies_every_rows_triton_and_names_the_one_that_failed(monkeypatch, capsys):
    def python_for(install, log=print):
        if install.name == "triton-3.5.0":
            raise RuntimeError("pip install triton==3.5.0 failed: no network")
        return f"/venvs/{install.name}/bin/python"

    monkeypatch.setattr(judge_targets, "python_for", python_for)
    assert judge_targets.main(["--install-only", "--chips", "metax", "ascend"]) == 0
    out = capsys.readouterr().out
    assert "triton-3.1.0: /venvs/triton-3.1.0/bin/python" in out and "triton-ascend-3.2.0:" in out
    assert out.splitlines()[-1].startswith("ready: 2 Tritons")
    assert judge_targets.main(["--install-only", "--chips", "nvidia"]) == 1
    assert capsys.readouterr().out.splitlines()[-1] == (
        "FAILED: triton-3.5.0: RuntimeError: pip install triton==3.5.0 failed: no network")
    with pytest.raises(SystemExit) as exited:
        judge_targets.main(["--install-only", "--json", "rows.json"])
    assert exited.value.code == 2
    assert capsys.readouterr().err.strip().endswith("--install-only compiles nothing and writes no rows: drop --json")


def test_the_solutions_table_agrees_with_every_judge_row():
    table = judge_targets.backend_table(harness.ROOT / "solution.py")
    for row in judge_targets.judge_rows():
        assert judge_targets.contradictions(row, table.get(row.backend)) == [], row


def test_table_marks_stand_ins_and_failed_limits():
    row = {"row": row_index_of("metax"), "triton": "triton 3.1.0", "target": "hip:gfx90a", "kernel": "k",
           "settings": "num_warps=16", "shapes": 20, "launches_checked": 20,
           "limit_problems": ["1024 threads a program, more than 512"],
           "ok": False, "reached": "compiled to the last stage before the binary", "compile": "ok: 9 global stores",
           "result": {}, "seconds": 1.0}
    table = judge_targets.format_table([row], 20)
    assert "hip:gfx90a (stand-in)" in table and "FAIL: 1024 threads" in table and "a stand-in for maca" in table


def test_a_selection_names_judge_backends_or_none_for_all():
    assert judge_targets.parse_selection("judge") is None
    assert judge_targets.parse_selection("judge:ascend, metax") == ("ascend", "metax")
    with pytest.raises(ValueError, match="judge chips are ascend, hygon"):
        judge_targets.parse_selection("judge:amd")
    assert judge_targets.is_selection(" judge:ascend") and not judge_targets.is_selection("cuda:90")


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(JUDGE))
def test_a_broken_solution_fails_its_judge_row_with_the_compilers_words(name, tmp_path):
    edits, selection, kernel, words = JUDGE[name]
    proc, report = run_targets(selection, tmp_path, make_broken(edits, tmp_path))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    failed = [r for r in report["rows"] if not r["ok"]]
    assert failed and all(r["kernel"] == kernel and words in r["compile"] for r in failed), report["rows"]
    assert failed[0]["reached"] == "limits checked only"


# ---------------------------------------------------------------- the places that follow JUDGE_CHIPS

def readme_table(heading):
    """The first table under a heading of README.md: its rows below the header, each a list of cells."""
    text = (harness.ROOT / "README.md").read_text()
    section = text[text.index(f"\n{heading}\n"):]
    lines = section.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("|"))
    end = next((i for i in range(first, len(lines)) if not lines[i].startswith("|")), len(lines))
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines[first + 2:end]]


def readme_disagreements():
    """Where README.md's two chip tables disagree with JUDGE_CHIPS: the judge run's table (a row per chip:
    its Triton versions, its target first in `compiled for`) and the Platforms table (a row per chip, the
    other rows named as backends of BACKENDS that are no chip)."""
    backends = judge_targets.backend_table(harness.ROOT / "solution.py")
    problems = []
    judge_run = {cells[0]: cells for cells in readme_table("### check.py --targets judge")}
    platforms = [cells[0] for cells in readme_table("## Platforms")]
    labels = [chip.label for chip in judge_targets.JUDGE_CHIPS.values()]
    if list(judge_run) != labels:
        problems.append(f"the judge run's table has rows {list(judge_run)}, the chips {labels}")
    unknown_rows = set(platforms) - set(labels) - (set(backends) - set(judge_targets.JUDGE_CHIPS))
    if [row for row in platforms if row in labels] != labels or unknown_rows:
        problems.append(f"the Platforms table has rows {platforms}, the chips {labels} and other backends")
    for name, chip in judge_targets.JUDGE_CHIPS.items():
        cells = judge_run.get(chip.label)
        if cells is None:
            continue
        tritons = [version for version, _ in chip.tritons] or [backends[name]["triton"]]
        if not all(re.search(rf"\b{re.escape(version)}\b", cells[1]) for version in tritons):
            problems.append(f"{chip.label}: Triton {cells[1]!r}, the table's {tritons}")
        if not cells[2].startswith(chip.target):
            problems.append(f"{chip.label}: compiled for {cells[2]!r}, the table's {chip.target}")
    return problems


def test_the_readme_tables_follow_the_judge_chips():
    assert readme_disagreements() == []


def test_the_docstring_lists_every_chip_from_the_table():
    for chip in judge_targets.JUDGE_CHIPS.values():
        assert re.search(rf"^  {re.escape(chip.label)} +.*{re.escape(chip.target)}", judge_targets.__doc__, re.M)


EIGHTH = judge_targets.JudgeChip("Eighth Chip", "cuda:80", "an eighth chip's cuda fork (32-wide warps)",
                                 plan_arch="e8", tritons=(("3.4", "its vendor's Triton"),))


def test_an_eighth_chip_is_one_table_entry_that_every_derived_place_picks_up(monkeypatch):
    monkeypatch.setattr(judge_targets, "JUDGE_CHIPS", {**judge_targets.JUDGE_CHIPS, "eighth": EIGHTH})
    rows = judge_targets.judge_rows()
    index = len(rows) - 1
    assert rows[index] == judge_targets.JudgeRow("eighth", "Eighth Chip", "cuda:80", EIGHTH.stands_in_for, "3.4",
                                                 "e8", compile_matrix.MULTIPROCESSORS[("cuda", 80)],
                                                 "its vendor's Triton")
    assert judge_targets.parse_selection("judge:eighth") == ("eighth",)
    assert judge_targets.parse_args(["--chips", "eighth"]).chips == ["eighth"]
    assert "Eighth Chip" in judge_targets.describe_chips()
    assert judge_targets.installation(rows[index], {"triton": "3.1"}).requirements == ("triton==3.4.0",)
    backend = fake_backend(name="eighth", warp_size=32, max_threads=128)
    assert judge_targets.contradictions(rows[index], vars(backend)) == []
    jobs, _ = judge_targets.plan_row(fake_solution({"eighth": backend}), index, [("128x128", 128, 128)])
    assert jobs[0]["limit_problems"] == [
        "256 threads a program (8 warps of 32), more than 128 (1 shapes, first 128x128)"]
    table = judge_targets.format_table([{**jobs[0], "ok": False, "reached": "limits checked only", "compile": "-",
                                         "triton": "triton 3.4.0", "result": None, "seconds": 0.0}], 1)
    assert "Eighth Chip" in table and f"a stand-in for {EIGHTH.stands_in_for}" in table
    # The README is checked, not generated: its tables lack the eighth chip until someone adds its rows.
    assert any("Eighth Chip" in problem for problem in readme_disagreements())


# ---------------------------------------------------------------- TTIR rules, on snippets as Triton prints them

# Triton 3.6 (3.5 alike): SSA values named after the Python variables, locations inline.
TTIR_36 = """module {
  tt.func public @k(%x_ptr: !tt.ptr<f32> {tt.divisibility = 16 : i32} loc("x_ptr"(#loc)), %n: i32 loc("n"(#loc))) attributes {noinline = false} {
    %x_10 = tt.load %x_9 : tensor<128x32x!tt.ptr<f32>> loc(#loc61)
    %s1 = "tt.reduce"(%x_10) <{axis = 1 : i32}> ({
    ^bb0(%s1_37: f32 loc(callsite(#loc16 at #loc70)), %s1_38: f32 loc(callsite(#loc16 at #loc70))):
      %s1_39 = arith.addf %s1_37, %s1_38 : f32 loc(#loc105)
      tt.reduce.return %s1_39 : f32 loc(#loc94)
    }) : (tensor<128x32xf32>) -> tensor<128xf32> loc(#loc94)
    %s4 = "tt.reduce"(%s1) <{axis = 0 : i32}> ({
    ^bb0(%s4_37: f32 loc(callsite(#loc16 at #loc74)), %s4_38: f32 loc(callsite(#loc16 at #loc74))):
      %s4_39 = arith.minnumf %s4_37, %s4_38 : f32 loc(#loc107)
      tt.reduce.return %s4_39 : f32 loc(#loc101)
    }) : (tensor<128xf32>) -> f32 loc(#loc101)
    %m = "tt.reduce"(%u_12) <{axis = 1 : i32}> ({
    ^bb0(%m_37: i32 loc(callsite(#loc16 at #loc78)), %m_38: i32 loc(callsite(#loc16 at #loc78))):
      %m_39 = arith.maxsi %m_37, %m_38 : i32 loc(#loc108)
      tt.reduce.return %m_39 : i32 loc(#loc103)
    }) : (tensor<128x32xi32>) -> tensor<128xi32> loc(#loc103)
    %0 = tt.splat %y_ptr : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>> loc(#loc49)
    tt.store %1, %s1 : tensor<128x!tt.ptr<f32>> loc(#loc51)
    tt.return loc(#loc52)
  } loc(#loc)
} loc(#loc)
#loc = loc("/work/main/k.py":12:0)
#loc16 = loc("/usr/lib/python3/site-packages/triton/language/standard.py":290:15)
"""


def ttir36(*ops):
    """TTIR_36 with more ops before its tt.return."""
    return TTIR_36.replace("    tt.return loc(#loc52)", "".join(f"    {op}\n" for op in ops) + "    tt.return loc(#loc52)")


# Triton 3.0 and 3.1 (and triton-ascend 3.2): numbered SSA values.
REDUCE_30 = """    %14 = "tt.reduce"(%12) <{axis = 0 : i32}> ({
    ^bb0(%arg4: f32 loc(unknown), %arg5: f32 loc(unknown)):
      %50 = arith.maxnumf %arg4, %arg5 : f32 loc(#loc64)
      tt.reduce.return %50 : f32 loc(#loc55)
    }) : (tensor<128x32xf32>) -> tensor<32xf32> loc(#loc55)
"""
CUSTOM_30 = """    %16 = "tt.reduce"(%12) <{axis = 1 : i32}> ({
    ^bb0(%arg4: f32 loc(unknown), %arg5: f32 loc(unknown)):
      %50 = arith.cmpf ogt, %arg4, %arg5 : f32 loc(#loc58)
      %51 = arith.select %50, %arg4, %arg5 : f32 loc(#loc59)
      tt.reduce.return %51 : f32 loc(#loc19)
    }) : (tensor<128x32xf32>) -> tensor<128xf32> loc(#loc19)
"""
MAXIMUMF_36 = """    %s2 = "tt.reduce"(%x_10) <{axis = 1 : i32}> ({
    ^bb0(%arg4: f32 loc(unknown), %arg5: f32 loc(unknown)):
      %s2_37 = arith.maximumf %arg4, %arg5 : f32 loc(#loc98)
      tt.reduce.return %s2_37 : f32 loc(#loc72)
    }) : (tensor<128x32xf32>) -> tensor<128xf32> loc(#loc72)
"""
ARGMAX_36 = """    %r:2 = "tt.reduce"(%x_10, %i_3) <{axis = 1 : i32}> ({
    ^bb0(%a: f32 loc(unknown), %ai: i32 loc(unknown), %b: f32 loc(unknown), %bi: i32 loc(unknown)):
      %c = arith.cmpf ogt, %a, %b : f32 loc(#loc3)
      %v = arith.select %c, %a, %b : f32 loc(#loc4)
      %w = arith.select %c, %ai, %bi : i32 loc(#loc5)
      tt.reduce.return %v, %w : f32, i32 loc(#loc6)
    }) : (tensor<128x32xf32>, tensor<128x32xi32>) -> (tensor<128xf32>, tensor<128xi32>) loc(#loc6)
"""


def test_locations_are_stripped_from_ttir_lines():
    assert judge_targets.strip_locs('%x_10 = tt.load %x_9, %m_7, %x : tensor<128x32x!tt.ptr<f32>> loc(#loc61)') == \
        "%x_10 = tt.load %x_9, %m_7, %x : tensor<128x32x!tt.ptr<f32>>"
    assert judge_targets.strip_locs('^bb0(%a: f32 loc(callsite(#loc16 at #loc70)), %b: f32 loc("a(b"(#loc))):') == \
        "^bb0(%a: f32, %b: f32):"


def test_the_reductions_of_a_ttir_with_axis_operand_types_and_combine_ops():
    reductions = judge_targets.reductions(TTIR_36)
    assert [(r.axis, r.operand_types, r.ops) for r in reductions] == [
        (1, ("tensor<128x32xf32>",), ("%s1_39 = arith.addf %s1_37, %s1_38 : f32",)),
        (0, ("tensor<128xf32>",), ("%s4_39 = arith.minnumf %s4_37, %s4_38 : f32",)),
        (1, ("tensor<128x32xi32>",), ("%m_39 = arith.maxsi %m_37, %m_38 : i32",))]
    assert reductions[0].line == '%s1 = "tt.reduce"(%x_10) <{axis = 1 : i32}> : (tensor<128x32xf32>) -> tensor<128xf32>'


def test_sum_max_and_min_reductions_along_the_last_axis_keep_every_rule():
    for rule in judge_targets.TTIR_RULES:
        assert rule.check(TTIR_36) is None, rule.name
    assert judge_targets.compiled_problems("ascend", {"ttir": TTIR_36}, exact=False) == []


@pytest.mark.parametrize("snippet, shown", [
    (CUSTOM_30, "%16 = \"tt.reduce\"(%12) <{axis = 1 : i32}> : (tensor<128x32xf32>) -> tensor<128xf32> combining "
                "with %50 = arith.cmpf ogt, %arg4, %arg5 : f32; %51 = arith.select %50, %arg4, %arg5 : f32"),
    (MAXIMUMF_36, "combining with %s2_37 = arith.maximumf %arg4, %arg5 : f32"),
    (ARGMAX_36, '%r:2 = "tt.reduce"(%x_10, %i_3) <{axis = 1 : i32}>'),
])
def test_a_reduction_with_a_combine_of_its_own_breaks_the_rule(snippet, shown):
    line = judge_targets.custom_combine_reduction(ttir36(snippet))
    assert line is not None and shown in line
    problems = judge_targets.compiled_problems("metax", {"ttir": ttir36(snippet)})
    assert len(problems) == 1 and problems[0].startswith("TTIR rule custom-combine reduction (") and shown in problems[0]


def test_a_reduction_along_axis_0_of_a_2d_tensor_breaks_the_rule_and_of_a_1d_tensor_does_not():
    line = judge_targets.reduction_off_the_last_axis(ttir36(REDUCE_30))
    assert line == ('%14 = "tt.reduce"(%12) <{axis = 0 : i32}> : (tensor<128x32xf32>) -> tensor<32xf32> '
                    "(axis 0 of a rank-2 tensor)")
    assert judge_targets.reduction_off_the_last_axis(TTIR_36) is None  # %s4: axis 0 of tensor<128xf32>
    assert judge_targets.custom_combine_reduction(ttir36(REDUCE_30)) is None


@pytest.mark.parametrize("op", [
    "%sh_13 = arith.shrui %u_12, %sh_0 : tensor<128x32xi32> loc(#loc60)",
    "%sh_14 = arith.divui %sh_13, %sh : tensor<128x32xi32> loc(#loc59)",
    "%r = arith.remui %a, %b : tensor<128xi32> loc(#loc9)",
    "%e = arith.extui %a : tensor<128xi8> to tensor<128xi32> loc(#loc9)",
    "%y_34 = arith.uitofp %y_33 : tensor<128x1xi32> to tensor<128x1xf32> loc(#loc92)",
    "%q = arith.fptoui %a : tensor<128xf32> to tensor<128xi32> loc(#loc9)",
    "%lt_15 = arith.cmpi ult, %sh_14, %lt : tensor<128x32xi32> loc(#loc57)",
    "%24 = arith.cmpi uge, %23, %cst_1 : tensor<128x32xi32> loc(#loc30)",
])
def test_an_unsigned_integer_op_breaks_the_ascend_rule(op):
    assert judge_targets.unsigned_op(ttir36(op)) == judge_targets.strip_locs(op)


def test_an_unsigned_max_reduction_is_an_unsigned_op_but_a_plain_combine():
    snippet = TTIR_36.replace("arith.maxsi %m_37", "arith.maxui %m_37")
    assert judge_targets.unsigned_op(snippet) == "%m_39 = arith.maxui %m_37, %m_38 : i32"
    assert judge_targets.custom_combine_reduction(snippet) is None
    assert judge_targets.unsigned_op(ttir36("%m_7 = arith.cmpi slt, %offs_6, %m : tensor<128x32xi32>")) is None


@pytest.mark.parametrize("op, masked", [
    ("%x_10 = tt.load %x_9, %m_7, %x : tensor<128x32x!tt.ptr<f32>> loc(#loc61)", True),
    ("%12 = tt.load %11, %9 : tensor<128x32x!tt.ptr<f32>> loc(#loc10)", True),
    ("tt.store %1, %y_36, %m_7 : tensor<128x32x!tt.ptr<f32>> loc(#loc50)", True),
    ("%b = tt.load %bp {boundaryCheck = array<i32: 0>, padding = 1 : i32} : !tt.ptr<tensor<64xf32>> loc(#loc3)", True),
    ("%u_12 = tt.load %u_11 : tensor<128x32x!tt.ptr<i32>> loc(#loc77)", False),
    ("%v = tt.load %p {cache = 2 : i32, evict = 3 : i32} : tensor<128x!tt.ptr<f32>> loc(#loc3)", False),
    ("tt.store %49, %47 : tensor<128x32x!tt.ptr<f32>> loc(#loc51)", False),
])
def test_a_masked_load_or_store_breaks_the_ascend_rule(op, masked):
    line = judge_targets.masked_load_or_store(ttir36(op))
    assert line == (judge_targets.strip_locs(op) if masked else None)


def test_a_float_compare_of_a_value_with_itself_breaks_the_ascend_rule():
    op = "%isn = arith.cmpf une, %x_10, %x_10 : tensor<128x32xf32> loc(#loc75)"
    assert judge_targets.float_compare_with_itself(ttir36(op)) == judge_targets.strip_locs(op)
    assert judge_targets.float_compare_with_itself(ttir36("%18 = arith.cmpf une, %12, %12 : tensor<128x32xf32>")) \
        is not None
    assert judge_targets.float_compare_with_itself(ttir36("%c = arith.cmpf une, %x_10, %x_11 : tensor<128xf32>")) \
        is None


@pytest.mark.parametrize("op", [
    "%q_17 = tt.precise_divf %x_10, %q_16 : tensor<128x32xf32> loc(#loc79)",
    '%e = tt.extern_elementwise %x_1 {libname = "", libpath = "", pure = true, symbol = "__nv_expf"} : '
    "(tensor<128xf32>) -> tensor<128xf32> loc(#loc15)",
    "%g = tt.gather %t[%i] {axis = 0 : i32} : (tensor<4096xf32>, tensor<128x32xi32>) -> tensor<128x32xf32> loc(#loc3)",
    "gpu.barrier loc(#loc34)",
    '%a = tt.elementwise_inline_asm "mov.b32 $0, $1;" {constraints = "=r,r", packed_element = 1 : i32, pure = true} '
    "%x_1 : tensor<128xf32> -> tensor<128xf32> loc(#loc16)",
])
def test_div_rn_libdevice_gather_barriers_and_inline_asm_break_the_last_rungs_rule(op):
    assert judge_targets.op_beyond_the_last_rung(ttir36(op)) == judge_targets.strip_locs(op)


def test_each_rule_applies_to_its_rows_only():
    unsigned = ttir36("%sh_13 = arith.shrui %u_12, %sh_0 : tensor<128x32xi32> loc(#loc60)")
    assert judge_targets.compiled_problems("nvidia", {"ttir": unsigned}) == []
    assert judge_targets.compiled_problems("ascend", {"ttir": unsigned}) == [
        "TTIR rule unsigned op (no unsigned integer operation on Ascend): "
        "%sh_13 = arith.shrui %u_12, %sh_0 : tensor<128x32xi32>"]
    divide = ttir36("%q_17 = tt.precise_divf %x_10, %q_16 : tensor<128x32xf32> loc(#loc79)")
    assert judge_targets.compiled_problems("ascend", {"ttir": divide}, exact=True) == []
    problems = judge_targets.compiled_problems("metax", {"ttir": divide}, exact=False)
    assert len(problems) == 1 and problems[0].startswith("TTIR rule last rung op (")
    axis = ttir36(REDUCE_30)
    assert all(judge_targets.compiled_problems(chip, {"ttir": axis}) for chip in judge_targets.JUDGE_CHIPS)


def test_a_routes_exactness_is_its_records_and_exact_where_it_has_none():
    table = {"generic": SimpleNamespace(name="generic"), "tolerant": SimpleNamespace(name="tolerant", exact=False)}
    solution = SimpleNamespace(ROUTE_TABLE=table)
    assert judge_targets.route_is_exact(solution, "generic") and not judge_targets.route_is_exact(solution, "tolerant")
    assert judge_targets.route_is_exact(SimpleNamespace(), "plain")


def test_a_plans_jobs_carry_their_routes_exactness():
    backend = fake_backend(name="ascend", routes=("generic", "tolerant"))
    solution = fake_solution({"ascend": backend})
    solution.ROUTE_TABLE = {"tolerant": SimpleNamespace(exact=False)}
    plans = {}

    def launch_plan(backend, M, H, *, route=None, **kwargs):
        return {"main": fake_launch(num_warps=8 if route == "generic" else 4)}
    solution.launch_plan = launch_plan
    jobs, _ = judge_targets.plan_row(solution, row_index_of("ascend"), [("128x128", 128, 128)])
    assert {job["route"]: job["exact"] for job in jobs} == {"generic": True, "tolerant": False}


# ---------------------------------------------------------------- the source rule

FAKE_SOLUTION = '''import triton
import triton.language as tl


@triton.jit
def _scale(v):
    """Scales v."""
    return v * 2.0


@triton.jit
def _helper(v):
    # the same as a dot with ones
    return tl.sum(v, axis=0)
    # trailing comment: docs


def dot_product_on_the_host(a, b):  # not jitted: Iluvatar's JIT never reads it
    return sum(x * y for x, y in zip(a, b))


@triton.jit(do_not_specialize=["n"])
def _kernel(x_ptr, n, BLOCK: tl.constexpr):
    """Doubles a row."""
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.store(x_ptr + tl.arange(0, BLOCK), _scale(x))
    # DOT in capitals: Iluvatar's test is case-sensitive
'''


def test_a_jitted_helper_with_dot_in_a_comment_breaks_the_source_rule(tmp_path):
    assert judge_targets.dot_in_jitted_sources(FAKE_SOLUTION) == [
        ("_helper", 13, "# the same as a dot with ones")]
    path = tmp_path / "solution.py"
    path.write_text(FAKE_SOLUTION)
    problems = judge_targets.source_problems(path)
    assert len(problems) == 1 and "_helper, line 13: # the same as a dot with ones" in problems[0]
    clean = FAKE_SOLUTION.replace("a dot with", "a sum of")
    assert judge_targets.dot_in_jitted_sources(clean) == []
    path.write_text(clean)
    assert judge_targets.source_problems(path) == []


@pytest.mark.parametrize("edit, name", [
    (("def _scale(v):", "def _scale_dot(v):"), "_scale_dot"),
    (('"""Scales v."""', '"""Scales v, dotted."""'), "_scale"),
    (("    # trailing comment: docs", "    # trailing comment: dots"), "_helper"),
])
def test_dot_anywhere_in_a_jitted_functions_source_counts(edit, name):
    source = FAKE_SOLUTION.replace("a dot with", "a sum of").replace(*edit)
    assert [offender[0] for offender in judge_targets.dot_in_jitted_sources(source)] == [name]


def test_the_jitted_sources_start_at_def_and_keep_the_trailing_comments_of_their_body():
    sources = judge_targets.jitted_sources(FAKE_SOLUTION)
    assert sorted(sources) == ["_helper", "_kernel", "_scale"]
    first, lines = sources["_helper"]
    assert lines[0] == "def _helper(v):" and lines[-1] == "    # trailing comment: docs"
    assert sources["_kernel"][1][-1] == "    # DOT in capitals: Iluvatar's test is case-sensitive"


def test_the_docstring_lists_every_rule_from_the_table():
    for rule in judge_targets.TTIR_RULES:
        assert re.search(rf"^  {re.escape(rule.rows)} +{re.escape(rule.name)}: {re.escape(rule.text)}$",
                         judge_targets.__doc__, re.M)
        assert rule.rows in judge_targets.ROW_SCOPES
    assert "source rule: no @triton.jit function" in judge_targets.__doc__


def test_compiled_rows_apply_the_rules_give_a100_occupancy_and_drop_the_ttir(monkeypatch):
    import json
    import subprocess
    unsigned = ttir36("%sh_13 = arith.shrui %u_12, %sh_0 : tensor<128x32xi32> loc(#loc60)")
    result = {"sites": 1, "stores": 1, "asm": "ptx", "binary": True, "no_binary": None, "gathers": 0,
              "inline_asm": 0, "ttir": unsigned, "threads": 256, "shared": 32768,
              "ptxas": {"registers": 80, "stack": 0, "spill_stores": 0, "spill_loads": 0, "static_shared": 0}}
    monkeypatch.setattr(compile_matrix, "run_script", lambda *args, **kwargs: subprocess.CompletedProcess(
        [], 0, "RESULT " + json.dumps(result), ""))
    rows = judge_targets.judge_rows()
    a100 = next(i for i, row in enumerate(rows) if row.backend == "nvidia" and row.target == "cuda:80")
    thead = row_index_of("thead")

    def job(index, chip, key):
        backend, arch, _ = compile_matrix.parse_target(rows[index].target)
        return {"row": index, "chip": chip, "key": key, "target": rows[index].target, "backend": backend,
                "arch": arch, "route": "nvidia", "exact": True, "triton": "triton 3.6.0", "kernel": "_main",
                "settings": "", "limit_problems": []}
    compiled = judge_targets._compile_rows(
        [("python", job(a100, "nvidia", "a")), ("python", job(thead, "thead", "b")),
         ("python", job(row_index_of("ascend"), "ascend", "c"))], "solution.py", 1, 10, log=lambda *a, **k: None)
    nvidia, stand_in, ascend = compiled
    assert nvidia["ok"] and nvidia["compile"].endswith(
        "80 registers, 0/0 B spilled (stores/loads), 32768 B shared; 3 programs/SM of an A100 (registers)")
    assert stand_in["ok"] and "programs/SM" not in stand_in["compile"]  # the A100's limits are no stand-in's
    assert not ascend["ok"] and ascend["compile"].startswith("FAIL: TTIR rule unsigned op (")
    assert all("ttir" not in row["result"] for row in compiled)
    source = judge_targets._compile_rows([("python", job(a100, "nvidia", "a"))], "solution.py", 1, 10,
                                         log=lambda *a, **k: None, source=["source rule (...): _k, line 3: dot"])
    assert not source[0]["ok"] and source[0]["compile"].startswith("FAIL: source rule (...): _k, line 3: dot; ok: ")


def test_a_compiled_row_carries_its_instructions_per_element_into_the_table(monkeypatch):
    import json
    import subprocess
    rows = judge_targets.judge_rows()
    results = {"cuda:90": {"sites": 1, "stores": 1, "asm": "ptx", "binary": True, "no_binary": None, "gathers": 0,
                           "inline_asm": 0, "ttir": "", "threads": 256, "shared": 32768, "ptxas": None,
                           "per_element": 71.0},
               "npu:Ascend910B3": {"sites": 1, "stores": 1, "asm": "hivm", "binary": False, "no_binary": "stand-in",
                                   "gathers": 0, "inline_asm": 0, "ttir": "", "threads": 256, "shared": None,
                                   "ptxas": None, "per_element": None}}
    monkeypatch.setattr(compile_matrix, "run_script", lambda args, *rest, **kwargs: subprocess.CompletedProcess(
        [], 0, "RESULT " + json.dumps(results[json.loads(args[1])["target"]]), ""))

    def job(chip, key):
        index = row_index_of(chip)
        backend, arch, _ = compile_matrix.parse_target(rows[index].target)
        return {"row": index, "chip": chip, "key": key, "target": rows[index].target, "backend": backend, "arch": arch,
                "route": "nvidia", "exact": True, "triton": "triton 3.6.0", "kernel": "_silu_mul_quant_kernel",
                "settings": "num_warps=8", "shapes": 20, "launches_checked": 20, "limit_problems": []}
    compiled = judge_targets._compile_rows([("python", job("nvidia", "a")), ("python", job("ascend", "b"))],
                                           "solution.py", 1, 10, log=lambda *a, **k: None)
    assert [row["result"]["per_element"] for row in compiled] == [71.0, None]
    head, _, nvidia, ascend = judge_targets.format_table(compiled, 20).splitlines()[:4]
    column = head.index("instr/elem")
    assert nvidia[column:].startswith("71.0 ") and ascend[column:].startswith("-  ")
    assert compile_matrix.PER_ELEMENT_LEGEND in judge_targets.format_table(compiled, 20)


def test_the_table_notes_the_a100_rows():
    index = next(i for i, row in enumerate(judge_targets.judge_rows()) if row.target == "cuda:80"
                 and row.backend == "nvidia")
    row = {"row": index, "triton": "triton 3.6.0", "target": "cuda:80", "kernel": "k", "settings": "", "shapes": 20,
           "launches_checked": 20, "limit_problems": [], "ok": True, "reached": "compiled to binary",
           "compile": "ok", "result": {}, "seconds": 1.0}
    table = judge_targets.format_table([row, {**row, "kernel": "k2"}], 20)
    assert "NVIDIA on cuda:80: the judge's NVIDIA GPU is probably an A100 (sm_80)" in table
    assert table.count("NVIDIA on cuda:80: programs/SM of an A100 (108 SMs, each 65536 registers, 164 KB shared "
                       "memory, 2048 threads, 32 programs)") == 1


# ---------------------------------------------------------------- the scratch-argument rule

# Triton 3.2 (triton-ascend) style: a kernel that writes rows of y to %arg2 in a loop (the pointer carried in
# iter_args) and reads them back after it: %arg2 is a scratch buffer.
SCRATCH_32 = """module {
  tt.func public @k(%arg0: !tt.ptr<f32> {tt.divisibility = 16 : i32} loc("x_ptr"(#loc)), %arg1: !tt.ptr<f32> {tt.divisibility = 16 : i32} loc("y_ptr"(#loc)), %arg2: !tt.ptr<f32> {tt.divisibility = 16 : i32} loc("scratch_ptr"(#loc)), %arg3: i32 loc("n"(#loc))) attributes {noinline = false} {
    %c0_i32 = arith.constant 0 : i32 loc(#loc1)
    %c1_i32 = arith.constant 1 : i32 loc(#loc1)
    %cst = arith.constant dense<128> : tensor<128xi32> loc(#loc1)
    %0 = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32> loc(#loc2)
    %1 = tt.splat %arg0 : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>> loc(#loc3)
    %2 = tt.addptr %1, %0 : tensor<128x!tt.ptr<f32>>, tensor<128xi32> loc(#loc3)
    %3 = tt.load %2 : tensor<128x!tt.ptr<f32>> loc(#loc4)
    %4 = tt.splat %arg2 : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>> loc(#loc5)
    %5 = tt.addptr %4, %0 : tensor<128x!tt.ptr<f32>>, tensor<128xi32> loc(#loc5)
    %6 = scf.for %arg4 = %c0_i32 to %arg3 step %c1_i32 iter_args(%arg5 = %5) -> (tensor<128x!tt.ptr<f32>>)  : i32 {
      tt.store %arg5, %3 : tensor<128x!tt.ptr<f32>> loc(#loc6)
      %10 = tt.addptr %arg5, %cst : tensor<128x!tt.ptr<f32>>, tensor<128xi32> loc(#loc7)
      scf.yield %10 : tensor<128x!tt.ptr<f32>> loc(#loc8)
    } loc(#loc9)
    %7 = tt.expand_dims %6 {axis = 0 : i32} : tensor<128x!tt.ptr<f32>> -> tensor<1x128x!tt.ptr<f32>> loc(#loc10)
    %8 = tt.load %7 : tensor<1x128x!tt.ptr<f32>> loc(#loc11)
    %9 = tt.splat %arg1 : !tt.ptr<f32> -> tensor<1x128x!tt.ptr<f32>> loc(#loc12)
    tt.store %9, %8 : tensor<1x128x!tt.ptr<f32>> loc(#loc13)
    tt.return loc(#loc14)
  } loc(#loc)
} loc(#loc)
"""
# The same kernel loading %arg0 and storing %arg1 only (no scratch): the loop carries the x pointer.
CLEAN_32 = """module {
  tt.func public @k(%arg0: !tt.ptr<f32> {tt.divisibility = 16 : i32} loc("x_ptr"(#loc)), %arg1: !tt.ptr<f32> {tt.divisibility = 16 : i32} loc("y_ptr"(#loc)), %arg2: i32 loc("n"(#loc))) attributes {noinline = false} {
    %c0_i32 = arith.constant 0 : i32 loc(#loc1)
    %c1_i32 = arith.constant 1 : i32 loc(#loc1)
    %cst = arith.constant dense<128> : tensor<128xi32> loc(#loc1)
    %cst_0 = arith.constant dense<0.000000e+00> : tensor<128xf32> loc(#loc1)
    %0 = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32> loc(#loc2)
    %1 = tt.splat %arg0 : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>> loc(#loc3)
    %2 = tt.addptr %1, %0 : tensor<128x!tt.ptr<f32>>, tensor<128xi32> loc(#loc3)
    %3:2 = scf.for %arg3 = %c0_i32 to %arg2 step %c1_i32 iter_args(%arg4 = %2, %arg5 = %cst_0) -> (tensor<128x!tt.ptr<f32>>, tensor<128xf32>)  : i32 {
      %8 = tt.load %arg4 : tensor<128x!tt.ptr<f32>> loc(#loc4)
      %9 = arith.addf %arg5, %8 : tensor<128xf32> loc(#loc5)
      %10 = tt.addptr %arg4, %cst : tensor<128x!tt.ptr<f32>>, tensor<128xi32> loc(#loc6)
      scf.yield %10, %9 : tensor<128x!tt.ptr<f32>>, tensor<128xf32> loc(#loc7)
    } loc(#loc8)
    %4 = tt.splat %arg1 : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>> loc(#loc9)
    %5 = tt.addptr %4, %0 : tensor<128x!tt.ptr<f32>>, tensor<128xi32> loc(#loc9)
    %6 = tt.reshape %5 : tensor<128x!tt.ptr<f32>> -> tensor<1x128x!tt.ptr<f32>> loc(#loc10)
    %7 = tt.reshape %3#1 : tensor<128xf32> -> tensor<1x128xf32> loc(#loc10)
    tt.store %6, %7 : tensor<1x128x!tt.ptr<f32>> loc(#loc11)
    tt.return loc(#loc12)
  } loc(#loc)
} loc(#loc)
"""
# Triton 3.6 style: the pointer to y goes round a scf.while (its before and after regions) and is stored;
# the same pointer is then loaded after the loop.
WHILE_36 = """module {
  tt.func public @k(%x_ptr: !tt.ptr<f32> loc("x_ptr"(#loc)), %y_ptr: !tt.ptr<f32> loc("y_ptr"(#loc)), %n: i32 loc("n"(#loc))) attributes {noinline = false} {
    %c0_i32 = arith.constant 0 : i32 loc(#loc1)
    %offs = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32> loc(#loc2)
    %x = tt.splat %x_ptr : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>> loc(#loc3)
    %x_0 = tt.addptr %x, %offs : tensor<128x!tt.ptr<f32>>, tensor<128xi32> loc(#loc3)
    %x_1 = tt.load %x_0 : tensor<128x!tt.ptr<f32>> loc(#loc4)
    %w = tt.splat %y_ptr : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>> loc(#loc5)
    %w_2:2 = scf.while (%n_3 = %n, %w_4 = %w) : (i32, tensor<128x!tt.ptr<f32>>) -> (i32, tensor<128x!tt.ptr<f32>>) {
      %0 = arith.cmpi sgt, %n_3, %c0_i32 : i32 loc(#loc6)
      scf.condition(%0) %n_3, %w_4 : i32, tensor<128x!tt.ptr<f32>> loc(#loc6)
    } do {
    ^bb0(%n_3: i32 loc("n"), %w_5: tensor<128x!tt.ptr<f32>> loc("w")):
      %w_6 = tt.addptr %w_5, %offs : tensor<128x!tt.ptr<f32>>, tensor<128xi32> loc(#loc7)
      %n_7 = arith.subi %n_3, %c0_i32 : i32 loc(#loc8)
      scf.yield %n_7, %w_6 : i32, tensor<128x!tt.ptr<f32>> loc(#loc9)
    } loc(#loc10)
    tt.store %w_2#1, %x_1 : tensor<128x!tt.ptr<f32>> loc(#loc11)
    %y = tt.broadcast %w_2#1 : tensor<128x!tt.ptr<f32>> -> tensor<128x!tt.ptr<f32>> loc(#loc12)
    %y_8 = tt.load %y : tensor<128x!tt.ptr<f32>> loc(#loc13)
    tt.return loc(#loc14)
  } loc(#loc)
} loc(#loc)
"""


def test_a_kernel_that_stores_to_an_argument_and_loads_it_breaks_the_scratch_rule():
    line = judge_targets.pointer_loaded_and_stored(SCRATCH_32)
    assert line == ("%arg2 is loaded (%8 = tt.load %7 : tensor<1x128x!tt.ptr<f32>>) and stored "
                    "(tt.store %arg5, %3 : tensor<128x!tt.ptr<f32>>)")
    assert judge_targets.compiled_problems("ascend", {"ttir": SCRATCH_32}) == [
        "TTIR rule scratch argument (no pointer argument is both loaded and stored on Ascend (its compiler corrupts "
        f"a load of what the same program stored)): {line}"]
    assert judge_targets.compiled_problems("nvidia", {"ttir": SCRATCH_32}) == []
    assert judge_targets.pointer_loaded_and_stored(WHILE_36).startswith("%y_ptr is loaded (%y_8 = tt.load %y")


def test_a_kernel_that_only_loads_one_argument_and_stores_another_keeps_the_scratch_rule():
    assert judge_targets.pointer_loaded_and_stored(CLEAN_32) is None
    assert judge_targets.compiled_problems("ascend", {"ttir": CLEAN_32}) == []
    elsewhere = WHILE_36.replace("%y = tt.broadcast %w_2#1", "%y = tt.broadcast %x_0")
    assert judge_targets.pointer_loaded_and_stored(elsewhere) is None


@pytest.mark.parametrize("edit", [
    # a pointer loaded from memory may point anywhere; so may one passed to a call
    ("%8 = tt.load %arg4 :", "%p = tt.load %2 : tensor<128x!tt.ptr<!tt.ptr<f32>>>\n      %8 = tt.load %p :"),
    ("tt.store %6, %7 :", "tt.call @helper(%arg0) : (!tt.ptr<f32>) -> ()\n    tt.store %6, %7 :"),
    ("%9 = arith.addf %arg5, %8", "%x = tt.atomic_rmw fadd, acq_rel, gpu, %arg4, %8 : (tensor<128x!tt.ptr<f32>>, "
     "tensor<128xf32>) -> tensor<128xf32>\n      %9 = arith.addf %arg5, %8"),
])
def test_what_the_scratch_rule_cannot_follow_counts_as_both(edit):
    ttir = CLEAN_32.replace(*edit)
    assert ttir != CLEAN_32
    assert judge_targets.pointer_loaded_and_stored(ttir) is not None


# The TTIR of every kernel of the Ascend ladder: Triton's own, before any target's lowering (compiled here
# for cuda:90 with the installed Triton), each distinct launch of the benchmark and hidden_like shapes once.
ASCEND_TTIR = r"""
import json, sys
import compile_matrix, harness, triton
from triton.backends.compiler import GPUTarget
solution = harness.load_solution(sys.argv[1], name="solution_for_ascend_ttir")
target = GPUTarget("cuda", 90, 32)
shapes = [s for group in compile_matrix.SHAPE_GROUPS for s in harness.load_shapes(group)]
kernels = {}
for route in solution.BACKENDS["ascend"].routes:
    for label, M, H in shapes:
        for name, launch in solution.launch_plan("ascend", M, H, route=route).items():
            key = repr(compile_matrix.launch_key(launch))
            if key not in kernels:
                compiled = triton.compile(compile_matrix.ast_source(launch, target), target=target,
                                          options=dict(launch.options))
                kernels[key] = {"kernel": launch.kernel.__name__, "settings": compile_matrix.settings_text(launch),
                                "routes": [], "ttir": compiled.asm["ttir"]}
            if route not in kernels[key]["routes"]:
                kernels[key]["routes"].append(route)
print(json.dumps({"triton": triton.__version__, "kernels": list(kernels.values())}))
"""


def test_no_ascend_rungs_kernel_loads_and_stores_one_argument_or_breaks_an_ascend_rule(tmp_path):
    import json
    import os
    import subprocess
    # Compiling needs Triton without the interpreter that conftest.py turns on.
    env = {**{k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}, "TRITON_CACHE_DIR": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-c", ASCEND_TTIR, str(harness.ROOT / "solution.py")], capture_output=True,
                          text=True, cwd=harness.ROOT, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    compiled = json.loads(proc.stdout.splitlines()[-1])
    solution = harness.load_solution(harness.ROOT / "solution.py", name="solution_for_ascend_rules")
    routes = solution.BACKENDS["ascend"].routes
    assert {route for kernel in compiled["kernels"] for route in kernel["routes"]} == set(routes)
    ascend_rules = {"scratch argument", "unsigned op", "masked memory op", "float self-compare"}
    for kernel in compiled["kernels"]:
        exact = all(judge_targets.route_is_exact(solution, route) for route in kernel["routes"])
        applied = {rule.name for rule in judge_targets.TTIR_RULES if rule.applies("ascend", exact)}
        assert ascend_rules <= applied
        where = f"{kernel['kernel']} [{kernel['settings']}] of {kernel['routes']} (Triton {compiled['triton']})"
        assert "tt.store" in kernel["ttir"], where  # every kernel stores; the table's and the inputs' load nothing
        inline_asm = compile_matrix._count_ops(kernel["ttir"], "tt.elementwise_inline_asm")
        result = {"ttir": kernel["ttir"], "inline_asm": inline_asm}
        assert judge_targets.compiled_problems("ascend", result, exact) == [], where


@pytest.mark.parametrize("ub_bytes, retried, ok, shown", [
    (90828, [], True, "; UB 88.7 KB of 192 KB planned"),
    (153600, ["code motion"], True, "; UB 150.0 KB of 192 KB planned after bishengir's retry without code motion"),
    (153601, [], False, "UB 150.0 KB (153601 bytes) planned, more than the 150 KB limit (153600 bytes"),
])
def test_an_ascend_row_shows_its_ub_plan_and_fails_above_150_kb(ub_bytes, retried, ok, shown, monkeypatch):
    import json
    import subprocess
    ub = {"bytes": ub_bytes, "available": 196608, "buffers": 80, "unread": 0, "retried_without": retried}
    result = {"sites": 2, "stores": 2, "asm": "hivm", "binary": False, "no_binary": "hivmc is a stand-in: no binary",
              "gathers": 0, "inline_asm": 0, "ttir": CLEAN_32, "threads": 256, "shared": None, "ptxas": None, "ub": ub}
    monkeypatch.setattr(compile_matrix, "run_script", lambda *args, **kwargs: subprocess.CompletedProcess(
        [], 0, "RESULT " + json.dumps(result), ""))
    index = row_index_of("ascend")
    job = {"row": index, "chip": "ascend", "key": "k", "target": "npu:Ascend910B3", "backend": "npu",
           "arch": "Ascend910B3", "route": "ascend_columns", "exact": True, "triton": "triton-ascend 3.2.0",
           "kernel": "_y_columns_kernel", "settings": "", "limit_problems": []}
    row, = judge_targets._compile_rows([("python", job)], "solution.py", 1, 10, log=lambda *a, **k: None)
    assert row["ok"] is ok and shown in row["compile"] and row["compile"].startswith("ok: " if ok else "FAIL: ")
    assert row["result"]["ub"] == ub and "ttir" not in row["result"]
