"""Constants and helpers shared by the service tests (importable: pytest puts this folder on sys.path)."""

from __future__ import annotations

from pathlib import Path

# starlette's TestClient warns that it will move to another HTTP client; not our code's warning.
TESTCLIENT_WARNING = "ignore:Using `httpx` with `starlette.testclient`"
CUSTODIAN_TOKEN = "custodian-token-for-tests-" + "c" * 20


def build_deployment(folder: Path, standin_synthetic, *, ledger: str = "", patients: int = 200) -> Path:
    """The demo hospital in ``folder`` with ``ledger`` appended to its pimento.toml, and its synthetic copy."""
    from pimento.demo.hospital import create_demo

    folder.mkdir(parents=True, exist_ok=True)
    db = folder / "hospital.duckdb"
    create_demo(db, patients=patients, seed=5)
    if ledger:
        with open(folder / "pimento.toml", "a", encoding="utf-8") as fh:
            fh.write("\n[ledger]\n" + ledger + "\n")
    (folder / "made").mkdir()
    made = standin_synthetic(folder / "made" / "hospital.duckdb", patients=patients, seed=6, for_database=db)
    made.rename(folder / "hospital.synthetic.duckdb")
    return db
