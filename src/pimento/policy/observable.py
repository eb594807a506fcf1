"""Observable denials: deny norms whose *fact* an analyst can see (issue 23, finding 5).

A deny norm whose location has a row filter (``hivstatus <> 'unknown'``, or the filter
information implication derived from one) withholds the cells of the rows that pass it. Where a
permit norm governs another column of the same relation, such a row can be visible with that
cell NULL, and the NULL tells the analyst that the row passes the filter: the policy's meaning,
not an enforcement error (docs/contextual-integrity.md, "What the analyst receives").

The denial is *hidden* when the same norm withholds every other permitted column of the relation
on (at least) the same rows: then a row that passes the filter has no authorized cell left and is
absent, not visible with a NULL. :func:`observable_denials` reports the denials that are not
hidden; ``pimento policy compile`` lists them, ``pimento serve`` refuses a policy with one that the
custodian has not acknowledged (``[policy] acknowledge_observable_denials``,
:func:`require_acknowledged`), and ``GET /v1/policy`` and ``pimento policy show`` list them.

Containment of row filters is decided on their text only, so it is sound and incomplete: ``f`` is
contained in ``g`` when ``g`` is unfiltered, or when every disjunct of ``f`` is a disjunct of ``g``
after both are put in one canonical form (columns qualified against the policy's table layouts,
``COALESCE(x, FALSE)`` read as ``x`` where only truth matters, sqlglot's simplification, table
aliases renamed in order). Different texts prove nothing: the denial stays reported. It reads no
data, so the result holds on every database, not only today's.
"""

from __future__ import annotations

from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.qualify import qualify
from sqlglot.optimizer.simplify import simplify

from pimento.errors import PolicyError
from pimento.policy.compiled import CompiledPolicy, Location

__all__ = ["ACKNOWLEDGE_SETTING", "denial_id", "observable_denials", "require_acknowledged", "with_acknowledgement"]

#: The pimento.toml setting where a custodian acknowledges observable denials (config.PolicySettings).
ACKNOWLEDGE_SETTING = "[policy] acknowledge_observable_denials"


def denial_id(norm: str, location: str) -> str:
    """The name of one observable denial, ``NORM:Relation.attribute``: what the custodian acknowledges."""
    return f"{norm}:{location}"


# --------------------------------------------------------------------------- filter containment


def _truth(node: exp.Expr) -> exp.Expr:
    """``node`` with ``COALESCE(x, FALSE)`` read as ``x`` in its truth positions (itself, AND/OR
    operands, parentheses): there only whether the predicate is TRUE matters, and both are TRUE
    on the same rows."""
    if isinstance(node, exp.Paren):
        return _truth(node.this)
    if isinstance(node, exp.Coalesce) and len(node.expressions) == 1 and \
            isinstance(node.expressions[0], exp.Boolean) and not node.expressions[0].this:
        return _truth(node.this)
    if isinstance(node, (exp.And, exp.Or)):
        return type(node)(this=_truth(node.this), expression=_truth(node.expression))
    return node


def _rename(tree: exp.Expr) -> exp.Expr:
    """Table aliases other than the row's ``t`` renamed ``_a0, _a1, ...`` by order of first appearance;
    quotes dropped from lower-case names (the qualifier has folded what the dialect folds, and a
    quoted lower-case name is the unquoted one in every dialect Pimento runs on)."""
    for ident in tree.find_all(exp.Identifier):
        if ident.quoted and ident.name == ident.name.lower():
            ident.set("quoted", False)
    names: dict[str, str] = {"t": "t"}
    for node in tree.walk():
        if isinstance(node, exp.TableAlias) and node.name and node.name not in names:
            names[node.name] = f"_a{len(names) - 1}"
    for node in tree.walk():
        if isinstance(node, exp.TableAlias) and node.name in names:
            node.set("this", exp.to_identifier(names[node.name]))
        elif isinstance(node, exp.Column) and node.table in names:
            node.set("table", exp.to_identifier(names[node.table]))
    return tree


def _disjuncts(compiled: CompiledPolicy, loc: Location) -> frozenset[str] | None:
    """The canonical disjuncts of ``loc``'s row filter; None when it is unfiltered or cannot be read."""
    if loc.where_sql.strip().upper() == "TRUE":
        return None
    dialect = compiled.dialect
    schema: dict[str, object] = {rel: {c: "TEXT" for c in layout["columns"]} for rel, layout in compiled.tables.items()}
    try:
        tree = sqlglot.parse_one(f"SELECT 1 FROM {loc.relation} AS t WHERE {loc.where_sql}", read=dialect)
        tree = qualify(tree, schema=schema, dialect=dialect, quote_identifiers=False, validate_qualify_columns=False)
        for select in list(tree.find_all(exp.Select)):
            where = select.args.get("where")
            if where is not None:
                where.set("this", _truth(where.this))
        tree = simplify(tree)
        where = tree.args["where"].this
        parts = list(where.flatten()) if isinstance(where, exp.Or) else [where]
        texts = frozenset(_rename(p.copy()).sql(dialect) for p in parts)
    except (SqlglotError, RecursionError, ValueError, KeyError, AttributeError):
        return frozenset({loc.where_sql})  # unreadable: equal only to the same text
    return texts


class _Containment:
    """Containment of row filters, each filter read once (:func:`_disjuncts` parses and qualifies it)."""

    def __init__(self, compiled: CompiledPolicy) -> None:
        self.compiled = compiled
        self._parts: dict[tuple[str, str], frozenset[str] | None] = {}

    def parts(self, loc: Location) -> frozenset[str] | None:
        key = (loc.relation, loc.where_sql)
        if key not in self._parts:
            self._parts[key] = _disjuncts(self.compiled, loc)
        return self._parts[key]

    def contained(self, inner: Location, outer: Location) -> bool:
        """True when every row that passes ``inner``'s filter provably passes ``outer``'s (same subject)."""
        if inner.subject_sql != outer.subject_sql:
            return False
        outer_parts = self.parts(outer)
        if outer_parts is None:
            return True
        inner_parts = self.parts(inner)
        return inner_parts is not None and inner_parts <= outer_parts


# --------------------------------------------------------------------------- the check


def observable_denials(compiled: CompiledPolicy) -> list[dict[str, Any]]:
    """Denials whose fact an analyst can see: one entry per (deny norm, filtered location) with a
    permitted column of the same relation that the norm does not withhold on the same rows.

    Each entry: ``id`` (:func:`denial_id`), ``norm``, ``location`` (``Relation.attribute``),
    ``filter`` (its row filter), ``visible_through`` (the permit norms that can make such a row
    visible) and ``columns`` (the permitted columns that stay visible on those rows).
    """
    out: list[dict[str, Any]] = []
    containment = _Containment(compiled)
    permitted: dict[str, dict[str, set[str]]] = {}  # relation -> attribute -> permit norms
    for other in compiled.norms:
        if other.positive:
            for i in compiled.norm_locations[other.id]:
                loc = compiled.locations[i]
                permitted.setdefault(loc.relation, {}).setdefault(loc.attribute, set()).add(other.id)
    for norm in compiled.norms:
        if norm.positive:
            continue
        own = [compiled.locations[i] for i in compiled.norm_locations[norm.id]]
        for loc in own:
            if loc.where_sql.strip().upper() == "TRUE":
                continue
            open_columns = sorted(
                attr for attr in permitted.get(loc.relation, {}) if attr != loc.attribute and not any(
                    o.relation == loc.relation and o.attribute == attr and containment.contained(loc, o) for o in own)
            )
            if open_columns:
                visible = sorted(set().union(*(permitted[loc.relation][a] for a in open_columns)))
                location = f"{loc.relation}.{loc.attribute}"
                entry = {"id": denial_id(norm.id, location), "norm": norm.id, "location": location,
                         "filter": loc.where_sql, "visible_through": visible, "columns": open_columns}
                if all(e["id"] != entry["id"] or e["filter"] != entry["filter"] for e in out):
                    out.append(entry)
    return out


# --------------------------------------------------------------------------- acknowledgement


def with_acknowledgement(denials: list[dict[str, Any]], acknowledged: list[str]) -> list[dict[str, Any]]:
    """``denials`` with ``acknowledged`` (True when its id is in the custodian's list) added to each."""
    names = set(acknowledged)
    return [{**d, "acknowledged": d["id"] in names} for d in denials]


def require_acknowledged(compiled: CompiledPolicy, acknowledged: list[str]) -> list[dict[str, Any]]:
    """The policy's observable denials, each marked acknowledged or not; refuses any that is not.

    Raises:
        PolicyError: a denial of the policy is not in ``acknowledged``; names every such denial
            and the setting that acknowledges it.
    """
    denials = with_acknowledgement(observable_denials(compiled), acknowledged)
    missing = [d for d in denials if not d["acknowledged"]]
    if missing:
        names = sorted({d["id"] for d in missing})
        raise PolicyError(
            f"policy {compiled.name} has {len(names)} observable denial(s): {', '.join(names)}; a row withheld "
            "in one column but visible through another shows the analyst that it passes the deny norm's filter",
            clause=missing[0]["norm"],
            hint="make the deny norm withhold every permitted column of those rows with the same filter (see "
                 "docs/contextual-integrity.md, 'What the analyst receives'), or acknowledge them in pimento.toml: "
                 f"{ACKNOWLEDGE_SETTING} = {names!r}".replace("'", '"'),
        )
    return denials
