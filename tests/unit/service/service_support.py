"""Constants and helpers shared by the service tests (importable: pytest puts this folder on sys.path)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

# starlette's TestClient warns that it will move to another HTTP client; not our code's warning.
TESTCLIENT_WARNING = "ignore:Using `httpx` with `starlette.testclient`"
CUSTODIAN_TOKEN = "custodian-token-for-tests-" + "c" * 20


def build_deployment(folder: Path, standin_synthetic, *, ledger: str = "", patients: int = 200) -> Path:
    """The demo hospital in ``folder`` with ``ledger`` appended to its pimento.toml, and its synthetic copy."""
    from db_support import demo_with_copy

    return demo_with_copy(folder, standin_synthetic, patients=patients, ledger=ledger)


def csrf_token(html: str) -> str:
    """The CSRF token of a page's form."""
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found is not None, html
    return found.group(1)


def custodian_app_client(deployment: Any) -> Any:
    """A TestClient of the service over ``deployment`` whose custodian token is :data:`CUSTODIAN_TOKEN` (not signed in)."""
    from fastapi.testclient import TestClient

    from pimento.service.app import ServiceOptions, create_app, token_digest

    options = ServiceOptions(custodian_token_sha256=token_digest(CUSTODIAN_TOKEN), rate=1000.0, burst=1000)
    return TestClient(create_app(deployment, options), raise_server_exceptions=False)


def signed_in(deployment: Any, key: str = CUSTODIAN_TOKEN) -> Any:
    """:func:`custodian_app_client`, signed in on the web page with ``key``."""
    client = custodian_app_client(deployment)
    page = client.get("/login")
    assert client.post("/login", data={"csrf": csrf_token(page.text), "key": key},
                       follow_redirects=False).status_code == 303
    return client


def review_form(page: str, **answers: Any) -> dict[str, Any]:
    """The review page's form fields (CSRF token, the draft's digest) with ``answers``."""
    sha = re.search(r'name="draft_sha256" value="([0-9a-f]{64})"', page)
    assert sha is not None
    return {"csrf": csrf_token(page), "draft_sha256": sha.group(1), **answers}
