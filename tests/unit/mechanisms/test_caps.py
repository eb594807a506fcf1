"""Issue 28, item 4: each analyst's cap defaults to a share of the database's, and which cap binds."""

from __future__ import annotations

from fractions import Fraction

import pytest

from pimento.config import DEFAULT_ANALYST_SHARE, LedgerSettings, settings_from_dict
from pimento.errors import BudgetError, ConfigError
from pimento.mechanisms import Budget, Ledger
from pimento.mechanisms.caps import analyst_cap_of, binding, cap_statement


def test_the_default_analyst_cap_is_a_quarter_of_the_database_cap():
    """One analyst can no longer spend everyone's budget (the old default: the whole database cap)."""
    assert DEFAULT_ANALYST_SHARE == "0.25"
    assert analyst_cap_of(LedgerSettings()) == Budget(Fraction(10) / 4, Fraction(1, 10**5))
    assert analyst_cap_of(LedgerSettings(epsilon_cap="1", analyst_share="1/3")).epsilon == Fraction(1, 3)  # exact, never rounded up
    assert analyst_cap_of(LedgerSettings(epsilon_cap="10", analyst_epsilon_cap="4", analyst_share="0.1")).epsilon == 4  # explicit wins


def test_a_default_ledger_refuses_one_analyst_past_the_share():
    ledger = Ledger(":memory:", LedgerSettings(epsilon_cap="2"))
    ledger.charge("ann", "db", Budget.spend("0.5"))
    with pytest.raises(BudgetError, match="analyst 'ann'"):
        ledger.charge("ann", "db", Budget.spend("0.1"))
    ledger.charge("bob", "db", Budget.spend("0.5"))  # the others keep theirs


@pytest.mark.parametrize("share", ["0", "-0.5", "1.5", "ten", True])
def test_a_share_outside_0_1_is_refused_naming_the_key(share):
    with pytest.raises(ConfigError, match=r"\[ledger\] analyst_share"):
        settings_from_dict({"ledger": {"analyst_share": share}})


def test_binding_says_which_cap_limits_what_is_left():
    ledger = Ledger(":memory:", LedgerSettings(epsilon_cap="2", analyst_share="0.5"))
    ledger.charge("ann", "db", Budget.spend("1"))
    ledger.charge("bob", "db", Budget.spend("0.5"))

    def binds(who: str) -> str:
        return binding(ledger.analyst_cap(who), ledger.spent("db", who), ledger.remaining("db", who))

    assert ledger.remaining("db", "carl").epsilon == Fraction(1, 2)
    assert binds("carl") == "database"  # own cap leaves 1, the database 0.5
    assert binds("bob") == "analyst"  # both leave 0.5: a tie is their own cap
    assert binds("ann") == "analyst"  # own cap spent


def test_the_cap_statement_names_the_key_that_sets_it():
    assert cap_statement(LedgerSettings()) == (
        "each analyst may spend epsilon 2.5 ([ledger] analyst_share = 0.25 of the database cap); "
        "database cap epsilon 10, delta 1e-5 for all analysts together")
    assert "([ledger] analyst_epsilon_cap)" in cap_statement(LedgerSettings(analyst_epsilon_cap="1"))
