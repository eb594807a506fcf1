"""``synthesize``: a DP synthetic copy of a relational database that keeps every declared constraint."""

from __future__ import annotations

import hashlib
import json
import os
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from pimento.engines import Engine, open_engine
from pimento.errors import DataSourceError
from pimento.mechanisms.budget import Budget
from pimento.mechanisms.ledger import database_key
from pimento.schema import Catalog
from pimento.synth._budget import Accountant, check_budget
from pimento.synth._mst import _mbi
from pimento.synth._units import unit_forest
from pimento.synth._state import Progress, start
from pimento.synth._write import META_TABLE, source_ddl, write_database
from pimento.synth.passes import run_passes
from pimento.synth.passes.build_entities import build_entities
from pimento.synth.passes.cap_fanout import cap_fanout
from pimento.synth.passes.decide_column_types import decide_column_types
from pimento.synth.passes.detect_ties import detect_ties
from pimento.synth.passes.encode_columns import encode_columns
from pimento.synth.passes.fit_models import fit_models
from pimento.synth.passes.measure_link_degrees import measure_link_degrees
from pimento.synth.passes.mint_keys_and_links import mint_keys_and_links
from pimento.synth.passes.read_public_directory import read_public_directory
from pimento.synth.passes.read_public_tables import read_public_tables
from pimento.synth.passes.read_tables import read_tables
from pimento.synth.passes.release_private_rows import release_private_rows
from pimento.synth.passes.repair_constraints import repair_constraints
from pimento.synth.passes.sample_rows import sample_rows

__all__ = ["PASSES", "SynthResult", "synthesize", "source_fingerprint", "META_TABLE", "guarantee_text", "public_inputs"]

#: The synthesis, pass by pass (PRIVACY.md explains what each measurement costs). Measuring
#: passes draw their noise from one generator in this order, so the order is part of the output.
PASSES = (
    read_tables,  # the private tables
    cap_fanout,  # parents, DP fan-out caps, units
    decide_column_types,  # DP tests of what TEXT (and untyped DATE) columns hold
    encode_columns,  # public domains, DP-selected categories
    measure_link_degrees,  # noisy in-degrees of links to private tables
    build_entities,  # the attributes of every entity model
    detect_ties,  # DP tests of copied values and total participation
    fit_models,  # DP marginal models
    read_public_directory,  # declared link context: the exact directory
    release_private_rows,  # the private rows are dropped: post-processing from here on
    sample_rows,
    read_public_tables,
    mint_keys_and_links,
    repair_constraints,
)


@dataclass
class SynthResult:
    """What :func:`synthesize` produced: the file, the spend, and an engine opened read-only on it."""

    path: str
    epsilon: Fraction
    delta: Fraction
    root: str
    seed: int
    engine: Engine
    rows: dict[str, int]
    seconds: float
    ledger_charge: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    copy_id: str = ""
    database: str = ""

    def public_inputs(self) -> list[str]:
        """The declared-public inputs copied WITHOUT noise (see :func:`public_inputs`)."""
        return public_inputs(self.details)

    def guarantee(self) -> str:
        """One sentence: what the copy is DP for, naming the inputs it copied without noise."""
        return guarantee_text(self.epsilon, self.delta, self.root, self.public_inputs())

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "epsilon": str(self.epsilon),
            "delta": str(self.delta),
            "root": self.root,
            "seed": self.seed,
            "rows": self.rows,
            "seconds": round(self.seconds, 2),
            "ledger_charge": self.ledger_charge,
            "copy_id": self.copy_id,
            "database": self.database,
            "guarantee": self.guarantee(),
            "public_inputs": self.public_inputs(),
            "details": self.details,
        }


def public_inputs(details: dict[str, Any]) -> list[str]:
    """What a synthetic copy took from the private database WITHOUT noise, because the custodian
    declared it public (``details`` as stored in ``_pimento_synth_meta``): declared public value
    sets, declared link context and the directories it makes public, and public tables."""
    out = [f"the set of values occurring in {c} (declared public values)" for c in details.get("public_values") or []]
    out += [f"{c} of the rows that links point at (declared link context)" for c in details.get("link_context") or []]
    for table, info in sorted((details.get("public_directory") or {}).items()):
        cols = ", ".join(info.get("columns") or []) if isinstance(info, dict) else ""
        out.append(f"the directory of {table}: its number of rows per value of ({cols}) (declared link context)")
    layout = details.get("plan")
    tables = layout.get("tables") if isinstance(layout, dict) else None
    if isinstance(tables, dict):
        for table, info in sorted(tables.items()):
            if isinstance(info, dict) and info.get("kind") == "public":
                out.append(f"public table {table}, copied verbatim")
    return out


def guarantee_text(epsilon: Any, delta: Any, root: str, inputs: list[str]) -> str:
    """The copy's guarantee in one sentence (PRIVACY.md, "Neighbouring databases" and the declarations)."""
    head = f"({epsilon}, {delta})-DP for neighbouring databases that differ in one {root} unit (one tuple of a private relation)"
    if not inputs:
        return head + "."
    return head + " and agree on the declared public inputs, which were copied without noise: " + "; ".join(inputs) + "."


def source_fingerprint(engine: Engine, catalog: Catalog) -> str:
    """A hash of the source's location and schema only: never of its data (a hash of private data
    would let anyone test guesses about it)."""
    payload = json.dumps({"location": str(getattr(engine, "location", "")), "schema": catalog.to_dict()}, sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()


def synthesize(
    engine: Engine,
    catalog: Catalog,
    out_path: str | os.PathLike[str],
    epsilon: Any,
    delta: Any,
    root: str | None = None,
    seed: int = 0,
    progress: Progress | None = None,
    *,
    caps: dict[str, int] | None = None,
    link_context: list[str] | tuple[str, ...] = (),
    public_values: list[str] | tuple[str, ...] = (),
    ledger: Any = None,
    database: str | None = None,
    overwrite: bool = False,
    _noise_seed: int | None = None,
    _counts_in_engine: bool = True,
) -> SynthResult:
    """Write an (epsilon, delta)-DP synthetic copy of the database to ``out_path`` (DuckDB).

    The privacy unit is one row of ``root`` with every row that references it (PRIVACY.md).
    ``link_context`` and ``public_values`` (``Table.column`` strings) declare columns as public
    (PRIVACY.md, caveat 1 and "Declared public values"); ``caps`` fixes fan-out caps per table.
    ``seed`` drives sampling only; the noise always comes from the operating system
    (``_noise_seed`` exists for tests and must never be used on real data; ``_counts_in_engine=False``
    counts every model in memory, the same exact vectors, for tests and benchmarks). If ``ledger`` is
    given, the spend is charged to it once, before the private data is read, under a fresh copy
    id that ``_pimento_synth_meta`` records with ``database`` (the key of the resolved database:
    pass the location the releases use, e.g. ``load_database(...).location``). A copy made
    without a ledger has no charge and is refused by the release path
    (:func:`pimento.release.synthetic.synthetic_guarantee`).

    >>> # result = synthesize(engine, catalog, "syn.duckdb", "1.6", "1e-6", root="Patient")
    """
    started = time.monotonic()
    eps, dlt = check_budget(epsilon, delta)
    out_path = str(out_path)
    if Path(out_path).exists():
        if not overwrite:
            raise DataSourceError(f"{out_path} already exists", hint="choose another --out or remove the file")
        Path(out_path).unlink()
    if str(Path(out_path).resolve()) == str(Path(str(getattr(engine, "location", ""))).resolve()):
        raise DataSourceError("the output file is the source database", hint="choose another --out")
    _mbi()  # the `synth` extra is installed: checked before the charge, like every refusal
    forest = unit_forest(catalog, root)
    acc = Accountant(eps, dlt, noise_seed=_noise_seed)
    state = start(
        forest, acc, seed=seed, caps=caps, link_context=list(link_context), public_values=list(public_values),
        counts_in_engine=_counts_in_engine,
    )
    copy_id = str(uuid.uuid4())
    db_key = database_key(database or str(getattr(engine, "location", "")))
    fingerprint = source_fingerprint(engine, catalog)
    charge_id = None
    if ledger is not None:
        # Charged after the declarations are checked, before the private data is read: whatever happens next, the spend is recorded.
        charge = ledger.charge_synthetic(
            db_key,
            Budget(eps, dlt),
            copy_id=copy_id,
            note=f"synthetic database {out_path} (root {forest.root}, source {fingerprint[:12]})",
        )
        charge_id = str(getattr(charge, "id", charge))
    state = run_passes(state, PASSES, engine=engine, progress=progress or _no_progress)
    assert state.sampled is not None
    tables: dict[str, dict[str, np.ndarray]] = dict(state.public_rows)
    for t in forest.order:
        tables[t] = state.sampled.cols[t]
    details = {
        "plan": forest.describe(),
        "budget": acc.summary(),
        "spends": [(w, r, d) for w, r, d in acc.log],
        "dropped_in_repair": state.dropped,
        "link_context": list(link_context),
        "public_values": list(public_values),
        **state.report,
    }
    meta = {
        "epsilon": str(eps),
        "delta": str(dlt),
        "root": forest.root,
        "seed": int(seed),
        "source_fingerprint": fingerprint,
        "created_at": datetime.now(timezone.utc).replace(tzinfo=None).isoformat(sep=" "),
        "pimento_version": _version(),
        "ledger_charge": charge_id,
        "copy_id": copy_id,
        "database": db_key,
        "details": details,
    }
    families = state.changed_families()
    rows = {t: len(next(iter(v.values()))) if v else 0 for t, v in tables.items()}
    state.sampled = None  # ``tables`` holds the only reference: each is freed once written
    write_database(out_path, catalog, source_ddl(engine, catalog, families), tables, meta, families)
    if progress:
        progress("write", 1, 1)
    return SynthResult(
        out_path, eps, dlt, forest.root, int(seed), open_engine(out_path, read_only=True), rows, time.monotonic() - started, charge_id, details,
        copy_id, db_key,
    )


def _no_progress(stage: str, done: int, total: int) -> None:
    return None


def _version() -> str:
    try:
        from pimento import __version__

        return str(__version__)
    except ImportError:  # pragma: no cover
        return "unknown"
