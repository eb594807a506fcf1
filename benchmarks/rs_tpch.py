"""Benchmark: residual sensitivity on TPC-H chains (DuckDB) and the envelope maximisation alone.

    python -m benchmarks.rs_tpch --sf 0.1 1            # chains of 3, 4, 5 relations
    python -m benchmarks.rs_tpch --envelope-only       # envelope for m = 2..6 at beta = 0.01
    python -m benchmarks.rs_tpch --sf 1 --keys yes     # only with the TPC-H primary keys declared
    python -m benchmarks.rs_tpch --demo --beta 0.1     # per-call latency on the demo hospital

Chains (every relation private, the conservative default):
  3: customer - orders - lineitem
  4: nation - customer - orders - lineitem
  5: region - nation - customer - orders - lineitem
Each chain runs twice (``--keys both``): on the database as dbgen writes it, with no catalog
(nothing is known to be unique), and on a copy that declares the TPC-H primary keys, with the
catalog the engine reports (GROUP BYs on keys are skipped).
Ratio = (time of residual_sensitivity: all T_E, envelope, Shapley) / (time of the COUNT query).
Times are medians over ``--repeat`` runs after one warm-up run of each.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import random
import statistics
import time
from pathlib import Path

import duckdb

from pimento.demo import DEMO_SQL_ORDERS, DEMO_SQL_PRESCRIPTION, create_demo
from pimento.engines.database import load_database
from pimento.engines.duckdb_engine import DuckDBEngine
from pimento.sensitivity import maximize_envelope, residual_sensitivity
from pimento.sql import parse_count_query
from pimento.sql.ir import Attribute, CountQuery, JoinCondition, Relation

CHAIN = [
    ("region", "r_regionkey", None),
    ("nation", "n_nationkey", ("n_regionkey", "region", "r_regionkey")),
    ("customer", "c_custkey", ("c_nationkey", "nation", "n_nationkey")),
    ("orders", "o_orderkey", ("o_custkey", "customer", "c_custkey")),
    ("lineitem", None, ("l_orderkey", "orders", "o_orderkey")),
]


def chain_query(length: int) -> CountQuery:
    tables = CHAIN[len(CHAIN) - length :]
    joins = []
    for table, _key, ref in tables:
        if ref is not None and any(t == ref[1] for t, _, _ in tables):
            joins.append(JoinCondition(Attribute(table, ref[0]), Attribute(ref[1], ref[2])))
    return CountQuery(tuple(Relation(t, t) for t, _, _ in tables), tuple(joins))


#: DuckDB memory limit for generating TPC-H data (SF 10 peaked at 3.4 GB under a 6 GB limit).
DBGEN_MEMORY_LIMIT = "6GB"


def tpch_database(sf: float, folder: Path) -> Path:
    path = folder / f"pimento_tpch_sf{sf:g}.duckdb"
    if path.exists():
        return path
    import duckdb_extension_tpch

    ext = Path(duckdb_extension_tpch.__file__).parent / "extensions" / f"v{duckdb.__version__}" / "tpch.duckdb_extension"
    # Generated under a temporary name and renamed when complete: a killed run leaves no file that
    # a later run would take for a finished database. The memory limit keeps dbgen from taking
    # DuckDB's default (80% of the machine) on a shared box.
    partial = path.with_suffix(".partial")
    partial.unlink(missing_ok=True)
    con = duckdb.connect(str(partial), config={"allow_unsigned_extensions": "true", "memory_limit": DBGEN_MEMORY_LIMIT})
    try:
        con.execute(f"LOAD '{ext}'")
        con.execute(f"CALL dbgen(sf={sf})")
        for table in ("part", "partsupp", "supplier"):
            con.execute(f"DROP TABLE IF EXISTS {table}")
    finally:
        con.close()
    partial.rename(path)
    return path


#: TPC-H primary keys (specification, clause 1.4.2) of the tables the chains use.
PRIMARY_KEYS = {
    "region": ("r_regionkey",),
    "nation": ("n_nationkey",),
    "customer": ("c_custkey",),
    "orders": ("o_orderkey",),
    "lineitem": ("l_orderkey", "l_linenumber"),
}


def keyed_database(sf: float, folder: Path) -> Path:
    """A copy of the TPC-H database with its primary keys declared (DuckDB enforces them)."""
    path = folder / f"pimento_tpch_sf{sf:g}_keys.duckdb"
    if path.exists():
        return path
    source = tpch_database(sf, folder)
    partial = path.with_suffix(".partial")
    partial.unlink(missing_ok=True)
    con = duckdb.connect(str(partial))
    con.execute("SET enable_progress_bar = false")
    con.execute(f"ATTACH '{source}' AS src (READ_ONLY)")
    for table, key in PRIMARY_KEYS.items():
        con.execute(f"CREATE TABLE {table} AS SELECT * FROM src.{table}")
        con.execute(f"ALTER TABLE {table} ADD PRIMARY KEY ({', '.join(key)})")
    con.execute("DETACH src")
    con.close()
    partial.rename(path)
    return path


def median_time(fn, repeat: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bench_chains(sf: float, folder: Path, repeat: int, beta: float, keys: bool) -> list[dict]:
    """``keys``: the database declares the TPC-H primary keys and RS reads them from its catalog;
    otherwise no catalog is passed (nothing is known to be unique)."""
    path = keyed_database(sf, folder) if keys else tpch_database(sf, folder)
    engine = DuckDBEngine(str(path), read_only=True)
    catalog = engine.introspect() if keys else None
    rows = []
    for length in (3, 4, 5):
        query = chain_query(length)
        sql = query.to_sql("duckdb")
        count = engine.execute(sql).scalar()
        t_count = median_time(lambda sql=sql: engine.execute(sql), repeat)
        results = []
        t_rs = median_time(lambda query=query: results.append(residual_sensitivity(engine, query, catalog, beta)), repeat)
        last = results[-1]
        rows.append(
            {
                "sf": sf,
                "keys": keys,
                "relations": length,
                "count": count,
                "count_s": round(t_count, 4),
                "rs_s": round(t_rs, 4),
                "ratio": round(t_rs / t_count, 2),
                "te_s": round(last.te_seconds, 4),
                "envelope_s": round(last.envelope_seconds, 4),
                "statements": last.count_sql_statements,
                "group_bys": last.sql[-1].count("GROUP BY"),
                "rs": last.rs_float,
                "k_star": last.k_star,
                "T_E_count": len(last.te),
                "load": round(os.getloadavg()[0], 2),
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    engine.close()
    return rows


def synthetic_te(m: int, seed: int) -> tuple[list[str], dict[frozenset[str], int]]:
    """T_E growing with |E| (10^(u |E|), u uniform in [0, 1.5]), all m relations private."""
    rnd = random.Random(seed)
    rels = [f"R{i}" for i in range(m)]
    te = {}
    for size in range(m + 1):
        for combo in itertools.combinations(rels, size):
            te[frozenset(combo)] = 1 if size == 0 else int(10 ** (rnd.uniform(0, 1.5) * size))
    return rels, te


def bench_envelope(beta: float, seeds: int) -> list[dict]:
    rows = []
    for m in range(2, 7):
        times, cpu, nodes = [], [], []
        for seed in range(seeds):
            rels, te = synthetic_te(m, seed)
            start, start_cpu = time.perf_counter(), time.process_time()
            env = maximize_envelope(rels, rels, te, beta)
            times.append(time.perf_counter() - start)
            cpu.append(time.process_time() - start_cpu)
            nodes.append(env.nodes)
        rows.append(
            {
                "m": m,
                "beta": beta,
                "median_ms": round(1000 * statistics.median(times), 1),
                "max_ms": round(1000 * max(times), 1),
                "median_cpu_ms": round(1000 * statistics.median(cpu), 1),
                "median_nodes": statistics.median(nodes),
                "load": round(os.getloadavg()[0], 2),
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    return rows


def bench_demo(folder: Path, beta: float, calls: int) -> list[dict]:
    """Latency of one residual_sensitivity call on the demo hospital (2,000 patients), as the
    search makes it many times per question: median over ``calls`` calls after a warm-up."""
    path = folder / "pimento_rs_demo" / "hospital.duckdb"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        create_demo(path, patients=2000)
    db = load_database(path)
    rows = []
    for name, sql in (("prescription", DEMO_SQL_PRESCRIPTION), ("orders", DEMO_SQL_ORDERS)):
        query = parse_count_query(sql, db.catalog)
        for attribution in (True, False):
            residual_sensitivity(db.engine, query, db.catalog, beta, attribution=attribution)
            times, te, env = [], [], []
            for _ in range(calls):
                start = time.perf_counter()
                res = residual_sensitivity(db.engine, query, db.catalog, beta, attribution=attribution)
                times.append(time.perf_counter() - start)
                te.append(res.te_seconds)
                env.append(res.envelope_seconds)
            rows.append(
                {
                    "query": name,
                    "relations": len(query.aliases),
                    "attribution": attribution,
                    "median_ms": round(1000 * statistics.median(times), 2),
                    "te_ms": round(1000 * statistics.median(te), 2),
                    "envelope_ms": round(1000 * statistics.median(env), 2),
                    "rs": res.rs_float,
                    "load": round(os.getloadavg()[0], 2),
                }
            )
            print(json.dumps(rows[-1]), flush=True)
    db.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sf", type=float, nargs="*", default=[0.1])
    parser.add_argument("--folder", default=os.environ.get("TMPDIR", "/tmp"))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--beta", type=float, default=0.01)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--envelope-only", action="store_true")
    parser.add_argument("--demo", action="store_true", help="only the per-call latency on the demo hospital")
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument(
        "--keys",
        choices=["both", "yes", "no"],
        default="both",
        help="declare the TPC-H primary keys (and pass the catalog), or not, or both",
    )
    args = parser.parse_args()
    print(json.dumps({"machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, DuckDB {duckdb.__version__}"}))
    if args.demo:
        bench_demo(Path(args.folder), args.beta, args.calls)
        return
    bench_envelope(args.beta, args.seeds)
    if not args.envelope_only:
        for sf in args.sf:
            for keys in {"both": (False, True), "yes": (True,), "no": (False,)}[args.keys]:
                bench_chains(sf, Path(args.folder), args.repeat, args.beta, keys)


if __name__ == "__main__":
    main()
