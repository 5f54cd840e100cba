"""The package's import graph: no circle (imports inside functions and imports for type annotations
only, under `if TYPE_CHECKING:`, count too), not between modules and not between the package's rooms
(its folders and top-level modules: syntax/, rules/, dispatch/, checker.py, ...), and nothing in the
core imports a front end (`cli/`, `server/`, the Python API `api/` and the package's `__init__`
that re-exports it): the analysis stays a library that knows nothing of LSP or argparse."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import REPO

PACKAGE = REPO / "mlir_lsp_asserts"
FRONT_ENDS = ("mlir_lsp_asserts.cli", "mlir_lsp_asserts.server", "mlir_lsp_asserts.api")
# The package's `__init__` re-exports the Python API: a front end too (core modules import their
# siblings, never the package itself).
PACKAGE_FACE = "mlir_lsp_asserts"


def _front_end(module: str) -> bool:
    return module == PACKAGE_FACE or module.startswith(FRONT_ENDS)


def _modules() -> dict[str, Path]:
    out = {}
    for p in PACKAGE.rglob("*.py"):
        parts = p.relative_to(REPO).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = p
    return out



def import_graph() -> dict[str, set[str]]:
    mods = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        deps: set[str] = set()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    mod = ".".join(base + ([node.module] if node.module else []))
                else:
                    mod = node.module or ""
                subs = [f"{mod}.{a.name}" for a in node.names if f"{mod}.{a.name}" in mods]
                deps.update(subs if len(subs) == len(node.names) else [mod, *subs])
            elif isinstance(node, ast.Import):
                deps.update(a.name for a in node.names)
        graph[name] = {d for d in deps if d in mods and d != name}
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1 on the path, 2 done
    path: list[str] = []

    def visit(v: str) -> list[str] | None:
        state[v] = 1
        path.append(v)
        for w in sorted(graph[v]):
            if state.get(w) == 1:
                return path[path.index(w):] + [w]
            if w not in state and (found := visit(w)):
                return found
        path.pop()
        state[v] = 2
        return None

    for v in sorted(graph):
        if v not in state and (found := visit(v)):
            return found
    return None


def test_the_import_graph_has_no_circle():
    cycle = _cycle(import_graph())
    assert cycle is None, " -> ".join(cycle)


def room_of(module: str) -> str:
    """The room a module stands in: its folder right under the package, or itself."""
    parts = module.split(".")
    return ".".join(parts[:2])


def room_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The rooms' graph: a room imports another when one of its modules imports one of the other's
    (the package's `__init__`, a front end that only hands names on, stands apart)."""
    rooms: dict[str, set[str]] = {}
    for m, deps in graph.items():
        if m == PACKAGE_FACE:
            continue
        rooms.setdefault(room_of(m), set()).update(room_of(d) for d in deps if d != PACKAGE_FACE)
    return {r: {d for d in deps if d != r} for r, deps in rooms.items()}


def test_the_rooms_import_one_way():
    cycle = _cycle(room_graph(import_graph()))
    assert cycle is None, " -> ".join(cycle)


def test_the_core_never_imports_a_front_end():
    graph = import_graph()
    core = [m for m in graph if m != "mlir_lsp_asserts.__main__" and not _front_end(m)]
    bad = {m: sorted(d for d in graph[m] if _front_end(d)) for m in core}
    assert not {m: d for m, d in bad.items() if d}


def test_the_check_finds_a_circle_and_an_upward_import():
    """The two checks above on a graph that breaks them."""
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    graph = import_graph()
    assert "mlir_lsp_asserts.checker" in graph["mlir_lsp_asserts.file_job"]
    assert not any(_front_end(d) for d in graph["mlir_lsp_asserts.checker"])
    assert _cycle(room_graph({"p.a.x": {"p.b.y"}, "p.b.y": set(), "p.b.z": {"p.a.w"}, "p.a.w": set()})) == [
        "p.a", "p.b", "p.a"]


# One idea per file: no function over 80 lines, no file over 450, in the package, the benchmarks
# and the tests' helper modules (the test files themselves may be longer).
MAX_FUNCTION_LINES = 80
MAX_FILE_LINES = 450


def _sized_files() -> list[Path]:
    helpers = [p for p in (REPO / "tests").glob("*.py") if not p.name.startswith("test_")]
    return sorted([*PACKAGE.rglob("*.py"), *(REPO / "bench").glob("*.py"), *helpers])


def _too_long(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    name = str(path.relative_to(REPO))
    out = [f"{name}: {n} lines"] if (n := len(text.splitlines())) > MAX_FILE_LINES else []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            n = (node.end_lineno or node.lineno) - node.lineno + 1
            if n > MAX_FUNCTION_LINES:
                out.append(f"{name}:{node.lineno}: {node.name} is {n} lines")
    return out


def test_no_long_function_and_no_long_file():
    files = _sized_files()
    assert {"conftest.py", "fuzzlib.py", "bench_server.py", "checker.py"} <= {p.name for p in files}
    assert [line for p in files for line in _too_long(p)] == []
