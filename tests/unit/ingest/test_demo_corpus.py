"""The demo corpus: varied, seeded narrations that `pimento ingest` reads back; the quality benchmark."""

from __future__ import annotations

import json
import shutil
from collections import defaultdict
from pathlib import Path

import duckdb
import pytest

from benchmarks.ingest_quality import compare
from pimento.demo.corpus import write_demo_corpus
from pimento.ingest import ingest, load_corpus


@pytest.fixture(scope="module")
def rebuilt(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("demo-corpus")
    info = write_demo_corpus(folder / "corpus", patients=40, seed=3)
    out = folder / "rebuilt.duckdb"
    report = ingest(info.folder, info.schema_path, out, patterns=info.patterns_path)
    return {"info": info, "out": out, "report": report}


def _openers(folder: Path) -> dict[str, set[str]]:
    found: dict[str, set[str]] = defaultdict(set)
    for document in load_corpus(folder / "documents"):
        found[document.id.split("-")[0]].add(" ".join(document.text.split()[:2]))
    return found


def test_each_kind_of_record_is_written_in_several_wordings(rebuilt) -> None:
    openers = _openers(rebuilt["info"].folder)
    for kind in ("reg", "visit", "rx", "discharge", "treat", "team", "enrol"):
        assert len(openers[kind]) >= 2, (kind, openers[kind])


def test_the_wording_follows_the_seed(tmp_path) -> None:
    a = write_demo_corpus(tmp_path / "a", patients=10, seed=1)
    b = write_demo_corpus(tmp_path / "b", patients=10, seed=1)
    c = write_demo_corpus(tmp_path / "c", patients=10, seed=2)
    text = lambda info: (info.folder / "documents" / "visit-notes.jsonl").read_text()  # noqa: E731
    assert text(a) == text(b) and text(a) != text(c)


def test_the_rebuilt_database_matches_the_source_and_spans_slice_to_the_values(rebuilt) -> None:
    info, out = rebuilt["info"], rebuilt["out"]
    figures = compare(info.source_path, out, info.schema_path)
    assert figures["overall"]["precision"] == 1.0
    assert figures["overall"]["recall"] >= 0.99
    texts = {d.id: d.text for d in load_corpus(info.folder)}
    con = duckdb.connect(str(out), read_only=True)
    try:
        spans = con.execute(
            "SELECT p.doc_id, p.char_start, p.char_end, m.medication FROM _pimento_provenance p "
            "JOIN MedicationOrders m ON p.row_key = '[' || m.order_id || ']' "
            "WHERE p.table_name = 'MedicationOrders' AND p.column_name = 'medication'"
        ).fetchall()
        names = con.execute(
            "SELECT p.doc_id, p.char_start, p.char_end, t.name FROM _pimento_provenance p "
            "JOIN Patient t ON p.row_key = '[' || t.pat_id || ']' WHERE p.table_name = 'Patient' AND p.column_name = 'name'"
        ).fetchall()
    finally:
        con.close()
    assert spans and all(texts[d][s:e] == v for d, s, e, v in spans)
    # A patient is named in several documents (registration, notes, letters): one row, every span.
    assert len(names) > 40 and all(texts[d][s:e] == v for d, s, e, v in names)


def test_compare_counts_wrong_and_missing_cells(rebuilt, tmp_path) -> None:
    info = rebuilt["info"]
    copy = tmp_path / "copy.duckdb"
    shutil.copy(info.source_path, copy)
    same = compare(info.source_path, copy, info.schema_path)["overall"]
    assert (same["precision"], same["recall"], same["correct"]) == (1.0, 1.0, same["true"])
    con = duckdb.connect(str(copy))
    con.execute("UPDATE Researcher SET institution = 'Elsewhere' WHERE researcher_id = 1")
    con.close()
    figures = compare(info.source_path, copy, info.schema_path)
    column = figures["tables"]["Researcher"]["columns"]["institution"]
    assert column["correct"] == column["true"] - 1 and column["precision"] < 1 and column["recall"] < 1
    assert figures["tables"]["Researcher"]["rows_exact"] == figures["tables"]["Researcher"]["rows_true"] - 1


def test_the_report_is_json_ready(rebuilt) -> None:
    payload = json.loads(json.dumps(rebuilt["report"].to_dict()))
    assert payload["rows"]["Patient"] == 40 and payload["new_documents"] == payload["documents"]


def test_compare_restricted_to_a_sample_counts_made_up_rows_against_precision(rebuilt, tmp_path) -> None:
    info = rebuilt["info"]
    wrong = tmp_path / "wrong.duckdb"
    shutil.copy(rebuilt["out"], wrong)
    con = duckdb.connect(str(wrong))
    try:
        con.execute("INSERT INTO DxCategory VALUES ('Made-up disease', 'Nowhere', 'negative')")
        first = con.execute("SELECT diagnosis FROM DxCategory ORDER BY 1 LIMIT 1").fetchone()[0]
    finally:
        con.close()
    figures = compare(info.source_path, wrong, info.schema_path, only={"DxCategory": {(first,)}})
    assert set(figures["tables"]) == {"DxCategory"}
    dx = figures["tables"]["DxCategory"]
    assert dx["rows_true"] == 1 and dx["rows_rebuilt"] == 2  # the sampled row and the made-up one
    assert dx["true"] == 3 and dx["correct"] == 3 and dx["rebuilt"] == 6 and dx["precision"] == 0.5


def test_narrated_rows_name_each_documents_rows(rebuilt) -> None:
    from pimento.demo.corpus import narrated_rows

    info = rebuilt["info"]
    rows = narrated_rows(info.source_path)
    assert set(rows) == {d.id for d in load_corpus(info.folder / "documents")}
    con = duckdb.connect(str(info.source_path), read_only=True)
    try:
        visit, orders = con.execute(
            "SELECT visit_id, COUNT(*) FROM MedicationOrders GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 1"
        ).fetchone()
    finally:
        con.close()
    narrated = rows[f"visit-{visit}"]
    assert narrated[0][0] == "Visit" and narrated[0][1]["visit_id"] == visit
    assert [t for t, _ in narrated[1:]] == ["MedicationOrders"] * orders


def test_demo_run_from_corpus_builds_the_database_from_text(tmp_path) -> None:
    """`pimento demo run --from-corpus`: narrate, ingest offline, then the demo's steps run on the rebuilt database."""
    from pimento.cli.cmd_demo import DemoContext, run_steps, step_catalog, step_database, step_question, DemoStep
    from pimento.errors import UserError

    out = tmp_path / "demo" / "hospital.duckdb"
    steps = [DemoStep("database", step_database, print), DemoStep("catalog", step_catalog, print),
             DemoStep("question", step_question, print)]
    results = run_steps(DemoContext(out, patients=40, seed=3, quiet=True, from_corpus=True), steps, show=False)
    corpus = results["database"]["corpus"]
    assert corpus["built"] and not corpus["corpus_reused"] and corpus["documents"] > 40
    assert results["database"]["patients"] == 40
    assert (tmp_path / "demo" / "corpus" / "documents" / "visit-notes.jsonl").is_file()
    assert '[provenance]\nrelease = "none"\ncorpus = "corpus/documents"' in (out.parent / "pimento.toml").read_text()
    source = tmp_path / "demo" / "corpus" / "source" / "hospital.duckdb"
    con = duckdb.connect(str(source), read_only=True)
    try:
        truth = [con.execute(f["sql"]).fetchone()[0] for f in results["question"]["formulations"]]
    finally:
        con.close()
    assert [f["true_answer"] for f in results["question"]["formulations"]] == truth  # the question, on the rebuilt data
    # a second run uses the ingested database; a generated one is refused under --from-corpus
    again = run_steps(DemoContext(out, quiet=True, from_corpus=True), steps[:1], show=False)
    assert again["database"]["corpus"]["built"] is False
    from pimento.demo.hospital import create_demo

    generated = tmp_path / "gen" / "hospital.duckdb"
    create_demo(generated, patients=20)
    with pytest.raises(UserError, match="not built from the corpus"):
        run_steps(DemoContext(generated, quiet=True, from_corpus=True), steps[:1], show=False)
