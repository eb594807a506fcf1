from __future__ import annotations

import duckdb
import pytest
from typer.testing import CliRunner

import pimento.synth as synth
from pimento.cli.app import app
from pimento.engines import open_engine
from pimento.errors import DataSourceError, PrivacyParameterError


def test_public_api_is_pinned():
    assert sorted(synth.__all__) == ["META_TABLE", "SynthResult", "source_fingerprint", "synthesize"]


@pytest.fixture()
def tiny(tmp_path):
    path = tmp_path / "tiny.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE P (id INTEGER PRIMARY KEY, g TEXT NOT NULL)")
    con.execute("CREATE TABLE C (id INTEGER PRIMARY KEY, p INTEGER NOT NULL REFERENCES P(id), x INTEGER)")
    con.execute("INSERT INTO P SELECT i, CASE WHEN i % 2 = 0 THEN 'a' ELSE 'b' END FROM range(200) t(i)")
    con.execute("INSERT INTO C SELECT i, i % 200, i % 3 FROM range(500) t(i)")
    con.close()
    return path


@pytest.mark.parametrize("eps,delta,msg", [("0", "1e-6", "epsilon must be > 0"), ("1", "0", "delta must be"), ("1", "0.5", "too large")])
def test_cli_refuses_invalid_budgets(tiny, tmp_path, eps, delta, msg):
    result = CliRunner().invoke(app, ["synth", "--db", str(tiny), "--out", str(tmp_path / "o.duckdb"), "--epsilon", eps, "--delta", delta, "--root", "P"])
    assert result.exit_code == 2
    assert msg in result.output
    assert not (tmp_path / "o.duckdb").exists()


def test_cli_refuses_missing_root(tiny, tmp_path):
    result = CliRunner().invoke(app, ["synth", "--db", str(tiny), "--out", str(tmp_path / "o.duckdb"), "--epsilon", "1", "--delta", "1e-6", "--root", "Q"])
    assert result.exit_code == 2
    assert "root relation 'Q' does not exist" in result.output


def test_api_refuses_existing_output_and_bad_budget(tiny, tmp_path):
    engine = open_engine(str(tiny))
    catalog = engine.introspect()
    out = tmp_path / "o.duckdb"
    out.write_text("")
    with pytest.raises(DataSourceError, match="already exists"):
        synth.synthesize(engine, catalog, out, "1", "1e-6", root="P")
    with pytest.raises(PrivacyParameterError):
        synth.synthesize(engine, catalog, tmp_path / "p.duckdb", "nan", "1e-6", root="P")
    engine.close()


def test_impossible_cap_is_a_clear_error(tiny, tmp_path):
    from pimento.errors import ConfigError

    engine = open_engine(str(tiny))
    with pytest.raises(ConfigError, match="impossible cap"):
        synth.synthesize(engine, engine.introspect(), tmp_path / "o.duckdb", "1", "1e-6", root="P", caps={"C": 0})
    engine.close()


@pytest.fixture()
def codes(tmp_path):
    """150 units with a text code of 25 values (6 units each): too rare for DP selection at eps 1."""
    path = tmp_path / "codes.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE P (id INTEGER PRIMARY KEY, code TEXT NOT NULL)")
    con.execute("INSERT INTO P SELECT i, 'c' || (i % 25) FROM range(150) t(i)")
    con.close()
    return path


def _codes_out(result):
    return {r[0] for r in result.engine.execute("SELECT DISTINCT code FROM P").rows}


def test_declared_public_values_keep_a_rare_code_list(codes, tmp_path):
    engine = open_engine(str(codes))
    catalog = engine.introspect()
    plain = synth.synthesize(engine, catalog, tmp_path / "a.duckdb", "1", "1e-6", root="P", _noise_seed=3)
    assert _codes_out(plain) == {"[synthetic]"}
    assert plain.details["free_text"] == ["P.code"]
    declared = synth.synthesize(engine, catalog, tmp_path / "b.duckdb", "1", "1e-6", root="P", public_values=["P.code"], _noise_seed=3)
    assert _codes_out(declared) <= {f"c{i}" for i in range(25)} and len(_codes_out(declared)) > 10
    assert declared.details["free_text"] == []
    plain.engine.close()
    declared.engine.close()
    engine.close()


def test_public_values_from_pimento_toml_and_bad_entries(codes, tmp_path):
    (codes.parent / "pimento.toml").write_text('[privacy]\nroot = "P"\n[synth]\npublic_values = ["P.code"]\n')
    out = tmp_path / "o.duckdb"
    result = CliRunner().invoke(app, ["synth", "--db", str(codes), "--out", str(out), "--epsilon", "1", "--delta", "1e-6", "--json"])
    assert result.exit_code == 0, result.output
    assert '"public_values": [' in result.stdout and '"P.code"' in result.stdout
    con = duckdb.connect(str(out), read_only=True)
    assert "[synthetic]" not in {r[0] for r in con.execute("SELECT DISTINCT code FROM P").fetchall()}
    con.close()
    bad = CliRunner().invoke(
        app, ["synth", "--db", str(codes), "--out", str(tmp_path / "x.duckdb"), "--epsilon", "1", "--delta", "1e-6", "--public-values", "P.nope"]
    )
    assert bad.exit_code == 2 and "nope" in bad.output
