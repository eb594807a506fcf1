"""Offline question -> SQL (no LLM): ranked CountQuery candidates for a counting question.

Schema linking by names, lemmas and a curated synonym table; literal values linked to columns
through a :class:`ValueIndex` read from the SYNTHETIC database; join paths over the foreign-key
graph. See docs/offline-parser.md.

>>> from pimento.schema import Catalog, Table, Column
>>> cat = Catalog((Table("Pets", (Column("PetID", "integer"), Column("weight", "real")), ("PetID",)),))
>>> translate("How many pets weigh more than 10?", cat)[0].sql
'SELECT COUNT(*) FROM Pets WHERE Pets.weight > 10'
"""

from __future__ import annotations

from pimento.errors import NotACountingQuestion, NotASelectQuestion
from pimento.nl.aggregate_readings import AggregateCandidate, translate_aggregate
from pimento.nl.count_intent import CountIntent, detect_intent
from pimento.nl.joins import JoinEdge, JoinTree, join_edges, join_trees
from pimento.nl.select import SelectCandidate, SelectQuery, translate_select
from pimento.nl.translate import Candidate, translate
from pimento.nl.values import NumericRange, ValueHit, ValueIndex

__all__ = [
    "AggregateCandidate",
    "Candidate",
    "CountIntent",
    "JoinEdge",
    "JoinTree",
    "NotACountingQuestion",
    "NotASelectQuestion",
    "NumericRange",
    "SelectCandidate",
    "SelectQuery",
    "ValueHit",
    "ValueIndex",
    "detect_intent",
    "join_edges",
    "join_trees",
    "translate",
    "translate_aggregate",
    "translate_select",
]
