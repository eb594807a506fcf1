"""Sensitivity-guided Monte Carlo tree search (Algorithms 1 and 2 of the paper's appendix).

The search object is handed the SYNTHETIC engine only: every answer, containment check and
residual sensitivity it computes comes from the synthetic database, so the choice of query is
post-processing of the synthetic release and costs no privacy.

One rollout: select with UCT from the root until a node with fewer than ``k * sqrt(N(v))`` children
(progressive widening); expand it with the expander (a batch of at most ``expansion_size`` actions,
excluding relation keys used by siblings, pruning sensitivity-raising AddRelation children after
``alpha_prune * rollouts`` rollouts); descend into one new child; continue to ``Stop``; evaluate on the
synthetic database; back up ``R_corr + G_t`` on every edge, ``G_t = -lambda_s * nu(phi_r)`` on edges
that added relation r (equation "structured backup").

Formulations are compared by a predicted error (:class:`~pimento.search.evaluate.ErrorModel`): each
cluster's incumbent, pruning, the direct reward and the final choice. Without a model it is RS (the
paper); ``pimento ask`` passes the noise of the mechanism the release would use
(:mod:`pimento.release.predicted_error`), so that a formulation is chosen for the answer it gives.
The Shapley credits stay RS's attribution.
"""

from __future__ import annotations

import math
import random
import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Literal

import sqlglot
from sqlglot import exp

from pimento.engines import Engine
from pimento.errors import PimentoError, SearchError
from pimento.schema import Catalog
from pimento.search.actions import Action, AddRelation, PartialQuery, SetCount, Stop, decompose
from pimento.search.evaluate import Clusters, ErrorModel, Evaluation, QueryEvaluator, SensitivityOracle, residual_oracle
from pimento.search.expanders import Expander, NodeState, SchemaGraphExpander
from pimento.search.config import FINAL_VOTES, VARIANTS, SearchConfig, config_for_variant, votes_for_samples
from pimento.search.query_intent import Intent, intent_of
from pimento.sql.ir import CountQuery
from pimento.sql.quote import quote_identifier

__all__ = ["FINAL_VOTES", "VARIANTS", "Alternative", "SearchConfig", "SearchResult", "SensitivitySearch", "config_for_variant", "votes_for_samples"]


@dataclass
class _Node:
    state: NodeState
    parent: _Node | None = None
    action: Action | None = None
    children: list[_Node] = field(default_factory=list)
    visits: int = 0  # N(v)
    edge_visits: int = 0  # N(parent, action)
    edge_value: float = 0.0  # Q(parent, action)
    exhausted: bool = False
    #: Nothing new can come from this subtree: a completed query (already evaluated, its answer
    #: and RS cached), or an exhausted node whose children are all done. Selection skips it.
    done: bool = False

    @property
    def terminal(self) -> bool:
        return self.state.prefix.stopped

    def child_for(self, action: Action, intent: Intent | None = None) -> _Node | None:
        return next((c for c in self.children if c.action == action and (intent is None or c.state.intent is intent)), None)


def _finite(x: float) -> float | None:
    """``x`` for JSON: None where no finite predicted error exists (not computed, or a formulation the release refuses)."""
    return x if math.isfinite(x) else None


@dataclass(frozen=True)
class Alternative:
    """A distinct valid query the search evaluated (``predicted_error``: the search's model's, nan when not computed)."""

    sql: str
    query: CountQuery
    synthetic_answer: int
    synthetic_rs: float
    cluster: int
    cluster_size: int
    source: str
    predicted_error: float = float("nan")

    def to_dict(self) -> dict[str, Any]:
        return {
            "sql": self.sql,
            "synthetic_answer": self.synthetic_answer,
            "synthetic_rs": self.synthetic_rs,
            "synthetic_predicted_error": _finite(self.predicted_error),
            "cluster": self.cluster,
            "cluster_size": self.cluster_size,
            "source": self.source,
        }


@dataclass(frozen=True)
class SearchResult:
    """The chosen query q*, its cluster, and everything the search considered.

    ``synthetic_rs``: q*'s RS on the copy (the paper's figure); ``predicted_error``: q*'s predicted
    error on the copy, what the search chose it by, and ``error_basis`` what that number is.
    """

    query: CountQuery
    sql: str
    synthetic_rs: float
    synthetic_answer: int
    cluster_size: int
    alternatives: tuple[Alternative, ...]
    rollouts: int
    evaluations: int
    pruned: int
    invalid: int
    seconds: float
    zero_shot_top1: CountQuery | None
    predicted_error: float = float("nan")
    error_basis: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "sql": self.sql,
            "synthetic_rs": self.synthetic_rs,
            "synthetic_predicted_error": _finite(self.predicted_error),
            "predicted_error_basis": self.error_basis,
            "synthetic_answer": self.synthetic_answer,
            "cluster_size": self.cluster_size,
            "alternatives": [a.to_dict() for a in self.alternatives],
            "rollouts": self.rollouts,
            "evaluations": self.evaluations,
            "pruned": self.pruned,
            "invalid": self.invalid,
            "seconds": round(self.seconds, 4),
        }


class SensitivitySearch:
    """MCTS over DP-compatible actions, evaluated on the synthetic database only.

    ``error_model``: what formulations are compared by (module docstring); default RS.
    """

    def __init__(
        self,
        synthetic: Engine,
        catalog: Catalog,
        *,
        beta: float,
        config: SearchConfig | None = None,
        expander: Expander | None = None,
        oracle: SensitivityOracle | None = None,
        error_model: ErrorModel | None = None,
    ):
        self.synthetic = synthetic
        self.catalog = catalog
        self.beta = beta
        self.config = config or SearchConfig()
        self.expander = expander or SchemaGraphExpander(catalog, max_relations=self.config.max_relations)
        self.evaluator = QueryEvaluator(
            synthetic,
            catalog,
            oracle or residual_oracle(synthetic, catalog, beta),
            rs_oracle=None if oracle is not None else residual_oracle(synthetic, catalog, beta, attribution=False),
            error_model=error_model,
            bucket_relative=self.config.bucket_relative,
        )
        self._rng = random.Random(self.config.seed)
        self.clusters = Clusters()
        self._sources: dict[CountQuery, str] = {}
        self._order = 0
        self._s_ref = 1.0
        self._pruned = 0
        self._invalid = 0
        self._evaluations = 0
        self._fan_outs: dict[tuple[str, str, str | None], int | None] = {}
        #: Best rank of the warm-start intent each evaluated query follows (0 = the top candidate).
        self._ranks: dict[CountQuery, int] = {}
        #: Rank of each warm-start proposal itself (they vote in the final selection).
        self._proposals: dict[CountQuery, int] = {}
        #: The intent every rollout serves (ranked votes: the best-ranked proposal that runs).
        self._focus: Intent | None = None

    # ------------------------------------------------------------------ public
    def run(self, candidates: list[CountQuery]) -> SearchResult:
        """Search from ranked warm-start candidates (best first); return the chosen query."""
        start = time.perf_counter()
        if not candidates:
            raise SearchError("no DP-compatible candidate query to start the search from",
                              hint="rephrase the question or pass --seed-sql")
        candidates = [q.canonical() for q in candidates]
        intents = [intent_of(q, self.catalog) for q in candidates]
        self.root = _Node(NodeState(PartialQuery(), intents[0]))
        self._root_intents = intents
        self._root_turn = 0
        warm_rs = []
        self._focus = None
        for rank, query in enumerate(candidates):
            self._proposals.setdefault(query, rank)
            evaluation = self._evaluate(query, source=f"warm-start #{rank + 1}", rank=rank)
            if evaluation.valid and evaluation.sensitivity is not None:
                warm_rs.append(evaluation.sensitivity.rs)
            if evaluation.valid and self._focus is None and self.config.final_votes == "ranked":
                # With ranked votes the best-ranked proposal that runs decides the answer cluster
                # (2^-0 outweighs every lower rank together), so every rollout goes to finding its
                # least noisy formulation rather than to readings that cannot win.
                self._focus = intents[rank]
        self._s_ref = statistics.median(warm_rs) if warm_rs else 1.0
        if self.config.warm_start:
            for query, intent in zip(candidates, intents, strict=True):
                path = self._insert(query, intent)
                self._backup(path, self.evaluator.evaluate(query, with_sensitivity=self._uses_sensitivity))
                self._mark_done(path)
        for i in range(self.config.rollouts):
            if self.root.done:
                break  # every reachable formulation has been evaluated: more rollouts add nothing
            self._rollout(i)
        return self._select(candidates, time.perf_counter() - start)

    # ------------------------------------------------------------------ tree
    @property
    def _uses_sensitivity(self) -> bool:
        return not self.config.ignore_sensitivity

    def _insert(self, query: CountQuery, intent: Intent) -> list[_Node]:
        node, path = self.root, []
        placed: set[int] = set()
        for action in decompose(query):
            # Below the root a path belongs to one intent: two warm starts that begin with the same
            # action but read the question differently get separate subtrees, so every query the
            # search completes there is credited to the right proposal's intent (and rank).
            child = node.child_for(action) if node is not self.root else node.child_for(action, intent)
            if isinstance(action, AddRelation):
                placed |= {i for i, f in enumerate(intent.filters) if f.origin_alias == action.relation.alias}
            if child is None:
                state = NodeState(node.state.prefix.apply(action), node.state.intent if node is not self.root else intent, frozenset(placed))
                child = _Node(state, node, action)
                node.children.append(child)
            node = child
            path.append(node)
        return path

    def _rollout(self, i: int) -> None:
        node, path = self.root, []
        for _ in range(self.config.max_depth):
            if node.terminal:
                break
            limit = max(1, math.ceil(self.config.widening_k * math.sqrt(max(1, node.visits))))
            open_children = [c for c in node.children if not c.done]
            if node is self.root and self._focus is not None:
                open_children = [c for c in open_children if c.state.intent is self._focus]
            if (len(node.children) < limit or not open_children) and not node.exhausted:
                # Progressive widening decides whether to expand (an expansion adds a batch); a node
                # whose children are all done is widened regardless, rather than revisited.
                new = self._expand(node, self.config.expansion_size, i)
                if new:
                    node = self._pick_new(new)
                    path.append(node)
                    continue
                node.exhausted = True
            if not open_children:
                break
            node = self._uct(node, open_children)
            path.append(node)
        query = node.state.prefix.complete() if node.terminal else None
        rank = next((r for r, it in enumerate(self._root_intents) if it is node.state.intent), len(self._root_intents))
        evaluation = self._evaluate(query, source="search", rank=rank) if query is not None else Evaluation(None, False, "dead end")
        if not evaluation.valid:
            self._invalid += 1
        self._backup(path, evaluation)
        self._mark_done(path)

    def _mark_done(self, path: list[_Node]) -> None:
        """Mark a completed query's node done, and every ancestor left with nothing new to offer."""
        nodes = [self.root, *path]
        last = nodes[-1]
        if not (last.terminal or (last.exhausted and all(c.done for c in last.children))):
            return
        last.done = True
        for node in reversed(nodes[:-1]):
            if node.exhausted and all(c.done for c in node.children):
                node.done = True
            else:
                break

    def _expand(self, node: _Node, limit: int, rollout: int) -> list[_Node]:
        if node is self.root:
            if self._focus is not None:
                intent = self._focus
            else:
                intent = self._root_intents[self._root_turn % len(self._root_intents)]
                self._root_turn += 1
            state = NodeState(PartialQuery(), intent)
        else:
            state = node.state
        # Siblings' keys are excluded; at the root only those of the same intent (each warm start
        # owns its subtree, so another reading's first relation does not block this one's).
        exclude = frozenset(
            c.action.key for c in node.children if c.action is not None and (node is not self.root or c.state.intent is state.intent)
        )
        proposals = self.expander.propose(state, exclude=exclude, limit=limit)
        new = []
        for action, placed in proposals:
            child_state = NodeState(state.prefix.apply(action), state.intent, state.placed | placed)
            if isinstance(action, AddRelation) and self._should_prune(state.prefix, child_state, action, rollout):
                self._pruned += 1
                continue
            child = _Node(child_state, node, action)
            node.children.append(child)
            new.append(child)
        return new

    def _pick_new(self, new: list[_Node]) -> _Node:
        """Descend into a new child: uniformly at random, or (sensitivity prior) the lowest fan-out.

        The prior scores an AddRelation child by the largest number of tuples of the new relation
        (after its filter) that share one value of the join attribute: the multiplicity that
        residual sensitivity multiplies in when this relation is added. It costs one cached
        GROUP BY per (relation, attribute, filter) on the synthetic database.
        """
        if self.config.sensitivity_prior and self._uses_sensitivity:
            stops = [c for c in new if isinstance(c.action, (SetCount, Stop))]
            if stops:
                # The intent is complete here: a longer join can only add multiplicities.
                return stops[0]
            scored = []
            for child in new:
                fan_out = self._fan_out(child.action) if isinstance(child.action, AddRelation) else None
                scored.append((math.inf if fan_out is None else fan_out, self._rng.random(), child))
            if any(s[0] < math.inf for s in scored):
                return min(scored, key=lambda s: (s[0], s[1]))[2]
        return self._rng.choice(new)

    def _fan_out(self, action: AddRelation) -> int | None:
        if not action.joins:
            return None
        join = action.joins[0]
        attr = join.left if join.left.alias == action.relation.alias else join.right
        key = (action.relation.table, attr.column, action.selection)
        if key not in self._fan_outs:
            d = self.synthetic.dialect
            table = quote_identifier(action.relation.table, d)
            alias = quote_identifier(action.relation.alias, d)
            column = f"{alias}.{quote_identifier(attr.column, d)}"
            where = ""
            if action.selection:
                where = " WHERE " + sqlglot.parse_one(action.selection).sql(dialect=d)
            sql = f"SELECT MAX(n) FROM (SELECT COUNT(*) AS n FROM {table} AS {alias}{where} GROUP BY {column}) AS g"
            try:
                value = self.synthetic.execute(sql).scalar()
                self._fan_outs[key] = int(value or 0)
            except PimentoError:
                self._fan_outs[key] = None
        return self._fan_outs[key]

    def _uct(self, node: _Node, children: list[_Node]) -> _Node:
        unvisited = [c for c in children if c.edge_visits == 0]
        if unvisited:
            return self._rng.choice(unvisited)
        log_n = math.log(max(1, node.visits))
        return max(
            children,
            key=lambda c: c.edge_value / c.edge_visits + self.config.exploration_c * math.sqrt(log_n / c.edge_visits),
        )

    # ------------------------------------------------------------------ pruning
    def _completed_prefix(self, state: NodeState) -> CountQuery | None:
        prefix = state.prefix
        if prefix.count is None:
            count_intent = state.intent.count
            for r in prefix.relations:  # the first relation that can host the count
                h = self._count_host(state.intent, r.table)
                if h is not False:
                    prefix = prefix.apply(SetCount(count_intent.on(r.alias, r.table, self.catalog, h)))
                    break
        return prefix.complete()

    def _count_host(self, intent: Intent, table: str) -> str | None | Literal[False]:
        host = getattr(self.expander, "count_host", None)
        if host is not None:
            return host(intent, table)
        return None if intent.count.column is None else (intent.count.column if intent.count.hostable_by(table, self.catalog) else False)

    def _prefix_floor(self, state: NodeState) -> float | None:
        """The model's lower bound on the predicted error of every query grown from this prefix (RS only: no Shapley)."""
        query = self._completed_prefix(state)
        if query is None:
            return None
        return self.evaluator.floor(query)

    def _should_prune(self, before: PartialQuery, after: NodeState, action: AddRelation, rollout: int) -> bool:
        """Prune a relation whose prefix, under containment, can only grow into formulations noisier than every incumbent.

        Like with like: the incumbents' predicted errors against the model's floor for the prefix
        (``after`` has two relations at least, so its extensions are never a one-relation count).
        """
        if not (self.config.pruning and self._uses_sensitivity) or not before.relations:
            return False
        if rollout < self.config.alpha_prune * self.config.rollouts:
            return False
        ceiling = self.clusters.max_incumbent()
        if ceiling is None or not self._containment(before, action):
            return False
        floor = self._prefix_floor(after)
        return floor is not None and floor > ceiling

    def _containment(self, before: PartialQuery, action: AddRelation) -> bool:
        """Every join value of the prefix has a match in the new relation (on the synthetic database)."""
        prefix_query = before.complete()
        if prefix_query is None or not action.joins:
            return False
        join = action.joins[0]
        inside, outside = (join.left, join.right) if join.left.alias != action.relation.alias else (join.right, join.left)
        tree = sqlglot.parse_one(prefix_query.to_sql(self.synthetic.dialect), read=self.synthetic.dialect)
        tree.set("expressions", [exp.Distinct(expressions=[exp.column(inside.column, table=inside.alias, quoted=True)])])
        values = tree.sql(dialect=self.synthetic.dialect).replace("SELECT DISTINCT(", "SELECT DISTINCT (", 1)
        table = quote_identifier(action.relation.table, self.synthetic.dialect)
        column = quote_identifier(outside.column, self.synthetic.dialect)
        sql = f"SELECT COUNT(*) FROM ({values}) AS p(v) WHERE NOT EXISTS (SELECT 1 FROM {table} AS r WHERE r.{column} = p.v)"
        try:
            return int(self.synthetic.execute(sql).scalar()) == 0
        except PimentoError:
            return False

    # ------------------------------------------------------------------ evaluation and backup
    def _evaluate(self, query: CountQuery | None, *, source: str, rank: int) -> Evaluation:
        evaluation = self.evaluator.evaluate(query, with_sensitivity=self._uses_sensitivity)
        self._evaluations += 1
        # a valid evaluation has a query, an answer and a cluster (Evaluator.evaluate)
        if evaluation.valid and evaluation.query is not None and evaluation.answer is not None and evaluation.cluster is not None:
            self._ranks[evaluation.query] = min(rank, self._ranks.get(evaluation.query, rank))
            rs = evaluation.sensitivity.rs if evaluation.sensitivity else 0.0
            self.clusters.add(evaluation.cluster, evaluation.answer, evaluation.query, evaluation.error, self._order, tie=rs)
            self._order += 1
            self._sources.setdefault(evaluation.query, source)
        return evaluation

    def _nu(self, x: float) -> float:
        denom = math.log1p(self._s_ref) if self._s_ref > 0 else 1.0
        return math.copysign(math.log1p(abs(x)), x) / (denom or 1.0)

    def _backup(self, path: list[_Node], evaluation: Evaluation) -> None:
        if evaluation.valid and evaluation.cluster is not None:
            r_corr = self.clusters.correctness(evaluation.cluster)
        else:
            r_corr = 0.0
        info = evaluation.sensitivity if evaluation.valid else None
        direct = 0.0
        if info is not None and self.config.direct_rs_reward and self._uses_sensitivity:
            error = evaluation.error if evaluation.error is not None else info.rs
            direct = 0.0 if math.isinf(error) else 1.0 / (1.0 + math.log(max(1.0, error)))
        for node in path:
            credit = 0.0
            if info is not None and self._uses_sensitivity:
                if self.config.direct_rs_reward:
                    credit = direct
                elif self.config.sensitivity_reward and isinstance(node.action, AddRelation):
                    phi = info.shapley.get(node.action.relation.alias, 0.0)
                    credit = -self.config.lambda_s * self._nu(phi)
            node.edge_visits += 1
            node.edge_value += r_corr + credit
            if node.parent is not None:
                node.parent.visits += 1

    # ------------------------------------------------------------------ final selection
    def _final_cluster(self) -> int | None:
        """The answer cluster the final selection takes (see ``SearchConfig.final_votes``)."""
        if self.config.final_votes == "all":
            return self.clusters.largest()
        members = self.clusters.members
        if self.config.final_votes == "ranked":
            # Ranked proposals (the offline parser's list, best first): a proposal outweighs all
            # those ranked below it together, so the best-ranked reading that runs is kept and
            # the search only looks for its lowest-RS formulation.
            votes = {k: sum(2.0 ** -self._proposals[q] for q in qs if q in self._proposals) for k, qs in members.items()}
        else:
            votes = {k: float(sum(1 for q in qs if q in self._proposals)) for k, qs in members.items()}
        if not any(votes.values()):
            return self.clusters.largest()
        return min(members, key=lambda k: (-votes[k], self.clusters.first_seen[k]))

    def _select(self, candidates: list[CountQuery], seconds: float) -> SearchResult:
        key = self._final_cluster()
        if key is None:
            raise SearchError(
                "the search found no query that runs on the synthetic database",
                hint="check the question, or that the synthetic database is not empty",
            )
        members = self.clusters.members[key]
        if self._uses_sensitivity and self.config.intent_incumbent and self.clusters.answers[key] == 0:
            # An empty answer is no evidence that two formulations agree (a filter value that did
            # not survive the synthesizer selects nothing in any of them): take the least noisy
            # among the formulations of the cluster's best-ranked warm-start intent only.
            best = min(self._ranks.get(q, 0) for q in members)
            pool = [q for q in members if self._ranks.get(q, 0) == best]
            scored = []
            for q in pool:
                try:
                    scored.append((self.evaluator.error(q), self.evaluator.rs(q), members.index(q), q))
                except PimentoError:
                    continue
            chosen = min(scored)[3] if scored else self.clusters.incumbents.get(key, (math.nan, members[0]))[1]
        elif self._uses_sensitivity and key in self.clusters.incumbents:
            chosen = self.clusters.incumbents[key][1]
        else:
            chosen = members[0]
        rs, error = self._measures(chosen)
        alternatives = []
        for k, queries in self.clusters.members.items():
            for q in queries:
                info = self.evaluator._sensitivity.get(q)
                alternatives.append(
                    Alternative(
                        q.to_sql(self.synthetic.dialect),
                        q,
                        self.clusters.answers[k],
                        info.rs if info is not None and not isinstance(info, PimentoError) else math.nan,
                        k,
                        len(queries),
                        self._sources.get(q, "search"),
                        self.evaluator._errors.get(q, math.nan),
                    )
                )
        alternatives.sort(key=lambda a: (-a.cluster_size, a.predicted_error, a.synthetic_rs))
        return SearchResult(
            chosen,
            chosen.to_sql(self.synthetic.dialect),
            rs,
            self.clusters.answers[key],
            len(members),
            tuple(alternatives),
            self.config.rollouts,
            self._evaluations,
            self._pruned,
            self._invalid,
            seconds,
            candidates[0] if candidates else None,
            error,
            self.evaluator.error_model.basis if self._uses_sensitivity else "",
        )

    def _measures(self, chosen: CountQuery) -> tuple[float, float]:
        """The chosen query's RS and predicted error on the copy (nan where the search computed no sensitivity)."""
        if not self._uses_sensitivity:
            return math.nan, math.nan
        try:
            return self.evaluator.sensitivity(chosen).rs, self.evaluator.error(chosen)
        except PimentoError:
            return math.nan, math.nan
