"""The analyst path: one request, one interpretation, one module per release mode, one answer.

* :class:`Request` (:mod:`.request`): a question or SQL with its budget, analyst, :class:`Mode`,
  :class:`Context`, :class:`Neighbourhood`, :class:`SearchOptions` and confirmed SQL, frozen and
  validated; every edge (CLI, service, web page) builds one.
* :func:`interpret` (:mod:`.interpretation`): what a question will be answered as, found on the
  synthetic copy with the catalog and public inputs only (:class:`Interpretation`, the epsilon
  :func:`planner`).
* :mod:`.modes`: the release modes (ci, dp, split, contextual), one module each behind
  :class:`~pimento.release.modes.ReleaseMode`, registered by name.
* :class:`Session` (:mod:`.session`): a private database under its custodian's settings and ledger;
  :meth:`Session.answer` admits a request (:mod:`.admission`), reads a question, and lets its mode
  release it, returning an :class:`Answer` (:mod:`.answers`).
* Beside them: the search on the synthetic copy (:mod:`.ask`), the copy's part of the guarantee
  (:mod:`.synthetic`), clamping (:mod:`.clamp`), provenance of CI answers (:mod:`.provenance`).

The names load on first use, so that importing this package (or one of its modules) stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pimento._lazy import lazy_face as _lazy_face

if TYPE_CHECKING:
    from pimento.release.answers import Answer
    from pimento.release.interpretation import Interpretation, interpret, planner
    from pimento.release.modes import Mode
    from pimento.release.request import Context, Neighbourhood, Request, SearchOptions
    from pimento.release.session import Session

__all__ = [
    "Answer",
    "Context",
    "Interpretation",
    "Mode",
    "Neighbourhood",
    "Request",
    "SearchOptions",
    "Session",
    "interpret",
    "planner",
]

_HOMES = {
    "Answer": "answers",
    "Context": "request",
    "Interpretation": "interpretation",
    "Mode": "modes",
    "Neighbourhood": "request",
    "Request": "request",
    "SearchOptions": "request",
    "Session": "session",
    "interpret": "interpretation",
    "planner": "interpretation",
}


__getattr__, __dir__ = _lazy_face(__name__, _HOMES, globals(), __all__)
