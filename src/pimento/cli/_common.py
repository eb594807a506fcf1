"""Helpers shared by every CLI command: error handling, JSON output, opening databases."""

from __future__ import annotations

import functools
import json
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar, cast

import typer
from rich.console import Console
from rich.markup import escape

from pimento.errors import InternalError, PimentoError, UserError

__all__ = ["TRUSTED_CONTEXT", "ProgressLines", "StageProgress", "config_option", "console", "db_option", "err_console", "emit_json", "error_payload", "handle_errors", "json_option",
           "open_custodian_database", "open_database", "print_authorized_rows", "split_names"]

console = Console()
err_console = Console(stderr=True)

F = TypeVar("F", bound=Callable[..., Any])

EXIT_USER_ERROR = 2

#: What the release commands (``sql``, ``ask``, ``authorize``) say of the identities they are given:
#: on the command line they are the caller's word, so these are custodian-side tools; an analyst's
#: identity and context are bound to their key by ``pimento serve`` (docs/serve.md, docs/keys.md).
TRUSTED_CONTEXT = (
    "Custodian-side: the analyst name and the context given here are trusted input, taken as written. "
    "Analysts use `pimento serve`, where their key fixes who they are and their context."
)
EXIT_INTERNAL_ERROR = 70


def db_option(help: str = "Database file (DuckDB/SQLite) or postgresql:// DSN.") -> Any:
    """The required ``--db`` option of a command."""
    return typer.Option(..., "--db", help=help)


def config_option() -> Any:
    """The ``--config`` option: a pimento.toml instead of the one beside ``--db``."""
    return typer.Option(None, "--config", help="pimento.toml to use (default: the one beside --db).")


def json_option() -> Any:
    """The ``--json`` flag (its parameter is named ``json_out``: :func:`handle_errors` reads it)."""
    return typer.Option(False, "--json", help="Print JSON.")


def _json_default(value: Any) -> Any:
    from dataclasses import asdict, is_dataclass
    from fractions import Fraction

    if hasattr(value, "to_dict"):
        return value.to_dict()
    if is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    if isinstance(value, Fraction):
        return float(value)
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    if isinstance(value, Path):
        return str(value)
    return str(value)


def emit_json(payload: Any) -> None:
    """Print one JSON document on stdout (no Rich markup, stable key order)."""
    sys.stdout.write(json.dumps(payload, default=_json_default, indent=2, sort_keys=False) + "\n")
    sys.stdout.flush()


def error_payload(type_: str, message: str, hint: str | None) -> dict[str, Any]:
    """The one shape of an error under ``--json``: ``{"error": {"type", "message", "hint"}}``."""
    return {"error": {"type": type_, "message": message, "hint": hint}}


def _emit_error_json(type_: str, message: str, hint: str | None) -> None:
    """An error under ``--json``: one JSON document on stdout (where the JSON answer would be)."""
    sys.stdout.write(json.dumps(error_payload(type_, message, hint), indent=2) + "\n")
    sys.stdout.flush()


def _wants_json(kwargs: dict[str, Any]) -> bool:
    """Whether the invocation asked for JSON: every command binds ``--json`` to ``json_out``."""
    return kwargs.get("json_out") is True


def handle_errors(func: F) -> F:
    """Turn Pimento errors into one clear line on stderr and a non-zero exit; never a traceback.

    User errors exit with status 2. Anything unexpected is reported as an internal error
    (status 70) with the traceback hidden unless PIMENTO_DEBUG=1. Under ``--json`` the error is
    instead one JSON document on stdout, ``{"error": {"type", "message", "hint"}}`` (same exit
    codes; see docs/errors.md).
    """

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        import os

        as_json = _wants_json(kwargs)
        try:
            return func(*args, **kwargs)
        except UserError as exc:
            if as_json:
                _emit_error_json(type(exc).__name__, exc.message, exc.hint)
            else:
                err_console.print(f"[bold red]error:[/] {escape(exc.one_line())}", highlight=False, soft_wrap=True)
            raise SystemExit(EXIT_USER_ERROR) from None
        except (InternalError, PimentoError) as exc:
            if as_json:
                _emit_error_json("InternalError", f"{exc.message} (this is a bug in Pimento)", exc.hint)
            else:
                err_console.print(f"[bold red]internal error:[/] {escape(exc.one_line())} (this is a bug in Pimento)", highlight=False, soft_wrap=True)
            if os.environ.get("PIMENTO_DEBUG"):
                traceback.print_exc()
            raise SystemExit(EXIT_INTERNAL_ERROR) from None
        except KeyboardInterrupt:
            if as_json:
                _emit_error_json("Interrupted", "interrupted", None)
            else:
                err_console.print("[bold red]interrupted[/]")
            raise SystemExit(130) from None
        except (SystemExit, Exception) as exc:  # noqa: BLE001
            # typer vendors its own click (typer._click), whose usage errors derive from
            # TyperException; click itself is not a dependency, so it is never imported here.
            if isinstance(exc, (SystemExit, typer.Exit, typer.Abort, typer.TyperException)):
                raise
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            if as_json:
                _emit_error_json(
                    "InternalError",
                    f"{type(exc).__name__}: {first} (this is a bug in Pimento)",
                    "set PIMENTO_DEBUG=1 for the traceback",
                )
                if os.environ.get("PIMENTO_DEBUG"):
                    traceback.print_exc()
                raise SystemExit(EXIT_INTERNAL_ERROR) from None
            err_console.print(
                f"[bold red]internal error:[/] {type(exc).__name__}: {escape(first)} (this is a bug in Pimento; "
                "set PIMENTO_DEBUG=1 for the traceback)",
                highlight=False,
                soft_wrap=True,
            )
            if os.environ.get("PIMENTO_DEBUG"):
                traceback.print_exc()
            raise SystemExit(EXIT_INTERNAL_ERROR) from None

    setattr(wrapper, "handles_errors", True)  # noqa: B010 - a marker the CLI tests check
    return cast(F, wrapper)  # functools.wraps keeps func's signature


class ProgressLines:
    """Progress as plain lines on stderr, for output that is not a terminal (a log, a pipe, CI), where
    bars print nothing: one line when a stage starts, one when it ends, and one at most every
    ``every_s`` seconds in between. ``write`` and ``clock`` are for tests."""

    def __init__(self, prefix: str, *, every_s: float = 10.0, write: Callable[[str], Any] | None = None, clock: Callable[[], float] | None = None) -> None:
        import time

        self.prefix = prefix
        self.every_s = every_s
        self._write = write or (lambda line: (sys.stderr.write(line + "\n"), sys.stderr.flush()))
        self._clock = clock or time.monotonic
        self._start = self._clock()
        self._last: dict[str, float] = {}
        self._done: set[str] = set()

    def __call__(self, stage: str, done: int, total: int) -> None:
        now = self._clock()
        total = max(total, 1)
        finished = done >= total
        if stage in self._done:
            return
        first = stage not in self._last
        if not (first or finished or now - self._last[stage] >= self.every_s):
            return
        self._last[stage] = now
        if finished:
            self._done.add(stage)
        self._write(f"{self.prefix}: {stage} {done}/{total}{' done' if finished else ''} ({now - self._start:.0f} s)")


class StageProgress:
    """The one progress display of a long step (``pimento synth``, each step of ``pimento demo run``).

    Used as ``with StageProgress("synth", labels) as report: work(progress=report)``, where the work
    calls ``report(stage, done, total)``. A terminal gets Rich bars on stderr, one per stage (gone when
    the step ends); anything else (a log, a pipe, CI) gets :class:`ProgressLines`, since bars print
    nothing there, and so does ``json_out`` (``--json``: stdout keeps the JSON document alone, the
    lines go to stderr); ``quiet`` shows nothing at all. ``labels`` names the stages for people
    (``{"fit": "fitting models"}``).
    """

    def __init__(self, prefix: str, labels: dict[str, str] | None = None, *, quiet: bool = False, json_out: bool = False) -> None:
        self.prefix = prefix
        self.labels = labels or {}
        self.quiet = quiet
        self.bars = err_console.is_terminal and not (quiet or json_out)
        self._progress: Any = None
        self._tasks: dict[str, Any] = {}
        self._lines = None if self.bars or quiet else ProgressLines(prefix)

    def __enter__(self) -> Callable[[str, int, int], None]:
        if self.bars:
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

            self._progress = Progress(
                TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"), TimeElapsedColumn(),
                console=err_console, transient=True,
            )
            self._progress.start()
        return self.report

    def report(self, stage: str, done: int, total: int) -> None:
        """One progress report of the work: ``done`` of ``total`` in ``stage``."""
        label = self.labels.get(stage, stage)
        if self._lines is not None:
            self._lines(label, done, total)
        elif self._progress is not None:
            if stage not in self._tasks:
                self._tasks[stage] = self._progress.add_task(label, total=max(total, 1))
            self._progress.update(self._tasks[stage], completed=done, total=max(total, 1))

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()


def open_database(db: str, *, read_only: bool = True, private: str | None = None):
    """Open ``db`` under the custodian's settings (pimento.toml beside it): engine, merged catalog, settings.

    ``private`` (the caller's ``--private``, comma-separated) adds private relations, never removes
    one. There is deliberately no ``config`` here: every command that opens a database through
    this helper runs under the custodian's settings; a custodian tool that takes ``--config``
    calls :func:`open_custodian_database`.
    """
    from pimento.engines.database import load_database

    return load_database(db, read_only=read_only, private=split_names(private))


def open_custodian_database(db: str, *, config: str | None, private: str | None = None, read_only: bool = True):
    """Open ``db`` for a custodian tool: ``config`` (``--config``) may replace the pimento.toml beside it."""
    from pimento.engines.database import load_database

    return load_database(db, read_only=read_only, private=split_names(private), config=config)


def split_names(private: str | None) -> list[str]:
    """``--private R1,R2`` as a list of names (empty entries dropped)."""
    return [n.strip() for n in private.split(",") if n.strip()] if private else []


class _Context(Protocol):
    """A context as a CI result names it: a release answer's or the policy enforcer's (identities print as ``KIND:ID``)."""

    @property
    def sender(self) -> object: ...
    @property
    def recipient(self) -> object: ...
    @property
    def purpose(self) -> object: ...


def print_authorized_rows(context: _Context, policy: str, columns: Sequence[Any], rows: Sequence[Sequence[Any]], *, title: str,
                          limit: int = 50) -> None:
    """A CI result (``authorize``, ``sql --mode ci``): its context and policy, then its rows, the
    unauthorized cells NULL, the first ``limit`` of them (the rest are in ``--json``)."""
    from rich.table import Table

    console.print(f"[bold]{context.sender} -> {context.recipient}[/] for {context.purpose} under policy {policy}", highlight=False)
    table = Table(title=f"{len(rows)} rows {title}")
    for c in columns:
        table.add_column(str(c))
    for row in rows[:limit]:
        table.add_row(*["[dim]NULL[/]" if v is None else escape(str(v)) for v in row])
    console.print(table)
    if len(rows) > limit:
        console.print(f"... {len(rows) - limit} more rows (use --json)")
