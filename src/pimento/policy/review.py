"""The custodian's review of an extracted policy draft (issue 27: fail narrow, never broad).

The offline extractor (:func:`~pimento.policy.extract_offline.extract_policy_offline`) holds out of
the policy every permit it cannot ground precisely: a data phrase that names no column (it would
cover every column about the subject, or whole tables by a category name, or nothing at all) or a
condition no table grounds; and every prohibition none of whose data phrases grounds (before, it was
left out silently: the policy then permitted what the text forbids). The draft it writes lists them
under ``review``::

    review:
      - clause: C3
        source: "A counselor may access a student's academic record ..."
        norm: {id: C3, sign: permit, recipient: counselor, data: [], ...}   # the certain part
        questions:
          - {id: C3.1, kind: data, phrase: academic record, reason: ..., proposal: [{relation: .., attribute: ..}]}
          - {id: C3.2, kind: condition, phrase: the counselor advises the student, reason: ..., proposal: null}

Until every question is answered, the draft is not a policy: the policy file format has no
``review`` key, so loading it fails, and ``pimento policy compile`` says why
(:func:`require_reviewed`). :func:`apply_review` answers each question:

* ``confirm``: take the proposal (an error where there is none);
* ``drop``: a data phrase is left out (the permit covers less); a condition dropped drops the
  whole permit (a permit never loses a condition: it would hold more often than the text says);
* ``{"edit": ...}``: a data phrase gets the given columns (``["Table.column", ...]``); a
  condition gets the given SQL (one SELECT whose output columns are among sender, recipient,
  subject, as in ``docs/policy.md``); a purpose gets the given purposes (``["education", ...]``:
  the permit holds for exactly these context purposes).

A **purpose** question (``kind: purpose``) is asked of a permit that states no purpose while the
text's other sentences name purposes; its proposal is ``any`` (the literal reading), its
``options`` the purposes the text names. It is **advisory** (``advisory: true``, :func:`holds_norm`
is false): it does not hold its permit, which the draft enforces as the text reads (any purpose,
under ``norms``; the entry under ``review`` repeats it). ``confirm`` keeps any purpose (so a
confirm-all review equals the draft), ``edit`` narrows it, ``drop`` drops the permit. Every other
question holds its norm out of ``norms`` until answered. A draft with only advisory questions is
still a draft: compile refuses it until they are answered (the enforced policy is only ever the
reviewed one); ``--drop-open-questions`` compiles its ``norms``, the advisory permits included.

A **role** question (``kind: role``, issue 27, POLICY14) holds a permit whose sender, recipient or subject
(``var``) was grounded only weakly (by a synonym, by half of its words, a whole table where the text names some
of its rows: :mod:`pimento.policy.extract_offline.role_evidence`); the held norm leaves that ``var`` out, and its
``proposal`` is what the extractor found, ``{principal: Table, where: SQL or null}`` (``principals``: the
principal tables an edit may name, with their keys). ``confirm`` takes the proposal (a ``grounding.roles`` entry,
``norm[var]`` set to it); ``{"edit": "Table"}``, ``{"edit": "Table where col = 'value'"}`` or ``{"edit": {principal,
where}}`` takes that role instead; ``drop`` drops the permit (a permit never goes to a broader recipient). Role
questions are answered before the others of their norm (an edited condition may relate the role).

A held norm (permit or prohibition) left with no data is dropped. A held entry whose norm id is already
enforced (a prohibition's extension question: free-text columns that may mention what it prohibits)
adds its answered columns to that norm. The result is an ordinary policy
document, compiled and
checked as any other. The answers come from ``pimento policy extract --review`` / ``--review-file``
or from the custodian's web page (:mod:`pimento.service.policy_review`); both call :func:`apply_review`.
"""

from __future__ import annotations

import copy
import re
from typing import Any

import sqlglot
from sqlglot.errors import SqlglotError

from pimento.errors import PolicyError
from pimento.policy.model import ANY, policy_from_dict

__all__ = ["ACTIONS", "apply_review", "confirm_all", "holds_norm", "open_questions", "require_reviewed"]

ACTIONS = ("confirm", "drop", "edit")


def open_questions(draft: dict[str, Any]) -> list[dict[str, Any]]:
    """Every open question of ``draft``, each with its ``clause`` and ``source`` sentence."""
    return [{**q, "clause": h["clause"], "source": h.get("source", "")}
            for h in draft.get("review") or [] for q in h["questions"]]


def holds_norm(question: dict[str, Any]) -> bool:
    """Whether ``question`` holds its norm out of the draft's enforced norms until answered: every question
    but an advisory one (a purpose question: the permit is enforced as read, any purpose)."""
    return not question.get("advisory", False)


def require_reviewed(document: Any, *, source: str = "policy") -> None:
    """Raise when ``document`` is a draft with open questions, advisory ones included (refused by compile:
    the custodian must have seen every question)."""
    if isinstance(document, dict) and document.get("review"):
        questions = open_questions(document)
        advisory = sum(1 for q in questions if not holds_norm(q))
        note = f" ({advisory} advisory: their permits enforced as read unless narrowed)" if advisory else ""
        raise PolicyError(
            f"{source} is an extracted draft with {len(questions)} open question(s) under 'review'{note}: it is "
            "not a policy until they are answered",
            hint="answer them: `pimento policy extract TEXT --db DB --out P.yaml --review` (interactive) or "
                 "`--review-file answers.json`; or pass --drop-open-questions to compile the draft's norms only "
                 "(the held clauses are then not enforced; the advisory ones are, as read)")


def confirm_all(draft: dict[str, Any]) -> dict[str, Any]:
    """Answers that confirm every proposal and drop every question without one."""
    return {q["id"]: ("confirm" if q.get("proposal") else "drop") for q in open_questions(draft)}


def _action(answer: Any, qid: str) -> tuple[str, Any]:
    if isinstance(answer, str) and answer in ("confirm", "drop"):
        return answer, None
    if isinstance(answer, dict) and set(answer) == {"edit"}:
        return "edit", answer["edit"]
    raise PolicyError(f"review answer for {qid}: expected 'confirm', 'drop' or {{'edit': ...}}, got {answer!r}")


def _locations(value: Any, qid: str) -> list[dict[str, str]]:
    if not isinstance(value, list) or not value:
        raise PolicyError(f"review answer for {qid}: an edited data phrase is a non-empty list of 'Table.column'")
    out = []
    for item in value:
        if isinstance(item, dict) and {"relation", "attribute"} <= set(item):
            out.append({"relation": str(item["relation"]), "attribute": str(item["attribute"])})
        elif isinstance(item, str) and item.count(".") == 1:
            table, column = item.split(".")
            out.append({"relation": table, "attribute": column})
        else:
            raise PolicyError(f"review answer for {qid}: {item!r} is not 'Table.column'")
    return out


_PURPOSE_VALUE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_ -]*")


def _purpose_values(value: Any, qid: str) -> list[str]:
    """An edited purpose: the context purposes the permit holds for (a list, or one comma-separated string)."""
    raw: list[Any] = value.split(",") if isinstance(value, str) else value if isinstance(value, list) else [None]
    items = [v for v in raw if isinstance(v, str)]
    if len(items) != len(raw) or not [v for v in items if v.strip()]:
        raise PolicyError(f"review answer for {qid}: an edited purpose is a non-empty list of purpose names",
                          hint="e.g. {'edit': ['education', 'counseling']}: the purposes the permit holds for")
    out = [v.strip() for v in items if v.strip()]
    bad = [v for v in out if not _PURPOSE_VALUE.fullmatch(v) or v.lower() == ANY]
    if bad:
        raise PolicyError(f"review answer for {qid}: {bad[0]!r} is not a purpose name",
                          hint="letters, digits, '_', '-' and spaces; confirm the proposal for any purpose")
    return list(dict.fromkeys(out))


def _purpose_answer(grounding: dict[str, Any], values: list[str]) -> str:
    """A purpose of exactly ``values`` (no sub-purposes: the custodian names every purpose the permit holds for)."""
    purposes = grounding.setdefault("purposes", {})
    for name, spec in purposes.items():
        if spec.get("values") == values and not spec.get("includes"):
            return str(name)
    name = _unique(purposes, f"{_slug(values[0])}_reviewed")
    purposes[name] = {"values": values}
    return name


def _unique(table: dict[str, Any], base: str) -> str:
    name, k = base, 2
    while name in table:
        name, k = f"{base}_{k}", k + 1
    return name


def _slug(text: str) -> str:
    s = re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")[:40].strip("_") or "x"
    return s if s[0].isalpha() else f"x_{s}"


_ROLE_EDIT = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)(?:\s+where\s+(.+?))?\s*;?\s*", re.IGNORECASE | re.DOTALL)


def _role_value(value: Any, qid: str) -> tuple[str, str | None]:
    """An edited role: ``"Table"``, ``"Table where col = 'value'"`` or ``{"principal": Table, "where": SQL}``."""
    if isinstance(value, dict) and set(value) <= {"principal", "where"} and isinstance(value.get("principal"), str):
        table, where = value["principal"].strip(), value.get("where")
    elif isinstance(value, str) and (m := _ROLE_EDIT.fullmatch(value)):
        table, where = m.group(1), m.group(2)
    else:
        raise PolicyError(f"review answer for {qid}: an edited role is 'Table' or \"Table where col = 'value'\", "
                          f"got {value!r}", hint="e.g. {'edit': \"Staff where role = 'nurse'\"}; or drop the permit")
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", table or ""):
        raise PolicyError(f"review answer for {qid}: {table!r} is not a table name")
    if where is not None and not isinstance(where, str):
        raise PolicyError(f"review answer for {qid}: a role's filter is one SQL predicate, got {where!r}")
    where = where.strip().rstrip(";").strip() if where else None
    if where:
        try:
            tree = sqlglot.parse_one(f"SELECT 1 FROM {table} WHERE {where}")
        except SqlglotError as exc:
            raise PolicyError(f"review answer for {qid}: the role's filter does not parse: {exc}") from None
        if len(list(tree.find_all(sqlglot.exp.Select))) != 1:
            raise PolicyError(f"review answer for {qid}: a role's filter is a predicate on the table's own columns",
                              hint="no subquery: e.g. role = 'nurse'")
    return table, where or None


def _principal_name(g: dict[str, Any], table: str, keys: dict[str, str], qid: str) -> str:
    """The ``grounding.principals`` name of ``table``, added (with its key from the question) when missing."""
    for name, spec in g["principals"].items():
        if spec["relation"].lower() == table.lower():
            return str(name)
    key = next((k for t, k in keys.items() if t.lower() == table.lower()), None)
    if key is None:
        listed = ", ".join(sorted(keys)) or "none listed"
        raise PolicyError(f"review answer for {qid}: unknown principal table {table!r}",
                          hint=f"a table of the database with a one-column key: {listed}")
    name = _unique(g["principals"], _slug(table))
    g["principals"][name] = {"relation": table, "key": key}
    return name


def _condition_principals(norm: dict[str, Any], g: dict[str, Any], var: str) -> dict[str, str]:
    """The conditions of ``norm`` that relate ``var``: condition name -> the principal relation they bind it to."""
    out = {}
    for name in _cond_names(norm.get("condition")) | _cond_names(norm.get("when")):
        kind = (g["conditions"].get(name) or {}).get("principals", {}).get(var)
        if kind is not None and kind in g["principals"]:
            out[name] = g["principals"][kind]["relation"]
    return out


def _cond_names(cond: Any) -> set[str]:
    if isinstance(cond, str):
        return {cond}
    if isinstance(cond, list):
        return set().union(set(), *(_cond_names(c) for c in cond))
    if isinstance(cond, dict):
        return set().union(set(), *(_cond_names(v) for k, v in cond.items() if k in ("all", "any", "not")))
    return set()


def _role_answer(norm: dict[str, Any], g: dict[str, Any], q: dict[str, Any], action: str, value: Any) -> None:
    """Set ``norm[var]`` to the confirmed or edited role of question ``q`` (a ``grounding.roles`` entry)."""
    qid, var = q["id"], q.get("var")
    if var not in ("sender", "recipient", "subject"):
        raise PolicyError(f"review question {qid}: a role question names its var (sender, recipient or subject)")
    if action == "confirm":
        proposal = q["proposal"]
        if not isinstance(proposal, dict) or not isinstance(proposal.get("principal"), str):
            raise PolicyError(f"review question {qid}: its proposal is not a role {{principal, where}}")
        table, where = proposal["principal"], proposal.get("where") or None
    else:
        table, where = _role_value(value, qid)
    principal = _principal_name(g, table, dict(q.get("principals") or {}), qid)
    relation = g["principals"][principal]["relation"]
    if var == "subject" and principal != g.get("subject_principal"):
        subject = g["principals"].get(g.get("subject_principal"), {}).get("relation", g.get("subject_principal"))
        raise PolicyError(f"review answer for {qid}: the subject is a role of the subject table {subject!r}, "
                          f"not {relation!r}", hint=f"e.g. {{'edit': \"{subject} where ...\"}}, or drop the permit")
    bound = {c: r for c, r in _condition_principals(norm, g, var).items() if r.lower() != relation.lower()}
    if bound:
        c, r = next(iter(bound.items()))
        raise PolicyError(f"review answer for {qid}: the clause's condition {c!r} relates the {var} as a {r}; a "
                          f"{relation} would never satisfy it", hint=f"edit to a role of {r}, or drop the permit")
    for name, spec in g["roles"].items():
        if spec.get("principal") == principal and (spec.get("where") or None) == where:
            norm[var] = name
            return
    name = _unique(g["roles"], _slug(str(q.get("phrase") or var)))
    name = _unique(g["roles"], f"{name}_role") if name == ANY else name
    g["roles"][name] = {"principal": principal, **({"where": where} if where else {})}
    norm[var] = name


def _condition_spec(norm: dict[str, Any], grounding: dict[str, Any], phrase: str, sql: Any,
                    qid: str) -> dict[str, Any]:
    if not isinstance(sql, str) or not sql.strip():
        raise PolicyError(f"review answer for {qid}: an edited condition is one SQL SELECT")
    sql = sql.strip().rstrip(";")
    try:
        outputs = {s.alias_or_name.lower() for s in getattr(sqlglot.parse_one(sql), "selects", [])}
    except SqlglotError as exc:
        raise PolicyError(f"review answer for {qid}: the condition does not parse: {exc}") from None
    principals = {}
    for var in ("sender", "recipient"):
        if var in outputs:
            role = norm.get(var, ANY)
            if role == ANY:
                raise PolicyError(f"review answer for {qid}: the condition relates the {var}, whom the clause "
                                  "does not name")
            principals[var] = grounding["roles"][role]["principal"]
    spec: dict[str, Any] = {"description": phrase}
    if principals:
        spec["principals"] = principals
    spec["sql"] = sql
    return spec


def apply_review(draft: dict[str, Any], answers: dict[str, Any]) -> dict[str, Any]:
    """The reviewed policy: ``draft`` with every open question answered (see the module docstring).

    Raises PolicyError naming the unanswered questions, or an answer that does not fit (a
    confirm without a proposal, an edit of the wrong shape). The result is validated as a policy
    file; compile it as any other.
    """
    questions = open_questions(draft)
    missing = [q["id"] for q in questions if q["id"] not in answers]
    if missing:
        raise PolicyError(f"{len(missing)} review question(s) unanswered: {', '.join(missing)}",
                          hint="answer each with 'confirm', 'drop' or {'edit': ...}")
    unknown = sorted(set(answers) - {q["id"] for q in questions})
    if unknown:
        raise PolicyError(f"review answers for unknown questions: {', '.join(unknown)}")
    doc = copy.deepcopy({k: v for k, v in draft.items() if k != "review"})
    g = doc["grounding"]
    for held in draft.get("review") or []:
        norm = copy.deepcopy(held["norm"])
        data = list(norm.get("data") or [])
        conditions: list[str] = []
        keep = True
        for q in sorted(held["questions"], key=lambda x: x["kind"] != "role"):  # roles first: a condition relates one
            action, value = _action(answers[q["id"]], q["id"])
            if action == "confirm" and not q.get("proposal"):
                raise PolicyError(f"review question {q['id']} ({q['phrase']!r}) has no proposal to confirm",
                                  hint="edit it (columns or a SQL condition) or drop it")
            if q["kind"] == "role":
                if action == "drop":  # a permit never goes to a broader recipient
                    keep = False
                elif keep:
                    _role_answer(norm, g, q, action, value)
                continue
            if q["kind"] == "condition" and not keep:  # the permit is dropped already: its condition relates nothing
                continue
            if q["kind"] == "purpose":
                if action == "drop":  # the permit under no purpose at all: dropped
                    keep = False
                elif action == "edit":
                    norm["purpose"] = _purpose_answer(g, _purpose_values(value, q["id"]))
                continue  # confirm: the proposal (any purpose) stands
            if q["kind"] == "data":
                if action == "drop":
                    continue
                locs = q["proposal"] if action == "confirm" else _locations(value, q["id"])
                name = _unique(g["data_types"], _slug(q["phrase"]))
                g["data_types"][name] = {"description": q["phrase"], "locations": locs}
                data.append(name)
            elif action == "drop":  # a permit never loses its condition
                keep = False
            else:
                spec = _condition_spec(norm, g, q["phrase"], q["proposal"] if action == "confirm" else value, q["id"])
                name = _unique(g["conditions"], f"{_slug(q['phrase'])[:32]}_reviewed")
                g["conditions"][name] = spec
                conditions.append(name)
        enforced = next((n for n in doc["norms"] if n["id"] == norm["id"]), None)
        if enforced is not None:  # a norm the draft enforces already: advisory questions, or an extension
            _amend(doc, enforced, norm, data if keep else None)
            continue
        if not keep or not data:
            continue
        norm["data"] = data
        if conditions:
            existing = [norm["condition"]] if norm.get("condition") is not None else []
            parts = existing + conditions
            norm["condition"] = parts[0] if len(parts) == 1 else {"all": parts}
        norm["citation"] = (norm.get("citation", "") + "; reviewed by the custodian").lstrip("; ")
        doc["norms"].append(norm)
    order = {h["clause"]: i for i, h in enumerate(draft.get("review") or [])}
    doc["norms"].sort(key=lambda n: _clause_order(n["id"], order))
    doc["description"] = (doc.get("description", "") + "; reviewed by the custodian").lstrip("; ")
    policy_from_dict(doc, source="reviewed policy")
    return doc


def _amend(doc: dict[str, Any], enforced: dict[str, Any], reviewed: dict[str, Any], data: list[str] | None) -> None:
    """Apply a review entry to a norm the draft already enforces: ``data`` None drops it (an advisory purpose
    dropped); else its reviewed purpose (an advisory purpose narrowed) and its answered columns (a prohibition's
    free-text extension: columns it may be written in) are taken."""
    if enforced["sign"] != reviewed["sign"]:
        raise PolicyError(f"review of {reviewed['id']}: the draft holds a norm of another sign under the same id")
    if data is None:
        doc["norms"].remove(enforced)
        return
    if "purpose" in reviewed:
        enforced["purpose"] = reviewed["purpose"]
    enforced["data"] = list(dict.fromkeys([*enforced["data"], *data]))


def _clause_order(clause: str, held: dict[str, int]) -> tuple[int, str]:
    m = re.search(r"(\d+)$", clause)
    return (int(m.group(1)) if m else 10**6, clause)
