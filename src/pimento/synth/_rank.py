"""The random order inside units: rows ranked by a keyed hash of their integer key.

Truncation (``cap_fanout``) keeps the first ``cap`` children of each parent, and the per-unit
choices (models, column types, link in-degrees) keep the first ``m`` rows of each unit, in one
order: rows sorted by ``(hash, key)``, where ``hash`` is a keyed hash of the row's own integer key
(its primary key, or a unique key, every column an integer) and the hash's key is drawn from the
noise source. The same order is one SQL expression (:meth:`RowHash.sql`), so an engine can
choose the same rows with ``ROW_NUMBER() OVER (PARTITION BY unit ORDER BY hash, key)``
(``pimento.synth._engine_counts``). Which rows of a unit come first depends only on that unit's
own keys and on the hash key, never on other units (PRIVACY.md, "Where the exact counts are
computed").

The hash is a polynomial over the prime field of ``P = 2^31 - 1`` (a random affine combination of
the key columns, then a random quadratic): every intermediate stays below ``2^63``, so numpy's
int64 and every engine's BIGINT compute the same value. A table without such a key is ranked by a
random permutation from the same source (in Python only: its rows cannot be chosen in SQL).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["P", "MAX_KEY_COLUMNS", "RowHash", "order_within"]

#: The prime modulus of the hash (every value is in ``[0, P)``).
P = 2**31 - 1
#: Key columns the hash takes (a longer key ranks by permutation).
MAX_KEY_COLUMNS = 8


@dataclass(frozen=True)
class RowHash:
    """``h(k_1..k_n) = q(a_n (... (a_1 (b + k_1 mod P) mod P + k_2 mod P) ...) mod P)`` with
    ``q(x) = ((c_1 x + c_2) mod P) x + c_3 mod P``; every coefficient in ``[1, P)``."""

    a: tuple[int, ...]
    b: int
    c: tuple[int, int, int]

    @classmethod
    def draw(cls, rng: np.random.Generator) -> RowHash:
        """A hash key drawn from ``rng`` (the synthesizer passes a generator seeded from the noise source)."""
        coef = [int(x) for x in rng.integers(1, P, size=MAX_KEY_COLUMNS + 4)]
        return cls(tuple(coef[:MAX_KEY_COLUMNS]), coef[MAX_KEY_COLUMNS], (coef[-3], coef[-2], coef[-1]))

    def values(self, keys: list[np.ndarray]) -> np.ndarray:
        """The hash of every row, from its key columns (integer arrays; NULL given as 0).

        >>> h = RowHash((3, 5, 7, 11, 13, 17, 19, 23), 29, (31, 37, 41))
        >>> h.values([np.array([0, 1, -1, 2**40])]).tolist() == [h.one((0,)), h.one((1,)), h.one((-1,)), h.one((2**40,))]
        True
        """
        if not 1 <= len(keys) <= MAX_KEY_COLUMNS:
            raise ValueError(f"a row hash takes 1 to {MAX_KEY_COLUMNS} key columns")
        h = np.full(len(keys[0]), self.b, dtype=np.int64)
        for a, k in zip(self.a, keys):
            h = ((h + np.mod(np.asarray(k, dtype=np.int64), P)) * a) % P
        return (((h * self.c[0] + self.c[1]) % P) * h + self.c[2]) % P

    def one(self, key: tuple[int, ...]) -> int:
        """The hash of one key in Python integers (the definition the vectorized forms follow)."""
        h = self.b
        for a, k in zip(self.a, key):
            h = ((h + k % P) * a) % P
        return (((h * self.c[0] + self.c[1]) % P) * h + self.c[2]) % P

    def sql(self, columns: list[str]) -> str:
        """The same hash as a DuckDB SQL expression over ``columns`` (quoted, qualified column
        references); sqlglot transpiles it to the other dialects. Integer arithmetic only, every
        intermediate below 2^63; ``%`` takes the dividend's sign in SQL, hence ``(x % P + P) % P``."""
        if not 1 <= len(columns) <= MAX_KEY_COLUMNS:
            raise ValueError(f"a row hash takes 1 to {MAX_KEY_COLUMNS} key columns")
        h = f"CAST({self.b} AS BIGINT)"
        for a, col in zip(self.a, columns):
            k = f"((COALESCE(CAST({col} AS BIGINT), 0) % {P}) + {P}) % {P}"
            h = f"((({h}) + {k}) * {a}) % {P}"
        return f"((((({h}) * {self.c[0]} + {self.c[1]}) % {P}) * ({h}) + {self.c[2]}) % {P})"


def order_within(group: np.ndarray, rank: np.ndarray, keys: list[np.ndarray]) -> np.ndarray:
    """Positions sorted by ``group``, then ``rank``, then the key columns, then position (the order
    an engine's ``ORDER BY hash, key`` gives inside each partition, ties of duplicate keys aside)."""
    pos = np.arange(len(group))
    return np.lexsort((pos, *reversed(keys), rank, group))
