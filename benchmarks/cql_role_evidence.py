"""Which evidence kinds of a role grounding are right, by the gold (issue 27, POLICY14: roles fail narrow).

    python -m benchmarks.cql_role_evidence            # every development text with a gold, the shipped examples, the bank
    python -m benchmarks.cql_role_evidence --out roles.json

Every role (sender, recipient, subject) of every extracted norm, held ones included, is graded by
:func:`pimento.policy.extract_offline.role_evidence.role_evidence` (recorded by the extractor in
``OfflineExtraction.roles``); a role is **right** when the gold norm of the same clause has that principal and
filter for the same variable (as :mod:`benchmarks.cql_extract` compares roles: the relation, the filter after
sqlglot normalisation). ``gold any`` counts the roles of a clause whose gold leaves that variable open (anyone:
a role there is narrower than the text, not broader). The kinds on which a draft enforces a permit's role
(:data:`~pimento.policy.extract_offline.role_evidence.STRONG_ROLE`) were chosen from this table. Never run on the
frozen texts. Needs the extractor's call site of ``role_evidence`` (without it the extraction records no roles
and the command says so).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from benchmarks.cql_evidence import evidence_cli, extracted
from benchmarks.cql_extract import _norm_sql, items

__all__ = ["main", "role_rows", "tally"]


def role_rows(text: str, gold: dict[str, Any], db: Path, name: str = "") -> list[dict[str, Any]]:
    """One row per role of the extraction: its clause, sign, variable, phrase, evidence kind and whether it is right."""
    result = extracted(text, db)
    gold_norms = {n["id"]: n for n in gold["norms"]}
    rows = []
    for r in result.roles:
        gnorm = gold_norms.get(r["clause"])
        item = (r["var"], r["role"]["principal"].lower(), _norm_sql(r["role"]["where"]))
        rows.append({"text": name, "clause": r["clause"], "sign": r["sign"], "var": r["var"], "phrase": r["phrase"],
                     "evidence": r["evidence"], "role": r["role"], "in_gold": gnorm is not None,
                     "right": gnorm is not None and item in items(gold, gnorm)["role"],
                     "gold_any": gnorm is not None and gnorm.get(r["var"], "any") == "any"})
    return rows


def tally(rows: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    """(sign, kind) -> roles, right, gold any, per variable (``sender``/``recipient``/``subject``: roles, right),
    texts (rows of clauses the gold has)."""
    out: dict[tuple[str, str], dict[str, Any]] = defaultdict(
        lambda: {"roles": 0, "right": 0, "gold_any": 0, "vars": defaultdict(lambda: [0, 0]), "texts": set()})
    for r in rows:
        if not r["in_gold"]:
            continue
        t = out[(r["sign"], r["evidence"])]
        t["roles"] += 1
        t["right"] += bool(r["right"])
        t["gold_any"] += bool(r["gold_any"])
        t["vars"][r["var"]][0] += 1
        t["vars"][r["var"]][1] += bool(r["right"])
        t["texts"].add(r["text"])
    return out


def _table(t: dict[tuple[str, str], dict[str, Any]]) -> str:
    lines = ["| Sign | Evidence | Roles | Right (precision) | Gold any | sender / recipient / subject (right/roles) "
             "| Texts |", "| --- | --- | --- | --- | --- | --- | --- |"]
    for (sign, kind), v in sorted(t.items(), key=lambda kv: (kv[0][0], -kv[1]["right"] / kv[1]["roles"], kv[0][1])):
        per = " / ".join(f"{v['vars'][x][1]}/{v['vars'][x][0]}" if x in v["vars"] else "-"
                         for x in ("sender", "recipient", "subject"))
        lines.append(f"| {sign} | {kind} | {v['roles']} | {v['right']} ({100 * v['right'] / v['roles']:.1f}%) | "
                     f"{v['gold_any']} | {per} | {len(v['texts'])} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    evidence_cli(__doc__, role_rows, lambda rows: _table(tally(rows)), argv)


if __name__ == "__main__":
    main()
