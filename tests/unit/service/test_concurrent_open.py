"""Request threads opening the deployment's files at the same moment (the 503s the load benchmark found).

DuckDB shares one instance per file within a process and the first connection configures and locks
it; two threads that open a file for the first time at once raced there. `pimento serve` holds one
connection to the database and the synthetic copy open from start-up (Deployment.hold_open).
"""

from __future__ import annotations

import threading

import pytest

from service_support import build_deployment


def _storm(deployment, key, threads: int = 12, rounds: int = 6) -> list[str]:
    errors: list[str] = []
    for _ in range(rounds):
        barrier = threading.Barrier(threads)

        def one() -> None:
            barrier.wait()
            try:
                deployment.budget(key)
                with deployment.session(key.analyst):
                    pass
            except Exception as exc:  # noqa: BLE001 - collected and reported below
                errors.append(f"{type(exc).__name__}: {exc}")

        workers = [threading.Thread(target=one) for _ in range(threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
    return errors


@pytest.fixture(scope="module")
def fresh(tmp_path_factory, standin_synthetic):
    from pimento.service.deployment import Deployment

    db = build_deployment(tmp_path_factory.mktemp("storm"), standin_synthetic, patients=50)
    deployment = Deployment(db)
    entry, _key = deployment.add_key("storm")
    return deployment, entry


def test_simultaneous_first_opens_do_not_fail_when_the_deployment_holds_its_files_open(fresh):
    deployment, entry = fresh
    deployment.hold_open()
    try:
        assert _storm(deployment, entry) == []
    finally:
        deployment.close()
