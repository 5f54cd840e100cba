"""The package's import graph: no circle (imports inside functions count too), and nothing in the
core imports a front end (`cli/`, `server/`): the analysis stays a library that knows nothing of
LSP or argparse. Imports for type annotations only (under `if TYPE_CHECKING:`) do not run and
are not counted: a feature module may name the server's class in its annotations."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import REPO

PACKAGE = REPO / "mlir_lsp_asserts"
FRONT_ENDS = ("mlir_lsp_asserts.cli", "mlir_lsp_asserts.server", "mlir_lsp_asserts.api")


def _modules() -> dict[str, Path]:
    out = {}
    for p in PACKAGE.rglob("*.py"):
        parts = p.relative_to(REPO).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = p
    return out


def _type_checking_only(tree: ast.AST) -> set[int]:
    """The ids of the nodes under an `if TYPE_CHECKING:` (never run)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            out.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return out


def import_graph() -> dict[str, set[str]]:
    mods = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        deps: set[str] = set()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = _type_checking_only(tree)
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
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


def test_the_core_never_imports_a_front_end():
    graph = import_graph()
    core = [m for m in graph if m != "mlir_lsp_asserts.__main__" and not m.startswith(FRONT_ENDS)]
    bad = {m: sorted(d for d in graph[m] if d.startswith(FRONT_ENDS)) for m in core}
    assert not {m: d for m, d in bad.items() if d}


def test_the_check_finds_a_circle_and_an_upward_import():
    """The two checks above on a graph that breaks them."""
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    graph = import_graph()
    assert "mlir_lsp_asserts.check" in graph["mlir_lsp_asserts.file_job"]
    assert not any(d.startswith(FRONT_ENDS) for d in graph["mlir_lsp_asserts.check"])
