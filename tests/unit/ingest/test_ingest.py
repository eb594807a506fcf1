"""`ingest` end to end on the tiny clinic: provenance, rejected rows, re-runs, atomic writes."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import duckdb
import pytest

from pimento.errors import CatalogError, DataSourceError, UserError
from pimento.ingest import ingest, load_corpus

from .conftest import write_corpus

DOCS = {
    "reg-17.txt": "Patient Ada Lovelace (MRN 17), born 1956, female. Registered today.",
    "reg-18.txt": "Patient Alan Turing (MRN 18), born 1912, male.",
    "visit-5.txt": "Visit 5 on 3 March 2021: Ada Lovelace (1956) seen for asthma.",
    "visit-6.txt": "Visit 6 on 2021-03-04: MRN 18 seen for flu. Visit 7 on 2021-03-05: MRN 17 seen for cough.",
}


def _query(path: Path, sql: str):
    con = duckdb.connect(str(path), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_rows_keys_and_provenance_spans_point_at_the_right_text(clinic) -> None:
    write_corpus(clinic["corpus"], DOCS)
    report = ingest(clinic["corpus"], clinic["schema"], clinic["out"], patterns=clinic["spec"])
    assert report.rows == {"Patient": 2, "Visit": 3} and not report.rejected
    assert _query(clinic["out"], "SELECT visit_id, pat_id, CAST(visit_date AS VARCHAR) FROM Visit ORDER BY 1") == [
        (5, 17, "2021-03-03"), (6, 18, "2021-03-04"), (7, 17, "2021-03-05"),
    ]
    texts = {d.id: d.text for d in load_corpus(clinic["corpus"])}
    spans = _query(clinic["out"], "SELECT table_name, row_key, column_name, doc_id, char_start, char_end FROM _pimento_provenance")
    assert len(spans) == report.provenance_spans > 0
    read = {(t, k, c, texts[d][s:e]) for t, k, c, d, s, e in spans}
    assert ("Patient", "[17]", "name", "Ada Lovelace") in read
    assert ("Visit", "[5]", "visit_date", "3 March 2021") in read
    assert ("Visit", "[5]", "pat_id", "Ada Lovelace") in read and ("Visit", "[5]", "pat_id", "1956") in read
    assert ("Visit", "[7]", "diagnosis", "cough") in read
    # Every span slices the document to the text of the value it produced (or the name it was found by).
    values = {("Patient", f"[{p}]", "name"): n for p, n in _query(clinic["out"], "SELECT pat_id, name FROM Patient")}
    for (table, key, column), name in values.items():
        assert {text for t, k, c, text in read if (t, k, c) == (table, key, column)} == {name}


def test_rejected_rows_are_kept_with_the_reason_including_engine_refusals(clinic) -> None:
    docs = {
        **DOCS,
        "reg-19.txt": "Patient Eve Jones (MRN 19), born 1990, other.",  # CHECK (sex IN ('F','M')) refuses 'X'
        "visit-8.txt": "Visit 8 on 2021-03-06: MRN 19 seen for rash.",  # its patient is refused: so is it
        "visit-9.txt": "Visit 9 on 2021-03-07: MRN 404 seen for flu.",
    }
    write_corpus(clinic["corpus"], docs)
    report = ingest(clinic["corpus"], clinic["schema"], clinic["out"], patterns=clinic["spec"])
    rejected = _query(clinic["out"], "SELECT table_name, row_key, reason, doc_ids FROM _pimento_rejected ORDER BY row_key")
    assert len(rejected) == len(report.rejected) == 3
    by_key = {key: (table, reason, json.loads(docs_)) for table, key, reason, docs_ in rejected}
    assert by_key["[19]"][0] == "Patient" and by_key["[19]"][1].startswith("refused by the database: Constraint Error")
    assert by_key["[8]"][0] == "Visit" and '"pat_id: 19" does not exist' in by_key["[8]"][1]
    assert by_key["[8]"][2] == ["visit-8.txt"]
    assert by_key["[9]"][1] == "foreign key Visit(pat_id) -> Patient(pat_id): no Patient row with pat_id = 404"
    assert _query(clinic["out"], "SELECT count(*) FROM Patient") == [(2,)]


def test_a_rerun_extracts_only_new_documents_and_retries_what_it_rejected(clinic) -> None:
    write_corpus(clinic["corpus"], {**DOCS, "visit-9.txt": "Visit 9 on 2021-03-07: MRN 30 seen for flu."})
    first = ingest(clinic["corpus"], clinic["schema"], clinic["out"], patterns=clinic["spec"])
    assert first.rows == {"Patient": 2, "Visit": 3} and len(first.rejected) == 1
    spans_before = _query(clinic["out"], "SELECT * FROM _pimento_provenance ORDER BY ALL")
    again = ingest(clinic["corpus"], clinic["schema"], clinic["out"], patterns=clinic["spec"])
    assert (again.new_documents, again.skipped_documents, again.mentions) == (0, 5, 0)
    assert again.rows_added == {"Patient": 0, "Visit": 0}
    write_corpus(clinic["corpus"], {"reg-30.txt": "Patient Bob Smith (MRN 30), born 1980, male."})
    grown = ingest(clinic["corpus"], clinic["schema"], clinic["out"], patterns=clinic["spec"])
    assert (grown.new_documents, grown.skipped_documents, grown.mentions) == (1, 5, 1)
    assert grown.rows_added == {"Patient": 1, "Visit": 1} and not grown.rejected  # visit 9 now has its patient
    spans_after = _query(clinic["out"], "SELECT * FROM _pimento_provenance WHERE doc_id != 'reg-30.txt' ORDER BY ALL")
    new_spans = _query(clinic["out"], "SELECT count(*) FROM _pimento_provenance WHERE doc_id = 'reg-30.txt'")
    assert new_spans == [(4,)]
    # Earlier provenance is carried over, not duplicated; visit 9's spans now count (it was rejected).
    assert [s for s in spans_after if s[3] != "visit-9.txt"] == [s for s in spans_before if s[3] != "visit-9.txt"]
    assert _query(clinic["out"], "SELECT count(*) FROM _pimento_documents") == [(6,)]


def test_surrogate_keys_stay_put_across_reruns(clinic) -> None:
    write_corpus(clinic["corpus"], {"a.txt": "Grace Hopper, a woman born in 1906."})
    ingest(clinic["corpus"], clinic["schema"], clinic["out"], patterns=clinic["spec"])
    write_corpus(clinic["corpus"], {"b.txt": "Patient Ada Lovelace (MRN 1), born 1815, female.",
                                    "c.txt": "Grace Hopper, a woman born in 1906, again."})
    ingest(clinic["corpus"], clinic["schema"], clinic["out"], patterns=clinic["spec"])
    # Grace kept surrogate key 1, so Ada's stated MRN 1 conflicts with her row instead of taking it over.
    assert _query(clinic["out"], "SELECT pat_id, name FROM Patient") == [(1, "Grace Hopper")]
    (reason,) = _query(clinic["out"], "SELECT reason FROM _pimento_rejected")[0]
    assert reason.startswith("conflicts with Patient row [1]: name is 'Grace Hopper'")


def test_a_changed_document_is_an_error_and_nothing_is_written(clinic) -> None:
    write_corpus(clinic["corpus"], DOCS)
    ingest(clinic["corpus"], clinic["schema"], clinic["out"], patterns=clinic["spec"])
    before = _digest(clinic["out"])
    (clinic["corpus"] / "visit-5.txt").write_text("Visit 5 on 3 March 2021: Ada Lovelace (1956) seen for flu.", encoding="utf-8")
    write_corpus(clinic["corpus"], {"reg-30.txt": "Patient Bob Smith (MRN 30), born 1980, male."})
    with pytest.raises(UserError, match=r"1 document\(s\) changed since they were ingested .*visit-5.txt"):
        ingest(clinic["corpus"], clinic["schema"], clinic["out"], patterns=clinic["spec"])
    assert _digest(clinic["out"]) == before
    assert sorted(p.name for p in clinic["out"].parent.iterdir() if p.name.startswith(".")) == []


def test_it_refuses_an_out_it_did_not_write_and_another_schema(clinic, tmp_path) -> None:
    write_corpus(clinic["corpus"], DOCS)
    foreign = tmp_path / "other.duckdb"
    duckdb.connect(str(foreign)).close()
    with pytest.raises(UserError, match="was not written by `pimento ingest`"):
        ingest(clinic["corpus"], clinic["schema"], foreign, patterns=clinic["spec"])
    ingest(clinic["corpus"], clinic["schema"], clinic["out"], patterns=clinic["spec"])
    wider = tmp_path / "wider.sql"
    wider.write_text(clinic["schema"].read_text() + "\nCREATE TABLE Extra (x INTEGER);", encoding="utf-8")
    with pytest.raises(UserError, match="another target schema"):
        ingest(clinic["corpus"], wider, clinic["out"], patterns=clinic["spec"])


def test_an_existing_database_can_be_the_schema(clinic, tmp_path) -> None:
    write_corpus(clinic["corpus"], DOCS)
    template = tmp_path / "template.duckdb"
    con = duckdb.connect(str(template))
    con.execute(clinic["schema"].read_text())
    con.close()
    report = ingest(clinic["corpus"], template, clinic["out"], patterns=clinic["spec"])
    assert report.rows == {"Patient": 2, "Visit": 3}
    fks = _query(clinic["out"], "SELECT count(*) FROM duckdb_constraints() WHERE constraint_type = 'FOREIGN KEY'")
    assert fks == [(1,)]


@pytest.mark.parametrize(
    ("setup", "error", "words"),
    [
        (lambda c: None, DataSourceError, "corpus folder not found"),
        (lambda c: write_corpus(c, {"x.md": "nothing"}, jsonl="bad.jsonl") and (c / "bad.jsonl").write_text("{oops\n"),
         DataSourceError, "bad.jsonl:1: not a JSON object"),
        (lambda c: write_corpus(c, {"a": "x"}, jsonl="a.jsonl") and (c / "b.jsonl").write_text('{"id": "a", "text": "y"}\n'),
         DataSourceError, "two documents have the id 'a'"),
        (lambda c: c.mkdir(), UserError, "no documents under"),
    ],
)
def test_bad_corpora_are_clear_errors(clinic, setup, error, words) -> None:
    setup(clinic["corpus"])
    with pytest.raises(error, match=words):
        ingest(clinic["corpus"], clinic["schema"], clinic["out"], patterns=clinic["spec"])
    assert not clinic["out"].exists()


def test_bad_ddl_is_a_catalog_error(clinic, tmp_path) -> None:
    write_corpus(clinic["corpus"], DOCS)
    for text, words in (("CREATE TABLE (", "does not parse"), ("CREATE TABLE a (x INTEGER REFERENCES b (y));", "does not run"),
                        ("INSERT INTO t VALUES (1);", "only CREATE statements"), ("-- nothing", "defines no table")):
        ddl = tmp_path / "bad.sql"
        ddl.write_text(text, encoding="utf-8")
        with pytest.raises(CatalogError, match=words):
            ingest(clinic["corpus"], ddl, clinic["out"])
    assert not clinic["out"].exists()
