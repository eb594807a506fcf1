"""The service's releases on one ledger kept per thread, the deployment file read once per request (issue 28, PERF9).

After :meth:`Deployment.hold_open` a thread's releases renew the ledger its last request used
(:meth:`pimento.mechanisms.ledger.Ledger.renew`) instead of opening one per request; a request that raised leaves
none kept, and :meth:`Deployment.close` closes the thread's. A fresh ``POST /v1/sql`` reads the deployment file once.

Fails on the code before PERF9 (a ledger opened per request; the deployment file read three times) and on the
mutants: the kept ledger kept after an exception, not closed by ``close``, ``keys_read_once`` left out of ``sql``.
"""

from __future__ import annotations

import sqlite3
from fractions import Fraction

import pytest
from db_support import SHOP, count_deployment_reads, duckdb_file

from pimento.errors import BudgetError
from pimento.mechanisms import Ledger, ledger_path, ledger_store


@pytest.fixture
def served(tmp_path):
    """(deployment, the analyst's key) for a small shop database, held open as ``pimento serve`` holds it."""
    from pimento.service.deployment import Deployment

    db = duckdb_file(tmp_path / "shop.duckdb", SHOP)
    (tmp_path / "pimento.toml").write_text('[ledger]\nepsilon_cap = "10"\nanalyst_share = "1"\n')
    deployment = Deployment(db)
    deployment.hold_open()
    entry, _key = deployment.add_key("ann")
    yield deployment, entry
    deployment.close()


@pytest.fixture
def opens(monkeypatch) -> list[str]:
    """The ledgers opened (their paths) from here on."""
    seen: list[str] = []
    real = ledger_store.LedgerStore.__init__

    def counted(self, path, *args, **kwargs):
        seen.append(str(path))
        real(self, path, *args, **kwargs)

    monkeypatch.setattr(ledger_store.LedgerStore, "__init__", counted)
    return seen


def fresh(deployment, entry, i: int, epsilon: str = "0.5") -> dict:
    return deployment.sql(entry, f"SELECT COUNT(*) FROM orders WHERE oid <> {1000 + i}", epsilon, None)


def test_a_threads_releases_renew_one_ledger_and_answer_as_before(served, opens):
    deployment, entry = served
    first = fresh(deployment, entry, 0)
    opens.clear()
    answers = [fresh(deployment, entry, i) for i in range(1, 5)]
    assert opens == []  # before PERF9: one per request
    assert [a["charge_id"] for a in answers] == [first["charge_id"] + i for i in range(1, 5)]
    lefts = [Fraction(a["budget_left"]["epsilon"]) for a in [first, *answers]]
    assert lefts == [Fraction(10) - Fraction(1, 2) * (i + 1) for i in range(5)]
    assert not any(a["cached"] for a in answers)
    with Ledger.for_database(deployment.location, deployment.settings) as ledger:
        assert ledger.verify_audit().ok
        assert [r["outcome"] for r in ledger.audit_rows()] == ["released"] * 5


def test_a_request_that_raised_leaves_no_ledger_kept(served, opens):
    deployment, entry = served
    fresh(deployment, entry, 0)
    with pytest.raises(BudgetError):
        fresh(deployment, entry, 1, epsilon="50")
    opens.clear()
    fresh(deployment, entry, 2)
    assert len(opens) == 1  # opened anew after the refusal, with its checks
    opens.clear()
    fresh(deployment, entry, 3)
    assert opens == []


def test_close_closes_the_threads_kept_ledger(served):
    deployment, entry = served
    fresh(deployment, entry, 0)
    kept = deployment._release_ledgers.kept
    assert kept is not None
    deployment.close()
    with pytest.raises(sqlite3.ProgrammingError):
        kept._conn.execute("SELECT 1")


def test_a_fresh_release_reads_the_deployment_file_once(served, monkeypatch):
    deployment, entry = served
    fresh(deployment, entry, 0)
    reads = count_deployment_reads(monkeypatch)
    answer = fresh(deployment, entry, 1)
    assert answer["cached"] is False
    assert len(reads) == 1, reads  # the request key, the charge and the budget left: three reads before PERF9
    assert ledger_path(deployment.location).exists()


def test_a_cap_tightened_in_pimento_toml_binds_the_next_request(served, tmp_path):
    """The custodian lowers the cap while the service runs: the next release is charged under the new cap, as when
    every request opened its ledger (the kept ledger was opened under the old settings and must not be reused)."""
    import os

    deployment, entry = served
    fresh(deployment, entry, 0)  # 0.5 of 10 spent; a ledger kept under epsilon_cap = 10
    toml = tmp_path / "pimento.toml"
    toml.write_text('[ledger]\nepsilon_cap = "0.75"\nanalyst_share = "1"\n')
    st = toml.stat()
    os.utime(toml, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))  # a later mtime, whatever the clock's grain
    with pytest.raises(BudgetError):
        fresh(deployment, entry, 1)  # 0.5 + 0.5 > 0.75
    answer = fresh(deployment, entry, 2, epsilon="0.25")
    assert Fraction(answer["budget_left"]["epsilon"]) == 0


def test_a_memo_hit_after_the_cap_was_tightened_shows_the_budget_under_the_new_cap(served, tmp_path):
    """A repeat is answered from the memo (free); after the custodian lowers the cap, the budget left it shows is the
    new cap's, as the release path's (the memo's ledger is opened anew under the pimento.toml of now)."""
    import os

    deployment, entry = served
    fresh(deployment, entry, 0)  # 0.5 of 10 spent
    assert Fraction(fresh(deployment, entry, 0)["budget_left"]["epsilon"]) == Fraction(19, 2)  # a memo hit
    toml = tmp_path / "pimento.toml"
    toml.write_text('[ledger]\nepsilon_cap = "5"\nanalyst_share = "1"\n')
    st = toml.stat()
    os.utime(toml, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))
    again = fresh(deployment, entry, 0)  # the file changed: the release path answers from the ledger, free
    assert again["cached"] is True and Fraction(again["budget_left"]["epsilon"]) == Fraction(9, 2)
    hit = fresh(deployment, entry, 0)  # a memo hit again, its ledger opened under the new settings
    assert hit["cached"] is True and Fraction(hit["budget_left"]["epsilon"]) == Fraction(9, 2)


def test_the_budget_shows_a_cap_tightened_while_the_service_runs(served, tmp_path):
    """``GET /v1/budget`` reads the ledger under the pimento.toml of now (before: the caps read at start-up)."""
    import os

    deployment, entry = served
    fresh(deployment, entry, 0)
    assert Fraction(deployment.budget(entry)["cap"]["epsilon"]) == 10
    toml = tmp_path / "pimento.toml"
    toml.write_text('[ledger]\nepsilon_cap = "4"\nanalyst_share = "1"\n')
    st = toml.stat()
    os.utime(toml, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))
    budget = deployment.budget(entry)
    assert Fraction(budget["cap"]["epsilon"]) == 4 and Fraction(budget["left"]["epsilon"]) == Fraction(7, 2)
