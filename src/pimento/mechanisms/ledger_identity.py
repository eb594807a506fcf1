"""Which database a ledger row belongs to: the deployment id, stored with the database.

A database is identified in the ledger by the id of its deployment, stored with it in
``<database>.pimento-deployment.json`` (:func:`deployment_id`), not by its path: a copied or moved
deployment keeps its id, its ledger and its spend. Charges made under the path key before the id
existed (format 2 ledgers) count through the ``aliases`` of that file (:func:`database_keys`).
A server database is named by its DSN without credentials; its ledger path must be configured
(:func:`ledger_path`).

Within :func:`keys_read_once` (one request of the service) each database's deployment file is read
once: the keys found first are what every later look-up in the block returns (issue 28, PERF9).
Reading once is one of the schedules the reads could have had (the file changed, if at all, after
the last of them): the block writes no deployment file but a missing one, which its first read makes
and every later read would find as made. Nothing is kept across blocks.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from pimento.config import Settings
from pimento.errors import ConfigError, LedgerIntegrityError
from pimento.mechanisms.ledger_files import now, write_private
from pimento.mechanisms.ledger_witness import LEDGER_SUFFIX, read_witness, witness_path

__all__ = [
    "DEPLOYMENT_SUFFIX",
    "KEY_PREFIX",
    "database_key",
    "database_keys",
    "deployment_file",
    "deployment_id",
    "keys_read_once",
    "ledger_path",
]

#: Suffix of the file beside a database that holds its deployment id (``<database>.pimento-deployment.json``).
DEPLOYMENT_SUFFIX = ".pimento-deployment.json"
#: Prefix of the ledger key of a deployment (``deployment:<id>``).
KEY_PREFIX = "deployment:"
#: The keys of each deployment this process has looked up, for callers that pass a key on instead of the database.
_KNOWN_ALIASES: dict[str, tuple[str, ...]] = {}
#: Inside :func:`keys_read_once`: the keys each database was found to have in the block (None: outside one).
_READ_ONCE: ContextVar[dict[str, tuple[str, ...]] | None] = ContextVar("pimento_keys_read_once", default=None)


@contextmanager
def keys_read_once() -> Iterator[None]:
    """A block (one request) in which :func:`database_keys` reads each database's deployment file once
    (module docs); blocks do not nest their findings (an inner block reads again) and keep nothing after."""
    token = _READ_ONCE.set({})
    try:
        yield
    finally:
        _READ_ONCE.reset(token)


def ledger_path(database: str, settings: Settings | None = None) -> Path:
    """Where the ledger of ``database`` lives: ``[ledger] path`` or ``<database>.ledger.sqlite``."""
    if settings is not None and settings.ledger.path:
        return Path(settings.resolve(settings.ledger.path))
    if "://" in database:
        raise ConfigError(
            f"no ledger file for {database.split('@')[-1]}: a server database needs an explicit ledger path",
            hint='set path = "..." under [ledger] in pimento.toml',
        )
    return Path(f"{database}{LEDGER_SUFFIX}")


def deployment_file(database: str) -> Path | None:
    """The file beside a file database that holds its deployment id, or None for a server database."""
    if "://" in database or database == ":memory:":
        return None
    resolved = Path(database).resolve()
    return resolved.with_name(resolved.name + DEPLOYMENT_SUFFIX)


def _read_deployment(file: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        data = None
    if not isinstance(data, dict) or not isinstance(data.get("id"), str) or not data["id"].strip():
        raise LedgerIntegrityError(
            f"the deployment file {file} is unreadable: the database's budget cannot be identified; nothing was spent",
            hint=f"restore {file.name} from a backup (it names the deployment whose charges the ledger holds)",
        )
    aliases = data.get("aliases")
    data["aliases"] = [a for a in aliases if isinstance(a, str)] if isinstance(aliases, list) else []
    return data


def deployment_id(database: str, *, create: bool = True) -> str | None:
    """The id of the deployment ``database`` belongs to, stored WITH it in ``<database>.pimento-deployment.json``.

    Created (a random id) the first time a file database that exists is looked at, unless
    ``create`` is False; None for a server database, a file that does not exist, or a folder that
    cannot be written. A copied or moved deployment keeps its id, so its ledger keeps its charges.
    The file also lists ``aliases``: the keys its charges had before it had an id (its resolved
    path when the id was made), which still count against its budget (ledgers of format 2).
    """
    data = _deployment(database, create=create)
    return None if data is None else str(data["id"])


def _deployment(database: str, *, create: bool = True) -> dict[str, Any] | None:
    """The deployment file's contents (:func:`deployment_id`: made when missing, unless ``create`` is False), or None."""
    file = deployment_file(database)
    if file is None:
        return None
    data = _read_deployment(file)
    if data is not None:
        return data
    resolved = file.with_name(file.name[: -len(DEPLOYMENT_SUFFIX)])  # the resolved database (deployment_file)
    if not create or not resolved.is_file():
        return None
    _refuse_lost_deployment(resolved, file)
    data = {"id": uuid.uuid4().hex, "created": now(), "aliases": [str(resolved)]}
    tmp = file.with_name(f"{file.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        write_private(tmp, json.dumps(data, sort_keys=True, indent=1))
        try:
            os.link(tmp, file)  # never replaces an id another process wrote meanwhile
        except FileExistsError:
            pass
    except OSError:
        return None
    finally:
        tmp.unlink(missing_ok=True)
    return _read_deployment(file)


def _refuse_lost_deployment(resolved: Path, file: Path) -> None:
    """Before a new id is made: refuse (fail closed) when the witness beside the database records
    spending under a deployment id, i.e. the deployment file was deleted. A new id would start
    the budget again at zero."""
    witness = read_witness(witness_path(Path(f"{resolved}{LEDGER_SUFFIX}")))
    spent = (witness or {}).get("spent")
    lost = sorted(k for k in spent if isinstance(k, str) and k.startswith(KEY_PREFIX)) if isinstance(spent, dict) else []
    if lost:
        ident = lost[0][len(KEY_PREFIX):]
        raise LedgerIntegrityError(
            f"the deployment file {file} is missing, but the ledger's witness records spending under {lost[0]}: "
            "a new deployment id would start the budget again at zero; nothing was spent",
            hint=f'restore {file.name} from a backup, or write {{"id": "{ident}"}} into it',
        )


def database_key(database: str) -> str:
    """Identifier of a database in the ledger: ``deployment:<id>`` for a file database (the id stored
    with it, :func:`deployment_id`), the resolved path where no id can be stored, or the DSN
    without credentials for a server database."""
    return database_keys(database)[0]


def database_keys(database: str) -> tuple[str, ...]:
    """Every key under which charges of ``database`` are counted: :func:`database_key` first, then
    the aliases its deployment file lists (the path keys of ledgers written before the id)."""
    if "://" in database:
        scheme, rest = database.split("://", 1)
        return (f"{scheme}://{rest.rsplit('@', 1)[-1]}",)
    if database.startswith(KEY_PREFIX):  # already a key (callers may pass the key on)
        return _KNOWN_ALIASES.get(database, (database,))
    found = _READ_ONCE.get()
    keys = found.get(database) if found is not None else None
    if keys is None:
        keys = _read_keys(database)
        if found is not None:
            found[database] = keys
    return keys


def _read_keys(database: str) -> tuple[str, ...]:
    """:func:`database_keys` of a file database, read from its deployment file."""
    data = _deployment(database)  # read once (the id and its aliases)
    if data is None:
        return (str(Path(database).resolve()),)
    key = f"{KEY_PREFIX}{data['id']}"
    aliases = [a for a in data["aliases"] if a != key]
    keys = (key, *dict.fromkeys(aliases))
    _KNOWN_ALIASES[key] = keys
    return keys
