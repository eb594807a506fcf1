"""A new synthetic copy made while the service runs (custodian: ``POST /v1/synth``).

The copy is written beside the one in use, under a temporary name, by
:func:`pimento.release.synthetic.make_copy` (which charges the ledger before it reads the private
database), then put in place with one ``os.replace``. Requests that read the copy hold the
:class:`SwapLock` shared; the swap holds it alone, so no request sees half of the switch, and the
connection the process keeps open on the copy (see ``Deployment.hold_open``) is re-opened on the
new file. Other processes serving the deployment (``pimento serve --workers N``) notice the new
file by its identity before their next request that reads the copy and reopen it
(``Deployment.refresh_copy``). One job runs at a time across the processes (an exclusive lock on
the file ``.<copy name>.synth-lock`` beside the copy, held for the job's life and dropped by the
kernel if the process dies); its progress (stage, done, total) is polled with ``GET /v1/synth``
on the process that started it (each process lists its own jobs).
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from pimento.engines.database import load_database
from pimento.errors import PimentoError, PrivacyParameterError, ServiceError
from pimento.mechanisms.budget import parse_number
from pimento.release.synthetic import make_copy

__all__ = ["SwapLock", "SynthJob", "SynthJobs"]


class SwapLock:
    """Many readers of the synthetic copy, or one swap of it."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._readers = 0
        self._swapping = False

    def shared(self) -> "_Held":
        return _Held(self, exclusive=False)

    def exclusive(self) -> "_Held":
        return _Held(self, exclusive=True)

    def _acquire(self, exclusive: bool) -> None:
        with self._cond:
            if exclusive:
                self._cond.wait_for(lambda: not self._swapping)
                self._swapping = True
                self._cond.wait_for(lambda: self._readers == 0)
            else:
                self._cond.wait_for(lambda: not self._swapping)
                self._readers += 1

    def _release(self, exclusive: bool) -> None:
        with self._cond:
            if exclusive:
                self._swapping = False
            else:
                self._readers -= 1
            self._cond.notify_all()


class _Held:
    def __init__(self, lock: SwapLock, *, exclusive: bool) -> None:
        self.lock, self.exclusive = lock, exclusive

    def __enter__(self) -> None:
        self.lock._acquire(self.exclusive)

    def __exit__(self, *exc: object) -> None:
        self.lock._release(self.exclusive)


@dataclass
class SynthJob:
    """One request for a new copy: its parameters, where it is, and how it ended."""

    id: str
    epsilon: str
    delta: str
    seed: int
    state: str = "running"  # running | done | failed
    stage: str = "queued"
    done: int = 0
    total: int = 0
    started: float = field(default_factory=time.time)
    finished: float | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "state": self.state, "epsilon": self.epsilon, "delta": self.delta, "seed": self.seed,
            "progress": {"stage": self.stage, "done": self.done, "total": self.total},
            "started": _iso(self.started), "finished": _iso(self.finished) if self.finished else None,
            "result": self.result, "error": self.error,
        }


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


class SynthJobs:
    """The deployment's synthesis jobs (one at a time) and the lock that guards the copy in use."""

    def __init__(self, db: str, target: Callable[[], Path], reopen: Callable[[], None]) -> None:
        self.db = db
        self.target = target
        self.reopen = reopen
        self.swap = SwapLock()
        self._lock = threading.Lock()
        self._jobs: dict[str, SynthJob] = {}
        self._running: str | None = None

    def start(self, epsilon: str, delta: str, *, seed: int = 0, wait: bool = False) -> SynthJob:
        # bad parameters are refused now, before a job exists (synthesize checks them again)
        if parse_number(epsilon, name="epsilon") <= 0:
            raise PrivacyParameterError(f"epsilon must be > 0, got {epsilon}")
        if not 0 < parse_number(delta, name="delta") < 1:
            raise PrivacyParameterError(f"delta must be in (0, 1), got {delta}")
        with self._lock:
            if self._running is not None:
                raise ServiceError(
                    409, f"a synthetic copy is already being made (job {self._running})",
                    hint="poll GET /v1/synth until it ends, then try again", type_="SynthesisRunning",
                )
            lock = self._lock_across_processes()
            job = SynthJob(uuid.uuid4().hex[:12], epsilon, delta, seed)
            self._jobs[job.id] = job
            self._running = job.id
        thread = threading.Thread(target=self._run, args=(job, lock), name=f"pimento-synth-{job.id}", daemon=True)
        thread.start()
        if wait:
            thread.join()
        return job

    def latest(self) -> SynthJob | None:
        with self._lock:
            return max(self._jobs.values(), key=lambda j: j.started, default=None)

    def _lock_across_processes(self) -> int:
        """The exclusive lock on ``.<copy>.synth-lock`` (an open descriptor), or a 409 when another process holds it."""
        target = self.target()
        fd = os.open(target.with_name(f".{target.name}.synth-lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise ServiceError(
                409, "a synthetic copy is already being made by another process of this deployment",
                hint="wait until it is in place (GET /v1/synth shows the copy in use), then try again", type_="SynthesisRunning",
            ) from None
        return fd

    def _run(self, job: SynthJob, lock: int) -> None:
        target = self.target()
        temporary = target.with_name(f".{target.stem}.new-{job.id}{target.suffix}")  # same folder, same engine

        def progress(stage: str, done: int, total: int) -> None:
            job.stage, job.done, job.total = stage, done, total

        try:
            database = load_database(self.db, read_only=True)
            try:
                made = make_copy(database, temporary, job.epsilon, job.delta, seed=job.seed, progress=progress)
            finally:
                database.close()
            made.engine.close()
            with self.swap.exclusive():
                os.replace(temporary, target)
                self.reopen()
            job.result = {**{k: v for k, v in made.to_dict().items() if k != "details"}, "path": str(target)}
            job.state = "done"
        except PimentoError as exc:
            job.state, job.error = "failed", {"type": type(exc).__name__, "message": exc.one_line()}
        except Exception as exc:  # noqa: BLE001 -- the job thread must record any failure, not die silently
            job.state, job.error = "failed", {"type": "InternalError", "message": f"{type(exc).__name__}: {exc}"}
        finally:
            if temporary.exists():
                temporary.unlink()
            job.finished = time.time()
            os.close(lock)  # drops the lock across processes
            with self._lock:
                self._running = None
