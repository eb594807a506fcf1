"""The custodian's step in tests: name a compiled policy under ``[policy]`` in the pimento.toml beside a database.

Analyst-facing commands and methods take no policy of the caller's (a policy of one's own choosing
could authorize anything); they enforce the one the deployment's pimento.toml names.
"""

from __future__ import annotations

from pathlib import Path


def configure_policy(db: str | Path, compiled: str | Path) -> None:
    """Write (or replace) ``[policy] compiled = "<compiled>"`` in the pimento.toml beside ``db``."""
    db = Path(db)
    toml = db.parent / "pimento.toml"
    text = toml.read_text(encoding="utf-8") if toml.exists() else f'[database]\npath = "{db.name}"\n'
    text = text.split("\n[policy]\n")[0].rstrip("\n")
    toml.write_text(f'{text}\n\n[policy]\ncompiled = "{Path(compiled).resolve()}"\n', encoding="utf-8")
