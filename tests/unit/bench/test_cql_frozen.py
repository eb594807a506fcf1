"""The frozen policy texts' pins (:mod:`benchmarks.cql_frozen`, issue 27): every frozen file is pinned and
matches its SHA-256, a changed or unpinned text is refused, and ``--round`` picks the texts scored.

Nothing here prints or compares the frozen texts' content: only their digests."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import duckdb
import pytest

from benchmarks import cql_dev, cql_frozen
from benchmarks.cql_frozen import (DOMAINS, DOMAINS_ROUND2, DOMAINS_ROUND3, DOMAINS_ROUND4, DOMAINS_ROUND5,
                                   DOMAINS_ROUND6, FROZEN, ROOT, ROUNDS, check_frozen)
from pimento.errors import PolicyError


def test_the_pins_match_the_files() -> None:
    check_frozen()
    check_frozen(domains=DOMAINS)
    check_frozen(domains=DOMAINS_ROUND2)
    check_frozen(domains=DOMAINS_ROUND3)
    check_frozen(domains=DOMAINS_ROUND4)
    check_frozen(domains=DOMAINS_ROUND5)
    check_frozen(domains=DOMAINS_ROUND6)


def test_every_frozen_text_of_every_round_is_pinned_and_nothing_else() -> None:
    assert ROUNDS == {1: ("social_services", "clinical_trial"), 2: ("frozen2_ride_hailing", "frozen2_smart_meter"),
                      3: ("frozen3_probation", "frozen3_wearable"), 4: ("frozen4_housing", "frozen4_charity"),
                      5: ("frozen5_dental", "frozen5_courier"), 6: ("frozen6_hotel", "frozen6_legal_aid")}
    expected = {f"{name}/{f}" for names in ROUNDS.values() for name in names
                for f in ("policy.txt", "schema.sql", "gold.yaml")}
    assert set(FROZEN) == expected
    assert all(len(d) == 64 and int(d, 16) >= 0 for d in FROZEN.values())


def _copy_round(tmp_path: Path, domains: tuple[str, ...]) -> Path:
    for name in domains:
        shutil.copytree(ROOT / name, tmp_path / name)
    return tmp_path


@pytest.mark.parametrize("changed", ["policy.txt", "schema.sql", "gold.yaml"])
@pytest.mark.parametrize("domains", [DOMAINS_ROUND2, DOMAINS_ROUND3, DOMAINS_ROUND4, DOMAINS_ROUND5, DOMAINS_ROUND6],
                         ids=["round2", "round3", "round4", "round5", "round6"])
def test_a_changed_frozen_file_is_refused(tmp_path: Path, changed: str, domains: tuple[str, ...]) -> None:
    root = _copy_round(tmp_path, domains)
    check_frozen(root, domains)  # the copy itself passes
    for name in domains:  # a change to either text of the round is refused, the other text's pins still hold
        target = root / name / changed
        original = target.read_bytes()
        target.chmod(0o644)
        target.write_bytes(original + b"\n")
        with pytest.raises(SystemExit, match=f"{name}/{changed} changed"):
            check_frozen(root, domains)
        check_frozen(root, tuple(n for n in domains if n != name))
        target.write_bytes(original)
    check_frozen(root, domains)



def test_a_text_without_pins_is_not_scored_as_frozen(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="dev_telecom is not a frozen text"):
        check_frozen(domains=("dev_telecom",))
    with pytest.raises(SystemExit, match="not a frozen text"):
        cql_frozen.run(tmp_path, ("dev_telecom",))


def test_a_review_that_leaves_no_policy_scores_zero_instead_of_stopping(monkeypatch: pytest.MonkeyPatch,
                                                                          tmp_path: Path) -> None:
    """``apply_review`` refuses a reviewed policy without norms (PolicyError): that reading scores zero and the
    other readings are still scored (before, the benchmark stopped with a traceback)."""
    db = tmp_path / "t.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE T (id INTEGER PRIMARY KEY, a VARCHAR)")
    con.close()
    locations = [{"relation": "T", "attribute": "a"}]
    gold = {"grounding": {"data_types": {"d": {"locations": locations}}},
            "norms": [{"id": "C1", "sign": "permit", "data": ["d"]}]}

    class Extracted:
        policy = gold

        def draft(self) -> dict[str, Any]:
            return {}

    def refuse(*_: Any) -> dict[str, Any]:
        raise PolicyError("reviewed policy: the policy has no norms")

    monkeypatch.setattr(cql_frozen, "extract_policy_offline", lambda *a, **k: Extracted())
    monkeypatch.setattr(cql_frozen, "confirm_all", lambda draft: {})
    monkeypatch.setattr(cql_frozen, "apply_review", refuse)
    monkeypatch.setattr(cql_frozen, "careful_review", refuse)
    monkeypatch.setattr(cql_frozen, "open_questions", lambda draft: [])
    readings = cql_frozen._readings("1. text", gold, db)
    assert readings["draft"]["all"]["f1"] == 1.0  # the draft is the gold itself
    nothing = cql_frozen.score_extraction({"norms": [], "grounding": {}}, gold)
    for reading in ("confirmed", "careful"):
        assert readings[reading] == nothing
        assert readings[reading]["extracted_norms"] == 0 and readings[reading]["data"]["recall"] == 0.0


def _scored(monkeypatch: pytest.MonkeyPatch, module: Any, argv: list[str]) -> list[tuple[str, ...]]:
    calls: list[tuple[str, ...]] = []

    def fake_run(workdir: Path, domains: tuple[str, ...] = ("default",)) -> dict[str, Any]:
        calls.append(domains)
        return {}

    monkeypatch.setattr(module, "run", fake_run)
    module.main(argv)
    return calls


def test_round_picks_the_texts_scored_and_round_1_is_the_default(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    assert _scored(monkeypatch, cql_frozen, []) == [DOMAINS]
    assert _scored(monkeypatch, cql_frozen, ["--round", "1"]) == [DOMAINS]
    assert _scored(monkeypatch, cql_frozen, ["--round", "2"]) == [DOMAINS_ROUND2]
    assert _scored(monkeypatch, cql_frozen, ["--round", "3"]) == [DOMAINS_ROUND3]
    assert _scored(monkeypatch, cql_frozen, ["--round", "4"]) == [DOMAINS_ROUND4]
    assert _scored(monkeypatch, cql_frozen, ["--round", "5"]) == [DOMAINS_ROUND5]
    assert _scored(monkeypatch, cql_frozen, ["--round", "6"]) == [DOMAINS_ROUND6]
    with pytest.raises(SystemExit):
        cql_frozen.main(["--round", "7"])
    # the development benchmark shares the command line but has no rounds
    assert _scored(monkeypatch, cql_dev, []) == [("default",)]
    with pytest.raises(SystemExit):
        cql_dev.main(["--round", "2"])
    capsys.readouterr()


def _doc(norms: list[dict[str, Any]]) -> dict[str, Any]:
    return {"grounding": {"principals": {"staff": {"relation": "Staff"}}, "roles": {"nurse": {"principal": "staff"}},
                          "data_types": {"phone": {"locations": [{"relation": "Patient", "attribute": "phone"}]},
                                         "notes": {"locations": [{"relation": "Patient", "attribute": "notes"}]}}},
            "norms": norms}


def _permit(data: str) -> dict[str, Any]:
    return {"id": "C1", "sign": "permit", "recipient": "nurse", "data": [data]}


def test_the_permit_cell_tells_no_permit_from_wrong_ones() -> None:
    """A permit data precision of 0.0% is shown as ``none`` when no enforced permit covers a column, and with its
    counts when the permits cover only wrong columns (the two were one figure before)."""
    gold = _doc([_permit("phone")])
    none = cql_frozen.score_extraction(_doc([]), gold)
    wrong = cql_frozen.score_extraction(_doc([_permit("notes")]), gold)
    right = cql_frozen.score_extraction(_doc([_permit("phone")]), gold)
    assert none["data_permit_precision"] == wrong["data_permit_precision"] == 0.0
    assert none["data_permit"] == {"precision": 0.0, "tp": 0, "predicted": 0}
    assert cql_frozen._permit_cell(none) == "none"
    assert cql_frozen._permit_cell(wrong) == "0.0% (0/1)"
    assert cql_frozen._permit_cell(right) == "100.0% (1/1)"
    assert right["data"]["predicted"] == right["data"]["tp"] == right["data"]["gold"] == 1
