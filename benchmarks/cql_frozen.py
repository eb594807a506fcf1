"""Policy text -> CI norms on frozen, unseen domains (issue 27, item 3): sealed figures only.

    python -m benchmarks.cql_frozen                  # both frozen domains, aggregate table on stdout
    python -m benchmarks.cql_frozen --out results.json
    python -m benchmarks.cql_frozen --round 2        # the two texts of round 2 (written after commit 3b05013)
    python -m benchmarks.cql_frozen --round 3        # the two texts of round 3 (written after commit 4681ec7)
    python -m benchmarks.cql_frozen --round 4        # the two texts of round 4 (written after commit 759d0e5)
    python -m benchmarks.cql_frozen --round 5        # the two texts of round 5 (written after commit 7eccc2b)
    python -m benchmarks.cql_frozen --round 6        # the two texts of round 6 (written after commit ef3f76f)

The two domains under ``tests/data/policies/`` (a city human-services case-record rule and a
clinical-trial data-sharing schedule) were written, with their schema and hand-made gold norms,
before any change to the offline extractor for issue 27, and are never used to write or tune a
rule. Their SHA-256 digests are pinned below (and in ``docs/benchmarks.md``): the benchmark
refuses to score a text, schema or gold that changed. Only aggregate figures are printed (no
per-norm detail, no list of misses), so that reading the output does not suggest rules.

``--round 2`` scores two more frozen texts (``frozen2_ride_hailing``: a ride-hailing company's rider
data; ``frozen2_smart_meter``: an energy supplier's customer and smart-meter data), written with their
schema and gold by someone who had not read the extractor's rules, after its rules of commit 3b05013,
and pinned before the extractor first ran on them. Round 1 (the default) is unchanged.

``--round 3`` scores two more (``frozen3_probation``: an adult probation department's case-file records manual,
in the style of a government manual; ``frozen3_wearable``: a fitness-band company's plain-English privacy notice),
written the same way after the extractor's rules of commit 4681ec7 and pinned before the changes made after it.

``--round 4`` scores two more (``frozen4_housing``: a housing association's tenant-records procedure, with a
"Responsibilities" part whose provisions name a role first; ``frozen4_charity``: a charity's question-and-answer page
on its donors' data), written the same way after the extractor's rules of commit 759d0e5 and pinned before the
changes made after it.

``--round 5`` scores two more (``frozen5_dental``: a dental practice group's internal patient-records policy, a
"who may see what" list followed by ordinary sentences; ``frozen5_courier``: a courier company's operations handbook on
customer and delivery data, in terse imperative sentences), written the same way after the extractor's rules of commit
7eccc2b and pinned before the changes made after it.

``--round 6`` scores two more (``frozen6_hotel``: a hotel group's consumer-facing guest data notice, numbered items under
headings, in the first and second person; ``frozen6_legal_aid``: a legal aid clinic's formal case-file protocol, long
sentences with nested qualifications and capitalised defined terms), written the same way after the extractor's rules
of commit ef3f76f and pinned before the changes made after it.

Each domain is scored as :mod:`benchmarks.cql_extract` scores one (norms paired by id; role,
data and condition items by what they ground to), for two readings of the extractor's output:

* ``draft``: the extracted policy as written, open review questions left out (what compile
  ``--drop-open-questions`` enforces: the norms the questions hold are not, a permit with only an
  advisory purpose question is, as read: the fail-closed reading);
* ``confirmed``: every review question answered "confirm" with the extractor's own proposal
  (:func:`pimento.policy.review.apply_review`), questions without a proposal dropped;
* ``careful``: every review question answered as the gold grounds its clause
  (:mod:`benchmarks.cql_review`): what the questions let a custodian who knows the intent recover
  (it reads the gold, so it says how much the questions cover, not how well the extractor grounds).

``data_permit_precision`` is the data precision over permit norms only (what a permit covers
that the text does not name); ``data_permit`` gives it with its counts (right / predicted items), and the table
shows ``none`` where no enforced permit covers a column (the scorer's precision is then 0.0% or 100.0% by
convention). Each dimension's ``tp``, ``predicted`` and ``gold`` item counts are in the JSON (aggregates only). An extraction that raises (no norm at all) scores zero, and so does a
review that leaves no valid policy (every norm held, nothing to confirm).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import yaml

from benchmarks.cql_extract import DIMENSIONS, score
from benchmarks.cql_review import careful_review
from pimento.engines.database import load_database
from pimento.errors import PolicyError
from pimento.policy.extract_offline import extract_policy_offline
from pimento.policy.review import apply_review, confirm_all, open_questions

__all__ = ["DOMAINS", "DOMAINS_ROUND2", "DOMAINS_ROUND3", "DOMAINS_ROUND4", "DOMAINS_ROUND5", "DOMAINS_ROUND6", "FROZEN",
           "ROUNDS", "check_frozen", "main", "run", "score_extraction", "score_texts", "scored_cli"]

ROOT = Path(__file__).resolve().parent.parent / "tests" / "data" / "policies"
DOMAINS = ("social_services", "clinical_trial")
#: round 2 (issue 27, POLICY8): written after the extractor's rules of commit 3b05013, pinned before it ran on them
DOMAINS_ROUND2 = ("frozen2_ride_hailing", "frozen2_smart_meter")
#: round 3 (issue 27, FROZEN3): written after the extractor's rules of commit 4681ec7, pinned before the next changes
DOMAINS_ROUND3 = ("frozen3_probation", "frozen3_wearable")
#: round 4 (issue 27, FROZEN4): written after the extractor's rules of commit 759d0e5, pinned before the next changes
DOMAINS_ROUND4 = ("frozen4_housing", "frozen4_charity")
#: round 5 (issue 27, FROZEN5): written after the extractor's rules of commit 7eccc2b, pinned before the next changes
DOMAINS_ROUND5 = ("frozen5_dental", "frozen5_courier")
#: round 6 (issue 27, FROZEN6): written after the extractor's rules of commit ef3f76f, pinned before the next changes
DOMAINS_ROUND6 = ("frozen6_hotel", "frozen6_legal_aid")
#: ``--round N`` -> the frozen texts it scores
ROUNDS: dict[int, tuple[str, ...]] = {1: DOMAINS, 2: DOMAINS_ROUND2, 3: DOMAINS_ROUND3, 4: DOMAINS_ROUND4,
                                      5: DOMAINS_ROUND5, 6: DOMAINS_ROUND6}
#: SHA-256 of every frozen file, pinned before the first extractor change (2026-11-27 23:50 UTC)
FROZEN: dict[str, str] = {
    "social_services/policy.txt": "ec1ac298f92d37a88b2a9b168efe6628bb0bb1e234884e176521fc5e90af0e88",
    "social_services/schema.sql": "26025ded7261380058676ea4eef7e67de1054e4ea6475bced0f9067f9ee7f93f",
    "social_services/gold.yaml": "6878b7f122a0aeea2a2d1852b40087c565f538194c043a752f3a640876354793",
    "clinical_trial/policy.txt": "3b8c4ff2b914e1d7d0ec312348b51d68e57138c6375e218497b75e1b7e874fa9",
    "clinical_trial/schema.sql": "908dc18768fa3ed4db89190b7584c61efcefed426380083869b3bdad5765ecfb",
    "clinical_trial/gold.yaml": "cc44d97951ed7e863161dfb3be1132fafc15c56d14e19b2c5592bff2b4e71bd5",
    # round 2, pinned 2026-11-28 09:12 UTC, before the extractor first ran on them
    "frozen2_ride_hailing/policy.txt": "46f44cae8cee952f02ccb139104aec047227016890c88a9786543fe3c1abf99b",
    "frozen2_ride_hailing/schema.sql": "6f5c9f28fcdc21bb5020fe1c4fe8d5ba415ca35d8f131e6ddad4662655b1529b",
    "frozen2_ride_hailing/gold.yaml": "230fa7f06a6ce4bf55d856fd34f94f7513b9121b7a7747a375e81a767d1cf390",
    "frozen2_smart_meter/policy.txt": "070e486982ee8f0ff0bc2d506fa7955e0ea0ef29afd3ff7c3cedcc89fc844fcb",
    "frozen2_smart_meter/schema.sql": "63cdf4b08686951cbf231642294bb03571b9431e470c70d385bf683d65ca118b",
    "frozen2_smart_meter/gold.yaml": "cb273455cc6d9751c7135f039dfc1ec024b33dba13a52a4244c85507e3566616",
    # round 3, pinned 2026-11-28 11:26 UTC, before the extractor changes that follow commit 4681ec7
    "frozen3_probation/policy.txt": "a01a5a5d8e55ff2cd311d63ffdde2f0e6460098f1fa6ca6397ecda888b1d64fa",
    "frozen3_probation/schema.sql": "c72d90bd2c75c5c2934124f2858c9d5b2e3a222e88eea986947c22b7657f7944",
    "frozen3_probation/gold.yaml": "75c913ae2b087e071610994f3aa468e0889e409d80e8f9972b098d1c9464fa6b",
    "frozen3_wearable/policy.txt": "34b91362b282ac3763d0755519915de35fe2f706acd317b29059102a28682e12",
    "frozen3_wearable/schema.sql": "bfa578ca9798081326c153a438b31454dc67a35dfe3d68d33eaaa232f9741014",
    "frozen3_wearable/gold.yaml": "e8b4ba7d637dfde68f9f1bf0615c3bbd8d95a229a40e144ec25a864bc2e87e4f",
    # round 4, pinned 2026-11-28 12:00 UTC, before the extractor changes that follow commit 759d0e5
    "frozen4_housing/policy.txt": "cd1bec99bbb97c056d6578b5867eac005adcc0bddfeeca0d33ef40df4b57de26",
    "frozen4_housing/schema.sql": "53b3f2d8b6e78db4c7b11e65e7561f35610a37ac0eaa24e67f8010643b1e250f",
    "frozen4_housing/gold.yaml": "a4fe0544581de92bf729cd85bdbcde3f33ff507ebaa01978378d47399c9e9ff6",
    "frozen4_charity/policy.txt": "e88a6bb176a6eaea414d460f6002b7769f7bae9aadcab385f61482012e180339",
    "frozen4_charity/schema.sql": "c887479456a8be4118cd29bc4c3062d187ef8e15d36c26cd0e7076f531c43b78",
    "frozen4_charity/gold.yaml": "a598d4b28c7334f506429ca13b107cef72e808d38adfd50253e7efb4bc141e2d",
    # round 5, pinned 2026-11-28 12:32 UTC, before the extractor changes that follow commit 7eccc2b
    "frozen5_dental/policy.txt": "f35bf7a39f881a782d3cd2c131dbef766eae26fb74a84046bb6e307948a4c001",
    "frozen5_dental/schema.sql": "9a7442bdd2d29628a6df99fa0af5c0f1d0795ea7bc0395b6104840d205dc6cca",
    "frozen5_dental/gold.yaml": "03815dc98726c35a269ea8f09270d711c7a16aad66c9fcce9210f54f3525fd18",
    "frozen5_courier/policy.txt": "587ee31e9c96f320cd33c242a079165aef67d1332dfa733563f413dd93064cae",
    "frozen5_courier/schema.sql": "f34f9753110729175ff16d97cb7f5101de4254538b25f6fbac6eaf8299a062d9",
    "frozen5_courier/gold.yaml": "11bb1f4eb29fb49b2c43fae4af045e03162354111a0288ebcf69c799d13ab3ad",
    # round 6, pinned 2026-11-28 14:22 UTC, before the extractor changes that follow commit ef3f76f
    "frozen6_hotel/policy.txt": "aaf44d0f14c6c258b7646d10f66820fd47b12f72e833f47ede54062f2005618b",
    "frozen6_hotel/schema.sql": "139b4efe4141494877a5a70a7788bf7d2b5a2da92fe428f254baf2c23bfb9d5e",
    "frozen6_hotel/gold.yaml": "4f82efb9430eb47e6624c974a7a83a8e586971164eab99e5c5e78fa4aa65f37d",
    "frozen6_legal_aid/policy.txt": "3bb95765c90566edfbca8a509c30847eee93f30b2b3358c181ccfffa9c96a804",
    "frozen6_legal_aid/schema.sql": "49e293d647da69b9f6030321902a31a4aae4ced43587fa80644b4079739f4872",
    "frozen6_legal_aid/gold.yaml": "f91d1ee1221a44bcc5088591663188484d9130de8b12c5146f6b7b7fff7295e4",
}
_PINNED_FILES = ("policy.txt", "schema.sql", "gold.yaml")


def check_frozen(root: Path = ROOT, domains: tuple[str, ...] | None = None) -> None:
    """Raise if a frozen file (of ``domains``; default: all) is missing, unpinned or differs from its pinned digest."""
    for name in domains or ():
        missing = [f for f in _PINNED_FILES if f"{name}/{f}" not in FROZEN]
        if missing:
            raise SystemExit(f"{name} is not a frozen text (no pin for {', '.join(missing)})")
    for rel, digest in FROZEN.items():
        if domains is not None and rel.split("/")[0] not in domains:
            continue
        actual = hashlib.sha256((root / rel).read_bytes()).hexdigest()
        if actual != digest:
            raise SystemExit(f"frozen file {rel} changed (sha256 {actual}): the sealed figures no longer apply")


def _permit_data(predicted: dict[str, Any], gold: dict[str, Any]) -> dict[str, Any]:
    """Data precision over permit norms only, with its counts (``predicted`` 0: no enforced permit covers anything)."""
    permits = {n["id"] for n in gold["norms"] if n["sign"] == "permit"}
    pred = dict(predicted, norms=[n for n in predicted.get("norms", []) if n["sign"] == "permit"])
    data = score(pred, dict(gold, norms=[n for n in gold["norms"] if n["id"] in permits]))["data"]
    return {"precision": float(data["precision"]), "tp": data["tp"], "predicted": data["predicted"]}


_COUNTS = ("precision", "recall", "f1", "tp", "predicted", "gold")


def score_extraction(document: dict[str, Any], gold: dict[str, Any]) -> dict[str, Any]:
    """Aggregate scores of one extracted document (no per-norm detail): P/R/F1 and the item counts of each
    dimension (how many items were predicted tells a precision of 0.0% with no item from one with only wrong ones)."""
    s = score(document, gold)
    out: dict[str, Any] = {d: {k: s[d][k] for k in _COUNTS if k in s[d]} for d in (*DIMENSIONS, "all")}
    permit = _permit_data(document, gold)
    out["data_permit_precision"] = permit["precision"]
    out["data_permit"] = permit
    out["extracted_norms"] = s["extracted_norms"]
    out["gold_norms"] = s["gold_norms"]
    return out


def _empty() -> dict[str, Any]:
    """The document of an extraction or review that yields no policy: it scores zero."""
    return {"norms": [], "grounding": {}}


def _reviewed(review: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """The reviewed document, or an empty one where the review leaves no valid policy (e.g. every norm held and no
    proposal to confirm: ``apply_review`` refuses a policy without norms); it then scores zero instead of stopping
    the benchmark."""
    try:
        return review()
    except PolicyError:
        return _empty()


def _readings(text: str, gold: dict[str, Any], db_path: Path) -> dict[str, Any]:
    database = load_database(db_path)
    try:
        result = extract_policy_offline(text, database.catalog, engine=database.engine, name="frozen", year=2024)
    except PolicyError:
        return {r: score_extraction(_empty(), gold) for r in ("draft", "confirmed", "careful")}
    finally:
        database.close()
    draft = result.draft()
    readings = {"draft": score_extraction(result.policy, gold),
                "confirmed": score_extraction(_reviewed(lambda: apply_review(draft, confirm_all(draft))), gold),
                "careful": score_extraction(_reviewed(lambda: careful_review(draft, gold)), gold)}
    readings["draft"]["open_questions"] = len(open_questions(draft))
    return readings


def run(workdir: Path, domains: tuple[str, ...] = DOMAINS) -> dict[str, Any]:
    check_frozen(domains=domains)
    return score_texts(workdir, domains)


def score_texts(workdir: Path, domains: tuple[str, ...]) -> dict[str, Any]:
    """Each policy text under tests/data/policies/NAME (policy.txt, schema.sql, gold.yaml) extracted against its schema
    (a DuckDB database made in ``workdir``) and scored against its gold, draft and confirmed (:func:`_readings`)."""
    results: dict[str, Any] = {}
    for name in domains:
        folder = ROOT / name
        db = workdir / f"{name}.duckdb"
        con = duckdb.connect(str(db))
        con.execute((folder / "schema.sql").read_text(encoding="utf-8"))
        con.close()
        gold = yaml.safe_load((folder / "gold.yaml").read_text(encoding="utf-8"))
        results[name] = _readings((folder / "policy.txt").read_text(encoding="utf-8"), gold, db)
    return results


def _table(results: dict[str, Any]) -> str:
    lines = ["| Domain | Reading | Role F1 | Data P | Data R | Data F1 | Data P (permits) | Cond. F1 | All F1 "
             "| norms (extracted/gold) | open questions |", "| --- " * 11 + "|"]
    for name, readings in results.items():
        for reading, m in readings.items():
            lines.append(
                f"| {name} | {reading} | {100 * m['role']['f1']:.1f}% | {100 * m['data']['precision']:.1f}% | "
                f"{100 * m['data']['recall']:.1f}% | {100 * m['data']['f1']:.1f}% | "
                f"{_permit_cell(m)} | {100 * m['conditions']['f1']:.1f}% | "
                f"{100 * m['all']['f1']:.1f}% | {m['extracted_norms']}/{m['gold_norms']} | "
                f"{m.get('open_questions', '-')} |")
    return "\n".join(lines)


def _permit_cell(m: dict[str, Any]) -> str:
    """The permits' data precision with its counts; ``none`` where no enforced permit covers a column."""
    permit = m.get("data_permit") or {}
    if "predicted" not in permit:
        return f"{100 * m['data_permit_precision']:.1f}%"
    if not permit["predicted"]:
        return "none"
    return f"{100 * permit['precision']:.1f}% ({permit['tp']}/{permit['predicted']})"


def main(argv: list[str] | None = None) -> None:
    scored_cli(run, __doc__, argv, rounds=ROUNDS)


def scored_cli(run_in: Any, doc: str | None, argv: list[str] | None,
               rounds: dict[int, tuple[str, ...]] | None = None) -> None:
    """The command line of a policy-extraction benchmark: ``run_in(folder)`` in a temporary folder, its aggregate table
    printed, and with ``--out`` its results written as JSON (this module and :mod:`benchmarks.cql_dev`). With
    ``rounds``, a ``--round N`` option (default: the first) and ``run_in(folder, rounds[N])``."""
    parser = argparse.ArgumentParser(description=(doc or "").splitlines()[0])
    parser.add_argument("--out", help="write the aggregate results (JSON) here")
    if rounds:
        parser.add_argument("--round", type=int, choices=sorted(rounds), default=min(rounds),
                            help="which frozen texts to score (default: %(default)s)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        results = run_in(Path(tmp), rounds[args.round]) if rounds else run_in(Path(tmp))
    print(_table(results))
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
