"""Outside a terminal, long commands print progress LINES (bars print nothing there; a 281 s synth
printed nothing at all): issue 12, item 6."""

from __future__ import annotations

import json

import duckdb
from typer.testing import CliRunner

from pimento.cli._common import ProgressLines
from pimento.cli.app import app


def test_progress_lines_are_throttled_and_close_each_stage():
    lines: list[str] = []
    now = [0.0]
    p = ProgressLines("synth", every_s=10, write=lines.append, clock=lambda: now[0])
    for done in range(0, 101):
        now[0] = done * 0.5  # 50 s for the stage
        p("sampling", done, 100)
    p("sampling", 100, 100)  # a repeated end prints nothing
    assert lines[0] == "synth: sampling 0/100 (0 s)"
    assert lines[-1] == "synth: sampling 100/100 done (50 s)"
    assert 5 <= len(lines) <= 7  # the start, one every 10 s, the end


def test_synth_outside_a_terminal_prints_progress_lines_on_stderr(tmp_path):
    db = tmp_path / "data.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE P (id INTEGER PRIMARY KEY, code TEXT NOT NULL)")
    con.execute("INSERT INTO P SELECT i, 'c' || (i % 5) FROM range(150) t(i)")
    con.close()
    (tmp_path / "pimento.toml").write_text('[database]\npath = "data.duckdb"\n[privacy]\nroot = "P"\n[synth]\npublic_values = ["P.code"]\n')
    result = CliRunner().invoke(
        app, ["synth", "--db", str(db), "--out", str(tmp_path / "syn.duckdb"), "--epsilon", "1", "--delta", "1e-6", "--json"]
    )
    assert result.exit_code == 0, result.output
    json.loads(result.stdout)  # stdout holds the JSON document only
    progress = [line for line in result.stderr.splitlines() if line.startswith("synth: ")]
    assert any(line.endswith(")") and " done " in line for line in progress), result.stderr
    assert any(line.startswith("synth: sampling") for line in progress), result.stderr
