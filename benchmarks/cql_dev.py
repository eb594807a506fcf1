"""Policy text -> CI norms on the DEVELOPMENT texts that have a gold (issue 27): training figures.

    python -m benchmarks.cql_dev                  # the texts of DEV: aggregate table
    python -m benchmarks.cql_dev --out results.json

Scored exactly as :mod:`benchmarks.cql_frozen` scores the frozen texts (the ``draft`` and
``confirmed`` readings, data precision over permits), on ``tests/data/policies/dev_*`` folders with a
``gold.yaml``. Unlike the frozen texts these are NOT sealed: the extractor's rules were written from
them (``docs/benchmarks.md``, "Grounding on two development texts"; for dev_telecom and dev_admissions,
"Policy extraction on new development texts"; for dev_insurer_claims and dev_recruitment, "Policy extraction: two
more development texts and generic fixes"; for dev_vet_practice, "Drafts that fail narrow"; for dev_dental_legacy, a
schema of terse names described by COMMENT ON, "Grounding through column comments"; for dev_tutoring, conditions of
varied kinds, "Conditions grounded to join paths"; for dev_gym and dev_car_rental, a who-may-see-what list and terse
imperative rules, "Provision shapes and roles on two new development texts"), so their figures say what the
rules do on the text they were fixed on, not how they generalise; the frozen figures say that.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.cql_frozen import score_texts, scored_cli

__all__ = ["DEV", "main", "run"]

#: development texts with a gold (written before the extractor ran on their text)
DEV = ("dev_biobank", "dev_pbm", "dev_telecom", "dev_admissions", "dev_insurer_claims", "dev_recruitment",
       "dev_vet_practice", "dev_dental_legacy", "dev_tutoring", "dev_gym", "dev_car_rental")


def run(workdir: Path, domains: tuple[str, ...] = DEV) -> dict[str, Any]:
    return score_texts(workdir, domains)


def main(argv: list[str] | None = None) -> None:
    scored_cli(run, __doc__, argv)


if __name__ == "__main__":
    main()
