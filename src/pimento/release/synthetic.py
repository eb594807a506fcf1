"""The synthetic copy's part of the end-to-end guarantee.

A release that reads a synthetic copy (``ask``, ``search``: candidate SQL, accuracy estimates,
Shapley explanations) discloses what the copy discloses, so its guarantee is the composition
``(eps_syn + eps_rel, delta_syn + delta_rel)`` -- but only if the copy's spend was charged to the
same ledger as the releases. :func:`synthetic_guarantee` checks that: the copy's
``_pimento_synth_meta`` names a copy id and the key of the database it was made from, and the
ledger of *this* database must hold a synthetic charge under that copy id with the copy's
budget. It returns that budget and the declared-public inputs the copy took without noise, so
that every answer can state its guarantee and name them.

:func:`kept_guarantee` is the same check, reused in this process while none of the files it read changed
(the copy, the ledger file, the deployment file: their device, inode, size and mtime); the previews before
a spend call it (:func:`pimento.release.sql_preview.preview_sql`), the releases call
:func:`synthetic_guarantee` every time.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pimento.engines import Engine, open_engine
from pimento.engines.database import file_stat
from pimento.errors import PimentoError, SyntheticCopyError
from pimento.mechanisms.budget import Budget
from pimento.mechanisms.ledger import Ledger, database_key, database_keys, deployment_file
from pimento.synth import META_TABLE, synthesize
from pimento.synth.api import public_inputs

if TYPE_CHECKING:
    from pimento.engines.database import Database
    from pimento.mechanisms.budget import NumberLike
    from pimento.synth.api import SynthResult

__all__ = ["GUARANTEES_KEPT", "kept_guarantee", "make_copy", "merged", "open_checked_copy", "synthetic_guarantee"]

_REMAKE = "make a copy charged to this database's ledger: `pimento synth --db DB --out SYN.duckdb --epsilon E --delta D`"


def _meta(synthetic: str | Path | Engine) -> dict[str, Any]:
    engine = synthetic if hasattr(synthetic, "execute") else None
    opened = None
    if engine is None:
        path = Path(str(synthetic))
        if not path.exists():
            raise SyntheticCopyError(f"the synthetic database {path} does not exist", hint=_REMAKE)
        try:
            opened = engine = open_engine(str(path), read_only=True)
        except PimentoError:
            raise SyntheticCopyError(f"{path} cannot be opened as a synthetic database", hint=_REMAKE) from None
    assert engine is not None
    try:
        try:
            rows = engine.execute(f"SELECT epsilon, delta, root, copy_id, database_key, details FROM {META_TABLE}").rows
        except PimentoError:
            has_marker = True
            try:
                engine.execute(f"SELECT COUNT(*) FROM {META_TABLE}")
            except PimentoError:
                has_marker = False
            if has_marker:
                raise SyntheticCopyError(
                    f"{synthetic} was written by an older `pimento synth` that did not record a copy id: its spend cannot be matched with the ledger",
                    hint=_REMAKE,
                ) from None
            raise SyntheticCopyError(f"{synthetic} is not a synthetic database written by `pimento synth` (no {META_TABLE} table)", hint=_REMAKE) from None
    finally:
        if opened is not None:
            opened.close()
    if len(rows) != 1:
        raise SyntheticCopyError(f"{synthetic}: {META_TABLE} must hold exactly one row, it holds {len(rows)}", hint=_REMAKE)
    eps, dlt, root, copy_id, db_key, details = rows[0]
    try:
        parsed = json.loads(details) if isinstance(details, str) else dict(details or {})
    except (TypeError, ValueError):
        parsed = {}
    return {"epsilon": str(eps), "delta": str(dlt), "root": root, "copy_id": copy_id, "database": db_key, "details": parsed}


def synthetic_guarantee(ledger: Ledger, database: str, synthetic: str | Path | Engine) -> tuple[Budget, list[str]]:
    """The budget of the synthetic copy ``synthetic`` and the declared-public inputs it copied without noise.

    ``database`` is the resolved location the releases charge (``Session.location``); ``ledger`` its
    ledger. Raises :class:`SyntheticCopyError` (a UserError) when the copy was made from another
    database, or its charge is not in this ledger, or the charge's budget differs from the copy's.
    The end-to-end guarantee of a release of ``(eps_rel, delta_rel)`` that used the copy is
    ``(eps_syn + eps_rel, delta_syn + delta_rel)``, for neighbours that agree on the returned inputs.
    """
    meta = _meta(synthetic)
    key = database_key(database)
    # A copy made before the database had a deployment id names its old path key, which the
    # deployment file lists among its aliases: it is still this database's copy.
    if meta["database"] not in database_keys(database):
        raise SyntheticCopyError(
            f"the synthetic database {synthetic} was made from {meta['database']}, not from {key}: its spend is not part of this database's budget",
            hint=_REMAKE,
        )
    try:
        budget = Budget.from_text(meta["epsilon"], meta["delta"])
    except PimentoError:
        raise SyntheticCopyError(f"{synthetic}: the budget recorded in {META_TABLE} is unreadable", hint=_REMAKE) from None
    charge = ledger.synthetic_charge(database, meta["copy_id"])
    if charge is None:
        raise SyntheticCopyError(
            f"the synthetic database {synthetic} (copy {meta['copy_id']}) was not charged to the ledger {ledger.path} of {key}: "
            "an answer that used it could not state its guarantee",
            hint=_REMAKE,
        )
    if charge.budget != budget:
        raise SyntheticCopyError(
            f"the synthetic database {synthetic} says it cost {budget}, its ledger charge {charge.id} says {charge.budget}",
            hint=_REMAKE,
        )
    return budget, public_inputs(meta["details"])


#: How many verified guarantees :func:`kept_guarantee` keeps (all are dropped when full).
GUARANTEES_KEPT = 64
_VERIFIED: dict[Hashable, tuple[Budget, tuple[str, ...]]] = {}
_VERIFIED_LOCK = threading.Lock()


def _guarantee_key(ledger: Ledger, database: str, synthetic: Path) -> Hashable | None:
    """Everything :func:`synthetic_guarantee` reads, by identity: the database, the ledger file, the copy and the
    deployment file (which names the database's keys). None where a file's identity cannot stand for its contents
    (a PostgreSQL or in-memory ledger, a missing file): then nothing is kept."""
    if ledger.postgres:
        return None
    ledger_file, copy = file_stat(ledger.path), file_stat(synthetic)
    if ledger_file is None or copy is None:
        return None
    deployment = deployment_file(database)
    return (database, str(ledger.path), ledger_file, str(synthetic), copy, str(deployment),
            None if deployment is None else file_stat(deployment))


def kept_guarantee(ledger: Ledger, database: str, synthetic: Path) -> tuple[Budget, list[str]]:
    """:func:`synthetic_guarantee`, reused while none of the files it read changed (module docs).

    Only a verified guarantee is kept: the ledger's charges are append-only, so a charge found stays there while the
    ledger file is the same file, unrewritten (a file replaced or restored in place has another identity); a copy or
    deployment file that changed is a new key. A failure is raised and never kept (the next call checks again).
    """
    key = _guarantee_key(ledger, database, synthetic)
    if key is not None:
        with _VERIFIED_LOCK:
            found = _VERIFIED.get(key)
        if found is not None:
            return found[0], list(found[1])
    budget, inputs = synthetic_guarantee(ledger, database, synthetic)
    if key is not None and _guarantee_key(ledger, database, synthetic) == key:  # nothing changed while it was read
        with _VERIFIED_LOCK:
            if len(_VERIFIED) >= GUARANTEES_KEPT:
                _VERIFIED.clear()
            _VERIFIED[key] = (budget, tuple(inputs))
    return budget, inputs


def open_checked_copy(ledger: Ledger, database: str, synthetic: Path) -> tuple[Budget, Engine]:
    """The copy's budget (:func:`kept_guarantee`) and the copy opened read-only, the file opened being the one
    whose charge was verified: when the copy's file changed meanwhile, checked again from the start
    (:func:`synthetic_guarantee` on the file then open). Raises :class:`SyntheticCopyError` as the check does."""
    before = file_stat(synthetic)
    budget, _inputs = kept_guarantee(ledger, database, synthetic)
    try:
        engine = open_engine(str(synthetic), read_only=True)
    except PimentoError:
        raise SyntheticCopyError(f"{synthetic} cannot be opened as a synthetic database", hint=_REMAKE) from None
    if before is not None and file_stat(synthetic) == before:
        return budget, engine  # the file verified is the file opened (its meta table was read by the check)
    try:
        budget, _inputs = synthetic_guarantee(ledger, database, engine)
    except BaseException:
        engine.close()
        raise
    return budget, engine


def merged(declared: list[str] | tuple[str, ...], extra: list[str] | tuple[str, ...] | str | None) -> list[str]:
    """The custodian's declared entries, then ``extra`` (a list, or comma-separated text); duplicates dropped."""
    more = extra.split(",") if isinstance(extra, str) else list(extra or ())
    out: list[str] = []
    for item in [*declared, *more]:
        item = item.strip()
        if item and item not in out:
            out.append(item)
    return out


def make_copy(
    database: Database,
    out: str | Path,
    epsilon: NumberLike,
    delta: NumberLike,
    *,
    root: str | None = None,
    seed: int = 0,
    link_context: list[str] | tuple[str, ...] | str | None = None,
    public_values: list[str] | tuple[str, ...] | str | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> SynthResult:
    """A synthetic copy of ``database`` (opened by :func:`pimento.engines.database.load_database`) at
    ``out``, charged to the ledger the releases of that database charge, under its custodian's
    ``[privacy] root`` and ``[synth]`` declarations (``link_context`` and ``public_values`` add to
    them). ``pimento synth`` and the service's ``POST /v1/synth`` both call this. Returns the
    :class:`pimento.synth.api.SynthResult` (its engine open on the copy: close it).
    """
    location = str(database.location)  # the resolved database: the key the releases charge
    declared = database.settings.synth
    ledger = Ledger.for_database(location, database.settings)
    try:
        return synthesize(
            database.engine, database.catalog, out, epsilon, delta, root=root or database.settings.privacy.root, seed=seed,
            progress=progress, link_context=merged(declared.link_context, link_context),
            public_values=merged(declared.public_values, public_values), caps=dict(declared.caps) or None,
            ledger=ledger, database=location,
        )
    finally:
        ledger.close()
