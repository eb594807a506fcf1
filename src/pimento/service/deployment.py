"""One deployment as the service serves it: the custodian's database, its pimento.toml, ledger and keys.

Every analyst call becomes one :class:`pimento.release.Request` (:meth:`Deployment.request`: the key
fixes the analyst, the recipient and the choice of sender and purpose; the policy and the search
settings are the custodian's) handed to :mod:`pimento.release`: :meth:`Session.answer` releases it,
and the interpretation preview reads it with :func:`pimento.release.interpret` on the
synthetic copy alone (the private database is not even opened; as ``pimento search`` and
``pimento ask --preview`` read it) and spends nothing. Results are post-processed here only: counts
are clamped at zero (:func:`pimento.release.clamp.clamp_count`, which the release answers already
apply). History is read from the audit
log, keeping only the analyst's own released rows and only their analyst-safe fields
(:data:`HISTORY_FIELDS`); the custodian's views (audit rows, caps, keys) are separate methods
that the service exposes to the custodian token only.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pimento.engines.base import Engine
from pimento.engines.database import custodian_settings, file_identity, file_stat, load_database
from pimento.errors import ModeError, PolicyError, UserError
from pimento.mechanisms import Ledger, ledger_path
from pimento.mechanisms.audit import released_part
from pimento.mechanisms.budget import format_number
from pimento.mechanisms.caps import binding
from pimento.mechanisms.ledger import database_key
from pimento.mechanisms.ledger_identity import keys_read_once
from pimento.policy import Enforcer, load_compiled_policy
from pimento.policy.observable import require_acknowledged
from pimento.release import Context, Mode, Request, SearchOptions, Session, interpret
from pimento.release.sql_preview import reading_planner
from pimento.release.ask import open_synthetic, resolve_synthetic
from pimento.release.clamp import clamp_count
from pimento.release.noise_check_cache import KeptValues, plain_count_key
from pimento.release.reading_cache import shared_readings
from pimento.release.request import context_value
from pimento.release.synthetic import synthetic_guarantee
from pimento.schema.merge import privacy_marks
from pimento.search import SearchConfig
from pimento.release.answer_memo import AnswerMemo, Identities, identities, memo_paths
from pimento.service.keys import ApiKey, KeyStore, keys_path
from pimento.service.open_databases import DatabasePool, settings_file
from pimento.service.synth_jobs import SynthJobs

if TYPE_CHECKING:
    from pimento.config import Settings
    from pimento.engines.database import Database
    from pimento.schema.catalog import Catalog

__all__ = ["Deployment", "HISTORY_FIELDS", "SearchSettings", "clamp_count", "public_catalog"]

#: The fields of an audit row an analyst may see in their history (all public, noisy, or derived
#: from the noisy value; see docs/analyst-learns.md). Exact RS, scale, T_E and the custodian's
#: ``private`` block are never among them.
HISTORY_FIELDS = ("time", "charge_id", "question", "sql", "mode", "epsilon", "delta", "noise", "mechanism", "value", "interval")


@dataclass(frozen=True)
class SearchSettings:
    """The custodian's knobs of the search behind ask and preview (the analyst cannot change them)."""

    rollouts: int = 10
    k: int = 10
    seed: int = 0
    synthetic: str | None = None

    def config(self) -> SearchConfig:
        return SearchConfig(rollouts=self.rollouts, seed=self.seed)


def _finish(data: dict[str, Any]) -> dict[str, Any]:
    """A released count clamped at zero (:mod:`pimento.release` clamps its answers already); a CI answer as it is."""
    return clamp_count(data) if "value" in data and "interval" in data and "clamped" not in data else data


def public_catalog(catalog: Catalog, settings: Settings) -> dict[str, Any]:
    """The public schema an analyst may see (``GET /v1/catalog``, the catalog on the web page).

    The catalog as ``pimento catalog --json`` describes it (:meth:`Catalog.to_dict`: tables, columns
    with their type family, raw type and nullability, primary and unique keys, foreign keys,
    functional dependencies), each relation's privacy and its reason (:func:`privacy_marks`), and the
    custodian's public declarations from pimento.toml: the privacy unit (``[privacy] root``), the
    columns whose value sets are declared public, the declared link context and fan-out caps. All of
    it is the schema and the custodian's settings, read at start-up: no count, value or statistic of
    the private rows (the same bytes on neighbouring databases,
    ``tests/unit/service/test_catalog.py``). Unlike the CLI it leaves out the database's location.
    """
    described = catalog.to_dict()
    reasons = {mark.relation: mark.reason for mark in privacy_marks(catalog, settings)}
    for table in described["tables"]:
        table["private_reason"] = reasons[table["name"]]
        # the database's comments are the custodian's notes (they may quote example values): never an analyst's
        table.pop("comment", None)
        for column in table["columns"]:
            column.pop("comment", None)
    described["declared"] = {
        "root": settings.privacy.root,
        "public_values": list(settings.synth.public_values),
        "link_context": list(settings.synth.link_context),
        "fan_out_caps": dict(settings.synth.caps),
    }
    return described


class Deployment:
    """The custodian's deployment: ``db`` (file, DSN or folder) under the pimento.toml beside it."""

    def __init__(self, db: str | Path, *, search: SearchSettings | None = None) -> None:
        self.db = str(db)
        database = load_database(self.db, read_only=True)  # validates the deployment at start-up
        try:
            self.location = str(database.location)
            self.settings = database.settings
            self.catalog = database.catalog
            #: The private engine's SQL dialect (the SQL a release runs, hence the answer cache's key).
            self.dialect = database.engine.dialect
        finally:
            database.close()
        #: The pimento.toml that governs the database (None for a bare DSN): the memo's identities stat it.
        self._settings_file = settings_file(self.db, self.location)
        #: What ``GET /v1/catalog`` sends (computed once: it never changes while the service runs).
        self.public_catalog = public_catalog(self.catalog, self.settings)
        self.search = search or SearchSettings()
        # The policy is the custodian's, from the pimento.toml beside the database ([policy] compiled).
        self.policy = self.settings.resolve(self.settings.policy.compiled) if self.settings.policy.compiled else None
        #: The policy's observable denials, each marked acknowledged (GET /v1/policy lists them).
        self.observable_denials: list[dict[str, Any]] = []
        if self.policy:
            # a policy that cannot be read, or whose denials an analyst could see and the custodian
            # has not acknowledged ([policy] acknowledge_observable_denials), stops the start
            self.observable_denials = require_acknowledged(
                load_compiled_policy(self.policy), self.settings.policy.acknowledge_observable_denials)
        self.ledger_file = ledger_path(self.location, self.settings)
        self.keys = KeyStore(keys_path(self.ledger_file))
        with self.ledger() as ledger:  # a ledger that fails its checks (emptied, missing with a witness, damaged) stops the start
            ledger.check_file()
        #: The database file as the service opened it: a release is refused once it changed (:meth:`session`).
        self.identity = file_identity(self.location)
        self._held: list[Database] = []
        self._held_copy: Engine | None = None
        self._held_ledger: Ledger | None = None
        self._held_ledger_thread = 0
        #: The read-only databases kept open between requests (:meth:`hold_open`); None: each request opens its own.
        self.databases: DatabasePool | None = None
        #: The synthetic copy's file as this process last opened it (:meth:`refresh_copy`).
        self._copy_seen = self._copy_file()
        #: The answer cache's key of each request text seen (:meth:`answered`; "": none).
        self._answer_keys: KeptValues[str] = KeptValues()
        #: The answer cache's keys this process found answered (:meth:`answered`).
        self._answered: KeptValues[bool] = KeptValues()
        #: The stored SQL answers this process returned, answered again with one ledger read (:meth:`sql`).
        self.memo = AnswerMemo()
        #: the database file and its deployment file, as the memo's identities stat them (found once)
        self._memo_database, self._memo_deployment = memo_paths(self.location)
        self._memo_copy: Path | None = None  # the synthetic copy's path, once found (:meth:`files`)
        #: per thread: the ledger the memo reads (:meth:`_memo_ledger`); -1 once :meth:`close` ran (none kept)
        self._memo_ledgers = threading.local()
        self._memo_generation = 0
        #: per thread: the ledger its releases use, kept between its requests (:meth:`_release_ledger`)
        self._release_ledgers = threading.local()
        self.synth_jobs = SynthJobs(self.db, self._synthetic_path, self._reopen_copy)

    def hold_open(self) -> None:
        """Keep one read-only connection to the database and to the synthetic copy for the process's life, and
        the databases opened by requests open for the next ones (:class:`~pimento.service.open_databases.DatabasePool`;
        :meth:`close` closes them all: ``pimento serve`` and each worker at shutdown, the app's lifespan).

        DuckDB shares one instance per file within a process; the first connection configures and
        locks it (memory limit, no file access). Two request threads opening a file for the first
        time at once raced there ("the configuration has been locked", a 503 under load): with an
        instance held open from start-up, every later connection finds it configured.
        """
        self._held.append(load_database(self.db, read_only=True))
        self.databases = DatabasePool(self.db, self.location)
        try:
            self._held_copy = open_synthetic(self._synthetic_path())
        except UserError:
            pass  # no usable copy yet: ask and preview say so per request
        self._hold_ledger_open()

    def _hold_ledger_open(self) -> None:
        """Keep one idle connection to a SQLite ledger for the process's life: the per-request ledgers
        then never close the file's last connection, which checkpoints the WAL into the file with fsyncs
        (about 10 ms of every fresh release, measured in docs/benchmarks.md). It holds no lock and
        no transaction; SQLite still checkpoints as the WAL grows."""
        ledger = self.ledger()
        if ledger.postgres:
            ledger.close()
            return
        self._held_ledger = ledger
        self._held_ledger_thread = threading.get_ident()

    def _copy_file(self) -> tuple[int, int, int, int] | None:
        """The identity of the synthetic copy's file (device, inode, size, mtime), None when there is none."""
        try:
            return file_stat(self._synthetic_path())
        except UserError:
            return None

    def refresh_copy(self) -> None:
        """Move to a new synthetic copy put in place by another process (another worker's ``POST /v1/synth``,
        or ``pimento synth`` run beside the service): when the file is no longer the one this process
        opened, the held connection is reopened on the new file once the requests reading the old one
        ended (the swap lock), so that no later request of this process reads the old copy. Called
        before every request that reads the copy (one ``stat``)."""
        if self._copy_file() == self._copy_seen:
            return
        with self.synth_jobs.swap.exclusive():
            if self._copy_file() != self._copy_seen:
                self._reopen_copy()

    @property
    def copy_identity(self) -> tuple[int, int, int, int] | None:
        """The synthetic copy's file as this process reads it (:meth:`refresh_copy`): part of every memoized preview's key."""
        return self._copy_seen

    def answered(self, key: ApiKey, request: Request) -> bool:
        """Whether the ledger holds the answer to ``request`` (a plain dp count of SQL, under the release's own cache
        key: :func:`~pimento.release.noise_check_cache.plain_count_key`), which the release then returns, spending
        nothing. False when unsure (another kind of request, the cache off, a request admission refuses).

        Both steps are remembered in this process: the key of each request text (public inputs only), and each
        key found answered (the ledger never deletes a stored answer), so that a cached answer's check costs
        no ledger read after the first."""
        seen = (key.analyst, repr(request))
        cache_key = self._answer_keys.get(seen)
        if cache_key == "":
            return False  # not a plain dp count of SQL: the check runs
        if cache_key is not None and self._answered.get(cache_key):
            return True
        try:
            with self.ledger() as ledger:
                cache_key = self._cache_key(key, request, ledger)
                found = bool(cache_key) and ledger.cached_answer(cache_key) is not None
        except UserError:
            return False
        if found:
            self._answered.put(cache_key, True)
        return found

    def _cache_key(self, key: ApiKey, request: Request, ledger: Ledger) -> str:
        """The answer cache's key of ``request`` (:func:`~pimento.release.noise_check_cache.plain_count_key`; "": none), kept
        per request text; raises what admission raises."""
        seen = (key.analyst, repr(request))
        cache_key = self._answer_keys.get(seen)
        if cache_key is None:
            cache_key = plain_count_key(request, catalog=self.catalog, settings=self.settings, ledger=ledger,
                                        location=self.location, analyst=key.analyst, dialect=self.dialect) or ""
            self._answer_keys.put(seen, cache_key)
        return cache_key

    def files(self) -> Identities:
        """The identities of the files a memoized answer depends on (:func:`~pimento.release.answer_memo.identities`).

        The synthetic copy's path, once found, is kept: it is fixed by the options and the settings this process
        started with (``--synthetic``, ``[synth] path``, else beside the database), and a copy gone from it since
        has no identity (None), as when it was never found."""
        copy = self._memo_copy
        if copy is None:
            try:
                copy = self._memo_copy = self._synthetic_path()
            except UserError:
                copy = None
        return identities(self._memo_database, self._settings_file, self._memo_deployment,
                          self.ledger_file if not self.settings.ledger.url else None, copy)

    def memo_answer(self, key: ApiKey, request: Request, files: Identities) -> bytes | None:
        """The answer to a repeat of a SQL request whose stored answer this process returned before, under the same
        ``files``, rendered as the service's JSON response (:class:`~pimento.release.answer_memo.AnswerMemo`: one ledger
        read, or its clean mark, the budget left read now); None otherwise (the release path answers, and decides any
        refusal in its own words)."""
        entry = self.memo.find(key.analyst, request, files)
        if entry is None:
            return None
        try:
            with self._memo_ledger(files) as ledger:
                return self.memo.answer_json(entry, key.analyst, ledger)
        except (UserError, sqlite3.Error):
            self._drop_memo_ledger()  # opened anew by the next hit (its checks at open included)
            return None

    def _drop_memo_ledger(self) -> None:
        """Close this thread's kept memo ledger, if any."""
        kept = getattr(self._memo_ledgers, "kept", None)
        self._memo_ledgers.kept = None
        if kept is not None:
            kept[2].close()

    def _settings_now(self) -> Settings:
        """The custodian's settings as the ``pimento.toml`` that governs the database reads now: those a request's
        database is opened under (:class:`~pimento.service.open_databases.DatabasePool` opens anew when it changes).
        Raises ConfigError for a file that does not read."""
        return custodian_settings(self.db)

    @contextmanager
    def _memo_ledger(self, files: Identities) -> Iterator[Ledger]:
        """The ledger the memo reads in this thread: one kept per thread (the service's event loop reads them) while
        ``files`` are those it was opened under; opened anew (its checks at open included) when any changed, and
        closed after the read once :meth:`close` ran."""
        kept: tuple[int, Identities, Ledger] | None = getattr(self._memo_ledgers, "kept", None)
        if kept is not None and kept[0] == self._memo_generation and kept[1] == files:
            yield kept[2]
            return
        if kept is not None:
            self._memo_ledgers.kept = None
            kept[2].close()
        ledger = self.ledger()  # the caps of now, as a release's
        if self._memo_generation < 0:  # closed: nothing is kept any more
            with ledger:
                yield ledger
            return
        self._memo_ledgers.kept = (self._memo_generation, files, ledger)
        yield ledger

    def sql_memoized(self, key: ApiKey, sql: str, epsilon: str | None, delta: str | None, *, mode: str = Mode.DP,
                     sender: str | None = None, purpose: str | None = None, bounds: object = None) -> bytes | None:
        """What :meth:`sql` answers from the memo (:meth:`memo_answer`) for these fields, rendered, or None: then
        :meth:`sql` decides, refusals included (a request :meth:`request` refuses is None here). Cheap enough for the
        service's event loop: a memo look-up, five ``stat`` s and, on a hit, one ledger read or, when nothing was
        committed to a SQLite ledger since the last, one ``stat`` and one statement (:mod:`pimento.mechanisms.ledger_clean`)."""
        try:
            request = self.request(key, sql=sql, epsilon=epsilon, delta=delta, mode=mode, sender=sender, purpose=purpose, bounds=bounds)
        except UserError:
            return None
        return self.memo_answer(key, request, self.files())

    def _remember(self, key: ApiKey, request: Request, response: dict[str, Any], files: Identities) -> None:
        """Keep a stored answer the release path returned (``cached``) for the memo (:meth:`memo_answer`)."""
        if response.get("cached") is not True or not AnswerMemo.applies(request):
            return
        try:
            with self.ledger() as ledger:
                cache_key = self._cache_key(key, request, ledger)
                stored = ledger.cached_answer(cache_key) if cache_key else None
        except (UserError, sqlite3.Error):
            return
        if cache_key:
            self.memo.remember(key.analyst, request, response, request_key=cache_key, location=self.location, files=files, stored=stored)

    def _reopen_copy(self) -> None:
        """After a new copy replaced the file: the connection held on the old one moves to the new one."""
        self._copy_seen = self._copy_file()
        held, self._held_copy = self._held_copy, None
        if held is None and not self._held:
            return  # hold_open was not called: nothing to move
        if held is not None:
            held.close()
        try:
            self._held_copy = open_synthetic(self._synthetic_path())
        except UserError:
            pass

    def close(self) -> None:
        """Close every connection this deployment holds open (databases, copy, ledger); later requests open their own."""
        databases, self.databases = self.databases, None
        if databases is not None:
            databases.close()
        self._memo_generation = -1  # the memo's kept ledgers: this thread's closed now, any other's on its next use (or dropped)
        self._drop_memo_ledger()
        kept, self._release_ledgers.kept = getattr(self._release_ledgers, "kept", None), None
        if kept is not None:
            kept.close()  # this thread's release ledger; another thread's is dropped with it (requests no longer lend)
        held_ledger, self._held_ledger = self._held_ledger, None
        if held_ledger is not None and self._held_ledger_thread == threading.get_ident():
            held_ledger.close()  # elsewhere (a test client's lifespan thread) dropped: Python's sqlite3 closes only in its own thread
        for held in self._held:
            held.close()
        self._held.clear()
        if self._held_copy is not None:
            self._held_copy.close()
            self._held_copy = None

    # ------------------------------------------------------------------ plumbing

    def ledger(self) -> Ledger:
        """The database's ledger under the ``pimento.toml`` of now (:meth:`_settings_now`): a cap the custodian tightened
        while the service runs shows in the budget, history, previews and the memo's reads as it binds releases."""
        return Ledger.for_database(self.location, self._settings_now())

    @contextmanager
    def session(self, analyst: str) -> Iterator[Session]:
        """A :class:`Session` for one request, on a database lent by :attr:`databases` for the request alone
        (after :meth:`hold_open`), otherwise opened and closed with the request. The database file is checked
        first: a file replaced under the running service is refused, never answered from."""
        if self.identity is not None:
            self.identity.check()  # never answer from a database file replaced under the running service
        databases = self.databases
        if databases is None:
            with Session(self.db, analyst=analyst) as session:
                yield session
            return
        with (
            databases.lend() as database,
            self._release_ledger(database.settings) as ledger,
            Session.over(database, analyst=analyst, ledger=ledger) as session,
        ):
            yield session

    @contextmanager
    def _release_ledger(self, settings: Settings) -> Iterator[Ledger]:
        """This thread's ledger for one request's session (:meth:`session`, after :meth:`hold_open`), under ``settings``
        (those the lent database was opened under: the ``pimento.toml`` of now, as when each request opened its ledger):
        the one it kept from its last request when it was opened under the same ``[ledger]`` settings, renewed
        (:meth:`~pimento.mechanisms.ledger.Ledger.renew`: the checks a new ledger runs when it opens, the pages it cached
        dropped, the chain and the pending charges as a new object knows them), else a new one. Kept again after a
        request that ended without an exception while the deployment is open, else closed, so that the next request
        opens its own after any error. A PostgreSQL ledger is opened for each request."""
        kept: Ledger | None = getattr(self._release_ledgers, "kept", None)
        self._release_ledgers.kept = None  # taken by this request
        ledger: Ledger | None = None
        try:
            # a changed [ledger] (a cap tightened, another file or URL) takes a new object, opened under it
            if kept is not None and kept.settings == settings.ledger and kept.renew():
                ledger = kept
        finally:
            if ledger is None and kept is not None:
                kept.close()
        if ledger is None:
            ledger = Ledger.for_database(self.location, settings)
        try:
            yield ledger
        except BaseException:
            ledger.close()
            raise
        if self._memo_generation < 0 or ledger.postgres:
            ledger.close()
        else:
            self._release_ledgers.kept = ledger

    # ------------------------------------------------------------------ analyst

    @property
    def modes(self) -> tuple[Mode, ...]:
        """The release modes this deployment serves: dp always (listed first); ci, split, contextual with a policy."""
        return (Mode.DP, *(m for m in Mode if m is not Mode.DP)) if self.policy else (Mode.DP,)

    def request(self, key: ApiKey, *, sql: str | None = None, question: str | None = None, epsilon: str | None = None,
                delta: str | None = None, mode: str | Mode = Mode.DP, sender: str | None = None, purpose: str | None = None,
                expect_sql: str | None = None, bounds: Any = None) -> Request:
        """The :class:`~pimento.release.request.Request` an analyst's call makes, decided from the key before
        anything is read or charged: the analyst is the key's, the recipient is the key's principal, the sender
        and purpose are among those the custodian bound the key to (``pimento keys add --sender --purpose``; the
        call may pick one, never name another, :meth:`ApiKey.choose`); the policy and the search settings are
        the custodian's. Values obey the one context grammar (:func:`pimento.release.request.context_value`)."""
        if mode not in set(Mode):
            raise ModeError("unknown mode", hint=f"one of {', '.join(Mode)}")  # the caller's text is not repeated
        chosen = Mode(mode)
        for field, value in (("sender", sender), ("purpose", purpose)):
            if value is not None:
                context_value(field, value)
        context = None
        if chosen is Mode.DP:
            if sender or purpose:
                raise ModeError("sender and purpose are for the modes ci, split and contextual", hint="leave them out in mode dp")
        elif self.policy is None:
            raise ModeError(f"mode {chosen} is not served here: this deployment has no policy", hint="ask the custodian ([policy] compiled in the deployment's pimento.toml)")
        elif key.principal is None:
            raise ModeError(f"mode {chosen} needs a principal, and this key stands for none",
                            hint="ask the custodian for a key issued with --principal KIND:ID --sender KIND:ID --purpose NAME")
        else:
            context = Context.parse({"sender": key.choose("sender", sender), "recipient": key.principal, "purpose": key.choose("purpose", purpose)})
        if sql is not None:
            return Request.for_sql(sql, epsilon=epsilon, delta=delta, analyst=key.analyst, mode=chosen, context=context, bounds=bounds)
        search = SearchOptions(synthetic=self.search.synthetic, k=self.search.k, config=self.search.config())
        return Request(question=question, epsilon=epsilon, delta=delta, analyst=key.analyst, mode=chosen, context=context, search=search,
                       expect_sql=expect_sql, bounds=bounds)

    def sql(self, key: ApiKey, sql: str, epsilon: str | None, delta: str | None, *, mode: str = Mode.DP,
            sender: str | None = None, purpose: str | None = None, bounds: object = None) -> dict[str, Any]:
        """``POST /v1/sql``: the key's :meth:`request` for ``sql``, answered by :meth:`Session.answer` (charged first), or
        a repeat of a stored answer this process returned, by :meth:`memo_answer` (one ledger read)."""
        request = self.request(key, sql=sql, epsilon=epsilon, delta=delta, mode=mode, sender=sender, purpose=purpose, bounds=bounds)
        files = self.files()  # before the release: a file changed meanwhile makes the entry miss
        memoized = self.memo_answer(key, request, files)
        if memoized is not None:
            return dict(json.loads(memoized))
        # keys_read_once: the deployment file read once in the release (request key, charge, budget left)
        with keys_read_once(), self.synth_jobs.swap.shared(), self.session(key.analyst) as session:
            answer = session.answer(request)
        response = _finish(answer.to_dict())
        self._remember(key, request, response, files)
        return response

    def ask(self, key: ApiKey, question: str, epsilon: str, delta: str | None, *, mode: str = Mode.DP,
            sender: str | None = None, purpose: str | None = None, expect_sql: str | None = None,
            bounds: object = None) -> dict[str, Any]:
        """``POST /v1/ask``: the key's :meth:`request` for ``question``, read on the synthetic copy and released by
        :meth:`Session.answer`; with ``expect_sql``, refused before the charge unless the reading is that SQL."""
        request = self.request(key, question=question, epsilon=epsilon, delta=delta, mode=mode, sender=sender, purpose=purpose,
                               expect_sql=expect_sql, bounds=bounds)
        self.refresh_copy()
        with self.synth_jobs.swap.shared(), shared_readings(), self.session(key.analyst) as session:
            answer = session.answer(request)
        return _finish(answer.to_dict())

    def preview(self, key: ApiKey, question: str, epsilon: str, delta: str | None, *, mode: str = Mode.DP,
                sender: str | None = None, purpose: str | None = None, bounds: object = None) -> dict[str, Any]:
        """The interpretation of ``question`` in ``mode`` (:func:`pimento.release.interpret`, as ``pimento ask
        --preview`` shows it), plus the epsilon planner (:func:`~pimento.release.sql_preview.reading_planner`) and the budget left; spends nothing.

        Found on the synthetic copy only, with the catalog read when the service started: unlike the
        CLI, the private database is not even opened. The chosen SQL is what ``ask`` with the same
        parameters releases (the search is seeded; contextual mode: the contextual reading).
        """
        request = self.request(key, question=question, epsilon=epsilon, delta=delta, mode=mode, sender=sender, purpose=purpose,
                               bounds=bounds)
        self.refresh_copy()
        with self.synth_jobs.swap.shared(), shared_readings():
            with self.ledger() as ledger:
                seen = interpret(request, catalog=self.catalog, settings=self.settings, ledger=ledger, location=self.location)
                left = ledger.remaining(self.location, key.analyst)
            engine = open_synthetic(self._synthetic_path())
            try:
                rows = reading_planner(seen, engine, self.catalog, self.settings, epsilon=epsilon, delta=delta)
            finally:
                engine.close()
        return {
            **seen.to_dict(),
            **seen.accuracy(tuple(rows)).to_dict(),  # with the planner: the epsilon that would give +-10%
            "planner": rows,
            "budget_left": {"epsilon": format_number(left.epsilon), "delta": format_number(left.delta)},
        }

    def _synthetic_path(self) -> Path:
        return resolve_synthetic(self.search.synthetic, self.location, self.settings)

    def budget(self, key: ApiKey) -> dict[str, Any]:
        """``GET /v1/budget``: the analyst's cap, what they spent, what is left to them, and which cap binds
        (:func:`pimento.mechanisms.caps.binding`: ``"database"`` when the database-wide cap leaves less than
        their own; decided from the three figures shown, so it reveals nothing more)."""
        with self.ledger() as ledger:
            cap = ledger.analyst_cap(key.analyst)
            spent = ledger.spent(self.location, key.analyst)
            left = ledger.remaining(self.location, key.analyst)
        return {"analyst": key.analyst, "principal": key.principal, "cap": cap.to_dict(), "spent": spent.to_dict(), "left": left.to_dict(),
                "binds": binding(cap, spent, left)}

    def history(self, key: ApiKey, limit: int = 50) -> list[dict[str, Any]]:
        """This analyst's released answers on this database, newest first, analyst-safe fields only
        (:data:`HISTORY_FIELDS`), each with its mode's name and the part of the count its value is
        (:func:`pimento.mechanisms.audit.released_part`: for split, ``"remainder"`` and the exact
        authorized part the analyst was answered beside it)."""
        me = database_key(self.location)
        with self.ledger() as ledger:
            rows = ledger.audit_rows()
        out = []
        for row in reversed(rows):
            if row.get("outcome") != "released" or row.get("analyst") != key.analyst or row.get("database") != me:
                continue
            item = {name: row.get(name) for name in HISTORY_FIELDS}
            item.update(released_part(row))  # the mode's name, and for split: the value is the remainder, beside the exact part
            if item["value"] is not None and item["interval"] is not None:
                item = clamp_count(item)
            out.append(item)
            if len(out) >= limit:
                break
        return out

    # ------------------------------------------------------------------ custodian

    def audit(self, limit: int = 100) -> list[dict[str, Any]]:
        """Custodian: the latest audit rows as recorded, each release row with the part of the count its
        value is (``part``, and for split ``authorized_exact``: :func:`pimento.mechanisms.audit.released_part`)."""
        with self.ledger() as ledger:
            rows = ledger.audit_rows(limit=limit or None)
        return [{**row, **{k: v for k, v in released_part(row).items() if k != "mode"}} for row in rows]

    def policy_summary(self) -> dict[str, Any]:
        """Custodian: the compiled policy this deployment enforces (principals, purposes, norms), or none."""
        if self.policy is None:
            return {"policy": None, "modes": list(self.modes)}
        compiled = load_compiled_policy(self.policy)
        data = compiled.to_dict()
        return {
            "policy": str(self.policy),
            "name": compiled.name,
            "modes": list(self.modes),
            "principals": data["principals"],
            "purposes": data["purposes"],
            "norms": [{k: n.get(k) for k in ("id", "sign", "sender", "recipient", "subject", "data", "purpose") if k in n} for n in data["norms"]],
        }

    def synthetic_status(self) -> dict[str, Any]:
        """Custodian: the synthetic copy in use (its charge and declared public inputs) and the latest job."""
        copy: dict[str, Any]
        try:
            path = self._synthetic_path()
            self.refresh_copy()
            with self.synth_jobs.swap.shared(), self.ledger() as ledger:
                budget, public_inputs = synthetic_guarantee(ledger, self.location, path)
            copy = {"path": str(path), "usable": True, "epsilon": format_number(budget.epsilon), "delta": format_number(budget.delta),
                    "public_inputs": public_inputs}
        except UserError as exc:
            copy = {"usable": False, "why": exc.one_line()}
        job = self.synth_jobs.latest()
        return {"copy": copy, "job": job.to_dict() if job else None}

    def caps(self) -> dict[str, Any]:
        with self.ledger() as ledger:
            return ledger.summary(self.location)

    def add_key(self, analyst: str, principal: str | None = None, senders: Sequence[str] = (), purposes: Sequence[str] = ()) -> tuple[ApiKey, str]:
        """Custodian: issue a key for ``analyst`` standing for ``principal``, bound to ``senders`` and
        ``purposes`` (the context of modes ci, split, contextual). With a policy configured, each
        principal must be of a kind it names and exist, each purpose must be one it lists."""
        with self.ledger() as ledger:
            ledger.analyst_cap(analyst)  # [ledger] analysts, when set, must list the analyst
        KeyStore.check_form(analyst, principal, senders, purposes)
        if self.policy is not None:
            self._check_against_policy(principal, senders, purposes)
        return self.keys.add(analyst, principal, senders, purposes)

    def _check_against_policy(self, principal: str | None, senders: Sequence[str], purposes: Sequence[str]) -> None:
        """A principal or sender the policy does not know (``employe:172``, ``employee:99999``), or an
        unknown purpose, is a :class:`~pimento.errors.PolicyError` naming it (custodian tool: reads the data)."""
        assert self.policy is not None
        compiled = load_compiled_policy(self.policy)
        for purpose in purposes:
            if not compiled.purpose_names(purpose):
                known = sorted({v for values in compiled.purposes.values() for v in values})
                raise PolicyError(f"unknown purpose {purpose!r}", hint=f"purposes of the policy: {', '.join(known)}")
        database = load_database(self.db, read_only=True)
        try:
            enforcer = Enforcer(compiled, database.engine, database.catalog)
            if principal is not None:
                enforcer.identity(principal, what="principal", verify=True)
            for sender in senders:
                enforcer.identity(sender, what="sender", verify=True)
        finally:
            database.close()

    def revoke_key(self, key_id: str) -> ApiKey:
        return self.keys.revoke(key_id)
