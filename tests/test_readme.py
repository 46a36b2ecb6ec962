"""README.md kept true: every command it shows parses, every Triton it lists as run on a GPU has a record under
results/ (and every such record is listed), its links lead to files, and it cites no tracker issue numbers; the
verdict lines it shows are what check.py prints by default, every rung it names is one of the solution's ROUTES and
every ladder it draws one of its BACKENDS', every speed names its baseline (a table: one unit a column), every word of
its glossary is defined before its first use, its rungs table follows ROUTE_TABLE and BACKENDS, every checklist step
holds on every Triton the kit admits, and it is at most 260 lines. CPU only, no kernel runs: check.py's and bench.py's
own parse_args judge their arguments, check.py's own verdict() and check_shape() (with the reference as the
solution) its lines."""
import contextlib
import functools
import inspect
import io
import json
import os
import re
import shlex
import subprocess
import sys
import warnings
from pathlib import Path
from unittest import mock
from typing import NamedTuple

import pytest

import bench
import check
import harness
import solution

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
MAX_LINES = 260  # 250 until bench.py's timing modes took a paragraph in Speed
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


def test_the_readme_is_short():
    assert len(README.read_text().splitlines()) <= MAX_LINES


def test_the_readme_links_lead_to_files():
    text = README.read_text()
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


# ---------------------------------------------------------------- the verdict lines shown

# check.py's passing verdict as the README quotes it (check.verdict's "line").
VERDICT_LINE = re.compile(r"PASSED: \d+/\d+ shapes, \d+ runs, seeds=\d+, families=[\w,]+, strict=(?:True|False)")
# A check.py run on a GPU, committed as it came back: its first line its command, its verdict among its last lines.
GPU_RECORD = ROOT / "results/witness-h100-2026-11-27/triton36-final-87581ca/check-auto-triton36.txt"


@functools.lru_cache(maxsize=None)
def runs_a_shape(seeds, families):
    """The runs check.py's check_shape counts on one shape: one small shape, with the reference as the solution
    (nothing compiles, and the count does not depend on the answers)."""
    reference = harness.reference_fn()
    with warnings_ignored():
        row, _ = check.check_shape(reference, reference, "128x128", 128, 128, seeds, list(families), "cpu")
    return row["runs"]


def verdict_line(argv, device):
    """The PASSED line check.py prints for argv on device when every check passes, from check.py's own pieces: its
    parse_args (the defaults), its default shape groups for the device, its check_shape's count of runs a shape
    (runs_a_shape) and its verdict()."""
    args = check.parse_args(argv)
    shapes = harness.expand_shape_args(args.shapes, check.DEFAULT_SHAPE_GROUPS[device])
    runs = runs_a_shape(args.seeds, tuple(args.families))
    passed = {name: {"where": "", "problems": []} for name in check.NAMED_CHECKS}
    rows = [{"shape": label, "runs": runs, "checks": passed} for label, _, _ in shapes]
    return check.verdict(args, {name: [] for name in check.STATIC_CHECKS}, rows, device)["line"]


@contextlib.contextmanager
def warnings_ignored():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def verdict_problems(text):
    """Where the check.py verdict lines a text shows differ from what check.py prints by default: without a GPU
    (`python check.py`) and with one (`python check.py --strict`). Both must be shown, and no other."""
    expected = {verdict_line([], "cpu"), verdict_line(["--strict"], "cuda")}
    shown = set(VERDICT_LINE.findall(text))
    return ([f"not shown: {line}" for line in sorted(expected - shown)]
            + [f"not what check.py prints by default: {line}" for line in sorted(shown - expected)])


def test_the_verdict_lines_shown_are_what_check_prints_by_default():
    assert verdict_problems(README.read_text()) == []


def test_the_verdict_line_is_derived_as_check_printed_it_on_a_gpu():
    # The derivation against a real run: a record's command (its first line) and the verdict it printed.
    lines = GPU_RECORD.read_text().splitlines()
    argv = shlex.split(lines[0].lstrip("# "))[2:]
    argv = argv[:argv.index("--json")] if "--json" in argv else argv
    printed = [line for line in lines if line.startswith("PASSED: ")]
    assert printed == [verdict_line(argv, "cuda")]


def test_a_stale_verdict_line_is_caught():
    text = README.read_text()
    strict = verdict_line(["--strict"], "cuda")
    stale = strict.replace("seeds=3", "seeds=1")
    assert stale != strict and f"not what check.py prints by default: {stale}" in verdict_problems(
        text.replace(strict, stale))


# ---------------------------------------------------------------- rungs and ladders

CODE_SPAN = re.compile(r"`([^`\n]+)`")
IDENTIFIER = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*")
# Lower-case identifiers in code spans that name no rung, beyond the names the code itself gives (checks, shape
# groups, the call's parameters, the proofs): a Triton function, a compiler stage, pytest's words, a torch function.
NOT_RUNGS = {"div_rn", "hivmc", "failed", "error", "assert_close"}
# In the output the README quotes: "route: R", "  R: taken", "  R: left: ...", "not tried, below it: R, S".
ROUTE_LINE = re.compile(r"^\s*route(?: after the calls)?: (\w+)", re.M)
LADDER_LINE = re.compile(r"^\s+(\w+): (?:taken|left)\b", re.M)
BELOW_LINE = re.compile(r"not tried, below it: ([\w, ]+)")
FORCED = re.compile(r"--(?:baseline-)?route[ =](\w+)")
LADDER_CHAIN = re.compile(r"`\w+`(?:\s*→\s*`\w+`)+")


def code_lines(text):
    """The lines of the README's code blocks (4-space indented after a blank line, or fenced)."""
    lines, fenced, block = [], False, False
    previous = ""
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif fenced:
            lines.append(line)
        else:
            block = line.startswith("    ") and (block or not previous.strip())
            if block:
                lines.append(line)
        previous = line
    return lines


def rung_names(text):
    """Every name the README gives a rung: lower-case identifiers in code spans (less the code's other names, bench.py's
    timing modes among them, and NOT_RUNGS), the rungs in the tools' output it quotes, and every route its commands
    force. "R" is a placeholder."""
    other = (set(check.CHECKS_BY_NAME) | set(harness.FAMILIES) | set(solution.PROOFS)
             | {group for group in json.loads((ROOT / "shapes.json").read_text()) if not group.startswith("_")}
             | set(inspect.signature(solution.silu_dot_fwd_bwd_quant_fuse).parameters) | set(bench.MODES) | NOT_RUNGS)
    names = {span for span in CODE_SPAN.findall(text) if IDENTIFIER.fullmatch(span)} - other
    output = "\n".join(code_lines(text))
    names |= set(ROUTE_LINE.findall(output)) | set(LADDER_LINE.findall(output))
    names |= {name.strip() for found in BELOW_LINE.findall(output) for name in found.split(",")}
    names |= set(FORCED.findall(text))
    return names - {"R"}


def test_every_rung_the_readme_names_is_one_of_the_solutions_routes():
    names = rung_names(README.read_text())
    assert {"nvidia", "native", "native_per_element", "ascend_transposed", "tolerant"} <= names
    assert sorted(names - set(solution.ROUTES)) == []


def test_a_rung_that_is_no_route_is_caught():
    text = ("`native_per_elem` first, `triton_only` a check, `randn` a family\n\n    route: amd\n"
            "      amd: taken\n      not tried, below it: generic_per_element, plainer\n\n`python check.py --route nvidia2`\n")
    assert rung_names(text) - set(solution.ROUTES) == {"native_per_elem", "amd", "plainer", "nvidia2"}


def ladder_problems(text):
    """Each ladder the README draws (backticked rungs joined by →) that is no unbroken run of a BACKENDS ladder."""
    ladders = [backend.routes for backend in solution.BACKENDS.values()]
    problems = []
    for chain in LADDER_CHAIN.findall(text):
        rungs = tuple(re.findall(r"`(\w+)`", chain))
        if not any(ladder[i:i + len(rungs)] == rungs for ladder in ladders for i in range(len(ladder))):
            problems.append(" → ".join(rungs))
    return problems


def test_every_ladder_the_readme_draws_is_the_solutions():
    text = README.read_text()
    assert len(LADDER_CHAIN.findall(text)) >= 4  # the interpreter's, the other chips', NVIDIA's, Ascend's
    assert ladder_problems(text) == []


def test_a_ladder_out_of_order_is_caught():
    assert ladder_problems("`native` → `generic` → `native_per_element`") == ["native → generic → native_per_element"]
    assert ladder_problems("`nvidia` →\n  `nvidia_per_element` → `native`") == []


# ---------------------------------------------------------------- every speed names its baseline

# A speed: a number (or a range) followed by × or x, not by a digit (8×256×4096, 128x128 are shapes).
SPEED = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?:[–-]\d+(?:\.\d+)?)?\s?[x×](?!\w)(?!\s?\d)")
# What a speed can be measured against: the reference (a speedup), or a rung's time on the same GPU and Triton.
BASELINES = ("over the reference", "`nvidia`'s time", "`nvidia_per_element`'s time")


class Unit(NamedTuple):
    """A unit of prose: a paragraph, a list item with its continuation lines, or a table cell; for a cell of a
    table's body, its column's header ("" elsewhere)."""
    text: str
    header: str = ""


TABLE_RULE = re.compile(r"^\|(?:\s*:?-+:?\s*\|)+\s*$")


def table_row(line):
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def prose_units(text):
    """The README's prose outside code blocks, in units (Unit): each table cell (a body cell with its column's
    header), each list item with its continuation lines, each paragraph. Code spans that quote a tool's output
    (holding a speed) are left out: they are quotes."""
    code = set(code_lines(text))
    units, current = [], []
    header, previous_row = None, None

    def flush():
        if current:
            units.append(Unit(" ".join(current)))
            current.clear()

    for line in text.splitlines():
        if not line.startswith("|"):
            header = previous_row = None
        if line in code or not line.strip() or line.startswith("#"):
            flush()
        elif line.startswith("|"):
            flush()
            if TABLE_RULE.match(line):  # the row above was the header
                header = previous_row
                continue
            cells = table_row(line)
            if header is None:
                units.extend(Unit(cell) for cell in cells)
                previous_row = cells
            else:
                units.extend(Unit(cell, column) for cell, column in zip(cells, header))
        elif re.match(r"(?:- |\d+\. )", line):
            flush()
            current.append(line)
        else:
            current.append(line.strip())
    flush()
    return [unit._replace(text=CODE_SPAN.sub(lambda m: "" if SPEED.search(m.group(1)) else m.group(0), unit.text))
            for unit in units]


def speeds_without_baseline(text):
    """Each speed whose baseline is not named. In a table whose column header names one baseline of BASELINES,
    every speed of the column is in that unit, and a cell naming another baseline mixes units (one unit a column).
    Elsewhere a baseline must come after the speed, before the next speed or the end of its unit."""
    missing = []
    for unit in prose_units(text):
        found = list(SPEED.finditer(unit.text))
        named = [baseline for baseline in BASELINES if baseline in unit.header]
        if len(named) == 1:
            others = [baseline for baseline in BASELINES if baseline in unit.text and baseline != named[0]]
            missing += [f"{speed.group(0)} in {unit.text[:80]!r}, a column of {named[0]}, names {others}"
                        for speed in found if others]
            continue
        for speed, following in zip(found, found[1:] + [None]):
            after = unit.text[speed.end():following.start() if following else len(unit.text)]
            if not any(baseline in after for baseline in BASELINES):
                missing.append(f"{speed.group(0)} in {unit.text[:80]!r}")
    return missing


def test_every_speed_names_its_baseline():
    text = README.read_text()
    # The speed table's figures and the two compared below it (a count, so that a parser finding none fails).
    assert len([s for unit in prose_units(text) for s in SPEED.findall(unit.text)]) >= 14
    assert speeds_without_baseline(text) == []


def test_a_speed_without_its_baseline_is_caught():
    assert speeds_without_baseline("- `native` 1.111×, `generic` 1.494× `nvidia`'s time\n") == [
        "1.111× in \"- `native` 1.111×, `generic` 1.494× `nvidia`'s time\""]
    assert speeds_without_baseline("| 28.3× over the reference | 2.5× |\n") == ["2.5× in '2.5×'"]
    assert speeds_without_baseline("8×256×4096 and 128x128 are shapes; `28.29x (leaderboard number)` a quote\n") == []
    table = "| rung | × over the reference | × `nvidia`'s time | note |\n|---|---|---|---|\n"
    assert speeds_without_baseline(table + "| `native` | | 1.111× | |\n| `nvidia` | 28.3× (each shape 23–37×) | | |\n") == []
    assert speeds_without_baseline(table + "| `native` | | 1.2× over the reference | |\n") == [
        "1.2× in '1.2× over the reference', a column of `nvidia`'s time, names ['over the reference']"]
    assert speeds_without_baseline(table + "| `native` | | | 1.111× |\n") == ["1.111× in '1.111×'"]


# ---------------------------------------------------------------- the glossary comes before its words

GLOSSARY = "## Words used here"


def glossary_problems(text):
    """Each word the glossary defines (its bold terms) that the README uses before the glossary (outside code)."""
    start = text.index(f"\n{GLOSSARY}\n")
    section = text[start:text.index("\n## ", start + 1)]
    before = CODE_SPAN.sub("", "\n".join(line for line in text[:start].splitlines() if not line.startswith("    ")))
    terms = re.findall(r"\*\*([^*]+)\*\*", section)
    return [term for term in terms
            if re.search(rf"\b{re.escape(term[:-1] if term.endswith('s') else term)}", before, re.I)]


def test_the_glossary_comes_before_any_of_its_words():
    text = README.read_text()
    start = text.index(f"\n{GLOSSARY}\n")
    terms = re.findall(r"\*\*([^*]+)\*\*", text[start:text.index("\n## ", start + 1)])
    assert {"rung", "route", "ladder", "fused", "two-pass", "persistent", "table", "stand-in", "probe", "witness",
            "ordering check"} <= set(terms)
    assert glossary_problems(text) == []


def test_a_word_used_before_the_glossary_is_caught():
    text = README.read_text().replace("## The call\n", "## The call\n\nEach chip takes the first rung it can.\n", 1)
    assert glossary_problems(text) == ["rung"]


# The words the glossary defines (its bold terms), each with the pattern of its uses anywhere in the page, code spans
# and code blocks included: each one's first use must be its own definition, in the glossary. A new bold term needs
# its line here.
TERMS = {
    "rung": r"\brungs?\b",
    "route": r"\broutes?\b",
    "ladder": r"\bladders?\b",
    "left": r"\bleft\b",
    "remaining": r"\bremaining\b",
    "exact": r"\bexact\b",
    "native": r"\bnative\b",
    "IEEE": r"\bIEEE\b",
    "table": r"\btables?\b",
    "per element": r"\bper element\b",
    "fused": r"\bfused\b",
    "two-pass": r"\btwo-pass\b",
    "persistent": r"\bpersistent\b",
    "launch settings": r"\blaunch settings\b",
    "PTX pieces": r"\bPTX pieces\b",
    "probe": r"\bprobe[sd]?\b",
    "ordering check": r"\bordering checks?\b",
    "witness": r"\bwitness(?:es)?\b",
    "proofs": r"\bproofs?\b",
    "stand-in": r"\bstand-ins?\b",
    "`benchmark`": r"`benchmark`",
    "`hidden_like`": r"\bhidden_like\b",
    "`cpu_small`": r"\bcpu_small\b",
    "families": r"\bfamil(?:y|ies)\b",
    "NaN pairs": r"\bNaN pairs?\b",
    "`triton_only`": r"\btriton_only\b",
    "release": r"\breleases?\b",
    "copy-speed ceiling": r"\bcopy-speed ceiling\b",
}


def line_of(text, index):
    return text.count("\n", 0, index) + 1


def term_problems(text):
    """Each term of TERMS that the glossary does not define, or that the page uses before its definition (the bold
    term in the glossary), anywhere, the glossary's own earlier lines included; and each bold term of the glossary
    that TERMS lacks."""
    start = text.index(f"\n{GLOSSARY}\n")
    end = text.index("\n## ", start + 1)
    problems = [f"{term}: in the glossary, not in TERMS" for term in re.findall(r"\*\*([^*]+)\*\*", text[start:end])
                if term not in TERMS]
    for term, pattern in TERMS.items():
        definition = text.find(f"**{term}**", start, end)
        if definition < 0:
            problems.append(f"{term}: not defined in the glossary")
            continue
        first = re.search(pattern, text, re.I)
        if first.start() < definition:
            problems.append(f"{term}: used on line {line_of(text, first.start())} ({first.group(0)!r}) before its "
                            f"definition on line {line_of(text, definition)}")
    return problems


def test_every_term_is_defined_in_the_glossary_before_its_first_use():
    assert term_problems(README.read_text()) == []


def test_a_term_used_before_its_definition_is_caught():
    text = README.read_text()
    used_in_the_call = text.replace("## The call\n", "## The call\n\nTry it on `cpu_small` first.\n", 1)
    assert [problem.split(":")[0] for problem in term_problems(used_in_the_call)] == ["`cpu_small`"]
    used_in_the_glossary = text.replace("their arithmetic and how they are launched", "their launch settings", 1)
    assert [problem.split(":")[0] for problem in term_problems(used_in_the_glossary)] == ["launch settings"]
    undefined = text.replace("**copy-speed ceiling**", "copy-speed ceiling", 1)
    assert term_problems(undefined) == ["copy-speed ceiling: not defined in the glossary"]


# ---------------------------------------------------------------- the rungs table follows ROUTE_TABLE and BACKENDS

RUNGS = "## The rungs"
# How the table names each backend of BACKENDS (a new backend needs its word here).
CHIP_WORDS = {"nvidia": "NVIDIA", "hygon": "Hygon", "amd": "AMD", "iluvatar": "Iluvatar", "thead": "T-Head",
              "metax": "MetaX", "mthreads": "Moore Threads", "ascend": "Ascend", "interpreter": "interpreter",
              "unknown": "unknown"}
# The "first on" columns, each with whether that Triton has a tl.gather that compiles (solution._SIGMOID_TABLE).
FIRST_ON = {"first on, Triton 3.4+": True, "first on, Triton 3.0–3.3": False}


def available(route, gather):
    """Whether a Triton with (or without) a working tl.gather can have the route: the solution's own answer."""
    with mock.patch.object(solution, "_SIGMOID_TABLE", gather):
        return solution.route_available(route)


def first_rungs(gather):
    """{backend: the first rung of its ladder that a Triton with (or without) tl.gather can have}."""
    return {name: next(route for route in backend.routes if available(route, gather))
            for name, backend in solution.BACKENDS.items()}


def table_under(text, heading):
    """The first table under a heading: a dict a row, keyed by the header's cells."""
    lines = text[text.index(f"\n{heading}\n"):].splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("|"))
    end = next((i for i in range(first, len(lines)) if not lines[i].startswith("|")), len(lines))
    header = table_row(lines[first])
    return [dict(zip(header, table_row(line))) for line in lines[first + 2:end]]


def rung_table_problems(text):
    """Where the rungs table disagrees with the solution: a row per route of ROUTES; its kernels fused or two-pass
    (and persistent or not), its arithmetic native (probed or not) or IEEE, or as the reference is written where the
    rung is not exact, its sigmoid from the table or per element (Route's fields); and the backends whose first rung
    it is, with and without tl.gather (BACKENDS' ladders, less the routes such a Triton cannot have)."""
    rows = table_under(text, RUNGS)
    names = [row["rung"].strip("`") for row in rows]
    problems = [] if sorted(names) == sorted(solution.ROUTES) else [f"rows {names}, ROUTES {list(solution.ROUTES)}"]
    firsts = {gather: first_rungs(gather) for gather in FIRST_ON.values()}
    for name, row in zip(names, rows):
        route = solution.ROUTE_TABLE.get(name)
        if route is None:
            continue
        kernels, arithmetic, sigmoid = row["kernels"], row["arithmetic"], row["sigmoid"]
        if not kernels.startswith("two-pass" if route.two_pass else "fused"):
            problems.append(f"{name}: kernels {kernels!r}, two_pass={route.two_pass}")
        if ("persistent" in kernels) != route.persistent:
            problems.append(f"{name}: kernels {kernels!r}, persistent={route.persistent}")
        expected = "native" if route.native_math else "IEEE" if route.exact else "as the reference is written"
        if not arithmetic.startswith(expected):
            problems.append(f"{name}: arithmetic {arithmetic!r}, expected {expected!r} (native_math="
                            f"{route.native_math}, exact={route.exact})")
        if route.native_math and ("not probed" in arithmetic) == route.probed:
            problems.append(f"{name}: arithmetic {arithmetic!r}, probed={route.probed}")
        if not sigmoid.startswith("table" if route.sigmoid_table else "per element"):
            problems.append(f"{name}: sigmoid {sigmoid!r}, sigmoid_table={route.sigmoid_table}")
        for column, gather in FIRST_ON.items():
            expected_chips = {CHIP_WORDS[backend] for backend, first in firsts[gather].items() if first == name}
            shown = {word for word in CHIP_WORDS.values() if re.search(rf"\b{re.escape(word)}\b", row[column])}
            if shown != expected_chips:
                problems.append(f"{name}: {column!r} names {sorted(shown)}, BACKENDS {sorted(expected_chips)}")
    return problems


def test_the_rungs_table_follows_route_table_and_backends():
    assert set(CHIP_WORDS) == set(solution.BACKENDS)
    assert rung_table_problems(README.read_text()) == []


def test_a_wrong_rungs_table_is_caught():
    text = README.read_text()
    row = next(line for line in text.splitlines() if line.startswith("| `plain` |"))
    assert rung_table_problems(text.replace(row, row.replace("| two-pass", "| fused"), 1)) == [
        "plain: kernels 'fused, y handed over in the scratch', two_pass=True"]
    row = next(line for line in text.splitlines() if line.startswith("| `native` |"))
    assert rung_table_problems(text.replace(row, row.replace("T-Head, ", ""), 1)) == [
        "native: 'first on, Triton 3.4+' names ['AMD', 'Hygon', 'Iluvatar', 'MetaX', 'Moore Threads', 'unknown'], "
        "BACKENDS ['AMD', 'Hygon', 'Iluvatar', 'MetaX', 'Moore Threads', 'T-Head', 'unknown']"]


# ---------------------------------------------------------------- the checklist holds on every admitted Triton

CHECKLIST = "## Before submitting: the checklist"


def routes_named(text):
    """The routes a piece of text names in its code spans (`route: nvidia`, `--route native`, `nvidia: taken`)."""
    return {word for span in CODE_SPAN.findall(text) for word in re.findall(r"\w+", span)
            if word in solution.ROUTE_TABLE}


def below_3_4(route):
    """The rungs a Triton without tl.gather takes instead of route: on each ladder holding it, the next it can have."""
    return {next(r for r in backend.routes[backend.routes.index(route) + 1:] if available(r, False))
            for backend in solution.BACKENDS.values() if route in backend.routes}


def checklist_problems(text):
    """Each unit of the checklist's section (a step, a paragraph, a bullet) that names a route a Triton before 3.4
    cannot have (a table rung: solution.route_available) without saying what to do there: it must name "3.4" and
    the rungs such a Triton takes in its place (below_3_4)."""
    start = text.index(f"\n{CHECKLIST}\n")
    problems = []
    for unit in prose_units(text[start:text.index("\n## ", start + 1)]):
        named = routes_named(unit.text)
        for route in sorted(r for r in named if not available(r, False)):
            missing = sorted(below_3_4(route) - named)
            if missing or not re.search(r"\b3\.4\b", unit.text):
                problems.append(f"{unit.text[:40]!r} names {route}, which Triton 3.0-3.3 cannot have, and not "
                                f"{' or '.join(missing) or 'Triton 3.4'}")
    return problems


def test_the_checklist_holds_on_every_admitted_triton():
    text = README.read_text()
    start = text.index(f"\n{CHECKLIST}\n")
    assert {"nvidia", "native"} <= routes_named(text[start:text.index("\n## ", start + 1)])  # the table rungs' steps
    assert checklist_problems(text) == []


def test_a_checklist_step_true_only_from_triton_3_4_is_caught():
    text = README.read_text()
    step = next(line for line in text.splitlines() if "`route: nvidia_per_element`" in line)
    broken = text.replace(step, step[:step.index("`route: nvidia`") + len("`route: nvidia`")] + ".", 1)
    assert checklist_problems(broken) == [
        "'4. NVIDIA GPU: `python check.py --strict' names nvidia, which Triton 3.0-3.3 cannot have, and not "
        "nvidia_per_element"]
