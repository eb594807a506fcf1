"""Two roles, one boundary: the analyst's options can only make the custodian's settings stricter.

Issue 18, finding 3: ``--private DxCategory`` replaced the custodian's private relations, and a
Patient-Visit count was released exactly (interval [10, 10]); a ledger cap of 1,000,000 chosen by
the caller allowed a release at epsilon 500.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from pimento.cli.app import app

COUNT = "SELECT COUNT(*) FROM Patient p JOIN Visit v ON p.pat_id = v.pat_id"


@pytest.fixture
def custodian_db(tmp_path: Path) -> Path:
    """Patient-Visit with 10 visits; the custodian declares Patient and Visit private, DxCategory public, cap 1."""
    folder = tmp_path / "custodian"
    folder.mkdir()
    path = folder / "clinic.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE Patient (pat_id INTEGER PRIMARY KEY, zip VARCHAR)")
    con.execute("CREATE TABLE Visit (visit_id INTEGER PRIMARY KEY, pat_id INTEGER REFERENCES Patient (pat_id), diagnosis VARCHAR)")
    con.execute("CREATE TABLE DxCategory (diagnosis VARCHAR PRIMARY KEY, hivstatus VARCHAR)")
    con.execute("INSERT INTO Patient SELECT i, 'z' || i FROM range(1, 5) t(i)")
    con.execute("INSERT INTO Visit SELECT i, 1 + i % 4, 'flu' FROM range(10) t(i)")
    con.execute("INSERT INTO DxCategory VALUES ('flu', 'neg')")
    con.close()
    (folder / "pimento.toml").write_text(
        '[privacy]\nprivate = ["Patient", "Visit"]\npublic = ["DxCategory"]\n[ledger]\nepsilon_cap = "1"\nanalyst_share = "1"\n',
        encoding="utf-8",
    )
    return path


def _sql(*args: str) -> tuple[int, dict | None, str]:
    result = CliRunner().invoke(app, ["sql", *args, "--json"])
    payload = json.loads(result.stdout) if result.exit_code == 0 else None
    if result.exit_code == 2:  # under --json an error is {"error": {...}} on stdout (docs/errors.md)
        error = json.loads(result.stdout)["error"]
        return result.exit_code, None, f"{error['message']} ({error['hint']})" + result.stderr
    return result.exit_code, payload, result.stderr


def test_private_option_adds_and_never_makes_the_custodians_relations_public(custodian_db: Path) -> None:
    code, payload, err = _sql("--db", str(custodian_db), "--sql", COUNT, "--epsilon", "0.5", "--private", "DxCategory")
    assert code == 0, err
    # Before: Patient and Visit were public, so the count had sensitivity 0 and came out exact: [10, 10].
    # (Not `lo < hi`: the interval is clamped at 0, and a draw far below 0 made it [0, 0] in one CI run.)
    assert float(payload["noise_scale_upper"]) > 0


def test_private_option_with_an_unknown_relation_is_a_clear_error(custodian_db: Path) -> None:
    code, _, err = _sql("--db", str(custodian_db), "--sql", COUNT, "--epsilon", "0.5", "--private", "Vizit")
    assert code == 2
    assert "--private" in err and "did you mean 'Visit'" in err and "Traceback" not in err


def test_an_analyst_cannot_raise_the_caps(custodian_db: Path, tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "pimento.toml").write_text(
        f'[database]\npath = "{custodian_db}"\n[ledger]\nepsilon_cap = "1000000"\nanalyst_share = "1"\npath = "{mine / "ledger.sqlite"}"\n'
        '[privacy]\npublic = ["Patient", "Visit", "DxCategory"]\n',
        encoding="utf-8",
    )
    link = mine / custodian_db.name
    link.symlink_to(custodian_db)
    # Under the custodian's cap of 1, epsilon 500 is refused ...
    code, _, err = _sql("--db", str(custodian_db), "--sql", COUNT, "--epsilon", "500")
    assert code == 2 and "Traceback" not in err
    # ... and so it is on every route an analyst has to other settings: a pimento.toml of their own
    # naming the database (folder or file), a link to the database beside their own pimento.toml,
    # and --config (gone from the analyst's commands).
    for db in (mine, mine / "pimento.toml", link):
        code, payload, err = _sql("--db", str(db), "--sql", COUNT, "--epsilon", "500")
        assert code == 2, (db, payload)
        assert "Traceback" not in err
    result = CliRunner().invoke(
        app, ["sql", "--db", str(custodian_db), "--config", str(mine / "pimento.toml"), "--sql", COUNT, "--epsilon", "500"]
    )
    assert result.exit_code == 2
    assert not (mine / "ledger.sqlite").exists()


def test_a_link_reaches_the_custodians_ledger_not_a_fresh_one(custodian_db: Path, tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    link = mine / custodian_db.name
    link.symlink_to(custodian_db)
    code, _, err = _sql("--db", str(custodian_db), "--sql", COUNT, "--epsilon", "0.75")
    assert code == 0, err
    # 0.25 is left of the custodian's cap of 1: 0.5 through the link must be refused.
    code, payload, err = _sql("--db", str(link), "--sql", COUNT, "--epsilon", "0.5")
    assert code == 2, payload
    assert not list(mine.glob("*.ledger.sqlite"))


def test_a_failing_declared_dependency_names_the_declaration_and_nothing_from_the_data(custodian_db: Path) -> None:
    # Before: "... fails: 1 left-hand value(s) map to more than one right-hand value, e.g. 3"
    # printed private counts and patient ids to whoever opened the database.
    con = duckdb.connect(str(custodian_db))
    con.execute("UPDATE Visit SET diagnosis = 'hiv' WHERE visit_id = 3")
    con.close()
    toml = custodian_db.parent / "pimento.toml"
    toml.write_text(
        toml.read_text(encoding="utf-8")
        + '[[constraints.functional_dependencies]]\nlhs = "Visit.pat_id"\nrhs = "Visit.diagnosis"\n',
        encoding="utf-8",
    )
    code, _, err = _sql("--db", str(custodian_db), "--sql", COUNT, "--epsilon", "0.5")
    assert code == 2
    assert "declared functional dependency Visit.(pat_id) -> Visit.(diagnosis) does not hold" in err
    after = " ".join(err.split()).split("pimento.toml:", 1)[1]
    assert "hiv" not in after and "flu" not in after
    assert not any(ch.isdigit() for ch in after), after


#: Analyst-facing modules: they run under the custodian's settings and never choose another file.
ANALYST_FACING = (
    "src/pimento/release",
    "src/pimento/service",
    "src/pimento/cli/cmd_sql.py",
    "src/pimento/cli/cmd_search.py",
    "src/pimento/cli/cmd_translate.py",
    "src/pimento/cli/cmd_parse.py",
)


def _settings_choices(path: Path) -> list[str]:
    """Calls in ``path`` that would choose the settings: ``config=`` to anything, custodian openers."""
    import ast

    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name in ("load_database", "Session", "open_database") and any(k.arg == "config" for k in node.keywords):
            found.append(f"{name}(config=...) at line {node.lineno}")
        if name in ("open_custodian_database", "load_settings", "settings_from_dict"):
            found.append(f"{name}() at line {node.lineno}")
    return found


def test_analyst_facing_code_never_chooses_the_settings() -> None:
    repo = Path(__file__).resolve().parents[3]
    files = []
    for entry in ANALYST_FACING:
        target = repo / entry
        files += sorted(target.rglob("*.py")) if target.is_dir() else [target] if target.exists() else []
    assert any(f.name == "session.py" for f in files)
    found = {str(f.relative_to(repo)): calls for f in files if (calls := _settings_choices(f))}
    assert not found, found


def test_session_takes_no_config() -> None:
    import inspect

    from pimento.release.session import Session

    assert "config" not in inspect.signature(Session).parameters
