"""Under ``--json`` every command reports an error as one JSON document on stdout,
``{"error": {"type", "message", "hint"}}``, with the exit codes unchanged (issue 12, item 6)."""

from __future__ import annotations

import json

import pytest
import typer
from typer.testing import CliRunner

from pimento.cli._common import EXIT_INTERNAL_ERROR, EXIT_USER_ERROR, handle_errors
from pimento.cli.app import app
from pimento.errors import BudgetError

_VALUES = {"epsilon": "1", "delta": "1e-6"}


def _commands():
    root = typer.main.get_command(app)

    def walk(command, words):
        if hasattr(command, "commands"):
            for name, sub in sorted(command.commands.items()):
                yield from walk(sub, [*words, name])
        else:
            yield words, command

    yield from walk(root, [])


def _invocation(words, command, missing):
    """The command with every required parameter filled in, pointing at a database that does not exist."""
    args = list(words)
    for param in command.params:
        if not param.required:
            continue
        value = missing if param.name in ("db", "schema", "corpus", "policy", "compiled_path", "text_path") else _VALUES.get(param.name, "x")
        args += [param.opts[0], value] if param.param_type_name == "option" else [value]
    return [*args, "--json"]


JSON_COMMANDS = [(" ".join(w), c) for w, c in _commands() if "--json" in [o for p in c.params for o in getattr(p, "opts", [])]]


def test_every_json_command_goes_through_handle_errors():
    assert len(JSON_COMMANDS) >= 20
    for name, command in JSON_COMMANDS:
        assert getattr(command.callback, "handles_errors", False), name


@pytest.mark.parametrize("name", [n for n, c in JSON_COMMANDS if any(p.required for p in c.params)])
def test_a_user_error_under_json_is_one_json_document(name, tmp_path):
    command = dict(JSON_COMMANDS)[name]
    # The database is not there; budget and audit (which show an unused database) meet an unreadable
    # deployment file and a witness that records spending while the ledger is missing.
    missing = tmp_path / "nothing.duckdb"
    (tmp_path / "nothing.duckdb.pimento-deployment.json").write_text("{unreadable")
    (tmp_path / "nothing.duckdb.pimento-witness.json").write_text(json.dumps({"charges": 1, "charge_hash": "0" * 64}))
    args = _invocation(name.split(), command, str(missing))
    result = CliRunner().invoke(app, args)
    assert result.exit_code == EXIT_USER_ERROR, (args, result.output)
    data = json.loads(result.stdout)
    assert set(data) == {"error"} and set(data["error"]) == {"type", "message", "hint"}
    assert data["error"]["type"].endswith("Error") and data["error"]["message"]
    assert "error:" not in result.stdout.replace('"error":', "")  # no text line mixed in


def _probe_app(exc):
    probe = typer.Typer()

    @probe.command()
    @handle_errors
    def boom(json_out: bool = typer.Option(False, "--json")) -> None:
        raise exc

    return probe


def test_shape_and_exit_codes_of_each_kind():
    user = CliRunner().invoke(_probe_app(BudgetError("over the cap", hint="ask the custodian")), ["--json"])
    assert user.exit_code == EXIT_USER_ERROR
    assert json.loads(user.stdout) == {"error": {"type": "BudgetError", "message": "over the cap", "hint": "ask the custodian"}}
    bug = CliRunner().invoke(_probe_app(ZeroDivisionError("x")), ["--json"])
    assert bug.exit_code == EXIT_INTERNAL_ERROR
    assert json.loads(bug.stdout)["error"]["type"] == "InternalError"
    text = CliRunner().invoke(_probe_app(BudgetError("over the cap", hint="ask the custodian")), [])
    assert text.exit_code == EXIT_USER_ERROR and "error: over the cap (ask the custodian)" in text.output
    with pytest.raises(json.JSONDecodeError):
        json.loads(text.stdout or "-")
