"""The release order: charge (committed) -> private data -> noise; a failure after the charge keeps
it and halts the deployment (one fixed message, now and for every later request, until resumed).

A spy random source records, at its first draw, whether the ledger's charge row is already
committed, looking through a SEPARATE SQLite connection (an uncommitted row is invisible there);
on a refused request it must see no draw at all. The same for the private reads of a Session.
"""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path

import pytest
from cli_support import command_app
from db_support import SHOP, duckdb_file
from typer.testing import CliRunner

import pimento.sensitivity
from pimento.config import LedgerSettings
from pimento.errors import BudgetError, DeploymentHaltedError, EngineError, QueryTimeout
from pimento.mechanisms import Budget, Ledger, guarded_release, mechanism_for
from pimento.mechanisms.guarded import Measured
from pimento.mechanisms.samplers import fixed_noise_for_tests
from pimento.release.session import Session

SECRET = "Could not convert string 'Ana Baker' to INT32"


def _committed_charges(path: Path) -> int:
    con = sqlite3.connect(str(path))
    try:
        return int(con.execute("SELECT COUNT(*) FROM charges").fetchone()[0])
    finally:
        con.close()


class SpyRandom:
    """A seeded random source that records the committed charges at its first draw."""

    def __init__(self, ledger_path: Path) -> None:
        self.ledger_path = ledger_path
        self.inner = random.Random(0)
        self.charges_at_first_draw: int | None = None
        self.draws = 0

    def _seen(self) -> None:
        if self.draws == 0:
            self.charges_at_first_draw = _committed_charges(self.ledger_path)
        self.draws += 1

    def getrandbits(self, k: int) -> int:
        self._seen()
        return self.inner.getrandbits(k)

    def randrange(self, n: int) -> int:
        self._seen()
        return self.inner.randrange(n)


@pytest.fixture
def ledger(tmp_path):
    led = Ledger(tmp_path / "l.sqlite", LedgerSettings(epsilon_cap="1", delta_cap="1e-5", analyst_share="1"))
    yield led
    led.close()


@pytest.mark.parametrize("delta", ["1e-6", None], ids=["laplace", "quartic"])
def test_noise_is_drawn_only_after_the_charge_committed(ledger, tmp_path, delta):
    spy = SpyRandom(tmp_path / "l.sqlite")
    with fixed_noise_for_tests(spy):
        guarded_release(ledger, mechanism_for("0.5", delta), analyst="ann", database="db", sql="SELECT COUNT(*) FROM t", true_value=10, rs=2)
    assert spy.draws > 0
    assert spy.charges_at_first_draw == 1


def test_a_refused_request_draws_nothing_and_reads_nothing(ledger, tmp_path):
    guarded_release(ledger, mechanism_for("1"), analyst="ann", database="db", sql="SELECT COUNT(*) FROM a", true_value=1, rs=1)
    spy = SpyRandom(tmp_path / "l.sqlite")
    measured: list[str] = []

    def measure() -> Measured:
        measured.append("read")
        return Measured(1, 1)

    with fixed_noise_for_tests(spy), pytest.raises(BudgetError, match="nothing was spent"):
        guarded_release(ledger, mechanism_for("0.5"), analyst="ann", database="db", sql="SELECT COUNT(*) FROM b", measure=measure)
    assert spy.draws == 0 and measured == []


def test_the_private_data_is_read_only_after_the_charge_committed(ledger, tmp_path):
    seen: list[int] = []

    def measure() -> Measured:
        seen.append(_committed_charges(tmp_path / "l.sqlite"))
        return Measured(10, 3)

    answer = guarded_release(ledger, mechanism_for("0.5", "1e-6"), analyst="ann", database="db", sql="q", measure=measure)
    assert seen == [1] and answer.charge_id is not None


@pytest.mark.parametrize("error", [EngineError(SECRET), QueryTimeout(f"statement timed out: {SECRET}"), OverflowError(SECRET)])
def test_a_failure_after_the_charge_keeps_it_and_says_one_fixed_thing(ledger, error):
    def measure() -> Measured:
        raise error

    with pytest.raises(DeploymentHaltedError) as caught:
        guarded_release(ledger, mechanism_for("0.5", "1e-6"), analyst="ann", database="db", sql="q", measure=measure)
    assert caught.value.message == DeploymentHaltedError.MESSAGE
    assert "Ana" not in caught.value.one_line() and caught.value.__cause__ is None
    assert ledger.spent("db") == Budget.of("0.5", "1e-6")  # the charge stands
    failed = [r for r in ledger.audit_rows() if r.get("outcome") == "failed"]
    assert len(failed) == 1 and SECRET in failed[0]["error"]  # the custodian sees the real reason
    # Halted: every later request, of any analyst, reads the same text and spends nothing.
    for analyst, sql in (("ann", "q"), ("bob", "SELECT COUNT(*) FROM other")):
        with pytest.raises(DeploymentHaltedError) as later:
            guarded_release(ledger, mechanism_for("0.1"), analyst=analyst, database="db", sql=sql, true_value=1, rs=1)
        assert later.value.one_line() == caught.value.one_line()
    assert ledger.spent("db") == Budget.of("0.5", "1e-6") and ledger.pending() == []


# ----------------------------------------------------------------------------- Session


@pytest.fixture
def shop(tmp_path) -> Path:
    path = duckdb_file(tmp_path / "shop.duckdb", SHOP)
    (tmp_path / "pimento.toml").write_text('[ledger]\nepsilon_cap = "2"\nanalyst_share = "1"\n')
    return path


JOIN = "SELECT COUNT(*) FROM orders o JOIN customers c ON o.cid = c.id"


def test_session_counts_and_draws_only_after_the_charge(shop):
    ledger_file = Path(f"{shop}.ledger.sqlite")
    spy = SpyRandom(ledger_file)
    with fixed_noise_for_tests(spy), Session(shop, analyst="ann") as s:
        reads: list[int] = []
        real = s.database.engine.execute

        def execute(sql, *args, **kwargs):
            reads.append(_committed_charges(ledger_file))
            return real(sql, *args, **kwargs)

        s.database.engine.execute = execute  # type: ignore[method-assign]
        s.release_sql(JOIN, epsilon="1", delta="1e-6")
        assert reads and set(reads) == {1}  # every read of the private data came after the charge
        assert spy.charges_at_first_draw == 1


def test_session_failure_after_the_charge_is_one_fixed_message(shop, monkeypatch):
    def boom(*args, **kwargs):
        raise QueryTimeout(f"statement timed out after 60 s: {SECRET}")

    monkeypatch.setattr(pimento.sensitivity, "residual_sensitivity", boom)
    with Session(shop, analyst="ann") as s:
        with pytest.raises(DeploymentHaltedError) as caught:
            s.release_sql(JOIN, epsilon="1", delta="1e-6")
        assert "Ana" not in caught.value.one_line()
        assert s.ledger.spent(s.location).epsilon == 1
    from pimento.cli import cmd_sql

    app = command_app(cmd_sql)
    result = CliRunner().invoke(app, ["sql", "--db", str(shop), "--sql", JOIN.replace("COUNT(*)", "COUNT( * )"), "--epsilon", "0.5", "--delta", "1e-6", "--json"])
    assert result.exit_code == 2
    assert DeploymentHaltedError.MESSAGE in " ".join(result.output.split())  # halted: refused before any charge
    assert "Ana" not in result.output and "timed out" not in result.output and "Traceback" not in result.output
    with Session(shop, analyst="ann") as s:
        assert s.ledger.spent(s.location).epsilon == 1


def test_cached_answers_carry_no_private_field(shop):
    with Session(shop, analyst="ann") as s:
        first = s.release_sql(JOIN, epsilon="1", delta="1e-6")
        again = s.release_sql(JOIN, epsilon="1", delta="1e-6")
        assert again.cached and again.release() == first.release()
        for data in (first.to_dict(), again.to_dict(), json.loads(json.dumps(again.to_dict()))):
            assert not {"rs", "rs_exact", "scale", "scale_exact", "noise_std", "sensitivity", "private", "te"} & set(data)
        # The stored answer itself (what any later caller gets) holds no private field either.
        stored = s.ledger._conn.execute("SELECT answer FROM answers").fetchall()
        assert stored and all("rs" not in json.loads(row[0]) and "scale" not in json.loads(row[0]) for row in stored)
