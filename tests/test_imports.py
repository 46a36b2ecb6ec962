"""Who imports what, read from the source (ast): no import circle among the kit's modules (its top-level
files and its tools, imports inside functions included), no module that takes another's private name, and
no tool that imports bench.py; the timing tools take their settings from measure.py."""
import ast

import pytest

import harness

TOOLS = harness.ROOT / "tools"
RECORD_FOLDERS = {path.name for path in (harness.ROOT / "results").iterdir() if path.is_dir()}


def is_lab_code(path):
    """Whether a file is lab code kept for a record's provenance: under tools/research/<a results/ folder>/. It was
    written against the solution of its session, may use that solution's private names, and no module imports it."""
    parts = path.relative_to(TOOLS).parts
    return len(parts) > 2 and parts[0] == "research" and parts[1] in RECORD_FOLDERS


def kit_modules():
    """{module name: path} of the top-level files and the tools (research included, its lab code not)."""
    paths = sorted(harness.ROOT.glob("*.py")) + sorted(p for p in TOOLS.rglob("*.py") if not is_lab_code(p))
    return {path.stem: path for path in paths}


def imports_of(tree):
    """{name the code uses: module it names} of every import in a module's AST, nested ones included."""
    bound = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                bound[alias.asname or alias.name.split(".")[0]] = alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                bound[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return bound


def imported_modules(path):
    return {name.split(".")[0] for name in imports_of(ast.parse(path.read_text(), filename=str(path))).values()}


def import_graph(modules):
    """{module: the kit's modules it imports}."""
    return {name: imported_modules(path) & set(modules) - {name} for name, path in modules.items()}


def circles(graph):
    """Every import circle, each as the list of modules around it (depth-first, one per back edge)."""
    found, state = [], {}

    def visit(module, stack):
        state[module] = "open"
        for imported in sorted(graph[module]):
            if state.get(imported) == "open":
                found.append(stack[stack.index(imported):] + [imported])
            elif imported not in state:
                visit(imported, stack + [imported])
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    return found


def private_names_taken(path, modules):
    """'line N: module._name' for each private name of another kit module that a file uses: an attribute of a
    name bound to that module (imported, or a loaded solution held in a variable named `solution`), or a
    name imported from it."""
    tree = ast.parse(path.read_text(), filename=str(path))
    bound = {name: target for name, target in imports_of(tree).items() if target.split(".")[0] in modules}
    module_names = {name for name, target in bound.items() if "." not in target} | {"solution"}
    taken = [f"line {node.lineno}: {node.module}.{alias.name}" for node in ast.walk(tree)
             if isinstance(node, ast.ImportFrom) and node.module in modules
             for alias in node.names if alias.name.startswith("_")]
    taken += [f"line {node.lineno}: {node.value.id}.{node.attr}" for node in ast.walk(tree)
              if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
              and node.value.id in module_names and node.value.id != path.stem
              and node.attr.startswith("_") and not node.attr.endswith("__")]
    return taken


def test_no_import_circle_among_the_kits_modules():
    assert circles(import_graph(kit_modules())) == []


def test_the_judge_sits_above_the_compile_matrix_and_check_above_both():
    graph = import_graph(kit_modules())
    assert "compile_matrix" in graph["judge_targets"] and "judge_targets" not in graph["compile_matrix"]
    assert {"compile_matrix", "judge_targets", "harness"} <= graph["check"]


@pytest.mark.parametrize("name", sorted(kit_modules()))
def test_no_module_takes_another_modules_private_name(name):
    modules = kit_modules()
    assert private_names_taken(modules[name], modules) == []


def test_the_readers_find_a_circle_and_a_private_name(tmp_path):
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]
    assert circles({"a": {"b"}, "b": set()}) == []
    user = tmp_path / "user.py"
    user.write_text("import harness as h\nfrom measure import _secret\n\n\ndef f(solution):\n"
                    "    import compile_matrix\n    return h._judge, compile_matrix._x, solution._devices, h.__doc__\n")
    assert private_names_taken(user, kit_modules()) == [
        "line 2: measure._secret", "line 7: h._judge", "line 7: compile_matrix._x", "line 7: solution._devices"]


def test_no_tool_imports_bench():
    # Tools share timing through measure.py; importing bench.py would tie them to its command line.
    tools = sorted(TOOLS.rglob("*.py"))
    assert tools
    assert [p.name for p in tools if "bench" in imported_modules(p)] == []


def test_the_timing_tools_take_their_settings_from_measure():
    for path in (TOOLS / "research" / "sweep.py", TOOLS / "research" / "movers.py", TOOLS / "l2_flush_probe.py",
                 TOOLS / "research" / "phase_timeline.py", harness.ROOT / "bench.py"):
        assert "measure" in imported_modules(path), path
