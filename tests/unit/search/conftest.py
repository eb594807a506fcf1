"""Fixtures shared by the search tests."""

from __future__ import annotations

import contextlib

import pytest

from pimento.demo.hospital import create_demo
from pimento.engines import open_engine


@contextlib.contextmanager
def _demo_engine(folder, *, patients: int, seed: int):
    """The demo hospital (``patients``, ``seed``) written in ``folder`` and opened: (engine, catalog)."""
    path = folder / "hospital.duckdb"
    create_demo(path, patients=patients, seed=seed)
    engine = open_engine(str(path))
    try:
        yield engine, engine.introspect()
    finally:
        engine.close()


@pytest.fixture(scope="session")
def demo_engine():
    """:func:`_demo_engine`, for a module's own ``demo`` fixture."""
    return _demo_engine
