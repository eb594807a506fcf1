"""`pimento demo run` says what it is doing and ends with a summary; its SQL never wraps mid-word (issue 28, item 2)."""

from __future__ import annotations

import io
import shlex
from pathlib import Path

import pytest
from rich.console import Console

from pimento.cli import cmd_demo

SQL = ("SELECT COUNT(DISTINCT MedicationOrders.pat_id) FROM Employee JOIN Visit ON Employee.employee_id = "
       "Visit.attending_id JOIN MedicationOrders ON MedicationOrders.visit_id = Visit.visit_id WHERE "
       "Employee.specialty = 'Cardiology' AND MedicationOrders.medication = 'warfarin'")


@pytest.fixture
def screen(monkeypatch):
    """The demo's stdout and stderr consoles, 80 columns wide, captured."""
    out, err = io.StringIO(), io.StringIO()
    monkeypatch.setattr(cmd_demo, "console", Console(file=out, width=80, color_system=None))
    monkeypatch.setattr(cmd_demo, "err_console", Console(file=err, width=80, color_system=None))
    return out, err


def test_sql_wraps_between_words_under_itself(screen):
    out, _ = screen
    cmd_demo.print_labelled("[1187, RS 177.4]", SQL, indent=4)
    lines = out.getvalue().splitlines()
    assert len(lines) > 1 and all(len(line) <= 80 for line in lines)
    hang = len("    [1187, RS 177.4] ")
    assert all(line.startswith(" " * hang) and line[hang] != " " for line in lines[1:])  # continues under itself
    words = " ".join(line.strip() for line in lines).removeprefix("[1187, RS 177.4] ")
    assert words == SQL  # every word whole: joining the lines at spaces gives the SQL back


def test_a_shell_command_wraps_between_its_words_and_pastes_back(screen):
    out, _ = screen
    command = ("pimento sql --db pimento-demo/hospital.duckdb --sql 'SELECT COUNT(*) FROM Patient WHERE x = 1' "
               "--epsilon 0.5 --analyst demo")
    cmd_demo.print_labelled("", command, indent=4, shell=True)
    lines = out.getvalue().splitlines()
    assert len(lines) > 1 and all(len(line) <= 80 for line in lines)
    assert all(line.endswith(" \\") for line in lines[:-1])
    assert shlex.split("\n".join(lines).replace("\\\n", " ")) == shlex.split(command)


def test_each_step_is_announced_on_stderr_and_timed(screen, tmp_path: Path):
    out, err = screen
    steps = [cmd_demo.DemoStep("one", lambda ctx: {"n": 1}, lambda data: cmd_demo.console.print("shown one"), "the first step"),
             cmd_demo.DemoStep("two", lambda ctx: {"n": 2}, lambda data: None)]
    ctx = cmd_demo.DemoContext(tmp_path / "h.duckdb")
    cmd_demo.run_steps(ctx, steps)
    assert err.getvalue().splitlines() == ["demo [1/2] the first step ...", "demo [2/2] two ..."]
    assert out.getvalue() == "shown one\n"  # stdout keeps the report
    assert set(ctx.seconds) == {"one", "two"}
    quiet = cmd_demo.DemoContext(tmp_path / "h.duckdb", quiet=True)  # --json: nothing on stderr
    err.truncate(0)
    err.seek(0)
    cmd_demo.run_steps(quiet, steps, show=False)
    assert err.getvalue() == ""


def test_the_summary_says_what_was_built_answered_spent_and_what_to_try(screen):
    out, _ = screen
    assert [s.name for s in cmd_demo.RUN_STEPS][-1] == "summary"
    cmd_demo.show_summary({
        "database": "pimento-demo/hospital.duckdb", "patients": 10_000, "config_path": "pimento-demo/pimento.toml",
        "synthetic": "pimento-demo/hospital.synthetic.duckdb", "built": ["database", "synth"], "answers": 2,
        "answered": ["release", "ask"], "analyst": "demo",
        "analyst_budget": {"analyst": "demo", "cap": {"epsilon": "10", "delta": "0.00001"}, "spent": {"epsilon": "2", "delta": "0.000002"},
                           "left": {"epsilon": "6.4", "delta": "0.000007"}},
        "database_budget": {"cap": {"epsilon": "10", "delta": "0.00001"}, "spent": {"epsilon": "3.6", "delta": "0.000003"},
                            "left": {"epsilon": "6.4", "delta": "0.000007"}},
        "seconds": {"database": 3.7, "synth": 367.3, "ask": 9.0},
        "next": ["pimento budget --db pimento-demo/hospital.duckdb"],
    })
    text = out.getvalue()
    flat = " ".join(text.split())
    assert all(len(line) <= 80 for line in text.splitlines())
    assert "Summary" in text and "pimento-demo/hospital.duckdb (built now, 10,000 patients)" in flat
    assert "pimento-demo/hospital.synthetic.duckdb (built now" in flat
    assert "2 private answers for analyst 'demo' (one from SQL, one from the question" in flat
    assert "spent epsilon 2, delta 0.000002; left epsilon 6.4, delta 0.000007" in flat
    assert "spent epsilon 3.6, delta 0.000003" in flat and "380 s in all (synth 367 s)" in flat
    assert "    pimento budget --db pimento-demo/hospital.duckdb" in text.splitlines()
