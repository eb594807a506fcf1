"""The web page's sign-in sessions shared by every process of a deployment (``pimento serve --workers N``).

:class:`pimento.service.web.Sessions` keeps them in the process's memory: behind several workers a
browser signed in on one would be signed out on the next request another one serves.
:class:`SharedSessions` has the same interface and keeps them in the service's shared state
(:func:`pimento.service.shared_limits.state_store_for`): each row holds the role, the key id, the
CSRF token and the expiry under the SHA-256 of the session id, never the id itself (a copy of the
file does not sign anyone in). Expired rows are removed when a session is opened.
"""

from __future__ import annotations

import hashlib
import secrets
import time

from pimento.service.shared_limits import SESSIONS_TABLE, Query, StateStore
from pimento.service.web import SESSION_SECONDS, WebSession

__all__ = ["SharedSessions"]


def _digest(sid: str) -> str:
    return hashlib.sha256(sid.encode("utf-8")).hexdigest()


class SharedSessions:
    """Sign-in sessions in ``store``, seen by every process that uses it (same methods as ``web.Sessions``)."""

    def __init__(self, store: StateStore) -> None:
        self.store = store

    def open(self, role: str, key_id: str | None) -> tuple[str, WebSession]:
        sid = secrets.token_urlsafe(32)
        session = WebSession(role, key_id, secrets.token_urlsafe(32), time.time() + SESSION_SECONDS)

        def body(query: Query) -> None:
            query(f"DELETE FROM {SESSIONS_TABLE} WHERE expires < ?", (time.time(),))
            query(f"INSERT INTO {SESSIONS_TABLE} (sid_sha256, role, key_id, csrf, expires) VALUES (?, ?, ?, ?, ?)",
                  (_digest(sid), session.role, session.key_id, session.csrf, session.expires))

        self.store.run(body)
        return sid, session

    def get(self, sid: str | None) -> WebSession | None:
        if not sid:
            return None

        def body(query: Query) -> WebSession | None:
            rows = query(f"SELECT role, key_id, csrf, expires FROM {SESSIONS_TABLE} WHERE sid_sha256 = ?", (_digest(sid),))
            if not rows:
                return None
            role, key_id, csrf, expires = rows[0]
            if float(expires) < time.time():
                query(f"DELETE FROM {SESSIONS_TABLE} WHERE sid_sha256 = ?", (_digest(sid),))
                return None
            return WebSession(str(role), key_id, str(csrf), float(expires))

        return self.store.run(body)

    def close(self, sid: str | None) -> None:
        if sid:
            self.store.run(lambda query: query(f"DELETE FROM {SESSIONS_TABLE} WHERE sid_sha256 = ?", (_digest(sid),)))
