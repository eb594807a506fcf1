"""pimento.toml numbers (issue 28, "Fail loudly"): TOML integers and floats are accepted where
numbers are meant, read exactly, and every bad value is an error naming the file and the key."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest
from pydantic import ValidationError

from pimento.config import LedgerSettings, load_settings
from pimento.errors import ConfigError, PrivacyParameterError
from pimento.mechanisms.budget import Budget, parse_number
from pimento.mechanisms.ledger import Ledger


def _load(tmp_path: Path, text: str):
    path = tmp_path / "pimento.toml"
    path.write_text(text, encoding="utf-8")
    return path, load_settings(path)


@pytest.mark.parametrize(
    ("written", "exact"),
    [("10", Fraction(10)), ("2.5", Fraction(5, 2)), ("0.1", Fraction(1, 10)), ('"10"', Fraction(10)), ("1e3", Fraction(1000))],
)
def test_toml_numbers_are_accepted_for_caps_and_read_exactly(tmp_path, written, exact) -> None:
    _, settings = _load(tmp_path, f"[ledger]\nepsilon_cap = {written}\nanalyst_epsilon_cap = {written}\n")
    assert Budget.of(settings.ledger.epsilon_cap).epsilon == exact
    assert Budget.of(settings.ledger.analyst_epsilon_cap or "").epsilon == exact
    with Ledger(tmp_path / "l.sqlite", settings.ledger) as ledger:  # the ledger opens with it
        assert ledger.database_cap().epsilon == exact and ledger.remaining("db", "ann").epsilon == exact


def test_toml_floats_for_delta_and_share_are_read_through_their_shortest_text(tmp_path) -> None:
    _, settings = _load(tmp_path, "[ledger]\ndelta_cap = 1e-5\n[release]\nrs_bound_share = 0.2\n")
    assert Budget.of("0", settings.ledger.delta_cap).delta == Fraction(1, 100_000)
    assert parse_number(settings.release.rs_bound_share, name="share") == Fraction(1, 5)


@pytest.mark.parametrize(
    ("line", "key", "words"),
    [
        ('[ledger]\nepsilon_cap = "ten"', "[ledger] epsilon_cap", "must be a number like"),
        ('[ledger]\nepsilon_cap = "-5"', "[ledger] epsilon_cap", "must be >= 0, got -5"),
        ("[ledger]\nepsilon_cap = -5", "[ledger] epsilon_cap", "must be >= 0, got -5"),
        ("[ledger]\nepsilon_cap = true", "[ledger] epsilon_cap", "must be a number like"),
        ("[ledger]\nepsilon_cap = nan", "[ledger] epsilon_cap", "must be a finite number"),
        ("[ledger]\nepsilon_cap = inf", "[ledger] epsilon_cap", "must be a finite number"),
        ('[ledger]\nepsilon_cap = "1e9999"', "[ledger] epsilon_cap", "too many digits"),
        ('[ledger]\nanalyst_epsilon_cap = "x"', "[ledger] analyst_epsilon_cap", "must be a number like"),
        ("[ledger]\ndelta_cap = 1", "[ledger] delta_cap", "must be in [0, 1), got 1"),
        ('[ledger]\ndelta_cap = "1/0"', "[ledger] delta_cap", "must be a number like"),
        ("[release]\nrs_bound_share = 0", "[release] rs_bound_share", "strictly between 0 and 1, got 0"),
        ('[release]\nrs_bound_share = "1.5"', "[release] rs_bound_share", "strictly between 0 and 1"),
        ('[database]\ntimeout_s = "ten"', "[database] timeout_s", "valid number"),
        ('[database]\nmemory_limit = "lots"', "[database] memory_limit", "is not a size"),
        ('[database]\nmemory_limit = "1MB"', "[database] memory_limit", "below 16 MB"),
        ("[database]\nmemory_limit = true", "[database] memory_limit", "is not a size"),
        ('[[constraints.foreign_keys]]\nfrom = "A.x"', "[constraints] foreign_keys[0].to", "Field required"),
    ],
)
def test_every_bad_value_names_the_file_and_the_key(tmp_path, line, key, words) -> None:
    path = tmp_path / "pimento.toml"
    path.write_text(line + "\n", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_settings(path)
    assert caught.value.message.startswith(f"{path}: {key}: "), caught.value.message
    assert words in caught.value.message


@pytest.mark.parametrize(
    "value",
    ["10", " 0.5 ", "1e-5", "1E+2", "1/3", "-1/3", ".5", "5.", "0", 3, 0.1, 1e-05, 1e20, 2**64, 10**250, "1e401",
     "1e400", "1_000", "0x10", "١٠", "", "1/0", "inf", "nan", True, None, "9" * 201, float("inf")],
)
def test_what_the_settings_accept_reads_back_the_same_in_parse_number(value) -> None:
    """config.py reads settings with parse_number (pimento.numbers), so the two always agree: pinned here."""
    try:
        expected = parse_number(value, name="x")  # type: ignore[arg-type]
    except PrivacyParameterError:
        expected = None
    try:
        settings = LedgerSettings(epsilon_cap=value) if value is not None else None
    except ValidationError:
        settings = None
    if expected is None or expected < 0:
        assert settings is None
    else:
        assert settings is not None and parse_number(settings.epsilon_cap, name="x") == expected
