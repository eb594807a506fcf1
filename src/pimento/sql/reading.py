"""A plain-language reading of a CountQuery, so an analyst can check what will be counted before spending.

    >>> from pimento.sql.ir import Attribute, Count, CountQuery, JoinCondition, Relation, Selection
    >>> q = CountQuery(
    ...     relations=(Relation("Visit", "Visit"), Relation("Patient", "Patient")),
    ...     joins=(JoinCondition(Attribute("Visit", "pat_id"), Attribute("Patient", "pat_id")),),
    ...     selections=(Selection("Visit", "Visit.diagnosis = 'flu'"),),
    ...     count=Count(Attribute("Patient", "pat_id"), distinct=True),
    ... )
    >>> reading(q)
    "the number of distinct Patient.pat_id values in Patient joined with Visit (Patient.pat_id = Visit.pat_id), where Visit.diagnosis = 'flu'"
"""

from __future__ import annotations

from pimento.sql.ir import Attribute, CountQuery

__all__ = ["reading"]


def reading(query: CountQuery) -> str:
    """What ``query`` counts, in words: the counted thing, the relations and how they join, the filters."""
    tables = {r.alias: r.table for r in query.relations}

    def name(attr: Attribute) -> str:
        return f"{tables.get(attr.alias, attr.alias)}.{attr.column}"

    count = query.count
    if count.column is None:
        what = "the number of rows"
    elif count.distinct:
        what = f"the number of distinct {name(count.column)} values"
    else:
        what = f"the number of non-NULL {name(count.column)} values"
    names = [tables[a] for a in query.aliases]
    where = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} joined with {names[-1]}"
    if query.joins:
        where += " (" + ", ".join(f"{name(j.left)} = {name(j.right)}" for j in query.joins) + ")"
    text = f"{what} in {where}"
    if query.selections:
        text += ", where " + " and ".join(s.predicate for s in query.selections)
    return text
