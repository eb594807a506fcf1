"""Train the learned re-ranker of the offline counting parser (issue 27; docs/parser-ranker.md).

Run (a venv with scikit-learn and pimento's core dependencies; not the package's own, which
needs no learning library):

    python -m benchmarks.parser_recall --values placeholder      # writes /tmp/parser_recall_placeholder.jsonl
    PYTHONPATH=src:. python scripts/train_count_ranker.py --records /tmp/parser_recall_placeholder.jsonl \\
        [--records /tmp/parser_recall_real.jsonl] [--out src/pimento/nl/count_ranker.json]

Data: the records of :mod:`benchmarks.parser_recall` (one per question: the hit of each rule-ordered
candidate and its features). Split (fixed before the first experiment, ``parser_recall.ranker_part``):
fit on ``train`` only; settings are picked by top-1 over the databases a model did not see:
grouped cross-validation on ``train`` (5 folds by database) plus ``dev``; ``sealed`` is scored once,
for the chosen setting, and only in aggregate, when ``--score-sealed`` is given (once, at the end
of the work: while features and settings were being developed it was not scored). Each question weighs the same (its candidates share
weight 1); questions with no correct candidate in the pool teach nothing and are left out of fitting.

Models: logistic regression (C grid) and gradient-boosted shallow trees (scikit-learn), written as
JSON for :func:`pimento.nl.count_ranker.score` (pure Python). The scorer is checked against
scikit-learn's own decision function on every fitted row before the artefact is written.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
from ranker_fit import commit, fit_model, training_arguments, write_artefact
from sklearn.model_selection import GroupKFold

from pimento.nl import count_ranker

PARTS = ("train", "dev", "sealed")


def load(paths: list[Path], pool: int) -> list[dict[str, Any]]:
    """The records of ``paths`` cut to the first ``pool`` candidates (the order the ranker sees)."""
    out = []
    for path in paths:
        for line in path.read_text().splitlines():
            if line.strip():
                rec = json.loads(line)
                rec["hits"], rec["features"] = rec["hits"][:pool], rec["features"][:pool]
                rec["source"] = path.name
                out.append(rec)
    return out


def matrix(records: list[dict[str, Any]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows, labels and weights of the questions with at least one correct and one wrong candidate."""
    xs, ys, ws = [], [], []
    for r in records:
        if not any(r["hits"]) or all(r["hits"]):
            continue
        n = len(r["hits"])
        xs.extend(r["features"])
        ys.extend(int(h) for h in r["hits"])
        ws.extend([1.0 / n] * n)
    return np.array(xs, dtype=float), np.array(ys), np.array(ws)


def fit(setting: dict[str, Any], records: list[dict[str, Any]]) -> dict[str, Any]:
    """A model of ``setting`` fitted on ``records``, as the JSON artefact dict (:func:`ranker_fit.fit_model`)."""
    x, y, w = matrix(records)
    return fit_model(setting, x, y, w, features=count_ranker.FEATURES, score=count_ranker.score)


def top1(model: dict[str, Any] | None, records: list[dict[str, Any]]) -> float:
    """Top-1 (%) of ``records`` ordered by ``model`` (None: the rule order); ties keep the rule order."""
    if not records:
        return 0.0
    good = 0
    for r in records:
        if not r["hits"]:
            continue
        if model is None:
            good += r["hits"][0]
            continue
        scores = [count_ranker.score(model, f) for f in r["features"]]
        good += r["hits"][min(range(len(scores)), key=lambda i: (-scores[i], i))]
    return 100.0 * good / len(records)


def cv_top1(setting: dict[str, Any], train: list[dict[str, Any]], folds: int = 5) -> float:
    """Top-1 (%) on ``train`` with each database scored by a model fitted without it."""
    groups = [r["db"] for r in train]
    good = 0.0
    for fit_idx, test_idx in GroupKFold(n_splits=folds).split(train, groups=groups):
        model = fit(setting, [train[i] for i in fit_idx])
        good += top1(model, [train[i] for i in test_idx]) * len(test_idx) / 100
    return 100.0 * good / len(train)


SETTINGS: list[dict[str, Any]] = (
    [{"kind": "logistic", "C": c} for c in (0.01, 0.1, 1.0)]
    + [{"kind": "trees", "trees": n, "depth": d, "rate": 0.1} for n in (30, 100) for d in (2, 3)]
)


def main() -> None:
    parser = training_arguments(__doc__.splitlines()[0])
    parser.add_argument("--score-sealed", action="store_true", help="score the chosen model on sealed (once, at the end of the work)")
    args = parser.parse_args()
    records = load(args.records, count_ranker.POOL)
    by_part = {p: [r for r in records if r["part"] == p] for p in PARTS}
    settings = SETTINGS[1:2] + SETTINGS[3:4] if args.quick else SETTINGS
    folds = 2 if args.quick else 5
    results = []
    for s in settings:
        cv = cv_top1(s, by_part["train"], folds)
        model = fit(s, by_part["train"])
        dev = top1(model, by_part["dev"])
        n_cv, n_dev = len(by_part["train"]), len(by_part["dev"])
        unseen = (cv * n_cv + dev * n_dev) / max(1, n_cv + n_dev)
        results.append({"setting": s, "train_cv_top1": round(cv, 1), "dev_top1": round(dev, 1), "unseen_top1": round(unseen, 2)})
        print(json.dumps(results[-1]), flush=True)
    best = max(results, key=lambda r: r["unseen_top1"])  # first best on ties: the simpler setting
    model = fit(best["setting"], by_part["train"])
    figures: dict[str, Any] = {"train_cv_top1_pct_all_records": best["train_cv_top1"]}
    for source in dict.fromkeys(r["source"] for r in records):
        for part, rows in by_part.items():
            rows = [r for r in rows if r["source"] == source]
            if part == "sealed" and not args.score_sealed:
                continue
            figures[f"{source}:{part}"] = {
                "questions": len(rows),
                "rule_top1_pct": round(top1(None, rows), 1),
                "learned_top1_pct": round(top1(model, rows), 1),
            }
    print(json.dumps({"chosen": best["setting"], "figures": figures}, indent=2))
    provenance = {
        "artefact": "count_ranker.json",
        "trained_by": "scripts/train_count_ranker.py " + " ".join(sys.argv[1:]),
        "records": [str(p) for p in args.records],
        "records_made_by": "python -m benchmarks.parser_recall --values <placeholder|real>",
        "split": {
            "rule": "benchmarks.parser_recall.ranker_part, fixed before the first experiment",
            "train": "Spider dev + Spider train partitions tune and dp (benchmarks.nl_spider.in_partition)",
            "dev": "Spider train partition heldout-open (settings picked on it and on 5-fold grouped CV of train)",
            "sealed": "Spider train partition sealed (23 databases; never trained or tuned on; aggregate only)",
        },
        "pool": count_ranker.POOL,
        "chosen": best["setting"],
        "settings_tried": results,
        "figures": figures,
        "date": dt.date.today().isoformat(),
        "commit": commit(),
    }
    write_artefact(model, provenance, args.out, args.provenance)


if __name__ == "__main__":
    main()
