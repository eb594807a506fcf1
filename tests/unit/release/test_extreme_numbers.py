"""A flood of extreme numbers leaves the ledger usable for every analyst (issue 23, findings 4 and 7).

Before: ``epsilon="1e-100"`` (or "1/2" and 99 zeros) was charged and released; from then on the
remainder had more than 200 digits and every later request of every analyst failed (422) while
still being charged, and ``pimento budget`` failed. ``"1e9999999"`` burnt seconds of CPU and ended
in a 500; ``1e-5`` on a join failed after its charge. Now each is refused before anything is
charged, and every ordinary request after the flood answers.
"""

from __future__ import annotations

import json
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import pytest
from alloc_support import CONVERSION_BYTES, peak_bytes
from db_support import SHOP, duckdb_file

from pimento.errors import UserError
from pimento.mechanisms import Budget
from pimento.release.session import Session

SINGLE = "SELECT COUNT(*) FROM customers"
JOIN = "SELECT COUNT(*) FROM orders o JOIN customers c ON o.cid = c.id"

EPSILONS = [
    "1e-100", "1/2" + "0" * 99, "1e9999999", "-1e9999999", "1e-9999999", Decimal("1e9999999"), "1e-7", 1e-100, 1e-7, 1e300,
    Fraction(1, 10**100), Fraction(1, 3**100), Fraction(10**800), 10**5000, "0.1" + "1" * 60, "1/1001", "\u0661", "\uff11",
    "\u0660.\u0665", "1_0", "Infinity", "NaN", float("nan"), float("inf"), True, False, "", " ", "1e", "0", "-1", "1000001",
]
DELTAS = ["1e-100", "1/2" + "0" * 99, "1e-31", "1/1001", True, "1e9999999", 1e-100, "\u0661e-6", Fraction(1, 2**120)]
JOIN_ONLY = ["1e-5", "5e-5", Decimal("1e-5")]  # a spend, but out of the DP bound's range on a join


@pytest.fixture
def shop(tmp_path) -> Path:
    path = duckdb_file(tmp_path / "shop.duckdb", SHOP)
    (tmp_path / "pimento.toml").write_text('[ledger]\nepsilon_cap = "50"\nanalyst_share = "1"\ndelta_cap = "1e-3"\nanalysts = ["ann", "bob"]\n')
    return path


def _refused(session: Session, sql: str, epsilon: object, delta: object = None, analyst: str = "ann") -> int:
    """Check the refusal; return the bytes it allocated (alloc_support.peak_bytes)."""
    before = session.ledger.spent(session.location)
    caught: list[UserError] = []

    def release() -> None:
        with pytest.raises(UserError) as refused:
            session.release_sql(sql, epsilon=epsilon, delta=delta, analyst=analyst)  # type: ignore[arg-type]
        caught.append(refused.value)

    allocated = peak_bytes(release)
    assert type(caught[0]).__name__ in ("PrivacyParameterError", "UnsupportedQuery"), caught[0]
    assert len(caught[0].one_line()) < 600  # no echo of a huge input
    assert session.ledger.spent(session.location) == before  # nothing charged for a refused value
    return allocated


def test_a_flood_of_extreme_numbers_leaves_the_ledger_usable(shop):
    with Session(shop, analyst="ann") as s:
        _refused(s, SINGLE, "-1")  # the first refusal also fills the session's caches: not counted
        largest = 0
        for analyst in ("ann", "bob"):
            for eps in EPSILONS:
                for sql in (SINGLE, JOIN):
                    largest = max(largest, _refused(s, sql, eps, analyst=analyst))
                    largest = max(largest, _refused(s, sql, eps, "1e-6", analyst=analyst))
            for delta in DELTAS:
                largest = max(largest, _refused(s, JOIN, "0.5", delta, analyst=analyst))
            for eps in JOIN_ONLY:
                largest = max(largest, _refused(s, JOIN, eps, analyst=analyst))
                largest = max(largest, _refused(s, JOIN, eps, "1e-6", analyst=analyst))
        # refused from the text: "1e9999999" was converted before (10-20 s of CPU to build its 4 MB int)
        assert largest < CONVERSION_BYTES
        assert s.ledger.spent(s.location) == Budget.zero() and s.ledger.audit_rows() == []

        # every ordinary request of every analyst answers afterwards, and formatting works
        for analyst in ("ann", "bob"):
            for sql, eps, delta in [(SINGLE, "0.5", None), (JOIN, "1", "1e-6"), (JOIN, "1/3", None), (SINGLE, "1e-5", None), (JOIN, "1e-4", None),
                                    (JOIN, 0.1, 1e-9), (SINGLE, "1/7", "1/1000")]:
                answer = s.release_sql(sql, epsilon=eps, delta=delta, analyst=analyst)
                json.dumps(answer.to_dict(), allow_nan=False)
        summary = s.ledger.summary(s.location)
        json.dumps(summary, allow_nan=False)
        assert {a["analyst"] for a in summary["analysts"]} == {"ann", "bob"}
        left = s.ledger.remaining(s.location, "bob")
        assert left.epsilon == 50 - 2 * (Fraction(1, 2) + 1 + Fraction(1, 3) + Fraction(1, 10**5) + Fraction(1, 10**4) + Fraction(1, 10) + Fraction(1, 7))
        assert str(left) and left.to_text()


def test_a_ledger_holding_an_earlier_versions_tiny_charge_works_again(shop, monkeypatch):
    """A charge of 1/2 followed by 99 zeros, admitted by an earlier version, made every later request fail."""
    with Session(shop, analyst="ann") as s:
        with monkeypatch.context() as m:
            m.setattr(Budget, "as_spend", lambda self: self)  # the earlier version's check
            s.ledger.charge("ann", s.location, Budget(Fraction(1, 2 * 10**99), Fraction(1, 10**100)))
        for analyst in ("ann", "bob"):
            s.release_sql(SINGLE, epsilon="0.5", analyst=analyst)
            s.release_sql(JOIN, epsilon="1", delta="1e-6", analyst=analyst)
        summary = s.ledger.summary(s.location)
        assert summary["left"]["epsilon"].startswith("46.99999")
        assert s.ledger.remaining(s.location, "ann").to_text()[1].startswith("0.000997999")
