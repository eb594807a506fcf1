"""The four release modes of the paper's Table "End-to-end privacy modes", in one path.

* ``ci``: the SQL answered exactly on the authorized data of the context (the policy
  enforcer's CI rewrite); no budget; an audit row (who asked what, in which context; no count).
* ``dp``: a noisy count calibrated to residual sensitivity (RS): ``(eps, delta)``-DP.
* ``split``: the *authorized part* exact and the *remainder* as a DP count. For a counting query
  q, the authorized part counts the join results of q in which every tuple of a private relation
  is *public* in the context (all its boundary cells authorized, by provenance; see
  :mod:`pimento.policy.authorized_tuples`); the remainder counts the other join results (those
  that use at least one unauthorized tuple), so authorized + remainder = q. The remainder is
  released with noise calibrated to RS of q: on every add/remove neighbour whose edit does not
  change the authorization of the tuples it does not touch, the remainder moves by at most what
  q moves (brute-forced in tests/unit/sensitivity/test_contextual_bruteforce.py), so RS of q is a
  smooth upper bound of the remainder's local sensitivity and the remainder is ``(eps,
  delta)``-DP for those neighbours; on contextual neighbours (A_c fixed) the authorized part is
  constant, so the pair is CI for the exact part plus ``(eps, delta)``-contextual DP.
* ``contextual``: one noisy count over the whole query, calibrated to contextual residual
  sensitivity (CRS, :mod:`pimento.sensitivity.contextual`) at the mechanism's beta; charged like
  a DP release; ``(eps, delta)``-contextual DP for the context (and, end to end with the
  synthetic copy, ``(eps_syn + eps_rel, delta_syn + delta_rel)``).
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from pimento.engines.base import Engine
from pimento.errors import UserError

if TYPE_CHECKING:
    from pimento.policy import CompiledPolicy
    from pimento.schema import Catalog
    from pimento.sensitivity.contextual import AuthorizationView
    from pimento.sql import CountQuery

__all__ = ["CONTEXT_FIELDS", "MODES", "NEIGHBOURS", "CIAnswer", "ContextSpec", "ModeError", "check_neighbours", "context_value",
           "neighbourhood_of", "parse_context", "resolve_neighbours"]

MODES = ("ci", "dp", "split", "contextual")

#: What each mode's answer guarantees (shown with every answer).
GUARANTEES = {
    "ci": "contextual integrity: only cells the policy authorizes in this context, exact; no DP",
    "dp": "(epsilon, delta)-DP",
    "split": "authorized part: contextual integrity (exact); remainder: (epsilon, delta)-DP for add/remove neighbours "
             "that keep the other tuples' authorization, (epsilon, delta)-contextual DP for this context",
    "contextual": "(epsilon, delta)-contextual DP for this context (authorized cells held fixed)",
}

#: The neighbourhoods a noisy release's guarantee can hold for (``[release] neighbours`` in pimento.toml,
#: ``--neighbours``, ``neighbours=``): one tuple of a private relation inserted or deleted
#: (``add-remove``, the default), one tuple's values changed (``change``), or either (``both``).
#: ``both`` is stricter than each of the others (its neighbour relation is their union); add-remove and
#: change are incomparable at the same epsilon (add/remove epsilon-DP gives change 2 epsilon-DP only;
#: change-DP says nothing about whether a tuple is present), so only the custodian chooses between them.
NEIGHBOURS = ("add-remove", "change", "both")

#: What each neighbourhood means, in words (shown with every noisy answer).
NEIGHBOUR_WORDS = {
    "add-remove": "add/remove neighbours (one tuple of a private relation inserted or deleted)",
    "change": "change neighbours (one tuple of a private relation changed in place)",
    "both": "add/remove and change neighbours (one tuple of a private relation inserted, deleted or changed)",
}

#: The split mode's remainder, in words (shown with every split answer).
REMAINDER = ("join results that use at least one tuple of a private relation whose boundary cells "
             "are not all authorized in this context")


class ModeError(UserError):
    """A release mode that is unknown or lacks what it needs (policy, context)."""


@dataclass(frozen=True)
class ContextSpec:
    """A context: sender, recipient, purpose (identities ``KIND:ID``), as :func:`parse_context` accepted it."""

    sender: str
    recipient: str
    purpose: str

    def to_dict(self) -> dict[str, str]:
        return {"sender": self.sender, "recipient": self.recipient, "purpose": self.purpose}

    def key(self) -> str:
        return f"{self.sender}|{self.recipient}|{self.purpose}"


#: The fields of a context, in the order they are written.
CONTEXT_FIELDS = ("sender", "recipient", "purpose")
CONTEXT_FORMAT = "sender=KIND:ID,recipient=KIND:ID,purpose=NAME"


def context_value(field: str, value: object) -> str:
    """``value`` of the context field ``field`` if it obeys the one rule every path applies
    (``pimento sql``/``ask``/``authorize``, :class:`~pimento.release.session.Session`, the service,
    ``pimento keys add``): a non-empty string taken verbatim, never trimmed, with no blank around it,
    no control or format character and no ``,`` or ``=`` in it (so every value a dict can hold can be
    written as text, and the reverse). Anything else is a :class:`ModeError` that does not repeat the
    value (the service returns it to the caller)."""
    if not isinstance(value, str) or not value:
        raise ModeError(f"the context's {field} is missing or not text", hint=f"write {CONTEXT_FORMAT}")
    if value != value.strip() or any(unicodedata.category(c).startswith("C") or c in ",=" for c in value):
        raise ModeError(
            f"the context's {field} has blanks around it or a control character, ',' or '=' in it",
            hint=f"write it exactly as the policy names it, nothing trimmed: {CONTEXT_FORMAT}",
        )
    return value


def parse_context(text: str | ContextSpec | dict | None) -> ContextSpec | None:
    """``sender=KIND:ID,recipient=KIND:ID,purpose=NAME`` (or a dict / ContextSpec) -> ContextSpec.

    The one grammar of a context: parts separated by ``,`` (empty parts ignored), each
    ``NAME=VALUE`` with NAME one of :data:`CONTEXT_FIELDS` (case and blanks around it ignored) and
    VALUE checked by :func:`context_value`, verbatim: ``purpose=marketing\t`` is refused, not read as
    ``marketing``. A dict goes through the same check.
    """
    if text is None or isinstance(text, ContextSpec):
        return text
    if isinstance(text, dict):
        items = {str(k): v for k, v in text.items()}
    else:
        items = {}
        for part in str(text).split(","):
            if not part.strip():
                continue
            name, sep, value = part.partition("=")
            if not sep:
                raise ModeError("a part of the context is not NAME=VALUE", hint=f"write {CONTEXT_FORMAT}")
            name = name.strip().lower()
            if name in items:
                raise ModeError(f"the context names its {name} twice", hint=f"write {CONTEXT_FORMAT}")
            items[name] = value
    unknown = set(items) - set(CONTEXT_FIELDS)
    if unknown:
        raise ModeError(f"unknown context field(s) {', '.join(sorted(repr(u) for u in unknown))}",
                        hint="the context has sender, recipient and purpose")
    missing = [k for k in CONTEXT_FIELDS if items.get(k) in (None, "")]
    if missing:
        raise ModeError(f"the context lacks {', '.join(missing)}", hint=f"write {CONTEXT_FORMAT}")
    sender, recipient, purpose = (context_value(k, items[k]) for k in CONTEXT_FIELDS)
    return ContextSpec(sender, recipient, purpose)


def _neighbours_name(value: str, what: str) -> str:
    name = str(value).strip().lower().replace("_", "-").replace("/", "-")
    if name not in NEIGHBOURS:
        raise ModeError(f"unknown {what} {value!r}", hint=f"neighbourhoods: {', '.join(NEIGHBOURS)}")
    return name


def resolve_neighbours(requested: str | None, configured: str = "add-remove") -> str:
    """The neighbourhood a release's guarantee will hold for: the custodian's (``configured``, from
    ``[release] neighbours``) unless the analyst asks for a stricter one.

    Stricter means a guarantee that implies the custodian's: only ``both`` (whose neighbour relation
    contains every other). ``add-remove`` and ``change`` do not imply each other at the same epsilon,
    so an analyst cannot swap one for the other; only the custodian chooses between them.
    """
    base = _neighbours_name(configured, "[release] neighbours")
    if requested is None:
        return base
    asked = _neighbours_name(requested, "--neighbours")
    if asked == base or asked == "both":
        return asked
    raise ModeError(
        f"--neighbours {asked} is refused: this deployment's releases hold for {base} neighbours, and {asked} is not stricter",
        hint="ask for both (stricter than either) or for the deployment's own; add-remove and change are different "
             "guarantees, so only the custodian chooses between them ([release] neighbours in pimento.toml)",
    )


def check_neighbours(mode: str, neighbours: str, *, explicit: bool) -> None:
    """A noisy mode that can give a guarantee for ``neighbours``: every mode covers add-remove; only
    ``contextual`` (its bound, :mod:`pimento.sensitivity.contextual`, covers change and both) covers
    the others. ``ci`` has no neighbourhood: an explicit ``--neighbours`` with it is refused."""
    if mode == "ci":
        if explicit:
            raise ModeError("--neighbours applies to noisy releases (dp, split, contextual), not to --mode ci",
                            hint="a CI answer is exact on the authorized data: drop --neighbours")
        return
    if neighbours != "add-remove" and mode in ("dp", "split"):
        raise ModeError(
            f"--mode {mode} gives guarantees for add-remove neighbours only, and this release needs {neighbours}",
            hint="--mode contextual covers change and both neighbourhoods"
                 + ("" if explicit else " (the custodian set [release] neighbours in pimento.toml)"),
        )


def neighbourhood_of(neighbours: str) -> str:
    """The name :mod:`pimento.sensitivity.contextual` uses for ``neighbours`` (``add-remove`` -> ``add_remove``)."""
    return _neighbours_name(neighbours, "neighbourhood").replace("-", "_")


def guarantee_kind(mode: str, neighbours: str = "add-remove") -> str:
    """The guarantee of a ``mode`` answer, with the neighbourhood it holds for (noisy modes)."""
    text = GUARANTEES[mode]
    if mode in ("ci", "split"):
        return text  # split: its text names the add/remove neighbours it holds for
    return f"{text}; for {NEIGHBOUR_WORDS[neighbours]}"


def check_mode(mode: str, context: ContextSpec | None, policy: CompiledPolicy | str | Path | None) -> None:
    """A known mode with what it needs: every mode but dp needs a compiled policy and a context."""
    if mode not in MODES:
        raise ModeError(f"unknown mode {mode!r}", hint=f"modes: {', '.join(MODES)}")
    if mode != "dp":
        if context is None:
            raise ModeError(f"--mode {mode} needs a context", hint="add --context sender=KIND:ID,recipient=KIND:ID,purpose=NAME")
        if policy is None:
            raise ModeError(f"--mode {mode} needs the deployment's policy, and none is configured",
                            hint='the custodian sets compiled = "FILE" under [policy] in the pimento.toml beside the database '
                            "(FILE from `pimento policy compile ... --out FILE`)")


@dataclass(frozen=True)
class CIAnswer:
    """A CI-mode answer: the query's result on the authorized data, exact; nothing about what was withheld."""

    sql: str
    analyst: str
    context: ContextSpec
    policy: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    #: texts the authorized cells were read from, when the custodian lets them flow (release/provenance.py)
    provenance: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            **({"provenance": self.provenance} if self.provenance is not None else {}),
            "mode": "ci",
            "sql": self.sql,
            "analyst": self.analyst,
            "context": self.context.to_dict(),
            "policy": self.policy,
            "columns": list(self.columns),
            "rows": [list(r) for r in self.rows],
            "guarantee": GUARANTEES["ci"],
        }


def load_compiled_policy(policy: CompiledPolicy | str | Path) -> CompiledPolicy:
    """A :class:`~pimento.policy.CompiledPolicy`, or the path of one (JSON from ``pimento policy compile``):
    :func:`pimento.policy.load_compiled_policy`."""
    from pimento.policy import load_compiled_policy as load

    return load(policy)


def authorized_part(engine: Engine, query: CountQuery, catalog: Catalog, view: AuthorizationView) -> int:
    """The split mode's exact part: join results of ``query`` whose private tuples are all public."""
    import sqlglot
    from sqlglot import exp

    from pimento.sensitivity.rs import private_relations

    dialect = engine.dialect
    tree = cast(exp.Select, sqlglot.parse_one(query.to_sql(dialect), read=dialect))  # a CountQuery renders a SELECT
    for alias in private_relations(query, catalog):
        if alias in view.whole:
            continue
        pub = view.public.get(alias)
        tree = tree.where(f"COALESCE(({pub}), FALSE)" if pub else "FALSE", dialect=dialect)
    sql = (view.with_sql + "\n" if view.with_sql else "") + tree.sql(dialect=dialect)
    value = engine.execute(sql, list(view.params) if view.params else None).scalar()
    return int(value or 0)
