"""Relative error of counts released under the person unit on the demo hospital (issue 26).

Usage::

    python -m benchmarks.person_unit --patients 10000 --draws 200 [--gs 64] [--private DB --copy SYN] [--json OUT]

Builds the demo hospital twice: seed 0 is the "private" database; seed 1, the same generator at
another seed, stands in for the synthetic copy (``--private DB --copy SYN`` use a database and its
real copy from ``pimento synth`` instead, as the release would).
Staff tables (``Employee``, ``Supervises``, ``CareTeamMember``) are declared public: under
``unit = "Patient"`` every private relation must reach a patient. For each formulation of
``benchmarks/synth_utility.py`` (the demo's questions and their alternatives) it computes the
person contributions (``sensitivity/person.py``) on both databases and, at each epsilon, draws
``--draws`` exact releases of:

* ``r2t``: R2T with GS = ``--gs`` (1 for COUNT(DISTINCT person));
* ``truncation``: one threshold chosen on the stand-in's contributions (``choose_threshold``);
* ``auto``: per query, the one of the two with the smaller predicted error on the stand-in.

It prints the median and 90th percentile of |release - true| / true over all draws of the
questions whose true count is at least 100, and the same per question in the JSON output.

``--through-release`` measures the release itself instead (issue 26, the person unit wired):
``Session.release_sql`` on the demo at ``--epsilon`` under ``[privacy] unit = "Patient"`` (staff
tables public, the stand-in copy charged to the ledger as `pimento synth` would, answer cache
off), each formulation ``--draws`` times, beside the tuple unit's residual-sensitivity release of
the same SQL on the same deployment (same public tables, ``--delta``); the mechanism each answer
states is counted.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.synth_utility import formulations
from pimento.demo.hospital import PUBLIC_TABLES, TABLES, create_demo
from pimento.engines.duckdb_engine import DuckDBEngine
from pimento.errors import UnsupportedQuery
from pimento.mechanisms.r2t import certified_lp_count, predicted_error, r2t_plan, r2t_release, truncated_count
from pimento.mechanisms.samplers import fixed_noise_for_tests
from pimento.mechanisms.truncation import choose_threshold, truncation_plan, truncation_predicted_error, truncation_release
from pimento.schema import Catalog
from pimento.sensitivity.person import (
    Contributions,
    owner_expressions,
    person_contributions,
    person_paths,
    rows_with_several_owners,
)
from pimento.sql import parse_count_query

STAFF = ("Employee", "Supervises", "CareTeamMember")
EPSILONS = (Fraction(1, 2), Fraction(1), Fraction(2))


_LP_CACHE: dict[tuple[int, int], int] = {}


def _truncated(c: Contributions, tau: int, lp: bool) -> int:
    if lp and not c.one_person:
        key = (id(c), tau)
        if key not in _LP_CACHE:
            _LP_CACHE[key] = certified_lp_count(c.owner_sets, c.public, tau)
        return _LP_CACHE[key]
    return truncated_count(c.counts, c.public, tau)


def _open(path: Path) -> tuple[DuckDBEngine, Catalog]:
    engine = DuckDBEngine(str(path), read_only=True)
    private = [t for t in TABLES if t not in PUBLIC_TABLES and t not in STAFF]
    return engine, engine.introspect().with_private(private)


def run(
    patients: int,
    draws: int,
    gs: int,
    seed: int,
    copy_path: Path | None = None,
    private_path: Path | None = None,
    one_person_per_row: bool = True,
) -> dict[str, Any]:
    folder = Path(tempfile.mkdtemp(prefix="person_unit_"))
    if private_path is None:
        private_path = folder / "private" / "hospital.duckdb"
        create_demo(private_path, patients=patients, seed=0)
    if copy_path is None:
        copy_path = folder / "copy" / "hospital.duckdb"
        create_demo(copy_path, patients=patients, seed=1)
    private, catalog = _open(private_path)
    copy, _ = _open(copy_path)
    paths = person_paths(catalog, "Patient", one_person_per_row=one_person_per_row)
    several = rows_with_several_owners(private, catalog, paths) if one_person_per_row else ()
    if several:
        raise SystemExit(f"one_person_per_row does not hold on the demo: {several}")
    rng = random.Random(seed)
    rows: list[dict[str, Any]] = []
    started = time.perf_counter()
    for name, sql in formulations():
        query = parse_count_query(sql, catalog)
        lp = len(owner_expressions(query, catalog, paths)) > 1
        try:
            real = person_contributions(private, query, catalog, paths)
        except UnsupportedQuery as exc:
            rows.append({"query": name, "refused": exc.message})
            continue
        syn = person_contributions(copy, query, catalog, paths)
        if private.execute(query.to_sql(private.dialect)).scalar() != real.total:
            raise SystemExit(f"{name}: the contributions do not add up to the count")
        q_gs = 1 if query.count.distinct else gs
        row: dict[str, Any] = {"query": name, "true": real.total, "lp": lp, "largest": real.largest, "gs": q_gs}
        for eps in EPSILONS:
            r2t = r2t_plan(eps, q_gs, lp=lp)
            r2t_true = [_truncated(real, t, lp) for t in r2t.thresholds]
            r2t_syn = [_truncated(syn, t, lp) for t in r2t.thresholds]
            tau = choose_threshold(lambda t: _truncated(syn, t, lp), syn.total, eps, gs=q_gs, lp=lp)  # noqa: B023
            trunc = truncation_plan(eps, tau, lp=lp)
            trunc_true = _truncated(real, tau, lp)
            predicted = {
                "r2t": predicted_error(r2t, r2t_syn, syn.total),
                "truncation": truncation_predicted_error(trunc, _truncated(syn, tau, lp), syn.total),
            }
            with fixed_noise_for_tests(rng):
                released = {
                    "r2t": [r2t_release(r2t, r2t_true) for _ in range(draws)],
                    "truncation": [truncation_release(trunc, trunc_true) for _ in range(draws)],
                }
            released["auto"] = released[min(predicted, key=predicted.__getitem__)]
            row[str(eps)] = {
                "tau": tau,
                "predicted_on_copy": predicted,
                "relative_errors": {k: [abs(v - real.total) / max(real.total, 1) for v in vs] for k, vs in released.items()},
            }
        rows.append(row)
    summary: dict[str, Any] = {}
    kept = [r for r in rows if "true" in r and r["true"] >= 100]
    for eps in EPSILONS:
        for mech in ("r2t", "truncation", "auto"):
            errs = np.array([e for r in kept for e in r[str(eps)]["relative_errors"][mech]])
            summary[f"{eps} {mech}"] = {"median": float(np.median(errs)), "p90": float(np.quantile(errs, 0.9))}
    return {
        "patients": patients,
        "draws": draws,
        "gs": gs,
        "questions": len(kept),
        "refused": [r["query"] for r in rows if "refused" in r],
        "seconds": time.perf_counter() - started,
        "summary": summary,
        "rows": [{k: v for k, v in r.items()} for r in rows],
    }


def _deployment_config(text: str, unit: str) -> str:
    """The demo's pimento.toml with the staff tables public, ``unit``, and a ledger for many releases (no cache)."""
    private = [t for t in TABLES if t not in PUBLIC_TABLES and t not in STAFF]
    quoted = lambda names: ", ".join(f'"{n}"' for n in names)  # noqa: E731
    lines = []
    for line in text.splitlines():
        if line.startswith("private = "):
            line = f"private = [{quoted(private)}]"
        elif line.startswith("public = "):
            line = f"public = [{quoted((*PUBLIC_TABLES, *STAFF))}]\nunit = \"{unit}\"\nmax_contribution = 64"
        lines.append(line)
    return "\n".join(lines) + '\n\n[ledger]\nepsilon_cap = "1000000"\ndelta_cap = "0.9"\nanalyst_share = "1"\nanswer_cache = false\n'


def _charged_standin(db: Path, patients: int) -> None:
    """The demo at seed 1 beside ``db`` as its synthetic copy, charged to its ledger as `pimento synth` would."""
    import duckdb

    from pimento.engines.database import load_database
    from pimento.mechanisms import Budget, Ledger
    from pimento.mechanisms.ledger import database_key

    made = db.parent / "made" / "hospital.duckdb"
    made.parent.mkdir()
    create_demo(made, patients=patients, seed=1)
    database = load_database(db)
    location = str(database.location)
    con = duckdb.connect(str(made))
    con.execute("CREATE TABLE _pimento_synth_meta (epsilon VARCHAR, delta VARCHAR, root VARCHAR, copy_id VARCHAR, "
                "database_key VARCHAR, details VARCHAR)")
    con.execute("INSERT INTO _pimento_synth_meta VALUES ('1.6', '0.000001', 'Patient', 'bench-copy', ?, '{}')", [database_key(location)])
    con.close()
    with Ledger.for_database(location, database.settings) as ledger:
        ledger.charge_synthetic(location, Budget.of("1.6", "0.000001"), copy_id="bench-copy")
    database.close()
    made.rename(db.parent / "hospital.synthetic.duckdb")


def _real_copy(db: Path) -> float:
    """A real `pimento synth` copy of ``db`` beside it (epsilon 1.6, delta 1e-6, charged to its ledger); its seconds."""
    from pimento.engines.database import load_database
    from pimento.release.synthetic import make_copy

    started = time.perf_counter()
    database = load_database(db)
    try:
        make_copy(database, db.parent / "hospital.synthetic.duckdb", "1.6", "1e-6", seed=0).engine.close()
    finally:
        database.close()
    return time.perf_counter() - started


def through_release(patients: int, draws: int, seed: int, epsilon: str, delta: str, synth: bool = False) -> dict[str, Any]:
    """Relative errors of ``Session.release_sql`` under the person unit and the tuple unit (module docs).

    ``synth``: the copy is a real `pimento synth` copy of the database, not the demo at another seed."""
    from pimento.errors import UserError
    from pimento.release.session import Session

    folder = Path(tempfile.mkdtemp(prefix="person_release_"))
    db = folder / "hospital.duckdb"
    create_demo(db, patients=patients, seed=0)
    demo_toml = (folder / "pimento.toml").read_text(encoding="utf-8")
    (folder / "pimento.toml").write_text(_deployment_config(demo_toml, "Patient"), encoding="utf-8")
    synth_seconds = _real_copy(db) if synth else None
    if not synth:
        _charged_standin(db, patients)
    engine = DuckDBEngine(str(db), read_only=True)
    truth = {name: int(engine.execute(sql).scalar()) for name, sql in formulations()}
    engine.close()
    rows: dict[str, dict[str, Any]] = {name: {"true": truth[name]} for name, _ in formulations()}
    started = time.perf_counter()
    for unit, budget in (("Patient", (epsilon, None)), ("tuple", (epsilon, delta))):
        (folder / "pimento.toml").write_text(_deployment_config(demo_toml, unit), encoding="utf-8")
        with fixed_noise_for_tests(random.Random(seed)), Session(db, analyst="bench") as session:
            for name, sql in formulations():
                errors, mechanisms = [], []
                for _ in range(draws):
                    try:
                        answer = session.release_sql(sql, *budget)
                    except UserError as exc:
                        rows[name][unit] = {"refused": exc.one_line()}
                        break
                    errors.append(abs(float(answer.value or 0) - truth[name]) / max(truth[name], 1))
                    mechanisms.append(str(answer.mechanism))
                else:
                    rows[name][unit] = {"relative_errors": errors, "mechanisms": sorted(set(mechanisms)),
                                        "reason": answer.person_release.reason if answer.person_release else None}
    summary: dict[str, Any] = {}
    for unit in ("Patient", "tuple"):
        kept = [r[unit]["relative_errors"] for r in rows.values() if r["true"] >= 100 and "relative_errors" in r[unit]]
        errs = np.array([e for k in kept for e in k])
        summary[unit] = {"questions": len(kept), "median": float(np.median(errs)), "p90": float(np.quantile(errs, 0.9))}
    return {"patients": patients, "draws": draws, "epsilon": epsilon, "delta_tuple": delta, "copy": "pimento synth" if synth else "stand-in",
            "synth_seconds": synth_seconds,
            "seconds": time.perf_counter() - started, "summary": summary, "rows": rows}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--patients", type=int, default=10_000)
    parser.add_argument("--draws", type=int, default=200)
    parser.add_argument("--gs", type=int, default=64, help="[privacy] max_contribution (R2T's GS)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the benchmark's noise (a test source, not a release)")
    parser.add_argument("--private", type=Path, default=None, help="a demo hospital database (default: built, seed 0)")
    parser.add_argument("--copy", type=Path, default=None, help="its synthetic copy (default: the demo at seed 1 as a stand-in)")
    parser.add_argument("--several", action="store_true", help="one_person_per_row = false: every chain counts (R2T's LP)")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--through-release", action="store_true", help="measure Session.release_sql (person and tuple unit)")
    parser.add_argument("--epsilon", default="1", help="--through-release: epsilon of each release")
    parser.add_argument("--delta", default="1e-6", help="--through-release: delta of the tuple unit's releases")
    parser.add_argument("--synth", action="store_true", help="--through-release: a real `pimento synth` copy (slow), not the stand-in")
    args = parser.parse_args(argv)
    if args.through_release:
        res = through_release(args.patients, args.draws, args.seed, args.epsilon, args.delta, args.synth)
        print(f"{args.patients} patients, {args.draws} draws, epsilon {args.epsilon}, copy: {res['copy']}; {res['seconds']:.1f} s")
        for unit, v in res["summary"].items():
            print(f"  unit {unit:>8}: {v['questions']} questions with a true count >= 100, median {v['median']:.4f}, p90 {v['p90']:.4f}")
        for name, r in res["rows"].items():
            cells = []
            for unit in ("Patient", "tuple"):
                got = r.get(unit, {})
                cells.append("refused" if "refused" in got else f"{np.median(got['relative_errors']):.4f} {','.join(got['mechanisms'])}")
            print(f"  {name[:40]:40} true {r['true']:>6}  person {cells[0]:32} tuple {cells[1]}")
        if args.json:
            args.json.write_text(json.dumps(res, indent=1), encoding="utf-8")
        return
    out = run(args.patients, args.draws, args.gs, args.seed, args.copy, args.private, not args.several)
    print(f"{out['questions']} questions with a true count >= 100; refused: {out['refused'] or 'none'}; {out['seconds']:.1f} s")
    print(f"{'epsilon':>8} {'mechanism':>11} {'median':>8} {'p90':>8}")
    for key, v in out["summary"].items():
        eps, mech = key.split()
        print(f"{eps:>8} {mech:>11} {v['median']:>8.3f} {v['p90']:>8.3f}")
    for r in out["rows"]:
        if "true" in r:
            one = r["1"]
            print(f"  {r['query'][:45]:45} true {r['true']:>6} max c_p {r['largest']:>3} tau(eps=1) {one['tau']:>3} lp {r['lp']}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
