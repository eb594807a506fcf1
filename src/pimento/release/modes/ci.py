"""Mode ``ci``: the SQL answered exactly on the authorized data of the context; no budget.

Any SQL the CI runtime supports is answered by the policy enforcer's rewrite
(:meth:`pimento.policy.Enforcer.authorize`) on the cells the custodian's policy authorizes in the
context. Nothing is charged; the custodian's audit log gets a row (who asked what, in which
context; no count), and, for a database written by ``pimento ingest``, the texts the cells were
read from when the custodian lets them flow (:mod:`pimento.release.provenance`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pimento.release.answers import Answer
from pimento.release.enforcement import enforcer_for
from pimento.release.modes.base import Mode
from pimento.release.provenance import audit_trace
from pimento.sensitivity.neighbourhood import Neighbourhood

if TYPE_CHECKING:
    from pimento.engines.base import Engine
    from pimento.release.admission import Admitted
    from pimento.release.ask import SearchOutcome
    from pimento.release.modes.base import Private
    from pimento.schema import Catalog

__all__ = ["CI", "CiMode"]


class CiMode:
    """``--mode ci``."""

    name: str = Mode.CI
    spends = False
    needs_context = True
    neighbourhoods: tuple[Neighbourhood, ...] = ()
    guarantee = "contextual integrity: only cells the policy authorizes in this context, exact; no DP"
    end_to_end_kind = "contextual integrity"

    def guarantee_kind(self, neighbours: Neighbourhood | None) -> str | None:
        return self.guarantee

    def reading_on_copy(self, job: Admitted, outcome: SearchOutcome, synthetic: Engine, catalog: Catalog) -> tuple[str, float] | None:
        return None

    def release(self, private: Private, job: Admitted) -> Answer:
        """The exact answer on the authorized data; audited (who, what, context; no count)."""
        database = private.database
        assert job.policy is not None and job.context is not None  # admit refused a mode without them
        enforcer, context = enforcer_for(job.policy, job.context, database.engine, database.catalog)
        private.ledger.record_custodian_action(
            private.location, "ci_answer",
            {"analyst": job.analyst, "sql": job.sql, "question": job.question, "context": job.context.to_dict(),
             "policy": enforcer.compiled.name},
        )
        auth = enforcer.authorize(context, job.sql)
        shown = audit_trace(private, enforcer, context, job.sql, auth, analyst=job.analyst, spec=job.context)
        return Answer(mode=self.name, sql=job.sql, analyst=job.analyst, context=job.context, guarantee_kind=self.guarantee,
                      question=job.question, policy=enforcer.compiled.name, columns=auth.columns, rows=auth.rows, provenance=shown)


CI = CiMode()
