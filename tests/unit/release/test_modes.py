"""The four release modes in one path: Session.release_sql(mode=...), pimento sql --mode, errors."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from pimento.errors import UserError
from pimento.errors import ModeError
from pimento.release.modes import registered_modes
from pimento.release.request import Context
from pimento.mechanisms.samplers import fixed_noise_for_tests
from pimento.release.session import Session
from policy_config import compile_example_policy, configure_policy

CTX = "sender=employee:1,recipient=employee:1,purpose=treatment"
JOIN = "SELECT COUNT(*) FROM Patient p JOIN Visit v ON p.pat_id = v.pat_id WHERE v.diagnosis = 'Heart failure'"


@pytest.fixture(scope="module")
def hospital(tmp_path_factory) -> tuple[Path, Path]:
    from pimento.demo.hospital import create_demo

    folder = tmp_path_factory.mktemp("modes")
    path = folder / "h.duckdb"
    create_demo(path, patients=150, seed=4)
    policy = compile_example_policy(path, folder / "compiled.json")
    configure_policy(path, policy)  # the custodian's step: modes other than dp enforce this policy
    with open(Path(path).parent / "pimento.toml", "a", encoding="utf-8") as fh:  # one analyst spends more than a quarter of the cap here (issue 28)
        fh.write('\n[ledger]\nanalyst_share = "1"\n')
    return path, policy



def test_parse_context():
    spec = Context.parse(" sender=employee:1, recipient=researcher:2,purpose=research")  # blanks around a name: ignored
    assert spec.to_dict() == {"sender": "employee:1", "recipient": "researcher:2", "purpose": "research"}
    assert Context.parse({"sender": "a:1", "recipient": "b:2", "purpose": "p"}).purpose == "p"
    for bad in ("sender=employee:1", "who=x,sender=a:1,recipient=b:1,purpose=p", "sender",
                "sender=a:1,recipient=b:2 ,purpose=p"):  # a value is never trimmed (one grammar: issue 23)
        with pytest.raises(ModeError):
            Context.parse(bad)
    assert issubclass(ModeError, UserError)
    assert registered_modes() == ("ci", "dp", "split", "contextual")


@pytest.mark.parametrize("mode,kwargs", [
    ("everything", {}), ("ci", {}), ("contextual", {}),
])
def test_bad_mode_or_missing_inputs_spend_nothing(hospital, mode, kwargs):
    path, _ = hospital
    with fixed_noise_for_tests(random.Random(0)), Session(path) as s:
        before = s.ledger.remaining(s.location, "default")
        with pytest.raises(UserError):
            s.release_sql(JOIN, "1", "1e-6", mode=mode, **kwargs)
        assert s.ledger.remaining(s.location, "default") == before
        assert not s.ledger.charges(s.location)


def test_the_policy_is_the_custodians_not_the_callers(hospital, tmp_path):
    """No policy configured: every mode but dp refuses before anything is spent; no parameter or
    option lets the caller name a policy of their own (it could authorize anything)."""
    import inspect
    import shutil

    from typer.testing import CliRunner

    from pimento.cli.app import app

    path, policy = hospital
    assert "policy" not in inspect.signature(Session.release_sql).parameters
    assert "policy" not in inspect.signature(Session.ask).parameters
    for command in ("sql", "ask"):
        out = CliRunner().invoke(app, [command, "--help"])
        assert "--policy" not in out.output
    copy = tmp_path / "copy"
    shutil.copytree(path.parent, copy)
    toml = copy / "pimento.toml"
    toml.write_text(toml.read_text(encoding="utf-8").split("\n[policy]\n")[0], encoding="utf-8")
    with Session(copy / path.name) as s:
        for mode in ("ci", "split", "contextual"):
            with pytest.raises(ModeError, match="none is configured"):
                s.release_sql(JOIN, "1", "1e-6", mode=mode, context=CTX)
        assert not s.ledger.charges(s.location)


def test_ci_answers_exactly_on_authorized_data_spends_nothing_and_is_audited(hospital):
    from pimento.engines.database import load_database
    from pimento.policy import Enforcer
    from pimento.policy import load_compiled_policy

    path, policy = hospital
    sql = "SELECT diagnosis, COUNT(*) AS n FROM Visit GROUP BY diagnosis ORDER BY diagnosis"
    with Session(path) as s:
        before = s.ledger.remaining(s.location, "default")
        answer = s.release_sql(sql, mode="ci", context=CTX)
        assert s.ledger.remaining(s.location, "default") == before
        audit = s.ledger.audit_rows()[-1]
    db = load_database(path)
    try:
        enforcer = Enforcer(load_compiled_policy(str(policy)), db.engine, db.catalog)
        want = enforcer.authorize(enforcer.context("employee:1", "employee:1", "treatment"), sql)
    finally:
        db.close()
    data = answer.to_dict()
    assert data["mode"] == "ci" and data["rows"] == [list(r) for r in want.rows]
    assert set(data) == {"mode", "sql", "analyst", "context", "policy", "columns", "rows", "guarantee"}
    assert audit["tool"] == "ci_answer" and audit["details"]["sql"] == sql
    assert "rows" not in audit["details"]


def test_contextual_and_split_are_charged_and_carry_no_private_field(hospital):
    path, policy = hospital
    with fixed_noise_for_tests(random.Random(3)), Session(path) as s:
        before = len(s.ledger.charges(s.location))
        dp = s.release_sql(JOIN, "1", "1e-6").to_dict()
        ctx = s.release_sql(JOIN, "1", "1e-6", mode="contextual", context=CTX).to_dict()
        split = s.release_sql(JOIN, "1", "1e-6", mode="split", context=CTX).to_dict()
        assert len(s.ledger.charges(s.location)) == before + 3
        rows = [r for r in s.ledger.audit_rows() if r.get("kind") != "custodian"]
    assert set(ctx) - set(dp) == {"context", "guarantee_kind"}
    assert set(split) - set(dp) == {"context", "guarantee_kind", "authorized_exact", "remainder"}
    assert "contextual DP" in ctx["guarantee_kind"] and ctx["mode"] == "contextual"
    assert split["mode"] == "split" and isinstance(split["authorized_exact"], int)
    private = json.dumps(rows)
    assert '"crs"' in private and '"authorized_part"' in private  # the custodian's audit has them
    for answer in (ctx, split):
        for word in ("crs", "rs_exact", "authorized_part", "scale\"", "\"true"):
            assert word not in json.dumps(answer).lower().replace("noise_scale_upper", "")


def test_split_exact_part_counts_join_results_of_public_tuples(hospital):
    """The authorized part equals a count in Python from the enforcer's A_c (custodian tool)."""
    from pimento.engines.database import load_database
    from pimento.policy import Enforcer
    from pimento.policy import load_compiled_policy

    path, policy = hospital
    db = load_database(path)
    try:
        enforcer = Enforcer(load_compiled_policy(str(policy)), db.engine, db.catalog)
        context = enforcer.context("employee:1", "employee:1", "treatment")
        cells = enforcer.authorized_cells(context, "SELECT v.pat_id, v.diagnosis, p.pat_id FROM Visit v, Patient p")
        visits = db.engine.execute("SELECT visit_id, pat_id, diagnosis FROM Visit").rows
    finally:
        db.close()
    public_p = {k for (rel, k, a) in cells if rel == "Patient" and a == "pat_id"}
    want = sum(
        1 for vid, pid, dx in visits
        if dx == "Heart failure"
        and ("Visit", str(vid), "pat_id") in cells and ("Visit", str(vid), "diagnosis") in cells
        and str(pid) in public_p
    )
    with fixed_noise_for_tests(random.Random(0)), Session(path) as s:
        got = s.release_sql(JOIN, "1", "1e-6", mode="split", context=CTX).to_dict()
    assert got["authorized_exact"] == want
    assert want > 0  # the context authorizes some heart-failure visits of its patients


def test_cli_sql_modes(hospital):
    from typer.testing import CliRunner

    from pimento.cli.app import app

    path, policy = hospital
    runner = CliRunner()
    out = runner.invoke(app, ["sql", "--db", str(path), "--sql", JOIN, "--mode", "contextual", "--context", CTX,
                              "--epsilon", "1", "--delta", "1e-6", "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["mode"] == "contextual"
    out = runner.invoke(app, ["sql", "--db", str(path), "--sql", "SELECT COUNT(*) FROM Visit", "--mode", "ci",
                              "--context", CTX])
    assert out.exit_code == 0, out.output
    assert "contextual integrity" in out.output
    out = runner.invoke(app, ["sql", "--db", str(path), "--sql", JOIN, "--mode", "split", "--context", CTX,
                              "--epsilon", "1", "--delta", "1e-6"])
    assert out.exit_code == 0, out.output
    assert "authorized part (exact)" in out.output
    out = runner.invoke(app, ["sql", "--db", str(path), "--sql", JOIN, "--mode", "bogus", "--epsilon", "1"])
    assert out.exit_code != 0 and "unknown mode" in out.output


def test_split_failure_of_the_authorized_part_is_one_fixed_message(hospital, monkeypatch):
    """Engine text (which may carry private values) never reaches the analyst; the charge stands; the deployment halts."""
    from pimento.errors import DeploymentHaltedError, EngineError
    from pimento.release.modes import split as modes

    path, policy = hospital

    def broken(*_a, **_k):
        raise EngineError("Conversion Error: could not convert 'Jane Doe HIV' to INT")

    with fixed_noise_for_tests(random.Random(0)), Session(path) as s:
        s.release_sql(JOIN, "3", "1e-6", mode="split", context=CTX)  # works
        before = len(s.ledger.charges(s.location))
        monkeypatch.setattr(modes, "authorized_part", broken)
        with pytest.raises(DeploymentHaltedError) as info:
            s.release_sql(JOIN, "2", "1e-6", mode="split", context=CTX)
        assert "Jane" not in str(info.value) and "Conversion" not in str(info.value)
        assert len(s.ledger.charges(s.location)) == before + 1
        assert any("Jane Doe" in json.dumps(r) for r in s.ledger.audit_rows())
        assert s.ledger.halts(s.location)  # halted until the custodian resumes


def test_cli_ask_in_the_new_modes(tmp_path, standin_synthetic):
    """pimento ask --mode contextual|split|ci on the demo hospital with a synthetic copy beside it."""
    from db_support import demo_with_copy
    from typer.testing import CliRunner

    from pimento.cli.app import app
    from pimento.demo.hospital import DEMO_QUESTION

    db = demo_with_copy(tmp_path, standin_synthetic)
    configure_policy(db, compile_example_policy(db, tmp_path / "compiled.json"))
    base = ["ask", DEMO_QUESTION, "--db", str(db), "--epsilon", "1", "--delta", "1e-6", "--rollouts", "2", "--yes",
            "--context", CTX]
    out = CliRunner().invoke(app, [*base, "--mode", "contextual", "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["mode"] == "contextual" and data["guarantee"]["kind"] == "contextual DP for this context"
    assert data["synthetic_crs"] <= data["synthetic_rs"] + 1e-9  # the search objective, on the copy
    assert data["context"]["purpose"] == "treatment"
    out = CliRunner().invoke(app, [*base, "--mode", "contextual"])
    assert out.exit_code == 0 and "contextual DP for this context" in " ".join(out.stdout.split())
    out = CliRunner().invoke(app, [*base, "--mode", "split", "--json"])
    assert out.exit_code == 0, out.output
    assert isinstance(json.loads(out.stdout)["authorized_exact"], int)
    out = CliRunner().invoke(app, [*base, "--mode", "ci", "--json"])
    assert out.exit_code == 0, out.output
    ci = json.loads(out.stdout)
    assert ci["mode"] == "ci" and ci["sql"].upper().startswith("SELECT COUNT")
