"""The corpus: documents read from a folder of text files and JSON-lines files.

A document is an id, its text and the SHA-256 of the text. Under the corpus folder (searched
recursively, in sorted path order):

* ``*.txt`` / ``*.md``: one document per file; its id is the path relative to the folder
  (``notes/visit-17.txt``);
* ``*.jsonl``: one document per non-empty line, a JSON object with ``id`` (string or integer) and
  ``text`` (string).

Other files (a ``schema.sql`` or ``patterns.yaml`` kept beside the documents) are ignored. Two
documents with the same id are an error: the id is how a re-run recognises what it has seen.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from pimento.errors import DataSourceError

__all__ = ["DOCUMENT_SUFFIXES", "Document", "load_corpus", "text_hash"]

#: File suffixes read as documents; everything else under the corpus folder is ignored.
DOCUMENT_SUFFIXES: tuple[str, ...] = (".txt", ".md", ".jsonl")


def text_hash(text: str) -> str:
    """The SHA-256 of a document's text (UTF-8), in hex: how a re-run tells a changed document."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Document:
    """One document of the corpus: ``id``, ``text`` and the hash of the text."""

    id: str
    text: str

    @property
    def sha256(self) -> str:
        return text_hash(self.text)


def load_corpus(folder: str | Path) -> list[Document]:
    """Every document under ``folder``, in sorted path order (JSON-lines documents in line order).

    Raises:
        DataSourceError: the folder is missing, a file is unreadable or not UTF-8, a JSON line is
            malformed or lacks ``id``/``text``, or two documents share an id.
    """
    root = Path(folder)
    if not root.exists():
        raise DataSourceError(f"corpus folder not found: {root}")
    if not root.is_dir():
        raise DataSourceError(f"the corpus must be a folder of .txt/.jsonl documents, not a file: {root}")
    documents: list[Document] = []
    seen: dict[str, str] = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file() and p.suffix.lower() in DOCUMENT_SUFFIXES):
        relative = path.relative_to(root).as_posix()
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise DataSourceError(f"cannot read corpus file {path}: {exc}") from exc
        if path.suffix.lower() == ".jsonl":
            found = list(_json_lines(path, text))
        else:
            found = [Document(relative, text)]
        for document in found:
            if document.id in seen:
                raise DataSourceError(
                    f"two documents have the id {document.id!r} ({seen[document.id]} and {relative})",
                    hint="document ids must be unique across the corpus",
                )
            seen[document.id] = relative
            documents.append(document)
    return documents


def _json_lines(path: Path, text: str):
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataSourceError(f"{path}:{number}: not a JSON object: {exc.msg}") from exc
        if not isinstance(record, dict):
            raise DataSourceError(f"{path}:{number}: each line must be a JSON object with id and text")
        doc_id, body = record.get("id"), record.get("text")
        if isinstance(doc_id, bool) or not isinstance(doc_id, (str, int)) or str(doc_id) == "":
            raise DataSourceError(f"{path}:{number}: missing or invalid \"id\" (a string or an integer)")
        if not isinstance(body, str):
            raise DataSourceError(f"{path}:{number}: missing or invalid \"text\" (a string)")
        yield Document(str(doc_id), body)
