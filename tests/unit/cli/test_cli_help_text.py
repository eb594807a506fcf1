"""Help text shows brackets as written: Rich markup used to eat "[synth] path" (issue 12, item 6)."""

from __future__ import annotations

import re

from typer.testing import CliRunner

from pimento.cli.app import app


def _help(*words: str) -> str:
    result = CliRunner().invoke(app, [*words, "--help"], terminal_width=100)
    assert result.exit_code == 0, result.output
    return " ".join(result.output.split())


def test_ask_help_shows_the_bracketed_section_name():
    assert "default: [synth] path" in _help("ask")


def test_synth_help_shows_the_bracketed_section_names():
    text = _help("synth")
    assert "[synth] link_context" in text and "[synth] public_values" in text


def test_no_help_loses_a_bracketed_settings_section():
    """Every "[section]" written in a help string of the CLI's sources reaches the printed help."""
    import typer

    root = typer.main.get_command(app)

    def walk(command, words):
        if hasattr(command, "commands"):
            for name, sub in command.commands.items():
                yield from walk(sub, [*words, name])
        else:
            yield words, command

    for words, command in walk(root, []):
        written = " ".join(filter(None, [command.help or ""] + [getattr(p, "help", None) or "" for p in command.params]))
        for section in set(re.findall(r"\[(synth|ledger|database|search|llm|service|policy)\]", written)):
            assert f"[{section}]" in _help(*words), (words, section)
