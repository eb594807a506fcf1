"""Fixtures for the policy tests: a small demo hospital and its compiled shipped policy."""

from __future__ import annotations

from pathlib import Path

import pytest

from pimento.demo.hospital import create_demo
from pimento.engines.database import load_database
from pimento.policy import compile_policy, example_policy_path, load_policy, run_checks


@pytest.fixture(scope="session")
def hospital_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("hospital") / "hospital.duckdb"
    create_demo(path, patients=400, seed=3)
    return path


@pytest.fixture(scope="session")
def hospital(hospital_path: Path):
    db = load_database(hospital_path)
    yield db
    db.close()


@pytest.fixture(scope="session")
def hipaa():
    return load_policy(example_policy_path())


@pytest.fixture(scope="session")
def compiled(hospital, hipaa):
    c = compile_policy(hipaa, hospital.catalog, hospital.engine)
    c = run_checks(c, hospital.catalog, hospital.engine, policy=hipaa)
    return c
