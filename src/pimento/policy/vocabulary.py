"""The custodian's declared data vocabulary: which columns a phrase of a policy text means (issue 27).

Two sources, both the custodian's: the ``[vocabulary]`` table of ``pimento.toml``
(``"academic record" = ["Grade.score", "Enrollment.course_id"]``) and the file that
``pimento policy extract --vocabulary`` names. :func:`merge_vocabularies` merges them, the file
taking precedence for a phrase both declare. A phrase is matched by its :func:`phrase_key`
(lower case, possessives, articles and ``of``/``any`` dropped), so ``a student's academic
record`` in the text matches the declared ``academic record``.

:func:`check_vocabulary` checks every column against the schema and returns the columns in the
database's own spelling; an unknown one is an error naming the source (the ``pimento.toml`` file
or the vocabulary file) and the phrase, with the closest name. A declared phrase grounds a data
phrase to exactly its columns: never more (fail narrow).
"""

from __future__ import annotations

import re

from pimento.errors import CatalogError, ConfigError, PolicyError, UserError
from pimento.schema import Catalog

__all__ = ["check_vocabulary", "merge_vocabularies", "phrase_key"]

_FILLER = ("the", "a", "an", "its", "their", "his", "her", "of", "any")


def phrase_key(phrase: str) -> str:
    """A data phrase as a vocabulary key: lower case, possessives and articles dropped."""
    text = re.sub(r"^.*'s\s+", "", phrase.lower())
    return " ".join(w for w in re.findall(r"[a-z0-9]+", text) if w not in _FILLER)


def merge_vocabularies(declared: dict[str, list[str]] | None,
                       given: dict[str, list[str]] | None) -> dict[str, list[str]] | None:
    """``declared`` (pimento.toml's ``[vocabulary]``) with ``given`` (the ``--vocabulary`` file) over it:
    a phrase of both (same :func:`phrase_key`) takes the file's columns. None when both are empty."""
    if not declared and not given:
        return None
    overridden = {phrase_key(p) for p in given or {}}
    merged = {p: list(c) for p, c in (declared or {}).items() if phrase_key(p) not in overridden}
    merged.update({p: list(c) for p, c in (given or {}).items()})
    return merged


def check_vocabulary(vocabulary: dict[str, list[str]], catalog: Catalog, *, source: str,
                     config: bool = False) -> dict[str, list[str]]:
    """``vocabulary`` with every ``Table.column`` checked against ``catalog`` and written in its spelling.

    Raises ConfigError (``config``: the entries come from ``source``, a pimento.toml, as
    ``[vocabulary] "phrase"``) or PolicyError (a vocabulary file) naming ``source``, the phrase and the
    unknown column, with the catalog's closest name as the hint; also a phrase with no word left
    once articles are dropped (it could never match).
    """
    out: dict[str, list[str]] = {}
    where = "[vocabulary] " if config else "phrase "
    error: type[UserError] = ConfigError if config else PolicyError
    for phrase, columns in vocabulary.items():
        if not phrase_key(phrase):
            raise error(f"{source}: {where}{phrase!r}: no word of it is left to match once articles are dropped")
        found = []
        for ref in columns:
            table_name, _, column_name = str(ref).partition(".")
            try:
                table = catalog.table(table_name.strip())
                found.append(f"{table.name}.{table.column(column_name.strip()).name}")
            except CatalogError as exc:
                raise error(f"{source}: {where}{phrase!r}: unknown column {ref!r}", hint=exc.hint) from None
        out[phrase] = list(dict.fromkeys(found))
    return out
