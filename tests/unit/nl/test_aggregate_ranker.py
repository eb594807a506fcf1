"""The learned order of grouped and summed readings (issue 25): features, artefact, provenance, switch, training."""

from __future__ import annotations

import json
import math
import random
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from pimento.nl import ValueIndex, aggregate_ranker, translate_aggregate
from pimento.nl.aggregate_ranker import FEATURES, candidate_features, copy_features, load_model, rerank
from pimento.schema import Catalog, Column, ForeignKey, Table
from pimento.sql.ir import AggregateKind, AggregateQuery, Attribute, CountQuery, Relation

REPO = Path(__file__).resolve().parents[3]
NL = REPO / "src" / "pimento" / "nl"

CATALOG = Catalog(
    (
        Table("patients", (Column("patient_id", "integer"), Column("name"), Column("age", "integer"), Column("ward_id", "integer")), ("patient_id",)),
        Table("wards", (Column("ward_id", "integer"), Column("ward_name"), Column("floor", "integer")), ("ward_id",)),
    ),
    (ForeignKey("patients", ("ward_id",), "wards", ("ward_id",)),),
)
NO_VALUES = ValueIndex.from_values({})
#: the rule order puts the ward's name beside the listed id first; the shipped model prefers the id alone
SWITCHED = "List the ward id and the number of patients in each ward."


def _f(name: str) -> int:
    return FEATURES.index(name)


def _readings(question: str, *, learned: bool) -> list[str]:
    return [c.sql for c in translate_aggregate(question, CATALOG, values=NO_VALUES, k=aggregate_ranker.POOL, learned=learned)]


def test_features_describe_kind_groups_and_keys():
    found = translate_aggregate("What is the average age of patients for each ward id?", CATALOG, values=NO_VALUES, k=5, learned=False)
    rows = candidate_features("What is the average age of patients for each ward id?", CATALOG, found)
    assert [len(r) for r in rows] == [len(FEATURES)] * len(found)
    top = rows[0]
    assert found[0].sql == "SELECT patients.ward_id, AVG(patients.age) FROM patients GROUP BY patients.ward_id"
    assert top[_f("kind_avg")] == 1.0 and top[_f("q_avg_cue")] == 1.0 and top[_f("kind_agrees")] == 1.0
    assert top[_f("n_groups")] == 1.0 and top[_f("group_is_key")] == 1.0 and top[_f("group_key_cue")] == 1.0
    assert top[_f("measure_match")] == 1.0 and top[_f("rule_top")] == 1.0 and top[_f("copy_known")] == 0.0


def test_copy_features_read_the_answers_shape():
    by_ward = AggregateQuery(CountQuery((Relation("patients", "patients"),)), (Attribute("patients", "ward_id"),))
    assert copy_features(None, by_ward) == [0.0] * len(aggregate_ranker.COPY_FEATURES)
    known = dict(zip(aggregate_ranker.COPY_FEATURES, copy_features([(1, 1), (None, 1)], by_ward)))
    assert known["copy_known"] == 1.0 and known["copy_null_group"] == 1.0 and known["copy_agg_all_one"] == 1.0
    assert known["copy_log_rows"] == pytest.approx(math.log(3))
    empty = dict(zip(aggregate_ranker.COPY_FEATURES, copy_features([], by_ward)))
    assert empty["copy_empty"] == 1.0 and empty["copy_agg_all_one"] == 0.0
    failed = dict(zip(aggregate_ranker.COPY_FEATURES, copy_features(sqlite3.OperationalError("no such column"), by_ward)))
    assert failed["copy_error"] == 1.0


def test_a_hand_made_model_reorders_and_ties_keep_the_rule_order():
    found = translate_aggregate(SWITCHED, CATALOG, values=NO_VALUES, k=5, learned=False)
    assert len(found) >= 2
    weights = [0.0] * len(FEATURES)
    weights[_f("rule_rank")] = 1.0  # prefers the last rule-ordered reading
    model = {"kind": "logistic", "features": list(FEATURES), "intercept": 0.0, "mean": [0.0] * len(FEATURES),
             "scale": [1.0] * len(FEATURES), "coef": weights}  # fmt: skip
    assert rerank(SWITCHED, CATALOG, found, model=model) == found[::-1]
    flat = dict(model, coef=[0.0] * len(FEATURES))
    assert rerank(SWITCHED, CATALOG, found, model=flat) == found
    # a model on a subset of the features reads those columns only
    subset = {"kind": "logistic", "features": ["rule_rank"], "intercept": 0.0, "mean": [0.0], "scale": [1.0], "coef": [-1.0]}
    assert rerank(SWITCHED, CATALOG, found, model=subset) == found


def test_the_shipped_artefact_loads_and_its_order_is_deterministic():
    model = load_model()
    assert set(model["features"]) <= set(FEATURES) and model["kind"] in ("logistic", "trees")
    found = translate_aggregate(SWITCHED, CATALOG, values=NO_VALUES, k=aggregate_ranker.POOL, learned=False)
    first = rerank(SWITCHED, CATALOG, found)
    assert all(rerank(SWITCHED, CATALOG, found) == first for _ in range(3))
    assert sorted(c.sql for c in first) == sorted(c.sql for c in found)


def test_the_switch_changes_the_order_and_keeps_the_readings():
    rules, learned = _readings(SWITCHED, learned=False), _readings(SWITCHED, learned=True)
    assert sorted(rules) == sorted(learned)
    assert rules[0] == (
        "SELECT wards.ward_name, patients.ward_id, COUNT(*) FROM patients JOIN wards ON patients.ward_id = wards.ward_id "
        "GROUP BY wards.ward_name, patients.ward_id"
    )
    assert learned[0].startswith("SELECT patients.ward_id, COUNT(*) FROM patients")  # the listed id alone
    default = [c.sql for c in translate_aggregate(SWITCHED, CATALOG, values=NO_VALUES, k=aggregate_ranker.POOL)]
    assert default == (learned if aggregate_ranker.DEFAULT_ON else rules)


def test_the_provenance_names_the_split_data_and_command():
    prov = json.loads((NL / "aggregate_ranker.provenance.json").read_text())
    assert prov["artefact"] == aggregate_ranker.MODEL_FILE
    assert set(prov["split"]) >= {"rule", "train", "dev", "selection", "held_out"}
    assert "grouped_recall.ranker_part" in prov["split"]["rule"]
    assert prov["trained_by"].startswith("scripts/train_aggregate_ranker.py")
    assert any(key.endswith(":heldout-open") for key in prov["figures"]) and any(key.endswith(":sealed") for key in prov["figures"])
    assert prov["chosen"]["kind"] == load_model()["kind"] and prov["date"]


def test_the_training_script_runs_on_a_tiny_sample(tmp_path):
    pytest.importorskip("sklearn")
    rng = random.Random(0)
    lines = []
    for i in range(40):
        n = rng.randint(2, 6)
        hits = [rng.random() < 0.3 for _ in range(n)]
        feats = [[rng.random() for _ in FEATURES] for _ in range(n)]
        for h, f in zip(hits, feats):
            f[_f("measure_match")] = 1.0 if h else 0.0
        part = ("train", "train", "train", "dev", "sealed")[i % 5]
        rec = {"split": "train", "db": f"db{i % 12}", "part": part, "kind": "count", "grouped": i % 3 > 0, "hits": hits, "features": feats}
        lines.append(json.dumps(rec))
    records = tmp_path / "records.jsonl"
    records.write_text("\n".join(lines) + "\n")
    out, prov = tmp_path / "model.json", tmp_path / "prov.json"
    cmd = [sys.executable, "scripts/train_aggregate_ranker.py", "--records", str(records), "--out", str(out), "--provenance", str(prov), "--quick"]
    subprocess.run(cmd, cwd=REPO, check=True, capture_output=True, env={"PYTHONPATH": "src:."}, timeout=120)
    model = json.loads(out.read_text())
    assert set(model["features"]) <= set(FEATURES)
    assert not any(key.endswith(":sealed") for key in json.loads(prov.read_text())["figures"])  # not scored unless asked
