"""The policy enforcer of a release context: the custodian's compiled policy on an engine, the context checked.

One home for the step every mode with a context takes before anything is read: the compiled policy
(``[policy] compiled``, never the caller's) loaded, an :class:`pimento.policy.Enforcer` built on the
engine the mode reads (the private database at release time, the synthetic copy when a question is
interpreted), and the request's :class:`pimento.release.request.Context` checked against the policy's
principals and purposes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pimento.policy import Enforcer, load_compiled_policy

if TYPE_CHECKING:
    from pimento.engines.base import Engine
    from pimento.policy import Context as PolicyContext
    from pimento.release.request import Context
    from pimento.schema import Catalog

__all__ = ["enforcer_for"]


def enforcer_for(policy: str, context: Context, engine: Engine, catalog: Catalog) -> tuple[Enforcer, PolicyContext]:
    """The enforcer of the compiled ``policy`` on ``engine`` and ``context`` checked against it (no data read)."""
    enforcer = Enforcer(load_compiled_policy(policy), engine, catalog)
    return enforcer, enforcer.context(context.sender, context.recipient, context.purpose)
