"""Regulatory sentence shapes -> a :class:`Frame` of phrases (no schema involved yet).

The shapes, with the slots they fill (``[...]`` optional, in any order after the data)::

    SENDER  may|shall not  disclose|share|sell|...  DATA [of|about SUBJECT] [to|with RECIPIENT]
            [for PURPOSE[, including P1 and P2]] [if|only if|provided that COND] [unless|except|without EXC]
    RECIPIENT may|has the right to  receive|inspect|collect|...  DATA [of|from SUBJECT] ...
    ORG       may|shall not  use  DATA  for PURPOSE ...               (internal use)
    DATA      may|shall not  be disclosed|used  [to RECIPIENT] [other than R1 or R2] ...   (passive)
    DATA      is not personal information and may be disclosed to anyone                  (public data)

A "who may see what" list line (``ROLE - DATA - view`` / ``- no access``, :func:`_listed`) and a handbook's
imperative (``Never pass D to Y``, ``Give Y D only for P``, :func:`_imperative`) are rewritten into these shapes
first; ``to VERB ...`` after the data is the purpose (``... to verify the renter's identity``).

Prohibitions read in these shapes after a rewrite: ``Under no circumstances may X V ...`` /
``In no event shall X V ...`` -> ``X may not V ...``; ``Disclosure of D to R is prohibited`` ->
``D may not be disclosed to R``; ``Nobody may`` (anyone), ``It is prohibited to`` (no agent named);
an aside after the modal (``may not, for any purpose, view``) is moved or dropped (:func:`_without_aside`).

``SUBJECT's DATA`` is the possessive form of ``DATA of SUBJECT``; relative clauses on a role
(``a consumer who has opted out``, ``an operator under contract``, ``a child under 13``) are kept
as that role's modifier, which the grounding turns into a condition. Everything here is
hand-written pattern code over words (lemmas from :mod:`pimento.nl.text`): no dependency parser,
since spaCy's English models are not published on PyPI (only unofficial re-uploads) and nothing
may be downloaded at run time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pimento.nl.text import lemma
from pimento.policy.extract_offline.lexicon import (
    DISCLOSE_VERBS,
    DITRANSITIVE_VERBS,
    FLOW_VERBS,
    IMPERATIVE_VERBS,
    INFINITIVE_PURPOSE_VERBS,
    LIST_DENY,
    LIST_PERMIT,
    NOTIFY_VERBS,
    RECEIVE_VERBS,
    USE_VERBS,
)

__all__ = ["ExceptionClause", "Frame", "Sentence", "parse_sentence", "split_sentences"]


@dataclass(frozen=True)
class Sentence:
    """One sentence of the policy text; ``id`` from its ``R1.``-style label, else ``C1``, ``C2``, ..."""

    id: str
    text: str


_LABEL = re.compile(r"^\s*(?:\(?([A-Za-z]{0,4}\d{1,3}(?:\.\d{1,3})?)[.):]|(\d{1,3}\.\d{1,3})|\(([a-z]{1,4})\)|"
                    r"[-*\u2022])\s+")


def split_sentences(text: str) -> list[Sentence]:
    """Policy text -> sentences: ``#`` lines are comments; a labelled line (``R1.``, ``(a)``,
    ``3)``, ``3.2``, ``-``) starts a new sentence; other lines continue the current one; an unlabelled
    paragraph is cut at sentence ends (``. `` before a capital letter). Ids: the label (``R1``,
    ``a``; a number ``3`` gives ``C3``), else ``P1``, ``P2``, ... in order.

    >>> [(s.id, s.text) for s in split_sentences("# c\\nR1. A nurse may\\nsee notes.\\nR2. A clerk may not.")]
    [('R1', 'A nurse may see notes.'), ('R2', 'A clerk may not.')]
    """
    blocks: list[tuple[str | None, str]] = []
    for raw in text.replace("\r\n", "\n").split("\n"):
        line = raw.strip()
        if line.startswith("#"):
            continue
        if not line:
            blocks.append((None, ""))
            continue
        m = _LABEL.match(line)
        if m:
            blocks.append((m.group(1) or m.group(2) or m.group(3) or "", line[m.end():]))
        elif _is_title(line) or (blocks and blocks[-1][0] is None and _is_title(blocks[-1][1])):
            blocks.append((None, line))  # a title in capitals is a block of its own, as is the line after it
        elif blocks and blocks[-1][1]:
            label, body = blocks[-1]
            blocks[-1] = (label, body + " " + line)
        else:
            blocks.append((None, line))
    out: list[Sentence] = []
    used: set[str] = set()
    for label, body in _with_lead_ins(blocks):
        body = _answer(" ".join(body.split()))
        if not body:
            continue
        parts = [body] if label else re.split(r"(?<=[.;!?])\s+(?=[A-Z])", body)
        for part in parts:
            if len(part) < 12:
                continue
            sid = label if label and len(parts) == 1 else ""
            if sid and not sid[:1].isalpha():
                sid = f"C{sid}".replace(".", "_")
            if not sid or sid in used:  # unlabelled sentences: P1, P2, ...
                sid = f"P{sum(1 for u in used if u.startswith('P')) + 1}"
                while sid in used:
                    sid += "_"
            used.add(sid)
            out.append(Sentence(sid, part))
    return out


def _is_title(line: str) -> bool:
    """A line in capitals (``PEAKFORM GYMS``): a title, never part of the next line's sentence."""
    return any(ch.isalpha() for ch in line) and line.upper() == line


#: a question that opens a labelled provision, and a bare yes or no that opens its answer (``Q2. Do the groomers see
#: the notes? No. Groomers must not see ...``): the answer is the provision
_QUESTION = re.compile(r"\?\s+(?:(?:yes|no)\b[.,:;!]?\s*)?(?=[A-Z])", re.IGNORECASE)


def _answer(body: str) -> str:
    """A provision that opens with a question (a FAQ's ``Q1.``, the question perhaps after a sentence of context):
    what follows its last question mark, else the provision unchanged."""
    ends = list(_QUESTION.finditer(body))
    return body[ends[-1].end():] if ends else body


#: a lettered or roman sub-clause label (``(a)``, ``(iv)``): under a lead-in it continues the lead-in's sentence
_SUB_LABEL = re.compile(r"^[a-z]{1,4}$")
#: a lead-in: a provision that ends with a colon, its sentence completed by each of the sub-clauses that follow
_LEAD_IN = re.compile(r"[:\u2014-]\s*$")


def _with_lead_ins(blocks: list[tuple[str | None, str]]) -> list[tuple[str | None, str]]:
    """``4. A claims handler may:`` then ``(a) view the claims ...;`` ``(b) ...``: each sub-clause is one sentence,
    the lead-in's words then its own (``A claims handler may view the claims ...``), labelled with both labels
    (``4_a``: ids stay unique where every provision has its ``(a)``); the lead-in alone is no sentence. A
    sub-clause's closing ``; and``/``; or`` is dropped. Blocks without a lead-in are unchanged."""
    out: list[tuple[str | None, str]] = []
    lead: tuple[str, str, str] | None = None  # (label, words, the block as written)
    used = False
    for label, body in blocks:
        text = " ".join(body.split())
        if lead is not None and label is not None and _SUB_LABEL.match(label):
            tail = re.sub(r"\s*;\s*(?:and|or)?\s*$", "", text)
            out.append((f"{lead[0]}_{label}" if lead[0] else label, f"{lead[1]} {tail}"))
            used = True
            continue
        if label is not None and lead is not None:
            if not used:  # a lead-in no sub-clause completed stays as written
                out.append((lead[0], lead[2]))
            lead = None
        if label is not None and _LEAD_IN.search(text) and not _SUB_LABEL.match(label or "-"):
            lead, used = (label, _LEAD_IN.sub("", text).strip(), body), False
            continue
        out.append((label, body))
    if lead is not None and not used:
        out.append((lead[0], lead[2]))
    return out


@dataclass
class ExceptionClause:
    """An exception (``unless``, ``except``, ``other than``, ``without``): role tests, purpose, conditions."""

    roles: list[str] = field(default_factory=list)
    roles_any: bool = False
    purpose: str | None = None
    conditions: list[str] = field(default_factory=list)


@dataclass
class Frame:
    """The phrases of one sentence, before grounding."""

    id: str
    text: str
    sign: str = "permit"
    verb: str = "disclose"  # disclose | receive | use | passive
    agent: str | None = None
    agent_mod: str = ""
    data: list[str] = field(default_factory=list)
    excluded: list[str] = field(default_factory=list)
    subject: str | None = None
    subject_mod: str = ""
    recipient: str | None = None
    recipient_mod: str = ""
    source: str | None = None
    source_mod: str = ""
    purpose: str | None = None
    purpose_includes: list[str] = field(default_factory=list)
    conditions: list[str] = field(default_factory=list)
    exceptions: list[ExceptionClause] = field(default_factory=list)
    public: bool = False
    is_norm: bool = True
    #: "the records of *their* child", "information about *them*": the subject relates to the agent
    subject_of_agent: bool = False
    #: "shall not ... except as permitted by this part": restates that what no norm permits is denied
    restates_default: bool = False
    #: the reader's things that own the data ("your *pet's* species": pet), dropped from the data phrases
    possessors: list[str] = field(default_factory=list)


_DENY = (r"shall not|may not|must not|cannot|can not|will not|should not|shall never|may never|must never|"
         r"(?:is|are) not (?:permitted|allowed|authorized) to|(?:is|are) (?:prohibited|forbidden) (?:from|to)|"
         r"(?:shall|must|should|will) refrain from")
_PERMIT = (r"may|can|(?:is|are) (?:permitted|allowed|authorized|entitled) to|(?:has|have) the right to|"
           r"shall be permitted to")
_MODAL = re.compile(rf"\b(?P<deny>{_DENY})\b|\b(?P<permit>{_PERMIT})\b", re.IGNORECASE)
_PUBLIC = re.compile(r"\bnot (?:personal|about any|about an|about a|private|confidential)\b|"
                     r"\bpublicly available\b|\bpublic information\b", re.IGNORECASE)
_TAIL = re.compile(r",?\s*\b(?P<m>only if|if|provided that|on condition that|unless|except|other than|without|"
                   r"but only when|but only if|but only while|only when|when|where|only while|while|as long as|"
                   r"so long as|once)\b\s*", re.IGNORECASE)
_CORE = re.compile(r"\s*\b(?P<m>to|with|for|from)\b\s+", re.IGNORECASE)
#: a data phrase that is only a head noun ("information", "records"): what it is about names the data
_HEAD_ONLY = re.compile(r"^(?:information|info|data|records?|details|files?)$", re.IGNORECASE)
_RELATIVE = re.compile(r"\b(?:who|whom|whose)\b", re.IGNORECASE)
_MOD = re.compile(r"\s*,?\s*\b(?:who|whom|that|which|whose|under|over|enrolled|aged|older|younger|below|above|"
                  r"processing|providing|acting|performing|they|he|she|we)\b", re.IGNORECASE)
_LEADING = re.compile(r"^(?P<m>if|unless|except|when|where|provided that|only if)\b\s+(?P<c>[^,]+),\s*(?P<rest>.+)$",
                      re.IGNORECASE)
_SUBJ = re.compile(r"\s+\b(?P<m>of|about|concerning|regarding|revealing|relating to|on)\b\s+", re.IGNORECASE)
_POSS = re.compile(r"^(?P<owner>(?:[\w-]+\s+){0,3}?[\w-]+)'s\s+(?P<rest>.+)$")
_DETS = re.compile(r"^(?:(?:a|an|the|its|their|his|her|any|all|each|every|such|that|this|these|those|"
                   r"another|other|only|our|your)\s+)+", re.IGNORECASE)
#: a notice that speaks to the data subject: "your CV", "the feedback on your applications"
_ADDRESSEE = re.compile(r"\byour\b", re.IGNORECASE)
_BY_OTHER_RULES = re.compile(r"^as (?:otherwise )?(?:permitted|required|authorized|provided|allowed)\b", re.IGNORECASE)
_PAREN_EXCLUDED = re.compile(r"\(\s*(?:no|not|excluding|except|without)\s+(?P<x>[^)]*)\)", re.IGNORECASE)
_EXCLUDED = re.compile(r",?\s*\bbut not\b\s+(?P<x>[^,]+),?", re.IGNORECASE)
#: a negative adverbial before an inverted modal: "Under no circumstances may X view ..." = "X may not view ..."
_NEVER = re.compile(r"^(?:under no circumstances?|in no (?:event|case|circumstances?)|at no time|on no account|never)"
                    r"\s*,?\s+(?P<modal>may|shall|will|can|must|should)\s+(?P<rest>.+)$", re.IGNORECASE)
#: an aside between the modal and the verb: "may not, for any purpose, view ..."
_ASIDE = re.compile(r"^,\s*(?P<a>[^,]{2,80}?)\s*,\s*")
#: a nominal prohibition: "Disclosure of D to R is prohibited" = "D may not be disclosed to R"
_NOMINAL = re.compile(r"^(?:the\s+|any\s+)?(?P<noun>disclosure|sharing|sale|release|transfer)\s+of\s+(?P<rest>.+?)\s+"
                      r"(?:is|are)\s+(?:strictly\s+)?(?:prohibited|forbidden|not permitted|not allowed)"
                      r"(?P<tail>(?:\s*,?\s+(?:unless|except|if|without)\b.*)?)$", re.IGNORECASE)
_PARTICIPLE = {"disclosure": "disclosed", "sharing": "shared", "sale": "sold", "release": "released",
               "transfer": "transferred"}
#: the whole population as the agent of a prohibition: "Nobody may ...", "No one shall ..."
_NOBODY = re.compile(r"^(?:nobody|no one|no-one|no person|no party)$", re.IGNORECASE)
_UNIVERSAL = re.compile(r"^(?:for any (?:purpose|reason)|at any time|in any (?:case|event|form|manner|way)|"
                        r"under any circumstances?|whatsoever|ever)$", re.IGNORECASE)


#: the words before a modal that make the sentence a question (a heading): an interrogative that opens it or follows
#: a colon ("Who may see what", "Part A: what the group may do")
_ASKS = re.compile(r"(?:^|:\s*)(?:who|what|which|whom|whose|how|why)\b(?!.*:)", re.IGNORECASE)


def _det(text: str) -> str:
    return _DETS.sub("", text.strip().strip(",;:. ")).strip()


def _is_verb(word: str) -> bool:
    w = lemma(word.lower())
    return _verb_class(word) is not None or word.lower() in ("be",)


#: participles the suffix rules of :func:`_verb_forms` miss
_IRREGULAR = {"sent": "send", "sold": "sell", "got": "get", "gotten": "get", "seen": "see", "saw": "see",
              "told": "tell", "gave": "give", "given": "give", "made": "make", "kept": "keep", "held": "hold"}


def _verb_forms(word: str) -> list[str]:
    """Candidate base forms of an inflected verb (``shared`` -> share, ``sharing`` -> share, ``gets`` -> get):
    the lemma, then the word less a suffix with and without a final ``e``."""
    w = word.lower()
    out = [lemma(w), w, _IRREGULAR.get(w, w)]
    for suffix in ("ing", "ed", "es", "s", "d"):
        if w.endswith(suffix) and len(w) > len(suffix) + 2:
            base = w[: -len(suffix)]
            out += [base, base + "e", base[:-1] if len(base) > 2 and base[-1] == base[-2] else base]
    return out


def _verb_class(word: str) -> str | None:
    forms = _verb_forms(word)
    for cls, verbs in (("disclose", DISCLOSE_VERBS), ("receive", RECEIVE_VERBS), ("use", USE_VERBS),
                       ("notify", NOTIFY_VERBS), ("flow", FLOW_VERBS)):
        if any(f in verbs for f in forms):
            return cls
    return None


def split_list(text: str) -> list[str]:
    """"a, b and c" -> [a, b, c] (determiners removed)."""
    items = re.split(r",\s*(?:and\s+|or\s+)?|\s+and\s+|\s+or\s+|\s*&\s*|\s*/\s*", text)
    return [_det(i) for i in items if _det(i)]


def split_mod(np: str) -> tuple[str, str]:
    """``a consumer who has opted out`` -> (``consumer``, ``who has opted out``)."""
    m = _MOD.search(np)
    if m and m.start() > 0:
        return _det(np[: m.start()]), np[m.start():].strip(" ,")
    return _det(np), ""


def _subject_of(segment: str) -> tuple[str, str | None, str]:
    """Data segment -> (data phrase, subject phrase or None, subject modifier)."""
    seg = _det(segment)
    m = _subject_marker(seg)
    subject = None
    lead = _POSS.match(seg)
    if lead and m and m.start() > lead.end("owner") and m.group("m").lower() != "revealing":
        # "a member's date of birth or address": the possessive names the subject, "of" is the data's own
        return _det(lead.group("rest")), split_mod(lead.group("owner"))[0], ""
    if m:
        data, subj = seg[: m.start()], seg[m.end():]
        if m.group("m").lower() == "revealing":
            poss = _POSS.match(_det(subj))
            if poss:
                return _det(poss.group("rest")), split_mod(poss.group("owner"))[0], ""
            return _det(subj), None, ""
        inner = _POSS.match(_det(subj))
        if _HEAD_ONLY.match(_det(data)) and inner and m.group("m").lower() != "of":
            # "information about a student's disability": the head says nothing; the possessive's noun is the data
            # ("the records of a patient's child" keep their subject: "of" names whose records)
            owner, mod = split_mod(inner.group("owner"))
            return _det(inner.group("rest")), owner, mod
        subject, mod = split_mod(subj)
        seg = data
        poss = _POSS.match(_det(seg))
        if poss:
            seg = poss.group("rest")
        return _det(seg), subject, mod
    poss = _POSS.match(seg)
    if poss:
        return _det(poss.group("rest")), split_mod(poss.group("owner"))[0], ""
    # "personal information a business has collected about them": a trailing "about X"
    return seg, None, ""


def _subject_marker(seg: str) -> re.Match[str] | None:
    """The ``of``/``about`` that introduces the subject: the first one followed by a determiner when some is
    ("the date of birth and home address *of an* applicant": ``of birth`` is the data's own), else the first."""
    led = _determined_markers(seg)
    if led:
        return led[0]
    # "date of birth and home address": an "of" before a bare singular noun is the data's own (place of birth,
    # proof of address); a subject without a determiner is plural ("workout plans of members")
    return next((m for m in _SUBJ.finditer(seg)
                 if not (m.group("m").lower() == "of" and _bare_singular(seg[m.end():]))), None)


def _bare_singular(rest: str) -> bool:
    """Does ``rest`` open with a singular noun group, no word of it a plural in -s and no pronoun (``birth and ...``
    is; ``boat owners they ...``, ``patients enrolled in ...``, ``theirs`` are not)?"""
    group = [w.lower().strip(",;.") for w in re.split(
        r",|\s+\b(?:and|or|who|whom|whose|that|which|they|he|she|we|under|over|with|for|to|in|on|at|from|by)\b",
        rest.strip(), maxsplit=1, flags=re.IGNORECASE)[0].split()]
    plural = [w for w in group if w.endswith("s") and not w.endswith(("ss", "us", "is"))]
    return bool(group) and not plural and group[0] not in ("them", "him", "her", "you", "us", "me")


def _determined_markers(seg: str) -> list[re.Match[str]]:
    """The subject markers (``of``, ``about``, ...) of ``seg`` that a determiner follows (``of an applicant``)."""
    return [m for m in _SUBJ.finditer(seg) if _DETS.match(seg[m.end():])]


def data_phrase(segment: str) -> str:
    """The data phrase of a listed item less a subject that a determiner introduces (``location records of a
    subscriber's lines`` -> ``location records``; ``date of birth`` stays): how a defined term's items are read."""
    seg = _det(segment)
    marks = _determined_markers(seg)
    return _det(seg[: marks[0].start()]) if marks else seg


def _segments(text: str, pattern: re.Pattern[str]) -> list[tuple[str, str]]:
    """Cut ``text`` at the markers of ``pattern`` -> [(marker or '', text)] in order."""
    out: list[tuple[str, str]] = []
    pos, marker = 0, ""
    for m in pattern.finditer(text):
        nxt = text[m.end():].split(" ", 1)[0]
        before = text[pos:m.start()]
        if (m.group("m").lower() == "to" and _purpose_infinitive(nxt) and before.strip()
                and not _RELATIVE.search(before)):
            # "card details to collect membership fees": an infinitive of purpose is the purpose slot
            out.append((marker, before))
            pos, marker = m.end(), "for"
            continue
        if m.group("m").lower() == "to" and (_is_verb(nxt) or nxt.lower() in ("know",)):
            continue
        out.append((marker, text[pos:m.start()]))
        pos, marker = m.end(), m.group("m").lower()
    out.append((marker, text[pos:]))
    return [(k, v.strip(" ,;:.")) for k, v in out if v.strip(" ,;:.") or k]


def _purpose_infinitive(word: str) -> bool:
    """Does ``to WORD`` after the data state a purpose (``to verify the renter's identity``)?"""
    return word.lower().strip(",.;") in INFINITIVE_PURPOSE_VERBS


#: a "who may see what" list line: ``ROLE - DATA - ACCESS`` (dashes or bars between spaced fields)
_LIST_SEP = re.compile(r"\s+[-\u2013\u2014|]\s+")


def _listed(raw: str) -> str:
    """``Trainers - workout plans of members they coach - view and edit.`` -> ``Trainers may view workout plans of
    members they coach``; an access of ``no access`` (``none``, ``never``, ``not permitted``) -> ``... may not view
    ...``. Read only where the line has exactly three fields, the last an access and no modal; other lines
    unchanged."""
    if _MODAL.search(raw):
        return raw
    fields = [f.strip(" .;:") for f in _LIST_SEP.split(raw.strip().rstrip("."))]
    if len(fields) != 3 or not all(fields):
        return raw
    role, data, access = fields
    if LIST_DENY.match(access):
        return f"{role} may not view {data}"
    ws = re.findall(r"[a-z]+", access.lower())
    if ws and all(w in LIST_PERMIT or w in ("and", "or") for w in ws):
        return f"{role} may view {data}"
    return raw


#: an imperative rule of a handbook: ``Never pass D to Y``, ``Do not keep D ...``, ``Give Y D only for P``
_IMPERATIVE = re.compile(r"^(?P<neg>(?:never|do not|do never)\s+)?(?P<v>[A-Za-z]+)\s+(?P<rest>.+)$", re.IGNORECASE)
#: what cannot follow an imperative verb ("Access to records is ...", "Review of files ..."): a noun's company
_NOT_OBJECT = frozenset("to of is are was were be by in on at and or will has have can may must shall".split())
#: where an imperative's objects end: a purpose, a condition, an exception (``only`` before it included)
_OBJECTS_END = re.compile(r",?\s+(?:(?:but\s+)?only\s+)?\b(?:for|if|when|while|once|unless|except|provided|where|"
                          r"as long as|so long as|to\s+(?=\w))\b", re.IGNORECASE)


def _imperative(raw: str) -> str:
    """A handbook's imperative rule, addressed to the staff and naming no agent, in the shapes the parser reads:
    ``Never pass D to Y`` / ``Do not keep D once ...`` -> ``It is prohibited to disclose D to Y`` / ``... to retain
    D once ...``; ``Give Y D only for P`` / ``Send D to Y only while C`` -> ``It is permitted to give D to Y only
    for P`` (a permit whose purpose or condition is what ``only`` names: under the default deny the flow is not
    permitted otherwise, so no prohibition is added). The recipient first (``Give the police D``, ``Show a
    technician D``) is moved after the data. A positive imperative needs a verb of a data flow (``Keep D for six
    years`` is no norm); unchanged when the first word is no such verb or a noun's company follows it."""
    m = _IMPERATIVE.match(raw)
    if m is None:
        return raw
    verb, rest, negated = m.group("v").lower(), m.group("rest"), bool(m.group("neg"))
    flows = verb in IMPERATIVE_VERBS and IMPERATIVE_VERBS[verb] not in ("retain", "store", "copy")
    if not (flows or (negated and verb in IMPERATIVE_VERBS) or verb in _BASE_FLOW_VERBS):
        return raw
    if rest.split()[0].lower() in _NOT_OBJECT:
        return raw
    if verb in DITRANSITIVE_VERBS:
        rest = _recipient_last(rest)
    canonical = IMPERATIVE_VERBS.get(verb, verb)
    return f"It is {'prohibited' if negated else 'permitted'} to {canonical} {rest}"


#: the base forms of the verbs of a data flow (an imperative's verb is its base form)
_BASE_FLOW_VERBS = DISCLOSE_VERBS | RECEIVE_VERBS | USE_VERBS | NOTIFY_VERBS | FLOW_VERBS


def _recipient_last(rest: str) -> str:
    """``the police a renter's home address only for ...`` -> ``a renter's home address to the police only for
    ...``: of two objects before any purpose or condition, with no ``to``/``with`` among them, the first (up to the
    next determiner or possessive) is the recipient."""
    end = _OBJECTS_END.search(rest)
    objects, after = (rest[:end.start()], rest[end.start():]) if end else (rest, "")
    if re.search(r"\b(?:to|with)\b", objects, re.IGNORECASE):
        return rest
    tokens = objects.split()
    start = 1 if tokens and _DETS.match(tokens[0] + " ") else 0
    cut = next((j for j in range(start + 1, len(tokens)) if _DETS.match(tokens[j] + " ") or tokens[j].endswith("'s")),
               None)
    if cut is None:
        return rest
    return f"{' '.join(tokens[cut:])} to {' '.join(tokens[:cut])}{after}"


def _denominalize(raw: str) -> str:
    """``Disclosure of D to R is prohibited`` -> ``D may not be disclosed to R`` (the passive shape)."""
    m = _NOMINAL.match(raw)
    if m is None:
        return raw
    rest = m.group("rest")
    cut = re.search(r"\s+\b(to|with)\b\s+", rest)  # the recipient follows the verb in the passive shape
    data, moved = (rest[:cut.start()], f" {cut.group(1)} {rest[cut.end():]}") if cut else (rest, "")
    return f"{data} may not be {_PARTICIPLE[m.group('noun').lower()]}{moved}{m.group('tail')}"


def _uninvert(raw: str) -> str:
    """``Under no circumstances may X view D`` -> ``X may not view D`` (the agent ends at the first verb)."""
    m = _NEVER.match(raw)
    if m is None:
        return raw
    words = m.group("rest").split()
    verbs = [i for i, w in enumerate(words) if i > 0 and (w.lower() == "be" or _verb_class(w.rstrip(",")))]
    verb = verbs[0] if verbs else None
    if verb is None:
        return raw
    modal = m.group("modal").lower()
    negated = "cannot" if modal == "can" else f"{modal} not"
    return " ".join([*words[:verb], negated, *words[verb:]])


def _without_aside(post: str, sign: str) -> str:
    """The text after the modal with an aside between the modal and the verb put where it is read:
    ``, for any purpose,`` is dropped (it restricts nothing); ``, for research,`` (a ``for``/``to``
    slot) goes into the core, before any condition; ``, unless ...,`` (a condition marker) to the end; any
    other aside becomes a condition of a permit (grounded, or the permit is held for review: fail narrow)
    and is dropped from a prohibition (which then prohibits more, never less)."""
    m = _ASIDE.match(post)
    if m is None:
        return post
    aside, rest = m.group("a").strip(), post[m.end():]
    if _UNIVERSAL.match(aside):
        return rest
    if re.match(r"^(?:for|to)\b", aside, re.IGNORECASE):
        tail = _TAIL.search(rest)
        cut = tail.start() if tail else len(rest)
        return f"{rest[:cut]} {aside}{rest[cut:]}"
    if _TAIL.match(aside):
        return f"{rest}, {aside}"
    return f"{rest} if {aside}" if sign == "permit" else rest


def _parse_exception(marker: str, text: str) -> ExceptionClause:
    exc = ExceptionClause()
    body = re.sub(r"^(?:the (?:disclosure|use|sale|flow|sharing) (?:is|be)|it is|they are|is|are)\s+", "", text.strip(),
                  flags=re.IGNORECASE)
    if marker == "other than":
        names = [split_mod(x)[0] for x in re.split(r"\s+or\s+|,\s*(?:or\s+)?", body) if x.strip()]
        exc.roles, exc.roles_any = names, True
        return exc
    if not re.match(r"^(?:to|for|with)\b", body, re.IGNORECASE):
        exc.conditions.append(body)
        return exc
    in_mod = False
    for key, seg in _segments(body, _CORE):
        if in_mod:
            exc.conditions[-1] += f" {key} {seg}"
            continue
        if key in ("to", "with"):
            role, mod = split_mod(seg)
            exc.roles.append(role)
            if mod:
                if re.match(r"^(?:processing|providing|acting|performing)\b", mod, re.IGNORECASE):
                    exc.purpose = exc.purpose or mod
                else:
                    exc.conditions.append(mod)
                    in_mod = True
        elif key == "for":
            exc.purpose = seg
        elif seg:
            exc.conditions.append(seg)
    return exc


_CONTRACTIONS = ((r"\bcan't\b", "cannot"), (r"\bwon't\b", "will not"), (r"\bshan't\b", "shall not"),
                 (r"\b(\w+)n't\b", r"\1 not"), (r"\b(\w+)'ll\b", r"\1 will"), (r"\b(\w+)'re\b", r"\1 are"),
                 (r"\b(\w+)'ve\b", r"\1 have"), (r"\b(I)'m\b", r"\1 am"))
#: a leading cross-reference that restricts nothing by itself: "Subject to paragraph 12, X may ..."
_CROSS_REF = re.compile(r"^(?:subject to|without prejudice to|notwithstanding|pursuant to|in accordance with|"
                        r"as (?:set out|provided|described) in)\s+(?:the\s+)?(?:paragraph|clause|section|article|"
                        r"rule|part|sub-?paragraph|sub-?clause|schedule)s?\s+[\w.()]+(?:\s+(?:and|or|to)\s+[\w.()]+)*"
                        r"(?:\s+(?:above|below|of this \w+))?\s*,\s*", re.IGNORECASE)
#: an adverb between the modal and the verb that restricts nothing the tail does not say ("can only see ... if")
_ADVERB = re.compile(r"^(?:only|also|always|still|additionally|likewise|ordinarily|normally|generally)\s+",
                     re.IGNORECASE)


#: a modal-less present tense of receiving (``X gets D``, ``X sees D``): the verbs a descriptive sentence
#: ("Northwind reviews this Policy", "We collect ...") does not use
_PRESENT_BASE = {"gets": "get", "receives": "receive", "sees": "see", "views": "view", "accesses": "access",
                 "obtains": "obtain"}
_PRESENT = re.compile(rf"^(?P<x>[A-Z][\w' -]*?)\s+(?P<v>{'|'.join(_PRESENT_BASE)})\b", re.IGNORECASE)
#: the same after a plural subject ("Repair shops get D"): the base form, the subject's last word in -s
_PRESENT_PLURAL = re.compile(rf"^(?P<x>[A-Z][\w' -]*?s)\s+(?P<v>{'|'.join(_PRESENT_BASE.values())})\b",
                             re.IGNORECASE)


def _flow_verb(word: str) -> bool:
    """A verb of a data flow (disclose, receive, use, notify or flow classes): what a modal-less shape needs."""
    return _verb_class(word.rstrip(",")) is not None


def _plain(raw: str, provision: bool = True) -> str:
    """Plain-English shapes rewritten into the modal shapes the parser reads: contractions expanded (``can't`` ->
    ``cannot``, ``we'll`` -> ``we will``); a leading cross-reference dropped (``Subject to paragraph 12, ``);
    ``No X shall V`` -> ``No X may V`` (a prohibition); ``X never V`` / ``X do(es) not V`` -> ``X may not V`` and
    ``D is never Ved`` -> ``D may not be Ved``; ``X will V`` -> ``X may V``; ``We let X V`` / ``We allow X to V`` ->
    ``X may V``; in each, V a verb of a data flow (``We do not keep ...`` stays no norm). In a ``provision`` (a
    labelled item), also ``X gets D`` -> ``X may get D`` (in prose, "The rider sees the fare" describes)."""
    for pat, rep in _CONTRACTIONS:
        raw = re.sub(pat, rep, raw, flags=re.IGNORECASE)
    raw = re.sub(r"\blook(?:s|ing)? (?:at|up)\b", "view", raw, flags=re.IGNORECASE)  # a phrasal verb: one word
    raw = re.sub(r"\bha(?:ve|s) access to\b", "access", raw, flags=re.IGNORECASE)
    raw = _CROSS_REF.sub("", raw)
    raw = raw[:1].upper() + raw[1:]
    raw = re.sub(r"^((?:no|nobody|no one)\b.*?)\bshall\b", r"\1may", raw, count=1, flags=re.IGNORECASE)
    if _MODAL.search(raw):
        return raw
    if provision:  # a handbook's imperative ("Never pass D to Y", "Give Y D only for P")
        imperative = _imperative(raw)
        if imperative != raw:
            return imperative
    m = re.search(r"\b(?:is|are)\s+never\s+(?P<v>\w+)\b", raw, re.IGNORECASE)
    if m and _flow_verb(m.group("v")):
        return f"{raw[:m.start()]}may not be {raw[m.start('v'):]}"
    m = re.search(r"\b(?:never|(?:do|does) not)\s+(?P<v>\w+)\b", raw, re.IGNORECASE)
    if m and _flow_verb(m.group("v")):
        return f"{raw[:m.start()]}may not {lemma(m.group('v').lower())}{raw[m.end():]}"
    m = re.search(r"\bwill\s+(?P<v>\w+)\b", raw, re.IGNORECASE)
    if m and _flow_verb(m.group("v")):
        return f"{raw[:m.start()]}may {raw[m.start('v'):]}"
    m = re.match(r"^\w+\s+(?:let|lets|allow|allows|permit|permits)\s+", raw, re.IGNORECASE)
    words = raw[m.end():].split() if m else []
    at = next((i for i, w in enumerate(words) if i > 0 and _flow_verb(w)), None)
    if at is not None:
        who = [w for w in words[:at] if w.lower() != "to"]
        return " ".join([who[0][:1].upper() + who[0][1:], *who[1:], "may", lemma(words[at].lower()), *words[at + 1:]])
    # "Our screening provider gets D": in a notice, a statement of who receives what ("Here is who sees what" is not)
    m = (_PRESENT.match(raw) or _PRESENT_PLURAL.match(raw)) if provision else None
    if m and not re.search(r"\b(?:is|are|was|were|who|what|which|it|this|that|there|here)\b", m.group("x"),
                           re.IGNORECASE):
        verb = m.group("v").lower()
        return f"{m.group('x')} may {_PRESENT_BASE.get(verb, verb)}{raw[m.end('v'):]}"
    return raw


def parse_sentence(sentence: Sentence) -> Frame:
    """Read the slots of one policy sentence (see the module docstring)."""
    excluded = [x.strip() for m in _PAREN_EXCLUDED.finditer(sentence.text)
                for x in re.split(r",\s*(?:(?:no|nor|or|and)\s+)?|\s+(?:or|nor|and)\s+(?:no\s+)?", m.group("x"))
                if x.strip()]
    raw = re.sub(r"\(((?:directly )?(?:and|or) indirectly)\)", r"\1", sentence.text)  # a flag, kept
    raw = re.sub(r"\([^)]*\)", " ", raw)
    raw = _listed(raw)  # "Trainers - workout plans - view." (a who-may-see-what list line)
    raw = re.sub(r",?\s+(?:and\s+|but\s+)?nothing\s+(?:else|more)\b", "", raw, flags=re.IGNORECASE)  # "D, nothing else"
    raw = _plain(" ".join(raw.replace("\u2019", "'").split()), provision=not re.fullmatch(r"P\d+_*", sentence.id))
    # a labelled item may add explanatory sentences: the norm is the first one with a modal
    parts = re.split(r"(?<=[.;!?])\s+(?=[A-Z])", raw)
    raw = next((p for p in parts if _MODAL.search(p)), raw).rstrip(".;")
    lead = _LEADING.match(raw)
    if lead:  # "Unless the patient agrees, X may not ..." -> "X may not ... unless the patient agrees"
        raw = f"{lead.group('rest')} {lead.group('m').lower()} {lead.group('c')}"
    raw = _denominalize(_uninvert(raw))
    frame = Frame(sentence.id, sentence.text)
    frame.excluded = [_det(x) for x in excluded]
    frame.public = bool(_PUBLIC.search(raw))
    m = _MODAL.search(raw)
    if m is not None and re.search(r"\bright to$", m.group(0), re.IGNORECASE) and not _flow_verb(
            (raw[m.end():].split() or [""])[0]):
        m = None  # "you have the right to work here": a right, not a flow of data
    if m is None:
        frame.is_norm = False
        return frame
    frame.sign = "deny" if m.group("deny") else "permit"
    pre, post = raw[: m.start()].strip(), _without_aside(raw[m.end():].strip(), frame.sign)
    if _ASKS.search(pre):  # "Who may see what", "Member data: who may see what": a heading's question, no norm
        frame.is_norm = False
        return frame
    if _NOBODY.match(pre) or re.match(r"^it$", pre, re.IGNORECASE):  # "Nobody may", "It is prohibited to"
        frame.sign, pre = "deny" if _NOBODY.match(pre) else frame.sign, ""
    elif re.match(r"^no\s", pre, re.IGNORECASE):
        frame.sign, pre = "deny", pre[3:]
    post = re.sub(r"^(?:ever|at any time)\s+", "", post, flags=re.IGNORECASE)  # "must not ever view"
    post = _ADVERB.sub("", post)  # "can only see": the tail's "if" says when
    pre = re.split(r"\s+\b(?:is|are)\b\s+", pre)[0] if frame.public else pre
    for x in _EXCLUDED.finditer(post):
        frame.excluded += [_subject_of(i)[0] for i in split_list(x.group("x"))]
    post = _EXCLUDED.sub(" ", post)
    words = post.split()
    passive_cls = None  # the class of a passive's verb ("be viewed": use), for its "by" agent
    if words and words[0].lower() == "be":
        frame.verb = "passive"
        passive_cls = _verb_class(words[1].rstrip(",")) if len(words) > 1 else None
        i = 1
        while i < len(words) and (_verb_class(words[i].rstrip(",")) or words[i].lower() in ("or", "and")):
            i += 1
        rest = " ".join(words[i:])
    else:
        i, cls = 0, None
        while i < len(words):
            w = words[i].lower().rstrip(",")
            c = _verb_class(w)
            if c and cls is None:
                cls = c
            nxt = [x.lower() for x in words[i + 1:i + 3]]
            if c or (w in ("and", "or", "to") and nxt and (_verb_class(nxt[0]) or (
                    nxt[0] == "to" and len(nxt) > 1 and _verb_class(nxt[1])))):
                i += 1
                continue
            break
        if i == 0:  # an unknown verb: take it as a disclosure
            i = 1
        frame.verb = "disclose" if cls is None else {"flow": "passive"}.get(cls, cls)
        rest = " ".join(words[i:])
    # tail: conditions and exceptions
    tail = _segments(rest, _TAIL)
    core = tail[0][1] if tail and tail[0][0] == "" else ""
    for marker, text in tail[1:] if core or (tail and tail[0][0] == "") else tail:
        if marker in ("unless", "except", "other than", "without"):
            frame.exceptions.append(_parse_exception(marker, text))
        elif text:
            frame.conditions.append(text)
    if frame.sign == "deny" and any(_BY_OTHER_RULES.match(c) for e in frame.exceptions for c in e.conditions):
        frame.is_norm = False  # "may not ..., except as permitted by this subpart": the default deny
        frame.restates_default = True
        return frame
    core = re.sub(r"\bonly\b\s*", "", core, flags=re.IGNORECASE)
    if frame.verb == "notify":  # the object is the person told; what is told follows "about"
        frame.verb = "disclose"
        told = re.split(r"\s+\b(?:about|regarding|concerning|for)\b\s+", core, maxsplit=1)[0]
        frame.recipient, frame.recipient_mod = split_mod(told)
        core = core[len(told):]
        core = re.sub(r"^\s*\b(?:about|regarding|concerning)\b\s+", "", core)
        if not core.strip() or core.lstrip().lower().startswith("for "):
            core = "information " + core.strip()
    # core: data, then to/with/for/from slots; a filled slot absorbs a repeated marker as modifier
    slots: dict[str, str] = {}
    last = "data"
    for marker, seg in _segments(core, _CORE):
        slot = {"": "data", "to": "recipient", "with": "recipient", "for": "purpose", "from": "source"}[marker]
        if (slot == "recipient" and last == "data" and frame.verb == "receive"
                and _RELATIVE.search(slots.get("data", ""))):
            # the agent receives: a "to" inside the subject's relative clause is that clause's ("the email of a
            # subscriber who has consented to marketing by email"), not a recipient
            slots["data"] += f" {marker} {seg}"
            continue
        if slot in slots or (marker == "" and "data" in slots):
            slots[last] += f" {marker} {seg}"
            continue
        slots[slot], last = seg, slot
    if frame.verb == "passive":
        data_seg = pre
        by = re.match(r"^by\s+(.+)$", slots.get("data", ""), re.IGNORECASE)
        if by and passive_cls in ("use", "receive", "disclose"):  # "D may be viewed by X": X views D
            frame.verb = passive_cls
            frame.agent, frame.agent_mod = split_mod(by.group(1))
    else:
        data_seg = slots.get("data", "")
        agent, frame.agent_mod = split_mod(pre)
        frame.agent = agent or None
    if frame.public:
        data, subject, smod = re.sub(r"\s+\b(?:of|about|on)\b.*$", "", _det(data_seg)), None, ""
    elif _ADDRESSEE.search(data_seg) and not _determined_markers(_det(data_seg)):
        data, subject, smod = _det(data_seg), "you", ""  # "your home address or your date of birth"
    else:
        data, subject, smod = _subject_of(data_seg)
        if subject and re.search(rf"\byour\s+{re.escape(subject)}\b", data_seg, re.IGNORECASE):
            subject, smod = "you", ""  # "the interview feedback on your applications": the data is about you
    # "the grades of their child", "about them", "their child's grades": the data's person is the agent's own
    frame.subject_of_agent = bool(re.search(r"\b(?:of|about|from)\s+(?:their|his|her|them|themselves|him)\b"
                                            r"|\b(?:their|his|her)\s+[\w-]+(?:'s|s'|\u2019s|s\u2019)(?=\s)",
                                            data_seg, re.IGNORECASE))
    frame.data = split_list(data)
    if subject == "you":  # "your pet's species": the reader's pet owns the data; the data is the species
        owned = [re.match(r"^([\w-]+)'s\s+(.+)$", d) for d in frame.data]
        frame.possessors = list(dict.fromkeys(m.group(1) for m in owned if m))
        frame.data = [m.group(2) if m else d for m, d in zip(owned, frame.data)]
    frame.subject, frame.subject_mod = subject, smod
    if "recipient" in slots and frame.recipient is None:
        frame.recipient, frame.recipient_mod = split_mod(slots["recipient"])
    if "source" in slots:
        frame.source, frame.source_mod = split_mod(slots["source"])
    if "purpose" in slots:
        p = slots["purpose"]
        inc = re.split(r",?\s+\bincluding\b\s+", p, maxsplit=1)
        frame.purpose = _det(inc[0])
        if len(inc) > 1:
            frame.purpose_includes = split_list(inc[1])
    return frame
