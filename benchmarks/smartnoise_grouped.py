"""Grouped counts, sums and averages side by side with SmartNoise SQL (issue 25, item 5b).

    python -m benchmarks.smartnoise_grouped --snpython /tmp/snvenv/bin/python [--reps 200] [--sn-reps 200] [--only NAME] [--json]

SmartNoise SQL (PyPI ``smartnoise-sql``) lives in its own virtual environment; ``--snpython``
names its interpreter and it runs in a subprocess on CSV copies of the same generated data
(as :mod:`benchmarks.smartnoise_compare`, whose CSV writer and epsilon/delta this reuses).

Workload (:func:`generate_clinic`, deterministic): ``patients`` (one row per person: a region of a
declared public domain of five values, a diagnosis code whose values are private, an integer
``age`` bounded [0, 100], a real ``charges`` bounded [0, 1000] with values above the bound) and
``visits`` (0 to 8 per patient, a second private relation). Queries (:func:`grouped_queries`):

* per region over ``patients``: COUNT(*), SUM(age), AVG(age), SUM(charges) and the overall
  AVG(age). SmartNoise: ``max_ids = 1`` (one row per person), ``censor_dims`` off (the region
  domain is public);
* per diagnosis (private keys): Pimento's partition selection (Laplace threshold, delta) against
  SmartNoise's ``censor_dims`` thresholding (same delta); recall = groups shown / groups present,
  by true group size;
* per region over ``visits JOIN patients``: COUNT(*) and SUM(stay) (SmartNoise refuses joins;
  Pimento answers with residual sensitivity).

Both sides at the same *total* epsilon (1) and delta (1e-5). SmartNoise's ``Privacy(epsilon=1)``
is per statistic (an AVG measures a SUM and a COUNT; ``censor_dims`` measures a key count besides
the COUNT), so its runner scales epsilon (and delta) down until the total that
``get_privacy_cost`` states is the target, and reports that total; one more row runs the private
keys at SmartNoise's default ``Privacy(epsilon=1, delta=1e-5)`` (a total of epsilon 2).

Pimento's side goes through the one release path (``Session.release_sql`` on the DuckDB file,
with ``[bounds]``, ``[domains]`` and ``[ledger] answer_cache = false`` in the generated
``pimento.toml``, so that every repetition is a fresh charged release). Reported per query: the
mean over groups of the empirical noise standard deviation of each side (over the repetitions,
of the value the analyst reads), Pimento's stated noise scale (std of its law: sqrt(2) x scale for
Laplace; over a join the scale is the DP upper bound of RS, which varies per release: its mean over
the releases), and for the private keys the recall per size bin.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
import statistics
import subprocess
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import duckdb

from benchmarks.smartnoise_compare import DELTA, EPSILON, _write_csv
from pimento.release import Session

__all__ = [
    "SIZE_BINS",
    "GroupedQuery",
    "generate_clinic",
    "grouped_queries",
    "main",
    "noise_stats",
    "parse_sn_rows",
    "pimento_runs",
    "recall_by_size",
    "run",
    "size_bin",
    "smartnoise_runs",
    "smartnoise_version",
    "table",
    "true_answer",
    "write_config",
]

#: The public domain of ``patients.region`` and each value's share of the patients.
REGIONS: tuple[tuple[str, float], ...] = (("north", 0.40), ("south", 0.25), ("east", 0.20), ("west", 0.10), ("islands", 0.05))
#: Clipping bounds declared under ``[bounds]`` (and given to SmartNoise as the columns' lower/upper).
AGE_BOUNDS = (0, 100)
CHARGES_BOUNDS = (0, 1000)
STAY_BOUNDS = (0, 30)
#: Bins of true group size for the recall of private keys: (lowest, highest or None).
SIZE_BINS: tuple[tuple[int, int | None], ...] = ((1, 1), (2, 5), (6, 10), (11, 15), (16, 20), (21, 30), (31, 50), (51, 100), (101, None))


def size_bin(n: int) -> str:
    """The label of the size bin holding a group of ``n`` rows ("1", "2-5", ..., "101+")."""
    for lo, hi in SIZE_BINS:
        if n >= lo and (hi is None or n <= hi):
            return str(lo) if hi == lo else (f"{lo}+" if hi is None else f"{lo}-{hi}")
    raise ValueError(f"no size bin for a group of {n} rows")


def _diagnosis_weights(diagnoses: int, rng: random.Random) -> list[float]:
    """Zipf-like weights (exponent 1.1): a few large diagnoses, a long tail of small ones."""
    weights = [1 / (rank**1.1) for rank in range(1, diagnoses + 1)]
    rng.shuffle(weights)
    return weights


def generate_clinic(folder: Path, *, patients: int = 5000, diagnoses: int = 300, seed: int = 11) -> dict[str, Path]:
    """The DuckDB clinic (patients, visits) and CSV copies for SmartNoise. Deterministic for a seed."""
    rng = random.Random(seed)
    names = [r for r, _ in REGIONS]
    shares = [s for _, s in REGIONS]
    codes = [f"D{i:03d}" for i in range(diagnoses)]
    weights = _diagnosis_weights(diagnoses, rng)
    rows: list[tuple[int, str, str, int, float]] = []
    for pid in range(patients):
        region = rng.choices(names, shares)[0]
        code = rng.choices(codes, weights)[0]
        age = min(max(int(rng.gauss(48, 20)), 0), 99)
        charges = round(rng.lognormvariate(5.5, 0.8), 2)  # about 4% above the bound 1000
        rows.append((pid, region, code, age, charges))
    visits: list[tuple[int, int, int]] = []
    for pid, *_ in rows:
        for _ in range(rng.choice((0, 0, 1, 1, 1, 2, 2, 3, 4, 8))):
            visits.append((len(visits), pid, rng.randint(0, 40)))  # stays above 30 are clipped
    folder.mkdir(parents=True, exist_ok=True)
    paths = {"patients": folder / "patients.csv", "visits": folder / "visits.csv"}
    _write_csv(paths["patients"], ["id", "region", "diagnosis", "age", "charges"], rows)
    _write_csv(paths["visits"], ["id", "patient_id", "stay"], visits)
    db = folder / "clinic.duckdb"
    if db.exists():
        db.unlink()
    con = duckdb.connect(str(db))
    try:
        con.execute("CREATE TABLE patients (id INTEGER PRIMARY KEY, region VARCHAR NOT NULL, diagnosis VARCHAR NOT NULL, age INTEGER, charges DOUBLE)")
        con.execute("CREATE TABLE visits (id INTEGER PRIMARY KEY, patient_id INTEGER NOT NULL REFERENCES patients(id), stay INTEGER)")
        for table in ("patients", "visits"):
            con.execute(f"INSERT INTO {table} SELECT * FROM read_csv(?, header = true)", [str(paths[table])])
    finally:
        con.close()
    paths["db"] = db
    return paths


def write_config(folder: Path) -> Path:
    """The custodian's ``pimento.toml`` of the benchmark: bounds, the region domain, a large cap, no answer cache."""
    domain = ", ".join(f'"{r}"' for r, _ in REGIONS)
    text = f"""[ledger]
epsilon_cap = "1000000"
delta_cap = "0.9"
analyst_share = "1"
answer_cache = false

[bounds]
"patients.age" = [{AGE_BOUNDS[0]}, {AGE_BOUNDS[1]}]
"patients.charges" = [{CHARGES_BOUNDS[0]}, {CHARGES_BOUNDS[1]}]
"visits.stay" = [{STAY_BOUNDS[0]}, {STAY_BOUNDS[1]}]

[domains]
"patients.region" = [{domain}]

[release]
max_groups = 500
"""
    path = folder / "pimento.toml"
    path.write_text(text)
    return path


@dataclass(frozen=True)
class GroupedQuery:
    """One query of the workload: Pimento's SQL, SmartNoise's (None: not run), and what the answer is."""

    name: str
    pimento_sql: str
    sn_sql: str | None
    aggregate: str  # count, sum or avg
    column: str | None = None  # table.column of a SUM/AVG
    private_keys: bool = False  # partition selection / censor_dims
    join: bool = False
    delta: str | None = None  # Pimento's delta (None: pure epsilon)
    sn_equal_total: bool = True  # False: SmartNoise at Privacy(epsilon, delta) per statistic, its default (a larger total)


def grouped_queries() -> list[GroupedQuery]:
    """The workload of the module docstring."""
    by_region = "FROM patients GROUP BY region"
    sn_region = "FROM PUBLIC.patients GROUP BY region"
    join = "FROM visits v JOIN patients p ON v.patient_id = p.id GROUP BY p.region"
    sn_join = "FROM PUBLIC.visits AS v JOIN PUBLIC.patients AS p ON v.patient_id = p.id GROUP BY p.region"
    return [
        GroupedQuery("COUNT(*) per region", f"SELECT region, COUNT(*) {by_region}", f"SELECT region, COUNT(*) AS v {sn_region}", "count"),
        GroupedQuery("SUM(age) per region", f"SELECT region, SUM(age) {by_region}", f"SELECT region, SUM(age) AS v {sn_region}", "sum", "patients.age"),
        GroupedQuery("AVG(age) per region", f"SELECT region, AVG(age) {by_region}", f"SELECT region, AVG(age) AS v {sn_region}", "avg", "patients.age"),
        GroupedQuery("SUM(charges) per region (real)", f"SELECT region, SUM(charges) {by_region}", f"SELECT region, SUM(charges) AS v {sn_region}",
                     "sum", "patients.charges"),
        GroupedQuery("AVG(age), no GROUP BY", "SELECT AVG(age) FROM patients", "SELECT AVG(age) AS v FROM PUBLIC.patients", "avg", "patients.age"),
        GroupedQuery("COUNT(*) per diagnosis (private keys)", "SELECT diagnosis, COUNT(*) FROM patients GROUP BY diagnosis",
                     "SELECT diagnosis, COUNT(*) AS v FROM PUBLIC.patients GROUP BY diagnosis", "count", private_keys=True, delta=DELTA),
        GroupedQuery("COUNT(*) per diagnosis, SmartNoise at its default (twice the epsilon)",
                     "SELECT diagnosis, COUNT(*) FROM patients GROUP BY diagnosis",
                     "SELECT diagnosis, COUNT(*) AS v FROM PUBLIC.patients GROUP BY diagnosis", "count", private_keys=True, delta=DELTA,
                     sn_equal_total=False),
        GroupedQuery("visits JOIN patients: COUNT(*) per region", f"SELECT p.region, COUNT(*) {join}",
                     f"SELECT p.region, COUNT(*) AS v {sn_join}", "count", join=True, delta=DELTA),
        GroupedQuery("visits JOIN patients: SUM(stay) per region", f"SELECT p.region, SUM(v.stay) {join}",
                     f"SELECT p.region, SUM(v.stay) AS v {sn_join}", "sum", "visits.stay", join=True, delta=DELTA),
    ]


# --------------------------------------------------------------------------- truth and statistics


_BOUNDS = {"patients.age": AGE_BOUNDS, "patients.charges": CHARGES_BOUNDS, "visits.stay": STAY_BOUNDS}


def true_answer(db: Path, query: GroupedQuery) -> dict[tuple[Any, ...], float]:
    """The exact answer per group key (clipped to the declared bounds, NULLs skipped), from the DuckDB file."""
    select = query.pimento_sql
    if query.column is not None:
        lo, hi = _BOUNDS[query.column]
        select = re.sub(r"\b(SUM|AVG)\(([^()]*)\)", lambda m: f"{m[1]}(LEAST(GREATEST({m[2]}, {lo}), {hi}))", select)
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute(select).fetchall()
    finally:
        con.close()
    return {tuple(r[:-1]): float(r[-1]) for r in rows if r[-1] is not None}


def noise_stats(true: Mapping[tuple[Any, ...], float], runs: Sequence[Mapping[tuple[Any, ...], float | None]]) -> dict[tuple[Any, ...], dict[str, float | int]]:
    """Per true group: the standard deviation (population) and mean of (released - true) over the runs that show it.

    A group a run does not show (or shows without a value) is not counted; ``shown`` says in how
    many runs it appeared. Groups shown fewer than twice get no std.
    """
    out: dict[tuple[Any, ...], dict[str, float | int]] = {}
    for key, value in true.items():
        errors = [float(r[key]) - value for r in runs if r.get(key) is not None]  # type: ignore[arg-type]
        entry: dict[str, float | int] = {"true": value, "shown": len(errors)}
        if len(errors) >= 2:
            entry["std"] = statistics.pstdev(errors)
            entry["mean_error"] = statistics.fmean(errors)
        out[key] = entry
    return out


def recall_by_size(true_counts: Mapping[tuple[Any, ...], float], runs: Sequence[Iterable[tuple[Any, ...]]]) -> list[dict[str, Any]]:
    """Groups shown / groups present per size bin, averaged over the runs (keys shown that are not present are ignored)."""
    present: dict[str, list[tuple[Any, ...]]] = {}
    for key, n in true_counts.items():
        if n >= 1:
            present.setdefault(size_bin(int(n)), []).append(key)
    shown = [set(r) for r in runs]
    rows = []
    for lo, _hi in SIZE_BINS:
        label = size_bin(lo)
        keys = present.get(label, [])
        if not keys:
            continue
        recall = statistics.fmean(sum(k in s for k in keys) / len(keys) for s in shown) if shown else float("nan")
        rows.append({"bin": label, "groups": len(keys), "recall": recall})
    return rows


def _mean_std(stats: Mapping[tuple[Any, ...], Mapping[str, float | int]], *, min_shown: int = 2) -> float | None:
    """The mean over groups shown at least ``min_shown`` times of their noise std (None when there is none).

    Under partition selection pass the number of runs: a group shown only sometimes is shown when its
    noise was high, so its errors are biased and its std too small; only groups always shown compare.
    """
    stds = [float(s["std"]) for s in stats.values() if "std" in s and int(s["shown"]) >= min_shown]
    return statistics.fmean(stds) if stds else None


def _std_groups(stats: Mapping[tuple[Any, ...], Mapping[str, float | int]], *, min_shown: int = 2) -> dict[str, Any]:
    """How many groups :func:`_mean_std` averages over, and the smallest true value among them."""
    picked = [float(s["true"]) for s in stats.values() if "std" in s and int(s["shown"]) >= min_shown]
    return {"groups": len(picked), "smallest_true": min(picked) if picked else None}


def _mean_error(stats: Mapping[tuple[Any, ...], Mapping[str, float | int]], *, min_shown: int = 2) -> float | None:
    """The mean over groups (as :func:`_mean_std` picks them) of their mean error: the bias."""
    errors = [float(s["mean_error"]) for s in stats.values() if "mean_error" in s and int(s["shown"]) >= min_shown]
    return statistics.fmean(errors) if errors else None


# --------------------------------------------------------------------------- Pimento


def _answer_values(data: Mapping[str, Any]) -> dict[tuple[Any, ...], float | None]:
    """Group key -> the value the analyst reads, from a grouped answer's ``to_dict()``."""
    return {tuple(g["key"]): (None if g["value_exact"] is None else float(Fraction(g["value_exact"]))) for g in data["groups"]}


def pimento_runs(db: Path, query: GroupedQuery, reps: int, *, analyst: str = "bench") -> dict[str, Any]:
    """``reps`` fresh releases of ``query`` through ``Session.release_sql`` (each charged; the cache is off)."""
    runs: list[dict[tuple[Any, ...], float | None]] = []
    scales: list[list[float]] = []
    first: dict[str, Any] | None = None
    started = time.perf_counter()
    with Session(db, analyst=analyst) as session:
        for _ in range(reps):
            answer = session.release_sql(query.pimento_sql, EPSILON, query.delta)
            data = answer.to_dict()
            if answer.cached:
                raise RuntimeError("the answer cache returned a stored answer: the benchmark needs answer_cache = false")
            first = first or data
            runs.append(_answer_values(data))
            scales.append([float(Fraction(p["noise_scale_upper_exact"])) for p in data["releases"]])
    assert first is not None
    parts = first["releases"]
    return {
        "runs": runs,
        "mechanisms": [p["mechanism"] for p in parts],
        # the stated scale: public, but over a join it is a DP upper bound of RS, so it varies per release
        "noise_scale_upper": [statistics.fmean(column) for column in zip(*scales)],
        "noise_scale_upper_range": [[min(column), max(column)] for column in zip(*scales)],
        "epsilon": first["epsilon"],
        "delta": first["delta"],
        "budget_split": first["budget_split"],
        "partition_selection": first["partition_selection"],
        "seconds_per_release": (time.perf_counter() - started) / reps,
    }


# --------------------------------------------------------------------------- SmartNoise

# Runs inside the SmartNoise virtual environment: reads a spec on stdin, prints JSON.
# For each query: its cost at Privacy(epsilon=1) (per statistic), then the epsilon that makes the
# total cost the benchmark's epsilon, then ``reps`` executions at that epsilon.
_SN_RUNNER = r'''
import json, sys, time
import pandas as pd, snsql
from snsql import Privacy
spec = json.load(sys.stdin)
frames = {f"PUBLIC.{name}": pd.read_csv(t["csv"]) for name, t in spec["tables"].items()}
def metadata(censor):
    meta = {}
    for name, t in spec["tables"].items():
        cols = {c: {"name": c, **kind} for c, kind in t["columns"].items()}
        cols[t["private_id"]]["private_id"] = True
        meta[name] = {"max_ids": 1, "censor_dims": censor, "row_privacy": False, **cols}
    return {"Collection": {"PUBLIC": meta}}
out = []
for q in spec["queries"]:
    row = {"name": q["name"]}
    try:
        meta = metadata(q["censor_dims"])
        eps, delta, cost_at_one = spec["epsilon"], spec["delta"], None
        for _ in range(6 if q["equal_total"] else 1):  # scale epsilon and delta down until the stated total is the target
            reader = snsql.from_df(frames, privacy=Privacy(epsilon=eps, delta=delta), metadata=meta)
            cost = [float(x) for x in reader.get_privacy_cost([q["sql"]])]
            cost_at_one = cost_at_one or cost
            over_eps, over_delta = cost[0] > spec["epsilon"] * (1 + 1e-9), cost[1] > spec["delta"] * (1 + 1e-9)
            if not (over_eps or over_delta) or not q["equal_total"]:
                break
            eps = eps * spec["epsilon"] / cost[0] if over_eps else eps
            delta = delta * spec["delta"] / cost[1] if over_delta else delta
        row["cost_at_epsilon_1"] = cost_at_one
        row["epsilon_per_statistic"] = eps
        row["delta_per_query"] = delta
        row["cost"] = cost
        started = time.perf_counter()
        runs = []
        for _ in range(q["reps"]):
            res = reader.execute(q["sql"])
            runs.append([[None if v is None or v != v else (v if isinstance(v, str) else float(v)) for v in r] for r in res[1:]])
        row["seconds_per_query"] = (time.perf_counter() - started) / q["reps"]
        row["runs"] = runs
    except Exception as exc:
        first = str(exc).splitlines()[0] if str(exc) else ""
        row["error"] = f"{type(exc).__name__}: {first.split(': [<')[0]}"
    out.append(row)
print(json.dumps(out))
'''


def _sn_spec(paths: Mapping[str, Path], queries: Sequence[GroupedQuery], reps: int) -> dict[str, Any]:
    """The runner's input: tables (one row per person in ``patients``), bounds, and the queries it runs."""
    def num(kind: str, bounds: tuple[int, int]) -> dict[str, Any]:
        return {"type": kind, "lower": bounds[0], "upper": bounds[1]}

    tables = {
        "patients": {
            "csv": str(paths["patients"]),
            "private_id": "id",
            "columns": {"id": {"type": "int"}, "region": {"type": "string"}, "diagnosis": {"type": "string"},
                        "age": num("int", AGE_BOUNDS), "charges": num("float", CHARGES_BOUNDS)},
        },
        "visits": {
            "csv": str(paths["visits"]),
            "private_id": "patient_id",
            "columns": {"id": {"type": "int"}, "patient_id": {"type": "int"}, "stay": num("int", STAY_BOUNDS)},
        },
    }
    return {
        "epsilon": float(EPSILON),
        "delta": float(DELTA),
        "tables": tables,
        "queries": [{"name": q.name, "sql": q.sn_sql, "censor_dims": q.private_keys, "equal_total": q.sn_equal_total,
                     "reps": reps} for q in queries if q.sn_sql],
    }


def parse_sn_rows(rows: Sequence[Sequence[Any]]) -> dict[tuple[Any, ...], float | None]:
    """One SmartNoise result (rows without the header, the value last) as group key -> value."""
    return {tuple(r[:-1]): (None if r[-1] is None else float(r[-1])) for r in rows}


def smartnoise_runs(snpython: str, paths: Mapping[str, Path], queries: Sequence[GroupedQuery], reps: int) -> dict[str, dict[str, Any]]:
    """Run SmartNoise SQL in its own interpreter on the CSV copies; per query name, its runs or its refusal."""
    spec = _sn_spec(paths, queries, reps)
    proc = subprocess.run([snpython, "-c", _SN_RUNNER], input=json.dumps(spec), capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0:
        tail = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else str(proc.returncode)
        raise RuntimeError(f"SmartNoise runner failed: {tail}")
    out: dict[str, dict[str, Any]] = {}
    for row in json.loads(proc.stdout):
        if "runs" in row:
            row["runs"] = [parse_sn_rows(r) for r in row["runs"]]
        out[row["name"]] = row
    return out


def smartnoise_version(snpython: str) -> str:
    """The installed smartnoise-sql version in the SmartNoise interpreter."""
    code = "import importlib.metadata as m; print(m.version('smartnoise-sql'), m.version('opendp'))"
    proc = subprocess.run([snpython, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    sn, opendp = proc.stdout.split()
    return f"smartnoise-sql {sn} (opendp {opendp})"


# --------------------------------------------------------------------------- the comparison


def _law_std(mechanisms: Sequence[str], scales: Sequence[float]) -> float | None:
    """The std of the stated noise law of a one-part answer (Laplace: sqrt(2) x scale); None for two parts (AVG)."""
    if len(scales) != 1:
        return None
    return scales[0] * (math.sqrt(2) if "laplace" in mechanisms[0] else 1.0)


def _summary(query: GroupedQuery, true: dict[tuple[Any, ...], float], pim: dict[str, Any], sn: dict[str, Any] | None) -> dict[str, Any]:
    pstats = noise_stats(true, pim["runs"])
    always = len(pim["runs"]) if query.private_keys else 2
    row: dict[str, Any] = {
        "query": query.name,
        "pimento_sql": query.pimento_sql,
        "groups_present": len(true),
        "pimento": {
            "mechanisms": pim["mechanisms"],
            "noise_scale_upper": pim["noise_scale_upper"],
            "noise_scale_upper_range": pim["noise_scale_upper_range"],
            "law_std": _law_std(pim["mechanisms"], pim["noise_scale_upper"]),
            "mean_std": _mean_std(pstats, min_shown=always),
            "mean_error": _mean_error(pstats, min_shown=always),
            "std_groups": _std_groups(pstats, min_shown=always),
            "per_group": {"|".join(map(str, k)): v for k, v in pstats.items()} if not query.private_keys else None,
            "epsilon": pim["epsilon"],
            "delta": pim["delta"],
            "budget_split": pim["budget_split"],
            "seconds_per_release": pim["seconds_per_release"],
        },
    }
    if query.private_keys:
        row["pimento"]["recall"] = recall_by_size(true, [[k for k, v in r.items() if v is not None] for r in pim["runs"]])
        threshold = (pim["partition_selection"] or {}).get("threshold")
        row["pimento"]["threshold"] = None if threshold is None else float(Fraction(threshold))
    if sn is None:
        row["smartnoise"] = None
    elif "error" in sn:
        row["smartnoise"] = {"error": sn["error"]}
    else:
        sstats = noise_stats(true, sn["runs"])
        always = len(sn["runs"]) if query.private_keys else 2
        row["smartnoise"] = {
            "cost_at_epsilon_1": sn["cost_at_epsilon_1"],
            "epsilon_per_statistic": sn["epsilon_per_statistic"],
            "delta_per_query": sn["delta_per_query"],
            "cost": sn["cost"],
            "mean_std": _mean_std(sstats, min_shown=always),
            "mean_error": _mean_error(sstats, min_shown=always),
            "std_groups": _std_groups(sstats, min_shown=always),
            "per_group": {"|".join(map(str, k)): v for k, v in sstats.items()} if not query.private_keys else None,
            "seconds_per_query": sn["seconds_per_query"],
        }
        if query.private_keys:
            row["smartnoise"]["recall"] = recall_by_size(true, [[k for k, v in r.items() if v is not None] for r in sn["runs"]])
    return row


def run(*, snpython: str | None, reps: int = 200, sn_reps: int = 200, patients: int = 5000, folder: Path | None = None,
        only: Sequence[str] | None = None) -> dict[str, Any]:
    """The whole comparison (module docstring); ``only``: the names of the queries to run (default all)."""
    folder = folder or Path(tempfile.mkdtemp(prefix="pimento-sn-grouped-"))
    paths = generate_clinic(folder, patients=patients)
    write_config(folder)
    queries = [q for q in grouped_queries() if only is None or q.name in only]
    sn = smartnoise_runs(snpython, paths, queries, sn_reps) if snpython else {}
    rows = []
    for q in queries:
        true = true_answer(paths["db"], q)
        rows.append(_summary(q, true, pimento_runs(paths["db"], q, reps), sn.get(q.name)))
    return {
        "epsilon": EPSILON, "delta": DELTA, "patients": patients, "reps": reps, "sn_reps": sn_reps,
        "smartnoise": smartnoise_version(snpython) if snpython else None, "rows": rows,
    }


def _fmt(x: float | None, digits: int = 2) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _signed(x: float | None) -> str:
    return "-" if x is None else f"{x:+.2f}"


def table(result: Mapping[str, Any]) -> str:
    """The noise table (one row per query) and the recall table of the private keys, in Markdown."""
    lines = [
        "| query | groups | Pimento mechanism | Pimento std: law / measured (mean err) | SmartNoise std measured (mean err) "
        "| SmartNoise eps per statistic (total cost) | std ratio Pimento/SN |",
        "|---|---|---|---|---|---|---|",
    ]
    recalls = []
    for r in result["rows"]:
        p, s = r["pimento"], r["smartnoise"]
        if s is None:
            sn_std, sn_eps, ratio = "not run", "-", "-"
        elif "error" in s:
            sn_std, sn_eps, ratio = f"refused: {s['error'][:60]}", "-", "-"
        else:
            sn_std = f"{_fmt(s['mean_std'])} ({_signed(s.get('mean_error'))})"
            sn_eps = f"{s['epsilon_per_statistic']:.3g} ({s['cost'][0]:.3g}, {s['cost'][1]:.2g})"
            ratio = _fmt(p["mean_std"] / s["mean_std"]) if p["mean_std"] and s["mean_std"] else "-"
        mech = " + ".join(p["mechanisms"])
        measured = f"{_fmt(p['law_std'])} / {_fmt(p['mean_std'])} ({_signed(p.get('mean_error'))})"
        lines.append(f"| {r['query']} | {r['groups_present']} | {mech} | {measured} | {sn_std} | {sn_eps} | {ratio} |")
        if "recall" in p:
            recalls.append((r, p, s))
    for r, p, s in recalls:
        lines += ["", f"Recall of {r['query']} (Pimento threshold {_fmt(p.get('threshold'))}):", "",
                  "| true group size | groups | Pimento recall | SmartNoise recall |", "|---|---|---|---|"]
        sn_recall = {x["bin"]: x["recall"] for x in (s or {}).get("recall", [])}
        for x in p["recall"]:
            lines.append(f"| {x['bin']} | {x['groups']} | {x['recall']:.3f} | {_fmt(sn_recall.get(x['bin']), 3)} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--snpython", default=None, help="python of a venv with smartnoise-sql (omit: Pimento only)")
    parser.add_argument("--reps", type=int, default=200, help="Pimento releases per query")
    parser.add_argument("--sn-reps", type=int, default=200, help="SmartNoise executions per query")
    parser.add_argument("--patients", type=int, default=5000)
    parser.add_argument("--only", action="append", default=None, help="run only the query of this name (repeatable)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    result = run(snpython=args.snpython, reps=args.reps, sn_reps=args.sn_reps, patients=args.patients, only=args.only)
    if args.json:
        print(json.dumps(result, indent=2, default=str))
    else:
        print(f"epsilon={result['epsilon']} delta={result['delta']} patients={result['patients']} "
              f"Pimento releases={result['reps']} SmartNoise runs={result['sn_reps']} ({result['smartnoise']})")
        print(table(result))


if __name__ == "__main__":
    main()
