"""``pimento ingest``: a corpus of documents into a checked database with provenance; and
``pimento demo corpus``: the demo hospital narrated as documents (see docs/ingest.md)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from pimento.cli._checks import require_path
from pimento.cli._common import console, emit_json, err_console, handle_errors
from pimento.errors import InternalError

__all__ = ["corpus_cmd", "ingest_cmd", "register"]


@handle_errors
def ingest_cmd(
    corpus: Path = typer.Option(..., "--corpus", help="Folder of documents: .txt/.md files, .jsonl lines with id and text."),
    schema: str = typer.Option(..., "--schema", help="Target schema: a SQL DDL file (.sql) or an existing database."),
    out: Path = typer.Option(..., "--out", help="DuckDB file to write; re-running into it adds only new documents."),
    extractor: str = typer.Option("offline", "--extractor", help="offline (patterns) or llm (OpenAI-compatible endpoint)."),
    patterns: Path = typer.Option(
        None, "--patterns", help="YAML pattern spec of the offline extractor (default: forms derived from the schema)."
    ),
    llm: str = typer.Option(
        None, "--llm", help="LLM endpoint: http(s)://.../v1 or replay:DIR (default: PIMENTO_LLM_URL, else a local server)."
    ),
    show_rejected: int = typer.Option(10, "--show-rejected", min=0, help="How many rejected rows to list."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Extract the rows a corpus states into a database: keys checked, entities resolved, provenance kept."""
    require_path(corpus, "--corpus", "corpus folder")
    require_path(schema, "--schema", "schema")
    if patterns is not None:
        require_path(patterns, "--patterns", "pattern spec")
    from pimento.ingest import ingest

    with _progress(quiet=json_out) as progress:
        report = ingest(
            corpus, schema, out, extractor=extractor, patterns=patterns, llm_url=llm, progress=progress
        )
    if json_out:
        emit_json(report.to_dict(examples=show_rejected))
        return
    _show(report, show_rejected)


@handle_errors
def corpus_cmd(
    out: Path = typer.Option(Path("pimento-demo") / "corpus", "--out", help="Folder to write the corpus into."),
    patients: int = typer.Option(200, "--patients", min=1, help="Number of patients of the demo hospital narrated."),
    seed: int = typer.Option(0, "--seed", min=0, help="Seed of the database and of the wording."),
    force: bool = typer.Option(False, "--force", help="Replace an existing corpus folder's files."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Narrate the demo hospital as documents (notes, prescriptions, letters) to rebuild with `pimento ingest`."""
    from pimento.demo.corpus import write_demo_corpus

    info = write_demo_corpus(out, patients=patients, seed=seed, overwrite=force)
    if json_out:
        emit_json(info.to_dict())
        return
    table = Table(title=f"{info.folder}: {info.documents:,} documents")
    table.add_column("kind")
    table.add_column("documents", justify="right")
    for kind, count in info.kinds.items():
        table.add_row(kind, f"{count:,}")
    console.print(table)
    console.print(
        f"rebuild the database: pimento ingest --corpus {info.folder} --schema {info.schema_path} "
        f"--patterns {info.patterns_path} --out {info.folder / 'rebuilt.duckdb'}",
        highlight=False, soft_wrap=True,
    )


def register(app: typer.Typer) -> None:
    """Add this module's commands to ``app`` (wiring only: the commands are the module-level functions above)."""
    demo = next((g.typer_instance for g in app.registered_groups if g.name == "demo"), None)
    if demo is None:  # pragma: no cover - app.py registers cmd_demo first
        raise InternalError("`pimento demo` must be registered before cmd_ingest adds `demo corpus`")
    app.command("ingest")(ingest_cmd)
    demo.command("corpus")(corpus_cmd)


class _progress:
    """Rich progress bars on a terminal, one line per step and every 10% otherwise, nothing with --json."""

    def __init__(self, *, quiet: bool) -> None:
        self.quiet = quiet
        self.rich: Any = None
        self.tasks: dict[str, Any] = {}
        self.last: dict[str, int] = {}

    def __enter__(self) -> Any:
        if self.quiet:
            return None
        if err_console.is_terminal:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.rich = Progress(
                TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                console=err_console, transient=True,
            )
            self.rich.start()
        return self

    def __call__(self, step: str, done: int, total: int) -> None:
        label = {"extract": "extracting documents", "write": "writing tables"}.get(step, step)
        if self.rich is not None:
            if step not in self.tasks:
                self.tasks[step] = self.rich.add_task(label, total=total)
            self.rich.update(self.tasks[step], completed=done, total=total)
            return
        tenth = (10 * done) // max(total, 1)
        if done in (0, total) or tenth > self.last.get(step, -1):
            if self.last.get(step) == 10:
                return
            self.last[step] = tenth
            sys.stderr.write(f"{label}: {done}/{total}\n")
            sys.stderr.flush()

    def __exit__(self, *exc: object) -> None:
        if self.rich is not None:
            self.rich.stop()


def _show(report, show_rejected: int) -> None:
    console.print(
        f"[bold]{report.out}[/]: {report.new_documents} new document(s), {report.skipped_documents} already ingested, "
        f"{len(report.failed_documents)} failed"
        + (f", {len(report.empty_documents)} with no row" if report.empty_documents else "")
        + f" ({report.extractor} extractor, {report.seconds:.1f} s)",
        highlight=False,
    )
    table = Table(title="Rows")
    for heading in ("table", "rows", "added", "rejected"):
        table.add_column(heading, justify="left" if heading == "table" else "right")
    rejected = report.rejected_by_table()
    for name, rows in report.rows.items():
        table.add_row(name, f"{rows:,}", f"{report.rows_added[name]:+,}", f"{rejected.get(name, 0):,}")
    console.print(table)
    console.print(f"{report.provenance_spans:,} provenance spans in _pimento_provenance", highlight=False)
    if report.rejected:
        console.print(
            f"[yellow]{len(report.rejected)} row(s) kept aside in _pimento_rejected[/]"
            + (":" if show_rejected else " (--show-rejected N lists them)"),
            highlight=False,
        )
        for item in report.rejected[:show_rejected]:
            console.print(f"  {item.table} from {', '.join(item.doc_ids) or '?'}: {item.reason}", highlight=False, markup=False)
    for doc_id, reason in report.failed_documents[:show_rejected]:
        console.print(f"  [red]failed[/] {doc_id}: {reason}", highlight=False)
    for note in report.notes:
        console.print(f"note: {note}", highlight=False)
