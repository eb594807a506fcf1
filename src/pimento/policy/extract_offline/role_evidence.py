"""How a role phrase was grounded, and the review question of a weak one (issue 27, POLICY14: roles fail narrow).

A permit whose recipient (or sender, or subject) is grounded to more people than the text names authorizes someone
the text does not: the same failure as a permit over a column the text does not name. :func:`role_evidence` grades
a grounding of :func:`~pimento.policy.extract_offline.ground.ground_role` (or one the extractor makes itself) by the
words the phrase shares with what it grounds to; a permit is enforced in a draft only where each of its roles has a
kind of :data:`STRONG_ROLE`, any other becomes a :func:`role_question` whose proposal is what the extractor found
(``confirm`` takes it: a confirm-all review equals the draft of before). The kinds (:data:`ROLE_EVIDENCE`):

* ``table_named``: the phrase names the table word for word by lemma, its head noun among the table's words or a
  workforce noun of the lexicon, no other word (``researchers`` -> Researcher, ``care team members`` ->
  CareTeamMember, ``staff member`` -> Staff);
* ``table_modified``: the table named so, with other words that ground nothing (``licensed pharmacists`` -> the
  whole Pharmacist table: the text names some of its rows);
* ``value_named``: a categorical value named in full by lemma, the head noun among its words (``school nurse`` ->
  Staff where ``role = 'nurse'``);
* ``table_value``: the table named, one of its values as the modifier (``external researcher`` -> Researcher where
  ``affiliation = 'external'``);
* ``synonym``: every word matched, some only by a synonym or a shared stem (``consumer`` -> Customer);
* ``partial``: only some of the words matched (half of both, as the grounding allows: ``claims handler`` ->
  the Claim table);
* ``list``: several roles in one phrase (``recruiters or insurers``), one column's values or one whole table;
* ``implied``: no word of the phrase names the table or value (the subject of a text grounded to its subject
  table by default);
* ``pronoun``: ``them``, ``you``: the party the sentence names elsewhere (the subject);
* ``subject_table``: the whole table of the text's subjects by a synonym, every word matched (``consumer`` ->
  Customer where customers are the subjects): every subject, as the data's own locations are; in the subject slot
  also the subject table named with a modifier (``a boat owner's address``, Owner the subjects' table);
* ``workforce``: the extractor's own choice, not a phrase (the organization sends through its workforce; a use by
  the organization's staff for a purpose no role value names).

The threshold :data:`STRONG_ROLE` was chosen from the table of ``python -m benchmarks.cql_role_evidence``
(``docs/benchmarks.md``, "Roles that fail narrow").
"""

from __future__ import annotations

import re
from typing import Any

from pimento.nl.text import STOPWORDS, lemma, name_words
from pimento.policy.extract_offline.ground import RoleG, _role_word, _role_words, _value_words
from pimento.policy.extract_offline.lexicon import WORKFORCE, words
from pimento.policy.extract_offline.schema import Schema
from pimento.schema import Table

__all__ = ["ROLE_EVIDENCE", "STRONG_ROLE", "role_evidence", "role_question"]

#: every kind :func:`role_evidence` returns, with why it is weak (the reason of a role question)
ROLE_EVIDENCE: dict[str, str] = {
    "table_named": "the table named word for word",
    "table_modified": "a whole table, while the phrase also names words that ground nothing: the text names some of "
                      "its rows",
    "value_named": "a role value named in full",
    "table_value": "the table named with one of its values",
    "synonym": "a table or role value matched only by a synonym or a shared stem",
    "partial": "a table or role value sharing only some of the phrase's words",
    "list": "several roles read as one",
    "implied": "no word of the phrase names it (the extractor's default)",
    "pronoun": "a pronoun: the party the sentence names elsewhere",
    "workforce": "the organization's workforce, chosen by the extractor (the text names no person)",
    "subject_table": "the whole table of the text's subjects, named by a synonym (every subject, as the data is)",
}

#: the kinds on which a draft enforces a permit's role (chosen from ``benchmarks.cql_role_evidence``)
STRONG_ROLE: frozenset[str] = frozenset({"table_named", "value_named", "table_value", "subject_table", "implied",
                                         "pronoun", "workforce"})

_PRONOUNS = frozenset({"them", "him", "her", "themselves", "you", "they", "yourself", "he", "she"})
_HEAD_CUT = re.compile(r"\s+(?:of|from|at|in|on|for|with|who|that|which|whose)\s+", re.IGNORECASE)


def _head(phrase: str) -> str | None:
    """The phrase's head noun: its last content word before ``of``, ``who``, ... (``member of the team`` -> member)."""
    ws = _role_words(_HEAD_CUT.split(phrase, maxsplit=1)[0])
    return ws[-1] if ws else None


def _literal(a: str, b: str) -> bool:
    return lemma(a.lower()) == lemma(b.lower())


def _named(target: list[str], ws: list[str]) -> bool:
    """Is every word of ``target`` one of ``ws`` by lemma?"""
    return bool(target) and all(any(_literal(t, w) for w in ws) for t in target)


def _elsewhere(head: str, g: RoleG, schema: Schema | None) -> bool:
    """Does the head noun name another principal table than ``g``'s (``billing vendor`` as an employee's team)?"""
    others = [t for t in schema.principals if t is not g.table] if schema is not None else []
    return any(_role_word(head, w) for t in others for w in name_words(t.name)) and not any(
        _role_word(head, w) for w in name_words(g.table.name))


def role_evidence(phrase: str | None, g: RoleG, schema: Schema | None = None, *, subject: Table | None = None,
                  var: str | None = None) -> str:
    """The evidence kind (a key of :data:`ROLE_EVIDENCE`) of grounding the role ``phrase`` to ``g``; ``subject`` is the
    text's subject table (a synonym of it, every word matched, is ``subject_table``; so is, in the ``subject`` slot
    ``var``, the whole subject table named with a modifier: "a boat owner's address" where the people the data is
    about are the Owner rows -- it names no other recipient)."""
    kind = _kind(phrase, g, schema)
    whole_subject = subject is not None and g.table is subject and g.column is None
    if whole_subject and (kind == "synonym" or (kind == "table_modified" and var == "subject")):
        return "subject_table"
    return kind


def _kind(phrase: str | None, g: RoleG, schema: Schema | None) -> str:
    ws = _role_words(phrase or "")
    every = [w for w in words(phrase or "") if w not in STOPWORDS] or ws  # a value may hold an organization word
    if phrase and phrase.strip().lower() in _PRONOUNS:
        return "pronoun"
    if not g.words or not ws:
        return "workforce"
    if g.more or len(re.split(r",|\s+or\s+|\s+and\s+", phrase or "")) > 1:
        return "list"
    head = _head(phrase or "")
    tw = list(name_words(g.table.name))
    table_named = _named(tw, ws)
    if g.column is not None:
        vw = _value_words(str(g.value))
        if _named(vw, every):
            if table_named and head is not None and any(_literal(head, t) for t in tw):
                return "table_value"
            if head is None or any(_literal(head, v) for v in vw) or not _elsewhere(head, g, schema):
                return "value_named"
        target = vw + (tw if table_named else [])
    else:
        # a workforce noun after the table's name is the table's people ("staff member"), not a narrower kind
        if table_named and head is not None and (any(_literal(head, t) for t in tw) or head in WORKFORCE):
            rest = [w for w in ws if not any(_literal(w, t) for t in tw) and w not in WORKFORCE]
            return "table_modified" if rest else "table_named"
        target = tw
    hits = [w for w in ws if any(_role_word(w, t) for t in target)]
    if not hits:
        return "implied"
    covered = all(any(_role_word(w, t) for w in ws) for t in target)
    return "synonym" if len(hits) == len(ws) and covered else "partial"


def role_question(clause: str, k: int, var: str, phrase: str | None, g: RoleG, kind: str,
                  schema: Schema | None = None) -> dict[str, Any]:
    """The review question of a permit's role grounded only weakly: ``proposal`` is what the extractor found
    (``{principal: Table, where: SQL or None}``); ``principals`` (each principal table of ``schema`` and its key)
    lets an edit name another table."""
    keys = {t.name: schema.key(t) for t in schema.principals} if schema is not None else {}
    keys.setdefault(g.table.name, g.table.primary_key[0] if g.table.primary_key else g.table.columns[0].name)
    why = ROLE_EVIDENCE.get(kind, kind.replace("_", " "))
    return {"id": f"{clause}.{k}", "kind": "role", "var": var, "phrase": phrase or var,
            "reason": f"the {var} is grounded only weakly ({why}): the permit is proposed, not enforced until you "
                      "confirm or edit it (a permit never goes to someone the text does not name)",
            "proposal": {"principal": g.table.name, "where": g.where}, "evidence": kind, "principals": keys}
