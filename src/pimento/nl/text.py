"""Words: tokenizing questions, splitting schema names, a small rule-based lemmatizer, synonyms.

Everything here is deterministic and table-driven, so the parser needs no model and no download.
The lemmatizer is deliberately small: plural nouns and common verb endings, plus a few irregular
forms. Matching also uses a coarser :func:`stem` (suffixes such as ``-ing``, ``-er``, ``-ology``
stripped) so that "engineering" meets "engineer" and "cardiologists" meets "Cardiology".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

__all__ = [
    "STOPWORDS",
    "Token",
    "concept_keys",
    "lemma",
    "name_words",
    "number_value",
    "stem",
    "synonyms",
    "tokenize",
]

_IRREGULAR = {
    "people": "person",
    "persons": "person",
    "children": "child",
    "men": "man",
    "women": "woman",
    "mice": "mouse",
    "teeth": "tooth",
    "feet": "foot",
    "geese": "goose",
    "data": "data",
    "criteria": "criterion",
    "indices": "index",
    "analyses": "analysis",
    "was": "be",
    "were": "be",
    "is": "be",
    "are": "be",
    "been": "be",
    "has": "have",
    "had": "have",
    "does": "do",
    "did": "do",
    "went": "go",
    "gone": "go",
    "made": "make",
    "written": "write",
    "wrote": "write",
    "taken": "take",
    "took": "take",
    "given": "give",
    "gave": "give",
    "held": "hold",
    "won": "win",
    "lost": "lose",
    "sold": "sell",
    "bought": "buy",
    "taught": "teach",
    "born": "bear",
    "built": "build",
    "spoken": "speak",
    "spoke": "speak",
    "ran": "run",
    "led": "lead",
    "paid": "pay",
    "left": "left",
    "media": "medium",
    "series": "series",
    "species": "species",
    "news": "news",
    "status": "status",
    "address": "address",
    "business": "business",
    "class": "class",
}

_NO_S_STRIP = ("ss", "us", "is", "ous", "ics")


@lru_cache(maxsize=65536)
def lemma(word: str) -> str:
    """A light lemma of one lower-case word: plural nouns and verb endings removed.

    >>> [lemma(w) for w in ["countries", "addresses", "dogs", "people", "owned", "departing", "status"]]
    ['country', 'address', 'dog', 'person', 'own', 'depart', 'status']
    """
    w = word.lower()
    if w in _IRREGULAR:
        return _IRREGULAR[w]
    if len(w) <= 3 or not w.isalpha():
        return w
    if w.endswith("ies") and len(w) > 4:
        return w[:-3] + "y"
    if w.endswith(("sses", "xes", "ches", "shes", "zzes")):
        return w[:-2]
    if w.endswith("s") and not w.endswith(_NO_S_STRIP):
        return w[:-1]
    if w.endswith("ing") and len(w) > 5:
        base = w[:-3]
        if len(base) > 2 and base[-1] == base[-2] and base[-1] not in "lsz":
            base = base[:-1]
        return base
    if w.endswith("ied") and len(w) > 4:
        return w[:-3] + "y"
    if w.endswith("ed") and len(w) > 4:
        base = w[:-2]
        if len(base) > 2 and base[-1] == base[-2] and base[-1] not in "lsz":
            base = base[:-1]
        return base
    return w


_STEM_SUFFIXES = (
    "ologists", "ologist", "ological", "ology", "ations", "ation", "ities", "ity", "ists", "ist",
    "ings", "ing", "ers", "er", "ors", "or", "ed", "ions", "ion", "al", "ly", "ic", "s", "e",
)  # fmt: skip


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A coarse stem used as a weaker match than the lemma.

    >>> stem("cardiologists") == stem("Cardiology"), stem("engineering") == stem("engineer")
    (True, True)
    """
    w = lemma(word.lower())
    for suffix in _STEM_SUFFIXES:
        if w.endswith(suffix) and len(w) - len(suffix) >= 4:
            w = w[: -len(suffix)]
            break
    if w.endswith("olog"):
        return w
    return w.rstrip("e") if len(w) > 4 else w


_ABBREVIATIONS = {
    "dest": "destination",
    "src": "source",
    "num": "number",
    "no": "number",
    "nbr": "number",
    "dept": "department",
    "addr": "address",
    "qty": "quantity",
    "amt": "amount",
    "desc": "description",
    "dob": "birth",
    "org": "organization",
    "emp": "employee",
    "cust": "customer",
    "prod": "product",
    "cnt": "count",
    "yr": "year",
    "stu": "student",
    "stuid": "student",
    "fname": "first",
    "lname": "last",
    "pct": "percentage",
    "mgr": "manager",
    "acct": "account",
    "info": "information",
    "pat": "patient",
    "dx": "diagnosis",
    "hiv": "hiv",
    "cont": "continent",
    "lang": "language",
    "pop": "population",
    "avg": "average",
}

#: Curated synonym groups: a word of one group matches any other of the same group.
_SYNONYM_GROUPS: tuple[tuple[str, ...], ...] = (
    ("store", "shop", "outlet"),
    ("employee", "staff", "worker", "personnel"),
    ("person", "people", "individual"),
    ("customer", "client"),
    ("country", "nation", "nationality"),
    ("city", "town"),
    ("car", "automobile", "vehicle", "auto"),
    ("film", "movie"),
    ("song", "track"),
    ("teacher", "instructor", "professor", "faculty", "lecturer"),
    ("student", "pupil"),
    ("doctor", "physician"),
    ("physician", "doctor", "cardiologist", "oncologist", "neurologist", "pediatrician", "psychiatrist"),
    ("age", "old", "older", "young", "younger", "aged"),
    ("weight", "weigh", "heavy", "heavier", "light", "lighter"),
    ("height", "tall", "taller", "short", "shorter"),
    ("price", "cost", "cheap", "cheaper", "expensive", "pricy"),
    ("length", "long", "longer"),
    ("size", "big", "bigger", "large", "larger", "small", "smaller"),
    ("year", "founded", "established"),
    ("source", "depart", "departure", "origin", "leave", "from"),
    ("destination", "arrive", "arrival", "land", "to", "into"),
    ("gender", "sex"),
    ("medication", "drug", "medicine"),
    ("prescription", "prescribe", "prescribed"),
    ("diagnosis", "diagnose", "diagnosed", "condition"),
    ("visit", "appointment", "encounter"),
    ("author", "writer", "write", "written"),
    ("singer", "artist", "sing"),
    ("maker", "manufacturer", "make", "produce", "producer"),
    ("treatment", "treat", "treated"),
    ("language", "speak", "spoken", "tongue"),
    ("type", "kind", "sort", "category", "form"),
    ("location", "place", "site"),
    ("salary", "wage", "pay", "earn"),
    ("phone", "telephone"),
    ("email", "mail"),
    ("date", "day", "when"),
    ("name", "called", "named"),
)


@lru_cache(maxsize=1)
def _synonym_index() -> dict[str, frozenset[str]]:
    index: dict[str, set[str]] = {}
    for group in _SYNONYM_GROUPS:
        keys = {lemma(w) for w in group} | {stem(w) for w in group}
        for key in keys:
            index.setdefault(key, set()).update(keys)
    return {k: frozenset(v) for k, v in index.items()}


def synonyms(word: str) -> frozenset[str]:
    """Lemmas and stems of words that mean the same as ``word`` in the curated table.

    >>> "source" in synonyms("departing"), "destination" in synonyms("arrives")
    (True, True)
    """
    w = word.lower()
    index = _synonym_index()
    return index.get(lemma(w), frozenset()) | index.get(stem(w), frozenset())


def concept_keys(word: str) -> frozenset[str]:
    """Keys a word can match on: its lemma, its abbreviation expansion, and its stem."""
    w = word.lower()
    base = lemma(_ABBREVIATIONS.get(w, w))
    return frozenset({base, stem(base)})


_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


@lru_cache(maxsize=65536)
def name_words(name: str) -> tuple[str, ...]:
    """Split a schema name on snake_case, camelCase, digits; expand abbreviations; lemmatize.

    >>> name_words("Degree_Programs"), name_words("StuID"), name_words("dest_airport")
    (('degree', 'program'), ('student', 'id'), ('destination', 'airport'))
    """
    out = []
    for part in re.split(r"[^A-Za-z0-9]+", name):
        for piece in _CAMEL.findall(part):
            low = piece.lower()
            out.append(lemma(_ABBREVIATIONS.get(low, low)))
    return tuple(w for w in out if w)


#: Words that carry no schema meaning on their own.
STOPWORDS = frozenset(
    """a an the of in on at by for with from to into onto and or but not no nor be do have
    there here that this these those which who whom whose what when where why how many much
    number count total all any each every some their its his her our your my we you they it
    i me us them as than then so such very also only just ever overall listed list exist
    existing there's is are was were been being has had does did will would can could should
    may might must give return find show tell get what's lie whole entire""".split()
)

_WORD_NUMBERS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "twenty": 20, "thirty": 30,
    "forty": 40, "fifty": 50, "hundred": 100, "thousand": 1000,
}  # fmt: skip


def number_value(text: str) -> int | float | None:
    """The number a token denotes (``"10"``, ``"2.5"``, ``"1,000"``, ``"ten"``), else None."""
    t = text.lower().replace(",", "")
    if t in _WORD_NUMBERS:
        return _WORD_NUMBERS[t]
    try:
        return int(t)
    except ValueError:
        pass
    try:
        value = float(t)
    except ValueError:
        return None
    return value if value == value else None  # NaN guard


@dataclass(frozen=True)
class Token:
    """One token of a question: its text, lower-case form, lemma, and kind."""

    index: int
    text: str
    start: int
    end: int
    kind: str  # "word", "number", "quoted", "punct"

    @property
    def lower(self) -> str:
        return self.text.lower()

    @property
    def lemma(self) -> str:
        return lemma(self.lower) if self.kind == "word" else self.lower

    @property
    def keys(self) -> frozenset[str]:
        return concept_keys(self.lower) if self.kind == "word" else frozenset({self.lower})

    @property
    def capitalized(self) -> bool:
        return self.kind == "word" and self.text[:1].isupper()

    @property
    def is_stop(self) -> bool:
        return self.kind == "word" and self.lower in STOPWORDS


_TOKEN = re.compile(
    r"""(?P<quoted>"[^"]+"|'[^']+'|“[^”]+”|‘[^’]+’)"""
    r"""|(?P<number>-?\d+(?:[.,]\d+)*)"""
    r"""|(?P<word>[A-Za-z][A-Za-z0-9]*(?:[-'][A-Za-z0-9]+)*)"""
    r"""|(?P<punct>[^\sA-Za-z0-9])"""
)


def tokenize(question: str) -> list[Token]:
    """Split a question into words, numbers, quoted strings and punctuation.

    A single quote inside a word ("Kyle's") stays in the word; quoted strings keep their
    inner text. Possessive ``'s`` is dropped from words.

    >>> [t.text for t in tokenize("How many flights depart from 'APG' after 2010?")]
    ['How', 'many', 'flights', 'depart', 'from', 'APG', 'after', '2010', '?']
    """
    tokens: list[Token] = []
    for m in _TOKEN.finditer(question):
        kind = m.lastgroup or "punct"
        text = m.group(0)
        start, end = m.start(), m.end()
        if kind == "quoted":
            text, start, end = text[1:-1].strip(), start + 1, end - 1
            if not text:
                continue
            # an apostrophe pair spanning words ("Kyle's friends and Bob's") is not a quote
            if m.group(0)[0] == "'" and len(text.split()) > 6:
                kind = "word"
        if kind == "word":
            if text.lower().endswith("'s"):
                text, end = text[:-2], end - 2
            if number_value(text) is not None and text.lower() in _WORD_NUMBERS:
                kind = "number"
        if kind == "number" and "," in text and len(text.split(",")[-1]) != 3:
            text = text.split(",")[0]
        tokens.append(Token(len(tokens), text, start, end, kind))
    return tokens
