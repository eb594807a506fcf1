"""``pimento demo``: build the demo hospital database and walk through the paper's example on it.

``demo run`` is a list of steps (:data:`RUN_STEPS`). Each step is a small function that takes the
shared :class:`DemoContext`, does one thing, and returns a JSON-ready dict; a second function shows
that dict to people. Adding a step (residual sensitivity, private release, search) is adding one
:class:`DemoStep` to the list.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import typer
from rich.console import JustifyMethod
from rich.markup import escape
from rich.table import Table

from pimento.cli._common import StageProgress, console, emit_json, err_console, handle_errors
from pimento.cli.cmd_synth import SYNTH_STAGES
from pimento.errors import UserError
from pimento.schema.synthetic import default_synthetic_path

__all__ = ["DEFAULT_OUT", "DemoContext", "DemoStep", "RUN_STEPS", "create_cmd", "print_labelled", "register", "run_cmd"]

#: Where the demo database goes when ``--out`` is not given (relative to the working directory).
DEFAULT_OUT = Path("pimento-demo") / "hospital.duckdb"
DEFAULT_PATIENTS = 10_000
#: Patients of ``demo run --from-corpus`` when ``--patients`` is not given (ingesting is slower than generating).
DEFAULT_CORPUS_PATIENTS = 1_000


# --------------------------------------------------------------------------- steps of `demo run`


@dataclass
class DemoContext:
    """What the steps of ``demo run`` share: options, the open database, earlier results."""

    path: Path
    patients: int | None = None
    seed: int = 0
    quiet: bool = False
    #: build the database by narrating the demo hospital and ingesting the corpus (``--from-corpus``)
    from_corpus: bool = False
    database: Any = None
    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: seconds each step took (shown in the summary)
    seconds: dict[str, float] = field(default_factory=dict)

    def close(self) -> None:
        if self.database is not None:
            self.database.close()
            self.database = None


@dataclass(frozen=True)
class DemoStep:
    """One step of ``demo run``: ``run(ctx) -> dict`` and ``show(dict)`` for the Rich view; ``title`` is
    what the progress line on stderr says while it runs (default: the name)."""

    name: str
    run: Callable[[DemoContext], dict[str, Any]]
    show: Callable[[dict[str, Any]], None]
    title: str = ""


def step_database(ctx: DemoContext) -> dict[str, Any]:
    """Build the demo database if it is missing, then open it (read-only) with its catalog."""
    from pimento.demo.hospital import create_demo
    from pimento.engines.database import load_database

    built = None
    corpus = None
    if ctx.from_corpus:
        corpus = build_from_corpus(ctx) if not ctx.path.exists() else _check_ingested(ctx.path)
    elif not ctx.path.exists():
        patients = ctx.patients if ctx.patients is not None else DEFAULT_PATIENTS
        built = _build(ctx.path, patients=patients, seed=ctx.seed, overwrite=False, quiet=ctx.quiet)
    ctx.database = load_database(ctx.path)
    rows = _row_count(ctx, "Patient")
    seconds = built.seconds if built is not None else corpus.get("seconds") if corpus else None
    out: dict[str, Any] = {
        "path": str(ctx.path),
        "config_path": str(ctx.path.parent / "pimento.toml"),
        "built": built is not None or bool(corpus and corpus["built"]),
        "patients": rows,
        "build_seconds": round(seconds, 3) if seconds is not None else None,
    }
    if corpus is not None:
        out["corpus"] = corpus
    if built is None and ctx.patients is not None and ctx.patients != rows:
        out["note"] = (
            f"the existing database has {rows} patients, not {ctx.patients}; "
            "rebuild it with `pimento demo create --force --patients N`"
        )
    return out


def build_from_corpus(ctx: DemoContext) -> dict[str, Any]:
    """``--from-corpus``: narrate the demo hospital into ``corpus/`` beside the database (or reuse the
    corpus there), ingest it with the offline extractor into the database, write its pimento.toml."""
    import time

    from pimento.demo.corpus import write_demo_corpus
    from pimento.demo.hospital import check_target, demo_config_text
    from pimento.ingest import ingest

    started = time.perf_counter()
    check_target(ctx.path, overwrite=False)
    folder = ctx.path.parent / "corpus"
    reused = (folder / "schema.sql").is_file() and (folder / "patterns.yaml").is_file() and (folder / "documents").is_dir()
    if not reused:
        patients = ctx.patients if ctx.patients is not None else DEFAULT_CORPUS_PATIENTS
        if not ctx.quiet:
            err_console.print(f"narrating the demo hospital ({patients:,} patients) into {folder} ...", highlight=False)
        write_demo_corpus(folder, patients=patients, seed=ctx.seed)
    if not ctx.quiet:
        err_console.print(f"ingesting {folder / 'documents'} into {ctx.path} (offline extractor) ...", highlight=False)
    report = ingest(folder / "documents", folder / "schema.sql", ctx.path, patterns=folder / "patterns.yaml")
    (ctx.path.parent / "pimento.toml").write_text(
        demo_config_text(ctx.path.name)
        + "\n# The database was ingested from corpus/ (`pimento demo run --from-corpus`): CI answers may carry the\n"
        "# text of authorized cells when the custodian sets release = \"span\" or \"sentence\" (docs/ingest.md).\n"
        "[provenance]\n"
        'release = "none"\n'
        'corpus = "corpus/documents"\n',
        encoding="utf-8",
    )
    return {
        "built": True,
        "folder": str(folder),
        "corpus_reused": reused,
        "documents": report.documents,
        "rows": report.rows,
        "rejected": len(report.rejected),
        "provenance_spans": report.provenance_spans,
        "seconds": time.perf_counter() - started,
    }


def _check_ingested(path: Path) -> dict[str, Any]:
    """An existing database given with ``--from-corpus`` must be an ingest output."""
    import duckdb

    from pimento.ingest import DOCUMENTS_TABLE

    try:
        con = duckdb.connect(str(path), read_only=True)
    except duckdb.Error as exc:
        raise UserError(f"cannot open {path}: {exc}") from None
    try:
        tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        counted = con.execute(f"SELECT COUNT(*) FROM {DOCUMENTS_TABLE}").fetchone() if DOCUMENTS_TABLE in tables else None
        documents = int(counted[0]) if counted is not None else None
    finally:
        con.close()
    if documents is None:
        raise UserError(
            f"{path} exists and was not built from the corpus",
            hint="give --from-corpus another --out (the database is built there), or drop --from-corpus",
        )
    return {"built": False, "folder": str(path.parent / "corpus"), "documents": documents}


def show_database(data: dict[str, Any]) -> None:
    verb = f"built in {data['build_seconds']:.1f} s" if data["built"] else "existing"
    console.print(f"[bold]Demo database[/] {data['path']} ({verb}, {data['patients']:,} patients)", highlight=False)
    corpus = data.get("corpus")
    if corpus and corpus["built"]:
        console.print(
            f"  from the corpus {corpus['folder']}: {corpus['documents']:,} documents ingested, {corpus['rejected']:,} rows "
            f"kept aside (_pimento_rejected), {corpus['provenance_spans']:,} provenance spans",
            highlight=False,
        )
    elif corpus:
        console.print(f"  ingested from the corpus {corpus['folder']} ({corpus['documents']:,} documents)", highlight=False)
    if data.get("note"):
        console.print(f"[yellow]note:[/] {data['note']}", highlight=False)


def step_catalog(ctx: DemoContext) -> dict[str, Any]:
    """Tables with their row counts and private flags, and the declared functional dependencies."""
    catalog = ctx.database.catalog
    tables = [
        {"name": t.name, "rows": _row_count(ctx, t.name), "private": catalog.is_private(t.name), "columns": len(t.columns)}
        for t in catalog.tables
    ]
    return {
        "tables": tables,
        "foreign_keys": len(catalog.foreign_keys),
        "functional_dependencies": [str(fd) for fd in catalog.functional_dependencies],
    }


def show_catalog(data: dict[str, Any]) -> None:
    table = Table(title="Catalog")
    headings: tuple[tuple[str, JustifyMethod], ...] = (("relation", "left"), ("rows", "right"), ("columns", "right"), ("privacy", "left"))
    for heading, justify in headings:
        table.add_column(heading, justify=justify)
    for t in data["tables"]:
        table.add_row(t["name"], f"{t['rows']:,}", str(t["columns"]), "[red]private[/]" if t["private"] else "[green]public[/]")
    console.print(table)
    fds = ", ".join(data["functional_dependencies"]) or "none"
    print_labelled(f"{data['foreign_keys']} foreign keys; functional dependencies:", fds, indent=0)


def step_question(ctx: DemoContext) -> dict[str, Any]:
    """The demo question, its two SQL formulations and their true answers on the database."""
    from pimento.demo.hospital import DEMO_QUESTION, DEMO_SQL_ORDERS, DEMO_SQL_PRESCRIPTION

    formulations = []
    for name, sql in (("prescription", DEMO_SQL_PRESCRIPTION), ("orders", DEMO_SQL_ORDERS)):
        answer = ctx.database.engine.execute(sql).rows[0][0]
        formulations.append({"name": name, "sql": sql, "true_answer": int(answer)})
    return {
        "question": DEMO_QUESTION,
        "formulations": formulations,
        "answers_agree": len({f["true_answer"] for f in formulations}) == 1,
    }


def show_question(data: dict[str, Any]) -> None:
    console.print(f"\n[bold]Question:[/] {data['question']}", highlight=False)
    for f in data["formulations"]:
        print_labelled(f"[cyan]{f['name']}[/]:", f["sql"])
        console.print(f"    true answer (not private, for the demo only): [bold]{f['true_answer']}[/]", highlight=False)
    agree = "[green]the two formulations agree[/]" if data["answers_agree"] else "[red]the formulations disagree[/]"
    console.print(f"  {agree}")


def step_parse(ctx: DemoContext) -> dict[str, Any]:
    """Each formulation parsed into the CountQuery IR (relations, joins, selections, count)."""
    from pimento.demo.hospital import DEMO_SQL_ORDERS, DEMO_SQL_PRESCRIPTION
    from pimento.sql import parse_count_query

    parsed = []
    for name, sql in (("prescription", DEMO_SQL_PRESCRIPTION), ("orders", DEMO_SQL_ORDERS)):
        query = parse_count_query(sql, ctx.database.catalog)
        parsed.append(
            {
                "name": name,
                "relations": [f"{r.table} AS {r.alias}" if r.alias != r.table else r.table for r in query.relations],
                "joins": [str(j) for j in query.joins],
                "selections": [s.predicate for s in query.selections],
                "count": str(query.count),
                "sql": query.to_sql(ctx.database.engine.dialect),
            }
        )
    return {"formulations": parsed}


def show_parse(data: dict[str, Any]) -> None:
    console.print("\n[bold]Parsed CountQuery IR[/]")
    for f in data["formulations"]:
        console.print(f"  [cyan]{f['name']}[/]: {f['count']}", highlight=False)
        console.print(f"    relations:  {', '.join(f['relations'])}", highlight=False)
        console.print(f"    joins:      {'; '.join(f['joins']) or '-'}", highlight=False)
        console.print(f"    selections: {'; '.join(f['selections']) or '-'}", highlight=False)


#: Privacy parameters of the demo's releases (the paper's per-query setting).
DEMO_EPSILON = "1"
DEMO_DELTA = "1e-6"
DEMO_ANALYST = "demo"


def step_sensitivity(ctx: DemoContext) -> dict[str, Any]:
    """Residual sensitivity of each formulation on the SYNTHETIC copy, at the release's beta.

    This is what an analyst may see before spending anything (and what the release step chooses
    by): RS on the private database is a deterministic function of the private data and is never
    shown (it goes to the custodian's audit log when a release is made).
    """
    from pimento.demo.hospital import DEMO_SQL_ORDERS, DEMO_SQL_PRESCRIPTION
    from pimento.mechanisms import mechanism_for
    from pimento.release.ask import open_synthetic
    from pimento.sensitivity import residual_sensitivity
    from pimento.sql import parse_count_query

    beta = mechanism_for(DEMO_EPSILON, DEMO_DELTA, share=ctx.database.settings.release.rs_bound_share).beta_float()
    out = []
    engine = open_synthetic(synthetic_path(ctx.path))
    try:
        for name, sql in (("prescription", DEMO_SQL_PRESCRIPTION), ("orders", DEMO_SQL_ORDERS)):
            query = parse_count_query(sql, ctx.database.catalog)
            result = residual_sensitivity(engine, query, ctx.database.catalog, beta)
            out.append(
                {
                    "name": name,
                    "synthetic_rs": result.rs_float,
                    "synthetic_ls": result.ls,
                    "k_star": result.k_star,
                    "synthetic_shapley": {k: round(v, 3) for k, v in result.shapley.items()},
                    "seconds": round(result.seconds, 3),
                }
            )
    finally:
        engine.close()
    return {"beta": beta, "epsilon": DEMO_EPSILON, "delta": DEMO_DELTA, "on": "synthetic copy", "formulations": out}


def show_sensitivity(data: dict[str, Any]) -> None:
    console.print(
        f"\n[bold]Residual sensitivity on the synthetic copy[/] (beta = {data['beta']:.4g}, for eps = {data['epsilon']}, "
        f"delta = {data['delta']}; the private RS is never shown)"
    )
    for f in data["formulations"]:
        print_labelled(f"[cyan]{f['name']}[/]:", f"RS = {f['synthetic_rs']:.4g} (local sensitivity {f['synthetic_ls']}, "
                       f"k* = {f['k_star']}); Shapley shares {f['synthetic_shapley']}")


def step_release(ctx: DemoContext) -> dict[str, Any]:
    """A private answer from a given SQL query: the formulation with the lower RS on the synthetic copy, charged to the ledger."""
    from pimento.demo.hospital import DEMO_QUESTION, DEMO_SQL_ORDERS, DEMO_SQL_PRESCRIPTION
    from pimento.release import Request, Session

    sens = {f["name"]: f["synthetic_rs"] for f in ctx.results.get("sensitivity", {}).get("formulations", [])}
    sql = DEMO_SQL_ORDERS if sens.get("orders", 0) <= sens.get("prescription", 1) else DEMO_SQL_PRESCRIPTION
    with Session(ctx.path, analyst=DEMO_ANALYST) as session:
        answer = session.answer(Request.for_sql(sql, epsilon=DEMO_EPSILON, delta=DEMO_DELTA))
    return answer.to_dict()


def show_release(data: dict[str, Any]) -> None:
    console.print("\n[bold]Private answer from SQL[/] (pimento sql; the formulation with the lower RS on the synthetic copy)")
    print_labelled("SQL:", data["sql"])
    cached = " (answer cache: same request, no new cost)" if data.get("cached") else ""
    console.print(
        f"  released: [bold green]{data['value']}[/], 95% interval [{data['interval'][0]}, {data['interval'][1]}], "
        f"{data['noise']} noise of scale at most {data['noise_scale_upper']:.4g} (a DP estimate; epsilon "
        f"{data['epsilon_noise']} to the count, {data['epsilon_rs_bound']} to the bound){cached}",
        highlight=False,
    )
    left = data["budget_left"]
    console.print(f"  budget left for analyst {DEMO_ANALYST!r}: eps {left['epsilon']}, delta {left['delta']}", highlight=False)


#: Budget of the demo's synthetic database (the paper's setting).
DEMO_EPSILON_SYN = "1.6"
DEMO_DELTA_SYN = "1e-6"


synthetic_path = default_synthetic_path  # where ``demo run`` keeps the synthetic copy of the demo database


def step_synth(ctx: DemoContext) -> dict[str, Any]:
    """The DP synthetic copy the search reads (made once; its spend is charged to the ledger once)."""
    from pimento.mechanisms.ledger import Ledger
    from pimento.synth import synthesize

    target = synthetic_path(ctx.path)
    if target.exists():
        return {"path": str(target), "built": False}
    settings = ctx.database.settings
    declared = settings.synth  # what the demo's pimento.toml declares public (see docs/synth.md)
    ledger = Ledger.for_database(str(ctx.path), settings)
    try:
        with StageProgress("demo synth", SYNTH_STAGES, quiet=ctx.quiet) as progress:  # pimento synth's display
            result = synthesize(
                ctx.database.engine, ctx.database.catalog, target, DEMO_EPSILON_SYN, DEMO_DELTA_SYN,
                root=settings.privacy.root, seed=ctx.seed, ledger=ledger, database=str(ctx.path),
                link_context=list(declared.link_context), public_values=list(declared.public_values),
                caps=dict(declared.caps) or None, progress=progress,
            )
    finally:
        ledger.close()
    result.engine.close()
    return {
        "path": str(target),
        "built": True,
        "epsilon": str(result.epsilon),
        "delta": str(result.delta),
        "seconds": round(result.seconds, 1),
        "rows": result.rows,
        "ledger_charge": result.ledger_charge,
    }


def show_synth(data: dict[str, Any]) -> None:
    if data["built"]:
        console.print(
            f"\n[bold]Synthetic database[/] {data['path']}: built in {data['seconds']} s at eps_syn = {data['epsilon']}, "
            f"delta_syn = {data['delta']} (charged once to the ledger)",
            highlight=False,
        )
    else:
        console.print(f"\n[bold]Synthetic database[/] {data['path']} (existing; its spend was charged when it was made)", highlight=False)


def step_translate(ctx: DemoContext) -> dict[str, Any]:
    """The question translated offline (no LLM): ranked candidates, values linked from the synthetic copy."""
    from pimento.demo.hospital import DEMO_QUESTION
    from pimento.nl import translate
    from pimento.nl.values import ValueIndex
    from pimento.release.ask import open_synthetic

    engine = open_synthetic(synthetic_path(ctx.path))
    try:
        values = ValueIndex.from_engine(engine, ctx.database.catalog)
        candidates = translate(DEMO_QUESTION, ctx.database.catalog, values=values, k=5)
    finally:
        engine.close()
    return {"question": DEMO_QUESTION, "candidates": [c.to_dict() for c in candidates]}


def show_translate(data: dict[str, Any]) -> None:
    console.print("\n[bold]Question to SQL, offline (no LLM)[/]: top candidates")
    for i, c in enumerate(data["candidates"], 1):
        print_labelled(f"{i}. ({c['score']:.2f})", c["sql"])


def step_ask(ctx: DemoContext) -> dict[str, Any]:
    """The question answered with DP: search on the synthetic copy, release of q* on the private data."""
    from pimento.demo.hospital import DEMO_QUESTION
    from pimento.release import Request, Session

    request = Request.for_question(DEMO_QUESTION, synthetic=synthetic_path(ctx.path), epsilon=DEMO_EPSILON, delta=DEMO_DELTA, k=10)
    with Session(ctx.path, analyst=DEMO_ANALYST) as session:
        answer = session.answer(request)
    data = answer.to_dict()
    data["alternatives"] = data["search"]["alternatives"][:8]
    return data


def show_ask(data: dict[str, Any]) -> None:
    console.print(f"\n[bold]Private answer to the question[/] (pimento ask, eps = {data['epsilon']}, delta = {data['delta']})")
    console.print(f"  {data['question']}", highlight=False)
    console.print(
        f"  released: [bold green]{data['value']}[/], 95% interval [{data['interval'][0]}, {data['interval'][1]}]",
        highlight=False,
    )
    console.print("  chosen SQL (lowest RS in the chosen answer cluster):", highlight=False)
    print_labelled("", data["chosen_sql"], indent=4)
    console.print(f"  its residual sensitivity on the synthetic copy: {data['synthetic_rs']:.4g}", highlight=False)
    if data.get("avoided_sql"):
        console.print("  avoided (offline top-1):", highlight=False)
        print_labelled("", data["avoided_sql"], indent=4)
    console.print("  formulations the search evaluated on the synthetic copy (answer, RS there):")
    for alt in data["alternatives"]:
        print_labelled(escape(f"[{alt['synthetic_answer']}, RS {alt['synthetic_rs']:.4g}]"), alt["sql"], indent=4)


def print_labelled(label: str, text: str, *, indent: int = 2, width: int | None = None, shell: bool = False) -> None:
    """``label`` then ``text`` (SQL, say) wrapped at spaces in its own column: at 80 columns a long query
    continues under itself instead of at the margin, and no word is ever cut (a word wider than the
    column overflows whole). ``label`` may hold Rich markup (an empty one puts the text at ``indent``);
    ``text`` is printed as it is. ``shell``: ``text`` is a shell command, wrapped between its words
    (never inside a quoted one) with `` \\`` ending every line but the last, so it can be pasted as shown."""
    import shlex
    import textwrap

    from rich.text import Text

    head = " " * indent + label + (" " if label else "")
    hang = Text.from_markup(head).cell_len
    continued = " \\" if shell else ""
    room = max((width or console.width) - hang - len(continued), 20)
    if shell:
        lines: list[str] = []
        for word in (shlex.quote(w) for w in shlex.split(text)):
            if lines and len(lines[-1]) + 1 + len(word) <= room:
                lines[-1] += " " + word
            else:
                lines.append(word)
    else:
        lines = textwrap.wrap(text, room, break_long_words=False, break_on_hyphens=False)
    lines = lines or [""]
    for i, line in enumerate(lines):
        tail = continued if i < len(lines) - 1 else ""
        if i == 0:
            console.print(Text.from_markup(head) + Text(line + tail), soft_wrap=True, highlight=False)
        else:
            console.print(" " * hang + line + tail, soft_wrap=True, highlight=False, markup=False)


def step_summary(ctx: DemoContext) -> dict[str, Any]:
    """What the run built and answered, the budget spent and left (the ledger's own summary), what to try next."""
    from pimento.mechanisms.ledger import Ledger

    location = str(ctx.path)
    with Ledger.for_database(location, ctx.database.settings) as ledger:
        budget = ledger.summary(location)
    analyst = next((a for a in budget["analysts"] if a["analyst"] == DEMO_ANALYST), None)
    synth = ctx.results.get("synth", {})
    answered = [name for name in ("release", "ask") if name in ctx.results]
    db = _shell_word(location)
    return {
        "database": location,
        "patients": ctx.results.get("database", {}).get("patients"),
        "config_path": str(ctx.path.parent / "pimento.toml"),
        "synthetic": synth.get("path"),
        "built": [name for name in ("database", "synth") if ctx.results.get(name, {}).get("built")],
        "answers": len(answered),
        "answered": answered,
        "analyst": DEMO_ANALYST,
        "analyst_budget": analyst,
        "database_budget": {"cap": budget["cap"], "spent": budget["spent"], "left": budget["left"]},
        "seconds": {name: round(s, 1) for name, s in ctx.seconds.items()},
        "next": [
            f"pimento ask {_shell_word(DEMO_NEXT_QUESTION)} --db {db} --epsilon 0.5 --delta 1e-6 --preview",
            f"pimento sql --db {db} --sql {_shell_word(DEMO_NEXT_SQL)} --epsilon 0.5 --analyst {DEMO_ANALYST}",
            f"pimento budget --db {db}",
            f"pimento audit show --db {db}",
            f"pimento serve --db {db}",
        ],
    }


#: The question and SQL the summary suggests trying next (not the demo's own: a new one costs budget).
DEMO_NEXT_QUESTION = "How many patients were prescribed warfarin?"
DEMO_NEXT_SQL = "SELECT COUNT(*) FROM Patient"


def _shell_word(text: str) -> str:
    import shlex

    return shlex.quote(text)


def show_summary(data: dict[str, Any]) -> None:
    console.print("\n[bold]Summary[/]")

    def row(label: str, text: str) -> None:
        print_labelled(f"{label:<10}" if label else " " * 10, text)

    patients = f", {data['patients']:,} patients" if data.get("patients") is not None else ""
    verb = "built now" if "database" in data["built"] else "existing"
    row("database", f"{data['database']} ({verb}{patients}); its settings: {data['config_path']}")
    if data.get("synthetic"):
        verb = "built now" if "synth" in data["built"] else "existing"
        row("synthetic", f"{data['synthetic']} ({verb}; the search reads only this copy)")
    answered = {"release": "one from SQL", "ask": "one from the question"}
    row("answered", f"{data['answers']} private answers for analyst {data['analyst']!r} "
        f"({', '.join(answered.get(a, a) for a in data['answered']) or 'none'}; a repeated request is answered "
        "from the cache at no new cost)")
    who = data.get("analyst_budget")
    if who is not None:
        row("budget", f"analyst {data['analyst']!r}: spent {_pair(who['spent'])}; left {_pair(who['left'])}")
    whole = data["database_budget"]
    row("", f"whole database (with the synthetic copy's charge): spent {_pair(whole['spent'])}; left {_pair(whole['left'])}")
    total = sum(data["seconds"].values())
    slow = max(data["seconds"].items(), key=lambda kv: kv[1], default=None)
    if slow is not None:
        row("time", f"{total:.0f} s in all ({slow[0]} {slow[1]:.0f} s); a second run reuses both databases")
    console.print("  [bold]next[/]:")
    for command in data["next"]:
        print_labelled("", command, indent=4, shell=True)


def _pair(b: dict[str, Any] | None) -> str:
    return "-" if b is None else f"epsilon {b['epsilon']}, delta {b['delta']}"


#: The steps of ``pimento demo run``, in order.
RUN_STEPS: list[DemoStep] = [
    DemoStep("database", step_database, show_database, "the demo database (built once)"),
    DemoStep("catalog", step_catalog, show_catalog, "its catalog"),
    DemoStep("question", step_question, show_question, "the demo question on the private data"),
    DemoStep("parse", step_parse, show_parse, "parsing its two formulations"),
    DemoStep("synth", step_synth, show_synth, "the DP synthetic copy (built once; a few minutes)"),
    DemoStep("sensitivity", step_sensitivity, show_sensitivity, "residual sensitivity on the synthetic copy"),
    DemoStep("release", step_release, show_release, "a private answer from SQL"),
    DemoStep("translate", step_translate, show_translate, "the question to SQL, offline"),
    DemoStep("ask", step_ask, show_ask, "the question answered privately (search on the synthetic copy)"),
    DemoStep("summary", step_summary, show_summary, "summary"),
]


def run_steps(ctx: DemoContext, steps: list[DemoStep] | None = None, *, show: bool = True) -> dict[str, Any]:
    """Run ``steps`` (default :data:`RUN_STEPS`) in order; each result is kept in ``ctx.results``.

    Unless ``ctx.quiet``, a line on stderr says which step runs ("[5/10] the DP synthetic copy ..."),
    so that a step of minutes never leaves the screen silent; the long ones show progress as well.
    """
    import time

    chosen = steps if steps is not None else RUN_STEPS
    try:
        for i, step in enumerate(chosen, 1):
            if not ctx.quiet:
                err_console.print(f"[dim]demo [{i}/{len(chosen)}] {escape(step.title or step.name)} ...[/]", highlight=False, soft_wrap=True)
            started = time.perf_counter()
            ctx.results[step.name] = step.run(ctx)
            ctx.seconds[step.name] = time.perf_counter() - started
            if show:
                step.show(ctx.results[step.name])
    finally:
        ctx.close()
    return ctx.results


# --------------------------------------------------------------------------- helpers


def _row_count(ctx: DemoContext, table: str) -> int:
    return int(ctx.database.engine.execute(f'SELECT COUNT(*) FROM "{table}"').rows[0][0])


def _check_patients(patients: int | None) -> None:
    if patients is not None and patients <= 0:
        raise UserError(f"--patients must be a positive number, not {patients}")


def _build(path: Path, *, patients: int, seed: int, overwrite: bool, quiet: bool):
    """create_demo with progress on stderr (one tick per table; :class:`StageProgress`, as ``pimento synth``) unless ``quiet``."""
    from pimento.demo.hospital import create_demo

    label = f"building the demo database ({patients:,} patients)"
    with StageProgress("demo", {"build": label}, quiet=quiet) as report:
        return create_demo(path, patients=patients, seed=seed, overwrite=overwrite,
                           progress=lambda _table, done, total: report("build", done, total))


# --------------------------------------------------------------------------- commands


@handle_errors
def create_cmd(
    patients: int = typer.Option(DEFAULT_PATIENTS, "--patients", help="Number of patients; other tables scale with it."),
    seed: int = typer.Option(0, "--seed", min=0, help="Seed of the generator: same seed and size, same database."),
    out: Path = typer.Option(DEFAULT_OUT, "--out", help="DuckDB file to write; pimento.toml is written beside it."),
    force: bool = typer.Option(False, "--force", help="Replace an existing database (and its pimento.toml)."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Build the demo hospital database and its pimento.toml."""
    _check_patients(patients)
    from pimento.demo.hospital import check_target

    check_target(out, overwrite=force)  # fail before the progress bar starts
    info = _build(out, patients=patients, seed=seed, overwrite=force, quiet=json_out)
    if json_out:
        emit_json(info.to_dict())
        return
    table = Table(title=f"{info.path} ({info.seconds:.1f} s)")
    table.add_column("relation")
    table.add_column("rows", justify="right")
    for name, rows in info.rows.items():
        table.add_row(name, f"{rows:,}")
    console.print(table)
    console.print(f"settings: {info.config_path}; next: pimento demo run --out {info.path}", highlight=False)


@handle_errors
def run_cmd(
    out: Path = typer.Option(DEFAULT_OUT, "--out", help="The demo database (built first if missing)."),
    patients: int = typer.Option(None, "--patients", help=f"Patients when building (default {DEFAULT_PATIENTS:,})."),
    seed: int = typer.Option(0, "--seed", min=0, help="Seed when building."),
    from_corpus: bool = typer.Option(
        False, "--from-corpus",
        help=f"Build the database from text: narrate the demo hospital into corpus/ beside --out (default "
        f"{DEFAULT_CORPUS_PATIENTS:,} patients), ingest it offline, then run the demo on the rebuilt database.",
    ),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Walk through the paper's example: build the demo database and its DP synthetic copy if missing
    (a few minutes the first time), show the catalog, the demo question and its two formulations, their
    residual sensitivity on the copy, a private answer from SQL and one from the question, then a summary
    (what was built and where, the answers, the budget spent and left, commands to try next).

    Each step is announced on stderr, with progress for the long ones; stdout holds the report (or
    the JSON document with --json, which prints nothing else)."""
    _check_patients(patients)
    if out.is_dir():
        raise UserError(f"{out} is a directory", hint="give the path of the demo database file")
    ctx = DemoContext(out, patients=patients, seed=seed, quiet=json_out, from_corpus=from_corpus)
    results = run_steps(ctx, show=not json_out)
    if json_out:
        emit_json(results)


def register(app: typer.Typer) -> None:
    """Add this module's commands to ``app`` (wiring only: the commands are the module-level functions above)."""
    demo = typer.Typer(
        help="The demo hospital database (synthetic, seeded) and a walk through the paper's example.",
        no_args_is_help=True,
    )
    app.add_typer(demo, name="demo")
    demo.command("create")(create_cmd)
    demo.command("run")(run_cmd)
