"""Shared fixtures: where the third-party data lives, and skipping when it is absent."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = (REPO / ".." / "shared").resolve()
SPIDER = SHARED / "data" / "spider"


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    if not SHARED.is_dir():
        if os.environ.get("CI") == "true":
            pytest.fail(f"{SHARED} is missing: CI must have ../shared beside the checkout")
        pytest.skip(f"third-party data not found at {SHARED}")
    return SHARED


@pytest.fixture(scope="session")
def spider_dir(shared_dir: Path) -> Path:
    if not SPIDER.is_dir():
        pytest.skip(f"Spider data not found at {SPIDER}")
    return SPIDER
