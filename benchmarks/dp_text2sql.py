"""DP-aware Text-to-SQL benchmark (paper Table 1): Acc, Is-Min, Joint, noise reduction, cost.

Run::

    python -m benchmarks.dp_text2sql [--data ../shared/data] [--cache ~/.cache/pimento/dp_text2sql]
        [--sources dev,train,ambiqt] [--train-dbs 12] [--methods gold-full,full,zero-shot,...]
        [--limit N] [--rollouts 10] [--llm URL] [--llm-k 5] [--json OUT]
        [--partition tune|heldout-open|sealed] [--failures]

**Ground truth** (built on the REAL databases; it is the benchmark's answer key, never seen by the
system). Questions: Spider dev (``dev.json``), a fixed sample of Spider-train databases
(``--train-dbs`` evenly spaced in name order) and AmbiQT join items (``tbl-split_validation.json``);
a question is kept when its gold SQL is a COUNT in the DP class (``parse_count_query`` succeeds;
for AmbiQT either of its two queries). Its correct formulations are the gold query plus every
query the schema-graph expander can build from the gold's intent, enumerated exhaustively up to
``len(gold relations) + 2`` relations (at most 5), kept when it returns the gold answer on the
real database. Each gets its residual sensitivity on the real database (every relation private;
beta from eps = 1, delta = 1e-6); q* is the lowest. Cached in ``CACHE/ground_truth.json``.

**System side**: each database is synthesized once (eps_syn = 1.6, delta_syn = 1e-6, root = the
private table without parent that reaches the most tables) into ``CACHE/synthetic/``; every
method sees only that copy (answers, RS, values for the parser) and the catalog.

**Metrics** (per method, over every ground-truth question; a method that returns nothing counts
as wrong on all three): Acc: the chosen query returns the gold answer on the real database.
Is-Min: its real RS equals min RS over the correct formulations (relative tolerance 1e-9), or it is
correct and lower (the enumeration missed it; counted in ``beat_ground_truth``). Joint: both.
Noise reduction: geometric mean, over questions where both the zero-shot top-1 and the method's
choice are correct, of RS_real(zero-shot top-1) / RS_real(chosen) (noise scale is proportional to
RS at fixed eps, delta).

**LLM-driven methods** (``sens-prompt``, ``llm-zero-shot``, ``llm-full``; run only with ``--llm``,
else reported as "not run: no --llm"): see :func:`_run_llm_method`. Each question records LLM
calls and tokens, repair rounds and unusable outputs by reason; results are cached per endpoint
and ``--llm-k``.

**Held-out parts** (``--partition``): instead of the default sources, the Spider-train questions
whose database is in one part of ``nl_spider``'s fixed hash split (:func:`benchmarks.nl_spider.in_partition`:
``tune``, ``heldout-open``, ``sealed``); same ground truth, synthesis and metrics, in their own
cache files. ``sealed`` is measured in aggregate only, as ``nl_spider`` does: no per-question
progress line, no per-question results written to the cache (nor the real RS of the queries the
methods chose), and ``--failures`` (the misses of each method, question by question) refused.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import math
import re
import sqlite3
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import sqlglot

import pimento
from benchmarks._spider import DEFAULT_DATA
from benchmarks.nl_spider import in_partition
from pimento.engines import Engine, open_engine
from pimento.errors import PimentoError
from pimento.llm import SyntheticValues, generate_zero_shot, open_backend
from pimento.llm.usage import Usage
from pimento.mechanisms import mechanism_for
from pimento.nl import NotACountingQuestion, ValueIndex, translate
from pimento.release.ask import llm_expander
from pimento.schema import Catalog
from pimento.search import SensitivitySearch
from pimento.search.actions import PartialQuery
from pimento.search.evaluate import residual_oracle
from pimento.search.expanders import NodeState, SchemaGraphExpander
from pimento.search.mcts import VARIANTS, config_for_variant, votes_for_samples
from pimento.search.query_intent import grain, intent_of
from pimento.sensitivity import residual_sensitivity
from pimento.sql import CountQuery, parse_count_query
from pimento.synth import synthesize

__all__ = [
    "Item",
    "METHODS",
    "PARTITIONS",
    "build_ground_truth",
    "enumerate_formulations",
    "load_items",
    "main",
    "pick_root",
    "score",
]

_COUNT = re.compile(r"\bcount\s*\(", re.IGNORECASE)
GT_VERSION = 3
RS_TOL = 1e-9
#: ``--partition`` values: parts of ``nl_spider``'s hash split of Spider train (``dp`` is the default run's 12 databases).
PARTITIONS = ("tune", "heldout-open", "sealed")
#: The part measured in aggregate only (never read question by question).
SEALED = "sealed"


# --------------------------------------------------------------------------- items
@dataclass(frozen=True)
class Item:
    id: str
    source: str  # spider-dev | spider-train | ambiqt
    db: str
    db_path: str
    question: str
    golds: tuple[str, ...]
    dialect: str


def _spaced(names: list[str], n: int) -> list[str]:
    if n <= 0 or n >= len(names):
        return names
    step = len(names) / n
    return [names[int(i * step)] for i in range(n)]


def load_items(
    data: Path, sources: tuple[str, ...] = ("dev", "train", "ambiqt"), train_dbs: int = 12, partition: str | None = None
) -> list[Item]:
    """Counting questions of the chosen sources (gold SQL contains ``COUNT(``); the DP-class check comes later.

    Spider-train databases: ``train_dbs`` evenly spaced by name, or with ``partition`` (one of
    :data:`PARTITIONS`) every database of that part of the hash split (``train_dbs`` ignored).
    """
    if partition is not None and partition not in PARTITIONS:
        raise ValueError(f"unknown partition {partition!r}; expected one of {', '.join(PARTITIONS)}")
    items: list[Item] = []
    spider = data / "spider"
    if "dev" in sources:
        for i, row in enumerate(json.loads((spider / "dev" / "dev.json").read_text())):
            if _COUNT.search(row["query"]):
                db = row["db_id"]
                path = spider / "dev" / "database" / db / f"{db}.sqlite"
                items.append(Item(f"dev-{i}", "spider-dev", db, str(path), row["question"], (row["query"],), "sqlite"))
    if "train" in sources:
        names = sorted(p.name for p in (spider / "train" / "database").iterdir() if p.is_dir())
        keep = set(_spaced(names, train_dbs)) if partition is None else {n for n in names if in_partition(n, partition)}
        with open(spider / "train" / "train_queries.csv", newline="") as fh:
            for i, row in enumerate(csv.DictReader(fh)):
                db = row["database"]
                if db in keep and _COUNT.search(row["sql"]):
                    path = spider / "train" / "database" / db / f"{db}.sqlite"
                    items.append(Item(f"train-{i}", "spider-train", db, str(path), row["question"], (row["sql"],), "mysql"))
    if "ambiqt" in sources:
        ambiqt = data / "ambiqt"
        for i, row in enumerate(json.loads((ambiqt / "tbl-split_validation.json").read_text())):
            golds = tuple(q for q in (row["query1"], row["query2"]) if _COUNT.search(q))
            if golds:
                db = row["db_id"]
                path = ambiqt / "join_database" / db / f"{db}.sqlite"
                items.append(Item(f"ambiqt-{i}", "ambiqt", db, str(path), row["question"], golds, "sqlite"))
    return items


# --------------------------------------------------------------------------- formulations
def norm_key(query: CountQuery) -> str:
    """A key equal for formulations that differ only in relation or join order and aliases."""
    q = query.canonical()
    rels = sorted(r.table.lower() for r in q.relations)
    joins = sorted("=".join(sorted((str(j.left).lower(), str(j.right).lower()))) for j in q.joins)
    sels = sorted(f"{s.alias.lower()}:{s.predicate}" for s in q.selections)
    return json.dumps([rels, joins, sels, str(q.count).lower()])


def enumerate_formulations(gold: CountQuery, catalog: Catalog, *, max_relations: int, cap: int = 400) -> list[CountQuery]:
    """Every query the schema-graph expander builds from ``gold``'s intent (depth-first, deduplicated).

    The grain check is off: the ground truth must not depend on the system's own heuristics.
    """
    intent = intent_of(gold.canonical())
    expander = SchemaGraphExpander(catalog, max_relations=max_relations, preserve_grain=False, moves="names")
    found: dict[str, CountQuery] = {}
    seen: set[tuple] = set()
    stack = [NodeState(PartialQuery(), intent)]
    while stack and len(found) < cap:
        state = stack.pop()
        for action, placed in expander.propose(state, exclude=frozenset(), limit=10_000):
            nxt = NodeState(state.prefix.apply(action), intent, state.placed | placed)
            p = nxt.prefix
            if p.stopped:
                q = p.complete()
                if q is not None:
                    found.setdefault(norm_key(q), q)
                continue
            key = (
                frozenset((r.table.lower(), r.alias) for r in p.relations),
                frozenset(p.joins),
                frozenset(p.selections),
                p.count,
                nxt.placed,
            )
            if key not in seen:
                seen.add(key)
                stack.append(nxt)
    return list(found.values())


def _sqlite_rows(path: str, sql: str, dialect: str = "sqlite", timeout_s: float = 20.0) -> list[tuple]:
    if dialect != "sqlite":
        sql = sqlglot.transpile(sql, read=dialect, write="sqlite")[0]
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    con.text_factory = lambda b: b.decode("utf-8", "replace")
    deadline = time.monotonic() + timeout_s
    con.set_progress_handler(lambda: 1 if time.monotonic() > deadline else 0, 10_000)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def real_answer(path: str, query: CountQuery) -> int | None:
    """The query's answer on the real SQLite database (None when it does not run)."""
    try:
        rows = _sqlite_rows(path, query.to_sql("sqlite"))
    except sqlite3.Error:
        return None
    return int(rows[0][0] or 0) if rows else None


class RealRS:
    """RS on the real database (attribution off), cached by SQL; benchmark-side only."""

    def __init__(self, beta: float, cache: dict[str, dict[str, float]]):
        self.beta = beta
        self.cache = cache
        self._engines: dict[str, tuple[Engine, Catalog]] = {}

    def catalog(self, path: str) -> Catalog:
        return self._engine(path)[1]

    def _engine(self, path: str) -> tuple[Engine, Catalog]:
        if path not in self._engines:
            engine = open_engine(path)
            self._engines[path] = (engine, engine.introspect())
        return self._engines[path]

    def __call__(self, path: str, query: CountQuery) -> float | None:
        sql = query.canonical().to_sql("sqlite")
        per_db = self.cache.setdefault(path, {})
        if sql not in per_db:
            engine, catalog = self._engine(path)
            try:
                per_db[sql] = residual_sensitivity(engine, query, catalog, self.beta, attribution=False, timeout_s=60).rs_float
            except PimentoError:
                per_db[sql] = float("nan")
        value = per_db[sql]
        return None if math.isnan(value) else value

    def close(self) -> None:
        for engine, _ in self._engines.values():
            engine.close()
        self._engines.clear()


def _grain_or_none(query: CountQuery, catalog: Catalog) -> list[str] | None:
    return None if query.count.distinct else sorted(grain(query, catalog))


def build_ground_truth(
    items: list[Item], real_rs: RealRS, *, progress: Callable[[str], None] | None = None
) -> dict[str, dict[str, Any]]:
    """Per item: gold answer, correct formulations with real RS, q* and min RS (items outside the class are left out)."""
    out: dict[str, dict[str, Any]] = {}
    for n, item in enumerate(items):
        catalog = real_rs.catalog(item.db_path)
        golds = []
        for sql in item.golds:
            try:
                golds.append((sql, parse_count_query(sql, catalog, dialect=item.dialect)))
            except PimentoError:
                continue
        if not golds:
            continue
        try:
            rows = _sqlite_rows(item.db_path, golds[0][0], item.dialect)
        except sqlite3.Error:
            continue
        if len(rows) != 1 or len(rows[0]) != 1:
            continue
        answer = int(rows[0][0] or 0)
        candidates: dict[str, tuple[CountQuery, str]] = {}
        for _sql, q in golds:
            candidates.setdefault(norm_key(q), (q, "gold"))
        for _sql, q in golds:
            try:
                canon = q.canonical()
            except PimentoError:
                continue
            if len(set(r.table.lower() for r in canon.relations)) != len(canon.relations):
                continue  # self-join: the action space has each table once
            depth = min(5, len(canon.relations) + 2)
            for alt in enumerate_formulations(canon, catalog, max_relations=depth):
                candidates.setdefault(norm_key(alt), (alt, "expander"))
        gold_grain = _grain_or_none(golds[0][1], catalog)
        forms: list[dict[str, Any]] = []
        for key, (q, origin) in candidates.items():
            if real_answer(item.db_path, q) != answer:
                continue
            rs = real_rs(item.db_path, q)
            if rs is None:
                continue
            same = origin == "gold" or gold_grain is None or _grain_or_none(q, catalog) == gold_grain
            forms.append({"sql": q.canonical().to_sql("sqlite"), "key": key, "rs": rs, "origin": origin, "same_grain": same})
        if not forms:
            continue
        forms.sort(key=lambda f: f["rs"])
        out[item.id] = {
            **asdict(item),
            "golds": list(item.golds),
            "answer": answer,
            "formulations": forms,
            "min_rs": forms[0]["rs"],
            "min_rs_same_grain": min(f["rs"] for f in forms if f["same_grain"]),
            "q_star": forms[0]["sql"],
            "gold_rs": min(f["rs"] for f in forms if f["origin"] == "gold") if any(f["origin"] == "gold" for f in forms) else None,
        }
        if progress:
            progress(f"[gt {n + 1}/{len(items)}] {item.id} {item.db}: {len(forms)} correct formulation(s)")
    return out


# --------------------------------------------------------------------------- synthetic databases
def pick_root(catalog: Catalog) -> str:
    """The private table with no private parent on a key that has the most tables below it."""
    private = [t.name for t in catalog.tables if t.private]
    children: dict[str, set[str]] = {t: set() for t in private}
    has_parent: set[str] = set()
    for fk in catalog.foreign_keys:
        if fk.table in children and fk.ref_table in children and fk.table.lower() != fk.ref_table.lower():
            children[fk.ref_table].add(fk.table)
            has_parent.add(fk.table)

    def below(t: str) -> int:
        seen, stack = {t}, [t]
        while stack:
            for c in children[stack.pop()]:
                if c not in seen:
                    seen.add(c)
                    stack.append(c)
        return len(seen)

    roots = [t for t in private if t not in has_parent] or private
    return max(sorted(roots), key=below)


def synthetic_path(cache: Path, item: Item, *, epsilon: str, delta: str, status: dict[str, Any], log: Callable[[str], None]) -> str | None:
    """Synthesize ``item``'s database once (cached); None when the synthesizer refuses it."""
    key = f"{item.source}/{item.db}"
    out = cache / "synthetic" / f"{key.replace('/', '__')}-eps{epsilon}.duckdb"
    if key in status:
        return status[key].get("path")
    out.parent.mkdir(parents=True, exist_ok=True)
    engine = open_engine(item.db_path)
    try:
        catalog = engine.introspect()
        root = pick_root(catalog)
        t0 = time.perf_counter()
        result = synthesize(engine, catalog, out, epsilon, delta, root=root, seed=0, overwrite=True)
        result.engine.close()
        status[key] = {"path": str(out), "root": root, "seconds": round(time.perf_counter() - t0, 2), "rows": result.rows}
        log(f"[synth] {key}: root {root}, {status[key]['seconds']} s")
    except PimentoError as exc:
        status[key] = {"path": None, "error": exc.one_line()}
        log(f"[synth] {key}: refused: {exc.one_line()}")
    except Exception as exc:  # noqa: BLE001 - a synthesizer crash excludes the database, recorded as such
        status[key] = {"path": None, "error": f"crash: {type(exc).__name__}: {exc}"}
        log(f"[synth] {key}: CRASH {type(exc).__name__}: {exc}")
    finally:
        engine.close()
    return status[key].get("path")


# --------------------------------------------------------------------------- methods
_VARIANTS = VARIANTS

#: method -> (warm start, how the query is chosen)
METHODS: dict[str, str] = {
    "gold-sql": "the gold SQL itself, no search (reference)",
    "gold-full": "gold SQL as the only warm start, full search, offline expander",
    "worst-sql": "the highest-RS correct formulation with the gold's grain itself, no search (reference)",
    "worst-full": "that highest-RS formulation as the only warm start, full search, offline expander",
    **{f"worst-{v}": f"that highest-RS formulation as the only warm start, search variant {v}" for v in _VARIANTS if v != "full"},
    "zero-shot": "offline parser top-1, no search",
    "top-k-rs": "offline parser top-10, the lowest RS on the synthetic database",
    "sens-prompt": "LLM zero-shot top-1 with the sensitivity prompt (needs --llm)",
    "llm-zero-shot": "LLM zero-shot top-1, plain prompt (needs --llm)",
    "llm-full": "LLM zero-shot top-K as warm start (offline parser if none is usable), full search with the LLM expander (needs --llm)",
    **{v: f"offline parser top-10 as warm start, search variant {v}" for v in _VARIANTS},
}

#: Methods that talk to the LLM given with --llm (one code path: :func:`_run_llm_method`).
LLM_METHODS = ("sens-prompt", "llm-zero-shot", "llm-full")


@dataclass
class _Question:
    """Everything the system side may see for one question: synthetic engine, catalog, warm starts."""

    item: Item
    synthetic: Engine
    catalog: Catalog
    beta: float
    parser: list[CountQuery] = field(default_factory=list)
    parser_seconds: float = 0.0
    gold: list[CountQuery] = field(default_factory=list)
    #: The correct formulation with the gold's grain and the highest RS on the real database: a
    #: warm start that is right but needlessly sensitive, as the paper's LLM zero-shot often is.
    worst: list[CountQuery] = field(default_factory=list)


def question_with_gold(item: Any, engine: Any, catalog: Catalog, beta: float, formulations: list[dict[str, Any]]) -> _Question:
    """A question on its synthetic copy ``engine`` with its first gold SQL that parses and the worst formulations of
    the same reading (the ground truth's ``formulations``): what every method of this benchmark is scored against."""
    q = _Question(item, engine, catalog, beta)
    for sql in item.golds:
        try:
            q.gold.append(parse_count_query(sql, catalog, dialect=item.dialect))
            break
        except PimentoError:
            continue
    q.worst = _worst_same_reading(formulations, q.gold, catalog)
    return q


def _worst_same_reading(formulations: list[dict[str, Any]], gold: list[CountQuery], catalog: Catalog) -> list[CountQuery]:
    """The highest-RS correct formulation that counts what the gold counts (same grain, DISTINCT included)."""
    if not gold:
        return []
    target = grain(gold[0].canonical(), catalog)
    best: tuple[float, CountQuery] | None = None
    for f in formulations:
        try:
            query = parse_count_query(f["sql"], catalog, dialect="sqlite")
        except PimentoError:
            continue
        if grain(query, catalog) == target and (best is None or f["rs"] > best[0]):
            best = (f["rs"], query)
    return [best[1]] if best else []


def _run_method(method: str, q: _Question, *, rollouts: int, llm: str | None, llm_k: int = 5) -> dict[str, Any]:
    t0 = time.perf_counter()
    out: dict[str, Any] = {"llm_calls": 0, "llm_tokens": 0}
    if method in ("gold-sql", "worst-sql"):
        start = q.gold if method == "gold-sql" else q.worst
        chosen = start[0] if start else None
        extra = 0.0
    elif method == "zero-shot":
        chosen = q.parser[0] if q.parser else None
        extra = q.parser_seconds
    elif method == "top-k-rs":
        oracle = residual_oracle(q.synthetic, q.catalog, q.beta, attribution=False)
        best = None
        for cand in q.parser[:10]:
            try:
                rs = oracle(cand).rs
            except PimentoError:
                continue
            if best is None or rs < best[0]:
                best = (rs, cand)
        chosen = best[1] if best else None
        extra = q.parser_seconds
    elif method in LLM_METHODS:
        if not llm:
            return {"skipped": "no --llm"}
        out.update(_run_llm_method(method, q, rollouts=rollouts, llm=llm, k=llm_k))
        chosen = out.pop("_query")
        extra = out.pop("parser_seconds", 0.0)  # the offline parser's time when llm-full fell back to it
    else:
        if method == "gold-full":
            warm, variant, extra = q.gold, "full", 0.0
        elif method.startswith("worst-"):
            warm, variant, extra = q.worst, method.removeprefix("worst-"), 0.0
        else:
            warm, variant, extra = q.parser, method, q.parser_seconds
        chosen = None
        if warm:
            config = config_for_variant(variant, rollouts=rollouts, seed=0)
            try:
                result = SensitivitySearch(q.synthetic, q.catalog, beta=q.beta, config=config).run(list(warm))
                chosen = result.query
                out.update(evaluations=result.evaluations, pruned=result.pruned, synthetic_rs=result.synthetic_rs)
            except PimentoError as exc:
                out["error"] = exc.one_line()
    out["seconds"] = time.perf_counter() - t0 + extra
    out["sql"] = chosen.to_sql("sqlite") if chosen is not None else None
    out["_query"] = chosen
    return out


def _run_llm_method(method: str, q: _Question, *, rollouts: int, llm: str, k: int) -> dict[str, Any]:
    """The LLM-driven methods: zero-shot top-1 (with or without the sensitivity hint), or the full search.

    All three draw zero-shot samples the same way (``generate_zero_shot`` on the synthetic copy's
    values); ``llm-full`` then searches from the usable samples (the offline parser's top-10 when
    none is usable, as ``pimento search --llm`` does) with the LLM expander wired exactly as
    ``pimento search``/``ask`` wire it (:func:`pimento.release.ask.llm_expander`: offline
    schema-graph expander as fallback). Records calls and tokens (:class:`pimento.llm.usage.Usage`),
    zero-shot samples drawn and dropped by reason, and the expander's events (unusable answers,
    offline fallbacks, proposals dropped by reason).
    """
    usage = Usage()
    unusable: dict[str, int] = {}
    out: dict[str, Any] = {"llm_samples": 0}
    chosen: CountQuery | None = None
    backend = None
    try:
        backend = open_backend(url=llm)
        values = SyntheticValues.from_engine(q.synthetic, q.catalog)
        samples = 1 if method != "llm-full" else k
        out["llm_samples"] = samples
        try:
            zs = generate_zero_shot(
                backend, q.catalog, q.item.question, k=samples, values=values, usage=usage,
                dialect=q.synthetic.dialect, low_sensitivity=method == "sens-prompt",
            )
            for reason, n in zs.dropped.items():
                unusable[f"zero_shot:{reason}"] = n
            warm = zs.distinct_queries
        except PimentoError as exc:  # endpoint unreachable, timeout: every sample is lost
            unusable["zero_shot:error"] = samples
            out["error"] = exc.one_line()
            warm = []
        zs_requests, zs_repairs = usage.requests, usage.repairs
        if method != "llm-full":
            chosen = warm[0] if warm else None
        else:
            out["llm_warm_start"] = len(warm)
            if not warm:
                warm = list(q.parser)
                out["llm_fallback"] = "parser"
                out["parser_seconds"] = q.parser_seconds
            if warm:
                config = config_for_variant("full", rollouts=rollouts, seed=0)
                if not out.get("llm_fallback"):
                    config = votes_for_samples(config)  # LLM samples are unordered: one vote each
                dropped: list[str] = []
                expander = llm_expander(llm, q.synthetic, q.catalog, q.item.question, usage, config, dropped)
                if expander is None:
                    out["expander_error"] = "; ".join(dropped)
                try:
                    result = SensitivitySearch(q.synthetic, q.catalog, beta=q.beta, config=config, expander=expander).run(warm)
                    chosen = result.query
                    out.update(evaluations=result.evaluations, pruned=result.pruned, synthetic_rs=result.synthetic_rs)
                except PimentoError as exc:
                    out["error"] = exc.one_line()
                finally:
                    events = dict(getattr(expander, "events", {}) or {})
                    out["expansion_events"] = events
                    # one request per expansion, plus one per repair round
                    out["llm_expansions"] = (usage.requests - zs_requests) - (usage.repairs - zs_repairs)
                    unusable.update({f"expansion:{e}": n for e, n in events.items() if e == "llm_unusable"})
                    closer = getattr(getattr(expander, "backend", None), "close", None)
                    if closer:
                        closer()
    except PimentoError as exc:
        out["error"] = exc.one_line()
    finally:
        closer = getattr(backend, "close", None)
        if closer:
            closer()
    out.update(
        llm_calls=usage.calls, llm_tokens=usage.total_tokens, llm_repairs=usage.repairs,
        llm_unusable=sum(unusable.values()), llm_unusable_by_reason=unusable, _query=chosen,
    )
    return out


def score(record: dict[str, Any], gt: dict[str, Any], chosen: CountQuery | None, real_rs: RealRS) -> dict[str, Any]:
    """Acc, Is-Min and Joint of one choice against the ground truth (real database)."""
    if chosen is None:
        return {"acc": False, "is_min": False, "joint": False, "rs_real": None, "beat_gt": False, "joint_same_grain": False}
    acc = real_answer(gt["db_path"], chosen) == gt["answer"]
    rs = real_rs(gt["db_path"], chosen)
    m = gt["min_rs"]
    equal = rs is not None and abs(rs - m) <= RS_TOL * max(abs(m), 1e-300)
    beat = bool(acc and rs is not None and rs < m and not equal)
    is_min = bool(equal or beat)
    m2 = gt["min_rs_same_grain"]
    is_min2 = rs is not None and (abs(rs - m2) <= RS_TOL * max(abs(m2), 1e-300) or (acc and rs < m2))
    return {"acc": acc, "is_min": is_min, "joint": acc and is_min, "rs_real": rs, "beat_gt": beat, "joint_same_grain": bool(acc and is_min2)}


def _progress(method: str, rec: dict[str, Any]) -> str:
    mark = "J" if rec["joint"] else ("A" if rec["acc"] else "-")
    if method not in LLM_METHODS:
        return f"{method}={mark}"
    return f"{method}={mark}(calls {rec.get('llm_calls', 0)}, unusable {rec.get('llm_unusable', 0)}/{rec.get('llm_samples', 0)}, {rec.get('seconds', 0):.0f} s)"


def summarize(method: str, rows: list[dict[str, Any]], zero_shot: dict[str, dict[str, Any]]) -> dict[str, Any]:
    n = len(rows)
    ratios = []
    for r in rows:
        z = zero_shot.get(r["id"])
        if z and z["acc"] and r["acc"] and z["rs_real"] and r["rs_real"]:
            ratios.append(z["rs_real"] / r["rs_real"])
    gm = math.exp(statistics.fmean(math.log(x) for x in ratios)) if ratios else None
    pct = lambda k: round(100 * sum(bool(r[k]) for r in rows) / n, 1) if n else 0.0  # noqa: E731
    secs = [r["seconds"] for r in rows if r.get("seconds") is not None]
    return {
        "method": method,
        "questions": n,
        "acc": pct("acc"),
        "is_min": pct("is_min"),
        "joint": pct("joint"),
        "joint_same_grain": pct("joint_same_grain"),
        "noise_reduction_gm": round(gm, 3) if gm else None,
        "noise_reduction_n": len(ratios),
        "no_answer": sum(r["sql"] is None for r in rows),
        "beat_ground_truth": sum(bool(r.get("beat_gt")) for r in rows),
        "seconds_mean": round(statistics.fmean(secs), 3) if secs else None,
        "seconds_median": round(statistics.median(secs), 3) if secs else None,
        "seconds_max": round(max(secs), 3) if secs else None,
        "llm_calls": round(statistics.fmean(r.get("llm_calls", 0) for r in rows), 2) if rows else 0,
        "llm_tokens": round(statistics.fmean(r.get("llm_tokens", 0) for r in rows), 1) if rows else 0,
        **(_llm_summary(rows) if method in LLM_METHODS else {}),
    }


def _llm_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """What the LLM gave: samples drawn and unusable (by reason), fallbacks, expander events, errors."""
    by_reason: dict[str, int] = {}
    events: dict[str, int] = {}
    for r in rows:
        for reason, n in r.get("llm_unusable_by_reason", {}).items():
            by_reason[reason] = by_reason.get(reason, 0) + n
        for event, n in r.get("expansion_events", {}).items():
            events[event] = events.get(event, 0) + n
    return {
        "llm_samples": sum(r.get("llm_samples", 0) for r in rows),
        "llm_expansions": sum(r.get("llm_expansions", 0) for r in rows),
        "llm_unusable": sum(r.get("llm_unusable", 0) for r in rows),
        "llm_unusable_by_reason": dict(sorted(by_reason.items())),
        "llm_repairs": sum(r.get("llm_repairs", 0) for r in rows),
        "llm_parser_fallback": sum(r.get("llm_fallback") == "parser" for r in rows),
        "llm_expansion_events": dict(sorted(events.items())),
        "llm_errors": sum(bool(r.get("error")) for r in rows),
    }


# --------------------------------------------------------------------------- driver
def _code_hash() -> str:
    root = Path(pimento.__file__).resolve().parent
    h = hashlib.sha256()
    for p in [*sorted((root / "search").glob("*.py")), *sorted((root / "nl").glob("*.py")), *sorted((root / "llm").glob("*.py")), Path(__file__)]:
        h.update(p.read_bytes())
    return h.hexdigest()[:12]


def _load(path: Path, default: Any) -> Any:
    return json.loads(path.read_text()) if path.is_file() else default


def _save(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1, default=str))
    tmp.replace(path)


def run(args: argparse.Namespace, log: Callable[[str], None]) -> dict[str, Any]:
    cache: Path = args.cache.expanduser()
    cache.mkdir(parents=True, exist_ok=True)
    beta = mechanism_for(args.epsilon, args.delta).beta_float()
    partition: str | None = getattr(args, "partition", None)
    sealed = partition == SEALED
    if sealed and getattr(args, "failures", False):
        raise SystemExit(_SEALED_FAILURES)
    sources = tuple(s.strip() for s in args.sources.split(",") if s.strip())
    items = load_items(args.data, sources, args.train_dbs, partition)
    rs_cache = _load(cache / "real_rs.json", {})
    real_rs = RealRS(beta, rs_cache)
    gt_file = cache / ("ground_truth.json" if partition is None else f"ground_truth-{partition}.json")
    params = {"version": GT_VERSION, "beta": beta, "sources": list(sources), "train_dbs": args.train_dbs}
    if partition is not None:
        params["partition"] = partition
    gt_doc = _load(gt_file, {})
    t0 = time.perf_counter()
    if gt_doc.get("params") != params:
        gt_doc = {"params": params, "items": build_ground_truth(items, real_rs, progress=log if args.verbose and not sealed else None)}
        gt_doc["seconds"] = round(time.perf_counter() - t0, 1)
        _save(gt_file, gt_doc)
        _save(cache / "real_rs.json", rs_cache)
    gt = gt_doc["items"]
    counts = {s: sum(1 for i in items if i.source == s) for s in ("spider-dev", "spider-train", "ambiqt")}
    in_class = {s: sum(1 for g in gt.values() if g["source"] == s) for s in counts}
    log(f"ground truth: {len(gt)} questions in the DP class ({in_class}); counting questions read: {counts}")

    chosen_items = [i for i in items if i.id in gt]
    if args.limit:
        step = max(1, len(chosen_items) // args.limit)
        chosen_items = chosen_items[::step][: args.limit]
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    for m in methods:
        if m not in METHODS:
            raise SystemExit(f"unknown method {m!r}: use {', '.join(METHODS)}")
    if "zero-shot" not in methods:
        methods.insert(0, "zero-shot")
    worst = [m for m in methods if m.startswith("worst-") and m != "worst-sql"]
    if worst and "worst-sql" not in methods:
        methods.insert(methods.index(worst[0]), "worst-sql")

    status_file = cache / "synthetic" / "status.json"
    status = _load(status_file, {})
    res_file = cache / f"results-r{args.rollouts}-gt{GT_VERSION}-{_code_hash()}{'' if partition is None else '-' + partition}.json"
    # sealed: per-question results stay in memory (never written, never resumed from disk)
    results: dict[str, dict[str, Any]] = {} if sealed else _load(res_file, {})
    rkey = {m: (f"{m}@{args.llm},k={args.llm_k}" if m in LLM_METHODS else m) for m in methods}
    indexes: dict[str, Any] = {}
    excluded = []
    for n, item in enumerate(chosen_items):
        todo = [m for m in methods if item.id not in results.get(rkey[m], {}) and (args.llm or m not in LLM_METHODS)]
        if not todo:
            continue
        syn = synthetic_path(cache, item, epsilon=args.syn_epsilon, delta=args.syn_delta, status=status, log=log)
        _save(status_file, status)
        if syn is None:
            excluded.append(item.id)
            continue
        engine = open_engine(syn, read_only=True)
        try:
            catalog = real_rs.catalog(item.db_path)  # schema metadata only
            q = question_with_gold(item, engine, catalog, beta, gt[item.id]["formulations"])
            if item.db_path not in indexes:
                indexes[item.db_path] = ValueIndex.from_engine(engine, catalog)
            tp = time.perf_counter()
            try:
                q.parser = [c.query for c in translate(item.question, catalog, values=indexes[item.db_path], k=10)]
            except (NotACountingQuestion, PimentoError):
                q.parser = []
            q.parser_seconds = time.perf_counter() - tp
            for m in todo:
                rec = _run_method(m, q, rollouts=args.rollouts, llm=args.llm, llm_k=args.llm_k)
                if rec.get("skipped"):
                    continue
                chosen = rec.pop("_query")
                rec.update(score(rec, gt[item.id], chosen, real_rs), id=item.id, source=item.source)
                results.setdefault(rkey[m], {})[item.id] = rec
        finally:
            engine.close()
        if args.verbose and sealed:
            log(f"[{n + 1}/{len(chosen_items)}]")
        elif args.verbose:
            log(f"[{n + 1}/{len(chosen_items)}] {item.id} {item.db}: " + " ".join(
                _progress(m, results[rkey[m]][item.id]) for m in todo if item.id in results.get(rkey[m], {})
            ))
        if n % 10 == 0 and not sealed:
            _save(res_file, results)
            _save(cache / "real_rs.json", rs_cache)
    if not sealed:  # sealed: neither the results nor the real RS of the chosen queries are written
        _save(res_file, results)
        _save(cache / "real_rs.json", rs_cache)
    real_rs.close()

    ids = {i.id for i in chosen_items} - set(excluded) - {k for k, v in status.items() if False}
    ids = {i for i in ids if all(i in results.get(rkey[m], {}) for m in methods if args.llm or m not in LLM_METHODS)}
    zero = results.get("zero-shot", {})
    summary = []
    for m in methods:
        rows = [r for i, r in results.get(rkey[m], {}).items() if i in ids]
        if m in LLM_METHODS and not args.llm:
            summary.append({"method": m, "not_run": "no --llm"})
            continue
        if m.startswith("worst-") and m != "worst-sql":
            baseline = results.get("worst-sql") or {}
            summary.append({**summarize(m, rows, baseline), "noise_reduction_vs": "worst-sql"})
        else:
            summary.append(summarize(m, rows, zero))
    gt_sizes = [len(gt[i]["formulations"]) for i in ids]
    varied = sum(1 for i in ids if len({round(f["rs"], 9) for f in gt[i]["formulations"]}) > 1)
    report: dict[str, Any] = {
        "params": {**params, "rollouts": args.rollouts, "syn_epsilon": args.syn_epsilon, "syn_delta": args.syn_delta, "limit": args.limit,
                   "llm": args.llm, "llm_k": args.llm_k if args.llm else None},
        "ground_truth": {
            "counting_questions": counts,
            "in_class": in_class,
            "seconds": gt_doc.get("seconds"),
            "evaluated": len(ids),
            "excluded_no_synthetic": len(excluded),
            "formulations_mean": round(statistics.fmean(gt_sizes), 2) if gt_sizes else None,
            "questions_with_rs_spread": varied,
            "coincidental_q_star": sum(1 for i in ids if gt[i]["min_rs_same_grain"] > gt[i]["min_rs"] * (1 + RS_TOL)),
            "gold_is_min": sum(1 for i in ids if gt[i]["gold_rs"] is not None and abs(gt[i]["gold_rs"] - gt[i]["min_rs"]) <= RS_TOL * gt[i]["min_rs"]),
        },
        "synthetic": {k: {kk: vv for kk, vv in v.items() if kk != "rows"} for k, v in status.items()},
        "methods": summary,
    }
    if partition is not None:
        report["partition"] = partition
        report["ground_truth"]["databases"] = len({gt[i]["db"] for i in ids})
        report["ground_truth"]["databases_in_class"] = len({gt[i.id]["db"] for i in chosen_items})
        report["in_class_all"] = _in_class_all(summary, results, rkey, ids, len(chosen_items))
    if getattr(args, "failures", False):
        report["failures"] = {m: _misses(results.get(rkey[m], {}), gt, ids) for m in methods if args.llm or m not in LLM_METHODS}
    return report


def _in_class_all(
    summary: list[dict[str, Any]], results: dict[str, dict[str, Any]], rkey: dict[str, str], ids: set[str], n_all: int
) -> dict[str, Any]:
    """Acc and Joint over every question of the DP class, a question left out (no synthetic copy) counted as wrong."""
    out: dict[str, Any] = {"questions": n_all}
    for m in summary:
        if "not_run" in m:
            continue
        rows = [r for i, r in results.get(rkey[m["method"]], {}).items() if i in ids]
        pct = lambda k: round(100 * sum(bool(r[k]) for r in rows) / n_all, 1) if n_all else 0.0  # noqa: E731
        out[m["method"]] = {"acc": pct("acc"), "joint": pct("joint")}
    return out


_SEALED_FAILURES = "--failures is refused on the sealed databases: only their aggregate figure is measured"


def _misses(rows: dict[str, dict[str, Any]], gt: dict[str, dict[str, Any]], ids: set[str]) -> list[dict[str, Any]]:
    """One method's questions that are not Joint, question by question (never for ``sealed``)."""
    return [
        {"id": i, "db": gt[i]["db"], "question": gt[i]["question"], "gold": gt[i]["golds"][0], "q_star": gt[i]["q_star"],
         "chosen": r["sql"], "acc": r["acc"], "is_min": r["is_min"]}
        for i, r in sorted(rows.items()) if i in ids and not r["joint"]
    ]


def markdown(report: dict[str, Any]) -> str:
    g = report["ground_truth"]
    lines = []
    if "partition" in report:
        lines.append(f"- partition: Spider train `{report['partition']}`, {g['databases']} databases evaluated of {g['databases_in_class']} in the DP class")
    lines += [
        f"- questions: {g['evaluated']} evaluated (counting questions read {g['counting_questions']}, in the DP class {g['in_class']}, "
        f"excluded for want of a synthetic database {g['excluded_no_synthetic']}); correct formulations per question {g['formulations_mean']}; "
        f"questions whose formulations differ in RS {g['questions_with_rs_spread']}; gold SQL already q* in {g['gold_is_min']}; "
        f"q* counts other rows than the gold (a coincidental answer match) in {g['coincidental_q_star']}",
        "",
        "| method | Acc % | Is-Min % | Joint % | Joint, same-grain q* % | noise reduction vs zero-shot (gm, n) | s / question (mean, max) | LLM calls / q | tokens / q |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for m in report["methods"]:
        if "not_run" in m:
            lines.append(f"| {m['method']} | not run: {m['not_run']} | | | | | | | |")
            continue
        nr = f"{m['noise_reduction_gm']}x ({m['noise_reduction_n']})" if m["noise_reduction_gm"] else "-"
        if m.get("noise_reduction_vs"):
            nr += f" vs {m['noise_reduction_vs']}"
        lines.append(
            f"| {m['method']} | {m['acc']} | {m['is_min']} | {m['joint']} | {m['joint_same_grain']} | {nr} | {m['seconds_mean']}, {m['seconds_max']} | {m['llm_calls']} | {m['llm_tokens']} |"
        )
    if "in_class_all" in report:
        a = report["in_class_all"]
        lines.append(
            f"- every question of the DP class ({a['questions']}), one without a synthetic copy counted as wrong: "
            + "; ".join(f"{k} Acc {v['acc']}, Joint {v['joint']}" for k, v in a.items() if k != "questions")
        )
    for m in report["methods"]:
        if "llm_samples" in m:
            lines.append(
                f"- {m['method']}: unusable LLM outputs {m['llm_unusable']} of {m['llm_samples']} zero-shot samples and "
                f"{m['llm_expansions']} expansion answers {m['llm_unusable_by_reason']}; repair rounds {m['llm_repairs']}; offline parser as warm start in "
                f"{m['llm_parser_fallback']} question(s); expander events {m['llm_expansion_events']}; errors {m['llm_errors']}"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--cache", type=Path, default=Path("~/.cache/pimento/dp_text2sql"))
    parser.add_argument("--sources", default=None, help="default dev,train,ambiqt; train with --partition")
    parser.add_argument("--train-dbs", type=int, default=12, help="Spider-train databases, evenly spaced by name")
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--limit", type=int, default=0, help="evaluate an evenly spaced sample of this many questions")
    parser.add_argument("--rollouts", type=int, default=10)
    parser.add_argument("--epsilon", default="1")
    parser.add_argument("--delta", default="1e-6")
    parser.add_argument("--syn-epsilon", default="1.6")
    parser.add_argument("--syn-delta", default="1e-6")
    parser.add_argument("--llm", default=None, help="LLM endpoint for the LLM-driven methods (OpenAI-compatible http(s) URL, or replay:DIR)")
    parser.add_argument("--llm-k", type=int, default=5, help="zero-shot samples drawn by llm-full (the others draw 1)")
    parser.add_argument("--json", type=Path, default=None, help="also write the report as JSON here")
    parser.add_argument("-v", "--verbose", action="store_true")
    parser.add_argument(
        "--partition", choices=PARTITIONS, default=None,
        help="Spider-train questions of one part of nl_spider's hash split instead of the default sources (sealed: aggregate only)",
    )
    parser.add_argument("--failures", action="store_true", help="print each method's misses (refused on sealed)")
    args = parser.parse_args(argv)
    if args.sources is None:
        args.sources = "train" if args.partition else "dev,train,ambiqt"
    elif args.partition and args.sources.replace(" ", "") != "train":
        parser.error("--partition selects Spider-train databases: --sources must be train (or left out)")
    if args.failures and args.partition == SEALED:
        parser.error(_SEALED_FAILURES)
    report = run(args, lambda s: print(s, file=sys.stderr, flush=True))
    if args.json:
        _save(args.json, report)
    print(markdown(report))
    for method, misses in report.get("failures", {}).items():
        print(f"\n## {method}: {len(misses)} question(s) not Joint")
        for miss in misses:
            print(json.dumps(miss))


if __name__ == "__main__":
    main()
