"""What the two ranker-training scripts share (``train_count_ranker.py``, ``train_aggregate_ranker.py``).

A model is fitted with scikit-learn and exported as the JSON artefact the package scores without it
(:func:`pimento.nl.count_ranker.score`): a logistic regression (pointwise, or pairwise on differences of a
question's right and wrong candidates) or boosted trees. :func:`fit_model` checks that the pure-Python
scorer reproduces scikit-learn's decision function on the training rows before returning.
"""

from __future__ import annotations

import argparse
import json
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.ensemble import GradientBoostingClassifier
from sklearn.linear_model import LogisticRegression

__all__ = ["commit", "fit_model", "training_arguments", "write_artefact"]


def fit_model(setting: dict[str, Any], x: np.ndarray, y: np.ndarray, w: np.ndarray, *, features: Sequence[str],
              score: Callable[[dict[str, Any], list[float]], float],
              pairs: Callable[[], tuple[np.ndarray, np.ndarray, np.ndarray]] | None = None) -> dict[str, Any]:
    """A model of ``setting`` (``kind``: ``logistic``, ``pairwise`` or ``trees``) fitted on rows ``x``, labels ``y``
    and weights ``w``, as the JSON artefact dict naming ``features``; ``pairs()`` gives the pairwise rows (needed
    for ``pairwise``). Exits when ``score`` (the package's scorer) disagrees with scikit-learn."""
    if setting["kind"] == "pairwise":
        if pairs is None:
            raise SystemExit("a pairwise setting needs the pairs of right and wrong candidates")
        scale = x.std(axis=0)
        scale[scale == 0] = 1.0
        dx, dy, dw = pairs()
        lr = LogisticRegression(C=setting["C"], max_iter=5000, fit_intercept=False)
        lr.fit(dx / scale, dy, sample_weight=dw)
        model = {"kind": "logistic", "intercept": 0.0, "mean": [0.0] * len(features), "scale": scale.tolist(), "coef": lr.coef_[0].tolist()}
        reference = lr.decision_function(x / scale)
    elif setting["kind"] == "logistic":
        mean, scale = x.mean(axis=0), x.std(axis=0)
        scale[scale == 0] = 1.0
        lr = LogisticRegression(C=setting["C"], max_iter=5000)
        lr.fit((x - mean) / scale, y, sample_weight=w)
        model = {"kind": "logistic", "intercept": float(lr.intercept_[0]), "mean": mean.tolist(), "scale": scale.tolist(), "coef": lr.coef_[0].tolist()}
        reference = lr.decision_function((x - mean) / scale)
    else:
        gb = GradientBoostingClassifier(
            n_estimators=setting["trees"], max_depth=setting["depth"], learning_rate=setting["rate"], subsample=1.0, random_state=0
        )
        gb.fit(x, y, sample_weight=w)
        trees = []
        for est in gb.estimators_[:, 0]:
            t = est.tree_
            trees.append({
                "feature": [int(f) for f in t.feature],
                "threshold": [float(v) for v in t.threshold],
                "left": [int(v) for v in t.children_left],
                "right": [int(v) for v in t.children_right],
                "value": [float(v) for v in t.value[:, 0, 0]],
            })
        reference = gb.decision_function(x)
        init = float(reference[0] - setting["rate"] * sum(e.predict(x[:1])[0] for e in gb.estimators_[:, 0]))
        model = {"kind": "trees", "init": init, "learning_rate": setting["rate"], "trees": trees}
    model["features"] = list(features)
    mine = np.array([score(model, row) for row in x.tolist()])
    worst = float(np.max(np.abs(mine - reference))) if len(x) else 0.0
    if worst > 1e-6:
        raise SystemExit(f"the pure-Python scorer disagrees with scikit-learn by {worst}")
    return model


def commit() -> str:
    """The checkout's short commit (the provenance's), or ``unknown``."""
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def write_artefact(model: dict[str, Any], provenance: dict[str, Any], out: Path | None, provenance_path: Path | None) -> None:
    """Write the model (compact JSON) to ``out`` and its provenance (indented) to ``provenance_path``, each when given."""
    if out:
        out.write_text(json.dumps(model, separators=(",", ":")) + "\n")
    if provenance_path:
        provenance_path.write_text(json.dumps(provenance, indent=2) + "\n")


def training_arguments(description: str) -> argparse.ArgumentParser:
    """The options both training scripts take: the records, where the model and its provenance go, a quick mode."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--records", type=Path, action="append", required=True)
    parser.add_argument("--out", type=Path, default=None, help="write the chosen model here (JSON)")
    parser.add_argument("--provenance", type=Path, default=None, help="write its provenance here (JSON)")
    parser.add_argument("--quick", action="store_true", help="two settings, 2 folds (for tests)")
    return parser
