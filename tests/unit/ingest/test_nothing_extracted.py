"""An ingest that extracts nothing fails loudly and records nothing, so the corrected re-run works;
a document that states no row is not recorded either (issue 28, "Fail loudly")."""

from __future__ import annotations

import hashlib
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from pimento.cli.app import app
from pimento.errors import UserError
from pimento.ingest import ingest

from .conftest import write_corpus
from .test_ingest import DOCS

runner = CliRunner()


def _documents(path: Path) -> list[str]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return [r[0] for r in con.execute("SELECT doc_id FROM _pimento_documents ORDER BY 1").fetchall()]
    finally:
        con.close()


def test_no_row_from_any_document_is_an_error_that_writes_nothing_and_the_corrected_run_reads_all(clinic) -> None:
    write_corpus(clinic["corpus"], DOCS)
    with pytest.raises(UserError) as caught:  # the derived form spec reads none of this prose
        ingest(clinic["corpus"], clinic["schema"], clinic["out"])
    assert "found no row in any of the 4 new document(s)" in caught.value.message
    assert "--patterns" in (caught.value.hint or "")
    assert not clinic["out"].exists()
    fixed = ingest(clinic["corpus"], clinic["schema"], clinic["out"], patterns=clinic["spec"])
    assert (fixed.new_documents, fixed.skipped_documents) == (4, 0)
    assert fixed.rows == {"Patient": 2, "Visit": 3}


def test_a_rerun_whose_new_documents_state_nothing_fails_and_leaves_the_database_as_it_was(clinic) -> None:
    write_corpus(clinic["corpus"], DOCS)
    ingest(clinic["corpus"], clinic["schema"], clinic["out"], patterns=clinic["spec"])
    before = hashlib.sha256(clinic["out"].read_bytes()).hexdigest()
    write_corpus(clinic["corpus"], {"later.txt": "Patient Bob Smith (MRN 30), born 1980, male."})
    with pytest.raises(UserError, match="found no row in any of the 1 new document"):
        ingest(clinic["corpus"], clinic["schema"], clinic["out"])  # forgot --patterns this time
    assert hashlib.sha256(clinic["out"].read_bytes()).hexdigest() == before
    grown = ingest(clinic["corpus"], clinic["schema"], clinic["out"], patterns=clinic["spec"])
    assert (grown.new_documents, grown.skipped_documents, grown.rows_added["Patient"]) == (1, 4, 1)


def test_a_document_that_states_no_row_is_reported_and_not_recorded(clinic) -> None:
    write_corpus(clinic["corpus"], {**DOCS, "call.txt": "Phone call with the lab: results follow."})
    report = ingest(clinic["corpus"], clinic["schema"], clinic["out"], patterns=clinic["spec"])
    assert report.empty_documents == ["call.txt"] and report.new_documents == 4
    assert report.to_dict()["empty_documents"] == ["call.txt"]
    assert any("1 document(s) stated no row" in note and "call.txt" in note for note in report.notes)
    assert "call.txt" not in _documents(clinic["out"])
    # A re-run reads it again (it is new, not skipped): alone, it extracts nothing, which is the error.
    with pytest.raises(UserError, match="found no row in any of the 1 new document"):
        ingest(clinic["corpus"], clinic["schema"], clinic["out"], patterns=clinic["spec"])
    write_corpus(clinic["corpus"], {"reg-30.txt": "Patient Bob Smith (MRN 30), born 1980, male."})
    grown = ingest(clinic["corpus"], clinic["schema"], clinic["out"], patterns=clinic["spec"])
    assert (grown.new_documents, grown.skipped_documents, grown.empty_documents) == (1, 4, ["call.txt"])


def test_the_cli_exits_2_with_the_hint_and_the_corrected_run_ingests_everything(clinic) -> None:
    write_corpus(clinic["corpus"], DOCS)
    base = ["ingest", "--corpus", str(clinic["corpus"]), "--schema", str(clinic["schema"]), "--out", str(clinic["out"])]
    result = runner.invoke(app, base)
    assert result.exit_code == 2, result.output
    said = " ".join(result.stderr.split())
    assert "nothing extracted" in said and "no document is marked ingested" in said and "--patterns SPEC.yaml" in said
    assert "Traceback" not in result.output and not clinic["out"].exists()
    fixed = runner.invoke(app, [*base, "--patterns", str(clinic["spec"])])
    assert fixed.exit_code == 0, fixed.output
    assert "4 new document(s), 0 already ingested" in " ".join(fixed.stdout.split())
