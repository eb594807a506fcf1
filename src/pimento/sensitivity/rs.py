"""Residual sensitivity of a CountQuery: T_E from the engine, exact envelope, Shapley attribution."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from pimento.engines.base import Engine
from pimento.errors import CatalogError, InternalError
from pimento.schema import Catalog
from pimento.sensitivity.attribution import attribute
from pimento.sensitivity.envelope import check_beta, maximize_envelope, round_up_float
from pimento.sensitivity.residual import ResidualCounts, compute_te, needed_subsets, te_key
from pimento.sql.ir import CountQuery

__all__ = ["ResidualSensitivity", "private_relations", "residual_sensitivity", "rs_from_te"]


@dataclass(frozen=True)
class ResidualSensitivity:
    """RS_beta of a query on one database, with everything needed to explain and reuse it.

    ``rs`` is an exact rational upper bound of the true RS (rounded up, never down); use
    ``rs_float`` (also rounded up) for display or float-based mechanisms.
    """

    rs: Fraction
    ls: int
    beta: float
    gs: int | None
    k_star: int
    s_star: Mapping[str, int]
    argmax: str | None
    relations: tuple[str, ...]
    private: tuple[str, ...]
    te: Mapping[str, int]
    shapley: Mapping[str, float]
    count_sql_statements: int
    seconds: float
    envelope_seconds: float = 0.0
    te_seconds: float = 0.0
    sql: tuple[str, ...] = field(default=(), repr=False)

    @property
    def rs_float(self) -> float:
        return round_up_float(self.rs)

    def to_dict(self) -> dict[str, Any]:
        return {
            "rs": self.rs_float,
            "rs_exact": f"{self.rs.numerator}/{self.rs.denominator}" if self.rs.denominator != 1 else str(self.rs.numerator),
            "ls": self.ls,
            "beta": self.beta,
            "gs": self.gs,
            "k_star": self.k_star,
            "s_star": dict(self.s_star),
            "argmax": self.argmax,
            "relations": list(self.relations),
            "private": list(self.private),
            "T_E": dict(self.te),
            "shapley": dict(self.shapley),
            "count_sql_statements": self.count_sql_statements,
            "seconds": self.seconds,
            "te_seconds": self.te_seconds,
            "envelope_seconds": self.envelope_seconds,
        }


def private_relations(query: CountQuery, catalog: Catalog | None) -> tuple[str, ...]:
    """Aliases of the query's relations whose table the catalog marks private (all when no catalog)."""
    if catalog is None:
        return query.aliases
    out = []
    for rel in query.relations:
        if not catalog.has_table(rel.table):
            raise CatalogError(f"table {rel.table!r} of the query is not in the catalog")
        if catalog.is_private(rel.table):
            out.append(rel.alias)
    return tuple(out)


def _default_gs(query: CountQuery, gs: int | None) -> int | None:
    if gs is not None:
        if isinstance(gs, bool) or not isinstance(gs, int) or gs < 0:
            raise InternalError(f"gs must be a non-negative int, got {gs!r}")
        return gs
    return 1 if len(query.relations) == 1 else None


def rs_from_te(
    query: CountQuery,
    private: Iterable[str],
    te: Mapping[frozenset[str], int] | ResidualCounts,
    beta: float,
    *,
    gs: int | None = None,
    statements: int = 0,
    te_seconds: float = 0.0,
    attribution: bool = True,
) -> ResidualSensitivity:
    """RS from T_E values computed earlier (the search caches them per sub-query)."""
    started = time.perf_counter()
    beta = check_beta(beta)
    values = te.values if isinstance(te, ResidualCounts) else te
    values = dict(values)
    values.setdefault(frozenset(), 1)
    relations = query.aliases
    priv = tuple(a for a in relations if a in set(private))
    gs = _default_gs(query, gs)
    env = maximize_envelope(relations, priv, values, beta, gs=gs)
    shapley: dict[str, float] = {a: 0.0 for a in relations}
    if attribution and priv:
        shapley = attribute(relations, priv, values, env.s_star, env.k_star, beta, gs=gs).shapley
    shown = {te_key(s): v for s, v in sorted(values.items(), key=lambda kv: (len(kv[0]), sorted(kv[0])))}
    return ResidualSensitivity(
        rs=env.rs,
        ls=env.ls,
        beta=beta,
        gs=gs,
        k_star=env.k_star,
        s_star=dict(env.s_star),
        argmax=env.argmax,
        relations=relations,
        private=priv,
        te=shown,
        shapley=shapley,
        count_sql_statements=statements,
        seconds=te_seconds + (time.perf_counter() - started),
        envelope_seconds=env.seconds,
        te_seconds=te_seconds,
    )


def residual_sensitivity(
    engine: Engine,
    query: CountQuery,
    catalog: Catalog | None,
    beta: float,
    *,
    gs: int | None = None,
    private: Iterable[str] | None = None,
    attribution: bool = True,
    timeout_s: float | None = None,
) -> ResidualSensitivity:
    """RS_beta(query) on the database behind ``engine``.

    Args:
        engine: an :class:`~pimento.engines.Engine` over the (private) database.
        query: the counting query.
        catalog: says which relations are private (``None``: all are).
        beta: smoothing parameter, > 0.
        gs: global sensitivity cap; default 1 for a single-relation count, unbounded otherwise.
        private: override the private aliases (default: from the catalog).
        attribution: also compute the T_E the Shapley values need, and the Shapley values.
    """
    started = time.perf_counter()
    beta = check_beta(beta)
    priv = tuple(private) if private is not None else private_relations(query, catalog)
    unknown = set(priv) - set(query.aliases)
    if unknown:
        raise CatalogError(f"private relations {sorted(unknown)} are not in the query", hint=f"the query has {', '.join(query.aliases)}")
    counts = compute_te(engine, query, catalog, needed_subsets(query, priv, attribution=attribution), timeout_s=timeout_s)
    result = rs_from_te(
        query, priv, counts, beta, gs=gs, statements=counts.statements, te_seconds=counts.seconds, attribution=attribution
    )
    return ResidualSensitivity(
        **{**result.__dict__, "seconds": time.perf_counter() - started, "sql": counts.sql}
    )
