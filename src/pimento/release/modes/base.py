"""What a release mode is (:class:`ReleaseMode`), the registry that names them, and the checks every mode shares.

A mode decides how an admitted request is answered: whether it spends budget, whether it needs the
custodian's policy and a context, the neighbourhoods its guarantee covers, that guarantee in words,
and the release itself (:meth:`ReleaseMode.release`: measure on the private data, then finish the
:class:`~pimento.release.answers.Answer`). :class:`~pimento.release.session.Session` asks the
registry for the request's mode and calls it; it never tests a mode's name. A new mode is one module
and one :func:`register_mode` call (the built-ins are registered by
:mod:`pimento.release.modes._builtin`, the same way a plug-in registers).

This module imports nothing else of :mod:`pimento.release` at run time (:mod:`pimento.release.request`
imports it to parse a mode).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from pimento._compat import StrEnum
from pimento.errors import ModeError
from pimento.registry import Registry
from pimento.sensitivity.neighbourhood import Neighbourhood

if TYPE_CHECKING:
    from pimento.engines.base import Engine
    from pimento.engines.database import Database
    from pimento.mechanisms import Ledger
    from pimento.release.admission import Admitted
    from pimento.release.answers import Answer
    from pimento.release.ask import SearchOutcome
    from pimento.schema import Catalog

__all__ = [
    "Mode",
    "Private",
    "ReleaseMode",
    "check_neighbourhood",
    "check_requirements",
    "parse_mode",
    "register_mode",
    "registered_modes",
    "release_mode",
    "unregister_mode",
]


class Mode(StrEnum):
    """The built-in release modes, the paper's Table "End-to-end privacy modes" (one module each under
    :mod:`pimento.release.modes`). A plug-in mode is named by its registered name (a plain ``str``)."""

    CI = "ci"
    DP = "dp"
    SPLIT = "split"
    CONTEXTUAL = "contextual"

    @classmethod
    def parse(cls, value: object) -> Mode:
        """``value`` as a built-in mode; a :class:`ModeError` naming the modes otherwise."""
        if isinstance(value, cls):
            return value
        try:
            return cls(str(value))
        except ValueError:
            raise ModeError(f"unknown mode {value!r}", hint=f"modes: {', '.join(m.value for m in cls)}") from None


class Private(Protocol):
    """The private side a mode releases from (a :class:`~pimento.release.session.Session`): custodian only."""

    database: Database
    ledger: Ledger
    location: str


class ReleaseMode(Protocol):
    """One release mode (see the module docstring)."""

    #: the mode's name (``--mode``, ``"mode"`` of every answer)
    name: str
    #: whether a release is charged to the ledger (a noisy answer); False: an exact answer, no budget
    spends: bool
    #: whether the mode needs the custodian's compiled policy and a context
    needs_context: bool
    #: the neighbourhoods its guarantee covers, in the order they are named; () for an exact answer
    neighbourhoods: tuple[Neighbourhood, ...]
    #: what its answer guarantees, in words
    guarantee: str
    #: the ``kind`` of a question's end-to-end guarantee (synthetic copy plus release)
    end_to_end_kind: str

    def guarantee_kind(self, neighbours: Neighbourhood | None) -> str | None:
        """The guarantee an answer states (``guarantee_kind``/``guarantee``), or None when its budget says it."""
        ...

    def reading_on_copy(self, job: Admitted, outcome: SearchOutcome, synthetic: Engine, catalog: Catalog) -> tuple[str, float] | None:
        """The SQL to answer a question with and its sensitivity on the synthetic copy, when this mode
        chooses otherwise than the search (contextual: the lowest CRS); None keeps the search's choice."""
        ...

    def release(self, private: Private, job: Admitted) -> Answer:
        """Answer ``job`` (admitted: nothing failed that public inputs decide) from the private data."""
        ...


def _load_builtins() -> None:
    from pimento.release.modes import _builtin  # noqa: F401  (registers the built-in modes; imports them, hence here)


_MODES: Registry[ReleaseMode] = Registry(_load_builtins)


def register_mode(mode: ReleaseMode) -> None:
    """Make ``mode`` answer requests whose ``mode`` is ``mode.name`` (replacing a mode of that name)."""
    _MODES.register(mode.name, mode)


def unregister_mode(name: str) -> None:
    """Remove the mode registered as ``name``, if any (a plug-in's tests clean up after themselves)."""
    _MODES.unregister(name)


def registered_modes() -> tuple[str, ...]:
    """The names of the registered modes, built-ins first."""
    return _MODES.names()


def release_mode(name: str) -> ReleaseMode:
    """The mode registered as ``name``; a :class:`ModeError` naming the modes otherwise."""
    found = _MODES.get(str(name))
    if found is None:
        raise ModeError(f"unknown mode {name!r}", hint=f"modes: {', '.join(registered_modes())}")
    return found


def parse_mode(value: object) -> str:
    """``value`` as a mode name: a :class:`Mode` for a built-in, the registered name of a plug-in."""
    if isinstance(value, Mode):
        return value
    try:
        return Mode(str(value))
    except ValueError:
        return release_mode(str(value)).name


def check_requirements(mode: ReleaseMode, has_context: bool, policy: object | None) -> None:
    """A mode that needs a policy and a context has both (else a :class:`ModeError`, nothing read)."""
    if not mode.needs_context:
        return
    if not has_context:
        raise ModeError(f"--mode {mode.name} needs a context", hint="add --context sender=KIND:ID,recipient=KIND:ID,purpose=NAME")
    if policy is None:
        raise ModeError(f"--mode {mode.name} needs the deployment's policy, and none is configured",
                        hint='the custodian sets compiled = "FILE" under [policy] in the pimento.toml beside the database '
                        "(FILE from `pimento policy compile ... --out FILE`)")


def check_neighbourhood(mode: ReleaseMode, neighbours: Neighbourhood, *, explicit: bool) -> Neighbourhood | None:
    """The neighbourhood ``mode``'s answer holds for (None for an exact answer), if ``mode`` covers it.

    Every noisy built-in covers add-remove; only ``contextual`` (its bound,
    :mod:`pimento.sensitivity.contextual`) covers change and both. A mode without neighbourhood
    (``ci``) refuses an explicit ``--neighbours``.
    """
    if not mode.neighbourhoods:
        if explicit:
            noisy = ", ".join(name for name in registered_modes() if release_mode(name).neighbourhoods)
            raise ModeError(f"--neighbours applies to noisy releases ({noisy}), not to --mode {mode.name}",
                            hint="a CI answer is exact on the authorized data: drop --neighbours")
        return None
    if neighbours in mode.neighbourhoods:
        return neighbours
    covered = " and ".join(str(n) for n in mode.neighbourhoods)
    others = [release_mode(name) for name in registered_modes()]
    covering = next((m for m in others if neighbours in m.neighbourhoods), None)
    hint = ""
    if covering is not None:
        extra = " and ".join(str(n) for n in covering.neighbourhoods if n not in mode.neighbourhoods)
        hint = f"--mode {covering.name} covers {extra} neighbourhoods"
    raise ModeError(
        f"--mode {mode.name} gives guarantees for {covered} neighbours only, and this release needs {neighbours}",
        hint=hint + ("" if explicit else " (the custodian set [release] neighbours in pimento.toml)"),
    )
