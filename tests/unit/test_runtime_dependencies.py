"""Every third-party package ``src/`` imports is a declared runtime dependency.

Issue 18, finding 8: ``cli/_common.py`` imported ``click``, which is not a dependency (typer
vendors its own); the test extras pulled click in through import-linter, so the suite never
saw that a fresh install printed a traceback for every CLI error. This test reads every import
in ``src/pimento`` (lazy ones inside functions included) and maps it to the distribution that
provides it (``importlib.metadata.packages_distributions``); each must be listed in
``[project] dependencies`` of pyproject.toml or in one of its extras (``[project.optional-dependencies]``
other than ``test`` and ``bench``: issue 28 made the heavy parts extras; tests/unit/test_extras.py
checks that the core runs without them and that a command needing one names it). An import
guarded by ``except ImportError`` is allowed. ``.ci/run`` also installs the runtime dependencies alone and runs
the CLI's error paths (``scripts/cli_smoke.sh``).
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
from pimento._compat import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src" / "pimento"


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


#: Extras that are not part of what the package may import (a checkout's tools).
CHECKOUT_EXTRAS = {"test", "bench"}


def declared_dependencies() -> set[str]:
    """The distributions the package may import: the runtime dependencies and the extras' packages."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    requirements = list(project["dependencies"])
    for extra, listed in project.get("optional-dependencies", {}).items():
        if extra not in CHECKOUT_EXTRAS:
            requirements += [r for r in listed if not r.startswith(project["name"] + "[")]
    names = set()
    for requirement in requirements:
        match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
        assert match, requirement
        names.add(_normalize(match.group(1)))
    return names


def _guarded(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    """True if ``node`` sits in a ``try`` body whose handlers catch ImportError (an optional import)."""
    child, parent = node, parents.get(node)
    while parent is not None:
        if isinstance(parent, ast.Try) and child in parent.body:
            for handler in parent.handlers:
                caught = handler.type
                names = {n.id for n in ast.walk(caught) if isinstance(n, ast.Name)} if caught else {"BaseException"}
                if names & {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}:
                    return True
        child, parent = parent, parents.get(parent)
    return False


def third_party_imports(text: str) -> set[str]:
    """Top-level names of the third-party modules imported (unguarded) by one module's source."""
    tree = ast.parse(text)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        for name in names:
            top = name.split(".")[0]
            if top == "pimento" or top in sys.stdlib_module_names or top == "__future__":
                continue
            if not _guarded(node, parents):
                found.add(top)
    return found


def test_the_scan_sees_lazy_imports_and_skips_guarded_ones() -> None:
    source = (
        "import os\nimport typer\nfrom rich.console import Console\n"
        "def f():\n    import click\n"
        "try:\n    import snsql\nexcept ImportError:\n    snsql = None\n"
    )
    assert third_party_imports(source) == {"typer", "rich", "click"}


def test_every_import_in_src_is_a_declared_runtime_dependency() -> None:
    declared = declared_dependencies()
    providers = importlib.metadata.packages_distributions()
    undeclared: dict[str, set[str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        for module in third_party_imports(path.read_text(encoding="utf-8")):
            distributions = {_normalize(d) for d in providers.get(module, [module])}
            if not distributions & declared:
                undeclared.setdefault(f"{module} ({', '.join(sorted(distributions))})", set()).add(
                    str(path.relative_to(REPO))
                )
    assert not undeclared, f"imported but neither in [project] dependencies nor in an extra: {undeclared}"


def test_click_counts_as_undeclared() -> None:
    # click is installed in the test environment (through import-linter) but is not a runtime
    # dependency: the check above must reject it, or it cannot catch finding 8 again.
    providers = importlib.metadata.packages_distributions()
    assert "click" in providers
    assert not {_normalize(d) for d in providers["click"]} & declared_dependencies()


def test_ci_runs_the_runtime_only_smoke_test_before_the_readme_test_command() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```bash\n(.*?)\n```", readme, flags=re.S)
    test_command = blocks[1].strip()
    assert "pytest" in test_command
    lines = [line.strip() for line in (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()]
    assert test_command in lines, "the .ci/run test line must be identical to the README's second command"
    assert "scripts/cli_smoke.sh" in lines
    assert lines.index("scripts/cli_smoke.sh") < lines.index(test_command)
    assert (REPO / "scripts" / "cli_smoke.sh").stat().st_mode & 0o111, "scripts/cli_smoke.sh must be executable"
