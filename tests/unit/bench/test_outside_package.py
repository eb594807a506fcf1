"""The benchmarks live outside the installed package: `benchmarks/` at the repository root.

Nothing under src/pimento imports them (the package works without them; the import-linter
contract "The package never imports the benchmarks" says the same for lint-imports), the package
list that `pip install` builds has no benchmark in it, every benchmark module imports, and a
benchmark's child process finds the folder from any working directory.
"""

from __future__ import annotations

import ast
import fnmatch
import importlib
import importlib.util
import os
import pkgutil
import subprocess
import sys
from pimento._compat import tomllib
from pathlib import Path

import pytest

import benchmarks
from benchmarks import REPO, child_env

SRC = REPO / "src"


def _imported_modules(path: Path) -> set[str]:
    """The modules a source file imports (absolute names; relative imports stay inside the package)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
    return found


def test_no_module_of_the_package_imports_the_benchmarks() -> None:
    offenders = {
        str(path.relative_to(REPO)): sorted(m for m in _imported_modules(path) if m.split(".")[0] == "benchmarks")
        for path in sorted((SRC / "pimento").rglob("*.py"))
    }
    assert not {k: v for k, v in offenders.items() if v}


def _packages(where: Path, include: tuple[str, ...]) -> list[str]:
    """The packages setuptools' ``packages.find`` lists under ``where`` (folders with an
    ``__init__.py``, every parent one too, whose dotted name matches an ``include`` pattern)."""
    found = []
    for init in sorted(where.rglob("__init__.py")):
        parts = init.parent.relative_to(where).parts
        if all((where.joinpath(*parts[:i]) / "__init__.py").is_file() for i in range(1, len(parts) + 1)):
            name = ".".join(parts)
            if any(fnmatch.fnmatchcase(name, pattern) for pattern in include):
                found.append(name)
    return found


def test_the_installed_packages_are_pimento_only() -> None:
    find = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"]["find"]
    wheres = [REPO / w for w in find["where"]]
    assert wheres == [SRC]  # only src/ is searched: benchmarks/ beside it is not
    packages = [p for w in wheres for p in _packages(w, tuple(find.get("include", ("*",))))]
    assert "pimento" in packages and "pimento.release" in packages
    assert all(p == "pimento" or p.startswith("pimento.") for p in packages), packages
    assert not [p for p in packages if "bench" in p], packages
    assert not [d for d in SRC.rglob("*bench*") if d.is_dir()]


def test_the_old_home_is_gone() -> None:
    assert importlib.util.find_spec("pimento.bench") is None
    assert Path(benchmarks.__file__).resolve().parent == REPO / "benchmarks"


@pytest.mark.parametrize("name", sorted(m.name for m in pkgutil.iter_modules(benchmarks.__path__)))
def test_every_benchmark_module_imports(name: str) -> None:
    """A name moved or renamed in pimento breaks the benchmark that imports it here, not in a run."""
    importlib.import_module(f"benchmarks.{name}")


def test_a_child_benchmark_process_finds_the_folder_from_elsewhere(tmp_path: Path) -> None:
    code = "import benchmarks, sys; sys.stdout.write(benchmarks.__file__)"
    bare = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    without = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=bare, capture_output=True, text=True)
    assert without.returncode != 0 and "ModuleNotFoundError" in without.stderr
    found = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=child_env(base=bare),
                           capture_output=True, text=True, check=True)
    assert Path(found.stdout).resolve() == REPO / "benchmarks" / "__init__.py"


def test_child_env_puts_given_paths_first_then_the_repository() -> None:
    env = child_env("/old/src", base={"PYTHONPATH": "/else", "X": "1"})
    assert env["PYTHONPATH"].split(os.pathsep) == ["/old/src", str(REPO), "/else"]
    assert env["X"] == "1"
    assert child_env(base={})["PYTHONPATH"] == str(REPO)
