"""`pimento audit show` is readable at 80 columns: no 70-digit numbers, the useful columns kept
(issue 12, item 6)."""

from __future__ import annotations

import re

from rich.console import Console
from typer.testing import CliRunner

from pimento.cli.app import app
from pimento.cli.cmd_audit import audit_table
from pimento.config import LedgerSettings
from pimento.mechanisms import Ledger, guarded_release, ledger_path, mechanism_for

SCALE = "12345678901234567890123456789012345678901234567890123456789012345678901/1000000000000000"


def _render(rows, width=80) -> str:
    console = Console(width=width, record=True, color_system=None)
    console.print(audit_table(rows))
    return console.export_text()


def _rows(tmp_path):
    db = str(tmp_path / "shop.duckdb")
    (tmp_path / "shop.duckdb").touch()  # the database exists: a ledger of a missing one is not shown
    with Ledger(ledger_path(db), LedgerSettings(epsilon_cap="3")) as ledger:
        guarded_release(
            ledger, mechanism_for("1/3"), analyst="ann", database=db, question="How many [2023] orders?",
            sql="SELECT COUNT(*) FROM orders o JOIN customers c ON c.id = o.customer_id WHERE o.year = 2023", true_value=7, rs=1,
        )
        return db, ledger.audit_rows()


def test_a_release_row_fits_80_columns_with_its_useful_columns(tmp_path):
    _db, rows = _rows(tmp_path)
    row = dict(rows[-1], scale=SCALE)  # what an exact scale of a long Fraction looks like in the log
    text = _render([row])
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert not re.search(r"\d{13,}", text)  # no 70-digit number
    for heading in ("#", "time", "who", "eps", "delta", "noise", "scale", "value", "interval", "question / SQL"):
        assert heading in text
    assert "ann" in text and "1.235e+55" in text and "[2023]" in text  # the question's brackets are text, not markup
    assert "SELECT COUNT(*)" in " ".join(text.split())


def test_audit_show_cli_at_80_columns(tmp_path, monkeypatch):
    from pimento.cli import _common

    db, _rows_ = _rows(tmp_path)
    # The CLI's Rich console is made at import time: a width another test fixed on it wins over COLUMNS (this test
    # failed twice in CI at 100 columns), so the 80 columns are set on the console itself, as a terminal would.
    for console in (_common.console, _common.err_console):
        monkeypatch.setattr(console, "width", 80)
    result = CliRunner().invoke(app, ["audit", "show", "--db", db], terminal_width=80, env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert max(len(line) for line in result.stdout.splitlines()) <= 80
    assert not re.search(r"\d{13,}", result.stdout)
    row = _rows_[-1]
    assert "ann" in result.stdout and row["noise"] in result.stdout and row["value"] in result.stdout
    assert f"{row['interval'][0]}..{row['interval'][1]}" in result.stdout
