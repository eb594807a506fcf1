"""A real-valued group column with a declared domain (issue 25): decimals written as strings are exact keys.

DuckDB returns a DOUBLE as a float and a DECIMAL as a Decimal; the declared ``"0.1"`` must be the same
group as the engine's ``0.1`` (a float whose exact value is not 1/10), else its rows are dropped after the
charge. Under :class:`NoNoise` the released values are the true ones.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest

from db_support import duckdb_file
from neighbours import NoNoise
from pimento.errors import UnsupportedQuery
from pimento.mechanisms.budget import Budget
from pimento.mechanisms.samplers import fixed_noise_for_tests
from pimento.release.session import Session

DDL = [
    "CREATE TABLE Visit (visit_id INTEGER PRIMARY KEY, dose DOUBLE NOT NULL, price DECIMAL(6, 2) NOT NULL)",
    "INSERT INTO Visit VALUES (1, 0.1, 2.50), (2, 0.1, 2.5), (3, 2.5, 10.00), (4, 7, 0.25)",
]
CONFIG = """
[ledger]
analyst_share = "1"

[domains]
"Visit.dose" = ["0.1", "2.5", 7, "9.75"]
"Visit.price" = ["0.25", "2.5", "10", "99.99"]
"""


@pytest.fixture()
def db(tmp_path: Path) -> Path:
    (tmp_path / "pimento.toml").write_text(CONFIG)
    return duckdb_file(tmp_path / "clinic.duckdb", DDL)


def _values(db: Path, sql: str) -> dict[tuple[Fraction, ...], Fraction]:
    with fixed_noise_for_tests(NoNoise()), Session(db, analyst="ann") as s:
        answer = s.release_sql(sql, "1", "1e-6")
    return {tuple(Fraction(str(k)) for k in g["key"]): Fraction(g["value_exact"]) for g in answer.to_dict()["groups"]}


def test_a_double_column_groups_by_its_declared_decimals_zeros_included(db):
    found = _values(db, "SELECT v.dose, COUNT(*) FROM Visit v GROUP BY v.dose")
    assert found == {(Fraction(1, 10),): 2, (Fraction(5, 2),): 1, (Fraction(7),): 1, (Fraction(39, 4),): 0}


def test_a_decimal_column_groups_by_exact_value_whatever_the_spelling(db):
    found = _values(db, "SELECT v.price, COUNT(*) FROM Visit v GROUP BY v.price")
    assert found == {(Fraction(1, 4),): 1, (Fraction(5, 2),): 2, (Fraction(10),): 1, (Fraction(9999, 100),): 0}


@pytest.mark.parametrize(("listed", "said"), [('["0.1", "ten"]', "holds numbers"), ('["2.5", "2.50"]', "twice")])
def test_a_declared_value_that_is_no_number_or_repeats_is_refused_before_the_charge(db, listed, said):
    toml = db.parent / "pimento.toml"
    toml.write_text(CONFIG.replace('["0.1", "2.5", 7, "9.75"]', listed))
    with pytest.raises(UnsupportedQuery, match=said), fixed_noise_for_tests(NoNoise()), Session(db, analyst="ann") as s:
        s.release_sql("SELECT v.dose, COUNT(*) FROM Visit v GROUP BY v.dose", "1", "1e-6")
    with Session(db) as s:
        assert s.ledger.spent(s.location) == Budget.zero()


def test_a_toml_float_is_refused_with_the_hint_to_write_a_string(tmp_path):
    from pimento.config import load_settings
    from pimento.errors import ConfigError

    (tmp_path / "pimento.toml").write_text('[domains]\n"Visit.dose" = [0.1, 2.5]\n')
    with pytest.raises(ConfigError, match="decimals as strings"):
        load_settings(tmp_path / "pimento.toml")
