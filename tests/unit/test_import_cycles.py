"""No import cycle among the modules of ``pimento``, counting imports inside function bodies.

An import written inside a function can hide a cycle that a module-level import would make
visible at once (``A`` imports ``B`` at the top, ``B`` imports ``A`` inside a function). The graph
below is read with :mod:`ast` from the sources under ``src/pimento``: every ``import`` and
``from ... import`` counts wherever it is written (module level, class body, function body),
except those under ``if TYPE_CHECKING:``, which never run. An edge ``A -> B`` means ``A``
imports ``B`` (``from B import name`` counts as an import of the submodule ``B.name`` when it
is one). A package's ``__init__`` is its own node; importing ``a.b.c`` also imports ``a`` and
``a.b`` (their ``__init__``), but that implicit edge is left out, so that a package face that
re-exports its submodules does not make a cycle with each of them.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
ROOT = "pimento"

#: Cycles outside ``pimento.policy`` that are known and not yet removed, each as the sorted
#: modules of one strongly connected component. Both are the registries' lazy loading of their
#: built-in plugins: ``base`` fills its registry on first use by importing ``_builtin`` inside a
#: function, and ``_builtin`` (and the plugin modules it registers) import ``base`` for the
#: protocol and ``register_*``. Removing them means moving the protocol apart from the registry.
ALLOWED_CYCLES: frozenset[tuple[str, ...]] = frozenset({
    ("pimento.engines._builtin", "pimento.engines.base", "pimento.engines.duckdb_engine",
     "pimento.engines.postgres_engine", "pimento.engines.spark_engine", "pimento.engines.sqlite_engine"),
    ("pimento.llm._builtin", "pimento.llm.base", "pimento.llm.openai", "pimento.llm.replay"),
    # The release-mode registry: modes.base loads the built-in modes lazily (like engines and llm), and a
    # request parses its mode through the registry (a plug-in mode's name), so request and answers sit on it.
    ("pimento.release.answers", "pimento.release.modes._builtin", "pimento.release.modes.base", "pimento.release.modes.ci",
     "pimento.release.modes.contextual", "pimento.release.modes.dp", "pimento.release.modes.noisy",
     "pimento.release.modes.split", "pimento.release.request"),
})


def _modules() -> dict[str, Path]:
    """Module name -> its source file, for every module under ``src/pimento``."""
    out: dict[str, Path] = {}
    for path in sorted((SRC / ROOT).rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement of ``tree``, at any depth, except those under ``if TYPE_CHECKING:``."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                yield from _imports(ast.Module(body=[child], type_ignores=[]))
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        yield from _imports(node)


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute module a ``from ... import`` names (relative imports resolved)."""
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def import_graph() -> dict[str, set[str]]:
    """Module -> the ``pimento`` modules it imports (module level and function bodies)."""
    modules = _modules()
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        is_package = path.name == "__init__.py"
        for node in _imports(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = _resolve(module, is_package, node)
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
            for target in targets:
                while target and target not in modules:  # a name inside a module: the module
                    target = target.rpartition(".")[0]
                if target and target != module:
                    graph[module].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[tuple[str, ...]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[tuple[str, ...]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
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
                out.append(tuple(sorted(component)))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def test_no_import_cycle_in_pimento() -> None:
    found = set(cycles(import_graph()))
    assert not [c for c in found if any(m.startswith(f"{ROOT}.policy") for m in c)], found
    assert found - ALLOWED_CYCLES == set(), f"new import cycles: {sorted(found - ALLOWED_CYCLES)}"
    assert ALLOWED_CYCLES - found == set(), f"allowed cycles that no longer exist: {sorted(ALLOWED_CYCLES - found)}"


def test_the_graph_sees_function_body_imports() -> None:
    """The checker itself: an import inside a function body makes an edge, one under TYPE_CHECKING does not."""
    tree = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import a.typed\n"
                     "def f():\n    from a import hidden\n    import a.inner\n")
    names = {n.module if isinstance(n, ast.ImportFrom) else n.names[0].name for n in _imports(tree)}
    assert names == {"typing", "a", "a.inner"}
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [("a", "b", "c")]


@pytest.mark.parametrize("name", sorted(
    m.name for m in pkgutil.walk_packages([str(SRC / ROOT / "policy")], prefix=f"{ROOT}.policy.")))
def test_every_policy_module_imports(name: str) -> None:
    importlib.import_module(name)
