"""Side-by-side noise of Pimento's DP release and SmartNoise SQL on the same counts.

    python -m benchmarks.smartnoise_compare --snpython /tmp/snvenv/bin/python [--json]

SmartNoise SQL (PyPI ``smartnoise-sql`` 1.0.10) must live in a *separate* virtual
environment (it pins its own OpenDP and pandas); ``--snpython`` names its interpreter and
the comparison runs it in a subprocess on CSV copies of the same generated data.

Workload, on a generated shop (customers 1-n orders 1-n lineitems, every relation private):

* single-table counts (SmartNoise: one row per user, ``max_ids = 1``, ``censor_dims`` off);
* the orders of customers in one region as a *pre-joined view* for SmartNoise, with a
  per-user bound ``max_ids = k`` (k = the true maximum, and k = 5 chosen a priori), and as the
  join ``orders JOIN customers`` for Pimento;
* multiway joins (orders-customers-lineitems) that SmartNoise refuses, answered by Pimento.

For each query: the true count, SmartNoise's empirical noise standard deviation and mean
error over ``--sn-reps`` runs at epsilon = 1, and Pimento's residual sensitivity and noise
standard deviation (empirical over ``--reps`` draws of the exact sampler, and the law's
exact value) at epsilon = 1 with delta = 1e-5 (Laplace) and without delta (pure epsilon).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import random
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from pimento.mechanisms import GlobalLaplace, mechanism_for, mechanism_for_query
from pimento.mechanisms.samplers import default_rng
from pimento.release import Session
from pimento.sensitivity import residual_sensitivity
from pimento.sql import parse_count_query

__all__ = ["generate_shop", "run", "main"]

EPSILON = "1"
DELTA = "1e-5"


def generate_shop(folder: Path, *, customers: int = 2000, seed: int = 7) -> dict[str, Path]:
    """A DuckDB shop and CSV copies (including the pre-joined orders view). Deterministic."""
    rng = random.Random(seed)
    regions = ["north", "south", "east", "west"]
    cust = [(i, rng.choice(regions)) for i in range(customers)]
    orders: list[tuple[int, int, str]] = []
    for cid, _ in cust:
        r = rng.random()
        n = rng.randint(0, 3) if r < 0.7 else rng.randint(4, 10) if r < 0.95 else rng.randint(11, 30)
        for _ in range(n):
            orders.append((len(orders), cid, rng.choice(["shipped", "open", "returned"])))
    items: list[tuple[int, int, int]] = []
    for oid, _cid, _status in orders:
        for _ in range(rng.randint(1, 5)):
            items.append((len(items), oid, rng.randint(1, 9)))
    folder.mkdir(parents=True, exist_ok=True)
    region = dict(cust)
    paths = {name: folder / f"{name}.csv" for name in ("customers", "orders", "lineitems", "orders_view")}
    _write_csv(paths["customers"], ["id", "region"], cust)
    _write_csv(paths["orders"], ["id", "customer_id", "status"], orders)
    _write_csv(paths["lineitems"], ["id", "order_id", "qty"], items)
    _write_csv(paths["orders_view"], ["order_id", "customer_id", "region", "status"], [(o, c, region[c], s) for o, c, s in orders])
    db = folder / "shop.duckdb"
    if db.exists():
        db.unlink()
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, region VARCHAR)")
    con.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers(id), status VARCHAR)")
    con.execute("CREATE TABLE lineitems (id INTEGER PRIMARY KEY, order_id INTEGER REFERENCES orders(id), qty INTEGER)")
    for table in ("customers", "orders", "lineitems"):
        con.execute(f"INSERT INTO {table} SELECT * FROM read_csv(?, header = true)", [str(paths[table])])
    con.close()
    paths["db"] = db
    return paths


def _write_csv(path: Path, header: list[str], rows: list[tuple[Any, ...]]) -> None:
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows(rows)


# Runs inside the SmartNoise virtual environment: reads a spec on stdin, prints JSON.
_SN_RUNNER = r'''
import json, sys, time
import pandas as pd, numpy as np, snsql
from snsql import Privacy
spec = json.load(sys.stdin)
frames = {f"PUBLIC.{name}": pd.read_csv(t["csv"]) for name, t in spec["tables"].items()}
out = []
for q in spec["queries"]:
    meta = {}
    for name, t in spec["tables"].items():
        cols = {c: {"name": c, "type": t["types"][c]} for c in t["types"]}
        cols[t["private_id"]]["private_id"] = True
        max_ids = q["max_ids"] if name == q["table"] else t["max_ids"]
        meta[name] = {"max_ids": max_ids, "censor_dims": False, "row_privacy": False, **cols}
    privacy = Privacy(epsilon=spec["epsilon"], delta=spec["delta"])
    row = {"name": q["name"], "sql": q["sql"], "max_ids": q["max_ids"]}
    try:
        reader = snsql.from_df(frames, privacy=privacy, metadata={"Collection": {"PUBLIC": meta}})
        started = time.perf_counter()
        values = [float(reader.execute(q["sql"])[1][0]) for _ in range(q["reps"])]
        row["seconds_per_query"] = (time.perf_counter() - started) / q["reps"]
        row["values"] = values
        row["cost"] = [float(x) for x in reader.get_privacy_cost([q["sql"]])]
    except Exception as exc:
        first = str(exc).splitlines()[0] if str(exc) else ""
        row["error"] = f"{type(exc).__name__}: {first.split(': [<')[0]}"
    out.append(row)
print(json.dumps(out))
'''


@dataclass(frozen=True)
class Query:
    name: str
    pimento_sql: str
    sn_table: str | None = None
    sn_sql: str | None = None
    sn_max_ids: int = 1


def _queries(max_orders: int) -> list[Query]:
    view = "SELECT COUNT(*) AS n FROM PUBLIC.orders_view WHERE region = 'north'"
    join2 = "SELECT COUNT(*) FROM orders JOIN customers ON orders.customer_id = customers.id WHERE customers.region = 'north'"
    return [
        Query("customers", "SELECT COUNT(*) FROM customers", "customers", "SELECT COUNT(*) AS n FROM PUBLIC.customers"),
        Query("customers north", "SELECT COUNT(*) FROM customers WHERE region = 'north'", "customers", "SELECT COUNT(*) AS n FROM PUBLIC.customers WHERE region = 'north'"),
        Query("orders shipped", "SELECT COUNT(*) FROM orders WHERE status = 'shipped'", "orders", "SELECT COUNT(*) AS n FROM PUBLIC.orders WHERE status = 'shipped'"),
        Query(f"orders of north customers (view, k={max_orders})", join2, "orders_view", view, max_orders),
        Query("orders of north customers (view, k=5)", join2, "orders_view", view, 5),
        Query(
            "orders JOIN customers (refused by SmartNoise)",
            join2,
            "orders",
            "SELECT COUNT(*) AS n FROM PUBLIC.orders JOIN PUBLIC.customers ON orders.customer_id = customers.id WHERE customers.region = 'north'",
        ),
        Query(
            "lineitems JOIN orders JOIN customers (refused by SmartNoise)",
            "SELECT COUNT(*) FROM lineitems JOIN orders ON lineitems.order_id = orders.id JOIN customers ON orders.customer_id = customers.id WHERE customers.region = 'north'",
            "orders",
            "SELECT COUNT(*) AS n FROM PUBLIC.lineitems JOIN PUBLIC.orders ON lineitems.order_id = orders.id"
            " JOIN PUBLIC.customers ON orders.customer_id = customers.id WHERE customers.region = 'north'",
        ),
        Query(
            "lineitems JOIN orders, status shipped",
            "SELECT COUNT(*) FROM lineitems JOIN orders ON lineitems.order_id = orders.id WHERE orders.status = 'shipped'",
        ),
    ]


def _smartnoise(snpython: str, paths: dict[str, Path], queries: list[Query], reps: int, max_orders: int) -> dict[str, dict[str, Any]]:
    tables = {
        "customers": {"csv": str(paths["customers"]), "private_id": "id", "max_ids": 1, "types": {"id": "int", "region": "string"}},
        "orders": {  # row-level privacy for orders, the same neighbour relation as Pimento's
            "csv": str(paths["orders"]),
            "private_id": "id",
            "max_ids": 1,
            "types": {"id": "int", "customer_id": "int", "status": "string"},
        },
        "lineitems": {
            "csv": str(paths["lineitems"]),
            "private_id": "order_id",
            "max_ids": 5,
            "types": {"id": "int", "order_id": "int", "qty": "int"},
        },
        "orders_view": {
            "csv": str(paths["orders_view"]),
            "private_id": "customer_id",
            "max_ids": max_orders,
            "types": {"order_id": "int", "customer_id": "int", "region": "string", "status": "string"},
        },
    }
    spec = {
        "epsilon": float(EPSILON),
        "delta": float(DELTA),
        "tables": tables,
        "queries": [{"name": q.name, "table": q.sn_table, "sql": q.sn_sql, "max_ids": q.sn_max_ids, "reps": reps} for q in queries if q.sn_sql],
    }
    proc = subprocess.run([snpython, "-c", _SN_RUNNER], input=json.dumps(spec), capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        raise RuntimeError(f"SmartNoise runner failed: {proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else proc.returncode}")
    return {row["name"]: row for row in json.loads(proc.stdout)}


def run(*, snpython: str | None, reps: int = 2000, sn_reps: int = 300, customers: int = 2000, folder: Path | None = None) -> dict[str, Any]:
    folder = folder or Path(tempfile.mkdtemp(prefix="pimento-sn-"))
    paths = generate_shop(folder, customers=customers)
    (folder / "pimento.toml").write_text('[ledger]\nepsilon_cap = "1000"\ndelta_cap = "0.01"\n')
    con = duckdb.connect(str(paths["db"]), read_only=True)
    max_orders = int(con.execute("SELECT MAX(n) FROM (SELECT COUNT(*) AS n FROM orders GROUP BY customer_id)").fetchall()[0][0])
    con.close()
    queries = _queries(max_orders)
    sn = _smartnoise(snpython, paths, queries, sn_reps, max_orders) if snpython else {}
    laplace, quartic = mechanism_for(EPSILON, DELTA), mechanism_for(EPSILON)
    rng = default_rng()
    rows = []
    with Session(str(paths["db"]), analyst="bench") as session:
        engine, catalog = session.database.engine, session.database.catalog
        for q in queries:
            query = parse_count_query(q.pimento_sql, catalog)
            true = int(engine.execute(query.to_sql(engine.dialect)).scalar())
            row: dict[str, Any] = {"query": q.name, "pimento_sql": q.pimento_sql, "true": true}
            for label, mech in (("laplace", laplace), ("quartic", quartic)):
                started = time.perf_counter()
                rs = residual_sensitivity(engine, query, catalog, mech.beta_float(), attribution=False).rs
                rs_seconds = time.perf_counter() - started
                errors = [float(mech.release(true, rs, rng=rng).release.value - true) for _ in range(reps)]
                scale = mech.scale(rs)
                row[label] = {
                    "rs": float(rs),
                    "scale": float(scale),
                    "std_law": float(scale) * (math.sqrt(2) if label == "laplace" else 1.0),
                    "std_empirical": statistics.pstdev(errors),
                    "mean_error": statistics.fmean(errors),
                    "rs_seconds": rs_seconds,
                }
            # What `pimento sql` uses: plain Laplace at 1/eps for one relation, smooth Laplace for joins.
            used = mechanism_for_query(EPSILON, DELTA, relations=len(query.relations))
            sens = used.gs if isinstance(used, GlobalLaplace) else residual_sensitivity(engine, query, catalog, used.beta_float(), attribution=False).rs
            errors = [float(used.release(true, sens, rng=rng).release.value - true) for _ in range(reps)]
            row["released"] = {
                "mechanism": type(used).__name__,
                "std_law": float(used.scale(sens)) * math.sqrt(2),
                "std_empirical": statistics.pstdev(errors),
                "mean_error": statistics.fmean(errors),
                "delta_spent": float(used.privacy_cost().delta),
            }
            end_to_end = session.release_sql(q.pimento_sql, EPSILON, DELTA)
            row["session_release"] = {"value": end_to_end.to_dict()["value"], "interval": end_to_end.to_dict()["interval"]}
            s = sn.get(q.name)
            if s is not None:
                if "error" in s:
                    row["smartnoise"] = {"error": s["error"]}
                else:
                    errs = [v - true for v in s["values"]]
                    row["smartnoise"] = {
                        "max_ids": s["max_ids"],
                        "std_empirical": statistics.pstdev(errs),
                        "mean_error": statistics.fmean(errs),
                        "cost": s["cost"],
                        "seconds_per_query": s["seconds_per_query"],
                    }
            rows.append(row)
    return {"epsilon": EPSILON, "delta": DELTA, "customers": customers, "max_orders_per_customer": max_orders, "reps": reps, "sn_reps": sn_reps, "rows": rows}


def _table(result: dict[str, Any]) -> str:
    lines = [
        "| query | true | SmartNoise std (mean err) | Pimento RS | `pimento sql` mechanism: std law / measured (mean err) | Pimento smooth Laplace std: law / measured (mean err) | Pimento 1/(1+z^4) std: law / measured |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        s = r.get("smartnoise")
        if s is None:
            sn = "not run"
        elif "error" in s:
            sn = f"refused: {s['error'][:70]}"
        else:
            sn = f"{s['std_empirical']:.2f} ({s['mean_error']:+.2f}), max_ids={s['max_ids']}"
        lap, qu, rel = r["laplace"], r["quartic"], r["released"]
        used = f"{rel['mechanism']}: {rel['std_law']:.2f} / {rel['std_empirical']:.2f} ({rel['mean_error']:+.2f})"
        lines.append(
            f"| {r['query']} | {r['true']} | {sn} | {lap['rs']:.3g} | {used} | {lap['std_law']:.2f} / {lap['std_empirical']:.2f} ({lap['mean_error']:+.2f}) | {qu['std_law']:.1f} / {qu['std_empirical']:.1f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--snpython", default=None, help="python of a venv with smartnoise-sql 1.0.10 (omit: Pimento only)")
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--sn-reps", type=int, default=300)
    parser.add_argument("--customers", type=int, default=2000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    result = run(snpython=args.snpython, reps=args.reps, sn_reps=args.sn_reps, customers=args.customers)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"epsilon={result['epsilon']} delta={result['delta']} customers={result['customers']} max orders per customer={result['max_orders_per_customer']}")
        print(_table(result))


if __name__ == "__main__":
    main()
