"""RQ4 leakage with the extracted policy *after* a confirm-all review (issue 27).

    python -m benchmarks.e2e_leakage_reviewed --workdir DIR [any option of benchmarks.e2e_leakage]

:mod:`benchmarks.e2e_leakage` deploys the offline extractor's policy as extracted: the draft,
whose permits held for review are not enforced (the reading *before review*). This runs the same
benchmark with every open review question answered ``confirm`` where the extractor proposed a
grounding (:func:`pimento.policy.review.confirm_all`): a custodian who accepts every proposal,
the least careful review (and the extractor's behaviour before issue 27). Use a fresh
``--workdir``: the deployments are cached there.
"""

from __future__ import annotations

from typing import Any

import benchmarks.e2e_leakage as e2e
from pimento.policy.review import apply_review, confirm_all

__all__ = ["main"]

_extract = e2e.extract_policy_offline


def _confirmed(*args: Any, **kwargs: Any) -> Any:
    result = _extract(*args, **kwargs)
    draft = result.draft()
    result.policy = apply_review(draft, confirm_all(draft))
    result.questions = []
    return result


def main(argv: list[str] | None = None) -> None:
    e2e.extract_policy_offline = _confirmed
    e2e.main(argv)


if __name__ == "__main__":
    main()
