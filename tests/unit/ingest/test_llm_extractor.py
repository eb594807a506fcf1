"""The LLM extractor through the replay backend (hand-made fixtures in tests/fixtures/llm/ingest)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest

from pimento.errors import UserError
from pimento.ingest import LLMExtractor, ingest, load_corpus, load_target, locate, open_extractor
from pimento.llm import ReplayBackend

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "llm" / "ingest"


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "corpus"
    shutil.copytree(FIXTURES / "corpus", folder)
    return folder


def test_rows_come_from_schema_constrained_json_with_located_spans(corpus, tmp_path) -> None:
    backend = ReplayBackend(FIXTURES)
    out = tmp_path / "out.duckdb"
    report = ingest(corpus, FIXTURES / "schema.sql", out, extractor="llm", backend=backend)
    assert report.rows == {"Patient": 1, "Visit": 2}
    assert [d for d, _ in report.failed_documents] == ["n3"]
    assert "unusable after one repair round" in report.failed_documents[0][1]
    # The request asked for JSON under a schema built from the catalog.
    schema = backend.requests[0].json_schema
    assert set(schema["properties"]) == {"Patient", "Visit"}
    texts = {d.id: d.text for d in load_corpus(corpus)}
    con = duckdb.connect(str(out), read_only=True)
    try:
        spans = con.execute("SELECT row_key, column_name, doc_id, char_start, char_end FROM _pimento_provenance").fetchall()
        documents = [r[0] for r in con.execute("SELECT doc_id FROM _pimento_documents ORDER BY 1").fetchall()]
    finally:
        con.close()
    read = {(k, c, d): texts[d][s:e] for k, c, d, s, e in spans}
    assert read[("[5]", "visit_date", "n1")] == "3 March 2021"
    assert read[("[17]", "name", "n2")] == "Ada Lovelace"
    assert read[("[6]", "visit_date", "n2")] == "2021-04-01"
    assert read[("[5]", "pat_id", "n1")] == "17"
    assert documents == ["n1", "n2"]  # the failed document is not recorded: the next run retries it


def test_the_failed_document_is_retried_by_the_next_run(corpus, tmp_path) -> None:
    out = tmp_path / "out.duckdb"
    ingest(corpus, FIXTURES / "schema.sql", out, extractor="llm", backend=ReplayBackend(FIXTURES))
    backend = ReplayBackend(FIXTURES)
    # n3 is its only new document, and it fails again: a run that extracts nothing is an error.
    with pytest.raises(UserError, match=r"in any of the 1 new document\(s\) \(1 failed: the LLM's answer is unusable"):
        ingest(corpus, FIXTURES / "schema.sql", out, extractor="llm", backend=backend)
    assert backend.requests and all("Phone call" in r.messages[1].content for r in backend.requests)


def test_the_prompt_holds_the_schema_and_the_document(corpus) -> None:
    target = load_target(FIXTURES / "schema.sql")
    extractor = LLMExtractor(ReplayBackend(FIXTURES), target.catalog)
    (first, *_) = load_corpus(corpus)
    system, user = extractor.messages(first)
    assert "CREATE TABLE Patient" in user.content and first.text in user.content
    assert system.role == "system" and "never invent keys" in system.content


def test_the_default_endpoint_is_local(monkeypatch) -> None:
    from pimento.ingest import DEFAULT_LLM_URL

    monkeypatch.delenv("PIMENTO_LLM_URL", raising=False)
    extractor = open_extractor("llm", load_target(FIXTURES / "schema.sql"))
    assert DEFAULT_LLM_URL.startswith("http://127.0.0.1") and extractor.backend.base_url.startswith(DEFAULT_LLM_URL)
    with pytest.raises(UserError, match="--patterns is for the offline extractor"):
        open_extractor("llm", load_target(FIXTURES / "schema.sql"), patterns="x.yaml")


@pytest.mark.parametrize(
    ("text", "value", "kind", "found"),
    [
        ("Seen on March 3, 2021.", "2021-03-03", "date", "March 3, 2021"),
        ("Dose 125 mg, not 12 mg.", 12, "integer", "12"),
        ("ada   LOVELACE came", "Ada Lovelace", "text", "ada   LOVELACE"),
        ("nothing here", "Bob", "text", None),
    ],
)
def test_locate_finds_the_written_form_of_a_value(text, value, kind, found) -> None:
    span = locate(text, value, kind)
    assert (text[span[0]:span[1]] if span else None) == found


def test_the_cli_reads_a_replay_endpoint(corpus, tmp_path) -> None:
    from typer.testing import CliRunner

    from pimento.cli.app import app

    out = tmp_path / "cli.duckdb"
    result = CliRunner().invoke(app, [
        "ingest", "--corpus", str(corpus), "--schema", str(FIXTURES / "schema.sql"), "--out", str(out),
        "--extractor", "llm", "--llm", f"replay:{FIXTURES}", "--json",
    ])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["rows"] == {"Patient": 1, "Visit": 2} and payload["failed_documents"][0]["doc_id"] == "n3"


class _Inventing:
    """A fake backend (at the seam) whose answer holds a value the document does not contain."""

    name = "inventing"

    def complete(self, request):
        from pimento.llm import ChatResponse, Completion

        answer = {"Patient": [{"pat_id": 17, "name": "Ada Lovelace", "birth_year": 1955}], "Visit": []}
        return ChatResponse((Completion(json.dumps(answer)),) * request.n)


def test_a_value_not_written_in_the_document_has_no_span_and_is_counted(tmp_path) -> None:
    corpus = tmp_path / "c"
    corpus.mkdir()
    (corpus / "a.txt").write_text("Ada Lovelace (MRN 17), born 1956.", encoding="utf-8")
    out = tmp_path / "o.duckdb"
    report = ingest(corpus, FIXTURES / "schema.sql", out, extractor="llm", backend=_Inventing())
    assert report.unlocated_values == 1 and "no span" in report.notes[0]
    con = duckdb.connect(str(out), read_only=True)
    try:
        columns = {r[0] for r in con.execute("SELECT column_name FROM _pimento_provenance").fetchall()}
    finally:
        con.close()
    assert columns == {"pat_id", "name"}
