"""results/ keeps records (measurement outputs and the READMEs that explain them), never the code that made them:
a script, a patch or an executable file found there belongs under tools/research/, in the folder named after its
record folder (tools/research/README.md lists them). CPU only, reads file names and modes."""
import stat

import harness

RESULTS = harness.ROOT / "results"
CODE_SUFFIXES = (".py", ".sh", ".patch", ".diff")


def code_in(folder):
    """'path (why)' for every file under folder that is code: a code suffix, or an executable bit set."""
    found = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        reasons = []
        if path.name.endswith(CODE_SUFFIXES):
            reasons.append("code suffix")
        if path.stat().st_mode & (stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH):
            reasons.append("executable")
        if reasons:
            found.append(f"{path.relative_to(folder)} ({', '.join(reasons)})")
    return found


def test_results_holds_no_code():
    assert RESULTS.is_dir()
    assert code_in(RESULTS) == [], "move these to tools/research/<their record folder>/ with git mv"


def test_the_reader_finds_each_kind_of_code(tmp_path):
    (tmp_path / "run" / "deep").mkdir(parents=True)
    for name in ("a.py", "run/b.sh", "run/deep/c.patch", "d.diff", "record.txt", "record.json", "README.md"):
        (tmp_path / name).write_text("x\n")
    (tmp_path / "run" / "tool").write_text("#!/bin/sh\n")
    (tmp_path / "run" / "tool").chmod(0o755)
    assert code_in(tmp_path) == ["a.py (code suffix)", "d.diff (code suffix)", "run/b.sh (code suffix)",
                                 "run/deep/c.patch (code suffix)", "run/tool (executable)"]
