"""`pimento synth --json` reports what docs/synth.md says it does, the changed column types included.

The report listed caps, ties, free-text columns and the budget but left out ``column_types``,
which the page names (a TEXT column of numbers modelled as a number is a DP decision the custodian
should see without opening the copy's ``_pimento_synth_meta``).
"""

from __future__ import annotations

import json

import duckdb
from typer.testing import CliRunner

from pimento.cli.app import app


def test_synth_json_details_name_the_changed_column_types(tmp_path):
    path = tmp_path / "units.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE P (id INTEGER PRIMARY KEY, size TEXT NOT NULL)")
    con.execute("INSERT INTO P SELECT i, CAST(i % 7 AS VARCHAR) FROM range(150) t(i)")
    con.close()
    result = CliRunner().invoke(
        app, ["synth", "--db", str(path), "--out", str(tmp_path / "copy.duckdb"), "--epsilon", "1", "--delta", "1e-6",
              "--root", "P", "--json"]
    )
    assert result.exit_code == 0, result.output
    details = json.loads(result.stdout)["details"]
    assert isinstance(details["column_types"], dict)
    assert {"caps", "ties", "free_text", "budget"} <= set(details)
