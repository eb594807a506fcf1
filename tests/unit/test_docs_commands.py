"""Every CLI command has a docs page that mentions each of its options, and the README lists it."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer

from pimento.cli.app import app

REPO = Path(__file__).resolve().parents[2]


def _commands() -> list[tuple[str, typer.core.TyperCommand]]:
    root = typer.main.get_command(app)
    out = []
    for name, command in root.commands.items():  # type: ignore[attr-defined]
        # typer vendors its own click (typer._click); click itself is not a dependency.
        if hasattr(command, "commands"):
            for sub_name, sub in command.commands.items():
                out.append((f"{name} {sub_name}", sub))
        else:
            out.append((name, command))
    return out


COMMANDS = _commands()


@pytest.mark.parametrize(("name", "command"), COMMANDS, ids=[n for n, _ in COMMANDS])
def test_command_has_a_docs_page_naming_every_option(name, command):
    page = REPO / "docs" / f"{name.split()[0]}.md"
    assert page.is_file(), f"docs/{page.name} is missing for `pimento {name}`"
    text = page.read_text(encoding="utf-8")
    missing = [
        opt
        for param in command.params
        if param.param_type_name == "option"
        for opt in param.opts
        if opt.startswith("--") and opt not in text
    ]
    assert not missing, f"docs/{page.name} does not mention {missing} of `pimento {name}`"


@pytest.mark.parametrize(("name", "command"), COMMANDS, ids=[n for n, _ in COMMANDS])
def test_readme_lists_every_command(name, command):
    assert f"`pimento {name.split()[0]}" in (REPO / "README.md").read_text(encoding="utf-8")
