"""The cache of readings: a question read on a synthetic copy once is not searched again.

:func:`pimento.release.interpretation.interpret_admitted` runs the search (about a second of CPU)
for every question. What the search and the mode's choice on the copy produce (the
:class:`~pimento.release.ask.SearchOutcome`, the chosen SQL, the contextual CRS, the Shapley
attribution; for a grouped or summed question its :class:`~pimento.release.aggregate_reading.GroupedReading`,
which an entry always carries, None for a count, so that a reading is served as the kind it was made) depends only on public inputs and the synthetic copy, all named in the key
(:func:`reading_key`): the question's exact text, the mode, the context, the policy file (path and
bytes), the mechanism (its beta steers the search), the search options (k, rollouts, seed, warm-start
SQL, LLM), the copy (its ``copy_id``), the database it charges, the public catalog, the custodian's
settings and the code's version. A cached reading is therefore the reading the search would have
made again (the search is seeded; with an LLM, the reading first made). Nothing private is in it,
and the release itself is never cached here: the admission, the copy's charge check, the charge
and the noise run for every request (the ledger's answer cache is the only cache of answers).

The key names the analyst too, though the reading does not depend on them: a reading shared
between analysts would answer one analyst's ask faster when another asked the same question
before, and the time of an answer would tell them what the other asked (not one of the things an
analyst may learn, docs/analyst-learns.md). So an analyst reuses their own readings only: the
preview and then the ask of the same question (the web page's flow), an ask repeated, on any worker.

It is used where a caller turns it on (:func:`shared_readings`: the service does, for its ask
and preview); the CLI and the library search every time. The entries live in a SQLite file beside
the synthetic copy (``<copy>.readings.sqlite``, mode 0600), so every worker process reading that
copy shares them, a new copy (another ``copy_id``) never meets an old entry, and a machine with
its own copy keeps its own file; the ledger's database is not used, since its file is
``synchronous = FULL`` and every write there takes the lock the charges need. The entries are
pickles written by this code only, in a file only the custodian's account can write (like the
copy itself, whose bytes steer the search anyway); one that cannot be read is a miss.
"""

from __future__ import annotations

import hashlib
import pickle
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pimento import __version__
from pimento.mechanisms import audit as _audit

if TYPE_CHECKING:
    from pimento.config import Settings
    from pimento.mechanisms.smooth import Mechanism
    from pimento.release.admission import Admitted
    from pimento.schema import Catalog

__all__ = ["READINGS_SUFFIX", "ReadingStore", "cached_reading", "enabled", "reading_key", "reading_parts", "shared_readings",
           "store_for"]

#: the file of readings beside a synthetic copy: ``<copy><READINGS_SUFFIX>``
READINGS_SUFFIX = ".readings.sqlite"
#: the format of the stored entries (bumped when what is pickled changes; "2": an entry carries the grouped reading,
#: None for a count, so an entry of format "1" is never read as either kind)
_FORMAT = "2"

_ENABLED: ContextVar[bool] = ContextVar("pimento_shared_readings", default=False)


@contextmanager
def shared_readings() -> Iterator[None]:
    """Within this block (this thread or task), readings are looked up and stored in the cache."""
    token = _ENABLED.set(True)
    try:
        yield
    finally:
        _ENABLED.reset(token)


def enabled() -> bool:
    return _ENABLED.get()


def _policy_digest(policy: str | None) -> str | None:
    if policy is None:
        return None
    try:
        return hashlib.sha256(Path(policy).read_bytes()).hexdigest()
    except OSError:
        return "unreadable"


def _plain(value: Any) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        return _plain(asdict(value))
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value if value is None or isinstance(value, (str, int, bool)) else str(value)


def reading_parts(job: Admitted, mechanism: Mechanism, catalog: Catalog, settings: Settings, *, copy_id: str, database: str) -> dict[str, Any]:
    """Everything a reading depends on, by name (the key is their hash: :func:`reading_key`)."""
    options = job.request.search
    return {
        "format": _FORMAT,
        "version": __version__,
        "question": job.question,
        "analyst": job.analyst,
        "mode": str(job.mode.name),
        "context": job.context.to_dict() if job.context is not None else None,
        "policy": job.policy,
        "policy_sha256": _policy_digest(job.policy),
        "neighbours": str(job.neighbours) if job.neighbours is not None else None,
        "mechanism": _plain(mechanism.describe()),
        "beta": repr(mechanism.beta_float()),
        "search": {"k": options.k, "config": _plain(options.config), "seed_sql": list(options.seed_sql), "llm": options.llm},
        # the analyst's narrowed clipping bounds: a grouped reading's plan and predicted error use them
        "bounds": _plain(getattr(job.request, "bounds", ())),
        "copy_id": copy_id,
        "database": database,
        "catalog": hashlib.sha256(_audit.canonical_json(_plain(catalog.to_dict())).encode()).hexdigest(),
        "settings": hashlib.sha256((settings.model_dump_json() + "\0" + settings.base_dir).encode()).hexdigest(),
    }


def reading_key(parts: dict[str, Any]) -> str:
    """The key of a reading: the SHA-256 of the canonical JSON of :func:`reading_parts`."""
    return hashlib.sha256(_audit.canonical_json(parts).encode()).hexdigest()


class ReadingStore:
    """The entries in one SQLite file (a connection per thread; WAL; losing the file loses nothing but time)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._local = threading.local()

    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            if not self.path.exists():
                self.path.touch(mode=0o600)
            conn = sqlite3.connect(str(self.path), timeout=30.0, isolation_level=None)
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("CREATE TABLE IF NOT EXISTS readings (key TEXT PRIMARY KEY, entry BLOB NOT NULL)")
            self._local.conn = conn
        return conn

    def get(self, key: str) -> Any | None:
        try:
            row = self._conn().execute("SELECT entry FROM readings WHERE key = ?", (key,)).fetchone()
            return pickle.loads(row[0]) if row is not None else None  # noqa: S301 - written by this code, a 0600 file
        except Exception:  # noqa: BLE001 - an unreadable entry or file is a miss: the search runs
            return None

    def put(self, key: str, entry: Any) -> None:
        try:
            self._conn().execute("INSERT OR REPLACE INTO readings (key, entry) VALUES (?, ?)", (key, pickle.dumps(entry)))
        except (sqlite3.Error, OSError, pickle.PicklingError):
            pass  # a cache that cannot be written costs time only


_STORES: dict[str, ReadingStore] = {}
_STORES_LOCK = threading.Lock()


def store_for(copy: str | Path) -> ReadingStore:
    """The store of readings beside the synthetic copy ``copy`` (one object per file per process)."""
    path = str(copy) + READINGS_SUFFIX
    with _STORES_LOCK:
        store = _STORES.get(path)
        if store is None:
            store = _STORES[path] = ReadingStore(path)
        return store


def cached_reading(store: ReadingStore, key: str, make: Any) -> Any:
    """The entry under ``key``, else ``make()`` stored under it."""
    entry = store.get(key)
    if entry is None:
        entry = make()
        store.put(key, entry)
    return entry
