"""DP mode, the search half: question -> candidates -> search on the synthetic database.

:func:`search_question` runs the search alone: it reads the SYNTHETIC database only (the catalog
is schema metadata, which prompts and the search may use). :meth:`pimento.release.session.Session.ask`
then releases the chosen query on the private database (charge first, then count and residual
sensitivity there). A search that finds nothing raises before anything is spent. This module
does not release anything and does not import the session.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pimento.engines import Engine, open_engine
from pimento.errors import DataSourceError, PimentoError, SearchError, UserError
from pimento.llm.usage import Usage
from pimento.nl import translate
from pimento.nl.values import ValueIndex
from pimento.schema import Catalog
from pimento.schema.synthetic import SYNTH_META_TABLE, default_synthetic_path
from pimento.search import SearchConfig, SearchResult, SensitivitySearch
from pimento.search.config import votes_for_samples
from pimento.search.evaluate import ErrorModel
from pimento.sql import CountQuery, parse_count_query

if TYPE_CHECKING:
    from pimento.config import Settings
    from pimento.search.llm_expander import LLMExpander

__all__ = ["SearchOutcome", "default_synthetic_path", "llm_expander", "open_synthetic", "resolve_synthetic", "search_question"]


#: How a search note that the LLM could not be used begins (the CLI, the service and the page show
#: these notes: an analyst who asked for an LLM learns that the offline parser answered instead).
LLM_UNUSABLE = "LLM unreachable or unusable"


@dataclass(frozen=True)
class SearchOutcome:
    """The search's choice, where its warm start came from, and what it cost."""

    result: SearchResult
    candidates: tuple[str, ...]
    dropped: tuple[str, ...]
    llm_calls: int
    llm_tokens: int
    seconds: float

    @property
    def notes(self) -> tuple[str, ...]:
        """What the analyst should be told about how the interpretation was found (the LLM fell back)."""
        return tuple(n for n in self.dropped if n.startswith(LLM_UNUSABLE) or n.startswith("LLM expansion: offline_fallback"))

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.result.to_dict(),
            "warm_start": list(self.candidates),
            "dropped_candidates": list(self.dropped),
            "notes": list(self.notes),
            "llm_calls": self.llm_calls,
            "llm_tokens": self.llm_tokens,
            "search_seconds": round(self.seconds, 4),
        }


def resolve_synthetic(given: str | Path | None, location: str | Path, settings: Settings | None = None) -> Path:
    """The synthetic database to search: ``--synthetic``, else ``[synth] path``, else ``DB.synthetic.duckdb``.

    Never falls back to the private database: without a synthetic copy the caller gets a
    DataSourceError naming the places looked at and how to make one.
    """
    if given:
        return Path(str(given))
    configured = settings.synth.path if settings is not None else None
    if settings is not None and configured:
        path = Path(settings.resolve(configured))
        if not path.exists():
            raise DataSourceError(
                f"[synth] path in pimento.toml names {path}, which does not exist",
                hint="create it with `pimento synth --db DB --out PATH --epsilon E --delta D`, or fix the path",
            )
        return path
    beside = default_synthetic_path(location)
    if beside.exists():
        return beside
    raise DataSourceError(
        f"no synthetic database given: no --synthetic, no [synth] path in pimento.toml, and no {beside.name} beside the database",
        hint=f"create one with `pimento synth --db {location} --out {beside} --epsilon 1.6 --delta 1e-6`, or pass --synthetic",
    )


def open_synthetic(path: str | Path, *, require_marker: bool = True) -> Engine:
    """Open a synthetic database read-only; refuse a database that ``pimento synth`` did not write."""
    engine = open_engine(str(path), read_only=True)
    if require_marker:
        try:
            engine.execute(f"SELECT COUNT(*) FROM {SYNTH_META_TABLE}")
        except PimentoError:
            engine.close()
            raise DataSourceError(
                f"{path} is not a synthetic database written by `pimento synth` (no {SYNTH_META_TABLE} table)",
                hint="create one with `pimento synth --db DB --out SYN.duckdb --epsilon E --delta D`",
            ) from None
    return engine


def search_question(
    question: str,
    synthetic: Engine,
    catalog: Catalog,
    *,
    beta: float,
    seed_sql: tuple[str, ...] = (),
    k: int = 10,
    config: SearchConfig | None = None,
    llm: str | None = None,
    error_model: ErrorModel | None = None,
) -> SearchOutcome:
    """Warm-start candidates (analyst SQL, then LLM or offline parser) and the search, on ``synthetic`` only.

    ``error_model``: what the search compares formulations by
    (:func:`pimento.release.predicted_error.error_model`: the noise of the answer the release
    would give); None compares RS, as the paper does.
    """
    start = time.perf_counter()
    candidates: list[CountQuery] = []
    dropped: list[str] = []
    for sql in seed_sql:
        try:
            candidates.append(parse_count_query(sql, catalog))
        except UserError as exc:
            dropped.append(f"--seed-sql {sql!r}: {exc.one_line()}")
    usage = Usage()
    config = config or SearchConfig()
    llm_failed = False
    if question:
        notes_before = len(dropped)
        translated, sampled = _translated(question, synthetic, catalog, k=k, llm=llm, usage=usage, dropped=dropped)
        llm_failed = any(note.startswith(LLM_UNUSABLE) for note in dropped[notes_before:])
        candidates.extend(translated)
        if sampled:
            config = votes_for_samples(config)  # LLM samples are unordered: one vote each
    if not candidates:
        raise SearchError(
            "no DP-compatible formulation of the question was found; nothing was spent",
            hint="; ".join(dropped) if dropped else "rephrase the question or pass --seed-sql",
        )
    expander = None
    if llm and question and not llm_failed:  # an endpoint that just failed is not tried again per expansion
        expander = llm_expander(llm, synthetic, catalog, question, usage, config, dropped)
    search = SensitivitySearch(synthetic, catalog, beta=beta, config=config, expander=expander, error_model=error_model)
    result = search.run(candidates)
    events = getattr(expander, "events", None)
    if events:
        dropped.extend(f"LLM expansion: {reason} x{n}" for reason, n in sorted(events.items()))
    return SearchOutcome(
        result,
        tuple(q.to_sql(synthetic.dialect) for q in candidates),
        tuple(dropped),
        usage.calls,
        usage.total_tokens,
        time.perf_counter() - start,
    )


def llm_expander(
    llm: str, synthetic: Engine, catalog: Catalog, question: str, usage: Usage, config: SearchConfig, dropped: list[str]
) -> LLMExpander | None:
    """The LLM expander of ``config`` (:func:`pimento.search.llm_expander.open_llm_expander`), or None
    with the reason appended to ``dropped`` when the endpoint cannot be used (the search then
    expands offline)."""
    from pimento.search.llm_expander import open_llm_expander

    try:
        return open_llm_expander(
            llm, synthetic, catalog, question, usage=usage, max_relations=config.max_relations, size=config.expansion_size
        )
    except UserError as exc:
        dropped.append(f"{LLM_UNUSABLE}, offline expander used: {exc.one_line()}")
        return None


def _translated(
    question: str, synthetic: Engine, catalog: Catalog, *, k: int, llm: str | None, usage: Usage, dropped: list[str]
) -> tuple[list[CountQuery], bool]:
    """Warm starts from the question, and whether they are LLM samples (else the parser's ranked list)."""
    out: list[CountQuery] = []
    if llm:
        from pimento.llm import SyntheticValues, generate_zero_shot, open_backend

        try:
            backend = open_backend(url=llm)
            values = SyntheticValues.from_engine(synthetic, catalog)
            zero_shot = generate_zero_shot(backend, catalog, question, k=k, values=values, usage=usage, dialect=synthetic.dialect)
            out.extend(zero_shot.distinct_queries)
            dropped.extend(f"{n} LLM sample(s) dropped: {reason}" for reason, n in zero_shot.dropped.items())
        except UserError as exc:
            dropped.append(f"{LLM_UNUSABLE}, offline parser used instead: {exc.one_line()}")
    if out:
        return out, True
    values_index = ValueIndex.from_engine(synthetic, catalog)
    try:
        out.extend(c.query for c in translate(question, catalog, values=values_index, k=k))
    except UserError as exc:
        dropped.append(f"offline parser: {exc.one_line()}")
    return out, False
