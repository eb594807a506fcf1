"""Issue 23, finding 6: on the command line the analyst name and the context are the caller's word.
The release commands say so in their help: they are custodian-side tools, and analysts use
`pimento serve`, where the key binds both."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from pimento.cli.app import app


@pytest.mark.parametrize("command", ["sql", "authorize", "ask"])
def test_the_help_says_the_context_is_trusted_input(command):
    out = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "400", "NO_COLOR": "1"})
    assert out.exit_code == 0, out.output
    text = re.sub(r"[\s│]+", " ", out.output)
    assert "Custodian-side tool" in text and "pimento serve" in text, text


def test_keys_add_offers_the_context_binding():
    out = CliRunner().invoke(app, ["keys", "add", "--help"], env={"COLUMNS": "400", "NO_COLOR": "1"})
    text = re.sub(r"[\s│]+", " ", out.output)
    assert out.exit_code == 0 and "--sender" in text and "--purpose" in text and "can name no other" in text, text
