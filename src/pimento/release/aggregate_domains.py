"""The groups a grouped release shows, decided before the charge from public inputs only.

For each GROUP BY column, its domain is (:func:`column_domain`):

* the list the custodian declared under ``[domains]`` in ``pimento.toml``;
* ``"public"`` declared there, or no declaration for a column of a **public** relation (one
  ``[privacy] public`` lists): the distinct values of that public relation, or, for a column of a
  private relation declared ``"public"``, those of the synthetic copy (never the private data);
* otherwise None: the keys are private, and only partition selection (with delta) may show them.

The groups are the cross product of the columns' domains (:func:`public_groups`), in a fixed
order, at most ``[release] max_groups`` of them (the domain's size is public, so the refusal is
too). A key of the private data outside the domain is dropped after the charge: the domain must be
complete (docs/grouped.md).
"""

from __future__ import annotations

import itertools
from decimal import Decimal
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from pimento.config import declared_domain
from pimento.errors import PimentoError, UnsupportedQuery
from pimento.release.ask import open_synthetic, resolve_synthetic
from pimento.release.synthetic import synthetic_guarantee
from pimento.sql.ir import AggregateQuery, Attribute, quoted_if_needed

if TYPE_CHECKING:
    from pimento.engines.base import Engine
    from pimento.release.modes.base import Private

__all__ = ["column_domain", "key_of", "public_groups"]


def key_of(value: Any) -> tuple[str, Any] | None:
    """One spelling of a group value, so that a declared value and the engine's compare equal (None: no key).

    Numbers compare by exact value (``3``, ``3.0`` and ``Decimal("3")`` are one key; a float by its shortest decimal,
    so ``0.1`` and ``Decimal("0.1")`` are one key); text as text;
    anything else (dates, say) by its text. Never raises: it runs after the charge on private values.
    """
    try:
        if value is None:
            return None
        if isinstance(value, bool):
            return ("b", value)
        if isinstance(value, float):  # its shortest decimal, so that the engine's 0.1 is the declared "0.1"
            return ("n", Fraction(repr(value)))
        if isinstance(value, (int, Decimal, Fraction)):
            return ("n", Fraction(value))
        return ("s", str(value))
    except (ValueError, OverflowError, TypeError, ArithmeticError):  # NaN, infinities: no group of a domain
        return None


def shown_value(value: Any) -> Any:
    """A domain value as the answer's JSON shows it (text, integers and other numbers as themselves)."""
    if isinstance(value, (str, int, float)) or value is None:
        return value
    if isinstance(value, Decimal):
        return str(value)
    return str(value)


def _sorted(values: list[Any]) -> list[Any]:
    return sorted(values, key=lambda v: (type(v).__name__, v if isinstance(v, (int, float, str)) else str(v)))


def column_domain(attr: Attribute, query: AggregateQuery, *, private: Private, limit: int) -> tuple[list[Any], str] | None:
    """The public domain of one group column and where it came from, or None (a private domain; module doc)."""
    catalog, settings, engine = private.database.catalog, private.database.settings, private.database.engine
    table = query.body.relation(attr.alias).table
    declared = declared_domain(settings, table, attr.column)
    if isinstance(declared, list):
        values = _numeric(declared, table, attr.column) if _is_real(catalog, table, attr.column) else list(declared)
        return values, f"declared in [domains] {table}.{attr.column}"
    public_relation = not catalog.is_private(table)
    if declared is None and not public_relation:
        return None
    if public_relation:
        return _distinct(engine, table, attr.column, limit), f"the values of the public relation {table}"
    try:
        path = resolve_synthetic(None, private.location, settings)
    except PimentoError:
        raise UnsupportedQuery(
            "public_domain_without_copy",
            f'[domains] declares {table}.{attr.column} "public", but {table} is private and there is no synthetic copy to read it from',
            hint="list its values under [domains], or make the synthetic copy ([synth] path)",
        ) from None
    synthetic_guarantee(private.ledger, private.location, path)  # a copy not charged here may not be synthetic
    synthetic = open_synthetic(path)
    try:
        return _distinct(synthetic, table, attr.column, limit), f"the values of {table}.{attr.column} in the synthetic copy"
    finally:
        synthetic.close()


def _is_real(catalog: Any, table: str, column: str) -> bool:
    """Whether ``table.column`` holds decimal or floating numbers (its declared values are read as exact decimals)."""
    try:
        return bool(catalog.table(table).column(column).type == "real")
    except PimentoError:
        return False


def _numeric(declared: list[Any], table: str, column: str) -> list[Any]:
    """The declared values of a real-valued column as exact decimals (``"2.5"`` is the key 5/2), refused if one is no number.

    TOML floats are not accepted by ``[domains]`` (a float is not exact); decimals are written as strings.
    """
    out: list[Any] = []
    for value in declared:
        if isinstance(value, int):
            out.append(value)
            continue
        try:
            number = Decimal(str(value).strip())
        except ArithmeticError:
            number = None
        if number is None or not number.is_finite():
            raise UnsupportedQuery(
                "domain_not_a_number",
                f"[domains] {table}.{column} lists {value!r}, but {table}.{column} holds numbers",
                hint='write each value of a numeric column as a decimal, e.g. ["2.5", "10"]',
            )
        out.append(number)
    if len({Fraction(v) for v in out}) != len(out):
        raise UnsupportedQuery("domain_repeats", f"[domains] {table}.{column} lists one number twice (as two spellings)",
                               hint="list each value of the column once")
    return out


def _distinct(engine: Engine, table: str, column: str, limit: int) -> list[Any]:
    """The distinct non-NULL values of ``table.column`` (at most ``limit + 1``: more is refused anyway)."""
    col = exp.column(quoted_if_needed(column), table=quoted_if_needed(table))
    select = exp.select(col).distinct().from_(exp.to_table(quoted_if_needed(table).sql(dialect=engine.dialect)))
    select = select.where(exp.Not(this=exp.Is(this=col.copy(), expression=exp.Null()))).limit(limit + 1)
    try:
        rows = engine.execute(select.sql(dialect=engine.dialect)).rows
    except PimentoError as exc:
        raise UnsupportedQuery("domain_unreadable", f"the values of {table}.{column} could not be read: {exc}",
                               hint="declare them under [domains] in pimento.toml") from None
    return _sorted([r[0] for r in rows if key_of(r[0]) is not None])  # NaN and infinities are no group


def public_groups(domains: list[list[Any]], max_groups: int) -> list[tuple[Any, ...]]:
    """The cross product of the columns' domains, refused beyond ``max_groups`` (a public count)."""
    size = 1
    for d in domains:
        size *= max(len(d), 1)
    if size > max_groups:
        raise UnsupportedQuery(
            "too_many_groups",
            f"this grouping has {size:,} groups or more (its declared domains), more than the {max_groups:,} a release may show",
            hint="group by fewer columns, filter to fewer values, or the custodian raises [release] max_groups",
        )
    return [tuple(p) for p in itertools.product(*domains)]
