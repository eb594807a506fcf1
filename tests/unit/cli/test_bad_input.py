"""Bad input anywhere gives one clear line on stderr and exit status 2, never a traceback."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from pimento.cli.app import app
from pimento.demo.hospital import create_demo


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory):
    path = tmp_path_factory.mktemp("demo") / "hospital.duckdb"
    create_demo(path, patients=300, seed=0)
    return path


def _run(args):
    result = CliRunner().invoke(app, args)
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["catalog", "--db", "/nonexistent/x.duckdb"], "not found"),
        (["parse", "--db", "{db}", "--sql", "SELECT COUNT(* FROM Patient"], "line 1, col 16: 'FROM'"),
        (["parse", "--db", "{db}", "--sql", "SELECT COUNT(*) FROM Patients"], "did you mean 'Patient'"),
        (["parse", "--db", "{db}", "--sql", "SELECT COUNT(*) FROM Patient WHERE agee > 1"], "unknown column 'agee'"),
        (["sensitivity", "--db", "{db}", "--sql", "SELECT COUNT(*) FROM Patient", "--beta", "0"], "beta must be positive"),
        (["sql", "--db", "{db}", "--sql", "SELECT COUNT(*) FROM Patient", "--epsilon", "nan"], "epsilon"),
        (["sql", "--db", "{db}", "--sql", "SELECT COUNT(*) FROM Patient", "--epsilon", "1", "--delta", "1"], "delta"),
        (["sql", "--db", "{db}", "--sql", "SELECT MAX(birth_year) FROM Patient", "--epsilon", "1"], "aggregate other than COUNT"),
        (["search", "", "--db", "{db}", "--synthetic", "{db}", "--seed-sql", "SELECT COUNT(*) FROM Patient"], "not a synthetic database"),
        (["search", "", "--db", "{db}", "--seed-sql", "SELECT COUNT(*) FROM Patient"], "no synthetic database given"),
        (["ask", "How many patients?", "--db", "{db}", "--mode", "dp", "--epsilon", "1", "--delta", "1e-6"], "pimento synth"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, fragment, demo_db):
    code, out, err = _run([a.format(db=demo_db) for a in args])
    assert code == 2, (out, err)
    assert fragment in err
    assert "Traceback" not in err + out
    assert len(err.strip().splitlines()) == 1, err


def test_a_typo_in_pimento_toml_names_the_key(tmp_path, demo_db):
    import shutil

    shutil.copy(demo_db, tmp_path / "hospital.duckdb")
    (tmp_path / "pimento.toml").write_text('[privacy]\nprivat = ["Patient"]\n')
    code, _, err = _run(["catalog", "--db", str(tmp_path / "hospital.duckdb")])
    assert code == 2
    assert "unknown key 'privacy.privat'; did you mean 'private'?" in err
