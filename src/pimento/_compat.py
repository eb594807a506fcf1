"""The standard library of Python 3.11 on Python 3.10: the one home of these back-ports.

``tomllib`` (``tomli`` on 3.10), :class:`enum.StrEnum` and :data:`typing.Self`
(``typing_extensions`` on 3.10); pyproject.toml installs both back-ports on 3.10 only. The 3.10
``StrEnum`` behaves like 3.11's where Pimento relies on it: a member is a ``str``, equal to its
value, and ``str()`` and ``format()`` give the value (a plain ``str, Enum`` mixin gives
``"Mode.DP"`` on 3.11 and later, and its ``format()`` changed between versions).

    >>> from pimento._compat import StrEnum
    >>> class Colour(StrEnum):
    ...     RED = "red"
    >>> str(Colour.RED), f"{Colour.RED}", f"{Colour.RED:>5}", Colour.RED == "red"
    ('red', 'red', '  red', True)
    >>> Colour("red") is Colour.RED
    True
"""

from __future__ import annotations

import sys

__all__ = ["BackportStrEnum", "Self", "StrEnum", "tomllib"]

from enum import Enum


class BackportStrEnum(str, Enum):
    """Python 3.11's :class:`enum.StrEnum` for 3.10: members are strings; str() and format() give the value.

    Defined on every version so that the tests compare it with 3.11's; ``StrEnum`` is 3.11's own there.
    """

    def __new__(cls, value: str) -> BackportStrEnum:
        if not isinstance(value, str):
            raise TypeError(f"{value!r} is not a string")
        member = str.__new__(cls, value)
        member._value_ = value
        return member

    def __str__(self) -> str:
        return str.__str__(self)

    def __format__(self, format_spec: str) -> str:
        return str.__format__(str(self), format_spec)

    @staticmethod
    def _generate_next_value_(name: str, start: int, count: int, last_values: list[str]) -> str:
        return name.lower()


if sys.version_info >= (3, 11):
    import tomllib
    from enum import StrEnum
    from typing import Self
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib
    from typing_extensions import Self

    StrEnum = BackportStrEnum
