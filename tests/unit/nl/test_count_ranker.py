"""The learned re-ranking of counting candidates (issue 27): scorer, artefact, provenance, hook, training."""

from __future__ import annotations

import json
import math
import random
import subprocess
import sys
from pathlib import Path

import pytest

from pimento.nl import count_ranker, translate
from pimento.nl.count_ranker import FEATURES, candidate_features, load_model, rerank, score
from pimento.schema import Catalog, Column, ForeignKey, Table
from pimento.sql.ir import Attribute, Count, CountQuery, JoinCondition, Relation, Selection

REPO = Path(__file__).resolve().parents[3]
NL = REPO / "src" / "pimento" / "nl"

CATALOG = Catalog(
    (
        Table("singer", (Column("singer_id", "integer"), Column("country", "text"), Column("age", "integer")), ("singer_id",)),
        Table("concert", (Column("concert_id", "integer"), Column("year", "integer")), ("concert_id",)),
        Table("singer_in_concert", (Column("concert_id", "integer"), Column("singer_id", "integer")), ()),
    ),
    (
        ForeignKey("singer_in_concert", ("singer_id",), "singer", ("singer_id",)),
        ForeignKey("singer_in_concert", ("concert_id",), "concert", ("concert_id",)),
    ),
)

SINGERS = CountQuery(relations=(Relation("singer", "singer"),), selections=(Selection("singer", "singer.country = 'France'"),))
LINKS = CountQuery(
    relations=(Relation("singer", "singer"), Relation("singer_in_concert", "singer_in_concert")),
    joins=(JoinCondition(Attribute("singer_in_concert", "singer_id"), Attribute("singer", "singer_id")),),
    count=Count(Attribute("singer_in_concert", "singer_id"), distinct=True),
)
QUESTION = "How many singers are from France?"
#: rule order: the join form first (as a wrong rule score would put it), the plain count second
RANKED = [
    (LINKS, (2.0, ("counting distinct singer_in_concert.singer_id (from 'singers')",))),
    (SINGERS, (1.9, ("counting rows of singer (from 'singers')", "'France' -> singer.country = 'France'", "COUNT(*)"))),
]


def _feature(name: str) -> int:
    return FEATURES.index(name)


def test_features_describe_what_transfers_across_schemas():
    rows = candidate_features(QUESTION, CATALOG, RANKED)
    assert [len(r) for r in rows] == [len(FEATURES)] * 2
    links, singers = rows
    assert singers[_feature("pred_literal_in_question")] == 1.0 and singers[_feature("pred_literal_exact_case")] == 1.0
    assert singers[_feature("count_star")] == 1.0 and links[_feature("count_distinct_column")] == 1.0
    assert links[_feature("n_relations")] == 2.0 and links[_feature("n_joins")] == 1.0
    assert singers[_feature("target_match")] == 1.0 and singers[_feature("n_eq")] == 1.0
    assert links[_feature("rule_top")] == 1.0 and singers[_feature("rule_gap")] == pytest.approx(-0.1)


def test_a_hand_made_model_reorders_and_ties_keep_the_rule_order():
    weights = [0.0] * len(FEATURES)
    weights[_feature("pred_literal_in_question")] = 1.0
    weights[_feature("n_joins")] = -1.0
    model = {"kind": "logistic", "features": list(FEATURES), "intercept": 0.0, "mean": [0.0] * len(FEATURES),
             "scale": [1.0] * len(FEATURES), "coef": weights}  # fmt: skip
    assert [q for q, _ in rerank(QUESTION, CATALOG, RANKED, model=model)] == [SINGERS, LINKS]
    flat = dict(model, coef=[0.0] * len(FEATURES))
    assert [q for q, _ in rerank(QUESTION, CATALOG, RANKED, model=flat)] == [LINKS, SINGERS]


def test_tree_scorer_walks_left_on_at_most_the_threshold():
    tree = {"feature": [_feature("n_joins"), -2, -2], "threshold": [0.5, -2.0, -2.0], "left": [1, -1, -1], "right": [2, -1, -1], "value": [0.0, 1.0, -1.0]}
    model = {"kind": "trees", "init": 0.25, "learning_rate": 0.5, "trees": [tree], "features": list(FEATURES)}
    row = [0.0] * len(FEATURES)
    assert score(model, row) == 0.75
    row[_feature("n_joins")] = 0.5
    assert score(model, row) == 0.75  # scikit-learn sends x <= threshold left
    row[_feature("n_joins")] = 1.0
    assert score(model, row) == -0.25


def test_the_shipped_artefact_loads_and_ranks_the_hand_made_case():
    model = load_model()
    assert model["features"] == list(FEATURES) and model["kind"] in ("logistic", "trees")
    # a clear rule winner that also names the question's literal stays first (a scorer that walks
    # a tree the wrong way at a threshold puts the join form first here)
    clear = [(SINGERS, (2.5, RANKED[1][1][1])), (LINKS, (1.0, RANKED[0][1][1]))]
    assert [q for q, _ in rerank(QUESTION, CATALOG, clear)] == [SINGERS, LINKS]
    scores = [score(model, row) for row in candidate_features(QUESTION, CATALOG, clear)]
    assert scores[0] > scores[1] and all(math.isfinite(s) for s in scores)
    # a close call: the model reorders nothing away, whatever order it picks
    assert sorted(map(repr, (q for q, _ in rerank(QUESTION, CATALOG, RANKED)))) == sorted(map(repr, (SINGERS, LINKS)))


def test_the_provenance_names_the_split_data_and_command():
    prov = json.loads((NL / "count_ranker.provenance.json").read_text())
    assert prov["artefact"] == count_ranker.MODEL_FILE
    assert set(prov["split"]) >= {"rule", "train", "dev", "sealed"}
    assert "parser_recall.ranker_part" in prov["split"]["rule"]
    assert prov["trained_by"].startswith("scripts/train_count_ranker.py")
    assert any(key.endswith(":train") for key in prov["figures"]) and any(key.endswith(":dev") for key in prov["figures"])
    assert prov["date"] and prov["chosen"]


def test_translate_keeps_the_candidates_and_switches_order_only():
    cat = Catalog((Table("pets", (Column("pet_id", "integer"), Column("weight", "real"), Column("kind", "text")), ("pet_id",)),))
    question = "How many dogs weigh more than 10?"
    rules = translate(question, cat, k=count_ranker.POOL, learned=False)
    learned = translate(question, cat, k=count_ranker.POOL, learned=True)
    assert sorted(c.sql for c in rules) == sorted(c.sql for c in learned)
    assert translate(question, cat, learned=None)[0].sql == (learned if count_ranker.DEFAULT_ON else rules)[0].sql


def test_the_training_script_runs_on_a_tiny_sample(tmp_path):
    pytest.importorskip("sklearn")
    rng = random.Random(0)
    lines = []
    for i in range(40):
        n = rng.randint(2, 6)
        hits = [rng.random() < 0.3 for _ in range(n)]
        feats = [[rng.random() for _ in FEATURES] for _ in range(n)]
        for h, f in zip(hits, feats):
            f[_feature("pred_literal_in_question")] = 1.0 if h else 0.0
        part = ("train", "train", "train", "dev")[i % 4]
        lines.append(json.dumps({"split": "train", "db": f"db{i % 12}", "part": part, "hits": hits, "features": feats}))
    records = tmp_path / "records.jsonl"
    records.write_text("\n".join(lines) + "\n")
    out, prov = tmp_path / "model.json", tmp_path / "prov.json"
    cmd = [sys.executable, "scripts/train_count_ranker.py", "--records", str(records), "--out", str(out), "--provenance", str(prov), "--quick"]
    subprocess.run(cmd, cwd=REPO, check=True, capture_output=True, env={"PYTHONPATH": "src:."}, timeout=120)
    model = json.loads(out.read_text())
    assert model["features"] == list(FEATURES)
    assert not any(key.endswith(":sealed") for key in json.loads(prov.read_text())["figures"])  # not scored unless asked
