"""The custodian's review of an extracted policy draft on the web page (issue 27; docs/policy-review.md).

``[policy] draft`` names the YAML that ``pimento policy extract`` wrote: the certain norms, and
under ``review`` the permits held out with their open questions
(:mod:`pimento.policy.review`). ``/custodian/policy/review`` lists each question (the sentence, the
phrase, why it was held, the proposal) and lets the custodian confirm the proposal, edit it (pick
columns for a data phrase, write the SQL of a condition, name the purposes of a permit that states
none, name the role of a sender, recipient or subject grounded only weakly: ``Table`` or ``Table where col =
'value'``) or drop it. A purpose question is labelled advisory (its permit is in the draft as read, any
purpose) and its confirm is pre-selected. The answers go through the one
:func:`~pimento.policy.review.apply_review`; the reviewed policy (no ``review`` key) is written
beside the draft as ``<stem>.reviewed.yaml`` and the use is recorded in the audit log. The draft
itself is never enforced: ``pimento policy compile`` refuses it, and the service enforces only
``[policy] compiled``, compiled from a reviewed policy.

A review is applied to the draft the page showed: the form carries the draft's SHA-256, and a draft
changed since (extracted again) is refused (409) rather than answered with stale question ids.

Custodian only: the web route refuses an analyst's session (403). Nothing here reads the data.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from pimento.errors import PolicyError, ServiceError
from pimento.policy.review import apply_review, open_questions

if TYPE_CHECKING:
    from pimento.schema import Catalog
    from pimento.service.deployment import Deployment

__all__ = ["Draft", "answers_from_form", "load_draft", "question_views", "reviewed_path", "save_review"]

#: What the custodian may do with each question (the form's radio buttons).
FORM_ACTIONS = ("confirm", "edit", "drop")


@dataclass(frozen=True)
class Draft:
    """The draft ``[policy] draft`` names: its path, parsed document and SHA-256 of its text."""

    path: Path
    document: dict[str, Any]
    sha256: str

    @property
    def questions(self) -> list[dict[str, Any]]:
        return open_questions(self.document)


def reviewed_path(draft: Path) -> Path:
    """Where the reviewed policy of ``draft`` is written: beside it, ``<stem>.reviewed.yaml``."""
    return draft.with_name(f"{draft.stem}.reviewed.yaml")


def load_draft(deployment: Deployment) -> Draft | None:
    """The deployment's draft (``[policy] draft``), None when none is configured.

    Raises PolicyError when the file is missing, not YAML, or not an extracted policy."""
    name = deployment.settings.policy.draft
    if not name:
        return None
    path = Path(deployment.settings.resolve(name))
    try:
        raw = path.read_bytes()
        document = yaml.safe_load(raw.decode("utf-8"))
    except OSError:
        raise PolicyError(f"[policy] draft: {path} cannot be read",
                          hint="write it with `pimento policy extract TEXT --db DB --out DRAFT.yaml`") from None
    except (UnicodeDecodeError, yaml.YAMLError) as exc:
        raise PolicyError(f"[policy] draft: {path} is not YAML: {exc}") from None
    if not isinstance(document, dict) or not isinstance(document.get("norms"), list) or "grounding" not in document:
        raise PolicyError(f"[policy] draft: {path} is not a policy extracted by `pimento policy extract`")
    return Draft(path, document, hashlib.sha256(raw).hexdigest())


def _column_choices(catalog: Catalog, proposal: list[dict[str, str]]) -> list[dict[str, Any]]:
    """Every column of the schema, by table, the proposal's checked (the tables holding one listed first, open)."""
    proposed = {(p["relation"].lower(), p["attribute"].lower()) for p in proposal}
    tables = []
    for table in catalog.tables:
        columns = [{"ref": f"{table.name}.{c.name}", "name": c.name,
                    "checked": (table.name.lower(), c.name.lower()) in proposed} for c in table.columns]
        tables.append({"name": table.name, "columns": columns, "open": any(c["checked"] for c in columns)})
    return sorted(tables, key=lambda t: not t["open"])


def question_views(draft: Draft, catalog: Catalog) -> list[dict[str, Any]]:
    """The open questions as the page shows them: each with its proposal as ``Table.column`` text and, for a
    data phrase, the schema's columns to pick from."""
    views = []
    for q in draft.questions:
        proposal = q.get("proposal") or []
        if q["kind"] == "role":
            shown = [_role_text(proposal)] if isinstance(proposal, dict) else []
        elif q["kind"] == "purpose":
            shown = (["any purpose"] if proposal == "any" else [str(proposal)]) if proposal else []
        else:
            shown = [f"{p['relation']}.{p['attribute']}" for p in proposal]
        views.append({
            **q, "proposal_text": shown,
            "choices": _column_choices(catalog, proposal) if q["kind"] == "data" else [],
        })
    return views


def _role_text(proposal: dict[str, Any]) -> str:
    """A role proposal as the page shows it (and as an edit is written): ``Table`` or ``Table where ...``."""
    return f"{proposal['principal']} where {proposal['where']}" if proposal.get("where") else str(proposal["principal"])


def answers_from_form(draft: Draft, fields: dict[str, list[str]]) -> dict[str, Any]:
    """The review answers posted by the page: ``action-QID`` (confirm, edit, drop), and for an edit the
    ``columns-QID`` picked (a data phrase), the ``sql-QID`` text (a condition), the ``purposes-QID``
    text (a purpose: comma-separated purpose names) or the ``role-QID`` text (a role: ``Table`` or ``Table where
    col = 'value'``).

    Raises PolicyError naming a question left without an action or an edit left empty."""
    answers: dict[str, Any] = {}
    for q in draft.questions:
        qid = q["id"]
        action = (fields.get(f"action-{qid}") or [""])[0]
        if action not in FORM_ACTIONS:
            raise PolicyError(f"review question {qid} ({q['phrase']!r}) has no answer",
                              hint="pick confirm, edit or drop for every question")
        if action != "edit":
            answers[qid] = action
        elif q["kind"] == "data":
            picked = [c for c in fields.get(f"columns-{qid}", []) if c.strip()]
            if not picked:
                raise PolicyError(f"review question {qid} ({q['phrase']!r}): edit picks at least one column",
                                  hint="tick the columns the phrase means, or drop it")
            answers[qid] = {"edit": picked}
        elif q["kind"] == "purpose":
            named = [p.strip() for p in (fields.get(f"purposes-{qid}") or [""])[0].split(",") if p.strip()]
            if not named:
                raise PolicyError(f"review question {qid}: edit names at least one purpose",
                                  hint="write the purposes the permit holds for, confirm any purpose, or drop it")
            answers[qid] = {"edit": named}
        elif q["kind"] == "role":
            role = (fields.get(f"role-{qid}") or [""])[0].strip()
            if not role:
                raise PolicyError(f"review question {qid} ({q['phrase']!r}): edit names the role",
                                  hint="write Table or Table where col = 'value', confirm the proposal, or drop it")
            answers[qid] = {"edit": role}
        else:
            answers[qid] = {"edit": (fields.get(f"sql-{qid}") or [""])[0]}
    return answers


def _write(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` whole or not at all (a temporary file beside it, renamed over it)."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def save_review(deployment: Deployment, sha256: str, fields: dict[str, list[str]]) -> dict[str, Any]:
    """Answer the deployment's draft with the posted ``fields`` and write the reviewed policy.

    Raises ServiceError 404 (no draft configured) or 409 (the draft changed since the page showed
    it, ``sha256``), PolicyError for answers that do not fit; nothing is written then."""
    draft = load_draft(deployment)
    if draft is None:
        raise ServiceError(404, "this deployment names no policy draft to review",
                           hint="set [policy] draft in pimento.toml to the YAML `pimento policy extract` wrote")
    if sha256 != draft.sha256:
        raise ServiceError(409, f"the draft {draft.path.name} changed since this page was shown; nothing was saved",
                           hint="open the review page again and answer the questions of the new draft")
    answers = answers_from_form(draft, fields)
    reviewed = apply_review(draft.document, answers)
    out = reviewed_path(draft.path)
    with deployment.ledger() as ledger:  # recorded before the reviewed policy exists, as every custodian tool
        ledger.record_custodian_action(deployment.location, "policy review", {
            "draft": str(draft.path), "draft_sha256": draft.sha256, "out": str(out), "answers": answers})
    try:
        _write(out, "# Extracted by `pimento policy extract` and reviewed by the custodian on the web page.\n"
               + yaml.safe_dump(reviewed, sort_keys=False, allow_unicode=True, width=100))
    except OSError as exc:
        raise PolicyError(f"the reviewed policy cannot be written to {out}: {exc.strerror or exc}",
                          hint="the service needs write access to the draft's folder") from None
    return {"out": str(out), "norms": reviewed["norms"], "answers": answers, "draft": str(draft.path)}
