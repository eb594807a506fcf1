"""Text-to-CQL without an LLM: policy sentences -> the structured policy YAML, by rules.

The offline counterpart of :mod:`pimento.policy.extract` (the default of ``pimento policy
extract``; the LLM path is ``--llm URL``). Three steps, all deterministic:

1. :func:`~pimento.policy.extract_offline.shapes.split_sentences` and
   :func:`~pimento.policy.extract_offline.shapes.parse_sentence` read each sentence's shape
   (who may or shall not disclose, receive or use what about whom, to whom, for which purpose,
   under which condition, unless what) into a :class:`~pimento.policy.extract_offline.shapes.Frame`.
2. :mod:`~pimento.policy.extract_offline.ground` grounds its roles, data and conditions in the
   catalog (and, when an engine is given, in the categorical values of short text columns,
   which name roles such as ``role = 'nurse'``).
3. This module assembles the norms and the grounding into the same document as the LLM path
   (``docs/policy.md``), each norm with its source sentence. A sentence that states no norm, or
   whose data cannot be grounded, is listed in :attr:`Extraction.failures` and left out.

No word list here names a table of the shipped examples: the vocabulary is regulatory English
(:mod:`~pimento.policy.extract_offline.lexicon`) matched against the catalog's names.
"""

from __future__ import annotations

import copy
import datetime as _dt
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import sqlglot
import yaml
from sqlglot import exp

from pimento.engines.base import Engine
from pimento.errors import CatalogError, PolicyError
from pimento.llm import Usage
from pimento.policy.compiler import compile_policy
from pimento.policy.extract_offline.conditions import Atom, Var, ground_condition, relation_between
from pimento.policy.extract_offline.ground import (
    BROAD,
    EVIDENCE,
    STRONG,
    RoleG,
    ground_data,
    ground_data_evidence,
    ground_role,
    is_anyone,
    is_organization,
    lookup_keys,
    purpose_name,
    role_for_purpose,
    slug,
    workforce,
)
from pimento.policy.extract_offline.role_evidence import STRONG_ROLE, role_evidence, role_question
from pimento.policy.extract_offline.schema import Schema, categorical_values, free_text_columns
from pimento.policy.extract_offline.shapes import (
    Frame,
    Sentence,
    data_phrase,
    parse_sentence,
    split_list,
    split_sentences,
)
from pimento.policy.extraction import Extraction
from pimento.policy.model import ANY, policy_from_dict
from pimento.policy.review import holds_norm
from pimento.policy.vocabulary import check_vocabulary, phrase_key
from pimento.schema import Catalog, Table

__all__ = ["OfflineExtraction", "categorical_values", "definitions", "extract_policy_offline", "parse_sentence",
           "split_sentences"]


@dataclass
class OfflineExtraction(Extraction):
    """An :class:`~pimento.policy.extraction.Extraction` made by rules (no LLM usage)."""

    #: how each role of each norm was grounded: ``{clause, sign, var, phrase, evidence, role: {principal, where}}``
    #: (the kind one of :data:`~.role_evidence.ROLE_EVIDENCE`)
    roles: list[dict[str, Any]] = field(default_factory=list)

    def to_yaml(self) -> str:
        header = (
            "# Extracted from natural-language policy text by rules, offline (pimento policy extract).\n"
            "# REVIEW every clause, role, location, purpose and condition before compiling it:\n"
            "#   pimento policy compile THIS_FILE --db DB --out compiled.json\n"
        )
        for f in self.failures:
            header += f"# NOT EXTRACTED {f['clause']}: {f['error']} -- {f['text']}\n"
        if self.questions:
            n = sum(len(q["questions"]) for q in self.questions)
            header += (f"# DRAFT: {n} open question(s) on {len(self.questions)} clause(s) under `review`;\n"
                       "# the clauses they hold are not enforced (an advisory question's clause is, as read),\n"
                       "# and compile refuses this file until it is reviewed:\n"
                       "#   pimento policy extract TEXT --db DB --review [--review-file answers.json]\n")
        return header + yaml.safe_dump(self.draft(), sort_keys=False, allow_unicode=True, width=100)


class _Doc:
    """The grounding accumulated over the sentences; equal groundings share one name."""

    def __init__(self, schema: Schema) -> None:
        self.schema = schema
        self.principals: dict[str, dict[str, str]] = {}
        self.roles: dict[str, dict[str, Any]] = {}
        self.data_types: dict[str, dict[str, Any]] = {}
        self.purposes: dict[str, dict[str, Any]] = {}
        self.conditions: dict[str, dict[str, Any]] = {}
        #: clause -> (var, phrase, grounding, evidence kind) of each role (:func:`~.role_evidence.role_evidence`)
        self.role_rows: dict[str, list[tuple[str, str | None, RoleG, str]]] = {}

    @staticmethod
    def _put(table: dict[str, Any], name: str, value: Any, same=lambda a, b: a == b) -> str:
        for existing, v in table.items():
            if same(v, value):
                return existing
        base, k = name, 2
        while name in table:
            name, k = f"{base}_{k}", k + 1
        table[name] = value
        return name

    def principal(self, t: Table) -> str:
        return self._put(self.principals, slug(t.name), {"relation": t.name, "key": self.schema.key(t)})

    def role(self, r: RoleG, phrase: str) -> str:
        spec: dict[str, Any] = {"principal": self.principal(r.table)}
        if r.where:
            spec["where"] = r.where
        name = slug(" ".join(r.words) or phrase, "role")
        name = "_or_".join(slug(str(v)) for v in (r.value, *r.more)) if r.more else name
        return self._put(self.roles, name, spec, same=lambda a, b: {k: a.get(k) for k in ("principal", "where")}
                         == {k: b.get(k) for k in ("principal", "where")})

    def data(self, phrase: str, locations: list[tuple[str, str]], evidence: str = "") -> str:
        spec: dict[str, Any] = {"locations": [{"relation": t, "attribute": c} for t, c in locations]}
        if evidence:  # the review metadata: how the phrase named these columns (:data:`~.ground.EVIDENCE`)
            spec["description"] = f"evidence: {evidence}"
        return self._put(self.data_types, slug(phrase, "data"), spec,
                         same=lambda a, b: a["locations"] == b["locations"])

    def purpose(self, name: str, includes: list[str]) -> str:
        for sub in includes:
            self.purposes.setdefault(sub, {"values": [sub]})
        spec = self.purposes.setdefault(name, {"values": [name]})
        for sub in includes:
            if sub != name and sub not in spec.setdefault("includes", []):
                spec["includes"].append(sub)
        if not spec.get("includes"):
            spec.pop("includes", None)
        return name

    def condition(self, atom: Atom) -> str:
        spec: dict[str, Any] = {"description": atom.description}
        if atom.principals:
            spec["principals"] = {v: self.principal(self.schema.catalog.table(t)) for v, t in atom.principals.items()}
        spec["sql"] = atom.sql
        return self._put(self.conditions, atom.name, spec, same=lambda a, b: a["sql"] == b["sql"])


def _all(items: list[Any]) -> Any:
    if not items:
        return None
    return items[0] if len(items) == 1 else {"all": items}


def extract_policy_offline(
    text: str,
    catalog: Catalog,
    *,
    values: dict | None = None,
    engine: Engine | None = None,
    name: str = "extracted",
    subject_principal: str | None = None,
    year: int | None = None,
    vocabulary: dict[str, list[str]] | None = None,
) -> OfflineExtraction:
    """Extract the norms of ``text`` by rules and ground them in ``catalog``.

    ``values`` (``{(table, column): values}``, see :func:`categorical_values`) ground role and
    purpose names; when ``engine`` is given and ``values`` is not, they are read from it, and
    every extracted norm is compiled against it (a norm that does not compile is left out and
    reported in ``failures``). ``year`` is the reference year of age conditions ("under 13").
    ``vocabulary`` (a custodian's declared phrases, ``{"academic record": ["Grade.score", ...]}``)
    grounds a data phrase to exactly those columns.

    Fail narrow: a permit whose data phrase names no column (grounded only broadly, as every column
    about the subject or whole tables of a category, or not at all) or whose condition no table
    grounds is held out of the policy with its open questions (:attr:`Extraction.questions`) for
    the custodian's review (:mod:`pimento.policy.review`); so is a prohibition none of whose data
    phrases grounds (left out, it would permit what the text forbids). A permit that states no
    purpose while other sentences name purposes is enforced as read (any purpose) and listed with an
    advisory purpose question (proposal: any; it holds nothing, :func:`~pimento.policy.review.holds_norm`); a
    prohibition enforced as grounded gets an extension question about the subject's free-text columns
    it does not cover (:func:`_free_text_question`). A prohibited column of a
    code list takes the code list's key with it (:func:`~.ground.lookup_keys`). Raises PolicyError
    when no sentence yields a norm and none is held.
    """
    if values is None:
        values = categorical_values(engine, catalog) if engine is not None else {}
    schema = Schema(catalog, values)
    year = year or _dt.date.today().year
    sentences = split_sentences(text)
    if not sentences:
        raise PolicyError("the policy text has no sentence")
    frames = [parse_sentence(s) for s in sentences]
    subject = _subject_table(frames, schema, subject_principal)
    issuer = _title_words(frames)
    personal_all = [t for t in catalog.tables if t.name.lower() in schema.reach(subject)] if subject else []
    public = [t for t in catalog.tables if t not in personal_all]
    doc = _Doc(schema)
    if subject is not None:
        doc.principal(subject)
    known_purposes = tuple(sorted({v for (t, c), vs in values.items() if c.lower() == "purpose" for v in vs}))
    staged: list[tuple[Frame, dict[str, Any], list[str], list[str]]] = []
    vocab = _vocabulary(vocabulary, catalog)
    defined = definitions(text)
    failures: list[dict[str, str]] = []
    notes: list[dict[str, Any]] = []
    condition_tables: set[str] = set()
    for frame in frames:
        if not frame.is_norm:
            notes.append({"clause": frame.id, "text": frame.text, "norm": None})
            failures.append({"clause": frame.id, "text": frame.text, "error": (
                "restates the default (what no norm permits is denied): not a norm" if frame.restates_default
                else "no modal (may, shall not, ...): not a norm")})
            continue
        snapshot = copy.deepcopy((doc.principals, doc.roles, doc.purposes, doc.conditions))
        try:
            norm, data_phrases, missed = _norm(frame, schema, doc, subject, known_purposes, year, issuer)
        except _Unextracted as exc:  # leaves no grounding behind
            doc.principals, doc.roles, doc.purposes, doc.conditions = snapshot
            failures.append({"clause": frame.id, "text": frame.text, "error": str(exc)})
            continue
        for key in ("condition", "when"):
            for cname in _names(norm.get(key)):
                condition_tables |= _tables_of(doc.conditions[cname]["sql"], catalog)
        staged.append((frame, norm, data_phrases, missed))
    principal_tables = [catalog.table(p["relation"]) for p in doc.principals.values()]
    # data about the subject: not the tables that relate agents (a support case's assignment), nor
    # the association tables (composite keys) the conditions read (consents, care relationships)
    personal = [t for t in personal_all if t is subject or not (
        schema.is_relationship(t, principal_tables)
        or (t.name.lower() in condition_tables and len(t.primary_key) != 1))]
    free_text = free_text_columns(engine, catalog, personal) if engine is not None else []
    norms: list[dict[str, Any]] = []
    held: list[dict[str, Any]] = []
    evidence: list[dict[str, Any]] = []
    for frame, norm, data_phrases, missed in staged:
        excluded = {loc for p in frame.excluded for loc in ground_data(
            p, schema, personal=personal, public=public, subject=subject, is_public=False)}
        names = []
        questions: list[dict[str, Any]] = []
        for phrase in data_phrases:
            declared = vocab.get(phrase_key(phrase))
            if declared is not None:
                locs, how, kind = declared, "vocabulary", "vocabulary"
            else:
                locs, how = _ground_defined(defined.get(phrase_key(phrase)), schema, personal, public, subject,
                                            frame.public)
                kind = how
            if not locs:
                locs, how, kind = ground_data_evidence(phrase, schema, personal=personal, public=public,
                                                       subject=subject, is_public=frame.public,
                                                       deny=frame.sign != "permit")
            locs = [loc for loc in locs if loc not in excluded]
            if frame.sign != "permit" and how != "vocabulary":  # a prohibited code-list column: its key too
                locs = locs + lookup_keys(locs, schema, public)  # (fail closed; a declared phrase means its columns)
            evidence.append({"clause": frame.id, "sign": frame.sign, "phrase": phrase, "evidence": kind,
                             "locations": [{"relation": t, "attribute": c} for t, c in locs]})
            if frame.sign == "permit" and (how in BROAD or not locs):
                questions.append(_data_question(frame.id, len(questions) + 1, phrase, locs, how, kind))
            elif frame.sign == "permit" and kind not in STRONG and not frame.public:  # fail narrow: proposed only
                # (public data is grounded among the tables that reach no subject: a weak grounding there covers
                # nothing about anyone)
                questions.append(_data_question(frame.id, len(questions) + 1, phrase, locs, "weak", kind))
            elif locs:
                names.append(doc.data(phrase, locs, kind))
        if frame.sign == "permit":
            questions += [_condition_question(frame.id, len(questions) + 1, m) for m in missed]
            for var, who, rg, rkind in [] if frame.public else doc.role_rows.get(frame.id, []):
                if rkind not in STRONG_ROLE:  # fail narrow: a permit never goes to someone the text does not name
                    questions.append(role_question(frame.id, len(questions) + 1, var, who, rg, rkind, schema))
                    norm[var] = None  # held: the review sets it (confirm, edit) or drops the permit
            if _purpose_unstated(frame, norm, frames):
                questions.append(_purpose_question(frame.id, len(questions) + 1, _text_purposes(frames, known_purposes)))
        elif not names:  # a prohibition no phrase grounds: a question, never silently lost (it would permit)
            questions = [_data_question(frame.id, k + 1, phrase, [], "prohibited_none")
                         for k, phrase in enumerate(data_phrases)]
        if any(holds_norm(q) for q in questions):  # fail closed: the permit (or prohibition) waits for the custodian
            norm["data"] = list(dict.fromkeys(names))
            held.append({"clause": frame.id, "source": frame.text,
                         "norm": {k: v for k, v in norm.items() if v is not None},
                         "questions": questions})
            continue
        if not names:
            failures.append({"clause": frame.id, "text": frame.text,
                             "error": f"no column holds {', '.join(data_phrases) or 'the data'}"})
            continue
        norm["data"] = list(dict.fromkeys(names))
        norm = {k: v for k, v in norm.items() if v is not None}
        norms.append(norm)
        if questions:  # advisory only (a purpose question): enforced as read, listed for the custodian
            held.append({"clause": frame.id, "source": frame.text, "norm": copy.deepcopy(norm),
                         "questions": questions})
        if frame.sign != "permit" and not frame.public:
            _free_text_question(held, frame, norm, data_phrases, free_text, doc)
        notes.append({"clause": frame.id, "text": frame.text, "norm": {k: v for k, v in norm.items()
                                                                         if k not in ("source", "citation")}})
    if not norms and not held:
        raise PolicyError("no sentence of the policy text could be extracted as a norm",
                          hint="; ".join(f"{f['clause']}: {f['error']}" for f in failures[:5]) or None)
    if subject is None:
        raise PolicyError("no sentence names whom the data is about (a subject such as a patient)",
                          hint="pass the subject principal (a table name) explicitly")
    document = _document(doc, name, norms, subject)
    used = {loc["relation"] for d in doc.data_types.values() for loc in d["locations"]}
    used |= {loc["relation"] for h in held for q in h["questions"] if q["kind"] == "data"
             for loc in q.get("proposal") or []}
    paths = {t: p for t in sorted(used) if (p := schema.subject_path(catalog.table(t), subject))}
    if paths:
        document["grounding"]["subjects"] = paths
    if engine is not None and norms:
        document, failures = _compile_each(document, catalog, engine, failures)
        enforced = {n["id"] for n in document["norms"]}  # an advisory entry's norm that does not compile goes too
        held = [h for h in held if h["norm"]["id"] in enforced or any(holds_norm(q) for q in h["questions"])]
    _prune(document, [h["norm"] for h in held])
    if document["norms"]:
        policy_from_dict(document, source="extracted policy")
    order = {f.id: i for i, f in enumerate(frames)}
    failures = sorted(failures, key=lambda f: order.get(f["clause"], len(order)))
    signs = {f.id: f.sign for f in frames}
    roles = [{"clause": c, "sign": signs[c], "var": v, "phrase": p, "evidence": k,
              "role": {"principal": g.table.name, "where": g.where}}
             for c, rows in doc.role_rows.items() for v, p, g, k in rows]
    return OfflineExtraction(document, notes, _no_usage(), failures, held, evidence, roles)


_DEFINES = r"[\"\u201c](?P<term>[^\"\u201d]{2,60})[\"\u201d]\s+(?:means|includes|refers to)\s+"
#: a definition's body ends at a semicolon, a full stop, or the next definition in the same sentence
#: (``"academic record" means ..., and "sensitive information" means ...``)
_DEFINITION = re.compile(_DEFINES + r"(?P<body>[^;]+?)(?=;|\.\s|\.?$|,?\s+(?:and\s+)?"
                         + _DEFINES.replace("?P<term>", "?:") + ")", re.IGNORECASE | re.MULTILINE)


def definitions(text: str) -> dict[str, list[str]]:
    """The text's own definitions of terms (``"contact information" means a client's name, address
    and telephone number``): vocabulary key -> the listed items (grounded like data phrases)."""
    out: dict[str, list[str]] = {}
    for m in _DEFINITION.finditer(" ".join(text.split())):
        body = re.sub(r"^(?:an?|the)\s+[\w-]+(?:'s|s')\s+", "", m.group("body").strip())
        items = [data_phrase(i) for i in split_list(body)]  # "location records of a subscriber's lines"
        items = [i for i in items if i]
        if items:
            out.setdefault(phrase_key(m.group("term")), items)
    return out


def _ground_defined(items: list[str] | None, schema: Schema, personal: list[Table], public: list[Table],
                    subject: Table | None, is_public: bool) -> tuple[list[tuple[str, str]], str]:
    """A defined term's columns: every listed item grounded without a broad rule, else nothing; the evidence is
    ``definition_weak`` when an item's evidence is not :data:`STRONG`."""
    if not items:
        return [], "none"
    locs: list[tuple[str, str]] = []
    weak = False
    for item in items:
        found, how, kind = ground_data_evidence(item, schema, personal=personal, public=public, subject=subject,
                                                is_public=is_public)
        if not found or how in BROAD:
            return [], "none"
        weak = weak or kind not in STRONG
        locs += [loc for loc in found if loc not in locs]
    return locs, "definition_weak" if weak else "definition"


def _vocabulary(vocabulary: dict[str, list[str]] | None, catalog: Catalog) -> dict[str, list[tuple[str, str]]]:
    """The declared vocabulary by :func:`phrase_key`, columns checked against the catalog (``Table.column``)."""
    checked = check_vocabulary(vocabulary or {}, catalog, source="vocabulary")
    return {phrase_key(p): [(c.split(".")[0], c.split(".")[1]) for c in cols] for p, cols in checked.items()}


_HOW = {
    "all_personal": "names no column: it would cover every column about the subject",
    "category_tables": "names no column: it would cover whole tables by a category name",
    "none": "no table or column of the database is named by it",
    "prohibited_none": "no table or column of the database is named by it: the prohibition is not enforced "
                       "until you ground it (edit) or drop it",
}


#: why a weak evidence kind is not enough (the reason of its question)
_WEAK = {
    "table_partial": "a table whose name the phrase gives only in part or by a synonym",
    "column_partial": "columns whose names share only a word or a stem with the phrase",
    "category_columns": "the lexicon's columns of a category word, not named by the phrase",
    "column_anywhere": "a column named outside the data about the subject",
    "table_columns_partial": "a table named word for word, with columns the phrase names only in part",
    "definition_weak": "the text's definition, an item of which is grounded only weakly",
    "table_comment_partial": "a table whose comment the phrase names only in part",
}


def _data_question(clause: str, k: int, phrase: str, locs: list[tuple[str, str]], how: str,
                   evidence: str = "none") -> dict[str, Any]:
    reason = _HOW.get(how, how)
    if how == "weak":
        base, _, extra = evidence.partition("+")
        why = _WEAK.get(base, base.replace("_", " ")) + (", and the lexicon's category adds columns it does not name"
                                                          if extra else "")
        reason = f"names these columns only weakly ({why}): proposed, not enforced until you confirm or edit it"
    return {"id": f"{clause}.{k}", "kind": "data", "phrase": phrase, "reason": reason,
            "proposal": [{"relation": t, "attribute": c} for t, c in locs] or None, "evidence": evidence}


def _free_text_question(held: list[dict[str, Any]], frame: Frame, norm: dict[str, Any], phrases: list[str],
                        free_text: list[tuple[str, str]], doc: _Doc) -> None:
    """A prohibition enforced as grounded, extended by a question: the subject's free-text columns it does not
    cover may mention what it prohibits (a note that names the status); no dependency sees inside them.
    ``confirm`` prohibits them too, where the prohibition applies; ``drop`` leaves the prohibition as it is."""
    covered = {(loc["relation"], loc["attribute"]) for d in norm["data"] for loc in doc.data_types[d]["locations"]}
    extra = [loc for loc in free_text if loc not in covered]
    if not extra:
        return
    question = {"id": f"{frame.id}.1", "kind": "data", "phrase": f"free text that may mention {' and '.join(phrases)}",
                "reason": "free text about the subject may mention what the sentence prohibits (no dependency sees "
                          "inside it): the prohibition is enforced as grounded; confirm prohibits these columns too, "
                          "drop does not",
                "proposal": [{"relation": t, "attribute": c} for t, c in extra], "extends": True}
    held.append({"clause": frame.id, "source": frame.text, "norm": {**copy.deepcopy(norm), "data": []},
                 "questions": [question]})


def _condition_question(clause: str, k: int, text: str) -> dict[str, Any]:
    return {"id": f"{clause}.{k}", "kind": "condition", "phrase": text,
            "reason": "no table or column grounds this condition (the permit would hold without it)",
            "proposal": None}


def _purpose_unstated(frame: Frame, norm: dict[str, Any], frames: list[Frame]) -> bool:
    """A permit about the subject's data that states no purpose, in a text whose other norms name
    purposes: its author thinks in purposes, so "no purpose" may mean "the purpose the text implies"
    rather than "any purpose". Not asked for public data ("not about any individual") nor for the
    subject's own access ("about them", "their child"), which the texts grant whatever the purpose."""
    if norm.get("purpose", ANY) != ANY or frame.public or frame.subject_of_agent or norm.get("subject", ANY) == ANY:
        return False
    return any(f.purpose for f in frames if f is not frame and f.is_norm)


def _text_purposes(frames: list[Frame], known: tuple[str, ...]) -> list[str]:
    """The purposes the text's norms name (their names as the extractor grounds them), in text order."""
    names = (purpose_name(f.purpose, known) for f in frames if f.is_norm and f.purpose)
    return list(dict.fromkeys(n for n in names if n != "purpose"))  # "for that purpose" names none


def _purpose_question(clause: str, k: int, options: list[str]) -> dict[str, Any]:
    """Advisory: the permit is enforced as the text reads (any purpose) until the custodian narrows it."""
    return {"id": f"{clause}.{k}", "kind": "purpose", "phrase": "(no purpose stated)",
            "reason": "the permit states no purpose while other sentences name purposes: enforced as any purpose "
                      "unless you narrow it (edit) or drop it",
            "proposal": ANY, "options": options, "advisory": True}


def _prune(document: dict[str, Any], held: list[dict[str, Any]] | None = None) -> None:
    """Drop the grounding no kept or held norm uses (left by sentences that were not extracted)."""
    g = document["grounding"]
    roles: set[str] = set()
    conds: set[str] = set()
    purposes: set[str] = set()
    data: set[str] = set()

    def walk(cond: Any) -> None:
        if isinstance(cond, str):
            conds.add(cond)
        elif isinstance(cond, list):
            for c in cond:
                walk(c)
        elif isinstance(cond, dict):
            for k, v in cond.items():
                if k in ("all", "any", "not"):
                    walk(v)
                elif k == "purpose":
                    purposes.add(v)
                else:
                    roles.add(v)

    for n in [*document["norms"], *(held or [])]:
        roles |= {n[v] for v in ("sender", "recipient", "subject") if n.get(v, ANY) != ANY}
        purposes.add(n.get("purpose", ANY))
        data |= set(n["data"])
        walk(n.get("condition"))
        walk(n.get("when"))
    todo = list(purposes)
    while todo:  # sub-purposes of a kept purpose stay
        for sub in g["purposes"].get(todo.pop(), {}).get("includes", []):
            if sub not in purposes:
                purposes.add(sub)
                todo.append(sub)
    for key, keep in (("roles", roles), ("conditions", conds), ("purposes", purposes), ("data_types", data)):
        g[key] = {k: v for k, v in g[key].items() if k in keep}
    kinds = {r["principal"] for r in g["roles"].values()} | {g["subject_principal"]}
    kinds |= {p for c in g["conditions"].values() for p in c.get("principals", {}).values()}
    g["principals"] = {k: v for k, v in g["principals"].items() if k in kinds}


def _no_usage() -> Usage:
    return Usage()


def _names(cond: Any) -> set[str]:
    if isinstance(cond, str):
        return {cond}
    if isinstance(cond, dict):
        return set().union(set(), *(_names(v) for k, v in cond.items() if k in ("all", "any", "not")))
    if isinstance(cond, list):
        return set().union(*(_names(v) for v in cond)) if cond else set()
    return set()


def _tables_of(sql: str, catalog: Catalog) -> set[str]:
    try:
        tree = sqlglot.parse_one(sql)
    except Exception:  # noqa: BLE001 - an unparsable view is reported by the compiler
        return set()
    return {t.name.lower() for t in tree.find_all(exp.Table) if catalog.has_table(t.name)}


def _subject_table(frames: list[Frame], schema: Schema, explicit: str | None) -> Table | None:
    if explicit:
        try:
            return schema.catalog.table(explicit)
        except CatalogError as exc:  # the catalog names close matches
            raise PolicyError(f"unknown subject principal {explicit!r}", hint=exc.hint) from None
    votes: Counter[str] = Counter()
    for f in frames:
        for phrase in (f.subject, f.source if f.verb == "receive" else None):
            r = ground_role(phrase, schema) if phrase else None
            if r is not None:
                votes[r.table.name] += 1
        if f.subject == "you":  # "your pet's notes": the reader owns the pet (the principal a pet references)
            for owner in f.possessors:
                you = _owner_of(ground_role(owner, schema), schema)
                if you is not None:
                    votes[you.name] += 1
    if votes:
        return schema.catalog.table(votes.most_common(1)[0][0])
    refs = Counter(fk.ref_table for fk in schema.catalog.foreign_keys)
    return schema.catalog.table(refs.most_common(1)[0][0]) if refs else None


def _owner_of(g: RoleG | None, schema: Schema) -> Table | None:
    """The one principal table that ``g``'s table references by a foreign key (Pet -> Owner), else None."""
    if g is None:
        return None
    owners = {t.name: t for t in schema.principals if t is not g.table and schema.fk_columns(g.table, t)}
    return next(iter(owners.values())) if len(owners) == 1 else None


class _Unextracted(Exception):
    """A sentence left out, fail closed: its permit cannot be grounded in full."""


def _title_words(frames: list[Frame]) -> frozenset[str]:
    """Words of the text's titles (sentences in capitals that state no norm: "REGIONAL BIOBANK ...
    POLICY"), which name the organization that issues the policy."""
    out: set[str] = set()
    for f in frames:
        if not f.is_norm and f.text.upper() == f.text and any(ch.isalpha() for ch in f.text):
            out |= {w.lower() for w in re.findall(r"[A-Za-z]+", f.text)}
    return frozenset(out)


def _is_issuer(agent: str | None, issuer: frozenset[str], schema: Schema) -> bool:
    """"The Biobank" in a text titled "... BIOBANK ... POLICY": one capitalised word of a title that
    names no table or role value is the organization itself (not a third party such as "the Sponsor",
    which the title does not name)."""
    return (agent is not None and re.fullmatch(r"[A-Z][a-z]+(?:[A-Z][a-z]+)*", agent) is not None  # "PeakForm" too
            and agent.lower() in issuer
            and ground_role(agent, schema) is None)


def _norm(frame: Frame, schema: Schema, doc: _Doc, subject: Table | None, known: tuple[str, ...],
          year: int, issuer: frozenset[str] = frozenset()) -> tuple[dict[str, Any], list[str], list[str]]:
    permit = frame.sign == "permit"
    slots: dict[str, tuple[str | None, RoleG | None]] = {"sender": (None, None), "recipient": (None, None),
                                                         "subject": (None, None)}
    org = is_organization(frame.agent) or _is_issuer(frame.agent, issuer, schema)
    staff = workforce(schema)

    def role(phrase: str | None) -> tuple[str | None, RoleG | None]:
        if phrase is None or is_anyone(phrase):
            return None, None
        return phrase, ground_role(phrase, schema)

    agent_var = {"disclose": "sender", "receive": "recipient", "use": "recipient"}.get(frame.verb)
    if frame.verb in ("disclose", "passive"):
        slots["recipient"] = role(frame.recipient)
        if frame.verb == "disclose":
            slots["sender"] = (staff.name if staff else None, RoleG(staff) if staff else None) if org and permit \
                else ((None, None) if org else role(frame.agent))
    elif frame.verb == "receive":
        slots["recipient"] = role(frame.agent)
        if frame.source:
            src = role(frame.source)
            if src[1] is None or (subject is not None and src[1].table is subject):
                frame.subject, frame.subject_mod = frame.source, frame.source_mod
            else:
                slots["sender"] = src
    else:  # use
        if org:
            if permit and staff is not None:
                slots["recipient"] = (frame.purpose, role_for_purpose(schema, staff, frame.purpose))
                slots["sender"] = (staff.name, RoleG(staff))
        else:
            slots["recipient"] = role(frame.agent)
    if frame.subject and not frame.public and subject is not None:
        g = ground_role(frame.subject, schema)
        if g is None or g.table is not subject:
            g = RoleG(subject, words=tuple(w for w in frame.subject.lower().split() if w.isalpha())[-1:])
        if frame.subject.lower() in ("them", "him", "her", "themselves", "you"):  # "you": a notice's reader
            g = RoleG(subject)
        slots["subject"] = (frame.subject, g)
    if permit:
        for var, (phrase, g) in slots.items():
            if phrase is not None and g is None:
                raise _Unextracted(f"the {var} {phrase!r} names no table or role value of the database "
                                   "(a permit to anyone would be too broad)")
    norm: dict[str, Any] = {"id": frame.id, "sign": frame.sign}
    vars_: dict[str, Var] = {}
    for var, (phrase, g) in slots.items():
        if g is None:
            norm[var] = ANY
            continue
        norm[var] = doc.role(g, phrase or var)
        vars_[var] = Var(var, g.table, tuple(g.words))
    if "subject" not in vars_ and subject is not None and not frame.public:
        vars_["subject"] = Var("subject", subject)  # conditions may bind the subject the text leaves implicit
    purpose = ANY
    if frame.purpose:
        includes = [purpose_name(p, known) for p in frame.purpose_includes]
        if not includes:  # "for treatment, payment, or operations": the first includes the others
            parts = [p for p in re_split_or(frame.purpose)]
            if len(parts) > 1:
                purpose = doc.purpose(purpose_name(parts[0], known), [purpose_name(p, known) for p in parts[1:]])
        if purpose == ANY:
            purpose = doc.purpose(purpose_name(frame.purpose, known), includes)
    norm["purpose"] = purpose
    # the norm's own purpose values: a consent "to" one of them is the context's purpose (output, not
    # filtered); a prohibition's exception always binds the context's purpose (None: its narrower reading)
    own: tuple[str, ...] | None = None if not permit else () if purpose == ANY else tuple(
        [*doc.purposes[purpose]["values"], *doc.purposes[purpose].get("includes", [])])

    missed: list[str] = []

    def atoms(text: str, actor: str | None, *, strict: bool) -> list[Any]:
        out: list[Any] = []
        before = len(missed)
        for group in ground_condition(text, schema, vars_, actor=actor, year=year,
                                      missed=missed if strict else None, agent=agent_var, purposes=own):
            names = list(dict.fromkeys((doc.condition(a), a.negated) for a in group))
            forms = [{"not": n} if neg else n for n, neg in names]
            out.append(forms[0] if len(forms) == 1 else {"any": forms})
        if strict and not out and len(missed) == before and _says_something(text):
            # "whose claim they handle": words that restrict the permit grounded to no view and were not reported:
            # held, never dropped (the permit would hold for every subject)
            missed.append(text)
        return out

    positive: list[Any] = []
    when: list[Any] = []
    # the subject relates to the agent: "about them" (the agent is the subject), "their child"
    if frame.subject_of_agent and agent_var in vars_ and "subject" in vars_:
        a, s = vars_[agent_var].table, vars_["subject"].table
        key = schema.key(s)
        if a is s:
            atom = Atom(f"is_self_{agent_var}", f"SELECT {key} AS {agent_var}, {key} AS subject FROM {s.name}",
                        {agent_var: s.name}, f"the {agent_var} is the {slug(s.name)} the data is about")
            positive.append(doc.condition(atom))
        else:
            rel = relation_between(schema, a, s)
            if rel is not None:
                t, ca, cs = rel
                atom = Atom(f"{slug(t.name)}_of_subject", f"SELECT {ca} AS {agent_var}, {cs} AS subject FROM {t.name}",
                            {agent_var: a.name}, f"the {agent_var} is related to the subject through {t.name}")
                positive.append(doc.condition(atom))
            elif permit:  # no link table, or several: held, never enforced without the relation ("their child")
                missed.append(f"the {agent_var} is related to the {slug(s.name)} ({frame.subject})")
    for text, actor in ((frame.agent_mod, "sender" if agent_var == "sender" else agent_var),
                        (frame.recipient_mod, "recipient"), (frame.subject_mod, "subject")):
        if text:
            (positive if permit else when).extend(atoms(text, actor, strict=permit))
    for text in frame.conditions:
        (positive if permit else when).extend(atoms(text, agent_var, strict=permit))
    exceptions: list[Any] = []
    for exc in frame.exceptions:
        tests: list[Any] = []
        roles: list[Any] = []
        for phrase in exc.roles:
            g = ground_role(phrase, schema)
            if g is not None and g.table is subject and g.where is None:
                # "other than the employee": the person the data is about, not any employee
                key = schema.key(subject)
                roles.append(doc.condition(Atom("is_self_recipient", f"SELECT {key} AS recipient, {key} AS subject "
                                                f"FROM {subject.name}", {"recipient": subject.name},
                                                f"the recipient is the {slug(subject.name)} the data is about")))
            elif g is not None:
                roles.append({"recipient_role": doc.role(g, phrase)})
        if roles:
            tests.append({"any": roles} if exc.roles_any and len(roles) > 1 else
                         (roles[0] if len(roles) == 1 else {"all": roles}))
        if exc.purpose:
            tests.append({"purpose": doc.purpose(purpose_name(exc.purpose, known), [])})
        for text in exc.conditions:
            tests.extend(atoms(text, "recipient" if exc.roles else agent_var, strict=permit))
        if tests:
            exceptions.append(_all(tests))
    if permit:
        positive += [{"not": e} for e in exceptions]
        norm["condition"] = _all(positive)
    else:
        norm["when"] = _all(when)
        norm["condition"] = _all(exceptions) if len(exceptions) <= 1 else {"any": exceptions}
    norm["source"] = frame.text
    norm["citation"] = f"sentence {frame.id} of the policy text (extracted offline by rules; review)"
    doc.role_rows[frame.id] = [(v, p, g, role_evidence(p, g, schema, subject=subject, var=v))
                               for v, (p, g) in slots.items() if g is not None]
    return norm, list(frame.data), missed


#: the words of a modifier that restrict nothing ("processing", "acting", a bare pronoun or relative)
_RESTRICTS_NOTHING = frozenset("""who whom whose which that they them their he she it we you is are has have had be
    been does do acting processing providing performing on behalf of its own the a an""".split())


def _says_something(text: str) -> bool:
    """Does a condition or modifier text have a word that restricts (not only pronouns, relatives, auxiliaries)?"""
    return any(w not in _RESTRICTS_NOTHING for w in re.findall(r"[a-z]+", text.lower()))


def re_split_or(text: str) -> list[str]:
    return [p for p in re.split(r",\s*(?:or\s+)?|\s+or\s+", text) if p.strip()]


def _document(doc: _Doc, name: str, norms: list[dict[str, Any]], subject: Table) -> dict[str, Any]:
    return {
        "version": 1,
        "name": name,
        "description": "extracted offline from natural-language policy text; review before use",
        "grounding": {
            "principals": doc.principals,
            "subject_principal": doc.principal(subject),
            "roles": doc.roles,
            "data_types": doc.data_types,
            "purposes": doc.purposes,
            "conditions": doc.conditions,
        },
        "norms": norms,
    }


def _compile_each(document: dict[str, Any], catalog: Catalog, engine: Engine,
                  failures: list[dict[str, str]]) -> tuple[dict[str, Any], list[dict[str, str]]]:
    """Compile each norm with the whole grounding; drop (and report) the norms that do not compile."""
    kept = []
    for norm in document["norms"]:
        trial = dict(document, norms=[norm])
        try:
            compile_policy(policy_from_dict(trial, source=f"sentence {norm['id']}"), catalog, engine)
        except PolicyError as exc:
            failures = failures + [{"clause": norm["id"], "text": norm.get("source", ""),
                                    "error": f"does not compile: {exc.message}"}]
            continue
        kept.append(norm)
    if not kept:
        raise PolicyError("no extracted norm compiles", hint="; ".join(f["error"] for f in failures[:3]))
    return dict(document, norms=kept), failures


__all__ += ["Sentence"]
