"""Is the question a count, and where does the counted noun phrase start?

The counting class is "How many X ...", "Count the number of X", "What is the (total) number of X",
"Find/Give/Return/Show the number/count of X", "What is the count of X", "Number of X ...". A
question that asks for a list, an average, a sum, an extreme, or a count per group is outside the
class and raises :class:`pimento.errors.NotACountingQuestion`, whose ``reason`` names why.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pimento.errors import NotACountingQuestion

__all__ = ["OTHER_AGGREGATES", "CountIntent", "detect_intent", "other_aggregate"]


@dataclass(frozen=True)
class CountIntent:
    """Where the counted phrase starts (character offset) and whether "different/distinct" was asked."""

    start: int
    distinct: bool
    cue: str


_W = r"(?:\s+(?:the|a|an|all|of))*"
_COUNT_CUES = [
    r"\bhow\s+many\b",
    r"\b(?:what\s+is|what's|what\s+are|tell\s+me|give\s+me|show\s+me|find|list|return|give|show|report|"
    r"get|compute|calculate|count)" + _W + r"\s+(?:total\s+|overall\s+)?(?:number|count|amount|tally)\s+of\b",
    r"\b(?:the\s+)?(?:total\s+)?(?:number|count)\s+of\b",
    r"\bcount\s+(?:the\s+|all\s+(?:the\s+)?|how\s+many\s+)?",
]
_COUNT_RE = [re.compile(p, re.IGNORECASE) for p in _COUNT_CUES]
_DISTINCT = re.compile(r"\b(?:different|distinct|unique|various|types?\s+of|kinds?\s+of|sorts?\s+of)\b", re.I)

_GROUP = re.compile(
    r"\b(?:for\s+each|for\s+every|per|in\s+each|of\s+each|by\s+each|each\s+(?!other\b)\w+\s+(?:has|have|had|is|are|gets?))\b"
    r"|\bbroken\s+down\s+by\b|\bgrouped\s+by\b|\bfor\s+all\s+the\s+different\b",
    re.IGNORECASE,
)
_AVERAGE = re.compile(r"\b(?:average|mean|median)\b", re.IGNORECASE)
_SUM = re.compile(r"\b(?:sum|how\s+much)\b", re.IGNORECASE)
_EXTREME = re.compile(
    r"\b(?:maximum|minimum|the\s+(?:most|least|fewest|highest|lowest|largest|smallest|biggest|oldest|youngest))\b",
    re.IGNORECASE,
)
_RATIO = re.compile(r"\b(?:percentage|proportion|ratio|fraction|share)\s+of\b", re.IGNORECASE)

#: what a question asks for instead of a count or a list: (reason, cue, how an error names it)
OTHER_AGGREGATES = (
    ("average", _AVERAGE, "an average"),
    ("sum", _SUM, "a sum or amount"),
    ("extreme", _EXTREME, "a maximum, minimum or ranking"),
    ("ratio", _RATIO, "a percentage or ratio"),
)


def other_aggregate(text: str) -> tuple[str, str] | None:
    """(reason, what) of the first aggregate other than a count that ``text`` asks for, or None."""
    for reason, pattern, what in OTHER_AGGREGATES:
        if pattern.search(text):
            return reason, what
    return None


def detect_intent(question: str, column_phrases: frozenset[str] = frozenset()) -> CountIntent:
    """Find the counting cue, or raise :class:`NotACountingQuestion` naming what the question asks.

    ``column_phrases`` are lower-case column names as words ("mean humidity"): an aggregate word
    inside one of them names the column, it does not ask for an average ("How many days had a
    mean humidity above 50?").

    >>> detect_intent("How many different pets are there?").distinct
    True
    >>> detect_intent("How many days had mean humidity above 50?", frozenset({"mean humidity"})).cue
    'how many'
    """
    text = " ".join(question.split())
    if not text:
        raise NotACountingQuestion(question, "empty", "the question is empty")
    match = None
    for pattern in _COUNT_RE:
        match = pattern.search(text)
        if match:
            break
    if match is None:
        other = other_aggregate(text)
        if other is not None:
            reason, what = other
            raise NotACountingQuestion(question, reason, f"the question asks for {what}, not a count: {text!r}")
        raise NotACountingQuestion(
            question, "list", f"the question asks for a list or a value, not a count (no 'how many' / 'number of'): {text!r}"
        )
    if _GROUP.search(text):
        raise NotACountingQuestion(
            question,
            "group",
            f"the question asks for one count per group ('for each', 'per'), which a single DP count cannot answer: {text!r}",
        )
    before, after = text[: match.start()], text[match.end() :]
    for reason, pattern, what in (
        ("average", _AVERAGE, "an average"),
        ("ratio", _RATIO, "a percentage or ratio"),
    ):
        if pattern.search(_without(before, column_phrases) + " " + _without(after, column_phrases)[:25]):
            raise NotACountingQuestion(question, reason, f"the question asks for {what} of counts, not a count: {text!r}")
    if _EXTREME.search(text):
        raise NotACountingQuestion(
            question, "extreme", f"the question asks for a maximum, minimum or ranking, not a single count: {text!r}"
        )
    distinct = bool(_DISTINCT.search(after[:60]))
    # Offset in the original question: map through the whitespace normalisation.
    start = _original_offset(question, text, match.end())
    return CountIntent(start=start, distinct=distinct, cue=match.group(0).strip().lower())


def _without(text: str, phrases: frozenset[str]) -> str:
    """``text`` with the column phrases that hold an aggregate word blanked out."""
    for phrase in phrases:
        if _AVERAGE.search(phrase) or _RATIO.search(phrase + " of"):
            text = re.sub(r"\b" + r"\s+".join(map(re.escape, phrase.split())) + r"\b", " ", text, flags=re.IGNORECASE)
    return text


def _original_offset(original: str, normalized: str, offset: int) -> int:
    """Character offset in ``original`` of position ``offset`` of its whitespace-normalised form."""
    i = j = 0
    while j < offset and i < len(original):
        if original[i].isspace():
            while i < len(original) and original[i].isspace():
                i += 1
            j += 1
        else:
            i += 1
            j += 1
    return i
