"""The release of a grouped COUNT, a SUM or an AVG (grouped or not): one charge, one noisy vector per part.

A noisy mode hands SQL of this shape (:func:`looks_aggregate`) to :func:`release_aggregate`
(``dp``; ``split`` and ``contextual`` refuse it, :meth:`pimento.release.modes.noisy.NoisyMode.release_aggregate`).
In order, nothing the analyst observes before the charge depending on the private data:

1. **before the charge**, from public inputs only (:func:`plan`): the SQL parsed on the public
   schema (:func:`pimento.sql.parse.parse_aggregate_query`; self-joins refused), the column's
   clipping bounds from ``[bounds]`` (a SUM or AVG without them is refused, naming the key to add) or
   the narrower ones the request gave (``Request.bounds``, admitted inside them), the groups
   (:mod:`pimento.release.aggregate_domains`: a public domain, every value shown, zeros included;
   or partition selection for the private keys of a single relation when delta > 0; or a refusal), the
   cap ``[release] max_groups``, the mechanism of every part (its beta for the vector's dimension, its
   range checked: nothing can fail later), and the rows the synthetic copy predicts are clipped;
2. **the charge** (:func:`pimento.mechanisms.guarded.guarded_vector_release`: cache look-up and
   charge in one transaction, keyed by the SQL, the mode and the public plan);
3. **after the charge** (:func:`_release`): the SQL that clips in the engine runs on the private
   data; each group's value is looked up in the domain (a key outside it is dropped, never an
   error), the sensitivity of the ungrouped count is computed (:func:`pimento.sensitivity.grouped.grouped_sensitivity`,
   or the public global sensitivity for one relation), and each part is released; a failure here
   halts the deployment.

The sensitivity argument is in ``sensitivity/PROOF.md`` (section 5); sums are released in units of a
grid ``g`` (:func:`sum_grid`): each group's clipped sum is rounded to the grid, which moves a group
the neighbour changes by at most ``g`` more, so the L1 bound per join result becomes ``B/g + 2`` units
(one ``g`` for the rounding, one for the engine's floating-point summation, assumed below ``g``).
An AVG is the noisy SUM over the noisy COUNT, each released with half the budget.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from fractions import Fraction
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any, cast

import sqlglot
from sqlglot import exp

from pimento.config import declared_bounds
from pimento.errors import InternalError, ModeError, PimentoError, PrivacyParameterError, UnsupportedQuery
from pimento.mechanisms.budget import Budget
from pimento.mechanisms.guarded import GuardedVector, guarded_vector_release
from pimento.mechanisms.partition_selection import Contribution, laplace_threshold, select_partitions, shown_probability
from pimento.mechanisms.smooth import GlobalLaplace, SmoothLaplace, SmoothQuartic, mechanism_for
from pimento.mechanisms.vector_smooth import VectorSmoothLaplace, VectorSmoothQuartic
from pimento.numbers import format_number
from pimento.release.aggregate_answer import GroupedRelease, VectorPart
from pimento.release.ask import open_synthetic, resolve_synthetic
from pimento.release.aggregate_domains import column_domain, key_of, public_groups, shown_value
from pimento.release.synthetic import synthetic_guarantee
from pimento.sensitivity.grouped import check_no_self_join, grouped_sensitivity
from pimento.sensitivity.neighbourhood import Neighbourhood
from pimento.sql.allowlist import check_runs_on
from pimento.sql.ir import AggregateKind, AggregateQuery, ClipBounds, CountQuery, Selection, quoted_if_needed
from pimento.sql.parse import parse_aggregate_query

if TYPE_CHECKING:
    from pimento.release.admission import Admitted
    from pimento.release.request import NarrowedBounds
    from pimento.release.modes.base import Private

__all__ = ["AggregatePlan", "looks_aggregate", "plan", "release_aggregate", "sum_grid"]

#: Group sizes at which an answer under partition selection states the probability of being shown.
SHOWN_AT = (1, 10, 20, 50, 100)


#: Words one of which the upper-cased SQL text holds whenever sqlglot reads a GROUP BY (its token ``GROUP BY``) or a
#: SUM or AVG (the only names of sqlglot's functions that build ``exp.Sum`` or ``exp.Avg``; sqlglot matches keywords
#: and function names on ``str.upper`` of the token's text, and ``str.upper`` maps character by character, so the
#: word is in ``sql.upper()`` too). Pinned against sqlglot's function table by ``tests/unit/release/test_perf8_aggregate_words.py``.
AGGREGATE_WORDS = ("GROUP", "SUM", "AVG")


def looks_aggregate(sql: str) -> bool:
    """Whether ``sql`` is a grouped or summed SELECT (GROUP BY, SUM or AVG), by its syntax alone; False if unparsable.

    Text holding none of :data:`AGGREGATE_WORDS` is not parsed (the answer would be False): a plain count, most
    fresh releases, no longer pays a second sqlglot parse here."""
    upper = sql.upper()
    if not any(word in upper for word in AGGREGATE_WORDS):
        return False
    return _parsed_aggregate(sql)


def _parsed_aggregate(sql: str) -> bool:
    """:func:`looks_aggregate`'s verdict from the parse alone (GROUP BY, or SUM/AVG in the select list)."""
    try:
        tree = sqlglot.parse_one(sql)
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError, RecursionError, ValueError):
        return False
    if not isinstance(tree, exp.Select):
        return False
    if tree.args.get("group") is not None:
        return True
    return any(e.find(exp.Sum, exp.Avg) is not None for e in tree.expressions)


@dataclass(frozen=True)
class _Part:
    """One vector to release: its name, mechanism and the factor from the count's sensitivity to its own (grid units)."""

    name: str
    mechanism: Any
    factor: Fraction


@dataclass(frozen=True)
class AggregatePlan:
    """Everything a grouped or summed release decided before the charge (module docstring, step 1)."""

    query: AggregateQuery
    sql: str
    keys: tuple[tuple[Any, ...], ...] | None
    domain: str
    grid: Fraction
    parts: tuple[_Part, ...]
    cost: Budget
    budget_split: str | None
    selection: Contribution | None
    neighbours: Neighbourhood
    max_groups: int
    clipped_on_copy: dict[str, Any] | None

    @property
    def dimension(self) -> int:
        return 1 if self.keys is None else len(self.keys)

    def cache_mode(self, mode: str) -> str:
        """The mode part of the cache key: the public plan (groups, bounds, grid), so another domain is another answer."""
        fingerprint = json.dumps([[shown_value(v) for v in k] for k in self.keys or ()], default=str)
        digest = hashlib.sha256(f"{fingerprint}|{self.grid}|{self.max_groups}|{self.neighbours}".encode()).hexdigest()[:16]
        return f"{mode}:aggregate:{digest}"


# --------------------------------------------------------------------------- before the charge


def _and_selection(body: CountQuery, alias: str, predicate: exp.Expr) -> CountQuery:
    """``body`` with ``predicate`` (columns qualified by ``alias``) ANDed to that relation's selection."""
    old = body.selection_of(alias)
    merged = predicate if old is None else exp.and_(exp.paren(sqlglot.parse_one(old)), exp.paren(predicate))
    others = tuple(sel for sel in body.selections if sel.alias != alias)
    return replace(body, selections=(*others, Selection(alias, merged.sql())))


# proof: domain-filter
def _restricted_to_domain(query: AggregateQuery, domains: list[list[Any]]) -> AggregateQuery:
    """The query with each group column restricted to its public domain (``col IN (...)``), where the values are text or integers.

    The histogram restricted to the domain is the histogram of this query (the same coordinates, the
    others dropped), so its sensitivity is bounded by this query's count, never more than the
    unrestricted one's; and the engine returns at most the domain's groups (memory bounded by a public number).
    """
    body = query.body
    for attr, values in zip(query.group_by, domains, strict=True):
        if not values or not all(isinstance(v, (str, int)) and not isinstance(v, bool) for v in values):
            continue  # other types (dates, decimals) are matched after the query, by key_of
        literals = [exp.Literal.string(v) if isinstance(v, str) else exp.Literal.number(v) for v in values]
        column = exp.column(quoted_if_needed(attr.column), table=quoted_if_needed(attr.alias))
        body = _and_selection(body, attr.alias, exp.In(this=column, expressions=literals))
    return replace(query, body=body)


def sum_grid(query: AggregateQuery, catalog: Any) -> tuple[Fraction, bool]:
    """The grid of a SUM part and whether its clipped sums are exact on it (an integer column, integer bounds).

    Otherwise the grid is a hundredth of the bounds' last decimal place, and sums are rounded to it.
    """
    assert query.bounds is not None and query.column is not None
    lo, hi = query.bounds.lower, query.bounds.upper
    table = query.body.relation(query.column.alias).table
    if catalog.table(table).column(query.column.column).type == "integer" and lo.denominator == 1 and hi.denominator == 1:
        return Fraction(1), True
    places = 0
    while (lo * 10**places).denominator != 1 or (hi * 10**places).denominator != 1:
        places += 1
    return Fraction(1, 10 ** (places + 2)), False


def _unused_bounds(narrowed: tuple[NarrowedBounds, ...], summed: str | None) -> PrivacyParameterError:
    """The refusal of narrowed bounds the query does not sum (``summed``: its ``Table.column``, None for a COUNT)."""
    names = ", ".join(b.column for b in narrowed)
    reads = f"it sums {summed}" if summed is not None else "it sums nothing"
    return PrivacyParameterError(f"--bounds name {names}, which this query does not clip ({reads})",
                                 hint="give --bounds only for the column of the SUM or AVG" if summed else "leave --bounds out for a COUNT")


def _with_bounds(query: AggregateQuery, private: Private, job: Admitted) -> AggregateQuery:
    """The query with its clipping bounds: the analyst's narrowed ones for its column, else the custodian's ``[bounds]``.

    Narrowed bounds were checked against the declared ones at admission (:func:`pimento.release.admission.admitted_bounds`);
    for SQL the analyst wrote, bounds naming another column than the summed one are refused here (a question's reading may not
    sum the column its bounds name: they are then unused, and the answer states the bounds it used).
    """
    narrowed = job.request.bounds
    explicit = job.request.question is None
    if query.kind is AggregateKind.COUNT:
        if narrowed and explicit:
            raise _unused_bounds(narrowed, None)
        return query
    assert query.column is not None
    table = query.body.relation(query.column.alias).table
    summed = f"{table}.{query.column.column}"
    mine = [b for b in narrowed if b.column.lower() == summed.lower()]
    if explicit and len(mine) != len(narrowed):
        raise _unused_bounds(tuple(b for b in narrowed if b not in mine), summed)
    declared = declared_bounds(private.database.settings, table, query.column.column)
    if declared is None:
        raise UnsupportedQuery(
            "unbounded_sum",
            f"{query.kind.value.upper()}({summed}) needs clipping bounds, and none are declared",
            hint=f'the custodian adds "{summed}" = [LOWER, UPPER] under [bounds] in pimento.toml',
        )
    if mine:
        if not declared[0] <= mine[0].lower <= mine[0].upper <= declared[1]:  # admission refused it; never widen here
            raise InternalError(f"narrowed bounds {mine[0].to_text()} outside the declared ones reached the plan")
        bounds = ClipBounds(mine[0].lower, mine[0].upper)
    else:
        bounds = ClipBounds(*declared)
    if bounds.bound == 0:
        raise UnsupportedQuery("empty_bounds", f"the bounds of {summed} are [0, 0]: every sum is 0",
                               hint="narrow to an interval other than [0, 0]" if mine else "the custodian declares a wider [bounds] interval")
    return query.with_bounds(bounds)


def _mechanism(budget: Budget, *, relations: int, gs: Fraction, dimension: int, share: str) -> Any:
    """The mechanism of one part, admitted now: Laplace at the public GS for one relation, else the smooth one
    (the scalar mechanism for one value, whose beta is larger; the vector one, its beta for d coordinates, otherwise)."""
    if relations == 1:
        assert gs.denominator == 1, "one relation: GS in grid units is an integer"
        return GlobalLaplace(Budget.spend(budget.epsilon), gs=int(gs))
    if dimension == 1:
        return mechanism_for(budget.epsilon, budget.delta or None, share=share).admit()
    cls = VectorSmoothLaplace if budget.delta else VectorSmoothQuartic
    mech = cls(budget, dimension=dimension, share=Fraction(share))
    mech.admit()
    return mech


def plan(private: Private, job: Admitted) -> AggregatePlan:
    """Step 1 of the module docstring: everything that can refuse, decided on public inputs."""
    database = private.database
    settings = database.settings
    query = parse_aggregate_query(job.sql, database.catalog, max_chars=settings.database.max_sql_chars)
    check_no_self_join(query)
    check_runs_on(query.body, database.engine.dialect)
    assert job.mechanism is not None and job.request.epsilon is not None
    job.mechanism.for_relations(len(query.body.relations))  # more relations than a release supports: refused here
    query = _with_bounds(query, private, job)
    neighbours = job.neighbours or Neighbourhood.ADD_REMOVE
    base = Fraction(1) if neighbours is Neighbourhood.ADD_REMOVE else Fraction(2)
    relations = len(query.body.relations)
    budget = Budget.spend(job.request.epsilon, job.request.delta)
    max_groups = settings.release.max_groups
    keys, domain, selection, domains = _groups(query, private, budget, relations, max_groups)
    if domains:
        query = _restricted_to_domain(query, domains)
    dimension = 1 if keys is None else len(keys)
    grid, exact = (Fraction(1), True) if query.kind is AggregateKind.COUNT else sum_grid(query, database.catalog)
    sum_factor = Fraction(0) if query.bounds is None else (query.bounds.bound / grid if exact else query.bounds.bound / grid + 2)
    share = settings.release.rs_bound_share
    split = None
    if selection is not None:
        parts: tuple[_Part, ...] = ()
        cost = budget
    elif query.kind is AggregateKind.AVG:
        half = Budget(budget.epsilon / 2, budget.delta / 2).as_spend()
        parts = (
            _Part("sum", _mechanism(half, relations=relations, gs=base * sum_factor, dimension=dimension, share=share), base * sum_factor),
            _Part("count", _mechanism(half, relations=relations, gs=base, dimension=dimension, share=share), base),
        )
        each = parts[0].mechanism.privacy_cost()
        cost = sum((p.mechanism.privacy_cost() for p in parts), Budget.zero())
        split = (f"half for the SUM (epsilon {format_number(each.epsilon)}, delta {format_number(each.delta)}), "
                 "half for the COUNT of non-NULL values; the average is their ratio")
    else:
        factor = base if query.kind is AggregateKind.COUNT else base * sum_factor
        name = "count" if query.kind is AggregateKind.COUNT else "sum"
        parts = (_Part(name, _mechanism(budget, relations=relations, gs=factor, dimension=dimension, share=share), factor),)
        cost = parts[0].mechanism.privacy_cost()
    return AggregatePlan(
        query=query, sql=query.to_sql(database.engine.dialect), keys=keys, domain=domain, grid=grid, parts=parts, cost=cost,
        budget_split=split, selection=selection, neighbours=neighbours, max_groups=max_groups,
        clipped_on_copy=_clipped_on_copy(query, private),
    )


def _groups(
    query: AggregateQuery, private: Private, budget: Budget, relations: int, max_groups: int
) -> tuple[tuple[tuple[Any, ...], ...] | None, str, Contribution | None, list[list[Any]]]:
    """The public groups (None for partition selection), their origin, the selection's bounds, each column's domain."""
    if not query.group_by:
        return ((),), "no GROUP BY: one value", None, []
    database = private.database
    domains, origins, hidden = [], [], []
    for attr in query.group_by:
        found = column_domain(attr, query, private=private, limit=max_groups)
        if found is None:
            hidden.append(f"{query.body.relation(attr.alias).table}.{attr.column}")
            continue
        domains.append(found[0])
        origins.append(found[1])
    if not hidden:
        keys = public_groups(domains, max_groups)
        if not keys:
            raise UnsupportedQuery("empty_domain", "the declared domains of the group columns have no value",
                                   hint="declare the values under [domains] in pimento.toml")
        return tuple(keys), "; ".join(origins), None, domains
    names = ", ".join(hidden)
    declare = f'the custodian lists the values of {names} under [domains] in pimento.toml (or declares them "public")'
    if query.kind is not AggregateKind.COUNT or relations != 1 or len(hidden) != len(query.group_by):
        raise UnsupportedQuery(
            "private_group_domain",
            f"the values of {names} are private and not declared: a grouped release here needs their public domain "
            "(partition selection covers a grouped COUNT of one relation whose group columns are all undeclared)",
            hint=declare,
        )
    if not budget.delta:
        raise UnsupportedQuery(
            "private_group_domain",
            f"the values of {names} are private and not declared: showing which of them occur needs partition selection, "
            "which needs a delta",
            hint=f"pass --delta (e.g. 1e-6), or {declare}",
        )
    contribution = Contribution(l1=Fraction(1), groups=1, per_group=Fraction(1))
    laplace_threshold(budget.epsilon, budget.delta, contribution)  # refuses a delta out of range now
    return None, "partition selection (private keys)", contribution, []


# proof: clipped-on-copy
def _clipped_on_copy(query: AggregateQuery, private: Private) -> dict[str, Any] | None:
    """How many rows of the join the synthetic copy predicts are clipped (public: the copy's charge is in this ledger)."""
    if query.bounds is None or query.column is None:
        return None
    try:
        path = resolve_synthetic(None, private.location, private.database.settings)
        budget, _ = synthetic_guarantee(private.ledger, private.location, path)  # a copy not charged here may not be synthetic
        col = exp.column(quoted_if_needed(query.column.column), table=quoted_if_needed(query.column.alias))
        lo, hi = (exp.Literal.number(format_number(b)) for b in (query.bounds.lower, query.bounds.upper))
        outside = exp.or_(exp.LT(this=col, expression=lo), exp.GT(this=col.copy(), expression=hi))
        clipped_body = _and_selection(query.count_query, query.column.alias, outside)
        engine = open_synthetic(path)
        try:
            clipped = engine.execute(clipped_body.to_sql(engine.dialect)).scalar()
            total = engine.execute(query.count_query.to_sql(engine.dialect)).scalar()
        finally:
            engine.close()
    except PimentoError as exc:
        return {"rows": None, "note": f"clipping not predicted: {exc.message}"}
    return {"rows": int(clipped), "of_rows": int(total), "epsilon_synthetic": format_number(budget.epsilon),
            "delta_synthetic": format_number(budget.delta),
            "note": "predicted on the synthetic copy (its own budget), not counted on the private data"}


# --------------------------------------------------------------------------- the release


def release_aggregate(private: Private, job: Admitted, mode: str) -> tuple[GroupedRelease, GuardedVector, str]:
    """Plan, charge once, then release every part (module docstring): the release, its bookkeeping, the SQL run."""
    planned = plan(private, job)
    guarded = guarded_vector_release(
        private.ledger, planned.cost, lambda: _release(private, planned), analyst=job.analyst, database=private.location,
        sql=planned.sql, mode=planned.cache_mode(mode), question=job.question,
    )
    return GroupedRelease.from_stored(guarded.stored), guarded, planned.sql


def _release(private: Private, planned: AggregatePlan) -> tuple[dict[str, Any], dict[str, Any]]:
    """After the charge: read, look up the groups, measure, add noise. Nothing here may depend on the data to fail."""
    rows = private.database.engine.execute(planned.sql).rows
    query = planned.query
    width = len(query.group_by)
    found: dict[tuple[Any, ...], list[Any]] = {}
    originals: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    for row in rows:
        key = tuple(key_of(v) for v in row[:width])
        if None not in key:
            found[key] = list(row[width:])
            originals[key] = tuple(shown_value(v) for v in row[:width])
    if planned.selection is not None:
        return _select(planned, found, originals)
    keys = planned.keys or ()
    outputs = [found.get(tuple(key_of(v) for v in k), [0, 0]) for k in keys]
    columns = {"count": 0} if query.kind is AggregateKind.COUNT else ({"sum": 0} if query.kind is AggregateKind.SUM else {"sum": 0, "count": 1})
    rs, custodian = _sensitivity(private, planned)
    parts, audit = [], {}
    for part in planned.parts:
        index = columns[part.name]
        grid = Fraction(1) if part.name == "count" else planned.grid
        values = [_on_grid(out[index], grid) for out in outputs]
        released, details = _release_part(part, values, rs, grid)
        parts.append(released)
        audit[part.name] = details
    grouped = GroupedRelease(
        aggregate=query.kind.value, column=None if query.column is None else str(query.column),
        group_by=tuple(str(g) for g in query.group_by), bounds=None if query.bounds is None else (query.bounds.lower, query.bounds.upper),
        keys=tuple(tuple(shown_value(v) for v in k) for k in keys), parts=tuple(parts), domain=planned.domain,
        epsilon=planned.cost.epsilon, delta=planned.cost.delta, budget_split=planned.budget_split,
        clipped_on_copy=planned.clipped_on_copy,
    )
    audit_row = {"mechanism": "+".join(p.mechanism for p in parts), "value": None, "interval": None, "groups": len(keys),
                 "private": {**audit, **custodian, "groups_dropped": len(set(found) - {tuple(key_of(v) for v in k) for k in keys})}}
    return grouped.to_stored(), audit_row


def _on_grid(value: Any, grid: Fraction) -> int:
    """A group's count or clipped sum in grid units, rounded to the nearest (an integer count is exact)."""
    try:
        exact = Fraction(value if value is not None else 0)
    except (TypeError, ValueError, OverflowError, ArithmeticError):
        exact = Fraction(0)  # a NaN sum cannot come out of clipped values; never fail after the charge
    return round(exact / grid)


def _sensitivity(private: Private, planned: AggregatePlan) -> tuple[Fraction, dict[str, Any]]:
    """The smooth bound of the ungrouped count's local sensitivity (RS at the parts' beta); 1 for one relation (GS)."""
    first = planned.parts[0].mechanism
    if isinstance(first, GlobalLaplace):
        return Fraction(1), {}
    count_query = AggregateQuery(planned.query.body.with_count(planned.query.count_query.count))
    found = grouped_sensitivity(private.database.engine, count_query, private.database.catalog, first.beta_float(), planned.neighbours)
    rs = found.count.rs
    return Fraction(rs), {"count_rs": format_number(Fraction(rs)), "k_star": found.count.k_star}


def _release_part(part: _Part, values: list[int], count_rs: Fraction, grid: Fraction) -> tuple[VectorPart, dict[str, Any]]:
    """One part released: grid units in, the analyst's values (times the grid) out, and the custodian's details."""
    mech = part.mechanism
    vector = isinstance(mech, (VectorSmoothLaplace, VectorSmoothQuartic))  # subclasses of the scalar ones: test this first
    if not vector:  # GlobalLaplace per value (one relation), or the scalar smooth mechanism for one value
        if not isinstance(mech, GlobalLaplace) and len(values) != 1:
            raise InternalError("a scalar smooth mechanism releases one value (its DP bound of RS is drawn per release)")
        sensitivity = int(part.factor) if isinstance(mech, GlobalLaplace) else count_rs * part.factor
        outs = [mech.release(v, sensitivity) for v in values]
        vals = [o.release.value * grid for o in outs]
        intervals = [(o.release.interval[0] * grid, o.release.interval[1] * grid) for o in outs]
        first = outs[0].release
        described: dict[str, Any] = dict(mechanism=first.mechanism, noise=str(first.noise), epsilon=first.epsilon, delta=first.delta,
                         epsilon_noise=first.epsilon_noise, epsilon_rs_bound=first.epsilon_rs_bound, beta=first.beta,
                         noise_scale_upper=first.noise_scale_upper * grid, interval_basis=first.interval_basis)
        details: dict[str, Any] = {"gs_units": format_number(part.factor)} if isinstance(mech, GlobalLaplace) else outs[0].private.to_dict()
    else:
        out = mech.release_vector(values, count_rs * part.factor)
        vals = [v * grid for v in out.values]
        intervals = [(lo * grid, hi * grid) for lo, hi in out.intervals]
        described = dict(mechanism=mech.name, noise=str(mech.noise), epsilon=mech.epsilon, delta=mech.delta,
                         epsilon_noise=mech.epsilon_noise, epsilon_rs_bound=mech.epsilon_rs_bound, beta=out.beta,
                         noise_scale_upper=out.noise_scale_upper * grid, interval_basis="dp_rs_upper_bound")
        details = out.private.to_dict()
    return VectorPart(name=part.name, values=tuple(vals), intervals=tuple(intervals), grid=grid, **described), details


def _select(
    planned: AggregatePlan, found: dict[tuple[Any, ...], list[Any]], originals: dict[tuple[Any, ...], tuple[Any, ...]]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Partition selection: the keys whose noisy count passes the threshold, at most ``max_groups`` of them."""
    assert planned.selection is not None
    eps, delta = planned.cost.epsilon, planned.cost.delta
    counts: dict[Hashable, int | Fraction] = {k: _on_grid(v[0], Fraction(1)) for k, v in found.items()}
    shown = select_partitions(counts, eps, delta, planned.selection)
    ordered = sorted(shown.items(), key=lambda kv: (-kv[1], repr(kv[0])))[: planned.max_groups]  # post-processing
    tau = laplace_threshold(eps, delta, planned.selection)
    scale = planned.selection.l1 / eps
    half = GlobalLaplace(Budget.spend(eps)).half_width(scale)  # the noise's own 95% quantile (selection aside)
    part = VectorPart(
        name="count", values=tuple(v for _, v in ordered), intervals=tuple((v - half, v + half) for _, v in ordered),
        mechanism="laplace_partition_selection", noise="laplace", epsilon=eps, delta=delta, epsilon_noise=eps,
        epsilon_rs_bound=Fraction(0), beta=Fraction(0), grid=Fraction(1), noise_scale_upper=scale, interval_basis="global_sensitivity",
    )
    query = planned.query
    selection = {
        "threshold": format_number(tau),
        "noise_scale": format_number(scale),
        "shown_probability": {str(n): round(shown_probability(n, eps, planned.selection, tau), 6) for n in SHOWN_AT},
        "max_groups": planned.max_groups,
        "note": "a group is shown only when its noisy count reaches the threshold; which groups exist is not otherwise revealed",
    }
    grouped = GroupedRelease(
        aggregate="count", column=None, group_by=tuple(str(g) for g in query.group_by), bounds=None,
        keys=tuple(originals[cast("tuple[Any, ...]", k)] for k, _ in ordered), parts=(part,), domain=planned.domain, epsilon=eps, delta=delta,
        partition_selection=selection,
    )
    return grouped.to_stored(), {"mechanism": part.mechanism, "value": None, "interval": None, "groups": len(ordered),
                                 "private": {"groups_present": len(found)}}


def refuse_in_mode(mode: str) -> ModeError:
    """The refusal of a grouped or summed query by a mode that cannot bound it (before anything is read)."""
    return ModeError(
        f"--mode {mode} answers one scalar COUNT; a GROUP BY, SUM or AVG has no bound in this mode",
        hint="use --mode dp for a noisy table, or --mode ci for the exact answer on the authorized data",
    )

