"""A small served deployment: the demo hospital, a stand-in synthetic copy charged to its ledger, keys."""

from __future__ import annotations

import pytest

from service_support import CUSTODIAN_TOKEN, build_deployment


@pytest.fixture(scope="module")
def served(tmp_path_factory, standin_synthetic):
    """(deployment, client factory): one deployment per test module; tests use their own analysts."""
    from pimento.service.deployment import Deployment, SearchSettings

    db = build_deployment(tmp_path_factory.mktemp("served"), standin_synthetic, ledger='epsilon_cap = "1000"\ndelta_cap = "0.001"')
    return Deployment(db, search=SearchSettings(rollouts=2, k=5))


@pytest.fixture
def client_for(served):
    """A TestClient over the app for ``served`` with the given ServiceOptions fields."""
    from fastapi.testclient import TestClient

    from pimento.service.app import ServiceOptions, create_app, token_digest

    def make(**options):
        options.setdefault("custodian_token_sha256", token_digest(CUSTODIAN_TOKEN))
        options.setdefault("rate", 1000.0)
        options.setdefault("burst", 1000)
        return TestClient(create_app(served, ServiceOptions(**options)), raise_server_exceptions=False)

    return make


@pytest.fixture
def analyst_key(served):
    """A fresh analyst (unique name) and their key: (entry, key, headers)."""
    import secrets

    entry, key = served.add_key(f"ann-{secrets.token_hex(3)}", "employee:17")
    return entry, key, {"Authorization": f"Bearer {key}"}
