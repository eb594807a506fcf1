"""The outcome of extracting a policy from natural-language text, by an LLM
(:func:`pimento.policy.extract.extract_policy`) or by rules offline
(:func:`pimento.policy.extract_offline.extract_policy_offline`): its own module so that both
extractors build it without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from pimento.llm import Usage

__all__ = ["Extraction"]


@dataclass
class Extraction:
    """The outcome of :func:`~pimento.policy.extract.extract_policy`: the policy document, per-clause notes, LLM usage."""

    policy: dict[str, Any]
    clauses: list[dict[str, Any]]
    usage: Usage
    failures: list[dict[str, str]] = field(default_factory=list)
    #: norms held for the custodian's review (:mod:`pimento.policy.review`): each with its open
    #: questions (a data phrase grounded only broadly or not at all, a condition no table grounds);
    #: they are not in ``policy`` (fail closed) until a review confirms or edits them
    questions: list[dict[str, Any]] = field(default_factory=list)
    #: how each data phrase was grounded (offline extractor): ``{clause, sign, phrase, evidence, locations}``,
    #: the evidence kind one of :data:`pimento.policy.extract_offline.ground.EVIDENCE`
    evidence: list[dict[str, Any]] = field(default_factory=list)

    def draft(self) -> dict[str, Any]:
        """The policy document with its open questions (``review``): what ``pimento policy
        extract`` writes; ``pimento policy compile`` refuses it until it is reviewed."""
        return {**self.policy, "review": self.questions} if self.questions else dict(self.policy)

    def to_yaml(self) -> str:
        header = (
            "# Extracted from natural-language policy text by an LLM (pimento policy extract).\n"
            "# REVIEW every clause, role, location, purpose and condition before compiling it:\n"
            "#   pimento policy compile THIS_FILE --db DB --out compiled.json\n"
        )
        return header + yaml.safe_dump(self.draft(), sort_keys=False, allow_unicode=True, width=100)
