"""`pimento ingest` and `pimento demo corpus` from the command line: output, progress, error paths."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pimento.cli.app import app

from .test_ingest import DOCS, write_corpus

runner = CliRunner()


def _ingest(clinic, *extra: str):
    return runner.invoke(app, [
        "ingest", "--corpus", str(clinic["corpus"]), "--schema", str(clinic["schema"]),
        "--out", str(clinic["out"]), "--patterns", str(clinic["spec"]), *extra,
    ])


def test_ingest_prints_rows_rejections_and_progress_lines(clinic) -> None:
    write_corpus(clinic["corpus"], {**DOCS, "visit-9.txt": "Visit 9 on 2021-03-07: MRN 404 seen for flu."})
    result = _ingest(clinic)
    assert result.exit_code == 0, result.output
    stdout = " ".join(result.stdout.split())  # Rich wraps long lines
    assert "5 new document(s), 0 already ingested" in stdout
    assert "1 row(s) kept aside in _pimento_rejected" in stdout
    assert "no Patient row with pat_id = 404" in stdout
    assert "extracting documents: 5/5" in result.stderr  # not a terminal: progress lines


def test_ingest_json_is_one_document(clinic) -> None:
    write_corpus(clinic["corpus"], DOCS)
    result = _ingest(clinic, "--json")
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["rows"] == {"Patient": 2, "Visit": 3} and payload["rejected"] == 0
    assert result.stderr == ""


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--corpus", "missing-dir"], "corpus folder not found: missing-dir"),
        (["--extractor", "magic"], "unknown extractor 'magic' (use one of: offline, llm)"),
        (["--schema", "nope.sql"], "schema not found: nope.sql"),
        (["--patterns", "nope.yaml"], "pattern spec not found: nope.yaml"),
    ],
)
def test_bad_input_is_one_line_and_exit_2_and_writes_nothing(clinic, args, words) -> None:
    write_corpus(clinic["corpus"], DOCS)
    base = {"--corpus": str(clinic["corpus"]), "--schema": str(clinic["schema"]), "--out": str(clinic["out"]),
            "--patterns": str(clinic["spec"])}
    base.update(dict(zip(args[::2], args[1::2])))
    extra = [a for a in args if a not in base and a not in base.values()]
    result = runner.invoke(app, ["ingest", *[x for kv in base.items() for x in kv], *extra])
    assert result.exit_code == 2, result.output
    assert words in " ".join(result.stderr.split()) and "Traceback" not in result.output
    assert not clinic["out"].exists()


def test_bad_ddl_through_the_cli(clinic, tmp_path: Path) -> None:
    write_corpus(clinic["corpus"], DOCS)
    clinic["schema"].write_text("CREATE TABLE Patient (pat_id INTEGER PRIMARY KEY,", encoding="utf-8")
    result = _ingest(clinic)
    assert result.exit_code == 2 and "the DDL does not parse" in result.stderr


def test_demo_corpus_writes_documents_schema_and_spec_and_ingest_rebuilds_it(tmp_path: Path) -> None:
    folder = tmp_path / "corpus"
    made = runner.invoke(app, ["demo", "corpus", "--out", str(folder), "--patients", "20", "--json"])
    assert made.exit_code == 0, made.output
    info = json.loads(made.stdout)
    assert {p.name for p in folder.iterdir()} == {"documents", "schema.sql", "patterns.yaml", "source"}
    again = runner.invoke(app, ["demo", "corpus", "--out", str(folder)])
    assert again.exit_code == 2 and "is not empty" in again.stderr
    out = tmp_path / "rebuilt.duckdb"
    result = runner.invoke(app, [
        "ingest", "--corpus", str(folder), "--schema", info["schema"], "--patterns", info["patterns"],
        "--out", str(out), "--json",
    ])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["documents"] == info["documents"] and payload["rows"]["Patient"] == 20
