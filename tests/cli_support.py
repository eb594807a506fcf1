"""A Typer app holding only the commands under test (independent of the other commands)."""

from __future__ import annotations

from types import ModuleType

import typer

__all__ = ["command_app"]


def command_app(*modules: ModuleType) -> typer.Typer:
    """An app with a root callback (so each command stays a sub-command) and the commands that each
    of ``modules`` registers, in that order."""
    app = typer.Typer()

    @app.callback()
    def _root() -> None:
        """Test root (keeps each command a sub-command)."""

    for module in modules:
        module.register(app)
    return app
