"""Analysts' API keys: issued by the custodian, stored hashed beside the ledger, checked in constant time.

A key is ``pmk_<id>_<secret>``: ``id`` (8 hex digits) names the key in listings and revocations,
``secret`` is 32 random bytes (``secrets.token_urlsafe``). The file ``<ledger>.keys.json`` holds,
per key, its id, the analyst it speaks for, the principal of the policy it stands for (the
recipient in contextual-integrity mode, e.g. ``employee:17``), the senders and purposes the
custodian bound it to (the rest of the context of modes ci, split and contextual), when it was made
and revoked, and the SHA-256 of the whole key; never the key itself. The file is written atomically with mode 0600
under an advisory lock (``<keys file>.lock``), and a running service re-reads it when it changes,
so ``pimento keys revoke`` takes effect on the next request.

:meth:`KeyStore.verify` hashes the presented key and compares it with every active key's hash
with :func:`hmac.compare_digest`, without stopping at the first match: how long it takes does not
depend on which key (if any) matched. The key fixes who the analyst is; no request can name
another analyst. It fixes the context too: the recipient is its principal, and a request may only
pick among its senders and purposes (:meth:`ApiKey.choose`), never name others. Entries written
before keys carried senders and purposes still load, bound to none: such a key serves mode dp only.
"""

from __future__ import annotations

import fcntl
import hashlib
import hmac
import json
import os
import re
import secrets
import threading
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pimento.errors import ConfigError, ContextNotAllowedError, KeyStoreError, ModeError
from pimento.release.request import context_value

__all__ = ["ApiKey", "KeyStore", "keys_path", "PRINCIPAL_PATTERN"]

KEY_PREFIX = "pmk_"
FORMAT = 1
#: ``kind:id`` as the policy names principals (``employee:17``, ``researcher:r3``).
PRINCIPAL_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*:[A-Za-z0-9_.\-]+$")
_ANALYST_PATTERN = re.compile(r"^[A-Za-z0-9_.@\-]{1,64}$")


REISSUE = ("ask the custodian to re-issue your key bound to a context: "
           "`pimento keys add --principal KIND:ID --sender KIND:ID --purpose NAME`")


def keys_path(ledger_file: str | Path) -> Path:
    """The custodian's key file kept beside a ledger: ``<ledger>.keys.json``."""
    return Path(f"{ledger_file}.keys.json")


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _names(value: Any) -> tuple[str, ...]:
    """A stored list of senders or purposes (absent in entries written before keys carried them)."""
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TypeError("not a list of names")
    return tuple(value)


def _unique(values: Iterable[str] | None) -> tuple[str, ...]:
    """``values`` without repeats, in the order given."""
    return tuple(dict.fromkeys(values or ()))


@dataclass(frozen=True)
class ApiKey:
    """One issued key as stored (without the key): who it speaks for."""

    id: str
    analyst: str
    principal: str | None
    created: str
    revoked: str | None
    sha256: str
    #: the senders the custodian bound the key to (``KIND:ID``); empty on keys issued without them
    senders: tuple[str, ...] = ()
    #: the purposes the analyst may declare with this key; empty on keys issued without them
    purposes: tuple[str, ...] = ()

    @property
    def active(self) -> bool:
        return self.revoked is None

    @property
    def bound(self) -> bool:
        """Whether the key carries a whole context (principal, senders, purposes): modes ci, split, contextual."""
        return self.principal is not None and bool(self.senders) and bool(self.purposes)

    def context(self) -> dict[str, Any]:
        """The context the custodian bound the key to (what ``/v1/me`` shows)."""
        return {"recipient": self.principal, "senders": list(self.senders), "purposes": list(self.purposes)}

    def choose(self, field: str, asked: str | None) -> str:
        """The ``field`` (``sender`` or ``purpose``) of a request's context: ``asked`` if the key is bound
        to it, the key's only one if ``asked`` is None; anything else is refused without echoing ``asked``."""
        allowed = self.senders if field == "sender" else self.purposes
        if not self.bound:
            raise ContextNotAllowedError("this key is bound to no context (sender and purpose), so it serves mode dp only", hint=REISSUE)
        if asked is None:
            if len(allowed) == 1:
                return allowed[0]
            raise ModeError(f"this key is bound to several {field}s: name one", hint=f"{field}: one of {', '.join(allowed)}")
        if asked not in allowed:
            raise ContextNotAllowedError(
                f"the {field} named is not one this key is bound to",
                hint=f"your key's {field}s: {', '.join(allowed)}; for another, ask the custodian for a key bound to it",
            )
        return asked

    def to_dict(self) -> dict[str, Any]:
        """The listing a custodian sees (no hash)."""
        return {"id": self.id, "analyst": self.analyst, "principal": self.principal, "senders": list(self.senders),
                "purposes": list(self.purposes), "created": self.created, "revoked": self.revoked}


class KeyStore:
    """The key file of one deployment; safe to share between processes (lock + atomic replace)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._stamp: tuple[int, int] | None = None
        self._keys: list[ApiKey] = []

    # ------------------------------------------------------------------ reading

    def _file_stamp(self) -> tuple[int, int] | None:
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return None
        return (st.st_mtime_ns, st.st_size)

    def _read(self) -> list[ApiKey]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as exc:
            raise ConfigError(f"the key file {self.path} is unreadable: {exc}", hint="restore it from a backup") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("keys"), list):
            raise ConfigError(f"the key file {self.path} is not a Pimento key file (format {FORMAT})")
        out = []
        for item in data["keys"]:
            try:
                out.append(ApiKey(str(item["id"]), str(item["analyst"]), item.get("principal"), str(item["created"]), item.get("revoked"),
                                  str(item["sha256"]), _names(item.get("senders")), _names(item.get("purposes"))))
            except (KeyError, TypeError, AttributeError):
                raise ConfigError(f"the key file {self.path} has a malformed entry") from None
        return out

    def keys(self) -> list[ApiKey]:
        """Every key issued (revoked ones included), re-read when the file changed."""
        with self._lock:
            stamp = self._file_stamp()
            if stamp != self._stamp:
                self._keys = self._read()
                self._stamp = stamp
            return list(self._keys)

    def verify(self, presented: str | None) -> ApiKey | None:
        """The active key ``presented`` is, or None. Constant time in which key matched."""
        if not presented:
            return None
        digest = _digest(presented)
        found: ApiKey | None = None
        for key in self.keys():
            equal = hmac.compare_digest(digest, key.sha256)
            if equal and key.active and found is None:
                found = key
        return found

    def get(self, key_id: str) -> ApiKey | None:
        return next((k for k in self.keys() if k.id == key_id), None)

    # ------------------------------------------------------------------ writing

    def _update(self, change) -> Any:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        lock_file = Path(f"{self.path}.lock")
        with open(lock_file, "a", encoding="utf-8") as lock:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            keys = self._read()
            keys, result = change(keys)
            payload = {
                "format": FORMAT,
                "note": "Pimento API keys (SHA-256 of each key, never the key); custodian file, keep private",
                "keys": [{**k.to_dict(), "sha256": k.sha256} for k in keys],
            }
            tmp = self.path.with_name(self.path.name + f".tmp{os.getpid()}")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(payload, fh, indent=2)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
        with self._lock:
            self._stamp = None
        return result

    @staticmethod
    def check_form(analyst: str, principal: str | None, senders: Iterable[str] = (), purposes: Iterable[str] = ()) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The form of a key's names (not whether the policy knows them): the senders and purposes without repeats."""
        if not _ANALYST_PATTERN.match(analyst or ""):
            raise KeyStoreError(
                f"invalid analyst name {analyst!r}", hint="1 to 64 letters, digits or . _ - @ (the name charged in the ledger)"
            )
        bound_senders, bound_purposes = _unique(senders), _unique(purposes)
        for value in (principal, *bound_senders):
            if value is not None and not PRINCIPAL_PATTERN.match(value):
                raise KeyStoreError(f"invalid principal {value!r}", hint="KIND:ID as the policy names principals, e.g. employee:17")
        for value in bound_purposes:
            try:
                context_value("purpose", value)
            except ModeError:
                raise KeyStoreError(f"invalid purpose {value!r}", hint="a purpose as the policy names it, e.g. treatment") from None
        if (bound_senders or bound_purposes) and not (principal and bound_senders and bound_purposes):
            raise KeyStoreError("a key bound to a context needs its principal, at least one sender and at least one purpose",
                                hint="give --principal KIND:ID --sender KIND:ID --purpose NAME together (or no sender and purpose for a dp-only key)")
        return bound_senders, bound_purposes

    def add(self, analyst: str, principal: str | None = None, senders: Iterable[str] = (), purposes: Iterable[str] = ()) -> tuple[ApiKey, str]:
        """Issue a key for ``analyst`` (standing for ``principal``, bound to ``senders`` and ``purposes``):
        the stored entry and the key, shown once. The custodian checks the names against the policy
        first (:meth:`pimento.service.deployment.Deployment.add_key`); here only their form (:meth:`check_form`)."""
        bound_senders, bound_purposes = self.check_form(analyst, principal, senders, purposes)

        def change(keys: list[ApiKey]):
            taken = {k.id for k in keys}
            key_id = secrets.token_hex(4)
            while key_id in taken:
                key_id = secrets.token_hex(4)
            secret = f"{KEY_PREFIX}{key_id}_{secrets.token_urlsafe(32)}"
            entry = ApiKey(key_id, analyst, principal, _now(), None, _digest(secret), bound_senders, bound_purposes)
            return [*keys, entry], (entry, secret)

        return self._update(change)

    def revoke(self, key_id: str) -> ApiKey:
        """Revoke a key by id (it stays listed, marked revoked); an unknown or revoked id is an error."""

        def change(keys: list[ApiKey]):
            out, hit = [], None
            for k in keys:
                if k.id == key_id:
                    if not k.active:
                        raise KeyStoreError(f"key {key_id} was already revoked on {k.revoked}")
                    k = replace(k, revoked=_now())
                    hit = k
                out.append(k)
            if hit is None:
                raise KeyStoreError(f"no key with id {key_id!r}", hint="`pimento keys list --db DB` shows the ids")
            return out, hit

        return self._update(change)
