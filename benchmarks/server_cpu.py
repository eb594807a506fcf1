"""Server CPU per answer: ``pimento serve`` (one worker) answering one client's requests in sequence.

    python -m benchmarks.server_cpu                          # builds a 300-patient deployment, 2000 cached SQL answers
    python -m benchmarks.server_cpu --db D --key K --requests 2000 --fresh

One client sends ``--requests`` ``POST /v1/sql`` over one keep-alive connection, after 50 of warm-up. The server's
CPU (user + system of its process, from ``/proc/<pid>/stat``, Linux only) is read before and after: unlike wall
time, it hardly moves with the load of other jobs on the machine, so two builds (e.g. the HTTP parser and event
loop uvicorn picks, or old and new code through ``PYTHONPATH``) can be compared on a busy machine. Cached: the same
count each time (the memo answers). ``--fresh``: a new literal each time (a release each, charged to the ledger).
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
from pathlib import Path

import httpx

from benchmarks.service_load import ServerProcess, build_deployment

__all__ = ["main", "process_cpu_seconds"]


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (Linux ``/proc``)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()  # after the command name, which may hold spaces
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.server_cpu", description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", help="an existing deployment with a synthetic copy; default: build one")
    parser.add_argument("--key", help="the analyst key for --db")
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--fresh", action="store_true", help="a new literal each request (a release each) instead of one cached count")
    parser.add_argument("--epsilon", default="0.001")
    args = parser.parse_args(argv)
    if args.db and not args.key:
        parser.error("--db needs --key")
    if args.db:
        db, key = Path(args.db), args.key
    else:
        db, key = build_deployment(Path(tempfile.mkdtemp(prefix="pimento-server-cpu-")), patients=300, cap="1000", analyst="cpu")
    server = ServerProcess(db, args=("--rate", "1000000", "--burst", "1000000")).start()
    assert server.proc is not None
    try:
        with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {key}"}, timeout=60.0) as client:

            def body(i: int) -> dict[str, object]:
                sql = f"SELECT COUNT(*) FROM Patient WHERE birth_year <> {i}" if args.fresh else "SELECT COUNT(*) FROM Patient"
                return {"sql": sql, "epsilon": args.epsilon, "accept_noise": True}

            for i in range(50):
                client.post("/v1/sql", json=body(-1 - i)).raise_for_status()
            cpu0, wall0 = process_cpu_seconds(server.proc.pid), time.perf_counter()
            for i in range(args.requests):
                client.post("/v1/sql", json=body(10_000 + i)).raise_for_status()
            cpu1, wall1 = process_cpu_seconds(server.proc.pid), time.perf_counter()
    finally:
        server.stop()
    kind = "fresh" if args.fresh else "cached"
    print(
        f"{kind}: server CPU {1000 * (cpu1 - cpu0) / args.requests:.3f} ms per answer, wall {1000 * (wall1 - wall0) / args.requests:.3f} ms "
        f"per request ({args.requests} requests; load {os.getloadavg()[0]:.2f}; {platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
