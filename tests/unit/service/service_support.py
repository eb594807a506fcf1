"""Constants and helpers shared by the service tests (importable: pytest puts this folder on sys.path)."""

from __future__ import annotations

from pathlib import Path

# starlette's TestClient warns that it will move to another HTTP client; not our code's warning.
TESTCLIENT_WARNING = "ignore:Using `httpx` with `starlette.testclient`"
CUSTODIAN_TOKEN = "custodian-token-for-tests-" + "c" * 20


def build_deployment(folder: Path, standin_synthetic, *, ledger: str = "", patients: int = 200) -> Path:
    """The demo hospital in ``folder`` with ``ledger`` appended to its pimento.toml, and its synthetic copy."""
    from db_support import demo_with_copy

    return demo_with_copy(folder, standin_synthetic, patients=patients, ledger=ledger)
