"""Reading a grouped or summed question before any schema linking: the aggregate asked, the group
phrases, the measure phrase, and the counting questions left once they are taken out.

The cue words are :mod:`~pimento.nl.aggregate_cues`'s; the readings are linked to the schema and
ranked by :mod:`~pimento.nl.aggregate_readings`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pimento.nl.aggregate_cues import (
    AVG_CUE,
    BARE_EACH,
    EACH_CUE,
    GROUP_CUE,
    LIST_CUE,
    PHRASE_STOP,
    SUM_CUE,
    TOTAL_COUNT,
    TRAILING_LIST,
)
from pimento.sql.ir import AggregateKind

__all__ = ["LEADING", "AggregateReading", "read_question"]

#: words that open a phrase without naming anything (the linking drops them too) ("the different albums", "all directors")
LEADING = frozenset("the a an different distinct various all each every their its his her possible corresponding".split())
#: the words "number of", "count of" that open a measure phrase ("average number of attendance")
_NUMBER_OF = re.compile(r"^(?:the\s+)?(?:number|count|amount)\s+of\s+", re.IGNORECASE)
#: generic heads whose phrase goes on after "of" ("type of product", "name of the track")
_HEAD_OF = frozenset("type types kind kinds name names number id ids title titles category categories".split())
#: cue words left in a body question that the count parser would read as a group or an aggregate
_LEFTOVER = re.compile(
    r"\b(?:(?:for|in|of|by|from|with|at|on)\s+)?(?:each|every)\b(?:\s+of)?(?:\s+(?:them|these|those|it|one))?|\bper\b"
    r"|\b(?:on\s+)?average\b|\bin\s+total\b|\btotal\b",
    re.IGNORECASE,
)


#: "for each grade 0 classroom": a word and a number before the group's head noun modify it (a
#: filter, "each classroom in grade 0"), read first as that
_MODIFIED_GROUP = re.compile(
    r"\b(?P<cue>(?:for|in|of|by|from|with|at|on)\s+(?:each|every)\s+)(?P<word>[A-Za-z][\w-]*)\s+(?P<number>\d+)\s+(?P<head>[A-Za-z][\w-]*)",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class AggregateReading:
    """What the question asks before any schema linking.

    ``groups``: the group phrases (words); ``measure``: the measured phrase (SUM/AVG); ``bodies``:
    the counting questions whose count parser readings give the relations, joins and filters.
    """

    kind: AggregateKind
    groups: tuple[tuple[str, ...], ...]
    measure: tuple[str, ...] = ()
    bodies: tuple[str, ...] = ()
    cues: tuple[str, ...] = ()


# --------------------------------------------------------------------------- reading the question


def read_question(question: str, column_phrases: frozenset[str] = frozenset()) -> list[AggregateReading]:
    """The aggregate readings of ``question`` (most likely first); empty for a plain count.

    >>> [r.kind.value for r in read_question("How many pets are there per species?")]
    ['count']
    >>> read_question("How many pets are there per species?")[0].groups
    (('species',),)
    >>> read_question("How many pets are there?")
    []
    """
    full = " ".join(question.split())
    modified = _MODIFIED_GROUP.sub(_head_first, full)
    if modified != full:
        return _read(modified, column_phrases) + _read(full, column_phrases)
    return _read(full, column_phrases)


def _head_first(m: re.Match[str]) -> str:
    """"for each grade 0 classroom" -> "for each classroom in grade 0" (unless a stop word stands
    for the word or the head: "for each of 3 ...", "in each 2 and ...")."""
    word, head = m.group("word").lower(), m.group("head").lower()
    if word in PHRASE_STOP or word in LEADING or head in PHRASE_STOP or head in LEADING:
        return m.group(0)
    return f"{m.group('cue')}{m.group('head')} in {m.group('word')} {m.group('number')}"


def _read(full: str, column_phrases: frozenset[str]) -> list[AggregateReading]:
    """:func:`read_question` of one wording."""
    groups, spans, cues = _group_phrases(full)
    trailing = TRAILING_LIST.search(full)
    text = full
    if trailing:
        asks = re.compile(r"\b(?:count|number|total|average|sum|how\s+many)\b", re.IGNORECASE)
        if not asks.search(full[: trailing.start()]):
            text = full[trailing.start() + 1 :].strip()  # "Y? Show Y and the number of X": the second sentence asks
        elif not asks.search(trailing.group("phrase")):
            text = full[: trailing.start() + 1]  # "...? Also list the Y": the listing sentence is no part of the body
    listed = _listed(text)
    readings: list[AggregateReading] = []
    measured = _measure_phrase(text, column_phrases)
    if measured is not None:
        kind, measure, rest, cue = measured
        if kind is AggregateKind.SUM and TOTAL_COUNT.search(text):
            cue = "total number of"
        # "total number of X (per Y)": a count unless X names a numeric column (linking decides)
        bodies = _bodies(rest, spans, measured_rest=True, listed=listed)
        readings.append(AggregateReading(kind, tuple(groups), measure, bodies, tuple(cues) + (cue,)))
        if kind is AggregateKind.SUM and TOTAL_COUNT.search(text) and groups:
            readings.append(AggregateReading(AggregateKind.COUNT, tuple(groups), (), _bodies(text, spans, listed=listed), tuple(cues)))
        return readings
    if groups:
        readings.append(AggregateReading(AggregateKind.COUNT, tuple(groups), (), _bodies(text, spans, listed=listed), tuple(cues)))
    return readings


def _phrase_after(text: str, start: int, *, width: int = 4) -> tuple[tuple[str, ...], int]:
    """The phrase that starts at ``start`` (leading "the/different" skipped) and where it ends."""
    out: list[str] = []
    end = start
    for m in re.finditer(r"[A-Za-z][A-Za-z0-9_]*(?:[-'][A-Za-z0-9]+)*|\d+|[^\sA-Za-z0-9]", text[start:]):
        word = m.group(0)
        low = word.lower()
        if not out and low in LEADING:
            end = start + m.end()
            continue
        if low == "of" and len(out) == 1 and out[0].lower() in _HEAD_OF:
            out.append(word)  # "type of product", "name of the track": the phrase goes on
            end = start + m.end()
            continue
        if low in PHRASE_STOP or not (word[0].isalpha()) or len(out) >= width:
            break
        out.append(word)
        end = start + m.end()
    return tuple(out), end


def _group_phrases(text: str) -> tuple[list[tuple[str, ...]], list[tuple[int, int]], list[str]]:
    """Group phrases after a cue ("for each Y", "per Y", "does each Y"), their spans and cues."""
    groups: list[tuple[str, ...]] = []
    spans: list[tuple[int, int]] = []
    cues: list[str] = []
    for pattern in (GROUP_CUE, EACH_CUE, BARE_EACH):
        for m in pattern.finditer(text):
            if any(s <= m.start() < e for s, e in spans):
                continue
            cue = " ".join(m.group(0).lower().split())
            if cue.startswith("by") and cue in ("by", "by its", "by their") and not _by_groups(text, m):
                continue
            phrase, end = _phrase_after(text, m.end())
            if not phrase:
                continue
            groups.append(phrase)
            spans.append((m.start(), end))
            cues.append(cue)
            # "each semester and year": a second key right after "and"
            more = re.match(r"\s+and\s+", text[end:])
            if more:
                second, end2 = _phrase_after(text, end + more.end(), width=2)
                if second and re.match(r"\s*(?:[?.,]|$)", text[end2:]):
                    groups.append(second)
                    spans[-1] = (m.start(), end2)
    listed = _listed(text)
    trailing = TRAILING_LIST.search(text)
    listed_phrases = [listed.group("phrase")] if listed else []
    if trailing and (groups or listed or AVG_CUE.search(text) or SUM_CUE.search(text)):
        listed_phrases.append(trailing.group("phrase"))
    for listed_phrase in listed_phrases:
        for part in _listed_parts(listed_phrase, groups[0] if groups else ()):
            if re.search(r"\b(?:count|number|total|average|sum)\b", part, re.IGNORECASE):
                continue  # "the task count": the aggregate, not a group
            # "the names of all the projects": the phrase, and the entity after "of" alone
            for piece in (part, *re.findall(r"\b(?:names?|titles?)\s+of\s+(.+)$", part, flags=re.IGNORECASE)):
                phrase, _ = _phrase_after(piece, 0, width=5)
                phrase = _content_words(phrase)
                if phrase and phrase not in groups:
                    groups.append(phrase)
        cues.append("listed")
    return groups, spans, cues


def _listed_parts(phrase: str, entity: tuple[str, ...]) -> list[str]:
    """The listed phrase split at commas and "and"; a part made of label words only ("names",
    "id") takes the entity of the others: "the names and ids of the albums" lists "names of the
    albums" and "ids of the albums"; "the name, id ... for each tourist attraction" takes the cue's."""
    parts = [p for p in re.split(r"\s*,\s*|\s+and\s+", phrase) if p.strip()]
    tail = next((m.group(0) for p in reversed(parts) if (m := re.search(r"\bof\s+.+$", p, re.IGNORECASE))), None)
    if tail is None and entity:
        tail = "of " + " ".join(entity)
    out = []
    for p in parts:
        words = [w.lower() for w in re.findall(r"[A-Za-z]+", p)]
        if tail and words and all(w in _HEAD_OF or w in LEADING for w in words):
            p = f"{p} {tail}"
        out.append(p)
    return out


def _listed(text: str) -> re.Match[str] | None:
    """The "Show Y and the number of X" match, unless its listed phrase holds the aggregate itself."""
    listed = LIST_CUE.search(text)
    if listed and (AVG_CUE.search(listed.group("phrase")) or SUM_CUE.search(listed.group("phrase"))):
        return None
    return listed


def _by_groups(text: str, m: re.Match[str]) -> bool:
    """A bare "by Y" groups only after a counting or aggregate cue and when "Y" ends the clause
    ("number of ships by flag?"), not in "taught by staff with first name ..." or "directed by Y"
    (learned: bare "by" groups in 3 tune questions, each at the end of its clause)."""
    before = text[: m.start()].lower()
    if not re.search(r"\b(?:number|count|how\s+many|average|total|sum|grouped)\b", before) or re.search(r"\b\w+ed\s*$", before):
        return False
    phrase, end = _phrase_after(text, m.end())
    return bool(phrase) and bool(re.match(r"\s*(?:[?.,;]|$)", text[end:]))


def _content_words(phrase: tuple[str, ...]) -> tuple[str, ...]:
    """The phrase without the words that name nothing ("all", "different", "the")."""
    return tuple(w for w in phrase if w.lower() not in LEADING)


def _measure_phrase(text: str, column_phrases: frozenset[str] = frozenset()) -> tuple[AggregateKind, tuple[str, ...], str, str] | None:
    """(kind, measure words, the text after the measure, cue) for an average or a total; else None.

    "in total", "how much", "on average" name no measure after them: the measure is the phrase
    after "how many" ("How many people in total can stay ...") or none (linking then fails).
    """
    avg = next((m for m in AVG_CUE.finditer(text) if not _inside_column_phrase(text, m, column_phrases)), None)
    total = next((m for m in SUM_CUE.finditer(text) if not _inside_column_phrase(text, m, column_phrases)), None)
    m, kind = (avg, AggregateKind.AVG) if avg else (total, AggregateKind.SUM)
    if m is None:
        return None
    cue = " ".join(m.group(0).lower().split())
    if cue in ("in total", "how much", "altogether") or re.match(r"\s*[,?.]|\s*$", text[m.end() :]) or (
        cue == "average" and text[: m.start()].lower().rstrip().endswith(" on")
    ):
        many = re.search(r"\bhow\s+many\s+", text, re.IGNORECASE)
        measure = _phrase_after(text, many.end(), width=3)[0] if many else ()
        return kind, measure, text, cue
    after = text[m.end() :]
    after = re.sub(r"^\s+(?:of\s+)?(?:the\s+)?", " ", after) if cue == "sum" else after
    stripped = _NUMBER_OF.sub("", after.lstrip())
    measure, end = _phrase_after(stripped, 0, width=3)
    unit = re.match(r"\s+in\s+(?!the\b|a\b|an\b|each\b|every\b|total\b)([A-Za-z]+)\b", stripped[end:], re.IGNORECASE)
    if measure and unit:  # "average duration in milliseconds": the unit may name the column
        measure += (unit.group(1),)
        end += unit.end()
    rest = stripped[end:]
    rest = re.sub(r"^\s*(?:of|for|across|in|from|among|over)\s+", " ", rest)
    return kind, measure, rest, cue


def _inside_column_phrase(text: str, m: re.Match[str], phrases: frozenset[str]) -> bool:
    """The aggregate word is part of a column's name ("mean humidity"), not a question for an average."""
    after = text[m.end() :].split()
    before = text[: m.start()].split()
    word = m.group(0).lower()
    return (bool(after) and f"{word} {after[0].lower().strip('?,.')}" in phrases) or (
        bool(before) and f"{before[-1].lower()} {word}" in phrases
    )


def _bodies(text: str, spans: list[tuple[int, int]], *, measured_rest: bool = False, listed: re.Match[str] | None = None) -> tuple[str, ...]:
    """Counting questions for the count parser: the text with the group phrases taken out, led by "How many"."""
    out: list[str] = []
    if measured_rest:
        rest = _without_groups(text, _group_phrases(text)[1])
        out.append("How many " + re.sub(r"^(?:the|a|an|all|all\s+the)\s+", "", rest.strip(" ,"), flags=re.IGNORECASE))
        return tuple(dict.fromkeys(out))
    base = _without_groups(text, spans)
    if listed is not None:
        tail = text[listed.end() :]
        tail = re.sub(r"^\s*of\s+", "", tail)
        out.append("How many " + _without_groups(tail, _group_phrases(tail)[1]).strip(" ,"))
    out.append(base)
    if not re.search(r"\bhow\s+many\b|\bnumber\b|\bcount\b", base, re.IGNORECASE):
        out.append("How many " + base)
    return tuple(dict.fromkeys(o for o in out if o.strip()))


def _without_groups(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` without the group phrases and the group/aggregate words the count parser refuses."""
    for s, e in sorted(spans, reverse=True):
        text = text[:s] + " " + text[e:]
    text = re.sub(r"\bnumbers\s+of\b", "number of", text, flags=re.IGNORECASE)  # "the numbers of wines per grape"
    return " ".join(_LEFTOVER.sub(" ", text).split())
