"""RQ4 leakage with the extracted policy *after* review (issue 27).

    python -m benchmarks.e2e_leakage_reviewed --workdir DIR [any option of benchmarks.e2e_leakage]
    python -m benchmarks.e2e_leakage_reviewed --review careful --workdir DIR

:mod:`benchmarks.e2e_leakage` deploys the offline extractor's policy as extracted: the draft,
whose permits held for review are not enforced (the reading *before review*). This runs the same
benchmark with the open review questions answered: by default ``confirm-all``, every question
answered ``confirm`` where the extractor proposed a grounding (:func:`pimento.policy.review.confirm_all`),
dropped where it proposed none: a custodian who accepts every proposal, the least careful review
(and the extractor's behaviour before issue 27); with ``--review careful``, as the hand translation
of the same text grounds each clause (:mod:`benchmarks.cql_review`). Each reading deploys into its
own folder under ``--workdir`` (``<domain>-extracted-<reading>``).
"""

from __future__ import annotations

import sys

import benchmarks.e2e_leakage as e2e

__all__ = ["main"]


def main(argv: list[str] | None = None) -> None:
    args = list(argv if argv is not None else sys.argv[1:])
    if not any(a == "--review" or a.startswith("--review=") for a in args):
        args = ["--review", "confirm-all", *args]
    e2e.main(args)


if __name__ == "__main__":
    main()
