"""The JSON of every answer, pinned per mode and per request kind (SQL, question), keys in order.

Issue 24 replaced SqlAnswer, AskAnswer and CIAnswer by one :class:`pimento.release.answers.Answer`;
its ``to_dict`` must write exactly what they wrote (golden files, the CLI's ``--json``, the
service). The lists below are the keys the three old classes wrote (this test passes on the code
before the change, through ``release_sql``/``ask``, which both versions have), so a key added,
dropped or moved fails here. The preview's keys (:class:`Interpretation`) are pinned too, and the
typed attributes are checked against the JSON they render to.
"""

from __future__ import annotations

import random
from fractions import Fraction
from pathlib import Path

import pytest

from pimento.mechanisms.samplers import fixed_noise_for_tests
from pimento.release.session import Session
from policy_config import compile_example_policy, configure_policy

CTX = "sender=employee:1,recipient=employee:1,purpose=treatment"
JOIN = "SELECT COUNT(*) FROM Patient p JOIN Visit v ON p.pat_id = v.pat_id WHERE v.diagnosis = 'Heart failure'"
SEED = "SELECT COUNT(*) FROM Patient p JOIN Visit v ON p.pat_id = v.pat_id"

RELEASE = ["value", "value_exact", "interval", "interval_exact", "confidence", "interval_basis", "noise_scale_upper",
           "noise_scale_upper_exact", "mechanism", "noise", "epsilon", "delta", "epsilon_noise", "epsilon_rs_bound", "beta", "grid"]
COUNT = ["sql", "analyst", "mode", *RELEASE, "cached", "charge_id", "budget_left", "neighbours", "unit"]
CLAMP = ["value_unclamped", "clamped"]
SQL_KEYS = {
    "dp": [*COUNT, *CLAMP],
    "contextual": [*COUNT, "context", "guarantee_kind", *CLAMP],
    "split": [*COUNT, "context", "authorized_exact", "remainder", "guarantee_kind", *CLAMP],
    "ci": ["mode", "sql", "analyst", "context", "policy", "columns", "rows", "guarantee"],
}
END_TO_END = ["epsilon_synthetic", "delta_synthetic", "epsilon_release", "delta_release", "epsilon", "delta", "public_inputs",
              "kind", "neighbours"]


def _question_keys(mode: str, crs: bool) -> list[str]:
    if mode == "ci":
        return SQL_KEYS["ci"]
    return ["question", *SQL_KEYS[mode], "chosen_sql", "synthetic_rs", *(["synthetic_crs"] if crs else []), "synthetic_shapley",
            "avoided_sql", "guarantee", "search", "seconds"]


PREVIEW = ["question", "mode", "chosen_sql", "reading", "confidence", "readings_proposed", "synthetic_answer", "synthetic_rs",
           "synthetic_predicted_error", "predicted_error_basis",
           "synthetic_shapley", "estimated_half_width_95", "estimate_basis",
           "predicted_relative_error", "warn_relative_error", "epsilon_for_10_percent", "noise_warning", "cost", "mechanism", "guarantee_if_confirmed",
           "alternatives", "notes", "search_seconds", "spent"]


@pytest.fixture(scope="module")
def hospital(tmp_path_factory, standin_synthetic) -> Path:
    from db_support import demo_with_copy

    folder = tmp_path_factory.mktemp("keys")
    db = demo_with_copy(folder / "h", standin_synthetic, patients=150)
    configure_policy(db, compile_example_policy(db, folder / "compiled.json"))
    with open(Path(db).parent / "pimento.toml", "a", encoding="utf-8") as fh:  # one analyst spends more than a quarter of the cap here (issue 28)
        fh.write('\n[ledger]\nanalyst_share = "1"\n')
    return db


@pytest.mark.parametrize("mode", ["dp", "contextual", "split", "ci"])
def test_sql_answer_keys_per_mode(hospital, mode):
    extra = {} if mode == "dp" else {"mode": mode, "context": CTX}
    budget = () if mode == "ci" else ("1", "1e-6")
    with fixed_noise_for_tests(random.Random(0)), Session(hospital) as s:
        answer = s.release_sql(JOIN, *budget, **extra)
    data = answer.to_dict()
    assert list(data) == SQL_KEYS[mode]
    assert data["mode"] == mode and type(data["mode"]) is str  # plain JSON text, not an enum's repr
    if mode == "ci":
        assert data["rows"] == [list(r) for r in answer.rows] and data["guarantee"] == answer.guarantee_kind
        return
    # the typed attributes are what the JSON shows (the CLI renders from them)
    assert Fraction(data["value_exact"]) == answer.value and data["clamped"] == answer.clamped
    assert [Fraction(x) for x in data["interval_exact"]] == list(answer.interval)
    assert data["epsilon"] == "1" and answer.epsilon == 1 and data["cached"] is answer.cached is False
    assert data["neighbours"] == "add-remove" == answer.neighbours
    assert data.get("guarantee_kind") == answer.guarantee_kind
    if mode == "split":
        assert data["authorized_exact"] == answer.authorized_exact and data["remainder"] == answer.remainder


@pytest.mark.parametrize("mode", ["dp", "contextual", "ci"])
def test_question_answer_and_preview_keys_per_mode(hospital, mode):
    from pimento.search import SearchConfig

    extra = {} if mode == "dp" else {"mode": mode, "context": CTX}
    ask = dict(epsilon="1", delta="1e-6", seed_sql=(SEED,), k=3, config=SearchConfig(rollouts=2, seed=0), **extra)
    with fixed_noise_for_tests(random.Random(0)), Session(hospital) as s:
        seen = s.preview("How many patients had a visit?", **ask)
        answer = s.ask("How many patients had a visit?", expect_sql=seen.sql, **ask)
    shown = seen.to_dict()
    crs = "synthetic_crs" in shown
    assert crs == (mode == "contextual" and seen.synthetic_crs is not None)
    assert [k for k in shown if k != "synthetic_crs"] == PREVIEW
    assert list(shown["guarantee_if_confirmed"]) == ["epsilon", "delta", "epsilon_synthetic", "delta_synthetic", "public_inputs",
                                                     *([] if mode == "ci" else ["neighbours"])]
    data = answer.to_dict()
    assert list(data) == _question_keys(mode, crs)
    if mode == "ci":
        return
    assert list(data["guarantee"]) == END_TO_END
    assert data["chosen_sql"] == seen.sql == answer.chosen_sql  # what the preview showed is what was released
    assert data["guarantee"]["epsilon"] == "2.6" and answer.end_to_end is not None and answer.end_to_end.epsilon == Fraction(13, 5)
    assert data["guarantee"]["kind"] == ("contextual DP for this context" if mode == "contextual" else "DP")


GROUPED = ["sql", "analyst", "mode", "aggregate", "column", "group_by", "bounds", "domain", "groups", "confidence", "epsilon", "delta",
           "budget_split", "releases", "partition_selection", "clipped_on_copy", "cached", "charge_id", "budget_left", "neighbours", "unit"]
GROUP = ["key", "value", "value_exact", "interval", "interval_exact"]
PART = ["part", "mechanism", "noise", "epsilon", "delta", "epsilon_noise", "epsilon_rs_bound", "beta", "grid", "noise_scale_upper",
        "noise_scale_upper_exact", "interval_basis"]
PER_CATEGORY = "SELECT d.category, COUNT(*) FROM Visit v JOIN DxCategory d ON v.diagnosis = d.diagnosis GROUP BY d.category"


def test_grouped_answer_keys(hospital):
    """Issue 25: a grouped answer (dp) has its own keys, pinned like the others; split and contextual refuse it."""
    from pimento.errors import ModeError

    with fixed_noise_for_tests(random.Random(0)), Session(hospital) as s:
        answer = s.release_sql(PER_CATEGORY, "1", "1e-6")
        for mode in ("split", "contextual"):
            with pytest.raises(ModeError, match="GROUP BY, SUM or AVG"):
                s.release_sql(PER_CATEGORY, "1", "1e-6", mode=mode, context=CTX)
        exact = s.release_sql(PER_CATEGORY, mode="ci", context=CTX)  # ci answers any SQL, a GROUP BY included
    assert exact.exact and list(exact.to_dict()) == SQL_KEYS["ci"] and exact.columns[0].lower() == "category"
    data = answer.to_dict()
    assert list(data) == GROUPED
    assert all(list(g) == GROUP for g in data["groups"]) and all(list(p) == PART for p in data["releases"])
    assert data["aggregate"] == "count" and data["group_by"] == ["d.category"] and data["cached"] is False
