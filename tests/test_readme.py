"""README.md kept true: every command it shows parses, every Triton it lists as run on a GPU has a record under
results/ (and every such record is listed), its links lead to files, and it cites no tracker issue numbers.
CPU only, no kernel runs: check.py's and bench.py's own parse_args judge their arguments."""
import contextlib
import io
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import bench
import check

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
MAX_LINES = 250
# The tools whose argument parser is importable without side effects (each module's parse_args(argv)).
PARSERS = {"check.py": check.parse_args, "bench.py": bench.parse_args}
# pytest options that take a value: the value is no path.
PYTEST_VALUED = {"-n", "-k", "-m", "-p", "--durations", "--maxfail", "-c", "--rootdir"}
COMMAND = re.compile(r"^(python3?|pip) ")
# "Run on a GPU, check.py: H100 with Triton 3.0, 3.1; H200 with Triton 3.6." (optionally a list item)
GPU_LINE = re.compile(r"^\s*(?:- )?Run on a GPU, (\w+\.py): (.+?)\.?\s*$", re.M)
CARD_PART = re.compile(r"^(H\d00) with (?:Triton )?(\d+\.\d+(?:, \d+\.\d+)*)$")
# A record's header line, as check.py and bench.py print it: "check.py on NVIDIA H100 80GB HBM3 (torch ..., triton 3.6.0)".
RECORD_HEADER = re.compile(r"^(?:# |\$ )?(check\.py|bench\.py) on NVIDIA (H\d00)\b[^\n]*?\btriton (\d+\.\d+)\.\d+", re.M)
ISSUE_NUMBER = re.compile(r"\bissues? \d+", re.I)  # this tracker's; another project's "issue #N" is a source
USER_DOCS = ("README.md", "PLATFORMS.md", "results/README.md", "solution.py", "check.py", "bench.py", "harness.py",
             "measure.py", "compile_matrix.py", "judge_targets.py", "tools/solution_copies.py", "tools/cold_start.py")


@contextlib.contextmanager
def _in_root():
    """The repository root as the working directory (contextlib.chdir is Python 3.11+; the tools take 3.10)."""
    before = os.getcwd()
    os.chdir(ROOT)
    try:
        yield
    finally:
        os.chdir(before)


def readme_commands(text):
    """Every command line the README shows: in fenced or 4-space-indented code blocks, and in inline code spans,
    each line starting with python, python3 or pip; `a && b` gives two commands."""
    lines, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced or line.startswith("    "):
            lines.append(line.strip())
    lines += re.findall(r"`([^`\n]+)`", text)
    commands = []
    for line in lines:
        for part in line.split("&&"):
            part = part.split("  #")[0].strip()
            if COMMAND.match(part):
                commands.append(part)
    return commands


def command_problem(command):
    """Why one README command would not parse, or None."""
    words = shlex.split(command)
    if words[0] == "pip":
        if words[1:2] != ["install"]:
            return f"{command!r}: only pip install is expected"
        files = [words[i + 1] for i, w in enumerate(words) if w == "-r"]
        missing = [f for f in files if not (ROOT / f).is_file()]
        return f"{command!r}: no such requirements file {missing}" if missing else None
    args = words[1:]
    if args[:2] == ["-m", "pytest"]:
        paths, skip = [], False
        for word in args[2:]:
            if skip:
                skip = False
            elif word in PYTEST_VALUED:
                skip = True
            elif not word.startswith("-"):
                paths.append(word.split("::")[0])
        missing = [p for p in paths if not (ROOT / p).exists()]
        return f"{command!r}: no such test path {missing}" if missing else None
    script, options = args[0], args[1:]
    if not (ROOT / script).is_file():
        return f"{command!r}: no such file {script}"
    if script in PARSERS:
        if options == ["--help"]:
            return None
        stderr = io.StringIO()
        try:  # from the repository root, as the README's commands run: file arguments are relative to it
            with _in_root(), contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
                PARSERS[script](options)
        except SystemExit as exc:
            return f"{command!r}: {script} refuses it (exit {exc.code}): {stderr.getvalue().strip()}"
        return None
    # Another tool: its --help must list every option the README gives it.
    help_text = subprocess.run([sys.executable, str(ROOT / script), "--help"], capture_output=True, text=True,
                               cwd=ROOT, timeout=120).stdout
    unknown = [o.split("=")[0] for o in options if o.startswith("--") and o.split("=")[0] not in help_text]
    return f"{command!r}: {script} --help lists no {unknown}" if unknown else None


def test_the_readme_shows_the_two_fresh_machine_commands_and_the_judge_run():
    commands = readme_commands(README.read_text())
    assert "python check.py" in commands and "python check.py --targets judge" in commands, commands
    assert any(c.startswith("python -m pytest") for c in commands), commands
    assert sum(c.startswith("pip install") for c in commands) >= 2, commands


def test_every_readme_command_parses():
    problems = [p for p in map(command_problem, readme_commands(README.read_text())) if p]
    assert problems == []


def test_a_wrong_command_is_caught():
    # The checker itself can fail: a flag no parser has, a file that does not exist, a test path that does not.
    assert "refuses it" in command_problem("python check.py --strict --nonsense")
    assert "refuses it" in command_problem("python bench.py --baseline-route nvidia")
    assert "no such file" in command_problem("python nothing_here.py")
    assert "no such requirements file" in command_problem("pip install -r requirements-nothing.txt")
    assert "no such test path" in command_problem("python -m pytest -q -n auto tests/nothing")


def gpu_claims(text):
    """{(tool, card, triton minor)} from the README's "Run on a GPU, TOOL: CARD with Triton X, Y; ..." lines."""
    claims = set()
    for tool, rest in GPU_LINE.findall(text):
        for part in rest.split(";"):
            match = CARD_PART.match(part.strip())
            assert match, f"cannot read {part.strip()!r} in the README's 'Run on a GPU, {tool}' line"
            card, versions = match.groups()
            claims |= {(tool, card, version) for version in versions.split(", ")}
    return claims


def gpu_records():
    """{(tool, card, triton minor): a record} from the header lines of every text record under results/."""
    found = {}
    for path in sorted((ROOT / "results").rglob("*.txt")):
        for tool, card, version in RECORD_HEADER.findall(path.read_text(errors="replace")):
            found.setdefault((tool, card, version), path.relative_to(ROOT))
    return found


def test_every_triton_run_on_a_gpu_is_listed_and_has_a_record():
    claims = gpu_claims(README.read_text())
    assert {tool for tool, _, _ in claims} == {"check.py", "bench.py"}, claims
    records = gpu_records()
    assert sorted(claims - set(records)) == [], "listed in README.md as run on a GPU, with no record under results/"
    assert sorted(set(records) - claims) == [], "a record under results/ that README.md's 'Run on a GPU' lines omit"


def test_a_triton_listed_without_a_record_is_caught():
    claims = gpu_claims("- Run on a GPU, check.py: H100 with Triton 3.6, 2.9.\n")
    assert claims == {("check.py", "H100", "3.6"), ("check.py", "H100", "2.9")}
    assert claims - set(gpu_records()) == {("check.py", "H100", "2.9")}


def test_the_readme_is_short_and_its_links_lead_to_files():
    text = README.read_text()
    assert len(text.splitlines()) <= MAX_LINES
    links = [link for link in re.findall(r"\]\(([^)#]+)\)", text) if "://" not in link]
    assert links and [link for link in links if not (ROOT / link).exists()] == []


@pytest.mark.parametrize("name", USER_DOCS)
def test_no_tracker_issue_numbers_in_what_a_user_reads(name):
    # A clone or a pasted file has no tracker: say what the thing is. Folder names (issue44-h100-...) are names.
    hits = [line for line in (ROOT / name).read_text().splitlines() if ISSUE_NUMBER.search(line)]
    assert hits == []
    assert ISSUE_NUMBER.search("as issue 44 found") and ISSUE_NUMBER.search("issues 34 and 35")


def test_the_solutions_docstring_is_a_contract_and_a_map():
    """At most 40 lines: the contract, the sections in the order they come, how to force a route."""
    import ast
    source = (ROOT / "solution.py").read_text()
    doc = ast.get_docstring(ast.parse(source))
    assert len(doc.splitlines()) <= 40
    sections = [line.lstrip("# -") for line in source.splitlines() if line.startswith("# " + "-" * 16)]
    mapped = [line.strip().split("  ")[0] for line in doc.split("The file, in order:")[1].splitlines()[1:]
              if line.startswith("  ") and not line.startswith("    ")]
    assert len(mapped) == len(sections) > 5
    for name, section in zip(mapped, sections):  # each map entry's words are in its section's title, in order
        assert all(word in section for word in name.replace(",", "").split()), (name, section)
    assert "SILU_DOT_ROUTE" in doc
