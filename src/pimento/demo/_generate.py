"""What the seeded CI-benchmark generators (:mod:`.retail`, :mod:`.school`) share.

Each generator draws its own rows; this module checks the size, clears the target and writes
the drawn rows to a DuckDB file, the same way for both.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from pimento.errors import UserError

__all__ = ["GeneratedDatabase", "check_size", "fresh_target", "text_of_policy", "toml_names", "write_tables"]


@dataclass(frozen=True)
class GeneratedDatabase:
    """What a generator wrote: the database, the pimento.toml beside it, the rows of each table."""

    path: Path
    config_path: Path
    rows: dict[str, int]


def text_of_policy(policy_path: str) -> str:
    """The natural-language text beside a structured example policy (same name, ``.txt``)."""
    return str(Path(policy_path).with_suffix(".txt"))


def check_size(size: object, minimum: int, owner: str, unit: str) -> int:
    """``size`` if it is an integer of at least ``minimum``; UserError ("the school needs at least 10 students")."""
    if isinstance(size, bool) or not isinstance(size, int) or size < minimum:
        raise UserError(f"{owner} needs at least {minimum} {unit}, not {size!r}")
    return size


def fresh_target(path: str | os.PathLike[str], *, overwrite: bool) -> Path:
    """``path`` as a Path whose folder exists and which does not: an existing file is a UserError
    unless ``overwrite``, then it is removed."""
    target = Path(path)
    if target.exists():
        if not overwrite:
            raise UserError(f"{target} exists", hint="pass overwrite=True or choose another path")
        target.unlink()
    target.parent.mkdir(parents=True, exist_ok=True)
    return target


def write_tables(target: Path, ddl: Iterable[str], tables: Sequence[str],
                 data: Mapping[str, list[tuple[Any, ...]]]) -> None:
    """Create the tables of ``ddl`` in a new DuckDB file ``target`` and insert ``data[t]`` for each
    ``t`` of ``tables``, in that order (parents before the children that reference them)."""
    con = duckdb.connect(str(target))
    try:
        for statement in ddl:
            con.execute(statement)
        for table in tables:
            rows = data[table]
            if rows:
                con.executemany(f"INSERT INTO {table} VALUES ({', '.join('?' for _ in rows[0])})", rows)
    finally:
        con.close()


def toml_names(tables: Iterable[str], *, leave_out: Iterable[str] = ()) -> str:
    """The names of ``tables`` but ``leave_out`` as the items of a TOML list: ``"A", "B"``."""
    skip = set(leave_out)
    return ", ".join(f'"{t}"' for t in tables if t not in skip)
