"""The free preview of a SQL request for an analyst's key (``POST /v1/sql/preview``, the SQL form of the web page).

The preview itself is :func:`pimento.release.sql_preview.preview_sql` (its one home: what the release
would cost and how accurate it is predicted to be, on the synthetic copy only, nothing spent); this
module makes the key's request (:meth:`Deployment.request`: the mode, the context, the analyst) and
reads the deployment's current synthetic copy under its swap lock, as the question's preview does. A
grouped or summed query's plan may read the public relations holding its groups: for it the database is
opened (a :class:`~pimento.release.session.Session`); a counting query's preview never opens it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pimento.release import Mode
from pimento.release.aggregate import looks_aggregate
from pimento.release.sql_preview import preview_sql

if TYPE_CHECKING:
    from pimento.service.deployment import Deployment
    from pimento.service.keys import ApiKey

__all__ = ["sql_preview"]


def sql_preview(deployment: Deployment, key: ApiKey, sql: str, epsilon: str | None, delta: str | None, *, mode: str = Mode.DP,
                sender: str | None = None, purpose: str | None = None, bounds: object = None) -> dict[str, Any]:
    """The preview of ``sql`` in ``mode`` for ``key`` (module docs); spends nothing, never opens the private database."""
    request = deployment.request(key, sql=sql, epsilon=epsilon, delta=delta, mode=mode, sender=sender, purpose=purpose, bounds=bounds)
    deployment.refresh_copy()  # a copy another process made since is read, as by the question's preview
    if looks_aggregate(sql):  # its plan reads the public relations that may hold the groups: the database is opened
        with deployment.synth_jobs.swap.shared(), deployment.session(key.analyst) as session:
            return session.preview_sql(request)
    with deployment.synth_jobs.swap.shared(), deployment.ledger() as ledger:
        return preview_sql(request, catalog=deployment.catalog, settings=deployment.settings, ledger=ledger,
                           location=deployment.location, analyst=key.analyst, synthetic=deployment.search.synthetic)
