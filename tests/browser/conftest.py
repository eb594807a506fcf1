"""A real headless Chromium (Debian's `chromium` + `chromium-driver`) driven by Selenium 4.

Outside CI the browser tests skip with a reason when Chromium or its driver is absent; under
``CI=true`` (``.ci/run`` installs both) their absence is a failure, as for PostgreSQL.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from browser_support import CUSTODIAN_TOKEN


def _need(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(reason + " (CI=true, so this is a failure)")
    pytest.skip(reason)


def chromium_paths() -> tuple[str, str]:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if not browser or not driver:
        _need("Chromium or chromedriver not found: install Debian's chromium and chromium-driver (apt-get install chromium chromium-driver)")
    try:
        import selenium  # noqa: F401
    except ImportError:
        _need("selenium is not installed (pip install -e '.[test]')")
    return browser, driver  # type: ignore[return-value]


@pytest.fixture(scope="module")
def browser():
    browser_path, driver_path = chromium_paths()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = browser_path
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1280,1000",
                "--disable-extensions", "--no-first-run", "--disable-background-networking"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def server(tmp_path_factory, standin_synthetic):
    """`pimento serve` on a free loopback port over a small demo deployment; (url, analyst key, db)."""
    from benchmarks.service_load import ServerProcess
    from db_support import demo_with_copy

    from pimento.service.deployment import Deployment

    db = demo_with_copy(tmp_path_factory.mktemp("browser"), standin_synthetic, patients=150)
    _entry, key = Deployment(db).add_key("ann", "employee:17")
    with ServerProcess(db, args=("--rollouts", "2"), env={"PIMENTO_CUSTODIAN_TOKEN": CUSTODIAN_TOKEN}) as process:
        yield process.url, key, db


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    """Where screenshots go: $PIMENTO_SCREENSHOTS if set (to keep them), else a temporary folder."""
    folder = Path(os.environ.get("PIMENTO_SCREENSHOTS") or tmp_path_factory.mktemp("screenshots"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder
