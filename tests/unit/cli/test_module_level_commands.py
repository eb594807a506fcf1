"""Issue 24: every CLI command is a module-level function of its ``cmd_*`` module (importable and testable
alone; ``register(app)`` only wires), and ``pimento --help`` imports neither the release layer nor the
service."""

from __future__ import annotations

import subprocess
import sys

import typer

from pimento.cli.app import COMMAND_MODULES, app


def _commands(group: typer.Typer):
    """(name, callback) of every command of ``group`` and its sub-groups."""
    for command in group.registered_commands:
        assert command.callback is not None
        yield command.name or command.callback.__name__, command.callback
    for sub in group.registered_groups:
        assert sub.typer_instance is not None
        yield from _commands(sub.typer_instance)


def test_every_command_is_its_modules_function_of_the_same_name():
    seen = list(_commands(app))
    assert len(seen) >= 25
    modules = {f"pimento.cli.{name}" for name in COMMAND_MODULES}
    for name, callback in seen:
        assert callback.__module__ in modules, name
        module = sys.modules[callback.__module__]
        assert getattr(module, callback.__name__, None) is callback, f"{name}: {callback.__qualname__} is not a module-level function"
        assert callback.__name__ in module.__all__, name
        assert getattr(callback, "handles_errors", False), name


def test_the_command_line_starts_without_the_release_layer_or_the_service():
    code = (
        "import sys, pimento.cli.app\n"
        "heavy = ('pimento.release', 'pimento.service', 'pimento.mechanisms', 'pimento.engines.database', 'fastapi', 'duckdb')\n"
        "print(sorted(m for m in sys.modules if m.startswith(heavy)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout
