"""A process's memo of the SQL answers the ledger's answer cache holds (issue 28, PERF6): the release of a repeat.

A repeated ``POST /v1/sql`` whose answer the ledger stores is free: the release returns the stored
answer and the current budget left. Finding it the release's way costs about 2 ms of one thread
(opening a session, admission, parsing the SQL, the answer cache's key, a ledger opened for the
request): most of a cached answer's CPU. :class:`AnswerMemo` remembers, per analyst and request,
what that path found, and answers a repeat with one ledger read:

- **Only what the ledger holds.** An entry is made after the release path answered with ``cached``
  true (the answer is stored; the ledger never deletes a stored answer and never changes it), for a
  count of SQL in mode ``dp`` whose cache key :func:`pimento.release.noise_check_cache.plain_count_key`
  gives (:meth:`Deployment.answered <pimento.service.deployment.Deployment.answered>`'s key). It holds
  the response without its budget figures, the ledger's key of the database, the answer's cache key
  and its charge id.
- **Scoped as the ledger's cache is.** The memo's key is the analyst and the request as the key makes it
  (``repr`` of :class:`pimento.release.Request`: SQL text, epsilon, delta, mode, bounds, the analyst
  again); the answer cache's own key names the analyst too. Another analyst never meets an entry.
- **Checked against the files.** Each entry carries the identities (device, inode, size, mtime) of the
  database file, its ``pimento.toml``, its deployment file, the SQLite ledger file and the synthetic copy
  at the time it was made; a repeat is answered from the memo only while all five are unchanged.
- **Read from the ledger, every time.** A hit reads, in one snapshot, the stored answer under the
  entry's key (it must still carry the entry's charge id), the ledger's fast integrity check and the
  halts (:meth:`pimento.mechanisms.ledger.Ledger.stored_answer`: what the release's own look-up,
  :meth:`~pimento.mechanisms.ledger.Ledger.charge_release`, reads first), then the budget left (:meth:`Ledger.remaining`), as the release
  does for a cached answer. Anything amiss, or anything the snapshot does not show, and the request
  takes the release path, which decides and refuses in its own words. No audit row is written on
  either path for a cached answer, and nothing is charged.

The memo is per process (each ``pimento serve`` worker has its own) and bounded (least recently used).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pimento.errors import UserError
from pimento.engines.database import FileStat, file_stat
from pimento.mechanisms.budget import format_number
from pimento.mechanisms.ledger_identity import database_keys, deployment_file
from pimento.release.noise_check_cache import KeptValues
from pimento.release.request import Mode

if TYPE_CHECKING:
    from pimento.mechanisms import Ledger
    from pimento.release import Request

__all__ = ["AnswerMemo", "MEMO_SIZE", "Identities", "identities"]

#: The most requests a process remembers (each entry is one answer's JSON, a few hundred bytes).
MEMO_SIZE = 4096

_Stat = FileStat | None
#: The identities of the files an entry depends on: database, pimento.toml, deployment file, ledger file, synthetic copy.
Identities = tuple[_Stat, _Stat, _Stat, _Stat, _Stat]


def identities(location: str, settings_file: Path | None, ledger_file: str | Path | None, copy: str | Path | None) -> Identities:
    """The identities of the database at ``location``, its ``settings_file``, its deployment file, ``ledger_file`` and the
    synthetic ``copy`` (None: no such file)."""
    return (file_stat(None if "://" in location else location), file_stat(settings_file), file_stat(deployment_file(location)),
            file_stat(ledger_file), file_stat(copy))


@dataclass(frozen=True)
class _Entry:
    """What the release path found for one request: the response without its budget figures, and where it is stored."""

    files: Identities
    database: str
    request_key: str
    charge_id: int
    response: str  # JSON: each hit gets its own copy


class AnswerMemo:
    """Per analyst and request, the stored answer the release path returned (module docs)."""

    def __init__(self, size: int = MEMO_SIZE) -> None:
        self._kept: KeptValues[_Entry] = KeptValues(size)

    @staticmethod
    def memo_key(analyst: str, request: Request) -> tuple[str, str]:
        """The memo's key: the analyst and the request (every field of it, the analyst included)."""
        return (analyst, repr(request))

    @staticmethod
    def applies(request: Request) -> bool:
        """Whether a request may be memoized: SQL in mode dp (no context, no policy)."""
        return request.sql is not None and request.question is None and request.mode == Mode.DP and request.context is None

    def remember(self, analyst: str, request: Request, response: Mapping[str, Any], *, request_key: str, location: str,
                 files: Identities) -> bool:
        """Keep ``response``, the release path's answer to ``request``, when it is a stored answer (``cached`` true) of a
        request the memo applies to; ``files``: the identities read before the release. Returns whether it was kept."""
        charge_id = response.get("charge_id")
        if not (self.applies(request) and response.get("cached") is True and isinstance(charge_id, int) and request_key
                and isinstance(response.get("budget_left"), Mapping)):
            return False
        try:
            database = database_keys(location)[0]
        except UserError:
            return False
        body = {**response, "budget_left": None}  # the figures are read anew for every answer (:meth:`answer`)
        self._kept.put(self.memo_key(analyst, request), _Entry(files, database, request_key, charge_id, json.dumps(body)))
        return True

    def find(self, analyst: str, request: Request, files: Identities) -> _Entry | None:
        """The entry of ``analyst``'s ``request`` made under the same ``files``, or None (nothing read but the memo)."""
        if not self.applies(request):
            return None
        entry = self._kept.get(self.memo_key(analyst, request))
        return entry if entry is not None and entry.files == files else None

    @staticmethod
    def answer(entry: _Entry, analyst: str, ledger: Ledger, *, location: str) -> dict[str, Any] | None:
        """The response to a repeat of ``entry``'s request, its budget figures read now from ``ledger``; None when the
        ledger's snapshot does not show the stored answer clean (module docs): the release path then decides."""
        stored = ledger.stored_answer(entry.database, entry.request_key)
        if stored is None or stored.get("charge_id") != entry.charge_id:
            return None
        left = ledger.remaining(location, analyst)
        response: dict[str, Any] = json.loads(entry.response)
        response["budget_left"] = {"epsilon": format_number(left.epsilon), "delta": format_number(left.delta)}
        return response

    def clear(self) -> None:
        self._kept.clear()

    @property
    def kept(self) -> int:
        """How many entries were made (the release path's stored answers remembered)."""
        return self._kept.computed
