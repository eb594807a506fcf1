"""The LLM expander: an LLM proposes a batch of DP-compatible actions as JSON (paper Section 4.1).

Each proposal is validated before it becomes a child: the table must exist and not be in the prefix
yet, the join must be an equality between a column of the prefix and a column of the new table, the
filter must be a predicate on the new table only (it is parsed by the same front end as any query),
and SetCount must name a column of the prefix. Invalid proposals are dropped and counted by reason.
Relation keys used by siblings are excluded. The prompt holds the schema, the question, the query
built so far and values of the SYNTHETIC database only; the LLM never decides anything about
privacy. When the LLM's answer is unusable (unreachable, timeout, garbage after one repair round),
the expander falls back to the offline schema-graph expander when one is given, and says so in
:attr:`LLMExpander.events`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp

from pimento.engines.base import Engine
from pimento.errors import LLMError, UserError
from pimento.llm import ExpansionAnswer, SyntheticValues, Usage, complete_structured_one, expansion_messages, open_backend
from pimento.llm.base import Backend
from pimento.llm.prompts import ExpansionAction
from pimento.schema import Catalog
from pimento.search.actions import Action, AddRelation, PartialQuery, SetCount, Stop
from pimento.search.expanders import Expander, NodeState, SchemaGraphExpander, _alias_for, forced_proposals, register_expander
from pimento.sql import parse_count_query
from pimento.sql.ir import Attribute, Count, JoinCondition, Relation
from pimento.sql.quote import quote_identifier

__all__ = ["LLMExpander", "open_llm_expander"]


@dataclass
class LLMExpander:
    """Proposes up to ``size`` actions per expansion with one structured LLM call."""

    backend: Backend
    catalog: Catalog
    question: str
    values: SyntheticValues | None = None
    size: int = 5
    fallback: Expander | None = None
    usage: Usage = field(default_factory=Usage)
    name: str = "llm"
    #: Why proposals were dropped, and how often the offline fallback was used.
    events: Counter = field(default_factory=Counter)

    def propose(self, state: NodeState, *, exclude: frozenset[str], limit: int) -> list[tuple[Action, frozenset[int]]]:
        prefix = state.prefix
        forced = forced_proposals(prefix, exclude)
        if forced is not None:
            return forced
        partial = prefix.complete()
        messages = expansion_messages(
            self.catalog,
            self.question,
            partial.to_sql() if partial is not None else None,
            values=self.values,
            size=min(self.size, max(1, limit)),
        )
        try:
            answer = complete_structured_one(self.backend, messages, ExpansionAnswer, usage=self.usage)
        except LLMError:
            self.events["llm_unusable"] += 1
            if self.fallback is None:
                return []
            self.events["offline_fallback"] += 1
            return self.fallback.propose(state, exclude=exclude, limit=limit)
        out: list[tuple[Action, frozenset[int]]] = []
        seen = set(exclude)
        for proposal in answer.actions:
            try:
                action = self._action(proposal, prefix)
            except _Invalid as exc:
                self.events[f"dropped:{exc.reason}"] += 1
                continue
            if action.key in seen:
                self.events["dropped:sibling_key"] += 1
                continue
            seen.add(action.key)
            out.append((action, frozenset()))
            if len(out) >= limit:
                break
        return out

    # ------------------------------------------------------------------ validation
    def _action(self, proposal: ExpansionAction, prefix: PartialQuery) -> Action:
        if proposal.kind == "stop":
            if not prefix.relations:
                raise _Invalid("stop_on_empty_query")
            return SetCount(Count()) if prefix.count is None else Stop()
        if proposal.kind == "set_count":
            if not prefix.relations:
                raise _Invalid("count_before_relation")
            if not proposal.column or proposal.column.strip() == "*":
                return SetCount(Count())
            return SetCount(Count(self._prefix_attribute(proposal.column, prefix), bool(proposal.distinct)))
        return self._add_relation(proposal, prefix)

    def _add_relation(self, proposal: ExpansionAction, prefix: PartialQuery) -> AddRelation:
        if not proposal.table or not self.catalog.has_table(proposal.table):
            raise _Invalid("unknown_table")
        table = self.catalog.table(proposal.table)
        if prefix.has_table(table.name):
            raise _Invalid("self_join")
        alias = _alias_for(table.name, prefix)
        relation = Relation(alias, table.name)
        joins: tuple[JoinCondition, ...] = ()
        if prefix.relations:
            if not proposal.join:
                raise _Invalid("missing_join")
            joins = (self._join(proposal.join, prefix, relation),)
        selection = None
        if proposal.filter and proposal.filter.strip().lower() not in ("null", "none", ""):
            try:
                single = parse_count_query(f"SELECT COUNT(*) FROM {quote_identifier(table.name)} WHERE {proposal.filter}", self.catalog)
            except UserError:
                raise _Invalid("bad_filter") from None
            if len(single.relations) != 1:
                raise _Invalid("filter_needs_other_relations")
            predicate = single.selection_of(single.relations[0].alias)
            if predicate is not None:
                tree = sqlglot.parse_one(predicate)
                for column in tree.find_all(exp.Column):
                    column.set("table", exp.to_identifier(alias))
                selection = tree.sql()
        return AddRelation(relation, joins, selection)

    def _join(self, text: str, prefix: PartialQuery, new: Relation) -> JoinCondition:
        try:
            tree = sqlglot.parse_one(text)
        except sqlglot.errors.ParseError:
            raise _Invalid("bad_join") from None
        if not (isinstance(tree, exp.EQ) and isinstance(tree.this, exp.Column) and isinstance(tree.expression, exp.Column)):
            raise _Invalid("join_not_an_equality")
        sides = []
        for column in (tree.this, tree.expression):
            qualifier = column.table
            new_table = self.catalog.table(new.table)
            if qualifier.lower() in (new.alias.lower(), new.table.lower()) and new_table.has_column(column.name):
                sides.append(("new", Attribute(new.alias, new_table.column(column.name).name)))
                continue
            try:
                sides.append(("old", self._prefix_attribute(f"{qualifier}.{column.name}" if qualifier else column.name, prefix)))
            except _Invalid:
                raise _Invalid("join_unknown_column") from None
        kinds = sorted(kind for kind, _ in sides)
        if kinds != ["new", "old"]:
            raise _Invalid("join_does_not_connect")
        return JoinCondition(sides[0][1], sides[1][1])

    def _prefix_attribute(self, text: str, prefix: PartialQuery) -> Attribute:
        qualifier, _, name = text.strip().rpartition(".")
        candidates = []
        for relation in prefix.relations:
            table = self.catalog.table(relation.table)
            if qualifier and qualifier.lower() not in (relation.alias.lower(), relation.table.lower()):
                continue
            if table.has_column(name):
                candidates.append(Attribute(relation.alias, table.column(name).name))
        if len(candidates) != 1:
            raise _Invalid("unknown_or_ambiguous_column")
        return candidates[0]


class _Invalid(Exception):
    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def open_llm_expander(
    url: str, synthetic: Engine, catalog: Catalog, question: str, *, usage: Usage, max_relations: int, size: int
) -> LLMExpander:
    """The LLM expander of ``pimento search``/``ask``: batches of actions proposed by the model at
    ``url`` from the synthetic copy's values, with the offline schema-graph expander as its fallback.

    Raises:
        UserError: the endpoint or the synthetic copy's values cannot be opened.
    """
    backend = open_backend(url=url)
    values = SyntheticValues.from_engine(synthetic, catalog)
    fallback = SchemaGraphExpander(catalog, max_relations=max_relations)
    return LLMExpander(backend, catalog, question, values=values, size=size, fallback=fallback, usage=usage)


register_expander("llm", lambda **kw: LLMExpander(**kw))
