"""The offline extraction of a policy text on a DuckDB database built from DDL: a text of
``tests/data/policies/<name>/`` (its ``policy.txt`` on its ``schema.sql``) or one a test writes; shared by the
development texts' tests."""

from __future__ import annotations

from pathlib import Path

import duckdb

from pimento.engines.database import load_database
from pimento.policy.extract_offline import OfflineExtraction, extract_policy_offline

DATA = Path(__file__).resolve().parent / "data" / "policies"


def extract_text(folder: Path, name: str) -> OfflineExtraction:
    """The offline extraction (year 2024) of text ``name``, its database written in ``folder``."""
    return extract_on(folder / f"{name}.duckdb", (DATA / name / "schema.sql").read_text(encoding="utf-8"),
                      (DATA / name / "policy.txt").read_text(encoding="utf-8"))


def extract_on(path: Path, ddl: str, text: str, *, subject_principal: str | None = None) -> OfflineExtraction:
    """The offline extraction (year 2024) of policy ``text`` on a DuckDB database made at ``path`` by ``ddl``."""
    con = duckdb.connect(str(path))
    con.execute(ddl)
    con.close()
    db = load_database(path)
    try:
        return extract_policy_offline(text, db.catalog, engine=db.engine, year=2024, subject_principal=subject_principal)
    finally:
        db.close()


def draft_and_confirmed_scores(folder: Path, name: str) -> tuple[dict, dict]:
    """``benchmarks.cql_extract.score`` of text ``name``'s draft (what is enforced before review) and of its
    review with every proposal confirmed, against its ``gold.yaml``."""
    import yaml

    from benchmarks.cql_extract import score
    from pimento.policy.review import apply_review, confirm_all

    result = extract_text(folder, name)
    gold = yaml.safe_load((DATA / name / "gold.yaml").read_text(encoding="utf-8"))
    draft = result.draft()
    return score(result.policy, gold), score(apply_review(draft, confirm_all(draft)), gold)


def enforced_norm(result: OfflineExtraction, nid: str) -> dict:
    """The norm ``nid`` of ``result``'s draft (what is enforced before review); fails naming the open questions when
    the draft holds it back."""
    norm = next((n for n in result.policy["norms"] if n["id"] == nid), None)
    assert norm is not None, f"{nid} not enforced: {result.questions} {result.failures}"
    return norm
