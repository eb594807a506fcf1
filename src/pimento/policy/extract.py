"""Text-to-CQL: natural-language policy text -> a structured policy file, with an LLM.

:func:`extract` chooses the method: without an LLM backend, the offline rules of
:mod:`pimento.policy.extract_offline` (the default of ``pimento policy extract``); with one,
the LLM steps below.

The LLM only *translates*, at compile time; it never takes a run-time privacy decision
(enforcement is :mod:`pimento.policy.enforce`, SQL over the compiled views). Steps:

1. :func:`split_clauses` cuts the text into clauses (paragraphs and enumerated items).
2. Per clause, one structured call (:class:`ExtractedNorm`, validated by pydantic, one repair
   round): sign, sender/recipient/subject roles, data type, purpose, condition in words, and
   the source clause. A clause that states no norm says so (``is_norm: false``) and is skipped.
3. Per norm, one structured call (:class:`GroundingAnswer`) proposes the grounding in the
   schema: roles -> relation, key and SQL predicate; the data type -> every column holding
   it; the purpose -> context values; the condition -> one SELECT whose output columns are
   among sender, recipient, subject. The LLM proposes; the compiler validates: every
   clause's grounding is compiled on its own (:func:`~pimento.policy.compiler.compile_policy`:
   parsed, tables and columns checked against the catalog, run with ``LIMIT 0``). A clause
   that cannot be grounded (the model says so, or its grounding does not compile) is a
   :class:`~pimento.errors.PolicyError` naming the clause, after all clauses were tried.
4. The result is the same structured YAML a custodian writes (``docs/policy.md``), each norm
   with its source clause, for review before ``pimento policy compile``.

Prompts contain only the schema (names, types, keys), the policy text and, when given,
values from a synthetic database (:class:`~pimento.llm.SyntheticValues`); no builder here
takes an engine. The engine is used only to validate proposals (``LIMIT 0`` probes).
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any, Literal

import sqlglot
from pydantic import BaseModel, ConfigDict, Field
from sqlglot.errors import SqlglotError

from pimento.engines.base import Engine
from pimento.errors import CatalogError, LLMError, PolicyError
from pimento.llm import Backend, Message, SyntheticValues, Usage, complete_structured_one, render_schema
from pimento.policy.compiler import compile_policy
from pimento.policy.extract_offline import extract_policy_offline
from pimento.policy.extraction import Extraction
from pimento.policy.model import ANY, policy_from_dict
from pimento.schema import Catalog

__all__ = [
    "Clause",
    "ExtractedNorm",
    "Extraction",
    "GroundingAnswer",
    "extract",
    "extract_policy",
    "extraction_messages",
    "grounding_messages",
    "split_clauses",
]


# --------------------------------------------------------------------------- clauses


@dataclass(frozen=True)
class Clause:
    """One clause of the policy text: ``C1``, ``C2``, ... in order of appearance."""

    id: str
    text: str


_ITEM = re.compile(r"^\s*(?:[-*\u2022]|\(?[0-9]{1,3}[.)]|\([a-z]{1,4}\)|[a-z][.)])\s+")


def split_clauses(text: str, *, min_chars: int = 25) -> list[Clause]:
    """Split policy text into clauses: blank-line paragraphs, and enumerated or bulleted items
    (``1.``, ``(a)``, ``(iv)``, ``-``) inside a paragraph; lines are joined, whitespace collapsed.
    Fragments shorter than ``min_chars`` (headings, numbers) are dropped.

    >>> [c.text for c in split_clauses("Rule one applies to all staff.\\n\\n(a) Nurses may read charts.\\n(b) Clerks may not.")]
    ['Rule one applies to all staff.', '(a) Nurses may read charts.']
    """
    pieces: list[str] = []
    for para in re.split(r"\n\s*\n", text.replace("\r\n", "\n")):
        current: list[str] = []
        for line in para.splitlines():
            if _ITEM.match(line) and current:
                pieces.append(" ".join(current))
                current = []
            if line.strip():
                current.append(line.strip())
        if current:
            pieces.append(" ".join(current))
    out: list[Clause] = []
    for piece in pieces:
        piece = " ".join(piece.split())
        if len(piece) >= min_chars:
            out.append(Clause(f"C{len(out) + 1}", piece))
    return out


# --------------------------------------------------------------------------- structured answers


class _Answer(BaseModel):
    model_config = ConfigDict(extra="ignore")


class ExtractedNorm(_Answer):
    """Step 1: the contextual-integrity norm a clause states, in the clause's own words."""

    is_norm: bool = Field(True, description="false if the clause permits or prohibits no information flow")
    sign: Literal["permit", "deny"] = Field("permit", description="permit (may disclose) or deny (shall not disclose)")
    sender_role: str = Field("any", description="who discloses, e.g. attending physician; 'any' if unstated")
    recipient_role: str = Field("any", description="who receives; 'any' if unstated")
    subject_role: str = Field("any", description="whom the information is about, e.g. patient; 'any' if unstated")
    data_type: str = Field(description="the information, e.g. diagnosis")
    purpose: str = Field("any", description="the purpose, e.g. treatment; 'any' if unstated")
    condition: str = Field(
        "", description="permit: the condition under which the flow is allowed; deny: the exception ('unless ...'); "
        "empty if none",
    )
    source_clause: str = Field(description="the clause text the norm comes from")


class RoleGrounding(_Answer):
    relation: str = Field(description="table whose rows are the agents of this role")
    key: str = Field(description="identity column of that table")
    where: str | None = Field(None, description="SQL predicate over that table selecting the role, or null")


class LocationGrounding(_Answer):
    relation: str
    attribute: str
    where: str | None = Field(None, description="SQL predicate over the row, or null")


class ConditionGrounding(_Answer):
    sql: str = Field(description="one SELECT whose output columns are named among sender, recipient, subject")


class GroundingAnswer(_Answer):
    """Step 2: the norm's concepts mapped to the schema (proposals; the compiler validates them)."""

    groundable: bool = Field(True, description="false if the database holds nothing for this norm")
    reason: str = Field("", description="why it cannot be grounded (when groundable is false)")
    sender: RoleGrounding | None = None
    recipient: RoleGrounding | None = None
    subject: RoleGrounding | None = None
    data_locations: list[LocationGrounding] = Field(default_factory=list, description="every column holding the data")
    purpose_values: list[str] = Field(default_factory=list, description="context values that mean the purpose")
    condition: ConditionGrounding | None = None


# --------------------------------------------------------------------------- prompts


def _schema_text(catalog: Catalog, values: SyntheticValues | None) -> str:
    text = "Database schema:\n" + render_schema(catalog, values)
    if values:
        text += "\n(example values come from a synthetic copy of the data)"
    return text


_EXTRACT_EXAMPLE = (
    '{"is_norm": true, "sign": "permit", "sender_role": "attending physician", "recipient_role": "resident", '
    '"subject_role": "patient", "data_type": "diagnosis", "purpose": "treatment", '
    '"condition": "the attending supervises the resident", "source_clause": "An attending physician may ..."}'
)


def extraction_messages(clause: Clause, *, policy_name: str = "policy") -> tuple[Message, ...]:
    """Step 1 prompt: the clause only (no schema, no data)."""
    system = (
        "You extract contextual-integrity norms from privacy policy text. A norm says who (sender role) may or "
        "may not disclose which information (data type) about whom (subject role) to whom (recipient role), "
        "for which purpose and under which condition. 'shall not ... unless X' is a deny norm whose condition "
        "is X (the exception). Answer with JSON only, for example\n" + _EXTRACT_EXAMPLE
    )
    user = f"Policy {policy_name}, clause {clause.id}:\n{clause.text}"
    return (Message("system", system), Message("user", user))


_GROUND_EXAMPLE = (
    '{"groundable": true, "reason": "", '
    '"sender": {"relation": "Employee", "key": "employee_id", "where": "role = \'physician\'"}, '
    '"recipient": {"relation": "Employee", "key": "employee_id", "where": "role = \'resident\'"}, '
    '"subject": {"relation": "Patient", "key": "pat_id", "where": null}, '
    '"data_locations": [{"relation": "Visit", "attribute": "diagnosis", "where": null}], '
    '"purpose_values": ["treatment"], '
    '"condition": {"sql": "SELECT supervisor_id AS sender, supervisee_id AS recipient FROM Supervises"}}'
)


def grounding_messages(
    catalog: Catalog, norm: ExtractedNorm, clause: Clause, *, values: SyntheticValues | None = None
) -> tuple[Message, ...]:
    """Step 2 prompt: the schema, the extracted norm and its clause (and synthetic values, if given)."""
    if values is not None and not isinstance(values, SyntheticValues):
        raise PolicyError("prompt values must be a SyntheticValues object (built from the synthetic database)")
    system = (
        "You ground a contextual-integrity norm in a relational schema. Map each role to the table and identity "
        "column of its agents plus an optional SQL predicate on that table (null for a role of 'any'); the data "
        "type to EVERY column that holds it; the purpose to the values a request would declare; the condition "
        "to ONE SQL SELECT over the schema whose output columns are named sender, recipient and/or subject "
        "(identities of the agents and subject it relates; null if there is no condition). Use only tables and "
        "columns of the schema. If the database holds nothing for the norm, answer groundable false with a "
        "reason. Answer with JSON only, for example\n" + _GROUND_EXAMPLE
    )
    user = (
        _schema_text(catalog, values)
        + f"\n\nClause {clause.id}: {clause.text}\nNorm: {norm.model_dump_json(exclude={'source_clause', 'is_norm'})}"
    )
    return (Message("system", system), Message("user", user))


# --------------------------------------------------------------------------- assembling the policy


def _slug(text: str, default: str) -> str:
    s = re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")
    if not s:
        return default
    return s if s[0].isalpha() else f"x_{s}"


def _is_any(text: str | None) -> bool:
    return not text or text.strip().lower() in ("any", "anyone", "*", "none", "unspecified")


class _Builder:
    """Accumulates the grounding of the clauses, naming things from the norm's words."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.principals: dict[str, dict[str, str]] = {}
        self.roles: dict[str, dict[str, Any]] = {}
        self.data_types: dict[str, dict[str, Any]] = {}
        self.purposes: dict[str, dict[str, Any]] = {}
        self.conditions: dict[str, dict[str, Any]] = {}
        self.subjects: list[str] = []

    def _unique(self, table: dict[str, Any], name: str, value: Any) -> str:
        base, k = name, 2
        while name in table and table[name] != value:
            name, k = f"{base}_{k}", k + 1
        table[name] = value
        return name

    def principal(self, g: RoleGrounding) -> str:
        try:
            table = self.catalog.table(g.relation)
            key = table.column(g.key).name
        except Exception as exc:  # noqa: BLE001 - CatalogError, reported with the clause
            raise PolicyError(f"role grounded in {g.relation}.{g.key}: {getattr(exc, 'message', exc)}") from None
        name = _slug(table.name, "principal")
        return self._unique(self.principals, name, {"relation": table.name, "key": key})

    def role(self, words: str, g: RoleGrounding | None, *, subject: bool = False) -> tuple[str, str | None]:
        """(role name or any, principal kind or None)."""
        if _is_any(words) or g is None:
            return ANY, (self.principal(g) if g is not None else None)
        kind = self.principal(g)
        if subject:
            self.subjects.append(kind)
        spec: dict[str, Any] = {"principal": kind}
        if g.where and g.where.strip():
            spec["where"] = g.where.strip()
        spec["description"] = words.strip()
        return self._unique(self.roles, _slug(words, "role"), spec), kind


def _ground_clause(
    b: _Builder, clause: Clause, norm: ExtractedNorm, answer: GroundingAnswer
) -> dict[str, Any]:
    if not answer.groundable:
        raise PolicyError(f"the model found nothing in the database for it ({answer.reason or 'no reason given'})")
    sender, s_kind = b.role(norm.sender_role, answer.sender)
    recipient, r_kind = b.role(norm.recipient_role, answer.recipient)
    subject, _ = b.role(norm.subject_role, answer.subject, subject=True)
    if not answer.data_locations:
        raise PolicyError(f"no column holds data type {norm.data_type!r}")
    locations = [
        {k: v for k, v in {"relation": loc.relation, "attribute": loc.attribute,
                           "where": (loc.where or "").strip() or None}.items() if v is not None}
        for loc in answer.data_locations
    ]
    data = b._unique(b.data_types, _slug(norm.data_type, "data"), {"description": norm.data_type,
                                                                   "locations": locations})
    purpose = ANY
    if not _is_any(norm.purpose):
        values = [v.strip() for v in answer.purpose_values if v and v.strip()] or [_slug(norm.purpose, "purpose")]
        purpose = b._unique(b.purposes, _slug(norm.purpose, "purpose"), {"values": values})
    out: dict[str, Any] = {
        "id": clause.id, "sign": norm.sign, "sender": sender, "recipient": recipient, "subject": subject,
        "data": [data], "purpose": purpose,
    }
    if norm.condition.strip():
        if answer.condition is None or not answer.condition.sql.strip():
            raise PolicyError(f"its condition ({norm.condition.strip()!r}) has no SQL grounding")
        sql = answer.condition.sql.strip().rstrip(";")
        principals = {}
        outputs = _outputs(sql)
        for var, kind in (("sender", s_kind), ("recipient", r_kind)):
            if var in outputs:
                if kind is None:
                    raise PolicyError(f"its condition relates the {var}, whose role has no grounding")
                principals[var] = kind
        out["condition"] = b._unique(b.conditions, _slug(norm.condition, "condition")[:48],
                                     {"description": norm.condition.strip(), "principals": principals, "sql": sql})
    out["source"] = clause.text
    out["citation"] = f"clause {clause.id} of the policy text (extracted by an LLM; review)"
    return out


def _outputs(sql: str) -> set[str]:
    """Output column names of a SELECT (empty when it does not parse: the compiler will say why)."""
    try:
        tree = sqlglot.parse_one(sql)
    except SqlglotError:
        return set()
    return {s.alias_or_name.lower() for s in getattr(tree, "selects", [])}


def _document(b: _Builder, name: str, norms: list[dict[str, Any]], subject_principal: str | None) -> dict[str, Any]:
    subject = subject_principal or (max(set(b.subjects), key=b.subjects.count) if b.subjects else None)
    if subject is None:
        raise PolicyError("no clause names whom the data is about (a subject such as a patient)",
                          hint="pass the subject principal (a table name) explicitly")
    if subject not in b.principals:
        try:
            table = b.catalog.table(subject)
        except CatalogError as exc:  # the catalog names close matches
            raise PolicyError(f"unknown subject principal {subject!r}", hint=exc.hint) from None
        subject = _slug(table.name, "principal")
        key = (table.primary_key or ("",))[0]
        b.principals.setdefault(subject, {"relation": table.name, "key": key})
    return {
        "version": 1,
        "name": name,
        "description": "extracted from natural-language policy text; review before use",
        "grounding": {
            "principals": b.principals, "subject_principal": subject, "roles": b.roles,
            "data_types": b.data_types, "purposes": b.purposes, "conditions": b.conditions,
        },
        "norms": norms,
    }


def extract_policy(
    text: str,
    catalog: Catalog,
    backend: Backend,
    *,
    engine: Engine | None = None,
    name: str = "extracted",
    values: SyntheticValues | None = None,
    subject_principal: str | None = None,
    usage: Usage | None = None,
    max_tokens: int = 512,
) -> Extraction:
    """Extract and ground the norms of ``text`` (see the module docstring).

    ``engine`` (optional) validates every clause's grounding with ``LIMIT 0`` probes; it never
    reaches a prompt. Raises PolicyError naming every clause that could not be extracted or
    grounded (``.clause`` is the first), or when no clause states a norm.
    """
    usage = usage if usage is not None else Usage()
    clauses = split_clauses(text)
    if not clauses:
        raise PolicyError("the policy text has no clause (nothing of 25 characters or more)")
    b = _Builder(catalog)
    norms: list[dict[str, Any]] = []
    notes: list[dict[str, Any]] = []
    failures: list[dict[str, str]] = []
    for clause in clauses:
        try:
            extracted = complete_structured_one(backend, extraction_messages(clause, policy_name=name), ExtractedNorm,
                                                usage=usage, max_tokens=max_tokens)
        except LLMError as exc:
            failures.append({"clause": clause.id, "text": clause.text, "error": f"extraction failed: {exc.message}"})
            continue
        if not extracted.is_norm:
            notes.append({"clause": clause.id, "text": clause.text, "norm": None})
            continue
        snapshot = _snapshot(b)
        try:
            answer = complete_structured_one(backend, grounding_messages(catalog, extracted, clause, values=values),
                                             GroundingAnswer, usage=usage, max_tokens=max_tokens)
            norm = _ground_clause(b, clause, extracted, answer)
            _validate_clause(b, norm, catalog, engine, subject_principal)
        except (LLMError, PolicyError) as exc:
            _restore(b, snapshot)  # a clause that fails leaves no grounding behind
            failures.append({"clause": clause.id, "text": clause.text, "error": exc.message})
            continue
        norms.append(norm)
        notes.append({"clause": clause.id, "text": clause.text, "norm": extracted.model_dump()})
    if failures:
        detail = "; ".join(f"clause {f['clause']} ({_short(f['text'])}): {f['error']}" for f in failures)
        raise PolicyError(f"{len(failures)} of {len(clauses)} clauses cannot be grounded: {detail}",
                          clause=failures[0]["clause"],
                          hint="rephrase or drop these clauses, or write their grounding by hand in the YAML")
    if not norms:
        raise PolicyError("no clause of the policy text states a norm")
    document = _document(b, name, norms, subject_principal)
    policy_from_dict(document, source="extracted policy")
    return Extraction(document, notes, usage, failures)


def _snapshot(b: _Builder) -> tuple[Any, ...]:
    return (*(copy.deepcopy(t) for t in (b.principals, b.roles, b.data_types, b.purposes, b.conditions)), list(b.subjects))


def _restore(b: _Builder, snap: tuple) -> None:
    b.principals, b.roles, b.data_types, b.purposes, b.conditions, b.subjects = snap


def _validate_clause(b: _Builder, norm: dict[str, Any], catalog: Catalog, engine: Engine | None,
                     subject_principal: str | None) -> None:
    """Compile this clause alone with the grounding it uses: the compiler is the judge."""
    used_roles = {norm[v] for v in ("sender", "recipient", "subject") if norm[v] != ANY}
    g_roles = {k: v for k, v in b.roles.items() if k in used_roles}
    kinds = {v["principal"] for v in g_roles.values()}
    cond = b.conditions.get(norm.get("condition", ""), None)
    if cond:
        kinds |= set(cond["principals"].values())
    subject = subject_principal or (b.subjects[-1] if b.subjects else None) or next(iter(b.principals), None)
    doc_b = _Builder(catalog)
    doc_b.principals = dict(b.principals)
    doc_b.roles = g_roles
    doc_b.data_types = {k: b.data_types[k] for k in norm["data"]}
    doc_b.purposes = {k: v for k, v in b.purposes.items() if k == norm["purpose"]}
    doc_b.conditions = {norm["condition"]: cond} if cond else {}
    doc_b.subjects = [subject] if subject else []
    document = _document(doc_b, "clause", [norm], subject_principal)
    policy = policy_from_dict(document, source=f"clause {norm['id']}")
    compile_policy(policy, catalog, engine)


def _short(text: str, n: int = 60) -> str:
    return text if len(text) <= n else text[: n - 3] + "..."


def extract(
    text: str,
    catalog: Catalog,
    backend: Backend | None = None,
    *,
    engine: Engine | None = None,
    name: str = "extracted",
    values: SyntheticValues | None = None,
    subject_principal: str | None = None,
    usage: Usage | None = None,
    categorical: dict | None = None,
    vocabulary: dict[str, list[str]] | None = None,
) -> Extraction:
    """Extract a policy from text: by rules offline when ``backend`` is None (``categorical``:
    the role and purpose values, else read from ``engine``; ``vocabulary``: declared data phrases),
    else with the LLM ``backend`` (:func:`extract_policy`; ``values`` from a synthetic copy may
    appear in its prompts)."""
    if backend is None:
        return extract_policy_offline(text, catalog, values=categorical, engine=engine, name=name,
                                      subject_principal=subject_principal, vocabulary=vocabulary)
    return extract_policy(text, catalog, backend, engine=engine, name=name, values=values,
                          subject_principal=subject_principal, usage=usage)
