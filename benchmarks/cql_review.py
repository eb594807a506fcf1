"""A simulated *careful* review of an extracted policy draft, answered from a hand-written gold (issue 27).

The offline extractor holds every permit it cannot ground precisely, with open questions for the
custodian (:mod:`pimento.policy.review`). The benchmarks read a draft three ways: ``draft`` (every
question dropped: the held permits are not enforced), ``confirmed`` (every proposal accepted: the
least careful review) and ``careful`` (this module): a custodian who knows what each clause means,
answering every question the way the hand-written translation of the same text (the gold, a policy
document whose norm ids are the text's clause ids) grounds that clause:

* a **data** question: the columns the gold norm covers (``relation.attribute``), minus those the
  held norm already covers without doubt, are what the custodian wants. Each proposal is trimmed to
  them; the last data question of the norm also gets the wanted columns no proposal named. The
  answer is ``confirm`` when that equals the proposal, ``drop`` when nothing is left, else an
  ``edit``. A review edit names whole columns: a gold location with a row filter (``where``) is left
  out of a permit (which then covers less) and taken whole into a prohibition (which then denies more).
* a **condition** question (the offline extractor proposes none): when the gold norm has exactly one
  named condition that the held norm's own conditions do not already match (same tables, outputs and
  tested columns), the answer is an ``edit`` to that condition's SQL; otherwise ``drop`` (the whole
  permit is dropped: a permit never loses a condition).
* a **purpose** question (a permit that states no purpose): ``confirm`` (any purpose) when the gold
  norm holds for any purpose, else an ``edit`` to the context purposes the gold's purpose covers (its
  values and its sub-purposes').
* a **role** question (issue 27, POLICY14: a sender, recipient or subject grounded only weakly): the gold norm's
  role for that variable, compared as :mod:`benchmarks.cql_extract` compares roles (relation, normalised filter):
  ``confirm`` when it equals the proposal, else an ``edit`` to it (``{principal, where}``); ``confirm`` where the
  gold leaves the variable open (the proposal is narrower than anyone).
* a clause the gold has no permit for: every question ``drop``.

It simulates a custodian who reads the gold's intent correctly and writes SQL when one condition is
missing; it does not simulate one who would write the gold's row filters or untangle several missing
conditions (those permits are dropped, fail closed); a condition or role edit that does not fit (a role of a table
without a one-column key, or one the held norm's conditions bind otherwise) drops that clause's permit, and only
that one (:func:`careful_review` keeps each clause's edits that fit). Answers go through
:func:`pimento.policy.review.apply_review`, as the CLI's and the web page's answers do.
"""

from __future__ import annotations

from typing import Any

from benchmarks.cql_extract import _norm_sql, _view_signature
from pimento.errors import PolicyError
from pimento.policy.review import apply_review, open_questions

__all__ = ["careful_answers", "careful_review"]


def _gold_columns(gold: dict[str, Any], norm: dict[str, Any]) -> dict[tuple[str, str], str]:
    """The gold norm's columns, (relation, attribute) in lower case -> ``Relation.attribute`` as written: for a
    permit those without a row filter (leaving one out narrows the permit), for a prohibition every one
    (its row filter dropped: the whole column is prohibited, which only denies more)."""
    data = norm["data"] if isinstance(norm["data"], list) else [norm["data"]]
    deny = norm["sign"] != "permit"
    return {(loc["relation"].lower(), loc["attribute"].lower()): f"{loc['relation']}.{loc['attribute']}"
            for d in data for loc in gold["grounding"]["data_types"][d]["locations"] if deny or not loc.get("where")}


def _held_columns(draft: dict[str, Any], norm: dict[str, Any]) -> set[tuple[str, str]]:
    types = draft["grounding"].get("data_types", {})
    return {(loc["relation"].lower(), loc["attribute"].lower())
            for d in norm.get("data") or [] for loc in types[d]["locations"]}


def _named(cond: Any) -> list[str]:
    """The named conditions of a norm's ``condition`` (a name or an ``all`` of names; nothing else)."""
    if isinstance(cond, str):
        return [cond]
    if isinstance(cond, dict) and set(cond) == {"all"}:
        return [c for c in cond["all"] if isinstance(c, str)]
    return []


def _missing_conditions(draft: dict[str, Any], gold: dict[str, Any], norm: dict[str, Any],
                        gnorm: dict[str, Any]) -> list[str]:
    have = {_view_signature(draft["grounding"]["conditions"][c]["sql"]) for c in _named(norm.get("condition"))}
    return [gold["grounding"]["conditions"][c]["sql"] for c in _named(gnorm.get("condition"))
            if _view_signature(gold["grounding"]["conditions"][c]["sql"]) not in have]


def _answer_data(proposal: list[dict[str, str]] | None, want: dict[tuple[str, str], str], last: bool) -> tuple[Any, set]:
    offered = {(p["relation"].lower(), p["attribute"].lower()) for p in proposal or []}
    take = (offered & set(want)) | (set(want) if last else set())
    if not take:
        return "drop", take
    if take == offered:
        return "confirm", take
    return {"edit": sorted(want[k] for k in take)}, take


def _purpose_values(gold: dict[str, Any], name: str) -> list[str]:
    """The context purposes a gold purpose covers: its values and those of its sub-purposes, in order."""
    purposes = gold["grounding"].get("purposes", {})
    out, todo, seen = [], [name], set()
    while todo:
        p = todo.pop(0)
        if p in seen or p not in purposes:
            continue
        seen.add(p)
        out += [v for v in purposes[p].get("values", [p]) if v not in out]
        todo += purposes[p].get("includes", [])
    return out


def _answer_purpose(gold: dict[str, Any], gnorm: dict[str, Any]) -> Any:
    """``confirm`` (any purpose) when the gold norm holds for any purpose, else an edit to the gold's purposes."""
    purpose = gnorm.get("purpose", "any")
    return "confirm" if purpose == "any" else {"edit": _purpose_values(gold, purpose) or [purpose]}


def _answer_role(gold: dict[str, Any], gnorm: dict[str, Any], q: dict[str, Any]) -> Any:
    """``confirm`` when the gold's role for the question's variable is the proposal (or the gold leaves it open),
    else an edit to the gold's role (its relation and filter)."""
    role = gnorm.get(q["var"], "any")
    if role == "any":
        return "confirm"
    g = gold["grounding"]
    spec = g["roles"][role]
    relation = g["principals"][spec["principal"]]["relation"]
    proposal = q.get("proposal") or {}
    same = (str(proposal.get("principal", "")).lower() == relation.lower()
            and _norm_sql(proposal.get("where")) == _norm_sql(spec.get("where")))
    return "confirm" if same else {"edit": {"principal": relation, "where": spec.get("where")}}


def careful_answers(draft: dict[str, Any], gold: dict[str, Any]) -> dict[str, Any]:
    """Answers to every open question of ``draft`` as the custodian whose intent is ``gold`` would give them."""
    gold_norms = {n["id"]: n for n in gold.get("norms", [])}
    answers: dict[str, Any] = {}
    for held in draft.get("review") or []:
        norm, gnorm = held["norm"], gold_norms.get(held["clause"])
        questions = held["questions"]
        if gnorm is None or gnorm["sign"] != norm["sign"]:
            answers.update({q["id"]: "drop" for q in questions})
            continue
        held_columns = _held_columns(draft, norm)
        want = {k: v for k, v in _gold_columns(gold, gnorm).items() if k not in held_columns}
        data_ids = [q["id"] for q in questions if q["kind"] == "data"]
        missing = _missing_conditions(draft, gold, norm, gnorm)
        conditions_asked = sum(1 for x in questions if x["kind"] == "condition")
        for q in questions:
            if q["kind"] == "purpose":
                answers[q["id"]] = _answer_purpose(gold, gnorm)
            elif q["kind"] == "role":
                answers[q["id"]] = _answer_role(gold, gnorm, q)
            elif q["kind"] == "data":
                last = q["id"] == data_ids[-1] and not q.get("extends")  # an extension asks only its proposal
                answers[q["id"]], took = _answer_data(q.get("proposal"), want, last)
                want = {k: v for k, v in want.items() if k not in took}
            elif q["kind"] == "condition" and len(missing) == 1 and conditions_asked == 1:
                answers[q["id"]] = {"edit": missing[0]}
            else:
                answers[q["id"]] = "drop"
    return answers


def careful_review(draft: dict[str, Any], gold: dict[str, Any]) -> dict[str, Any]:
    """The reviewed policy document: ``draft`` answered by :func:`careful_answers`."""
    if not open_questions(draft):
        return {k: v for k, v in draft.items() if k != "review"}
    answers = careful_answers(draft, gold)
    try:
        return apply_review(draft, answers)
    except PolicyError:  # a gold condition (SQL) or role ({principal, where}) that does not fit its held norm
        pass
    # drop those edits clause by clause: a clause keeps its edits where they fit with the clauses kept before it
    # (before, one edit that did not fit dropped every clause's condition and role edits)
    risky: dict[str, list[str]] = {}
    for q in open_questions(draft):
        answer = answers[q["id"]]
        if isinstance(answer, dict) and isinstance(answer["edit"], (str, dict)):
            risky.setdefault(q["clause"], []).append(q["id"])
    kept = {k: "drop" if any(k in ids for ids in risky.values()) else v for k, v in answers.items()}
    for ids in risky.values():
        trial = {**kept, **{k: answers[k] for k in ids}}
        try:
            apply_review(draft, trial)
        except PolicyError:
            continue
        kept = trial
    return apply_review(draft, kept)
