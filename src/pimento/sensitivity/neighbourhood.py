"""The neighbourhoods a guarantee can hold for: one home for their names, spellings and words.

Two databases are neighbours when they differ by one tuple of a private relation: inserted or
deleted (``add-remove``, the default and the paper's), changed in place (``change``), or either
(``both``). ``both`` is stricter than each of the others (its neighbour relation is their union);
``add-remove`` and ``change`` are incomparable at the same epsilon (add/remove epsilon-DP gives
change 2 epsilon-DP only; change-DP says nothing about whether a tuple is present).

    >>> Neighbourhood.parse("add_remove") is Neighbourhood.ADD_REMOVE
    True
    >>> str(Neighbourhood.BOTH)
    'both'
"""

from __future__ import annotations

from pimento._compat import StrEnum

__all__ = ["Neighbourhood"]


class Neighbourhood(StrEnum):
    """A neighbourhood; its value is the one spelling every setting, option and answer uses."""

    ADD_REMOVE = "add-remove"
    CHANGE = "change"
    BOTH = "both"

    @classmethod
    def parse(cls, value: object) -> Neighbourhood | None:
        """``value`` as a neighbourhood (case, ``_`` and ``/`` for ``-`` tolerated), or None when it names none."""
        if isinstance(value, cls):
            return value
        name = str(value).strip().lower().replace("_", "-").replace("/", "-")
        try:
            return cls(name)
        except ValueError:
            return None

    @property
    def words(self) -> str:
        """What the neighbourhood means, in words (shown with every noisy answer)."""
        return _WORDS[self]

    def is_at_least_as_strict_as(self, other: Neighbourhood) -> bool:
        """Whether a guarantee for ``self`` implies one for ``other`` at the same epsilon."""
        return self is other or self is Neighbourhood.BOTH


_WORDS = {
    Neighbourhood.ADD_REMOVE: "add/remove neighbours (one tuple of a private relation inserted or deleted)",
    Neighbourhood.CHANGE: "change neighbours (one tuple of a private relation changed in place)",
    Neighbourhood.BOTH: "add/remove and change neighbours (one tuple of a private relation inserted, deleted or changed)",
}
