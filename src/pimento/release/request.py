"""One release request, frozen and validated: what the CLI, the service and the web page build.

A :class:`Request` holds everything an edge hands to :mod:`pimento.release`: a question or SQL,
the budget asked for, the analyst, the mode, the context, the neighbourhood asked for, the search
options and the SQL the analyst confirmed. Building one validates its shape (a known mode, a
context in the one grammar, a known neighbourhood): a bad request fails here, before anything is
opened, read or charged. Whether the custodian's settings allow it (caps, policy, the
neighbourhood of the deployment) is decided by :class:`pimento.release.session.Session`, still
before the charge.

    >>> r = Request.for_sql("SELECT COUNT(*) FROM t", epsilon="0.5", mode="split",
    ...                     context="sender=doctor:1,recipient=nurse:2,purpose=treatment")
    >>> r.mode, r.context.purpose, r.neighbours
    (<Mode.SPLIT: 'split'>, 'treatment', None)
    >>> Request.for_question("How many patients?", epsilon="1", mode="unknown")
    Traceback (most recent call last):
    ...
    pimento.errors.ModeError: unknown mode 'unknown'

``bounds`` narrows the custodian's clipping of a SUM or AVG for this request (exact, each column once;
whether it narrows is decided at admission against ``[bounds]``):

    >>> Request.for_sql("SELECT SUM(v.stay) FROM Visit v", epsilon="1", bounds={"Visit.stay": ["0", 12.5]}).bounds[0].to_text()
    'Visit.stay=0:12.5'
"""

from __future__ import annotations

import sys
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pimento.errors import ModeError, PrivacyParameterError
from pimento.numbers import NumberLike, format_number, parse_number, shown
from pimento.release.modes.base import Mode, parse_mode
from pimento.sensitivity.neighbourhood import Neighbourhood

if TYPE_CHECKING:
    from pimento.search import SearchConfig

__all__ = [
    "BOUNDS_FORMAT",
    "CONTEXT_FIELDS",
    "CONTEXT_FORMAT",
    "Context",
    "Mode",
    "NarrowedBounds",
    "Neighbourhood",
    "Request",
    "SearchOptions",
    "context_value",
    "parse_bounds",
    "parse_neighbourhood",
    "resolve_neighbourhood",
]


#: The fields of a context, in the order they are written.
CONTEXT_FIELDS = ("sender", "recipient", "purpose")
CONTEXT_FORMAT = "sender=KIND:ID,recipient=KIND:ID,purpose=NAME"


def context_value(field: str, value: object) -> str:
    """``value`` of the context field ``field`` if it obeys the one rule every path applies.

    (``pimento sql``/``ask``/``authorize``, :class:`~pimento.release.session.Session`, the service,
    ``pimento keys add``): a non-empty string taken verbatim, never trimmed, with no blank around it,
    no control or format character and no ``,`` or ``=`` in it (so every value a dict can hold can be
    written as text, and the reverse). Anything else is a :class:`ModeError` that does not repeat the
    value (the service returns it to the caller).
    """
    if not isinstance(value, str) or not value:
        raise ModeError(f"the context's {field} is missing or not text", hint=f"write {CONTEXT_FORMAT}")
    if value != value.strip() or any(unicodedata.category(c).startswith("C") or c in ",=" for c in value):
        raise ModeError(
            f"the context's {field} has blanks around it or a control character, ',' or '=' in it",
            hint=f"write it exactly as the policy names it, nothing trimmed: {CONTEXT_FORMAT}",
        )
    return value


@dataclass(frozen=True)
class Context:
    """A context: sender, recipient, purpose (identities ``KIND:ID``), each checked by :func:`context_value`.

    The one form of a context in :mod:`pimento.release`; :meth:`parse` reads the text and dict forms.
    The policy enforcer instantiates its own :class:`pimento.policy.Context` (identities split into
    kind and id) from one of these.
    """

    sender: str
    recipient: str
    purpose: str

    def __post_init__(self) -> None:
        for name in CONTEXT_FIELDS:
            context_value(name, getattr(self, name))

    @classmethod
    def parse(cls, text: str | Context | dict[str, Any] | None) -> Context | None:
        """``sender=KIND:ID,recipient=KIND:ID,purpose=NAME`` (or a dict, or a Context) -> Context.

        The one grammar of a context: parts separated by ``,`` (empty parts ignored), each
        ``NAME=VALUE`` with NAME one of :data:`CONTEXT_FIELDS` (case and blanks around it ignored) and
        VALUE checked by :func:`context_value`, verbatim: ``purpose=marketing\\t`` is refused, not read
        as ``marketing``. A dict goes through the same check.
        """
        if text is None or isinstance(text, Context):
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
        return cls(sender, recipient, purpose)

    def to_dict(self) -> dict[str, str]:
        return {"sender": self.sender, "recipient": self.recipient, "purpose": self.purpose}

    def key(self) -> str:
        """The context as one string (cache keys)."""
        return f"{self.sender}|{self.recipient}|{self.purpose}"


#: How the analyst writes one narrowed clipping interval (``pimento sql --bounds``).
BOUNDS_FORMAT = "Table.column=LOWER:UPPER"
#: The most decimal places a narrowed bound may have (the SUM's grid is a hundredth of the last one: sum_grid).
MAX_BOUND_PLACES = 6


@dataclass(frozen=True)
class NarrowedBounds:
    """The analyst's clipping interval ``[lower, upper]`` of one summed column (``Table.column``), for one request.

    Exact (Fractions read from text: never a float's binary value), ``lower <= upper``, each a decimal of at
    most :data:`MAX_BOUND_PLACES` places (the engine clips with them as exact literals). Whether it narrows
    the custodian's ``[bounds]`` is decided at admission (:func:`pimento.release.admission.admitted_bounds`).
    """

    column: str
    lower: Fraction
    upper: Fraction

    def __post_init__(self) -> None:
        table, dot, name = self.column.partition(".")
        if not dot or not table.strip() or not name.strip():
            raise PrivacyParameterError(f"bounds name {shown(self.column)}, not a Table.column", hint=f"write {BOUNDS_FORMAT}")
        for which in ("lower", "upper"):
            try:
                value = parse_number(getattr(self, which), name=f"the {which} bound of {self.column}")
            except PrivacyParameterError as exc:
                raise PrivacyParameterError(exc.message, hint=f"write {BOUNDS_FORMAT} with decimals such as 0:12.5") from None
            places = 0
            while (value * 10**places).denominator != 1 and places <= MAX_BOUND_PLACES:
                places += 1
            if places > MAX_BOUND_PLACES:
                raise PrivacyParameterError(
                    f"the {which} bound of {self.column} is not a decimal of at most {MAX_BOUND_PLACES} places: {format_number(value)}",
                    hint=f"write {BOUNDS_FORMAT} with decimals such as 0:12.5",
                )
            object.__setattr__(self, which, value)
        if self.lower > self.upper:
            raise PrivacyParameterError(
                f"the bounds of {self.column} are empty: {format_number(self.lower)} > {format_number(self.upper)}",
                hint=f"write {BOUNDS_FORMAT} with LOWER <= UPPER",
            )

    def to_text(self) -> str:
        """``Table.column=LOWER:UPPER`` (what :func:`parse_bounds` reads back)."""
        return f"{self.column}={format_number(self.lower)}:{format_number(self.upper)}"


def _one_bound(text: str) -> NarrowedBounds:
    """``Table.column=LOWER:UPPER`` (``--bounds``) -> :class:`NarrowedBounds`."""
    column, eq, pair = text.partition("=")
    lower, colon, upper = pair.partition(":")
    if not eq or not colon or not lower.strip() or not upper.strip():
        raise PrivacyParameterError(f"bounds {shown(text)} are not {BOUNDS_FORMAT}", hint="e.g. --bounds \"Visit.stay=0:30\"")
    return NarrowedBounds(column.strip(), lower.strip(), upper.strip())  # type: ignore[arg-type]  # parsed in __post_init__


def parse_bounds(value: object) -> tuple[NarrowedBounds, ...]:
    """The analyst's narrowed bounds, each column once, in a fixed order (by name, case-insensitive).

    Accepts None, a mapping ``{"Table.column": [lower, upper]}`` (the HTTP body; numbers or exact texts),
    texts ``Table.column=LOWER:UPPER`` (``--bounds``, repeatable) or :class:`NarrowedBounds`. A column
    named twice (names compare case-insensitively, as ``[bounds]``'s keys) is refused.
    """
    if value is None:
        return ()
    items: list[NarrowedBounds] = []
    if isinstance(value, Mapping):
        for key, pair in value.items():
            if not isinstance(pair, (list, tuple)) or len(pair) != 2:
                raise PrivacyParameterError(f"bounds of {key!s} must be [lower, upper], two numbers", hint='e.g. {"Visit.stay": ["0", "30"]}')
            items.append(NarrowedBounds(str(key), pair[0], pair[1]))
    elif isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise PrivacyParameterError("bounds are a list of Table.column=LOWER:UPPER or a mapping of Table.column to [lower, upper]",
                                    hint=f"write {BOUNDS_FORMAT}")
    else:
        for one in value:
            items.append(one if isinstance(one, NarrowedBounds) else _one_bound(str(one)))
    seen: set[str] = set()
    for item in items:
        if item.column.lower() in seen:
            raise PrivacyParameterError(f"bounds name {item.column} twice", hint="give each column's bounds once")
        seen.add(item.column.lower())
    return tuple(sorted(items, key=lambda b: b.column.lower()))


def parse_neighbourhood(value: object, what: str = "--neighbours") -> Neighbourhood:
    """``value`` as a :class:`Neighbourhood`; a :class:`ModeError` naming ``what`` and the choices otherwise."""
    parsed = Neighbourhood.parse(value)
    if parsed is None:
        raise ModeError(f"unknown {what} {value!r}", hint=f"neighbourhoods: {', '.join(n.value for n in Neighbourhood)}")
    return parsed


def resolve_neighbourhood(requested: Neighbourhood | str | None, configured: Neighbourhood | str = Neighbourhood.ADD_REMOVE) -> Neighbourhood:
    """The neighbourhood a release's guarantee will hold for: the custodian's (``configured``, from
    ``[release] neighbours``) unless the analyst asks for a stricter one.

    Stricter means a guarantee that implies the custodian's: only ``both`` (whose neighbour relation
    contains every other). ``add-remove`` and ``change`` do not imply each other at the same epsilon,
    so an analyst cannot swap one for the other; only the custodian chooses between them.
    """
    base = parse_neighbourhood(configured, "[release] neighbours")
    if requested is None:
        return base
    asked = parse_neighbourhood(requested)
    if asked.is_at_least_as_strict_as(base):
        return asked
    raise ModeError(
        f"--neighbours {asked} is refused: this deployment's releases hold for {base} neighbours, and {asked} is not stricter",
        hint="ask for both (stricter than either) or for the deployment's own; add-remove and change are different "
             "guarantees, so only the custodian chooses between them ([release] neighbours in pimento.toml)",
    )


@dataclass(frozen=True)
class SearchOptions:
    """How a question is interpreted on the synthetic copy (:func:`pimento.release.interpretation.interpret`).

    ``synthetic``: the copy to search (else ``[synth] path``, else ``DB.synthetic.duckdb``);
    ``seed_sql``: the analyst's own formulations, tried first; ``k``: warm-start candidates;
    ``config``: the search's :class:`pimento.search.SearchConfig`; ``llm``: an OpenAI-compatible
    endpoint for candidates and expansion (else the offline parser).
    """

    synthetic: str | Path | None = None
    seed_sql: tuple[str, ...] = ()
    k: int = 10
    config: SearchConfig | None = None
    llm: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "seed_sql", tuple(self.seed_sql))
        if isinstance(self.k, bool) or not isinstance(self.k, int) or self.k < 1:
            raise ModeError(f"k must be a positive whole number, got {self.k!r}", hint="pass --k 10, say")


#: The module that registers the built-in modes; any registration (a plug-in's included) imports it first.
_BUILTIN_MODES = "pimento.release.modes._builtin"


def _mode_name(value: object) -> str:
    """``value`` as a mode name (:func:`~pimento.release.modes.parse_mode`), refusing an unknown name lightly.

    Every registration, a plug-in's included, loads the built-in modes first (the registry's rule), so
    while they are not loaded no plug-in is registered and a name that is not a built-in is unknown:
    refused here without importing the modes (and NumPy, sqlglot and the engines behind them).
    """
    if isinstance(value, Mode) or _BUILTIN_MODES in sys.modules:
        return parse_mode(value)
    return Mode.parse(value)


@dataclass(frozen=True)
class Request:
    """One release request: a question or SQL, the budget, who asks, how, in which context.

    Exactly one of ``question`` and ``sql``. ``mode`` and ``neighbours`` are parsed to their enums and
    ``context`` to a :class:`Context` on construction (a :class:`ModeError` otherwise); ``epsilon`` and
    ``delta`` are kept as given and validated with the custodian's settings by the session (a
    :class:`pimento.errors.PrivacyParameterError`, before anything is read). ``analyst`` None means
    the session's. ``neighbours`` None means the custodian's ``[release] neighbours``; an analyst can
    only ask for a stricter one. ``expect_sql``: the SQL the analyst confirmed after a preview; a
    question whose interpretation differs is refused before the charge. ``bounds``: clipping intervals
    narrower than the custodian's ``[bounds]`` for this request's SUM or AVG (:func:`parse_bounds`'s
    forms, kept as a tuple of :class:`NarrowedBounds`; admission refuses a widening).
    """

    question: str | None = None
    sql: str | None = None
    epsilon: NumberLike | None = None
    delta: NumberLike | None = None
    analyst: str | None = None
    #: a :class:`Mode` for a built-in mode, the registered name of a plug-in mode (:mod:`pimento.release.modes`)
    mode: str = Mode.DP
    context: Context | None = None
    neighbours: Neighbourhood | None = None
    search: SearchOptions = field(default_factory=SearchOptions)
    expect_sql: str | None = None
    bounds: tuple[NarrowedBounds, ...] = ()

    def __post_init__(self) -> None:
        if (self.question is None) == (self.sql is None):
            raise ModeError("a request has a question or SQL, exactly one of them",
                            hint="Request.for_question(...) or Request.for_sql(...)")
        object.__setattr__(self, "mode", _mode_name(self.mode))
        object.__setattr__(self, "context", Context.parse(self.context))
        if self.neighbours is not None:
            object.__setattr__(self, "neighbours", parse_neighbourhood(self.neighbours))
        object.__setattr__(self, "bounds", parse_bounds(self.bounds or None))
        if self.sql is not None and self.expect_sql is not None:
            raise ModeError("expect_sql confirms the interpretation of a question; a SQL request has none",
                            hint="drop expect_sql, or ask the question")

    @classmethod
    def for_question(cls, question: str, **fields: Any) -> Request:
        """A question; ``fields`` as the class's (``seed_sql``, ``k``, ``config``, ``llm``, ``synthetic`` go to :class:`SearchOptions`)."""
        search = {name: fields.pop(name) for name in ("synthetic", "seed_sql", "k", "config", "llm") if name in fields}
        if search:
            if "search" in fields:
                raise ModeError("give the search options once: in search= or as keywords, not both")
            fields["search"] = SearchOptions(**search)
        return cls(question=question, **fields)

    @classmethod
    def for_sql(cls, sql: str, **fields: Any) -> Request:
        """A SQL request; ``fields`` as the class's."""
        return cls(sql=sql, **fields)

    def with_analyst(self, analyst: str) -> Request:
        """The same request, asked by ``analyst`` (the service binds it to the key)."""
        return replace(self, analyst=analyst)

    @property
    def text(self) -> str:
        """The question or the SQL, whichever the request holds."""
        return self.question if self.question is not None else str(self.sql)
