"""Release modes are registered strategies: a new mode is one module and one registration.

A tiny plug-in mode, registered in the test, is reachable through ``Session.answer`` (and the
``release_sql`` convenience) with no edit of session.py; it is charged and cached under its own
name, and admission applies its declared requirements and neighbourhoods. session.py tests no
mode's name.
"""

from __future__ import annotations

import inspect
import random
import re
from pathlib import Path

import pytest

import pimento
from pimento.errors import ModeError
from pimento.mechanisms.samplers import fixed_noise_for_tests
from pimento.release import Request, Session, modes
from pimento.release.modes.dp import DpMode
from pimento.sensitivity.neighbourhood import Neighbourhood

SQL = "SELECT COUNT(*) FROM Patient p JOIN Visit v ON p.pat_id = v.pat_id"


class TallyMode(DpMode):
    """A plug-in: a dp release that states its own guarantee and covers change neighbours only."""

    name = "tally"
    neighbourhoods = (Neighbourhood.CHANGE,)
    guarantee = "tally guarantee"

    def guarantee_kind(self, neighbours: Neighbourhood | None) -> str | None:
        return f"{self.guarantee} ({neighbours})"


@pytest.fixture()
def tally():
    modes.register_mode(TallyMode())
    try:
        yield
    finally:
        modes.unregister_mode("tally")


@pytest.fixture()
def clinic(tmp_path) -> Path:
    from pimento.demo.hospital import create_demo

    path = tmp_path / "h.duckdb"
    create_demo(path, patients=60, seed=2)
    with open(tmp_path / "pimento.toml", "a", encoding="utf-8") as fh:
        fh.write('\n[release]\nneighbours = "change"\n')
    return path


def test_a_registered_mode_is_reachable_through_the_session(tally, clinic):
    assert "tally" in modes.registered_modes()
    with fixed_noise_for_tests(random.Random(0)), Session(clinic) as s:
        answer = s.answer(Request.for_sql(SQL, epsilon="1", delta="1e-6", mode="tally"))
        again = s.release_sql(SQL, "1", "1e-6", mode="tally")
        dp_charges = len(s.ledger.charges(s.location))
    data = answer.to_dict()
    assert data["mode"] == "tally" and data["guarantee_kind"] == "tally guarantee (change)" and data["neighbours"] == "change"
    assert not answer.cached and again.cached and dp_charges == 1  # charged once, cached under its own key


def test_admission_applies_a_registered_modes_declarations(tally, clinic):
    with Session(clinic) as s:
        with pytest.raises(ModeError, match="tally gives guarantees for change neighbours only"):
            s.release_sql(SQL, "1", "1e-6", mode="tally", neighbours="both")
        with pytest.raises(ModeError, match="dp gives guarantees for add-remove neighbours only"):
            s.release_sql(SQL, "1", "1e-6")  # the custodian set change: dp cannot give it
        assert not s.ledger.charges(s.location)


def test_an_unregistered_mode_is_refused_before_anything_is_opened():
    with pytest.raises(ModeError, match="unknown mode 'tally'") as info:
        Request.for_sql(SQL, epsilon="1", mode="tally")
    assert "ci, dp, split, contextual" in (info.value.hint or "")


def test_session_tests_no_mode_by_name():
    import pimento.release.session as session_module

    source = inspect.getsource(session_module)
    assert not re.search(r"mode\s*(==|!=|in)\s*", source)
    assert not re.search(r"[\"'](ci|dp|split|contextual)[\"']", source)
    assert pimento.Session is Session
