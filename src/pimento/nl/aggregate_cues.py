"""Cue phrases of grouped and summed questions: where a group phrase, an average or a total is asked.

The cue lists were learned from the Spider train questions of the ``tune`` databases (the
partition of ``benchmarks/nl_spider.py``) whose gold SQL is a grouped COUNT or a SUM/AVG that
:func:`~pimento.sql.parse.parse_aggregate_query` accepts: for each grouped question, the two words
before the first word that names the gold GROUP BY column were counted, and for each SUM/AVG
question the words around "average", "mean", "total", "sum", "much" (``python -m
benchmarks.spider_grouped --learn-cues`` prints both tables). Every cue seen at least twice was
kept ("for each" 37, "in each" 11, "are the ... and" 8, "show different" 4, "of each" 4, "for
different" 4, "show each/all" 6, "does/did/have/has each" 8, "by each" 2, "by their" 1 + "grouped
by" 1 + "ships by" 1 as the ``by`` family); cues seen once were kept where they are the same
construction with another preposition ("from each", "with each", "at different", "by different").
"of different" (1) was dropped: "the number of different X" asks for COUNT(DISTINCT X), a scalar count.
"""

from __future__ import annotations

import re

__all__ = ["AVG_CUE", "BARE_EACH", "EACH_CUE", "GROUP_CUE", "LIST_CUE", "PHRASE_STOP", "SUM_CUE", "TOTAL_COUNT", "TRAILING_LIST"]

#: a preposition + "each"/"every"/"different" (or "per", "grouped by", "by"), then the group phrase
GROUP_CUE = re.compile(
    r"\b(?:(?:for|in|of|by|from|with|at|on)\s+(?:each|every)(?:\s+(?:each|different|one\s+of|of))?(?:\s+(?:the|these|those))?"
    r"|(?:for|by|at|across)\s+(?:the\s+)?different|per|grouped\s+by|broken\s+down\s+by|by(?:\s+(?:its|their))?)\s+",
    re.IGNORECASE,
)
#: "does each Y have", "did each Y make", "has each Y": a verb, then "each", then the group phrase
EACH_CUE = re.compile(
    r"\b(?:do|does|did|has|have|had|is|are|was|were|use|uses|make|makes)\s+(?:each|every)\s+(?!other\b)", re.IGNORECASE
)
#: "players enter hall of fame each year": a bare "each" (tried after the two above)
BARE_EACH = re.compile(r"\beach\s+(?!other\b)", re.IGNORECASE)
#: "Show [the different] Y and the number of X", "What are the names of Y, and how many X ...":
#: the group phrase listed before the aggregate
LIST_CUE = re.compile(
    r"^(?:please\s+)?(?:show|list|display|give|return|find|report|what\s+(?:are|is)|whah\s+are|which\s+are)\s+(?:me\s+)?"
    r"(?P<phrase>[^?]+?)\s*,?\s+(?:and|along\s+with|together\s+with|with)\s+(?:also\s+)?(?:the\s+|their\s+|its\s+|his\s+|her\s+)?"
    r"(?:corresponding\s+|respective\s+)?(?:numbers?|count|total|average|sum|how\s+many|mean)\b",
    re.IGNORECASE,
)
#: "How many bookings did each customer make? List the customer id, first name, and the count.":
#: a second sentence that lists the group columns (3 tune questions)
TRAILING_LIST = re.compile(
    r"[?.]\s*(?:also\s+)?(?:list|show|return|give|display|report)\s+(?:me\s+)?(?P<phrase>[^?.]+)", re.IGNORECASE
)
#: an average is asked ("average", "mean", "on average")
AVG_CUE = re.compile(r"\b(?:average|mean|avg)\b", re.IGNORECASE)
#: a sum is asked ("total price", "sum of", "in total", "how much")
SUM_CUE = re.compile(r"\b(?:total|sum|in\s+total|how\s+much|altogether)\b", re.IGNORECASE)
#: "total number of X" / "total count": a COUNT unless X names a numeric column
TOTAL_COUNT = re.compile(r"\btotal\s+(?:number|count)\s+of\b", re.IGNORECASE)
#: words that end a group or measure phrase
PHRASE_STOP = frozenset(
    """and or , ? . ; : that who which whose where when with without have has had having do does did is are was were be
    been there here it they them its their than from in of for to by on at as along together respectively also what
    how list show return give find report use uses used make made get got""".split()
)
