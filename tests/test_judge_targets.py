"""judge_targets: the judge's seven backends as rows, the limits check of a plan, and how far a row says it
got. CPU only and no compiles here: CI compiles every row with `check.py --targets judge`."""
import sys
from types import SimpleNamespace

import pytest

import compile_matrix
import judge_targets
from fixtures.broken_solutions import JUDGE
from test_check import make_broken
from test_compile_matrix import run_targets

SEVEN = {"nvidia", "hygon", "iluvatar", "metax", "thead", "mthreads", "ascend"}


def fake_backend(**fields):
    defaults = dict(name="fake", device_type="cuda", targets=("cuda",), routes=("generic",), warp_size=32,
                    max_threads=1024, options=(), max_grid=(2**31 - 1, 65535, 65535), triton="3.6")
    return SimpleNamespace(**{**defaults, **fields})


def _kernel():
    pass


def fake_launch(num_warps=8, grid=(20, 8, 1), **options):
    return SimpleNamespace(name="main", kernel=_kernel, grid=grid, signature={"x_ptr": "*bf16"}, constexprs={"C": 1},
                           options={"num_warps": num_warps, "num_stages": 1, "enable_fp_fusion": False, **options})


def test_the_judge_rows_are_the_seven_backends_each_on_a_target_compile_matrix_parses():
    assert {row.backend for row in judge_targets.JUDGE_ROWS} == SEVEN
    for row in judge_targets.JUDGE_ROWS:
        compile_matrix.parse_target(row.target)
    nvidia = [row for row in judge_targets.JUDGE_ROWS if row.backend == "nvidia"]
    assert {row.triton for row in nvidia} == {"3.5", "3.6"} and all(row.stands_in_for is None for row in nvidia)


def test_every_row_but_nvidia_and_ascend_compiles_for_a_stand_in():
    stand_ins = {row.backend for row in judge_targets.JUDGE_ROWS if row.stands_in_for}
    assert stand_ins == SEVEN - {"nvidia", "ascend"}


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


def test_a_plan_that_breaks_a_limit_on_every_shape_says_so_once_with_the_shape_count():
    row_index = next(i for i, row in enumerate(judge_targets.JUDGE_ROWS) if row.backend == "mthreads")
    solution = fake_solution({"mthreads": fake_backend(name="mthreads", max_threads=128)})
    shapes = [("128x128", 128, 128), ("1024x2560", 1024, 2560)]
    jobs, refused = judge_targets.plan_row(solution, row_index, shapes)
    assert refused == [] and len(jobs) == 1  # one distinct launch for both shapes
    assert jobs[0]["shapes"] == jobs[0]["launches_checked"] == 2
    assert jobs[0]["limit_problems"] == [
        "256 threads a program (8 warps of 32), more than 128 (2 shapes, first 128x128)"]


def test_a_shape_the_plan_refuses_is_reported_not_dropped():
    row_index = next(i for i, row in enumerate(judge_targets.JUDGE_ROWS) if row.backend == "ascend")

    def launch_plan(backend, M, H, **kwargs):
        if M > 1024:
            raise ValueError("too many programs")
        return {"main": fake_launch()}
    solution = SimpleNamespace(BACKENDS={"ascend": fake_backend(name="ascend")}, launch_plan=launch_plan)
    jobs, refused = judge_targets.plan_row(solution, row_index, [("a", 128, 128), ("b", 4096, 128)])
    assert len(jobs) == 1 and refused == ["the generic route's launch_plan raised ValueError: too many programs "
                                          "(1 shapes, first b)"]


def test_what_the_compiled_ttir_uses_is_held_against_the_backend():
    result = {"gathers": 1, "inline_asm": 2}
    problems = judge_targets.compiled_problems(fake_backend(gather=False), "generic", result)
    assert len(problems) == 2 and "tt.gather" in problems[0] and "inline asm" in problems[1]
    assert judge_targets.compiled_problems(fake_backend(), "nvidia", result) == []  # no gather field: no rule


def test_a_row_says_how_far_it_got_and_never_more():
    assert judge_targets.reached(True, {"binary": True}) == "compiled to binary"
    assert judge_targets.reached(True, {"binary": False}) == "compiled to the last stage before the binary"
    assert judge_targets.reached(False, None) == "limits checked only"


def test_a_stand_in_must_have_the_backends_warp_size():
    row = judge_targets.JudgeRow("metax", "MetaX", "cuda:80", "maca")
    problems = judge_targets.row_problems(row, {"targets": ("maca",), "warp_size": 64})
    assert problems and "32-wide warps, the backend 64" in problems[0]
    own = judge_targets.JudgeRow("nvidia", "NVIDIA", "hip:gfx90a")
    assert "no stand-in" in judge_targets.row_problems(own, {"targets": ("cuda",), "warp_size": 64})[0]


def test_each_row_installs_the_triton_of_its_backends_base_version():
    rows = {(row.backend, row.triton): row for row in judge_targets.JUDGE_ROWS}
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
    solution = compile_matrix._load_solution(compile_matrix.ROOT / "solution.py")
    table = {name: backend._asdict() for name, backend in solution.BACKENDS.items()}
    for row in judge_targets.JUDGE_ROWS:
        assert judge_targets.row_problems(row, table[row.backend]) == [], row


def test_table_marks_stand_ins_and_failed_limits():
    metax = next(i for i, row in enumerate(judge_targets.JUDGE_ROWS) if row.backend == "metax")
    row = {"row": metax, "triton": "triton 3.1.0", "target": "hip:gfx90a", "kernel": "k", "settings": "num_warps=16",
           "shapes": 20, "launches_checked": 20, "limit_problems": ["1024 threads a program, more than 512"],
           "ok": False, "reached": "compiled to the last stage before the binary", "compile": "ok: 9 global stores",
           "result": {}, "seconds": 1.0}
    table = judge_targets.format_table([row], 20)
    assert "hip:gfx90a (stand-in)" in table and "FAIL: 1024 threads" in table and "a stand-in for maca" in table


def test_a_selection_names_judge_backends_or_none_for_all():
    assert judge_targets.parse_selection("judge") is None
    assert judge_targets.parse_selection("judge:ascend, metax") == ("ascend", "metax")
    with pytest.raises(ValueError, match="judge backends are ascend, hygon"):
        judge_targets.parse_selection("judge:amd")


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(JUDGE))
def test_a_broken_solution_fails_its_judge_row_with_the_compilers_words(name, tmp_path):
    edits, selection, kernel, words = JUDGE[name]
    proc, report = run_targets(selection, tmp_path, make_broken(edits, tmp_path))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    failed = [r for r in report["rows"] if not r["ok"]]
    assert failed and all(r["kernel"] == kernel and words in r["compile"] for r in failed), report["rows"]
    assert failed[0]["reached"] == "limits checked only"
