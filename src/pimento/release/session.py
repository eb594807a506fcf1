"""``Session``: one private database under its custodian's settings, its ledger, and DP releases.

    >>> with Session("shop.duckdb") as s:                                  # doctest: +SKIP
    ...     answer = s.release_sql("SELECT COUNT(*) FROM orders", epsilon="0.5", delta="1e-6", analyst="ann")
    ...     answer.release.value, answer.release.interval, answer.budget_left
    ...     asked = s.ask("How many orders?", synthetic="shop.syn.duckdb", epsilon="1", delta="1e-6")

A session runs under the custodian's ``pimento.toml`` beside the database (ledger, caps,
private relations, ``[release] rs_bound_share``); the caller can only add private relations.

Order of work in :meth:`Session.release_sql`, chosen so that nothing the analyst can observe
before the charge depends on the private data:

1. parameters -> mechanism (PrivacyParameterError: nothing read, nothing spent);
2. analyst known? (BudgetError);
3. SQL -> CountQuery, on the public schema only (SqlError / UnsupportedQuery);
4. :func:`pimento.mechanisms.guarded.guarded_release`: cache look-up and charge in one
   transaction (a refusal depends on the budget only) -> true count and residual sensitivity
   on the private data -> noise -> cache + audit -> return. A failure after the charge halts
   the deployment (:meth:`pimento.mechanisms.ledger.Ledger.halt`; the reason goes to the
   custodian's audit log) and raises :class:`pimento.errors.DeploymentHaltedError`, the one
   fixed message every release request of every analyst then reads until the custodian resumes.

The noise is the mechanism's (the OS CSPRNG): no argument of a Session chooses it.

:meth:`Session.ask` searches the synthetic copy for the formulation to release (it never reads
the private database), then releases it through the same step 4.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, SupportsIndex, SupportsInt

from pimento.engines.base import Engine
from pimento.errors import InternalError, UserError
from pimento.mechanisms import GlobalLaplace, GuardedAnswer, Ledger, guarded_release, mechanism_for
from pimento.mechanisms.budget import Budget, NumberLike, format_number
from pimento.mechanisms.guarded import Measured
from pimento.mechanisms.smooth import Mechanism, Release
from pimento.release import ask as _ask
from pimento.release.ask import SearchOutcome
from pimento.release.clamp import plain_number
from pimento.sql import CountQuery

if TYPE_CHECKING:
    from pimento.policy import Context, Enforcer
    from pimento.release.modes import CIAnswer, ContextSpec
    from pimento.search import SearchConfig
    from pimento.sensitivity.contextual import AuthorizationView

    #: a context as a caller gives it (:func:`pimento.release.modes.parse_context`)
    ContextLike = str | dict[str, str] | ContextSpec | None

__all__ = ["AskAnswer", "Interpretation", "SqlAnswer", "Session"]

DEFAULT_ANALYST = "default"


@dataclass(frozen=True)
class SqlAnswer:
    """A released SQL count: the guarded answer plus the query as it was counted (analyst-facing only)."""

    answer: GuardedAnswer
    sql: str
    analyst: str
    mode: str = "dp"
    #: the context of a split or contextual release (public input)
    context: ContextSpec | None = None
    #: split mode: the authorized part, exact (computed from authorized cells only)
    authorized_exact: int | None = None
    #: the neighbourhood the guarantee holds for (release.modes.NEIGHBOURS; public input)
    neighbours: str = "add-remove"

    @property
    def release(self) -> Release:
        return self.answer.release

    @property
    def budget_left(self) -> Budget:
        return self.answer.budget_left

    def to_dict(self) -> dict[str, Any]:
        from pimento.release.clamp import clamp_count
        from pimento.release.modes import REMAINDER, guarantee_kind

        out = {"sql": self.sql, "analyst": self.analyst, "mode": self.mode, **self.answer.to_dict(), "neighbours": self.neighbours}
        if self.context is not None:
            out["context"] = self.context.to_dict()
        if self.mode == "split":
            out["authorized_exact"] = self.authorized_exact
            out["remainder"] = REMAINDER
        if self.mode != "dp":
            out["guarantee_kind"] = guarantee_kind(self.mode, self.neighbours)
        return clamp_count(out)  # a count is never negative: post-processing, said in `clamped`


@dataclass(frozen=True)
class AskAnswer:
    """A DP answer to a question: the release, the query chosen on the synthetic copy, the one avoided.

    Everything here besides :attr:`release` is computed on the synthetic copy
    (``synthetic_rs``, ``synthetic_shapley``: which relation drives the noise there) or from
    public inputs. :meth:`guarantee` is the end-to-end statement: the synthetic copy's charge
    (found in this database's ledger) plus this release's, for neighbours that agree on the
    declared-public inputs the copy took without noise (``public_inputs``).
    """

    question: str
    release: SqlAnswer
    search: SearchOutcome
    synthetic_rs: float
    synthetic_shapley: dict[str, float]
    avoided_sql: str | None
    seconds: float
    synthetic_budget: Budget
    public_inputs: tuple[str, ...] = ()
    #: contextual mode: the SQL of the chosen cluster with the lowest CRS on the synthetic copy
    #: (the context's authorization evaluated there) and that CRS; synthetic copy only
    contextual_sql: str | None = None
    synthetic_crs: float | None = None

    def guarantee(self) -> dict[str, Any]:
        rel = self.release.release
        total_eps = self.synthetic_budget.epsilon + rel.epsilon
        total_delta = self.synthetic_budget.delta + rel.delta
        return {
            "epsilon_synthetic": format_number(self.synthetic_budget.epsilon),
            "delta_synthetic": format_number(self.synthetic_budget.delta),
            "epsilon_release": format_number(rel.epsilon),
            "delta_release": format_number(rel.delta),
            "epsilon": format_number(total_eps),
            "delta": format_number(total_delta),
            "public_inputs": list(self.public_inputs),
            "kind": "contextual DP for this context" if self.release.mode == "contextual" else "DP",
            "neighbours": self.release.neighbours,
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "question": self.question,
            **self.release.to_dict(),
            "chosen_sql": self.contextual_sql or self.search.result.sql,
            "synthetic_rs": self.synthetic_rs,
            **({"synthetic_crs": self.synthetic_crs} if self.synthetic_crs is not None else {}),
            "synthetic_shapley": dict(self.synthetic_shapley),
            "avoided_sql": self.avoided_sql,
            "guarantee": self.guarantee(),
            "search": self.search.to_dict(),
            "seconds": round(self.seconds, 4),
        }


def estimated_half_width(mechanism: Mechanism, rs: Fraction | float | int | None) -> Fraction:
    """The 95% half-width of ``mechanism``'s noise at sensitivity ``rs`` (its GS for the global mechanism).

    The accuracy estimate of a preview and of the epsilon planner: ``rs`` is computed on the
    synthetic copy, never on the private database.
    """
    if isinstance(mechanism, GlobalLaplace):
        return Fraction(mechanism.half_width(mechanism.scale(mechanism.gs)))
    if not rs or float(rs) <= 0:
        return Fraction(0)
    return Fraction(mechanism.half_width(mechanism.scale(rs)))


@dataclass(frozen=True)
class Interpretation:
    """What a question will be answered as, found on the synthetic copy only (:meth:`Session.preview`).

    Every field is public input or computed on the synthetic copy: showing it spends nothing.
    ``confidence`` weighs the readings the parser (or LLM) proposed as the final selection does
    (the proposal ranked r counts 2^-r): ``"high"`` when those giving the chosen answer on the
    synthetic copy hold at least 2/3 of the weight (the two best-ranked readings agree, say),
    ``"low"`` otherwise: the question can be read in several ways, and the analyst should check
    the reading before spending. A heuristic on the synthetic copy, not a guarantee.
    """

    question: str
    mode: str
    outcome: SearchOutcome
    query: CountQuery
    sql: str
    mechanism: Mechanism
    spec: ContextSpec | None
    policy: str | None
    shapley: dict[str, float]
    synthetic_budget: Budget
    public_inputs: tuple[str, ...]
    contextual_sql: str | None = None
    synthetic_crs: float | None = None
    neighbours: str = "add-remove"

    @property
    def confidence(self) -> str:
        result = self.outcome.result
        chosen = next((a.cluster for a in result.alternatives if a.sql == result.sql), None)
        weights: dict[int, float] = {}
        for a in result.alternatives:
            if a.source.startswith("warm-start #"):
                rank = int(a.source.rsplit("#", 1)[1]) - 1
                weights[a.cluster] = weights.get(a.cluster, 0.0) + 2.0**-rank
        total = sum(weights.values())
        if total == 0 or chosen is None:
            return "low"
        return "high" if weights.get(chosen, 0.0) >= 2 * total / 3 else "low"

    def to_dict(self) -> dict[str, Any]:
        from pimento.sql.reading import reading

        used = self.mechanism.for_relations(len(self.query.relations))
        cost = used.privacy_cost()
        rs = self.synthetic_crs if self.synthetic_crs is not None else self.outcome.result.synthetic_rs
        half = estimated_half_width(used, rs)
        result = self.outcome.result
        return {
            "question": self.question,
            "mode": self.mode,
            "chosen_sql": self.sql,
            "reading": reading(self.query),
            "confidence": self.confidence,
            "readings_proposed": len({a.cluster for a in result.alternatives if a.source.startswith("warm-start")}),
            "synthetic_answer": result.synthetic_answer,
            "synthetic_rs": result.synthetic_rs,
            **({"synthetic_crs": self.synthetic_crs} if self.synthetic_crs is not None else {}),
            "synthetic_shapley": dict(self.shapley),
            "estimated_half_width_95": plain_number(half),
            "estimate_basis": "noise at the synthetic copy's residual sensitivity for this epsilon; the released "
            "interval comes from a DP bound of the private one and is usually wider",
            "cost": {"epsilon": format_number(cost.epsilon), "delta": format_number(cost.delta)},
            "mechanism": used.describe()["mechanism"],
            "guarantee_if_confirmed": {
                "epsilon": format_number(self.synthetic_budget.epsilon + cost.epsilon),
                "delta": format_number(self.synthetic_budget.delta + cost.delta),
                "epsilon_synthetic": format_number(self.synthetic_budget.epsilon),
                "delta_synthetic": format_number(self.synthetic_budget.delta),
                "public_inputs": list(self.public_inputs),
                **({"neighbours": self.neighbours} if self.mode != "ci" else {}),
            },
            "alternatives": [a.to_dict() for a in result.alternatives[:10]],
            "notes": list(self.outcome.notes),
            "search_seconds": round(self.outcome.seconds, 4),
            "spent": {"epsilon": "0", "delta": "0"},
        }


class Session:
    """A private database opened read-only under its custodian's settings, with its budget ledger.

    Args:
        db: the database (file, DSN, or folder with pimento.toml); its custodian's pimento.toml
            decides the ledger, the caps, the private relations and ``[release]``.
        private: relations to treat as private in addition to the custodian's (never fewer).
        analyst: who is asking (charged in the ledger).

    No argument chooses the noise: every release draws it from the OS CSPRNG
    (:func:`pimento.mechanisms.samplers.default_rng`; tests fix it with
    :func:`pimento.mechanisms.samplers.fixed_noise_for_tests`, which no release path reaches).
    A Session is a custodian-side tool: its ``analyst`` and ``context`` are the caller's word
    (trusted input); the service binds them to the analyst's key.
    """

    def __init__(
        self,
        db: str | Path,
        *,
        private: list[str] | None = None,
        analyst: str = DEFAULT_ANALYST,
    ) -> None:
        from pimento.engines.database import load_database

        self.database = load_database(db, read_only=True, private=private)
        self.location = str(self.database.location)
        self.ledger = Ledger.for_database(self.location, self.database.settings)
        self.analyst = analyst

    def close(self) -> None:
        self.ledger.close()
        self.database.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def mechanism(self, epsilon: NumberLike, delta: NumberLike | None = None) -> Mechanism:
        """The mechanism for (epsilon, delta) under the custodian's ``[release] rs_bound_share``; validates both."""
        return mechanism_for(epsilon, delta, share=self.database.settings.release.rs_bound_share)

    def release_sql(
        self,
        sql: str,
        epsilon: NumberLike | None = None,
        delta: NumberLike | None = None,
        *,
        analyst: str | None = None,
        question: str | None = None,
        mode: str = "dp",
        context: ContextLike = None,
        neighbours: str | None = None,
    ) -> SqlAnswer | CIAnswer:
        """Release SQL in one of the four modes (:mod:`pimento.release.modes`).

        ``dp`` (default): a counting query with DP, (epsilon, delta) Laplace or pure epsilon
        without delta. ``ci``: any SQL the CI runtime supports, answered exactly on the
        authorized data of ``context`` under the custodian's policy (``[policy] compiled`` in the
        pimento.toml beside the database; a caller never names one); no budget, an audit row. ``split`` / ``contextual``: a counting query; see the module.
        ``context``: ``"sender=KIND:ID,recipient=KIND:ID,purpose=NAME"`` or a dict.
        ``neighbours``: ``add-remove``, ``change`` or ``both``, the neighbourhood the guarantee holds
        for; default the custodian's ``[release] neighbours``, which the caller can only make
        stricter (``both``); only ``contextual`` covers change and both
        (:func:`pimento.release.modes.resolve_neighbours`).
        """
        from pimento.release import modes
        from pimento.sql import parse_count_query

        analyst = analyst or self.analyst
        spec = modes.parse_context(context)
        policy = self.configured_policy()
        modes.check_mode(mode, spec, policy)
        chosen = self.neighbours(mode, neighbours)
        if mode == "ci":
            return self._ci(sql, spec, policy, analyst=analyst, question=question)
        if epsilon is None:
            raise modes.ModeError(f"--mode {mode} spends budget: give --epsilon")
        mechanism = self.mechanism(epsilon, delta)
        self.ledger.analyst_cap(analyst)  # unknown analyst -> BudgetError, nothing read
        query = parse_count_query(sql, self.database.catalog, max_chars=self.database.settings.database.max_sql_chars)
        if mode == "dp":
            return self._release(query, mechanism, analyst=analyst, question=question)
        return self._release(query, mechanism, analyst=analyst, question=question, mode=mode, spec=spec, policy=policy,
                             neighbours=chosen)

    def neighbours(self, mode: str, requested: str | None = None) -> str:
        """The neighbourhood a ``mode`` release will hold for: the custodian's ``[release] neighbours``
        unless ``requested`` is stricter; refused (ModeError, nothing read) when ``mode`` cannot give it."""
        from pimento.release import modes

        chosen = modes.resolve_neighbours(requested, self.database.settings.release.neighbours)
        modes.check_neighbours(mode, chosen, explicit=requested is not None)
        return chosen

    def configured_policy(self) -> str | None:
        """The custodian's compiled policy (``[policy] compiled`` beside the database), or None.

        The policy is a custodian setting like the caps and the private relations: a policy of the
        caller's choosing could authorize anything, so no analyst-facing method takes one.
        """
        compiled = self.database.settings.policy.compiled
        return self.database.settings.resolve(compiled) if compiled else None

    def _lowest_crs(self, outcome: SearchOutcome, synthetic: Engine, beta: float, policy: str | None, spec: ContextSpec | None,
                    neighbours: str = "add-remove") -> tuple[str | None, float | None]:
        """Contextual mode's search objective: among the formulations of the chosen cluster, the one
        with the lowest CRS (tight variant) on the synthetic copy, the context's authorization
        evaluated there. Reads the synthetic copy only; ties keep the search's choice."""
        from pimento.policy.authorized_tuples import authorization_view
        from pimento.release.modes import neighbourhood_of
        from pimento.sensitivity.contextual import contextual_sensitivity
        from pimento.sql import parse_count_query

        catalog = self.database.catalog
        result = outcome.result
        cluster = next((a.cluster for a in result.alternatives if a.sql == result.sql), None)
        candidates = [result.sql] + [a.sql for a in result.alternatives if cluster is not None and a.cluster == cluster and a.sql != result.sql]
        enforcer, context = self._enforcer(policy, spec, synthetic)
        best: tuple[Fraction, str] | None = None
        for sql in candidates:
            query = parse_count_query(sql, catalog)
            if len(query.relations) < 2:
                continue
            crs = contextual_sensitivity(synthetic, query, catalog, beta, authorization_view(enforcer, context, query), variant="tight",
                                         neighbourhood=neighbourhood_of(neighbours)).crs
            if best is None or crs < best[0]:
                best = (crs, sql)
        if best is None:
            return None, None
        return best[1], float(best[0])

    def _enforcer(self, policy: str | None, spec: ContextSpec | None, engine: Engine | None = None) -> tuple[Enforcer, Context]:
        """The enforcer of ``policy`` on ``engine`` (default this database) and the parsed context (no data read)."""
        from pimento.policy import Enforcer
        from pimento.release.modes import load_compiled_policy

        if policy is None or spec is None:  # modes.check_mode refused both before any caller gets here
            raise InternalError("a policy and a context are needed past check_mode")
        compiled = load_compiled_policy(policy)
        enforcer = Enforcer(compiled, engine or self.database.engine, self.database.catalog)
        return enforcer, enforcer.context(spec.sender, spec.recipient, spec.purpose)

    def _ci(self, sql: str, spec: ContextSpec | None, policy: str | None, *, analyst: str, question: str | None,
            chosen: bool = False) -> CIAnswer:
        """CI mode: the exact answer on the authorized data; audited (who, what, context; no count)."""
        from pimento.release.modes import CIAnswer

        self.ledger.analyst_cap(analyst)
        enforcer, context = self._enforcer(policy, spec)
        assert spec is not None  # _enforcer refused None
        self.ledger.record_custodian_action(
            self.location, "ci_answer",
            {"analyst": analyst, "sql": sql, "question": question, "context": spec.to_dict(), "policy": enforcer.compiled.name},
        )
        auth = enforcer.authorize(context, sql)
        from pimento.release.provenance import audit_trace

        shown = audit_trace(self, enforcer, context, sql, auth, analyst=analyst, spec=spec)
        return CIAnswer(sql, analyst, spec, enforcer.compiled.name, auth.columns, auth.rows, shown)

    def _release(
        self,
        query: CountQuery,
        mechanism: Mechanism,
        *,
        analyst: str,
        question: str | None,
        mode: str = "dp",
        spec: ContextSpec | None = None,
        policy: str | None = None,
        neighbours: str = "add-remove",
    ) -> SqlAnswer:
        """Charge, then count and RS (CRS in contextual mode) on the private data, then noise (guarded_release)."""
        from pimento import sensitivity

        from pimento.sql.allowlist import check_runs_on

        engine = self.database.engine
        catalog = self.database.catalog
        check_runs_on(query, engine.dialect)  # a construct this engine cannot run: refused before the charge
        # A single-relation count has global sensitivity 1 (structure, not data): plain Laplace.
        mechanism = mechanism.for_relations(len(query.relations))
        counted_sql = query.to_sql(engine.dialect)
        enforcer: Enforcer | None = None
        context: Context | None = None
        key_mode = mode
        if mode in ("split", "contextual"):
            enforcer, context = self._enforcer(policy, spec)  # schema and policy only: nothing read
            assert spec is not None  # _enforcer refused None
            key_mode = f"{mode}:{enforcer.compiled.name}:{spec.key()}"
            if neighbours != "add-remove":  # another neighbourhood, another bound: never the same cached answer
                key_mode += f":{neighbours}"

        def view() -> AuthorizationView:
            from pimento.policy.authorized_tuples import authorization_view

            assert enforcer is not None and context is not None  # called in split and contextual modes only
            return authorization_view(enforcer, context, query)

        measured_exact: list[int] = []  # split mode: the authorized part measure() computed, if it ran

        def measure() -> Measured:
            true_value = _as_int(engine.execute(counted_sql).scalar())
            custodian: dict[str, Any] = {}
            if mode == "split":
                from pimento.release.modes import authorized_part

                exact = authorized_part(engine, query, catalog, view())
                measured_exact.append(exact)
                custodian["authorized_part"] = exact
                true_value -= exact
            if isinstance(mechanism, GlobalLaplace):
                return Measured(true_value, mechanism.gs, custodian)
            if mode == "contextual":
                from pimento.release.modes import neighbourhood_of
                from pimento.sensitivity.contextual import contextual_sensitivity

                # the tight variant (authorization at every distance; CONTEXTUAL.md section 6; add/remove only:
                # under change and both the paper's rules, sound there, apply)
                crs = contextual_sensitivity(engine, query, catalog, mechanism.beta_float(), view(), variant="tight",
                                             neighbourhood=neighbourhood_of(neighbours))
                return Measured(true_value, crs.crs, {**custodian, "crs": crs.custodian_dict()})
            result = sensitivity.residual_sensitivity(engine, query, catalog, mechanism.beta_float(), attribution=False)
            custodian.update({"ls": result.ls, "k_star": result.k_star, "te": {str(k): int(v) for k, v in result.te.items()}})
            return Measured(true_value, result.rs, custodian)

        answer = guarded_release(
            self.ledger,
            mechanism,
            analyst=analyst,
            database=self.location,
            sql=counted_sql,
            measure=measure,
            mode=key_mode,
            question=question,
        )
        exact = None
        if mode == "split":
            # the remainder was released as the count minus this part: the same number, never recomputed
            exact = measured_exact[0] if measured_exact else self._authorized_part(query, view, answer, analyst)
        return SqlAnswer(answer, counted_sql, analyst, mode, spec, exact, neighbours)

    def _authorized_part(self, query: CountQuery, view: Callable[[], AuthorizationView], answer: GuardedAnswer, analyst: str) -> int:
        """Split mode, a cached DP part: the authorized part (authorized cells only: a CI release), read again.

        It follows a charge, so a failure here halts the deployment like any failure after a charge
        (:meth:`Ledger.halt`, the reason in the custodian's audit log) and raises
        :class:`DeploymentHaltedError`, the fixed message every later release request reads until
        the custodian resumes.
        """
        from pimento.errors import DeploymentHaltedError
        from pimento.release.modes import authorized_part

        try:
            return authorized_part(self.database.engine, query, self.database.catalog, view())
        except Exception as exc:  # noqa: BLE001 - engine text may carry private values
            self.ledger.halt(self.location, {
                "analyst": analyst, "sql": query.to_sql(), "mode": "split", "step": "authorized part of a cached answer",
                "charge_id": answer.charge_id, "error": f"{type(exc).__name__}: {exc}",
            })
            raise DeploymentHaltedError() from None

    def ask(
        self,
        question: str,
        *,
        synthetic: str | Path | None = None,
        epsilon: NumberLike,
        delta: NumberLike | None = None,
        analyst: str | None = None,
        seed_sql: tuple[str, ...] = (),
        k: int = 10,
        config: SearchConfig | None = None,
        llm: str | None = None,
        mode: str = "dp",
        context: ContextLike = None,
        expect_sql: str | None = None,
        neighbours: str | None = None,
    ) -> AskAnswer | CIAnswer:
        """Answer a natural-language counting question (``pimento ask --mode ci|dp|split|contextual``).

        ``mode`` as in :meth:`release_sql`: the search picks the formulation on the synthetic copy
        (its objective is RS there, for every mode; epsilon and delta set its beta), then the
        chosen SQL is answered in ``mode``: ``ci`` answers it exactly on the authorized data and
        spends nothing (returns a :class:`pimento.release.modes.CIAnswer`). ``neighbours`` as in
        :meth:`release_sql` (the custodian's ``[release] neighbours``, or the stricter ``both``);
        in ``contextual`` mode the search's CRS objective is computed for it too.

        The sensitivity-guided search runs on the DP synthetic copy only (``synthetic``, else
        ``[synth] path`` in pimento.toml, else ``DB.synthetic.duckdb`` beside the database; it
        never reads this session's private database); the chosen query is then released like
        :meth:`release_sql`. ``config`` is the search's :class:`pimento.search.SearchConfig`.
        A copy whose charge is not in this database's ledger is refused
        (:class:`pimento.release.synthetic.SyntheticCopyError`), so every answer states its
        end-to-end guarantee. A question with no usable formulation raises a UserError and
        spends nothing.
        """
        start = time.perf_counter()
        analyst = analyst or self.analyst
        seen = self._interpret(question, synthetic=synthetic, epsilon=epsilon, delta=delta, analyst=analyst,
                               seed_sql=seed_sql, k=k, config=config, llm=llm, mode=mode, context=context,
                               neighbours=neighbours)
        outcome = seen.outcome
        if expect_sql is not None and " ".join(expect_sql.split()) != " ".join(seen.sql.split()):
            raise UserError(
                "the search chose another formulation than the one confirmed; nothing was spent",
                hint=f"confirmed: {expect_sql}; now chosen: {seen.sql} (preview again and confirm what will be answered)",
            )
        query = seen.query
        # Time before the release only: how long the private count and RS take depends on the data.
        seconds = time.perf_counter() - start
        if mode == "ci":
            return self._ci(outcome.result.sql, seen.spec, seen.policy, analyst=analyst, question=question)
        released = self._release(query, seen.mechanism, analyst=analyst, question=question, mode=mode, spec=seen.spec, policy=seen.policy,
                                 neighbours=seen.neighbours)
        avoided = None
        top1 = outcome.result.zero_shot_top1
        if top1 is not None and top1.canonical() != outcome.result.query:
            avoided = top1.to_sql(self.database.engine.dialect)
        return AskAnswer(
            question,
            released,
            outcome,
            float(outcome.result.synthetic_rs),
            seen.shapley,
            avoided,
            seconds,
            seen.synthetic_budget,
            tuple(seen.public_inputs),
            seen.contextual_sql,
            seen.synthetic_crs,
        )

    def preview(
        self,
        question: str,
        *,
        synthetic: str | Path | None = None,
        epsilon: NumberLike,
        delta: NumberLike | None = None,
        analyst: str | None = None,
        seed_sql: tuple[str, ...] = (),
        k: int = 10,
        config: SearchConfig | None = None,
        llm: str | None = None,
        mode: str = "dp",
        context: ContextLike = None,
        neighbours: str | None = None,
    ) -> Interpretation:
        """What :meth:`ask` with the same arguments would answer, found on the synthetic copy only; spends nothing.

        The chosen SQL with a plain-language reading, the alternatives weighed, the synthetic RS
        and the noise it implies at this epsilon (an accuracy estimate), a confidence flag, the
        cost and the end-to-end guarantee. Nothing here reads the private database. Confirm by
        calling :meth:`ask` with ``expect_sql=preview.sql``: it refuses, spending nothing, if the
        search now chooses anything else.
        """
        return self._interpret(question, synthetic=synthetic, epsilon=epsilon, delta=delta, analyst=analyst or self.analyst,
                               seed_sql=seed_sql, k=k, config=config, llm=llm, mode=mode, context=context,
                               neighbours=neighbours)

    def _interpret(
        self,
        question: str,
        *,
        synthetic: str | Path | None,
        epsilon: NumberLike,
        delta: NumberLike | None,
        analyst: str,
        seed_sql: tuple[str, ...],
        k: int,
        config: SearchConfig | None,
        llm: str | None,
        mode: str,
        context: ContextLike,
        neighbours: str | None = None,
    ) -> Interpretation:
        """Everything before the release: parameters, policy, the search on the synthetic copy (no private read)."""
        from pimento import sensitivity
        from pimento.release import modes
        from pimento.release.synthetic import synthetic_guarantee
        from pimento.sql import parse_count_query

        spec = modes.parse_context(context)
        policy = self.configured_policy()
        modes.check_mode(mode, spec, policy)
        chosen_neighbours = self.neighbours(mode, neighbours)
        mechanism = self.mechanism(epsilon, delta)  # bad parameters fail here: nothing read, nothing spent
        self.ledger.analyst_cap(analyst)
        if mode != "dp":
            self._enforcer(policy, spec)  # a bad policy or context fails before the search
        catalog = self.database.catalog
        path = _ask.resolve_synthetic(synthetic, self.location, self.database.settings)
        synthetic_budget, public_inputs = synthetic_guarantee(self.ledger, self.location, path)
        engine = _ask.open_synthetic(path)
        try:
            outcome = _ask.search_question(
                question, engine, catalog, beta=mechanism.beta_float(), seed_sql=tuple(seed_sql), k=k, config=config, llm=llm
            )
            chosen = outcome.result.query
            contextual_sql = synthetic_crs = None
            if mode == "contextual":
                contextual_sql, synthetic_crs = self._lowest_crs(outcome, engine, mechanism.beta_float(), policy, spec,
                                                                 chosen_neighbours)
                if contextual_sql is not None:
                    chosen = parse_count_query(contextual_sql, catalog)
            shapley: dict[str, float] = {}
            if len(chosen.relations) > 1:
                on_copy = sensitivity.residual_sensitivity(engine, chosen, catalog, mechanism.beta_float(), attribution=True)
                shapley = {name: round(float(v), 4) for name, v in on_copy.shapley.items()}
        finally:
            engine.close()
        query = parse_count_query(contextual_sql or outcome.result.sql, catalog)
        return Interpretation(
            question=question, mode=mode, outcome=outcome, query=query, sql=contextual_sql or outcome.result.sql,
            mechanism=mechanism, spec=spec, policy=policy, shapley=shapley, synthetic_budget=synthetic_budget,
            public_inputs=tuple(public_inputs), contextual_sql=contextual_sql, synthetic_crs=synthetic_crs,
            neighbours=chosen_neighbours,
        )


def _as_int(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        try:
            if not isinstance(value, (str, bytes, SupportsInt, SupportsIndex)):
                raise TypeError
            as_int = int(value)
        except (TypeError, ValueError):
            raise InternalError(f"a COUNT returned {value!r}, not an integer") from None
        if as_int != value:
            raise InternalError(f"a COUNT returned {value!r}, not an integer")
        return as_int
    return value
