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
from fixtures.broken_solutions import JUDGE
from test_check import make_broken
from test_compile_matrix import run_targets


def test_the_judge_chips_are_the_competitions():
    # The competition's chips (README.md, Scoring): adding one is an entry of JUDGE_CHIPS and this line.
    assert set(judge_targets.JUDGE_CHIPS) == {"nvidia", "hygon", "iluvatar", "metax", "thead", "mthreads", "ascend"}


def fake_backend(**fields):
    defaults = dict(name="fake", device_type="cuda", targets=("cuda",), routes=("generic",), warp_size=32,
                    max_threads=1024, options=(), max_grid=(2**31 - 1, 65535, 65535), triton="3.6")
    return SimpleNamespace(**{**defaults, **fields})


def _kernel():
    pass


def fake_launch(num_warps=8, grid=(20, 8, 1), **options):
    return SimpleNamespace(name="main", kernel=_kernel, grid=grid, signature={"x_ptr": "*bf16"}, constexprs={"C": 1},
                           options={"num_warps": num_warps, "num_stages": 1, "enable_fp_fusion": False, **options})


def test_the_judge_rows_are_the_chips_each_on_a_target_compile_matrix_parses():
    rows = judge_targets.judge_rows()
    assert [row.backend for row in rows] == ["nvidia", *judge_targets.JUDGE_CHIPS]
    nvidia = [row for row in rows if row.backend == "nvidia"]
    assert [row.triton for row in nvidia] == ["3.6", "3.5"] and all(row.stands_in_for is None for row in nvidia)


def test_every_row_but_nvidia_and_ascend_compiles_for_a_stand_in():
    stand_ins = {row.backend for row in judge_targets.judge_rows() if row.stands_in_for}
    assert stand_ins == set(judge_targets.JUDGE_CHIPS) - {"nvidia", "ascend"}


def test_a_row_on_its_chips_own_target_plans_with_that_targets_arch_and_multiprocessors():
    rows = {row.backend: row for row in judge_targets.judge_rows()}
    assert (rows["nvidia"].plan_arch, rows["nvidia"].sm_count) == (90, compile_matrix.MULTIPROCESSORS[("cuda", 90)])
    assert (rows["ascend"].plan_arch, rows["ascend"].sm_count) == (
        "Ascend910B3", compile_matrix.MULTIPROCESSORS[("npu", "Ascend910B3")])
    assert (rows["hygon"].plan_arch, rows["hygon"].sm_count) == ("gfx936", None)  # a stand-in: only its arch
    assert (rows["metax"].plan_arch, rows["metax"].sm_count) == (None, None)


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
    assert len(jobs) == 1 and refused == ["the generic route's launch_plan raised ValueError: too many programs "
                                          "(1 shapes, first b)"]


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
                                                 "e8", None, "its vendor's Triton")
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
