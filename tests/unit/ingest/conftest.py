"""A tiny clinic: two tables, a pattern spec with two wordings and a lookup, and helpers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

SCHEMA = """
CREATE TABLE Patient (
    pat_id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    birth_year INTEGER,
    sex TEXT CHECK (sex IN ('F', 'M')));
CREATE TABLE Visit (
    visit_id INTEGER PRIMARY KEY,
    pat_id INTEGER NOT NULL REFERENCES Patient (pat_id),
    visit_date DATE NOT NULL,
    diagnosis TEXT);
"""

SPEC = r"""
version: 1
tables:
  Patient:
    match_on: [name, birth_year]
    rules:
      - patterns:
          - 'Patient (?P<name>[A-Z][a-z]+ [A-Z][a-z]+) \(MRN (?P<pat_id>\d+)\), born (?P<birth_year>\d{4}), (?P<sex>female|male|other)'
          - '(?P<name>[A-Z][a-z]+ [A-Z][a-z]+), a (?P<sex>woman|man) born in (?P<birth_year>\d{4})'
        values:
          sex: {map: {female: F, woman: F, male: M, man: M, other: X}}
  Visit:
    rules:
      - patterns:
          - 'Visit (?P<visit_id>\d+) on (?P<visit_date>\d+ \w+ \d{4}): (?P<patient>[A-Z][a-z]+ [A-Z][a-z]+) \((?P<born>\d{4})\) seen for (?P<diagnosis>[^.]+)\.'
          - 'Visit (?P<visit_id>\d+) on (?P<visit_date>\d{4}-\d\d-\d\d): MRN (?P<pat_id>\d+) seen for (?P<diagnosis>[^.]+)\.'
        values:
          visit_date: {date: ['%d %B %Y', '%Y-%m-%d']}
        lookup:
          pat_id: {table: Patient, by: {name: patient, birth_year: born}}
"""


def write_corpus(folder: Path, documents: dict[str, str], *, jsonl: str | None = None) -> Path:
    """Write ``documents`` as .txt files (id -> text), or as one .jsonl file when ``jsonl`` names it."""
    folder.mkdir(parents=True, exist_ok=True)
    if jsonl:
        with (folder / jsonl).open("a", encoding="utf-8") as stream:
            for doc_id, text in documents.items():
                stream.write(json.dumps({"id": doc_id, "text": text}) + "\n")
    else:
        for doc_id, text in documents.items():
            (folder / doc_id).write_text(text, encoding="utf-8")
    return folder


@pytest.fixture
def clinic(tmp_path: Path) -> dict[str, Path]:
    schema = tmp_path / "schema.sql"
    schema.write_text(SCHEMA, encoding="utf-8")
    spec = tmp_path / "patterns.yaml"
    spec.write_text(SPEC, encoding="utf-8")
    return {"schema": schema, "spec": spec, "corpus": tmp_path / "corpus", "out": tmp_path / "out.duckdb"}
