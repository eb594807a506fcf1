"""Provenance in CI answers (release/provenance.py): the text an authorized cell was read from, under
the custodian's [provenance] setting and the policy; never a denied cell's; the documents in the audit log."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest

from neighbours import differences
from pimento.release.provenance import sentence_bounds
from pimento.release.session import Session

VISITS = "SELECT v.visit_id, v.diagnosis, v.note, v.visit_date, v.pat_id FROM Visit v ORDER BY v.visit_id"
DIAGNOSES = "SELECT DISTINCT v.diagnosis FROM Visit v ORDER BY 1"
DISCHARGES = ("SELECT d.discharge_id, d.finaldiagnosis, v.diagnosis FROM Discharge d JOIN Visit v ON d.visit_id = v.visit_id "
              "ORDER BY d.discharge_id")


def _deploy(folder: Path, corpus: Path, compiled: Path, release: str) -> Path:
    """An ingested demo hospital in ``folder/db`` with the policy and ``[provenance] release``."""
    from pimento.demo.hospital import demo_config_text
    from pimento.ingest import ingest

    db = folder / "db" / "h.duckdb"
    db.parent.mkdir(parents=True)
    ingest(corpus / "documents", corpus / "schema.sql", db, patterns=corpus / "patterns.yaml")
    (db.parent / "pimento.toml").write_text(
        demo_config_text("h.duckdb")
        + f'\n[policy]\ncompiled = "{compiled}"\n\n[provenance]\nrelease = "{release}"\ncorpus = "../corpus/documents"\n'
    )
    return db


def _set_release(db: Path, release: str) -> None:
    toml = db.parent / "pimento.toml"
    text = toml.read_text()
    for level in ("none", "span", "sentence"):
        text = text.replace(f'release = "{level}"', f'release = "{release}"')
    toml.write_text(text)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """D (the corpus ingested) and, for each denied tuple of the context, nothing yet: tests build D'."""
    from pimento.demo.corpus import write_demo_corpus
    from pimento.engines.database import load_database
    from pimento.policy import Enforcer, compile_policy, example_policy_path, load_policy

    root = tmp_path_factory.mktemp("provenance")
    info = write_demo_corpus(root / "corpus", patients=40, seed=1)
    db = _deploy(root / "D", info.folder, root / "compiled.json", "sentence")
    shutil.copytree(info.folder, root / "D" / "corpus")
    database = load_database(db)
    try:
        compiled = compile_policy(load_policy(example_policy_path()), database.catalog, database.engine)
        (root / "compiled.json").write_text(json.dumps(compiled.to_dict()))
        con = duckdb.connect(str(db), read_only=True)
        attending = con.execute("SELECT attending_id FROM Visit GROUP BY 1 ORDER BY COUNT(*) DESC, 1 LIMIT 1").fetchone()[0]
        context = f"sender=employee:{attending},recipient=employee:{attending},purpose=treatment"
        enforcer = Enforcer(compiled, database.engine, database.catalog)
        ctx = enforcer.context(f"employee:{attending}", f"employee:{attending}", "treatment")
        authorized = enforcer.authorized_cells(ctx, "SELECT v.visit_id, v.note, v.diagnosis, v.pat_id FROM Visit v") | \
            enforcer.authorized_cells(ctx, "SELECT d.discharge_id, d.finaldiagnosis FROM Discharge d") | \
            enforcer.authorized_cells(ctx, "SELECT p.name FROM Patient p")
        # denied tuples that nothing references: removing their document removes exactly that tuple
        diagnoses = dict(con.execute("SELECT visit_id, diagnosis FROM Visit").fetchall())
        seen = {d for v, d in diagnoses.items() if ("Visit", str(v), "diagnosis") in authorized}
        denied_visit = con.execute(
            "SELECT visit_id FROM Visit v WHERE NOT EXISTS (SELECT 1 FROM MedicationOrders o WHERE o.visit_id = v.visit_id) "
            "AND NOT EXISTS (SELECT 1 FROM Discharge d WHERE d.visit_id = v.visit_id) ORDER BY visit_id"
        ).fetchall()
        # a denied visit whose diagnosis the context also sees in another visit: a trace by value
        # that counted or showed denied cells would differ on D'
        denied_visit = next(v for (v,) in denied_visit
                            if ("Visit", str(v), "diagnosis") not in authorized and diagnoses[v] in seen)
        discharges = [d for (d,) in con.execute("SELECT discharge_id FROM Discharge ORDER BY 1").fetchall()]
        denied_discharge = next(d for d in discharges if ("Discharge", str(d), "finaldiagnosis") not in authorized)
        names = dict(con.execute("SELECT pat_id, name FROM Patient").fetchall())
        notes = dict(con.execute("SELECT visit_id, note FROM Visit").fetchall())
        con.close()
    finally:
        database.close()
    return {
        "root": root, "corpus": info.folder, "db": db, "context": context, "authorized": authorized,
        "denied_visit": denied_visit, "denied_discharge": denied_discharge, "names": names, "notes": notes,
    }


def _neighbour(world, tmp_path: Path, doc_id: str, release: str) -> Path:
    """D': the corpus without document ``doc_id`` (its one tuple), ingested the same way."""
    corpus = tmp_path / "Dp" / "corpus"
    shutil.copytree(world["corpus"], corpus)
    path = corpus / "documents" / f"{ {'visit': 'visit-notes', 'discharge': 'discharge-letters'}[doc_id.split('-')[0]] }.jsonl"
    lines = [line for line in path.read_text().splitlines() if json.loads(line)["id"] != doc_id]
    assert len(lines) == len(path.read_text().splitlines()) - 1
    path.write_text("".join(line + "\n" for line in lines))
    return _deploy(tmp_path / "Dp", corpus, world["root"] / "compiled.json", release)


def _ci(db: Path, sql: str, context: str) -> dict:
    with Session(db) as session:
        return session.release_sql(sql, mode="ci", context=context).to_dict()


@pytest.mark.parametrize("release", ["span", "sentence"])
@pytest.mark.parametrize("what,sql", [("visit", VISITS), ("visit", DIAGNOSES), ("discharge", DISCHARGES)])
def test_a_denied_tuple_changes_nothing_the_analyst_receives(world, tmp_path, release, what, sql):
    """Neighbour harness: D and D' differ by one tuple whose cells the context denies (its document
    removed from the corpus): the CI answer and its provenance are identical, field for field."""
    doc_id = f"visit-{world['denied_visit']}" if what == "visit" else f"discharge-{world['denied_discharge']}"
    _set_release(world["db"], release)
    d_prime = _neighbour(world, tmp_path, doc_id, release)
    a = _ci(world["db"], sql, world["context"])
    b = _ci(d_prime, sql, world["context"])
    assert a["rows"] and a["provenance"]["cells"], "the context must see some rows, or the test proves nothing"
    assert not differences(a, b, ()), differences(a, b, ())


def _texts(answer: dict) -> list[dict]:
    return [t for cell in answer["provenance"]["cells"] for t in cell["texts"]]


def test_sentence_release_never_shows_a_denied_value(world):
    _set_release(world["db"], "sentence")
    answer = _ci(world["db"], VISITS, world["context"])
    texts = _texts(answer)
    scopes = {t["scope"] for t in texts}
    assert scopes == {"sentence", "span"}, "both a whole sentence and a fall-back to the span must occur"
    authorized = world["authorized"]
    denied_names = [n for p, n in world["names"].items() if ("Patient", str(p), "name") not in authorized]
    denied_notes = [n for v, n in world["notes"].items() if ("Visit", str(v), "note") not in authorized]
    assert denied_names and denied_notes
    for t in texts:
        # the patient named by name and year of birth in a visit note: Patient.name is denied here
        assert not any(name in t["text"] for name in denied_names), t
        assert not any(note in t["text"] for note in denied_notes), t
    # every traced cell is in the answer and authorized: the rows' cells are the authorized ones
    for cell in answer["provenance"]["cells"]:
        assert answer["rows"][cell["row"]][answer["columns"].index(cell["column"])] is not None


def test_span_release_is_the_value_as_written_and_never_a_lookups_text(world):
    _set_release(world["db"], "span")
    answer = _ci(world["db"], VISITS, world["context"])
    cells = answer["provenance"]["cells"]
    assert {t["scope"] for c in cells for t in c["texts"]} == {"span"}
    for c in cells:
        value = answer["rows"][c["row"]][answer["columns"].index(c["column"])]
        for t in c["texts"]:
            if c["column"] in ("visit_id", "pat_id"):
                assert t["text"] == str(value)  # never "Ada Lovelace" for a pat_id found by lookup
            elif c["column"] != "visit_date":
                assert t["text"].lower() == str(value).lower()
    assert any(c["column"] == "pat_id" and not c["texts"] for c in cells), "lookup-only pat_id cells carry no text"


def test_off_by_default_but_the_documents_are_audited(world):
    _set_release(world["db"], "none")
    with Session(world["db"]) as session:
        answer = session.release_sql(VISITS, mode="ci", context=world["context"]).to_dict()
        audit = session.ledger.audit_rows()[-1]
    assert "provenance" not in answer
    assert audit["kind"] == "custodian" and audit["tool"] == "ci_provenance"
    docs = audit["details"]["documents"]
    assert docs and all(d.startswith("visit-") for d in docs)
    assert f"visit-{world['denied_visit']}" not in docs


def test_a_changed_document_gives_no_text(world, tmp_path):
    _set_release(world["db"], "span")
    before = _ci(world["db"], VISITS, world["context"])
    first = before["rows"][0][0]
    path = world["root"] / "D" / "corpus" / "documents" / "visit-notes.jsonl"
    original = path.read_text()
    lines = [json.loads(line) for line in original.splitlines()]
    for doc in lines:
        if doc["id"] == f"visit-{first}":
            doc["text"] = doc["text"] + " Edited."
    path.write_text("".join(json.dumps(d) + "\n" for d in lines))
    try:
        after = _ci(world["db"], VISITS, world["context"])
    finally:
        path.write_text(original)
    assert [c["texts"] for c in after["provenance"]["cells"] if c["row"] == 0] == [[]] * 5
    assert any(c["texts"] for c in before["provenance"]["cells"] if c["row"] == 0)


def test_sentence_bounds():
    text = "Visit 5 on 3 May 2020. Seen by Dr. Lee (visit no. 5).\nNote: fine."
    start = text.index("Lee")
    assert text[slice(*sentence_bounds(text, start, start + 3))] == "Seen by Dr. Lee (visit no. 5)."
    assert text[slice(*sentence_bounds(text, 0, 5))] == "Visit 5 on 3 May 2020."
    start = text.index("fine")
    assert text[slice(*sentence_bounds(text, start, start + 4))] == "Note: fine."


def test_pimento_sql_prints_the_traced_texts(world):
    from neighbours import cli_json, cli_text

    _set_release(world["db"], "span")
    args = ["sql", "--db", str(world["db"]), "--mode", "ci", "--context", world["context"],
            "--sql", "SELECT v.visit_id, v.diagnosis FROM Visit v ORDER BY 1 LIMIT 2"]
    data = cli_json(args, 0)
    first = data["provenance"]["cells"][0]
    assert first["row"] == 0 and first["column"] == "visit_id" and first["texts"] == [{"scope": "span", "text": str(data["rows"][0][0])}]
    text = cli_text(args, 0)
    assert text["exit_code"] == 0 and "read from (span): row 1, visit_id: " in text["stdout"]
