"""Grouped and summed QUESTIONS answered end to end on the demo hospital (issue 25, items 3 and 4).

Run: ``python -m benchmarks.grouped_ask --db pimento-demo/hospital.duckdb [--repeats 5] [--epsilon 1]``

``--db``: a demo deployment with its synthetic copy (``pimento demo run --patients 300`` builds both). Each question is
asked ``--repeats`` times through :meth:`Session.ask` (the reading on the synthetic copy, then the release, one charge),
each time for another analyst (no cached answer, also across runs), at ``--epsilon`` and delta 1e-6. Prints, per question, the formulation
chosen (or the refusal), the predicted relative error the reading chose it by (median 95% half-width over median group
value, on the copy), the measured median relative error per group (``|noisy - true| / max(true, 1)`` over the groups
shown, the true value computed here, custodian side, on the private database with the SQL as released; the median over
the repeats), the share of the true non-empty groups shown (recall: partition selection shows fewer; a public domain shows every
group, zeros included), and the median seconds of the ask. "eps 10%": the epsilon the preview's planner names for about
+-10% (``epsilon_for_10_percent``: the grouped release planned at each planner epsilon and priced on the copy; "-": none of
them), from one ``Session.preview`` before the asks (it spends nothing).
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid
from fractions import Fraction
from typing import Any

from pimento.errors import UserError
from pimento.release import Session

#: this run's tag in the analysts' names
RUN = uuid.uuid4().hex[:8]

QUESTIONS = (
    "How many patients per sex?",
    "How many visits per diagnosis?",
    "How many visits per diagnosis category?",
    "How many employees per department?",
    "How many prescriptions per medication?",
    "What is the average birth year of patients per sex?",
    "What is the total dose of medication orders?",
    "What is the average dose of medication orders per medication?",
)


def _truth(session: Session, sql: str, width: int, aggregate: str) -> dict[tuple[Any, ...], Fraction]:
    """The true value per group of the released SQL (custodian side: for measuring only)."""
    out: dict[tuple[Any, ...], Fraction] = {}
    for row in session.database.engine.execute(sql).rows:
        values = [Fraction(v if v is not None else 0) for v in row[width:]]
        if aggregate == "avg":
            out[tuple(row[:width])] = values[0] / values[1] if values[1] else Fraction(0)
        else:
            out[tuple(row[:width])] = values[0]
    return out


def measure(db: str, question: str, epsilon: str, repeats: int) -> dict[str, Any]:
    """One question asked ``repeats`` times (module docstring)."""
    errors, shown, seconds = [], [], []
    chosen, predicted = None, None
    with Session(db, analyst=f"grouped-ask-{RUN}-preview") as session:
        try:
            planned = session.preview(question, epsilon=epsilon, delta="1e-6").to_dict().get("epsilon_for_10_percent")
        except UserError:
            planned = None
    for i in range(repeats):
        with Session(db, analyst=f"grouped-ask-{RUN}-{i}") as session:  # a new analyst: no cached answer, also across runs
            start = time.perf_counter()
            try:
                answer = session.ask(question, epsilon=epsilon, delta="1e-6")
            except UserError as exc:
                return {"question": question, "refused": exc.one_line()}
            seconds.append(time.perf_counter() - start)
            data = answer.to_dict()
            if "groups" not in data:
                return {"question": question, "refused": "read as a plain count"}
            chosen = data["chosen_sql"]
            predicted = data["search"].get("synthetic_predicted_error")
            truth = _truth(session, data["sql"], len(data["group_by"]), data["aggregate"])
        rel = []
        for group in data["groups"]:
            true = truth.get(tuple(group["key"]), Fraction(0))
            if group["value_exact"] is not None:
                rel.append(abs(Fraction(group["value_exact"]) - true) / max(abs(true), Fraction(1)))
        errors.append(float(statistics.median(rel)) if rel else float("nan"))
        present = {k for k, v in truth.items() if v}
        shown.append(len(present & {tuple(g["key"]) for g in data["groups"]}) / max(len(present), 1))
    return {"question": question, "chosen": chosen, "predicted": predicted, "median_relative_error": statistics.median(errors),
            "groups_shown": statistics.median(shown), "seconds": statistics.median(seconds), "epsilon_for_10_percent": planned}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--epsilon", default="1")
    args = parser.parse_args()
    for question in QUESTIONS:
        row = measure(args.db, question, args.epsilon, args.repeats)
        if "refused" in row:
            print(f"| {question} | refused: {row['refused']} | | | | | |")
            continue
        predicted = "-" if row["predicted"] is None else f"{row['predicted']:.3g}"
        print(f"| {question} | `{row['chosen']}` | {predicted} | {row['epsilon_for_10_percent'] or '-'} | "
              f"{row['median_relative_error']:.3g} | {row['groups_shown']:.2f} | {row['seconds']:.2f} |")


if __name__ == "__main__":
    main()
