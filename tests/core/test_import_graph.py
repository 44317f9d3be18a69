"""The package's modules import one another without a cycle (issue #50): a
module can be read, tested and moved with what it imports, and a lazy import
inside a function, which hides a cycle from Python, counts as one here.
Imports under ``if TYPE_CHECKING:`` (type hints only) do not."""

import ast
from pathlib import Path
from typing import Dict, List, Set

from conftest import PACKAGE


def module_names() -> Dict[str, Path]:
    names = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        names[name] = path
    return names


def type_checking_nodes(tree: ast.AST) -> Set[int]:
    """ids of the nodes inside ``if TYPE_CHECKING:`` blocks."""
    hidden = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            hidden.update(id(inner) for stmt in node.body for inner in ast.walk(stmt))
    return hidden


def imports_of(name: str, path: Path, modules: Dict[str, Path]) -> Set[str]:
    """The package's modules that ``name`` imports (``from . import x`` of a
    submodule is that submodule, not the package)."""
    tree = ast.parse(path.read_text(encoding="utf8"))
    hidden = type_checking_nodes(tree)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom) or id(node) in hidden:
            continue
        if node.level:
            base = package.split(".")
            base = base[: len(base) - (node.level - 1)]
            source = ".".join(base + ([node.module] if node.module else []))
        elif node.module and node.module.split(".")[0] == "spacy_crf":
            source = node.module
        else:
            continue
        for alias in node.names:
            target = f"{source}.{alias.name}"
            target = target if target in modules else source
            if target in modules and target != name:
                found.add(target)
    return found


def cycles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    found: List[List[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_no_module_of_the_package_is_in_an_import_cycle():
    modules = module_names()
    graph = {name: imports_of(name, path, modules) for name, path in modules.items()}
    assert cycles(graph) == []


def test_the_check_finds_a_cycle_hidden_in_a_function():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
