"""The search's reward, RS against predicted error (issue 26, item 3), on the DP-aware Text-to-SQL benchmark.

Run::

    python -m benchmarks.search_error_reward [--cache ~/.cache/pimento/dp_text2sql] [--limit N]
        [--methods gold-full,worst-full,full] [--rollouts 10] [--epsilon 1] [--draws 100] [--json OUT]

The questions, ground truth (real databases), synthetic copies and warm starts are those of
:mod:`benchmarks.dp_text2sql` (same cache; its ground truth is built there first when missing).
Each search runs twice with the same seed: ``rs`` compares formulations by RS on the copy (the
paper's reward, :data:`pimento.search.evaluate.RS_AS_ERROR`), ``error`` by the 95% half-width of
the noise of the mechanism the release would use (:class:`pimento.release.predicted_error.TupleUnitError`:
global Laplace for one relation, smooth at the copy's RS otherwise).

Metrics per method and reward: Acc, Is-Min and Joint as in dp_text2sql (RS on the real database);
Is-Min (noise) and Joint (noise): the chosen query's real half-width (its mechanism at its real RS)
is the least among the correct formulations'; the predicted half-width on the copy; the real
half-width; the realised mean absolute noise of ``--draws`` releases at the real RS (seeded); how
many questions changed their choice between the two rewards.

``--demo DB`` measures the demo question instead (``pimento demo``'s database and its synthetic
copy beside it, ``DB.synthetic.duckdb``), and the non-distinct counts of
:func:`benchmarks.synth_utility.formulations` as ``--seed-sql`` warm starts (:data:`DEMO_SEEDS`):
the search through ``pimento.release.ask.search_question`` with each reward, under the tuple unit (the database's ``pimento.toml``) and under
``unit = "Patient"`` (staff tables made public, as benchmarks/person_unit.py declares them,
``max_contribution`` 64); per choice its RS and predicted error on the copy, and the error of
``--draws`` releases on the private database (seeded): the tuple unit's mechanism at the private
RS, the person unit's plan on the copy measured and released on the private data.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import random
import statistics
import sys
import time
from fractions import Fraction
from pathlib import Path
from typing import Any

from benchmarks._spider import DEFAULT_DATA
from benchmarks.dp_text2sql import (
    GT_VERSION,
    RS_TOL,
    RealRS,
    _load,
    _Question,
    _save,
    build_ground_truth,
    load_items,
    question_with_gold,
    real_answer,
    score,
    synthetic_path,
)
from pimento.engines import open_engine
from pimento.errors import PimentoError
from pimento.mechanisms import GlobalLaplace, mechanism_for
from pimento.mechanisms.smooth import Mechanism
from pimento.nl import NotACountingQuestion, ValueIndex, translate
from pimento.release.predicted_error import TupleUnitError, estimated_half_width
from pimento.search import SensitivitySearch
from pimento.search.mcts import config_for_variant
from pimento.sql import CountQuery, parse_count_query

__all__ = ["main"]

REWARDS = ("rs", "error")
#: The demo's non-distinct counts (benchmarks/synth_utility.py) searched from their SQL with ``--demo``.
DEMO_SEEDS = ("visits per patient sex F", "orders in visits of F", "discharges of visits", "prescriptions signed by cardiologists",
              "orders in cardiology visits", "warfarin orders in visits of F")
METHODS = ("gold-full", "worst-full", "full")


def _half_width(mechanism: Mechanism, query: CountQuery, rs: float | None) -> float | None:
    """The 95% half-width of the release's noise for ``query`` at ``rs`` (None without RS or beyond the relation cap)."""
    if rs is None:
        return None
    try:
        return float(estimated_half_width(mechanism.for_relations(len(query.relations)), rs))
    except PimentoError:
        return None


def _realised(mechanism: Mechanism, query: CountQuery, rs: float, true: int, draws: int, seed: int) -> float:
    """Mean |release - true| over ``draws`` releases of ``true`` at ``rs`` (seeded: the same draws for both rewards)."""
    used = mechanism.for_relations(len(query.relations))
    rng = random.Random(seed)
    total = 0.0
    for _ in range(draws):
        out = used.release(true, used.gs if isinstance(used, GlobalLaplace) else rs, rng=rng)
        total += abs(float(out.release.value) - true)
    return total / draws


def _min_half_width(gt: dict[str, Any], mechanism: Mechanism, catalog: Any) -> float | None:
    best = None
    for f in gt["formulations"]:
        try:
            q = parse_count_query(f["sql"], catalog, dialect="sqlite")
        except PimentoError:
            continue
        hw = _half_width(mechanism, q, f["rs"])
        if hw is not None and (best is None or hw < best):
            best = hw
    return best


def _run(q: _Question, warm: list[CountQuery], reward: str, mechanism: Mechanism, rollouts: int) -> tuple[CountQuery | None, dict[str, Any]]:
    if not warm:
        return None, {"seconds": 0.0}
    config = config_for_variant("full", rollouts=rollouts, seed=0)
    model = TupleUnitError(mechanism) if reward == "error" else None
    t0 = time.perf_counter()
    try:
        result = SensitivitySearch(q.synthetic, q.catalog, beta=q.beta, config=config, error_model=model).run(list(warm))
    except PimentoError as exc:
        return None, {"error": exc.one_line(), "seconds": time.perf_counter() - t0}
    predicted = _half_width(mechanism, result.query, result.synthetic_rs)
    return result.query, {"seconds": time.perf_counter() - t0, "synthetic_rs": result.synthetic_rs, "predicted_hw": predicted,
                          "relations": len(result.query.relations)}


def _summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(rows)
    pct = lambda k: round(100 * sum(bool(r.get(k)) for r in rows) / n, 1) if n else 0.0  # noqa: E731
    real = [r["real_hw"] for r in rows if r.get("acc") and r.get("real_hw") is not None]
    pred = [r["predicted_hw"] for r in rows if r.get("predicted_hw") is not None]
    noise = [r["realised"] for r in rows if r.get("realised") is not None]
    return {
        "questions": n, "acc": pct("acc"), "is_min": pct("is_min"), "joint": pct("joint"),
        "is_min_noise": pct("is_min_noise"), "joint_noise": pct("joint_noise"),
        "predicted_hw_median": round(statistics.median(pred), 2) if pred else None,
        "real_hw_median": round(statistics.median(real), 2) if real else None,
        "real_hw_gm": round(math.exp(statistics.fmean(math.log(max(x, 1e-9)) for x in real)), 3) if real else None,
        "realised_abs_noise_mean": round(statistics.fmean(noise), 3) if noise else None,
        "one_relation": sum(r.get("relations") == 1 for r in rows),
        "seconds_mean": round(statistics.fmean(r["seconds"] for r in rows), 3) if rows else None,
    }


def run(args: argparse.Namespace, log: Any) -> dict[str, Any]:
    cache: Path = args.cache.expanduser()
    mechanism = mechanism_for(args.epsilon, args.delta)
    beta = mechanism.beta_float()
    sources = tuple(s.strip() for s in args.sources.split(",") if s.strip())
    items = load_items(args.data, sources, args.train_dbs)
    rs_cache = _load(cache / "real_rs.json", {})
    real_rs = RealRS(beta, rs_cache)
    params = {"version": GT_VERSION, "beta": beta, "sources": list(sources), "train_dbs": args.train_dbs}
    gt_doc = _load(cache / "ground_truth.json", {})
    if gt_doc.get("params") != params:
        gt_doc = {"params": params, "items": build_ground_truth(items, real_rs)}
        _save(cache / "ground_truth.json", gt_doc)
    gt = gt_doc["items"]
    chosen_items = [i for i in items if i.id in gt]
    if args.limit:
        chosen_items = chosen_items[:: max(1, len(chosen_items) // args.limit)][: args.limit]
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    status = _load(cache / "synthetic" / "status.json", {})
    rows: dict[tuple[str, str], list[dict[str, Any]]] = {(m, r): [] for m in methods for r in REWARDS}
    changed = {m: 0 for m in methods}
    examples: list[dict[str, Any]] = []
    indexes: dict[str, Any] = {}
    for n, item in enumerate(chosen_items):
        syn = synthetic_path(cache, item, epsilon=args.syn_epsilon, delta=args.syn_delta, status=status, log=log)
        if syn is None:
            continue
        engine = open_engine(syn, read_only=True)
        try:
            catalog = real_rs.catalog(item.db_path)
            q = question_with_gold(item, engine, catalog, beta, gt[item.id]["formulations"])
            if item.db_path not in indexes:
                indexes[item.db_path] = ValueIndex.from_engine(engine, catalog)
            try:
                q.parser = [c.query for c in translate(item.question, catalog, values=indexes[item.db_path], k=10)]
            except (NotACountingQuestion, PimentoError):
                q.parser = []
            least = _min_half_width(gt[item.id], mechanism, catalog)
            for m in methods:
                warm = {"gold-full": q.gold, "worst-full": q.worst, "full": q.parser}[m]
                sqls = {}
                for reward in REWARDS:
                    chosen, rec = _run(q, warm, reward, mechanism, args.rollouts)
                    rec.update(score(rec, gt[item.id], chosen, real_rs), id=item.id)
                    rec["real_hw"] = _half_width(mechanism, chosen, rec["rs_real"]) if chosen is not None else None
                    hw, low = rec["real_hw"], least
                    rec["is_min_noise"] = bool(hw is not None and low is not None and (abs(hw - low) <= RS_TOL * max(low, 1e-300) or (rec["acc"] and hw < low)))
                    rec["joint_noise"] = bool(rec["acc"] and rec["is_min_noise"])
                    if chosen is not None and rec["rs_real"] is not None:
                        true = real_answer(item.db_path, chosen)
                        if true is not None:
                            rec["realised"] = _realised(mechanism, chosen, rec["rs_real"], true, args.draws, seed=n)
                    sqls[reward] = chosen.to_sql("sqlite") if chosen is not None else None
                    rows[(m, reward)].append(rec)
                if sqls["rs"] != sqls["error"]:
                    changed[m] += 1
                    a, b = rows[(m, "rs")][-1], rows[(m, "error")][-1]
                    examples.append({"id": item.id, "method": m, "rs": sqls["rs"], "error": sqls["error"],
                                     "real_hw": [a.get("real_hw"), b.get("real_hw")], "rs_real": [a.get("rs_real"), b.get("rs_real")],
                                     "acc": [a.get("acc"), b.get("acc")]})
        finally:
            engine.close()
        if args.verbose:
            log(f"[{n + 1}/{len(chosen_items)}] {item.id}")
    real_rs.close()
    _save(cache / "real_rs.json", rs_cache)
    return {
        "params": {"epsilon": args.epsilon, "delta": args.delta, "rollouts": args.rollouts, "limit": args.limit, "draws": args.draws,
                   "sources": list(sources), "train_dbs": args.train_dbs},
        "methods": [{"method": m, "reward": r, **_summary(rows[(m, r)])} for m in methods for r in REWARDS],
        "changed": changed,
        "examples": examples,
    }


def demo_report(db: Path, *, epsilon: str, delta: str, rollouts: int, draws: int) -> dict[str, Any]:
    """The demo question under both rewards and both units (module docstring, ``--demo``)."""
    from benchmarks.synth_utility import formulations
    from pimento.demo.hospital import DEMO_QUESTION
    from pimento.engines.database import load_database
    from pimento.mechanisms.samplers import fixed_noise_for_tests
    from pimento.release.ask import open_synthetic, search_question
    from pimento.release.person_release import measure_and_release, plan_person_release
    from pimento.release.predicted_error import error_model
    from pimento.schema.synthetic import default_synthetic_path
    from pimento.sensitivity import residual_sensitivity

    database = load_database(db, read_only=True)
    copy = open_synthetic(default_synthetic_path(str(db)))
    mechanism = mechanism_for(epsilon, delta, share=database.settings.release.rs_bound_share)
    staff = ("Employee", "Supervises", "CareTeamMember")
    person_catalog = database.catalog.with_private([t for t in database.catalog.private_tables if t not in staff])
    person_settings = database.settings.model_copy(
        update={"privacy": database.settings.privacy.model_copy(update={"unit": "Patient", "max_contribution": 64})})
    units = {"tuple": (database.catalog, database.settings), "Patient": (person_catalog, person_settings)}
    seeds = dict(formulations())
    asks = [("demo question", DEMO_QUESTION, ())] + [(name, "", (seeds[name],)) for name in DEMO_SEEDS]
    out: dict[str, Any] = {"epsilon": epsilon, "delta": delta, "rows": []}
    try:
        for (name, question, seed_sql), (unit, (catalog, settings)) in itertools.product(asks, units.items()):
            model = error_model(mechanism, copy, catalog, settings)
            for reward in REWARDS:
                t0 = time.perf_counter()
                outcome = search_question(question, copy, catalog, beta=mechanism.beta_float(), seed_sql=seed_sql,
                                          config=config_for_variant("full", rollouts=rollouts, seed=0),
                                          error_model=model if reward == "error" else None)
                chosen = outcome.result.query
                row: dict[str, Any] = {"ask": name, "unit": unit, "reward": reward, "sql": outcome.result.sql,
                                       "seconds": round(time.perf_counter() - t0, 2),
                                       "synthetic_rs": outcome.result.synthetic_rs,
                                       "predicted_error": model.error(chosen, outcome.result.synthetic_rs)}
                true = int(database.engine.execute(chosen.to_sql(database.engine.dialect)).scalar() or 0)
                errors = []
                if unit == "tuple":
                    used = mechanism.for_relations(len(chosen.relations))
                    rs = used.gs if isinstance(used, GlobalLaplace) else residual_sensitivity(
                        database.engine, chosen, catalog, mechanism.beta_float(), attribution=False).rs
                    row["private_half_width"] = float(estimated_half_width(used, rs))
                    rng = random.Random(0)
                    errors = [abs(float(used.release(true, rs, rng=rng).release.value) - true) for _ in range(draws)]
                else:
                    planned = plan_person_release(chosen, catalog=catalog, settings=settings, epsilon=mechanism.privacy_cost().epsilon, copy=copy)
                    row["person_mechanism"] = planned.choice.mechanism
                    with fixed_noise_for_tests(random.Random(0)):
                        for _ in range(draws):
                            answer, _audit = measure_and_release(planned, database.engine, catalog)
                            errors.append(abs(float(Fraction(answer["value_exact"])) - true))
                row.update(true=true, realised_abs_error_mean=round(statistics.fmean(errors), 2),
                           realised_abs_error_p90=round(sorted(errors)[int(0.9 * (len(errors) - 1))], 2))
                out["rows"].append(row)
    finally:
        copy.close()
        database.close()
    return out


def markdown(report: dict[str, Any]) -> str:
    lines = [
        "| method | reward | Acc % | Is-Min % | Joint % | Is-Min (noise) % | Joint (noise) % | predicted half-width on copy (median) "
        "| real half-width (median, gm over correct) | realised mean abs noise | one-relation choices | s / question |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for m in report["methods"]:
        lines.append(
            f"| {m['method']} | {m['reward']} | {m['acc']} | {m['is_min']} | {m['joint']} | {m['is_min_noise']} | {m['joint_noise']} "
            f"| {m['predicted_hw_median']} | {m['real_hw_median']}, {m['real_hw_gm']} | {m['realised_abs_noise_mean']} | {m['one_relation']} "
            f"| {m['seconds_mean']} |"
        )
    lines.append(f"- choices that differ between the rewards, per method: {report['changed']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--cache", type=Path, default=Path("~/.cache/pimento/dp_text2sql"))
    parser.add_argument("--sources", default="dev,train,ambiqt")
    parser.add_argument("--train-dbs", type=int, default=12)
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument("--rollouts", type=int, default=10)
    parser.add_argument("--epsilon", default="1")
    parser.add_argument("--delta", default="1e-6")
    parser.add_argument("--syn-epsilon", default="1.6")
    parser.add_argument("--syn-delta", default="1e-6")
    parser.add_argument("--draws", type=int, default=100, help="releases drawn per chosen query for the realised noise")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--demo", type=Path, default=None, help="measure the demo question on this demo database instead")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    if args.demo is not None:
        found = demo_report(args.demo, epsilon=args.epsilon, delta=args.delta, rollouts=args.rollouts, draws=args.draws)
        print(json.dumps(found, indent=1, default=str))
        if args.json:
            args.json.write_text(json.dumps(found, indent=1, default=str))
        return
    report = run(args, lambda s: print(s, file=sys.stderr, flush=True))
    if args.json:
        args.json.write_text(json.dumps(report, indent=1, default=str))
    print(markdown(report))


if __name__ == "__main__":
    main()
