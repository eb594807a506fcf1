"""The custodian's step in tests: name a compiled policy under ``[policy]`` in the pimento.toml beside a database.

Analyst-facing commands and methods take no policy of the caller's (a policy of one's own choosing
could authorize anything); they enforce the one the deployment's pimento.toml names.
"""

from __future__ import annotations

import json
from pathlib import Path


def configure_policy(db: str | Path, compiled: str | Path) -> None:
    """Write (or replace) ``[policy] compiled = "<compiled>"`` in the pimento.toml beside ``db``."""
    db = Path(db)
    toml = db.parent / "pimento.toml"
    text = toml.read_text(encoding="utf-8") if toml.exists() else f'[database]\npath = "{db.name}"\n'
    text = text.split("\n[policy]\n")[0].rstrip("\n")
    toml.write_text(f'{text}\n\n[policy]\ncompiled = "{Path(compiled).resolve()}"\n', encoding="utf-8")


def compile_example_policy(db: str | Path, out: str | Path) -> Path:
    """Compile the example policy (``example_policy_path()``) against the database ``db`` and write it
    to ``out`` as JSON; returns ``out``. Name it for a deployment with :func:`configure_policy`.

    ``compile_policy`` applies information implication (the policy is P+); the other checks
    (``run_checks``: redundancy, the satisfiability witness search, 16-22 s a norm on the demo) are
    left out, as they change no answer of the tests that use it."""
    from pimento.engines.database import load_database
    from pimento.policy import compile_policy, example_policy_path, load_policy

    database = load_database(db)
    try:
        compiled = compile_policy(load_policy(example_policy_path()), database.catalog, database.engine)
    finally:
        database.close()
    out = Path(out)
    out.write_text(json.dumps(compiled.to_dict()))
    return out
