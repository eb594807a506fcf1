"""The compiled policy: a frozen value, everything the runtime needs, and its JSON form.

:func:`~pimento.policy.compiler.compile_policy` builds it (norms -> compiled policy);
:mod:`pimento.policy.implication` and :func:`~pimento.policy.checks.run_checks` derive new
values from it (``P -> P+``, the canonical checked form); :mod:`pimento.policy.views_sql` writes
its views as SQL; :mod:`pimento.policy.enforce` enforces it. Nothing changes it after
construction: its mappings are read-only (``MappingProxyType``) and its sequences are tuples,
all the way down (:func:`freeze`); :meth:`CompiledPolicy.to_dict` gives plain JSON data back
(:func:`thaw`), in the format ``pimento policy compile`` writes and :func:`load_compiled_policy`
reads (``pimento-compiled-policy/1``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pimento.errors import PolicyError
from pimento.policy.model import Norm, parse_condition
from pimento.policy.views_sql import norm_views
from pimento.schema import Catalog

__all__ = [
    "FORMAT",
    "CompiledCondition",
    "CompiledPolicy",
    "CompiledRole",
    "Location",
    "freeze",
    "load_compiled_policy",
    "schema_fingerprint",
    "thaw",
]

FORMAT = "pimento-compiled-policy/1"

def freeze(value: Any) -> Any:
    """``value`` made read-only all the way down: a mapping becomes a ``MappingProxyType`` over a
    copy (order kept), a list or tuple a tuple; other values (str, numbers, frozen dataclasses)
    are returned as they are."""
    if isinstance(value, Mapping):
        return MappingProxyType({k: freeze(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    return value


def thaw(value: Any) -> Any:
    """Plain JSON data from a :func:`freeze`-d value: mappings become dicts, tuples lists (a copy)."""
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [thaw(v) for v in value]
    return value


def _freeze_fields(obj: object) -> None:
    """Freeze every field of a frozen dataclass in place (its ``__post_init__``)."""
    for f in fields(obj):  # type: ignore[arg-type]
        object.__setattr__(obj, f.name, freeze(getattr(obj, f.name)))


@dataclass(frozen=True)
class Location:
    """A column holding a data type, with the SQL that tags its cells with provenance
    (its view: :func:`pimento.policy.views_sql.location_view_sql`)."""

    id: str
    relation: str
    attribute: str
    #: SQL boolean over alias ``t`` (the relation's row); "TRUE" when unfiltered.
    where_sql: str
    #: SQL text expression over alias ``t`` giving the subject identity, or
    #: :data:`~pimento.policy.views_sql.NO_SUBJECT`.
    subject_sql: str
    #: SQL text expression over alias ``t`` giving the row key.
    row_key_sql: str
    data_type: str
    #: For locations added by information implication: the dependency that implied them.
    implied_by: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "relation": self.relation,
            "attribute": self.attribute,
            "where_sql": self.where_sql,
            "subject_sql": self.subject_sql,
            "row_key_sql": self.row_key_sql,
            "data_type": self.data_type,
            "implied_by": self.implied_by,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Location:
        return cls(**d)


@dataclass(frozen=True)
class CompiledRole:
    """A role's view: the identities (``SELECT agent``, as text) of the principal kind that hold it."""

    name: str
    principal: str
    sql: str  # SELECT agent

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "principal": self.principal, "sql": self.sql}


@dataclass(frozen=True)
class CompiledCondition:
    """A condition's view: ``SELECT sender?, recipient?, subject?`` (text), the principal kind of each."""

    name: str
    variables: tuple[str, ...]
    principals: Mapping[str, str]
    sql: str  # SELECT sender?, recipient?, subject? (text)
    recursive: bool = False

    def __post_init__(self) -> None:
        _freeze_fields(self)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "variables": list(self.variables),
            "principals": dict(self.principals),
            "sql": self.sql,
            "recursive": self.recursive,
        }


@dataclass(frozen=True)
class CompiledPolicy:
    """Everything the runtime needs, frozen and JSON-serialisable (``to_dict`` / ``from_dict``).

    Built from plain dicts and lists or from frozen ones alike: ``__post_init__`` freezes every
    field (:func:`freeze`), so a derived policy is ``dataclasses.replace(policy, field=new)``."""

    name: str
    dialect: str
    principals: Mapping[str, Mapping[str, str]]
    subject_principal: str
    purposes: Mapping[str, tuple[str, ...]]
    roles: Mapping[str, CompiledRole]
    conditions: Mapping[str, CompiledCondition]
    locations: Mapping[str, Location]
    data_types: Mapping[str, tuple[str, ...]]
    norms: tuple[Norm, ...]
    #: norm id -> location ids its data view unions (after implication).
    norm_locations: Mapping[str, tuple[str, ...]]
    #: relation -> its columns (ordered) and row key columns: ``{"columns": (...), "key": (...)}``.
    tables: Mapping[str, Mapping[str, tuple[str, ...]]]
    #: The report of :func:`~pimento.policy.checks.run_checks` (empty until the checks ran).
    checks: Mapping[str, Any] = field(default_factory=dict)
    #: alias -> canonical name for merged (redundant) roles / conditions / norms.
    merged: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    #: purpose name -> its direct sub-purposes (the hierarchy; norms are inherited downwards).
    purpose_includes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: :func:`schema_fingerprint` of the database it was compiled against.
    fingerprint: str = ""
    #: relation -> its declared way to the data subject (``grounding.subjects``), for implied locations.
    subject_paths: Mapping[str, str] = field(default_factory=dict)
    #: The locations information implication added (:func:`pimento.policy.implication.apply_implications`,
    #: a step of :func:`~pimento.policy.compiler.compile_policy`), one entry each; None: implication
    #: was not applied (a file compiled by an older version), and the policy is refused
    #: (:meth:`require_implication`).
    implication: tuple[Mapping[str, Any], ...] | None = None

    def __post_init__(self) -> None:
        _freeze_fields(self)

    # ---------------------------------------------------------------- queries

    def norm(self, norm_id: str) -> Norm:
        """The norm ``norm_id`` (PolicyError naming it when there is none)."""
        for n in self.norms:
            if n.id == norm_id:
                return n
        raise PolicyError(f"no clause {norm_id!r} in the compiled policy", clause=norm_id)

    def views(self, norm_id: str) -> dict[str, str]:
        """The views of one norm as SQL text (:func:`pimento.policy.views_sql.norm_views`)."""
        return norm_views(self, norm_id)

    def purpose_names(self, value: str) -> set[str]:
        """Names of the purposes a declared purpose ``value`` belongs to: those whose values
        include it (exact match), and every purpose that includes one of them, transitively
        (a norm about ``treatment`` applies to ``care_coordination``, a sub-purpose)."""
        names = {name for name, values in self.purposes.items() if value in values}
        frontier = set(names)
        while frontier:
            frontier = {p for p, subs in self.purpose_includes.items() if frontier & set(subs)} - names
            names |= frontier
        return names

    def purpose_closure(self, name: str) -> set[str]:
        """``name`` and every purpose that includes it, transitively (the norms that apply to it)."""
        return self.purpose_names(self.purposes[name][0]) | {name} if self.purposes.get(name) else {name}

    def purpose_matches(self, value: str) -> list[str]:
        """The texts a ``purpose`` column of a condition view may hold to match a context whose
        declared purpose is ``value``: the names of :meth:`purpose_names` and their values."""
        names = self.purpose_names(value)
        return sorted(names | {v for n in names for v in self.purposes[n]})

    def checks_report(self) -> dict[str, Any]:
        """The report of the checks as plain JSON data (a copy of :attr:`checks`; empty before they ran)."""
        report: dict[str, Any] = thaw(self.checks)
        return report

    # ---------------------------------------------------------------- refusals

    def check_database(self, catalog: Catalog, dialect: str | None = None) -> None:  # noqa: ARG002
        """Refuse a database other than the one this policy was compiled for (PolicyError): its
        schema fingerprint must match. A copy with the same schema in another engine (the
        synthetic DuckDB copy of a SQLite database) is the same database to the policy."""
        if not self.fingerprint:
            raise PolicyError(
                f"compiled policy {self.name!r} records no schema fingerprint (compiled by an older version)",
                hint="recompile it: `pimento policy compile POLICY --db DB --out compiled.json`",
            )
        if schema_fingerprint(catalog) != self.fingerprint:
            raise PolicyError(
                f"compiled policy {self.name!r} was compiled for a different database (schema fingerprint differs)",
                hint="compile the policy against this database: `pimento policy compile POLICY --db DB`",
            )

    def require_implication(self) -> None:
        """Refuse (PolicyError) a policy that records no information implication: enforcing it would
        release the columns that reveal a prohibited value through a functional dependency or a
        foreign key. :func:`compile_policy` always applies it; a file written before it did does not."""
        if self.implication is None:
            raise PolicyError(
                f"compiled policy {self.name!r} does not record information implication (compiled by an older "
                "version): enforcing it would release the columns that reveal prohibited data",
                hint="recompile the policy with `pimento policy compile POLICY --db DB --out compiled.json`",
            )

    # ---------------------------------------------------------------- JSON

    def to_dict(self) -> dict[str, Any]:
        """The JSON form ``pimento policy compile`` writes (plain dicts and lists), with every norm's views."""
        return {
            "format": FORMAT,
            "name": self.name,
            "dialect": self.dialect,
            "principals": thaw(self.principals),
            "subject_principal": self.subject_principal,
            "purposes": thaw(self.purposes),
            "roles": {k: v.to_dict() for k, v in self.roles.items()},
            "conditions": {k: v.to_dict() for k, v in self.conditions.items()},
            "locations": {k: v.to_dict() for k, v in self.locations.items()},
            "data_types": thaw(self.data_types),
            "norms": [n.to_dict() for n in self.norms],
            "norm_locations": thaw(self.norm_locations),
            "tables": thaw(self.tables),
            "checks": thaw(self.checks),
            "merged": thaw(self.merged),
            "purpose_includes": thaw(self.purpose_includes),
            "fingerprint": self.fingerprint,
            "subject_paths": thaw(self.subject_paths),
            "implication": thaw(self.implication),
            "views": {n.id: norm_views(self, n.id) for n in self.norms},
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CompiledPolicy:
        """The compiled policy of a JSON document :meth:`to_dict` wrote (its ``views`` are not read:
        they are derived).

        Raises:
            PolicyError: not a compiled policy (the format is missing or unknown).
        """
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            raise PolicyError(
                "not a compiled policy (format is missing or unknown)",
                hint="produce one with `pimento policy compile POLICY --db DB --out compiled.json`",
            )
        norms = [
            Norm(
                id=n["id"],
                sign=n["sign"],
                sender=n["sender"],
                recipient=n["recipient"],
                subject=n["subject"],
                data=tuple(n["data"]),
                purpose=n["purpose"],
                condition=parse_condition(n["condition"], clause=n["id"]),
                when=parse_condition(n["when"], clause=n["id"]),
                source=n.get("source", ""),
                citation=n.get("citation", ""),
            )
            for n in d["norms"]
        ]
        return cls(
            name=d["name"],
            dialect=d["dialect"],
            principals=d["principals"],
            subject_principal=d["subject_principal"],
            purposes=d["purposes"],
            roles={k: CompiledRole(**v) for k, v in d["roles"].items()},
            conditions={
                k: CompiledCondition(v["name"], tuple(v["variables"]), dict(v["principals"]), v["sql"], v["recursive"])
                for k, v in d["conditions"].items()
            },
            locations={k: Location.from_dict(v) for k, v in d["locations"].items()},
            data_types=d["data_types"],
            norms=tuple(norms),
            norm_locations=d["norm_locations"],
            tables=d["tables"],
            checks=d.get("checks", {}),
            merged=d.get("merged", {}),
            purpose_includes=d.get("purpose_includes", {}),
            fingerprint=d.get("fingerprint", ""),
            subject_paths=d.get("subject_paths", {}),
            implication=_recorded_implication(d),
        )


def _recorded_implication(d: dict[str, Any]) -> tuple[Mapping[str, Any], ...] | None:
    """The implication a compiled policy's JSON records: its ``implication`` entry, or, in a file
    written before that entry existed, the report of the checks (``pimento policy compile`` ran
    them, and they applied implication); None when neither is there."""
    if d.get("implication") is not None:
        return tuple(d["implication"])
    checks = d.get("checks") or {}
    if isinstance(checks, dict) and isinstance(checks.get("information_implication"), list):
        return tuple(checks["information_implication"])
    return None


def load_compiled_policy(policy: CompiledPolicy | str | Path) -> CompiledPolicy:
    """A compiled policy as given, or read from the JSON file ``pimento policy compile`` wrote.

    Raises:
        PolicyError: the file is missing, is not JSON, or is not a compiled policy; or the policy
            records no information implication (an older file: recompile it).
    """
    if isinstance(policy, CompiledPolicy):
        policy.require_implication()
        return policy
    path = Path(str(policy))
    if not path.is_file():
        raise PolicyError(f"compiled policy not found: {policy}",
                          hint="produce one with `pimento policy compile POLICY --db DB --out compiled.json`")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise PolicyError(f"{policy}: not a JSON compiled policy ({exc})") from None
    compiled = CompiledPolicy.from_dict(data)
    compiled.require_implication()
    return compiled


def schema_fingerprint(catalog: Catalog) -> str:
    """A hash of the schema a compiled policy's SQL depends on: relation and column names (in
    order), keys and foreign keys. Types are left out (engines name them differently)."""
    tables = sorted(
        [t.name.lower(), [c.lower() for c in t.column_names], [k.lower() for k in t.primary_key or ()]]
        for t in catalog.tables
    )
    fks = sorted(
        [fk.table.lower(), [c.lower() for c in fk.columns], fk.ref_table.lower(), [c.lower() for c in fk.ref_columns]]
        for fk in catalog.foreign_keys
    )
    return hashlib.sha256(json.dumps([tables, fks]).encode()).hexdigest()[:32]
