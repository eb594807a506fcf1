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
  the response without its budget figures, the ledger's keys of the database, the answer's cache key
  and the stored answer it was made from.
- **Scoped as the ledger's cache is.** The memo's key is the analyst and the request as the key makes it
  (``repr`` of :class:`pimento.release.Request`: SQL text, epsilon, delta, mode, bounds, the analyst
  again); the answer cache's own key names the analyst too. Another analyst never meets an entry.
- **Checked against the files.** Each entry carries the identities (device, inode, size, mtime) of the
  database file, its ``pimento.toml``, its deployment file, the SQLite ledger file and the synthetic copy
  at the time it was made; a repeat is answered from the memo only while all five are unchanged, the ledger
  file by its device and inode (:func:`lasting`: its size and mtime move at every checkpoint of its WAL, and
  what the entry depends on in it is read on every hit).
- **Read from the ledger, every time.** A hit asks the ledger, in one snapshot, for the stored answer under
  the entry's key (it must still be the answer the entry was made from, to the last field), the ledger's fast
  integrity check, the halts and the budget left (:meth:`pimento.mechanisms.ledger.Ledger.stored_and_left`: what the release's own
  look-up, :meth:`~pimento.mechanisms.ledger.Ledger.charge_release`, reads first, then the budget the release
  reads for a cached answer). On a SQLite ledger kept open, a repeat after which nothing was committed to the
  ledger is answered from the last clean read's mark, one ``PRAGMA data_version`` and one ``stat`` of the
  witness (:mod:`pimento.mechanisms.ledger_clean`, which proves it the same). Anything amiss, or anything the
  snapshot does not show, and the request takes the release path, which decides and refuses in its own
  words. No audit row is written on either path for a cached answer, and nothing is charged.
- **Rendered once** (issue 28, PERF7). The entry keeps the response rendered as the service's JSON response
  renders it, around the budget figures; a hit puts the figures read now in (:meth:`AnswerMemo.answer_json`),
  instead of encoding the whole answer again.

The memo is per process (each ``pimento serve`` worker has its own) and bounded (least recently used).
"""

from __future__ import annotations

import functools
import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
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

__all__ = ["AnswerMemo", "MEMO_SIZE", "Identities", "identities", "lasting", "memo_paths", "render"]

#: The most requests a process remembers (each entry is one answer's JSON, a few hundred bytes).
MEMO_SIZE = 4096

_Stat = FileStat | None
#: The identities of the files an entry depends on: database, pimento.toml, deployment file, ledger file, synthetic copy.
Identities = tuple[_Stat, _Stat, _Stat, _Stat, _Stat]


def identities(database: str | Path | None, settings_file: Path | None, deployment: Path | None, ledger_file: str | Path | None,
               copy: str | Path | None) -> Identities:
    """The identities of the ``database`` file, its ``settings_file``, its ``deployment`` file (:func:`memo_paths`), ``ledger_file``
    and the synthetic ``copy`` (None: no such file, or no path)."""
    return (file_stat(database), file_stat(settings_file), file_stat(deployment), file_stat(ledger_file), file_stat(copy))


def lasting(files: Identities) -> Identities:
    """What an entry compares of ``files``: each identity in full but the ledger file's, by device and inode only (its
    size and mtime change at every WAL checkpoint; a file put in its place is another inode). What the entry depends
    on in the ledger, the stored answer, the integrity check, the halts and the budget, is read on every hit."""
    ledger = files[3]
    return (files[0], files[1], files[2], None if ledger is None else (ledger[0], ledger[1], 0, 0), files[4])


def memo_paths(location: str) -> tuple[str | None, Path | None]:
    """The database file and its deployment file for :func:`identities`, found once per process (the deployment file's
    path resolves the database's, a ``stat`` per folder): a server database has neither."""
    return (None if "://" in location else location), deployment_file(location)


#: The key of the budget figures in a response (read anew for every hit).
_BUDGET_SLOT = "budget_left"


def render(value: Any) -> str:
    """``value`` as the service's JSON responses render it (:class:`starlette.responses.JSONResponse`)."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":"))


@functools.lru_cache(maxsize=1024)
def _figures(epsilon: Fraction, delta: Fraction) -> str:
    """The budget figures of a response, rendered (the same few budgets come back hit after hit)."""
    return render({"epsilon": format_number(epsilon), "delta": format_number(delta)})


@dataclass(frozen=True)
class _Entry:
    """What the release path found for one request: the response rendered around its budget figures, and where it is stored."""

    files: Identities
    #: the database's ledger keys: its key, then its aliases (``database_keys``; the deployment file is among ``files``)
    keys: tuple[str, ...]
    request_key: str
    #: the answer the ledger stored under ``request_key`` when the entry was made
    stored: Mapping[str, Any]
    #: the rendered response before and after the budget figures' value
    head: str
    tail: str


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
                 files: Identities, stored: Mapping[str, Any] | None) -> bool:
        """Keep ``response``, the release path's answer to ``request``, when it is a stored answer (``cached`` true) of a
        request the memo applies to; ``files``: the identities read before the release; ``stored``: the answer the ledger
        holds under ``request_key``, read after it (None: none). Returns whether it was kept."""
        charge_id = response.get("charge_id")
        if not (self.applies(request) and response.get("cached") is True and isinstance(charge_id, int) and request_key
                and stored is not None and stored.get("charge_id") == charge_id and isinstance(response.get(_BUDGET_SLOT), Mapping)):
            return False
        try:
            keys = database_keys(location)
        except UserError:
            return False
        slot = f"pimento-memo-{uuid.uuid4().hex}"  # the figures are read anew for every answer (:meth:`answer_json`)
        try:
            text = render({**response, _BUDGET_SLOT: slot})
        except (TypeError, ValueError):
            return False  # not plain JSON (the service's encoder would convert it): the release path answers repeats
        head, found, tail = text.partition(render(slot))
        if not found or found in tail:
            return False
        self._kept.put(self.memo_key(analyst, request), _Entry(lasting(files), keys, request_key, stored, head, tail))
        return True

    def find(self, analyst: str, request: Request, files: Identities) -> _Entry | None:
        """The entry of ``analyst``'s ``request`` made under the same ``files``, or None (nothing read but the memo)."""
        if not self.applies(request):
            return None
        entry = self._kept.get(self.memo_key(analyst, request))
        return entry if entry is not None and entry.files == lasting(files) else None

    @staticmethod
    def answer_json(entry: _Entry, analyst: str, ledger: Ledger) -> bytes | None:
        """The response to a repeat of ``entry``'s request, rendered (JSON, UTF-8), its budget figures read now from
        ``ledger``; None when the ledger does not show the stored answer clean (module docs): the release path then
        decides."""
        found = ledger.stored_and_left(entry.keys, entry.request_key, analyst)
        if found is None or found[0] != entry.stored:
            return None
        return f"{entry.head}{_figures(found[1].epsilon, found[1].delta)}{entry.tail}".encode("utf-8")

    def clear(self) -> None:
        self._kept.clear()

    @property
    def kept(self) -> int:
        """How many entries were made (the release path's stored answers remembered)."""
        return self._kept.computed
