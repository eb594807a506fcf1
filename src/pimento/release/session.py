"""``Session``: one private database under its custodian's settings, its ledger, and the answers it releases.

    >>> with Session("shop.duckdb", analyst="ann") as s:                   # doctest: +SKIP
    ...     answer = s.release_sql("SELECT COUNT(*) FROM orders", epsilon="0.5", delta="1e-6")
    ...     answer.value, answer.interval, answer.budget_left
    ...     asked = s.ask("How many orders?", synthetic="shop.syn.duckdb", epsilon="1", delta="1e-6")
    ...     asked.value, asked.chosen_sql, asked.end_to_end.epsilon

A session runs under the custodian's ``pimento.toml`` beside the database (ledger, caps, policy,
private relations, ``[release] rs_bound_share`` and ``neighbours``); the caller can only add
private relations.

:meth:`Session.answer` answers one :class:`~pimento.release.request.Request` (SQL or a question,
in any mode), in an order chosen so that nothing the analyst can observe before the charge depends
on the private data:

1. admission (:func:`pimento.release.admission.admit`): the mode's requirements, the
   neighbourhood, the parameters -> mechanism, the analyst's cap; nothing read, nothing spent;
2. a question is read on the synthetic copy only (:func:`pimento.release.interpretation.interpret_admitted`),
   and refused, spending nothing, when it is not what the analyst confirmed (``expect_sql``);
3. the mode releases it (:meth:`pimento.release.modes.ReleaseMode.release`): for a noisy mode the
   SQL on the public schema and the engine's admission, then
   :func:`pimento.mechanisms.guarded.guarded_release`: cache look-up and charge in one transaction
   (a refusal depends on the budget only) -> the count and its sensitivity on the private data ->
   noise -> cache + audit -> the :class:`~pimento.release.answers.Answer`. A failure after the
   charge halts the deployment (:meth:`pimento.mechanisms.ledger.Ledger.halt`; the reason goes to
   the custodian's audit log) and raises :class:`pimento.errors.DeploymentHaltedError`, the one
   fixed message every release request of every analyst then reads until the custodian resumes.

The noise is the mechanism's (the OS CSPRNG): no argument of a Session chooses it.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from pimento.engines.database import Database, load_database
from pimento.errors import UserError
from pimento.mechanisms import Ledger
from pimento.mechanisms.budget import NumberLike
from pimento.release.admission import DEFAULT_ANALYST, Admitted, admit
from pimento.release.answers import Answer
from pimento.release.interpretation import PLANNER_EPSILONS, Interpretation, interpret_admitted
from pimento.release.request import Request
from pimento.release.sql_preview import preview_sql

__all__ = ["DEFAULT_ANALYST", "Session"]


class Session:
    """A private database opened read-only under its custodian's settings, with its budget ledger.

    Args:
        db: the database (file, DSN, or folder with pimento.toml); its custodian's pimento.toml
            decides the ledger, the caps, the policy, the private relations and ``[release]``.
        private: relations to treat as private in addition to the custodian's (never fewer).
        analyst: who is asking when a request names nobody (charged in the ledger).

    No argument chooses the noise: every release draws it from the OS CSPRNG
    (:func:`pimento.mechanisms.samplers.default_rng`; tests fix it with
    :func:`pimento.mechanisms.samplers.fixed_noise_for_tests`, which no release path reaches).
    A Session is a custodian-side tool: a request's ``analyst`` and ``context`` are the caller's word
    (trusted input); the service binds them to the analyst's key.
    """

    def __init__(self, db: str | Path, *, private: list[str] | None = None, analyst: str = DEFAULT_ANALYST) -> None:
        self._start(load_database(db, read_only=True, private=private), owns=True, analyst=analyst)

    @classmethod
    def over(cls, database: Database, *, analyst: str = DEFAULT_ANALYST, ledger: Ledger | None = None) -> Session:
        """A Session on ``database``, already open read-only (by :func:`~pimento.engines.database.load_database`,
        so under its custodian's settings), which the caller owns: :meth:`close` closes the session's ledger, never
        ``database`` (the service lends one per request: :class:`pimento.service.open_databases.DatabasePool`).
        ``ledger``: the database's ledger (``Ledger.for_database`` under its settings) as the caller keeps it open,
        renewed for this session (:meth:`~pimento.mechanisms.ledger.Ledger.renew`); the session neither opens nor
        closes one then (the service keeps one per thread)."""
        session = cls.__new__(cls)
        session._start(database, owns=False, analyst=analyst, ledger=ledger)
        return session

    def _start(self, database: Database, *, owns: bool, analyst: str, ledger: Ledger | None = None) -> None:
        self.database = database
        self._owns_database = owns
        self._owns_ledger = ledger is None
        self.location = str(database.location)
        try:
            self.ledger = Ledger.for_database(self.location, database.settings) if ledger is None else ledger
        except BaseException:
            if owns:
                database.close()
            raise
        self.analyst = analyst

    def close(self) -> None:
        """Close the ledger if this session opened it, and the database if this session opened it."""
        if self._owns_ledger:
            self.ledger.close()
        if self._owns_database:
            self.database.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def answer(self, request: Request) -> Answer:
        """Answer ``request`` (module docstring): SQL as written, or a question read on the synthetic copy.

        Raises a :class:`~pimento.errors.UserError` having spent nothing for anything public inputs
        decide: an unknown mode or one lacking the policy or context it needs
        (:class:`~pimento.errors.ModeError`), bad parameters, an unknown analyst or a refused budget,
        SQL outside the supported fragment or that this engine cannot run, a synthetic copy not
        charged to this ledger, a question with no usable formulation, or one whose reading is not
        the ``expect_sql`` the analyst confirmed.
        """
        start = time.perf_counter()
        job = admit(request, settings=self.database.settings, ledger=self.ledger, analyst=self.analyst)
        if request.question is not None:
            job = self._read(job, start)
        return job.mode.release(self, job)

    def preview(self, request: Request | str, **fields: Any) -> Interpretation:
        """What :meth:`answer` would answer the question ``request`` as, found on the synthetic copy only; spends nothing.

        The chosen SQL with a plain-language reading, the alternatives weighed, the synthetic RS (CRS
        in contextual mode) and the noise it implies at this epsilon, a confidence flag, the cost and
        the end-to-end guarantee. Confirm by asking with ``expect_sql=preview.sql``: it refuses,
        spending nothing, if the reading is now anything else. A string is a question with ``fields``.
        """
        if isinstance(request, str):
            request = Request.for_question(request, **fields)
        job = admit(request, settings=self.database.settings, ledger=self.ledger, analyst=self.analyst)
        return self._on_copy(job)

    def preview_sql(self, request: Request | str, *, epsilons: tuple[str, ...] | None = None, **fields: Any) -> dict[str, Any]:
        """What :meth:`answer` of the SQL ``request`` would cost and how accurate it is predicted to be, on the
        synthetic copy only (:func:`pimento.release.sql_preview.preview_sql`); spends nothing, reads nothing
        private. A string is SQL with ``fields`` (as :meth:`Request.for_sql`'s, ``epsilon`` and ``delta`` included).
        ``epsilons``: the planner's (default its usual ones; ``()``: only the asked epsilon)."""
        if isinstance(request, str):
            request = Request.for_sql(request, **fields)
        database = self.database
        return preview_sql(request, catalog=database.catalog, settings=database.settings, ledger=self.ledger, location=self.location,
                           analyst=self.analyst, private=self, epsilons=PLANNER_EPSILONS if epsilons is None else epsilons)

    def ask(self, question: str, **fields: Any) -> Answer:
        """:meth:`answer` of the question ``question``; ``fields`` as :meth:`Request.for_question`'s."""
        return self.answer(Request.for_question(question, **fields))

    def release_sql(self, sql: str, epsilon: NumberLike | None = None, delta: NumberLike | None = None, **fields: Any) -> Answer:
        """:meth:`answer` of ``sql``; ``fields`` as :class:`Request`'s (``mode``, ``context``, ``neighbours``, ``analyst``)."""
        return self.answer(Request.for_sql(sql, epsilon=epsilon, delta=delta, **fields))

    def _on_copy(self, job: Admitted) -> Interpretation:
        """The reading of the admitted question on the synthetic copy (:func:`~pimento.release.interpretation.interpret_admitted`)."""
        database = self.database
        return interpret_admitted(job, catalog=database.catalog, settings=database.settings, ledger=self.ledger, location=self.location)

    def _read(self, job: Admitted, start: float) -> Admitted:
        """The question's reading on the synthetic copy, refused before the charge if it is not the one confirmed."""
        seen = self._on_copy(job)
        expected = job.request.expect_sql
        if expected is not None and " ".join(expected.split()) != " ".join(seen.sql.split()):
            raise UserError(
                "the search chose another formulation than the one confirmed; nothing was spent",
                hint=f"confirmed: {expected}; now chosen: {seen.sql} (preview again and confirm what will be answered)",
            )
        # Time before the release only: how long the private count and RS take depends on the data.
        return job.reading(seen, time.perf_counter() - start)
