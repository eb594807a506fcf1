"""The offline parser's candidate filters: one predicate, a mention's ranked options, and the "or" form.

A :class:`_Pred` is ``table.column <op> value(s)`` rendered to a sqlglot expression; an
:class:`_Option` is one way to read a mention (its predicates, a score, why); a :class:`_Mention`
is the span of question tokens with its ranked options.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlglot import exp


@dataclass(frozen=True)
class _Pred:
    table: str
    column: str
    op: str
    values: tuple[Any, ...]

    def render(self, alias: str) -> exp.Expr:
        col = exp.column(self.column, table=alias, quoted=True)
        lits = [_literal(v) for v in self.values]
        if self.op == "BETWEEN":
            return exp.Between(this=col, low=lits[0], high=lits[1])
        if self.op == "LIKE":
            return exp.Like(this=col, expression=lits[0])
        if self.op == "OR=":
            return exp.paren(exp.or_(*[exp.EQ(this=col.copy(), expression=lit) for lit in lits]), copy=False)
        ops = {"=": exp.EQ, "<>": exp.NEQ, ">": exp.GT, "<": exp.LT, ">=": exp.GTE, "<=": exp.LTE}
        if len(lits) > 1:
            return exp.paren(exp.or_(*[ops[self.op](this=col.copy(), expression=lit) for lit in lits]), copy=False)
        return ops[self.op](this=col, expression=lits[0])

    def describe(self) -> str:
        vals = " or ".join(repr(v) for v in self.values)
        return f"{self.table}.{self.column} {self.op} {vals}"


def _literal(value: Any) -> exp.Expr:
    if isinstance(value, bool):
        return exp.Boolean(this=value)
    if isinstance(value, (int, float)):
        return exp.Literal.number(value)
    return exp.Literal.string(str(value))


@dataclass(frozen=True)
class _Option:
    preds: tuple[_Pred, ...]
    score: float
    why: str


@dataclass
class _Mention:
    tokens: frozenset[int]
    options: list[_Option]
    optional: bool
    text: str


def _top(options: list[_Option], n: int = 4) -> list[_Option]:
    best: dict[tuple, _Option] = {}
    for o in options:
        key = tuple((p.table, p.column, p.op, p.values) for p in o.preds)
        if key not in best or best[key].score < o.score:
            best[key] = o
    return sorted(best.values(), key=lambda o: -o.score)[:n]


def _as_like(option: _Option) -> _Option:
    """An open literal's option as a substring match: ``c = 'NY'`` -> ``c LIKE '%NY%'``."""
    preds = tuple(
        _Pred(p.table, p.column, "LIKE", (f"%{p.values[0]}%",)) if isinstance(p, _Pred) and p.op == "=" and len(p.values) == 1 else p
        for p in option.preds
    )
    return _Option(preds, option.score, option.why + " (a substring: LIKE)")


def _mark_disjunction(m: _Mention) -> None:
    """Options that hold two predicates of one column from an "or" are rendered as one OR."""
    fixed = []
    for o in m.options:
        if len(o.preds) == 2 and (o.preds[0].table, o.preds[0].column) == (o.preds[1].table, o.preds[1].column):
            fixed.append(_Option((_OrPred(o.preds[0], o.preds[1]),), o.score, o.why))  # type: ignore[arg-type]
        else:
            fixed.append(o)
    m.options = fixed


@dataclass(frozen=True)
class _OrPred:
    left: _Pred
    right: _Pred

    @property
    def table(self) -> str:
        return self.left.table

    @property
    def column(self) -> str:
        return self.left.column

    def render(self, alias: str) -> exp.Expr:
        return exp.paren(exp.or_(self.left.render(alias), self.right.render(alias)), copy=False)

    def describe(self) -> str:
        return f"({self.left.describe()} or {self.right.describe()})"
