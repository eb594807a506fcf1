"""Contextual-integrity norms and the structured policy file that grounds them in a schema.

A norm (Barth, Datta, Mitchell, Nissenbaum 2006) is ``(sign, sender role, recipient role,
subject role, data types, purpose, condition, source clause)``. Semantics, per cell flow
``(sender, recipient, subject, cell, purpose)``:

* a **positive** norm (``sign: permit``) *applies* when the roles, data type and purpose match,
  and *permits* the flow when, in addition, its condition holds;
* a **negative** norm (``sign: deny``) is ``antecedent -> requirement``: the antecedent is the
  roles, data type, purpose and the optional ``when`` condition; ``condition`` is the
  requirement (default ``false``: an unconditional prohibition). It prohibits exactly the
  flows where the antecedent holds and the requirement does not ("unless authorised" clauses
  are therefore written as the requirement, never inverted);
* a flow is permitted iff some positive norm permits it and no negative norm prohibits it.
  No applicable positive norm means deny.

Conditions are small boolean formulas over named *condition views* (SQL grounded in the
schema), purpose tests and role tests::

    condition: {all: [attending_treats, supervises, {not: opted_out}, {purpose: treatment}]}

The YAML layout is documented in ``docs/policy.md``; :func:`load_policy` validates it with
pydantic and names the offending key or clause on error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from pimento.errors import PolicyError

__all__ = [
    "ANY",
    "VARIABLES",
    "All",
    "AnyOf",
    "Atom",
    "Cond",
    "Const",
    "Not",
    "Norm",
    "Policy",
    "PolicyFile",
    "PurposeIs",
    "RoleIs",
    "load_policy",
    "parse_condition",
    "policy_from_dict",
]

#: Wildcard role / purpose.
ANY = "any"
#: Variables a condition view may bind (its output columns). ``purpose`` is the context's
#: declared purpose: a view row holds for a context whose purpose is the row's purpose or one of
#: its sub-purposes (the purpose hierarchy, ``includes``).
VARIABLES = ("sender", "recipient", "subject", "purpose")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


# --------------------------------------------------------------------------- conditions


@dataclass(frozen=True)
class Const:
    """``true`` or ``false``."""

    value: bool


@dataclass(frozen=True)
class Atom:
    """A named condition view holds for the bound sender/recipient/subject."""

    name: str


@dataclass(frozen=True)
class PurposeIs:
    """The declared purpose is (one of the values of) the named purpose."""

    purpose: str


@dataclass(frozen=True)
class RoleIs:
    """``variable`` (sender, recipient or subject) holds the named role."""

    variable: str
    role: str


@dataclass(frozen=True)
class Not:
    arg: Cond


@dataclass(frozen=True)
class All:
    args: tuple[Cond, ...]


@dataclass(frozen=True)
class AnyOf:
    args: tuple[Cond, ...]


Cond = Const | Atom | PurposeIs | RoleIs | Not | All | AnyOf


def parse_condition(raw: Any, *, clause: str) -> Cond:
    """Parse the YAML form of a condition; a PolicyError names ``clause`` on bad input.

    >>> parse_condition({"all": ["a", {"not": "b"}, {"purpose": "treatment"}]}, clause="N1")
    All(args=(Atom(name='a'), Not(arg=Atom(name='b')), PurposeIs(purpose='treatment')))
    """
    if raw is None or raw is True:
        return Const(True)
    if raw is False:
        return Const(False)
    if isinstance(raw, str):
        if raw in ("true", "false"):
            return Const(raw == "true")
        _check_name(raw, clause, "condition")
        return Atom(raw)
    if isinstance(raw, dict) and len(raw) == 1:
        (key, value), = raw.items()
        if key == "not":
            return Not(parse_condition(value, clause=clause))
        if key in ("all", "any"):
            if not isinstance(value, list) or not value:
                raise PolicyError(f"clause {clause}: '{key}' needs a non-empty list of conditions", clause=clause)
            args = tuple(parse_condition(v, clause=clause) for v in value)
            return All(args) if key == "all" else AnyOf(args)
        if key == "purpose":
            _check_name(value, clause, "purpose")
            return PurposeIs(value)
        if key in ("sender_role", "recipient_role", "subject_role"):
            _check_name(value, clause, "role")
            return RoleIs(key.removesuffix("_role"), value)
    raise PolicyError(
        f"clause {clause}: cannot read condition {raw!r}",
        clause=clause,
        hint="use a condition name, true/false, or one of {all: [...]}, {any: [...]}, {not: ...}, "
        "{purpose: NAME}, {sender_role|recipient_role|subject_role: NAME}",
    )


def _check_name(value: Any, clause: str, what: str) -> None:
    if not isinstance(value, str) or not _NAME.match(value):
        raise PolicyError(f"clause {clause}: {what} name {value!r} is not an identifier", clause=clause)


def condition_to_yaml(cond: Cond) -> Any:
    """The YAML/JSON form of a condition (inverse of :func:`parse_condition`)."""
    if isinstance(cond, Const):
        return cond.value
    if isinstance(cond, Atom):
        return cond.name
    if isinstance(cond, PurposeIs):
        return {"purpose": cond.purpose}
    if isinstance(cond, RoleIs):
        return {f"{cond.variable}_role": cond.role}
    if isinstance(cond, Not):
        return {"not": condition_to_yaml(cond.arg)}
    if isinstance(cond, All):
        return {"all": [condition_to_yaml(a) for a in cond.args]}
    return {"any": [condition_to_yaml(a) for a in cond.args]}


def condition_names(cond: Cond) -> set[str]:
    """Every condition-view name used in ``cond``."""
    if isinstance(cond, Atom):
        return {cond.name}
    if isinstance(cond, Not):
        return condition_names(cond.arg)
    if isinstance(cond, (All, AnyOf)):
        return set().union(*(condition_names(a) for a in cond.args))
    return set()


# --------------------------------------------------------------------------- norms


@dataclass(frozen=True)
class Norm:
    """One contextual-integrity norm (see the module docstring for its semantics)."""

    id: str
    sign: Literal["permit", "deny"]
    sender: str
    recipient: str
    subject: str
    data: tuple[str, ...]
    purpose: str
    condition: Cond
    when: Cond = Const(True)
    source: str = ""
    citation: str = ""

    def __post_init__(self) -> None:
        if self.sign not in ("permit", "deny"):
            raise PolicyError(f"clause {self.id}: sign must be 'permit' or 'deny', not {self.sign!r}", clause=self.id)
        if not self.data:
            raise PolicyError(f"clause {self.id}: names no data type", clause=self.id)
        if self.sign == "permit" and self.when != Const(True):
            raise PolicyError(
                f"clause {self.id}: 'when' is only for negative norms",
                clause=self.id,
                hint="put the whole condition of a positive norm under 'condition'",
            )

    @property
    def positive(self) -> bool:
        return self.sign == "permit"

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "sign": self.sign,
            "sender": self.sender,
            "recipient": self.recipient,
            "subject": self.subject,
            "data": list(self.data),
            "purpose": self.purpose,
            "condition": condition_to_yaml(self.condition),
            "when": condition_to_yaml(self.when),
            "source": self.source,
            "citation": self.citation,
        }


# --------------------------------------------------------------------------- the file (pydantic)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PrincipalSpec(_Model):
    """A kind of agent: the relation and key column that identify it."""

    relation: str
    key: str


class RoleSpec(_Model):
    """A role: members of a principal kind, optionally filtered by a SQL predicate on its relation."""

    principal: str
    where: str | None = Field(None, description="SQL predicate over the principal's relation")
    description: str = ""


class LocationSpec(_Model):
    """One column that holds a data type."""

    relation: str
    attribute: str
    where: str | None = Field(None, description="SQL predicate over the relation's row")
    subject: str | None = Field(
        None,
        description="column naming the subject, or a foreign-key path 'via COL -> Table.COL [-> Table.COL ...]' "
        "(multi-column keys: 'via (a, b) -> Table.c'); default: the relation's entry in grounding.subjects, "
        "else the column that references the subject principal",
    )


class DataTypeSpec(_Model):
    locations: list[LocationSpec] = Field(default_factory=list)
    description: str = ""
    #: The custodian marks a concept that the database does not hold (a clause using it cannot be grounded).
    unmapped: bool = False


class ConditionSpec(_Model):
    """A condition view: a SELECT whose output columns are among sender, recipient, subject."""

    sql: str
    principals: dict[str, str] = Field(
        default_factory=dict, description="principal kind of the sender/recipient columns it outputs"
    )
    description: str = ""

    @field_validator("principals")
    @classmethod
    def _known_vars(cls, value: dict[str, str]) -> dict[str, str]:
        for var in value:
            if var not in ("sender", "recipient"):
                raise ValueError(f"principals may name sender or recipient, not {var!r}")
        return value


class PurposeSpec(_Model):
    values: list[str]
    #: Sub-purposes: a norm about this purpose (permit or deny) also applies to each of them,
    #: transitively (treatment includes care_coordination).
    includes: list[str] = Field(default_factory=list)
    description: str = ""


class GroundingSpec(_Model):
    principals: dict[str, PrincipalSpec]
    subject_principal: str = Field(description="principal kind of data subjects (e.g. patient)")
    roles: dict[str, RoleSpec]
    data_types: dict[str, DataTypeSpec]
    purposes: dict[str, PurposeSpec]
    conditions: dict[str, ConditionSpec] = Field(default_factory=dict)
    subjects: dict[str, str] = Field(
        default_factory=dict,
        description="relation -> how its rows reach their data subject (a column, or 'via ...' foreign-key path); "
        "used by every location of the relation, implied ones included",
    )
    dependencies: list[str] = Field(
        default_factory=list, description="extra functional dependencies 'T.a -> T.b' used for implication"
    )


class NormSpec(_Model):
    id: str
    sign: Literal["permit", "deny"]
    sender: str = ANY
    recipient: str = ANY
    subject: str = ANY
    data: list[str] | str
    purpose: str = ANY
    condition: Any = None
    when: Any = None
    source: str = ""
    citation: str = ""


class PolicyFile(_Model):
    """The whole YAML document."""

    version: Literal[1] = 1
    name: str
    description: str = ""
    grounding: GroundingSpec
    norms: list[NormSpec]


@dataclass(frozen=True)
class Policy:
    """A validated policy: the grounding map and the norms."""

    name: str
    grounding: GroundingSpec
    norms: tuple[Norm, ...]
    description: str = ""
    source_path: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def norm(self, norm_id: str) -> Norm:
        for n in self.norms:
            if n.id == norm_id:
                return n
        raise PolicyError(f"no clause {norm_id!r} in policy {self.name!r}", clause=norm_id)


def policy_from_dict(data: Any, *, source: str = "policy") -> Policy:
    """Validate a parsed YAML document; errors name the key path or the clause."""
    if not isinstance(data, dict):
        raise PolicyError(f"{source}: a policy file is a mapping with 'name', 'grounding' and 'norms'")
    if data.get("review"):  # an extracted draft (pimento.policy.review): never enforced before the custodian answers it
        raise PolicyError(f"{source}: an extracted draft with {len(data['review'])} open question(s) (groundings, conditions "
                          "or advisory purposes); answer them with `pimento policy extract ... --review` (or --review-file), or "
                          "compile with --drop-open-questions (held norms left out, advisory ones kept as read)")
    try:
        spec = PolicyFile.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        clause = None
        if err["loc"][:1] == ("norms",) and len(err["loc"]) > 1 and isinstance(err["loc"][1], int):
            raw_norms = data.get("norms") or []
            idx = err["loc"][1]
            if idx < len(raw_norms) and isinstance(raw_norms[idx], dict):
                clause = str(raw_norms[idx].get("id", f"#{idx + 1}"))
        prefix = f"clause {clause}: " if clause else ""
        raise PolicyError(f"{source}: {prefix}{where}: {err['msg']}", clause=clause) from None
    norms: list[Norm] = []
    seen: set[str] = set()
    for ns in spec.norms:
        if ns.id in seen:
            raise PolicyError(f"{source}: two clauses have the id {ns.id!r}", clause=ns.id)
        if not _NAME.match(ns.id.replace(".", "_").replace("-", "_")):
            raise PolicyError(f"{source}: clause id {ns.id!r} must be a simple identifier", clause=ns.id)
        seen.add(ns.id)
        data_types = (ns.data,) if isinstance(ns.data, str) else tuple(ns.data)
        cond_default: Any = True if ns.sign == "permit" else False
        norms.append(
            Norm(
                id=ns.id,
                sign=ns.sign,
                sender=ns.sender,
                recipient=ns.recipient,
                subject=ns.subject,
                data=data_types,
                purpose=ns.purpose,
                condition=parse_condition(ns.condition if ns.condition is not None else cond_default, clause=ns.id),
                when=parse_condition(ns.when, clause=ns.id),
                source=ns.source.strip(),
                citation=ns.citation.strip(),
            )
        )
    if not norms:
        raise PolicyError(f"{source}: the policy has no norms", hint="add at least one 'permit' norm")
    return Policy(spec.name, spec.grounding, tuple(norms), spec.description, None, data)


def load_policy(path: str | Path) -> Policy:
    """Read and validate a structured policy file (YAML)."""
    path = Path(path)
    if not path.is_file():
        raise PolicyError(f"policy file not found: {path}")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise PolicyError(f"{path}: not valid YAML: {exc}") from None
    policy = policy_from_dict(data, source=str(path))
    return Policy(policy.name, policy.grounding, policy.norms, policy.description, str(path), policy.raw)
