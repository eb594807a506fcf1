"""``Session.release_sql`` and ``pimento sql`` end to end on a small DuckDB database.

The flow tests run twice: with a fake residual sensitivity at the seam (the exact RS of these
queries, computed by hand), and with the real ``pimento.sensitivity.residual_sensitivity``
once it exists (skipped with a message until then).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from fractions import Fraction

import pytest
from cli_support import command_app
from db_support import SHOP, duckdb_file
from typer.testing import CliRunner

import pimento.sensitivity
from pimento.errors import BudgetError, PrivacyParameterError, SqlError
from pimento.mechanisms import Budget
from pimento.release.session import Session



@pytest.fixture
def db(tmp_path) -> str:
    path = duckdb_file(tmp_path / "shop.duckdb", (
        "CREATE TABLE customers (id INTEGER PRIMARY KEY, region VARCHAR)",
        "INSERT INTO customers SELECT i, CASE WHEN i % 3 = 0 THEN 'north' ELSE 'south' END FROM range(60) t(i)",
    ))
    (tmp_path / "pimento.toml").write_text('[ledger]\nepsilon_cap = "2"\nanalyst_share = "1"\nanalysts = ["ann", "bob"]\n')
    return str(path)


@dataclass(frozen=True)
class _FakeRS:
    rs: Fraction


@pytest.fixture(params=["fake_rs", "real_rs"])
def rs_impl(request, monkeypatch):
    if request.param == "fake_rs":
        # A single-table count has local sensitivity 1 everywhere, so RS = 1 at any beta.
        monkeypatch.setattr(pimento.sensitivity, "residual_sensitivity", lambda engine, query, catalog, beta, **kw: _FakeRS(Fraction(1)), raising=False)
    return request.param


def test_release_charges_and_caches(db, rs_impl):
    with Session(db, analyst="ann") as s:
        a = s.release_sql("SELECT COUNT(*) FROM customers WHERE region = 'north'", epsilon="0.5", delta="1e-6")
        assert not a.cached
        # One relation: global sensitivity 1, plain Laplace at 1/eps, pure eps-DP (delta not spent).
        assert a.mechanism == "global_laplace" and a.noise_scale_upper == 2
        assert a.noise == "laplace" and a.delta == 0 and a.epsilon_rs_bound == 0
        assert a.budget_left == Budget.of("1.5", "0.00001")
        again = s.release_sql("SELECT COUNT(*) FROM customers WHERE region = 'north'", epsilon="0.5", delta="1e-6")
        assert again.cached and again.release() == a.release()
        assert s.ledger.spent(s.location) == Budget.of("0.5", "0")
        assert s.ledger.verify_audit().rows == 1


def test_exhausted_budget_spends_nothing(db, rs_impl):
    with Session(db, analyst="ann") as s:
        s.release_sql("SELECT COUNT(*) FROM customers", epsilon="1.5")
        with pytest.raises(BudgetError, match="nothing was spent"):
            s.release_sql("SELECT COUNT(*) FROM customers WHERE region = 'south'", epsilon="1")
        assert s.ledger.spent(s.location).epsilon == Fraction(3, 2)


@pytest.mark.parametrize("eps, delta", [("0", None), ("-1", None), ("nan", None), ("1", "0"), ("1", "1"), ("1", "nan")])
def test_bad_parameters_spend_nothing(db, eps, delta):
    with Session(db, analyst="ann") as s:
        with pytest.raises(PrivacyParameterError):
            s.release_sql("SELECT COUNT(*) FROM customers", epsilon=eps, delta=delta)
        assert s.ledger.charges() == []


def test_unknown_analyst_and_unsupported_sql_spend_nothing(db):
    with Session(db) as s:
        with pytest.raises(BudgetError, match="unknown analyst"):
            s.release_sql("SELECT COUNT(*) FROM customers", epsilon="1", analyst="mallory")
        with pytest.raises(SqlError):
            s.release_sql("SELECT region, COUNT(*) FROM customers GROUP BY region", epsilon="1", analyst="ann")
        assert s.ledger.charges() == []


def test_cli_sql_json(db, rs_impl):
    from pimento.cli import cmd_sql

    app = command_app(cmd_sql)
    result = CliRunner().invoke(app, ["sql", "--db", db, "--sql", "SELECT COUNT(*) FROM customers", "--epsilon", "1", "--delta", "1e-6", "--analyst", "bob", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    for key in ("value", "interval", "noise", "noise_scale_upper", "epsilon", "delta", "epsilon_rs_bound", "budget_left"):
        assert key in data
    assert not {"rs", "rs_exact", "scale", "scale_exact", "noise_std"} & set(data)
    assert isinstance(data["value"], int) and data["noise_scale_upper"] == 1.0 and data["budget_left"]["epsilon"] == "1"
    bad = CliRunner().invoke(app, ["sql", "--db", db, "--sql", "SELECT COUNT(*) FROM customers", "--epsilon", "-1", "--analyst", "bob"])
    assert bad.exit_code == 2 and "epsilon" in bad.output and "Traceback" not in bad.output


def test_join_counts_use_the_smooth_sensitivity_mechanism(tmp_path):
    path = duckdb_file(tmp_path / "orders.duckdb", SHOP)
    with Session(path, analyst="ann") as s:
        a = s.release_sql(
            "SELECT COUNT(*) FROM orders o JOIN customers c ON o.cid = c.id", epsilon="1", delta="1e-6"
        )
        assert a.delta == Fraction(1, 10**6) and a.mechanism == "smooth_laplace"
        assert a.epsilon_noise == Fraction(9, 10) and a.epsilon_rs_bound == Fraction(1, 10)
        assert "rs" not in a.to_dict() and "scale" not in a.to_dict()
        # The exact RS and scale are in the custodian's audit row only.
        private = s.ledger.audit_rows()[-1]["private"]
        assert Fraction(private["scale"]) == 2 * Fraction(private["rs"]) / Fraction(9, 10)
        assert Fraction(private["rs"]) >= 4  # one customer joins 4 orders
