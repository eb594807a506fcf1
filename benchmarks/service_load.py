"""Benchmark and fault harness for ``pimento serve``: concurrent clients on loopback, SIGKILL restarts.

    python -m benchmarks.service_load                           # build a demo deployment, measure
    python -m benchmarks.service_load --clients 32 --seconds 60 --kills 0
    python -m benchmarks.service_load --kills 5 --seconds 30    # SIGKILL the server 5 times meanwhile
    python -m benchmarks.service_load --think 0.5               # clients pause 0.5 s on average between requests
    python -m benchmarks.service_load --no-accept --epsilon 1   # no accept_noise: each spend is checked for noise first

A deployment (the demo hospital, ``--patients``, and a real ``pimento synth`` copy) is built in a
temporary folder unless ``--db`` names one that has a synthetic copy. The server runs as a child
process (``pimento serve`` on 127.0.0.1, a free port), and ``--clients`` threads send requests for
``--seconds`` (every loop is bounded by that deadline and stops by itself) against ONE analyst's
budget (``--cap``). Request kinds: ``sql_cached`` (one fixed query: the answer cache answers after
the first), ``sql_uncached`` (a query with a fresh literal each time), ``ask_cached`` (one fixed
question) and ``ask_uncached`` (the same question at a fresh epsilon, epsilon + n/10^9, which the
answer cache keys on, and so does the cache of readings: the search runs), ``previewed_ask`` (the web
page's flow: a preview of the fixed question at a fresh epsilon, untimed, then the ask at that
epsilon, timed: the release is fresh and charged, the reading comes from the analyst's cache of
readings, possibly from another worker). With ``--workers N`` the
server runs N worker processes. With ``--kills K`` the server (all its processes) is killed with
SIGKILL K times at random moments (and ``PIMENTO_TEST_PAUSE`` stretches the window between charge
and answer) and restarted.

Afterwards the ledger is checked (:func:`check_ledger`): no overspend (the analyst's charges sum
to at most the cap), every answer a client received with ``cached: false`` has exactly one charge
and exactly one ``released`` audit row, every charge has exactly one audit row, the audit chain
verifies. Prints p50/p99 latency and throughput per kind (JSON with ``--json``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import httpx

from pimento.demo.hospital import create_demo
from pimento.engines.database import load_database
from pimento.mechanisms import Ledger
from pimento.mechanisms.budget import format_number
from pimento.service.deployment import Deployment

__all__ = ["LoadResult", "ServerProcess", "build_deployment", "check_ledger", "free_port", "run_load", "summarize"]

KINDS = ("sql_cached", "sql_uncached", "ask_cached", "ask_uncached", "previewed_ask")
CACHED_SQL = "SELECT COUNT(*) FROM Patient"
CACHED_QUESTION = "How many patients were prescribed warfarin by cardiologists?"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ServerProcess:
    """``pimento serve`` as a child process on 127.0.0.1; :meth:`kill` sends SIGKILL."""

    def __init__(self, db: str | Path, *, port: int | None = None, args: tuple[str, ...] = (), env: dict[str, str] | None = None) -> None:
        self.db = str(db)
        self.port = port or free_port()
        self.args = args
        self.env = {**os.environ, **(env or {})}
        self.proc: subprocess.Popen[bytes] | None = None
        fd, name = tempfile.mkstemp(prefix="pimento-serve-", suffix=".log")
        os.close(fd)
        self.log_path = Path(name)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0) -> ServerProcess:
        code = "import sys; from pimento.cli.app import main; sys.argv[0] = 'pimento'; main()"
        command = [sys.executable, "-c", code, "serve", "--db", self.db, "--port", str(self.port), *self.args]
        log = open(self.log_path, "ab")  # noqa: SIM115 - the child holds it; reopened after a stop
        # its own process group: a kill reaches every worker process (``--workers N``)
        self.proc = subprocess.Popen(command, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"pimento serve exited with {self.proc.returncode}: {self.output()[-2000:]}")
            try:
                if httpx.get(self.url + "/v1/health", timeout=1.0).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"pimento serve did not answer within {timeout:g} s: {self.output()[-2000:]}")

    def output(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def kill(self) -> None:
        """SIGKILL to the server's whole process group (the supervisor and its workers)."""
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(timeout=30)

    def worker_pids(self) -> list[int]:
        """The pids of the server's worker processes (its children; Linux /proc), empty with one process."""
        if self.proc is None:
            return []
        pids = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                    if parent == self.proc.pid and b"spawn_main" in (entry / "cmdline").read_bytes():  # not the resource tracker
                        pids.append(int(entry.name))
                except OSError:
                    continue
        return sorted(pids)

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after 20 s) and remove its log file."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()
        self.log_path.unlink(missing_ok=True)

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@dataclass
class Outcome:
    kind: str
    status: int  # 0: no response (connection refused or reset: the server was down)
    seconds: float
    charge_id: int | None = None
    cached: bool | None = None
    epsilon: str | None = None
    error_type: str | None = None


@dataclass
class LoadResult:
    outcomes: list[Outcome] = field(default_factory=list)
    wall_seconds: float = 0.0
    kills: int = 0


class _Counter:
    def __init__(self) -> None:
        self._n = 0
        self._lock = threading.Lock()

    def next(self) -> int:
        with self._lock:
            self._n += 1
            return self._n


def _request(kind: str, n: int, epsilon: str, accept_noise: bool = True) -> tuple[str, dict[str, Any]]:
    """The request of ``kind``; by default it accepts the noise: the load then measures answers, not the warning
    before a spend predicted to be mostly noise (a 409 refusal otherwise at a small epsilon on the small demo:
    docs/accuracy.md). ``accept_noise=False`` (``--no-accept``): the service runs that check before every spend
    (at an epsilon where the answer is not mostly noise, e.g. 1, the requests are still answered)."""
    path, body = _unaccepted(kind, n, epsilon)
    return path, ({**body, "accept_noise": True} if accept_noise else body)


def _unaccepted(kind: str, n: int, epsilon: str) -> tuple[str, dict[str, Any]]:
    if kind == "previewed_ask":  # the preview of this body is sent first (run_load), untimed
        return "/v1/ask", {"question": CACHED_QUESTION, "epsilon": _fresh(epsilon, n), "delta": "1e-6"}
    if kind == "sql_cached":
        return "/v1/sql", {"sql": CACHED_SQL, "epsilon": epsilon}
    if kind == "sql_uncached":
        return "/v1/sql", {"sql": f"SELECT COUNT(*) FROM Patient WHERE birth_year <> {100000 + n}", "epsilon": epsilon}
    if kind == "ask_cached":
        return "/v1/ask", {"question": CACHED_QUESTION, "epsilon": epsilon, "delta": "1e-6"}
    # A fresh epsilon (epsilon + n/10^9) makes a fresh request: the answer cache keys on it.
    return "/v1/ask", {"question": CACHED_QUESTION, "epsilon": _fresh(epsilon, n), "delta": "1e-6"}


def _fresh(epsilon: str, n: int) -> str:
    value = Fraction(epsilon) + Fraction(n, 10**9)
    return f"{value.numerator}/{value.denominator}"


def run_load(
    url: str,
    key: str,
    *,
    clients: int,
    seconds: float,
    kinds: tuple[str, ...] = KINDS,
    weights: tuple[float, ...] | None = None,
    epsilon: str = "0.01",
    seed: int = 0,
    result: LoadResult | None = None,
    stop: threading.Event | None = None,
    think: float = 0.0,
    accept_noise: bool = True,
) -> LoadResult:
    """``clients`` threads sending requests until ``seconds`` have passed (or ``stop`` is set).

    ``think``: each client's mean pause between an answer and its next request (exponentially
    distributed, seconds): 0 is a closed loop at saturation (each client sends again at once), so
    latency is then about clients / throughput; a pause models analysts who read their answers.
    ``accept_noise``: whether each request says so (:func:`_request`).
    """
    result = result or LoadResult()
    counter = _Counter()
    lock = threading.Lock()
    deadline = time.monotonic() + seconds
    stop = stop or threading.Event()

    def client(index: int) -> None:
        rng = random.Random(seed * 1000 + index)
        headers = {"Authorization": f"Bearer {key}"}
        with httpx.Client(base_url=url, headers=headers, timeout=120.0) as http:
            while time.monotonic() < deadline and not stop.is_set():
                if think > 0:
                    time.sleep(min(rng.expovariate(1.0 / think), max(0.0, deadline - time.monotonic())))
                    if time.monotonic() >= deadline:
                        break
                kind = rng.choices(kinds, weights=weights)[0]
                n = counter.next()
                path, body = _request(kind, n, epsilon, accept_noise)
                start = time.perf_counter()
                try:
                    if kind == "previewed_ask":
                        http.post("/v1/ask/preview", json=body)
                        start = time.perf_counter()
                    response = http.post(path, json=body)
                except httpx.HTTPError:
                    outcome = Outcome(kind, 0, time.perf_counter() - start)
                    time.sleep(0.05)
                else:
                    elapsed = time.perf_counter() - start
                    data = response.json() if response.headers.get("content-type", "").startswith("application/json") else {}
                    if response.status_code == 200:
                        outcome = Outcome(kind, 200, elapsed, data.get("charge_id"), data.get("cached"), data.get("epsilon"))
                    else:
                        outcome = Outcome(kind, response.status_code, elapsed, error_type=(data.get("error") or {}).get("type"))
                with lock:
                    result.outcomes.append(outcome)

    started = time.perf_counter()
    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=seconds + 180)
    result.wall_seconds += time.perf_counter() - started
    return result


def check_ledger(db: str | Path, analyst: str | tuple[str, ...], outcomes: list[Outcome]) -> dict[str, Any]:
    """The invariants after a run (raises AssertionError naming the first that fails); ``analyst``: the
    analyst of the run, or all of them (each within their cap)."""
    analysts = (analyst,) if isinstance(analyst, str) else tuple(analyst)
    database = load_database(str(db), read_only=True)
    location, settings = str(database.location), database.settings
    database.close()
    with Ledger.for_database(location, settings) as ledger:
        closed = ledger.close_abandoned()
        report = ledger.verify_audit()
        charges = [c for c in ledger.charges() if c.analyst in analysts]
        rows = ledger.audit_rows()
        cap = ledger.analyst_cap(analysts[0])
        db_cap = ledger.database_cap()
        db_spent = ledger.spent(location)
    assert report.ok, f"the audit log does not verify: {[p.to_dict() for p in report.problems][:5]}"
    assert db_spent.epsilon <= db_cap.epsilon and db_spent.delta <= db_cap.delta, f"overspend of the database: {db_spent} > {db_cap}"
    for who in analysts:
        mine = sum((c.budget.epsilon for c in charges if c.analyst == who), Fraction(0))
        assert mine <= cap.epsilon, f"overspend: {who} charged epsilon {mine} > cap {cap.epsilon}"
    spent = sum((c.budget.epsilon for c in charges), Fraction(0))
    rows_per_charge = Counter(r.get("charge_id") for r in rows if r.get("charge_id") is not None)
    released = Counter(r.get("charge_id") for r in rows if r.get("outcome") == "released")
    ids = {c.id for c in charges}
    for c in charges:
        assert rows_per_charge[c.id] == 1, f"charge {c.id} has {rows_per_charge[c.id]} audit rows"
    fresh = [o.charge_id for o in outcomes if o.status == 200 and o.cached is False]
    assert len(fresh) == len(set(fresh)), "two fresh answers carry the same charge"
    for charge_id in fresh:
        assert charge_id in ids, f"answer with charge {charge_id} has no charge of {analysts}"
        assert released[charge_id] == 1, f"answer with charge {charge_id} has {released[charge_id]} 'released' audit rows"
    for o in outcomes:
        if o.status == 200:
            assert o.charge_id in ids, f"a cached answer points at charge {o.charge_id}, not one of {analysts}'s"
    return {
        "charges": len(charges),
        "spent_epsilon": format_number(spent),
        "cap_epsilon": format_number(cap.epsilon),
        "fresh_answers": len(fresh),
        "audit_rows": report.rows,
        "closed_abandoned": closed,
        "outcomes": dict(Counter(r.get("outcome") for r in rows if r.get("analyst") in analysts)),
    }


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(round(q * (len(ordered) - 1)))))]


def summarize(result: LoadResult) -> dict[str, Any]:
    """p50/p99 latency (ms) and throughput per kind, for 200 answers split cached / fresh."""
    groups: dict[str, list[float]] = defaultdict(list)
    statuses: Counter[str] = Counter()
    for o in result.outcomes:
        statuses[f"{o.kind}:{o.status}{'/' + o.error_type if o.error_type else ''}"] += 1
        if o.status == 200:
            groups[f"{o.kind.split('_')[0]}_{'cached' if o.cached else 'fresh'}"].append(o.seconds)
    wall = result.wall_seconds or 1.0
    table = {
        name: {
            "n": len(v),
            "p50_ms": round(1000 * statistics.median(v), 1),
            "p99_ms": round(1000 * _quantile(v, 0.99), 1),
            "per_s": round(len(v) / wall, 2),
        }
        for name, v in sorted(groups.items())
    }
    ok = sum(len(v) for v in groups.values())
    return {"wall_s": round(wall, 2), "answers": ok, "answers_per_s": round(ok / wall, 2), "by_kind": table, "statuses": dict(statuses), "kills": result.kills}


def build_deployment(folder: Path, *, patients: int, cap: str, analyst: str) -> tuple[Path, str]:
    """The demo hospital with a real synthetic copy, an analyst cap and one key: (db, key)."""
    folder.mkdir(parents=True, exist_ok=True)
    db = folder / "hospital.duckdb"
    create_demo(db, patients=patients, seed=5)
    with open(folder / "pimento.toml", "a", encoding="utf-8") as fh:
        fh.write(f'\n[ledger]\nepsilon_cap = "1000"\nanalyst_epsilon_cap = "{cap}"\ndelta_cap = "0.01"\n')
    code = "import sys; from pimento.cli.app import main; sys.argv[0] = 'pimento'; main()"
    subprocess.run(
        [sys.executable, "-c", code, "synth", "--db", str(db), "--out", str(folder / "hospital.synthetic.duckdb"), "--epsilon", "1.6", "--delta", "1e-6"],
        check=True, stdout=subprocess.DEVNULL,
    )
    _entry, key = Deployment(db).add_key(analyst)
    return db, key


def run_with_kills(server: ServerProcess, key: str, *, clients: int, seconds: float, kills: int, seed: int, **load: Any) -> LoadResult:
    """Load for ``seconds`` while the server is SIGKILLed ``kills`` times at random moments and restarted."""
    result = LoadResult()
    stop = threading.Event()
    loader = threading.Thread(target=run_load, args=(server.url, key), kwargs={"clients": clients, "seconds": seconds, "seed": seed, "result": result, "stop": stop, **load})
    loader.start()
    rng = random.Random(seed)
    slot = seconds / (kills + 1)
    try:
        for _ in range(kills):
            time.sleep(rng.uniform(0.3, 1.0) * slot)
            server.kill()
            result.kills += 1
            server.start()
    finally:
        loader.join(timeout=seconds + 240)
        stop.set()
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.service_load", description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", help="an existing deployment (with a synthetic copy charged to its ledger); default: build one")
    parser.add_argument("--key", help="the analyst key for --db")
    parser.add_argument("--analyst", default="loadtest")
    parser.add_argument("--patients", type=int, default=300)
    parser.add_argument("--cap", default="1000", help="the analyst's epsilon cap (built deployment)")
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--kills", type=int, default=0)
    parser.add_argument("--epsilon", default="0.01")
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--rollouts", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=1, help="pimento serve --workers")
    parser.add_argument("--think", type=float, default=0.0,
                        help="each client's mean pause (s, exponential) before each request; 0: closed loop at saturation")
    parser.add_argument("--no-accept", action="store_true",
                        help="requests do not say accept_noise: the service checks each spend for mostly noise first "
                             "(use an epsilon where the answers are not, e.g. --epsilon 1)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="pimento-service-load-"))
    if args.db:
        db, key = Path(args.db), args.key
        if not key:
            parser.error("--db needs --key")
    else:
        db, key = build_deployment(folder, patients=args.patients, cap=args.cap, analyst=args.analyst)
    kinds = tuple(k for k in args.kinds.split(",") if k)
    env = {"PIMENTO_TEST_PAUSE": "after_charge:0.02"} if args.kills else {}
    serve_args = ("--rate", "100000", "--burst", "100000", "--rollouts", str(args.rollouts), "--workers", str(args.workers))
    server = ServerProcess(db, args=serve_args, env=env).start()
    load = {"kinds": kinds, "epsilon": args.epsilon, "accept_noise": not args.no_accept}
    try:
        # Warm the caches once (the first answers of the cached kinds are fresh ones; the first ask reads the question).
        warm = ("sql_cached", "ask_cached") if any("ask" in k for k in kinds) else ("sql_cached",)
        for kind in warm:
            run_load(server.url, key, clients=args.workers, seconds=0.1, kinds=(kind,), epsilon=args.epsilon,
                     accept_noise=not args.no_accept)
        if args.kills:
            result = run_with_kills(server, key, clients=args.clients, seconds=args.seconds, kills=args.kills, seed=args.seed, **load)
        else:
            result = run_load(server.url, key, clients=args.clients, seconds=args.seconds, seed=args.seed, think=args.think, **load)
    finally:
        server.stop()
    summary = summarize(result)
    summary["ledger"] = check_ledger(db, args.analyst, result.outcomes)
    summary["setup"] = {
        "clients": args.clients, "seconds": args.seconds, "kills": args.kills, "epsilon": args.epsilon, "patients": args.patients,
        "rollouts": args.rollouts, "workers": args.workers, "think_s": args.think, "accept_noise": not args.no_accept,
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
    }
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(f"{summary['answers']} answers in {summary['wall_s']} s ({summary['answers_per_s']}/s), {args.kills} SIGKILL(s)")
        for name, row in summary["by_kind"].items():
            print(f"  {name:14s} n={row['n']:6d}  p50 {row['p50_ms']:8.1f} ms  p99 {row['p99_ms']:8.1f} ms  {row['per_s']:7.2f}/s")
        print(f"  statuses: {summary['statuses']}")
        print(f"  ledger: {summary['ledger']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
