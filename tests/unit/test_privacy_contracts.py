"""The privacy invariant of the search and NL layers, as contracts and a source scan.

``lint-imports`` (run by the README's test command) enforces the contract in pyproject.toml:
``pimento.search`` and ``pimento.nl`` import neither ``pimento.mechanisms`` nor
``pimento.release`` nor ``pimento.engines.database`` (``load_database``), directly or not. These
tests keep the contract from being weakened silently, and check what import-linter cannot: the
concrete engines are reachable through the engine registry, so the scan below makes sure neither
package opens a database (``open_engine``, a driver's ``connect``) -- they work on the Engine of
the synthetic copy that their caller hands them.
"""

from __future__ import annotations

import ast
from pimento._compat import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("search", "nl")
DRIVERS = {"duckdb", "sqlite3", "psycopg", "psycopg2"}
OPENERS = {"open_engine", "load_database", "connect"}


def _contract() -> dict:
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    (found,) = [
        c for c in config["tool"]["importlinter"]["contracts"]
        if c["type"] == "forbidden" and set(c["source_modules"]) >= {"pimento.search", "pimento.nl"}
    ]
    return found


def test_the_contract_forbids_release_charge_and_the_private_opener() -> None:
    contract = _contract()
    assert {"pimento.mechanisms", "pimento.release", "pimento.engines.database"} <= set(contract["forbidden_modules"])
    assert not contract.get("allow_indirect_imports", False)
    assert not contract.get("ignore_imports")


def _openings(text: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.split(".")[0] in DRIVERS]
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module.split(".")[0] in DRIVERS:
                found.append(node.module)
            found += [a.name for a in node.names if a.name in OPENERS]
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if name in OPENERS:
                found.append(f"{name}()")
    return found


def test_the_scan_sees_an_opening() -> None:
    assert _openings("import duckdb\ncon = duckdb.connect('x')\n") == ["duckdb", "connect()"]
    assert _openings("from pimento.engines import open_engine\nopen_engine('x')\n") == ["open_engine", "open_engine()"]


def test_search_and_nl_never_open_a_database() -> None:
    found = {}
    for package in PACKAGES:
        for path in sorted((REPO / "src" / "pimento" / package).rglob("*.py")):
            openings = _openings(path.read_text(encoding="utf-8"))
            if openings:
                found[str(path.relative_to(REPO))] = openings
    assert not found, found
