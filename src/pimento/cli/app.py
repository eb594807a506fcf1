"""The ``pimento`` command: the root Typer app, wired from the command modules.

Each command is a module-level function of its ``pimento.cli.cmd_*`` module (importable and testable
alone: ``from pimento.cli.cmd_sql import sql_cmd``); each module's ``register(app)`` only adds its
functions to ``app`` (``app.command("sql")(sql_cmd)``) and creates its command groups. So that
``pimento --help`` starts fast, the command modules import only Typer, Rich and
:mod:`pimento.cli._common` at their top; everything heavy (the release layer, engines, the search,
the service) is imported inside the command bodies that need it.
"""

from __future__ import annotations

import importlib

import typer

from pimento import __version__

__all__ = ["app", "main"]

app = typer.Typer(
    name="pimento",
    help="Private answers to natural-language questions over relational data (DP and contextual integrity).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # No Rich markup in help text: "[synth] path" and "[ledger] path" are text, not markup tags.
    rich_markup_mode=None,
)

#: Modules under pimento.cli that define commands; each exposes ``register(app)`` (wiring only).
COMMAND_MODULES: tuple[str, ...] = (
    "cmd_demo",
    "cmd_catalog",
    "cmd_parse",
    "cmd_budget",
    "cmd_audit",
    "cmd_sql",
    "cmd_sensitivity",
    "cmd_translate",
    "cmd_search",
    "cmd_policy",
    "cmd_authorize",
    "cmd_synth",
    "cmd_ingest",
    "cmd_serve",
    "cmd_keys",
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"pimento {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version and exit."),
) -> None:
    """Pimento command line."""


for _module in COMMAND_MODULES:
    importlib.import_module(f"pimento.cli.{_module}").register(app)


def main() -> None:
    app()
