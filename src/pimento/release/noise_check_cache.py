"""What makes the mostly-noise check before a spend cheap: the previews it already made, and the answers already paid for.

:func:`pimento.release.sql_preview.noise_check` runs before every spend that did not say ``accept_noise``;
its preview reads the synthetic copy (the planner's residual sensitivity on the copy: about 0.2 s). Two
things let a caller skip that work without changing the decision:

- :data:`PREVIEWS`, a bounded, thread-safe LRU of the previews made in this process, under a key the caller
  builds from everything the preview reads (the request's SQL or question, epsilon, delta, mode, context,
  bounds, the analyst, and the synthetic copy's file identity: a new copy is a new key). A preview reads
  public inputs and the synthetic copy only, so the same key gives the same preview; the decision
  (:func:`pimento.release.accuracy.refuse_mostly_noise`) is still made on it at every request. Previews
  that failed are not kept (the release refuses those in its own words).
- :func:`plain_count_key`: the answer cache's key (:func:`pimento.mechanisms.guarded.answer_key`) that the
  release of a count of SQL computes in a noisy mode (:meth:`pimento.release.modes.noisy.NoisyMode.job_cache_key`:
  ``dp``, or ``split`` / ``contextual`` with their policy and context), or under the deployment's person unit
  (:func:`pimento.release.person_release.cache_mode`), known before the release from public inputs; and
  :func:`aggregate_key`, a grouped or summed query's (its plan's, :func:`pimento.release.aggregate.plan`). When
  the ledger holds an answer under it, the release returns that answer and spends nothing: no warning is owed,
  and the check is skipped (a cached answer is never refused). A question's release is stored under its
  reading's SQL, so the service asks the same of the reading its preview chose.
  ``tests/unit/service/test_noise_check_cache.py`` and ``tests/unit/release/test_person_preview.py`` pin that
  these keys are the release's.
- :func:`aggregate_syntax` and :func:`parsed_count`: the SQL's syntax (grouped or summed?) and its counting query on
  the public catalog, kept per SQL text (and catalog object) so that the check's steps parse it once. Both are
  functions of the text and the catalog alone; a parse that fails is raised and never kept.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from functools import lru_cache
from collections.abc import Hashable, Mapping
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pimento.mechanisms.budget import Budget
from pimento.mechanisms.guarded import answer_key
from pimento.mechanisms.ledger import request_key
from pimento.policy.compiled import load_compiled_policy
from pimento.release.admission import admit
from pimento.release.aggregate import looks_aggregate
from pimento.sql import parse_count_query

if TYPE_CHECKING:
    from pimento.config import Settings
    from pimento.sql import CountQuery
    from pimento.mechanisms.ledger import Ledger
    from pimento.release.session import Session
    from pimento.release.request import Request
    from pimento.schema import Catalog

__all__ = ["PREVIEWS", "PREVIEWS_KEPT", "KeptValues", "PreviewMemo", "aggregate_key", "aggregate_syntax", "parsed_count", "plain_count_key"]

V = TypeVar("V")

#: How many previews :data:`PREVIEWS` keeps (the least recently used is dropped first).
PREVIEWS_KEPT = 512


class KeptValues(Generic[V]):
    """A bounded LRU, safe across request threads; ``computed`` counts the values put (the misses)."""

    def __init__(self, size: int = PREVIEWS_KEPT) -> None:
        self.size = size
        self.computed = 0
        self._kept: OrderedDict[Hashable, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> V | None:
        """The value kept under ``key`` (now the most recently used), or None."""
        with self._lock:
            value = self._kept.get(key)
            if value is not None:
                self._kept.move_to_end(key)
            return value

    def put(self, key: Hashable, value: V) -> None:
        """Keep ``value`` under ``key``, dropping the least recently used beyond :attr:`size`."""
        with self._lock:
            self.computed += 1
            self._kept[key] = value
            self._kept.move_to_end(key)
            while len(self._kept) > self.size:
                self._kept.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._kept.clear()
            self.computed = 0


#: A bounded LRU of previews (module docs).
PreviewMemo = KeptValues[Mapping[str, Any]]

#: The previews of this process (:func:`pimento.release.sql_preview.noise_check` with a ``memo`` key).
PREVIEWS: PreviewMemo = KeptValues()


@lru_cache(maxsize=PREVIEWS_KEPT)
def aggregate_syntax(sql: str) -> bool:
    """:func:`pimento.release.aggregate.looks_aggregate`, kept per SQL text (module docs)."""
    return looks_aggregate(sql)


#: The counting queries parsed (:func:`parsed_count`), with the catalog each was parsed on (held: its id stays its own).
_PARSED: KeptValues[tuple[Catalog, CountQuery]] = KeptValues(128)


def parsed_count(sql: str, catalog: Catalog, *, max_chars: int) -> CountQuery:
    """:func:`pimento.sql.parse_count_query` of ``sql`` on ``catalog``, kept per (text, catalog object, limit): the
    query is frozen and a function of those alone (module docs). Raises what the parse raises (never kept)."""
    key = (sql, id(catalog), max_chars)
    found = _PARSED.get(key)
    if found is not None and found[0] is catalog:
        return found[1]
    query = parse_count_query(sql, catalog, max_chars=max_chars)
    _PARSED.put(key, (catalog, query))
    return query


def plain_count_key(request: Request, *, catalog: Catalog, settings: Settings, ledger: Ledger, location: str,
                    analyst: str, dialect: str) -> str | None:
    """The answer cache's key the release of ``request`` will use, when it is a count of SQL (not grouped or summed)
    in a noisy mode: ``dp``, ``split`` or ``contextual`` (the mode's part from
    :meth:`~pimento.release.modes.noisy.NoisyMode.job_cache_key`), under the tuple unit or the deployment's person unit
    (its part from :func:`~pimento.release.person_release.cache_mode`); None otherwise (module docs). Public inputs
    only (the SQL parsed on the public schema, the mechanism's cost, the compiled policy's name); raises what
    admission raises (then the release refuses it too, before any charge)."""
    if request.sql is None or request.question is not None or aggregate_syntax(request.sql):
        return None
    job = admit(request, settings=settings, ledger=ledger, analyst=analyst)
    job_cache_key = getattr(job.mode, "job_cache_key", None)
    if job.mechanism is None or job_cache_key is None:
        return None
    query = parsed_count(request.sql, catalog, max_chars=settings.database.max_sql_chars)
    sql = query.to_sql(dialect)
    unit = settings.privacy.person_unit
    if unit is not None:
        if job.mode.name != "dp" or request.epsilon is None:
            return None  # refused before the charge under the person unit
        from pimento.release.person_release import cache_mode, plan_person_release  # the person unit's one home

        cost = plan_person_release(query, catalog=catalog, settings=settings, epsilon=Budget.spend(request.epsilon).epsilon,
                                   copy=None).cost
        return request_key(database=location, analyst=job.analyst, sql=sql, mode=cache_mode(job.mode.name, unit),
                           epsilon=cost.epsilon, delta=cost.delta if cost.delta else None)
    policy_name = None if job.policy is None else load_compiled_policy(job.policy).name
    return answer_key(job.mechanism.for_relations(len(query.relations)), analyst=job.analyst, database=location,
                      sql=sql, mode=job_cache_key(job, policy_name))


def aggregate_key(request: Request, private: Session) -> str | None:
    """The answer cache's key the release of the grouped or summed SQL ``request`` in ``private`` (the deployment's
    session of the analyst) will use: its plan's (:func:`pimento.release.aggregate.plan`, public inputs and the
    synthetic copy only); None when its mode releases no aggregate. Raises what admission and the plan raise (the
    release refuses it too, before any charge)."""
    settings = private.database.settings
    job = admit(request, settings=settings, ledger=private.ledger, analyst=private.analyst)
    if job.mechanism is None or not getattr(job.mode, "aggregates", False) or settings.privacy.person_unit is not None:
        return None
    from pimento.release.aggregate import plan  # the aggregate release's one home

    planned = plan(private, job)
    cost = planned.cost
    return request_key(database=private.location, analyst=job.analyst, sql=planned.sql, mode=planned.cache_mode(job.mode.name),
                       epsilon=cost.epsilon, delta=cost.delta if cost.delta else None)
