"""Opening the budget ledger of a database from the CLI (shared by budget and audit)."""

from __future__ import annotations

from pathlib import Path

from pimento.config import Settings, find_settings_file, load_settings
from pimento.engines.database import _is_dsn, _locate  # the resolution load_database uses (folder, pimento.toml, links)
from pimento.errors import DataSourceError
from pimento.mechanisms import Ledger, ledger_path
from pimento.mechanisms.ledger import check_witness

__all__ = ["ledger_for", "settings_for"]


def settings_for(db: str, config: str | None) -> Settings:
    """pimento.toml given with --config, else the one beside the database, else defaults."""
    if config:
        return load_settings(config)
    found = find_settings_file(db) if "://" not in db else None
    return load_settings(found)


def ledger_for(db: str, config: str | None, *, create: bool = True) -> tuple[Ledger, Path | str, bool, str]:
    """(ledger, its path (a PostgreSQL ledger's redacted URL), whether the file existed, the resolved database location).

    ``db`` is resolved as every release resolves it (a folder or pimento.toml names its database
    file; a link is followed), so that this is the ledger the releases and ``pimento synth``
    charge. With ``create=False`` a missing ledger is opened in memory, so that looking at a
    budget never creates files -- unless the witness beside it says budget was spent: then the
    missing ledger is an error (LedgerIntegrityError).

    Raises:
        DataSourceError: the database file does not exist (a typo in ``--db``): named as missing
            before any ledger or deployment file is looked at or created.
    """
    location, settings, _source = _locate(db, config)
    _require_database(db, location)
    if settings.ledger.url:  # a PostgreSQL ledger: on the server, nothing to create here
        ledger = Ledger.for_database(location, settings)
        return ledger, ledger.name, True, location
    path = ledger_path(location, settings)
    check_witness(path)
    existed = path.exists()
    if existed or create:
        return Ledger(path, settings.ledger), path, existed, location
    return Ledger(":memory:", settings.ledger), path, False, location


def _require_database(db: str, location: str) -> None:
    """Raise DataSourceError when the database file ``db`` names (at ``location``) does not exist."""
    if _is_dsn(location) or location == ":memory:" or Path(location).exists():
        return
    shown = db if Path(db).absolute() == Path(location).absolute() else f"{db} ({location})"
    raise DataSourceError(
        f"database file not found: {shown}",
        hint="check --db: a ledger belongs to a database file that exists (nothing was read or created)",
    )
