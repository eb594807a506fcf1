"""Cheap checks of a command's arguments, run before anything heavy is imported or opened.

A command refuses what its arguments alone make wrong (a database file that does not exist, an
epsilon that is not a number, an empty question, an output file that exists) in a few milliseconds:
this module imports only the standard library, :mod:`pimento.errors` and :mod:`pimento.numbers`,
never an engine, NumPy, sqlglot, JAX or the search (``tests/unit/cli/test_cli_refusals.py`` checks it
on every refusal). Each check raises the error its one home raises for the same input, so a
refusal reads the same whether it comes from here or from the layer below (which checks again).
"""

from __future__ import annotations

import re
from pathlib import Path

from pimento.errors import DataSourceError, NotACountingQuestion, UserError
from pimento.numbers import parse_number

__all__ = ["SEARCH_VARIANTS", "check_number_text", "check_question", "check_variant", "looks_like_dsn", "refuse_existing_output",
           "require_database", "require_path"]

#: A libpq ``key=value`` connection string (``host=... dbname=...``): the same rule as
#: :func:`pimento.engines.database._is_dsn`, which tests/unit/cli/test_cli_refusals.py pins to this one.
_KEY_VALUE_DSN = re.compile(r"^\s*[A-Za-z_]+\s*=")
#: A location an engine names by a prefix (``spark:/folder``, a plug-in's ``name:...``): not a file path.
#: Two letters at least, so that a Windows drive (``C:``) stays a path.
_ENGINE_PREFIX = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]+:")


#: The names of :data:`pimento.search.config.VARIANTS` (their one home), copied so that the CLI need not
#: import the search to list or check them; tests/unit/cli/test_cli_refusals.py pins the two.
SEARCH_VARIANTS = ("full", "no-warm-start", "no-pruning", "no-sensitivity-prior", "no-sensitivity-reward", "direct-rs-reward",
                   "alphasql", "all-votes", "proposal-votes")


def looks_like_dsn(db: str) -> bool:
    """A server database (``postgresql://...`` or ``key=value ...``) rather than a file path."""
    return "://" in db or _KEY_VALUE_DSN.match(db) is not None


def require_database(db: str, option: str = "--db") -> None:
    """Refuse a database file that does not exist, before anything is opened, read or created.

    The one home of this check in the CLI: every command whose ``--db`` must already exist calls it
    first (``pimento budget --db <typo>`` used to show a fresh full budget). A server DSN, a location
    an engine names by a prefix (``spark:/folder``) and ``:memory:`` pass (their engine says what is
    wrong with them); a folder or a pimento.toml that exists passes (the database it names is checked
    when it is resolved).
    """
    if looks_like_dsn(db) or db == ":memory:" or _ENGINE_PREFIX.match(db):
        return
    if not db.strip() or not Path(db).exists():
        raise DataSourceError(
            f"database file not found: {db}",
            hint=f"check {option}: give an existing DuckDB/SQLite file, its folder, or a postgresql:// DSN (nothing was read or created)",
        )


def require_path(path: str | Path, option: str, what: str = "file or folder", error: type[UserError] = DataSourceError) -> None:
    """Refuse an input ``path`` (given with ``option``) that does not exist: ``error("{what} not found: {path}")``,
    the class and words of the layer that reads it (``DataSourceError`` for ingest, ``PolicyError`` for policies)."""
    if not str(path).strip() or not Path(path).exists():
        raise error(f"{what} not found: {path}", hint=f"check {option} (nothing was read or created)")


def refuse_existing_output(path: str | Path, option: str = "--out") -> None:
    """Refuse an output ``path`` that must not exist yet (``pimento synth --out``): the same refusal as the writer's."""
    if Path(path).exists():
        raise DataSourceError(f"{path} already exists", hint=f"choose another {option} or remove the file")


def check_number_text(value: object, name: str) -> None:
    """Refuse a privacy parameter that is not a number (``--epsilon abc``) by the one grammar of numbers.

    Only the grammar (:func:`pimento.numbers.parse_number`): the range of a spend and the
    custodian's caps are checked by the release layer, still before anything is read or charged.
    ``None`` (an omitted option) passes.
    """
    if value is None:
        return
    parse_number(value if isinstance(value, str) else str(value), name=name)


def check_variant(variant: str) -> None:
    """Refuse an unknown ``--variant`` with the words of :func:`pimento.search.config.config_for_variant`."""
    if variant not in SEARCH_VARIANTS:
        raise UserError(f"unknown search variant {variant!r}", hint=f"use one of {', '.join(SEARCH_VARIANTS)}")


def check_question(question: str | None, *, allow_empty: bool = False) -> None:
    """Refuse an empty question as the question's one home does (``detect_intent``), before any search.

    ``allow_empty``: ``pimento search`` and ``ask`` with ``--seed-sql`` start from the analyst's SQL alone.
    """
    if allow_empty:
        return
    if question is None or not " ".join(question.split()):
        raise NotACountingQuestion(question or "", "empty", "the question is empty")
