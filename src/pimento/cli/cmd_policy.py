"""``pimento policy compile | extract | explain | show``: compile a CI policy file into checked SQL views,
and explain a CI answer to the custodian (``explain`` shows private data and is audited)."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from pimento.cli._checks import require_database, require_path
from pimento.cli._common import console, emit_json, err_console, handle_errors
from pimento.errors import PolicyError

__all__ = ["compile_cmd", "explain_cmd", "extract_cmd", "register", "show_cmd"]


@handle_errors
def compile_cmd(
    policy: str = typer.Argument(..., help="Structured policy file (YAML), or 'example:hospital_hipaa'."),
    db: str = typer.Option(..., "--db", help="Database the policy is grounded in (DuckDB file, ...)."),
    out: str = typer.Option(None, "--out", help="Write the compiled policy (JSON) here."),
    config: str = typer.Option(None, "--config", help="pimento.toml to use (default: the one beside --db)."),
    json_out: bool = typer.Option(False, "--json", help="Print the check report as JSON."),
    timeout: float = typer.Option(None, "--timeout", min=1,
                                  help="Per-statement time limit of the checks, seconds (default: the "
                                       "database's [database] timeout_s)."),
    quiet: bool = typer.Option(False, "--quiet", help="No progress lines on stderr."),
    drop_open_questions: bool = typer.Option(
        False, "--drop-open-questions",
        help="Compile an extracted draft that still has open review questions: only its clauses extracted "
             "without doubt; the held ones are not enforced (fail closed)."),
) -> None:
    """Custodian tool: shows private data. Compile POLICY to SQL views over DB and run the
    checks (coverage, redundancy, satisfiability, information implication, unresolved
    subjects); the report names witness flows and counts cells of the private database,
    and the compiled JSON stores it. Every use is written to the audit log."""
    if not policy.startswith("example:"):
        require_path(policy, "POLICY", "policy file", PolicyError)
    require_database(db)
    from pimento.engines.database import load_database
    from pimento.policy import compile_policy, example_policy_path, load_policy, run_checks

    path = example_policy_path(policy.split(":", 1)[1]) if policy.startswith("example:") else policy
    parsed = _load_reviewed(path, drop_open_questions)
    database = load_database(db, config=config)
    import time

    started = time.perf_counter()

    def progress(text: str) -> None:
        if not quiet:
            err_console.print(f"[dim]{time.perf_counter() - started:6.1f} s  {escape(text)}[/]", highlight=False)

    try:
        if timeout is not None and hasattr(database.engine, "timeout_s"):
            database.engine.timeout_s = timeout
        progress(f"compiling {parsed.name} ({len(parsed.norms)} clauses)")
        compiled = compile_policy(parsed, database.catalog, database.engine)
        compiled = run_checks(compiled, database.catalog, database.engine, policy=parsed, progress=progress)  # the checked policy
        report = compiled.checks_report()
        progress("done")
        _audit(database, "policy compile", {"policy": parsed.name, "source": str(path), "out": out})
    finally:
        database.close()
    if out:
        Path(out).write_text(json.dumps(compiled.to_dict(), indent=2, default=str) + "\n", encoding="utf-8")
    if json_out:
        emit_json({"policy": parsed.name, "out": out, "norms": len(compiled.norms), "checks": report})
    else:
        _show_checks(parsed.name, compiled, report, out)


def _load_reviewed(path: str, drop_open_questions: bool):
    """The policy at ``path``; an extracted draft with open review questions is refused, or with
    ``drop_open_questions`` read without its held clauses."""
    import yaml

    from pimento.policy import load_policy
    from pimento.policy.model import policy_from_dict
    from pimento.policy.review import require_reviewed

    try:
        raw = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return load_policy(path)  # load_policy names the problem
    if isinstance(raw, dict) and "review" in raw:
        if not drop_open_questions:
            require_reviewed(raw, source=str(path))
        return policy_from_dict({k: v for k, v in raw.items() if k != "review"}, source=str(path))
    return load_policy(path)


@handle_errors
def extract_cmd(
    text_path: str = typer.Argument(..., help="Natural-language policy text (UTF-8 file)."),
    db: str = typer.Option(..., "--db", help="Database whose schema the norms are grounded in."),
    llm: str = typer.Option(None, "--llm", help="Extract with an LLM instead of the offline rules: "
                                                "http(s)://.../v1, replay:DIR, or 'env' for PIMENTO_LLM_URL."),
    out: str = typer.Option(..., "--out", help="Write the structured policy (YAML) here, for review."),
    name: str = typer.Option(None, "--name", help="Policy name (default: the text file's stem)."),
    subject: str = typer.Option(None, "--subject", help="Table of the data subjects (default: inferred from the clauses)."),
    synthetic: str = typer.Option(None, "--synthetic", help="Synthetic database: its values may appear in LLM "
                                                            "prompts; offline, role and purpose values are read from it "
                                                            "instead of --db."),
    config: str = typer.Option(None, "--config", help="pimento.toml to use (default: the one beside --db)."),
    json_out: bool = typer.Option(False, "--json", help="Print the per-clause result as JSON."),
    review: bool = typer.Option(False, "--review", help="Review the open questions now (confirm, edit or drop "
                                                         "each); --out then gets the reviewed policy."),
    review_file: str = typer.Option(None, "--review-file", help="Answers to the open questions (JSON: "
                                                                 "{question id: 'confirm' | 'drop' | {'edit': ...}}), "
                                                                 "non-interactive; implies --review."),
    vocabulary: str = typer.Option(None, "--vocabulary", help="Declared data vocabulary (YAML/JSON: "
                                                               "{phrase: ['Table.column', ...]}), offline only; merged "
                                                               "with pimento.toml's [vocabulary], this file's columns "
                                                               "taking precedence for a phrase both declare."),
) -> None:
    """Extract norms from policy text, sentence by sentence, ground them in DB's schema and
    write the structured YAML for review. Default: offline rules (no LLM, no network); with
    --llm, an LLM proposes and the compiler validates. Offline, a permit whose data or condition
    cannot be grounded precisely is held as an open question: the draft cannot be compiled until
    --review (or --review-file, or the custodian's web page /custodian/policy/review) answers every
    question. Offline, a data phrase declared in pimento.toml's [vocabulary] or in --vocabulary is
    grounded to exactly its columns."""
    if not Path(text_path).is_file():
        raise PolicyError(f"policy text not found: {text_path}")
    require_database(db)
    from pimento.engines import open_engine
    from pimento.engines.database import load_database
    from pimento.llm import SyntheticValues, Usage, open_backend
    from pimento.policy.extract import extract
    from pimento.policy.extract_offline import categorical_values

    p = Path(text_path)
    if not p.is_file():
        raise PolicyError(f"policy text not found: {text_path}")
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise PolicyError(f"{text_path}: not UTF-8 text") from None
    usage = Usage()
    database = load_database(db, config=config)
    try:
        values = None
        categorical = None
        if synthetic:
            synth = open_engine(synthetic)
            try:
                if llm:
                    values = SyntheticValues.from_engine(synth)
                else:
                    categorical = categorical_values(synth, database.catalog)
            finally:
                getattr(synth, "close", lambda: None)()
        declared = None if llm else _declared_vocabulary(database, config, vocabulary)
        backend = open_backend(database.settings.llm, url=None if llm == "env" else llm) if llm else None
        try:
            result = extract(text, database.catalog, backend, engine=database.engine, name=name or p.stem,
                             values=values, subject_principal=subject, usage=usage, categorical=categorical,
                             vocabulary=declared)
        finally:
            getattr(backend, "close", lambda: None)()
    finally:
        database.close()
    reviewed = None
    if review or review_file:
        reviewed = _review(result.draft(), review_file)
        import yaml

        Path(out).write_text("# Extracted by `pimento policy extract` and reviewed by the custodian.\n"
                             + yaml.safe_dump(reviewed, sort_keys=False, allow_unicode=True, width=100),
                             encoding="utf-8")
    else:
        Path(out).write_text(result.to_yaml(), encoding="utf-8")
    method = "llm" if llm else "offline"
    questions = [] if reviewed is not None else _questions(result.draft())
    if json_out:
        emit_json({"out": out, "method": method, "norms": len((reviewed or result.policy)["norms"]),
                   "clauses": result.clauses, "not_extracted": result.failures, "usage": usage.to_dict(),
                   "open_questions": questions, "reviewed": reviewed is not None})
        return
    for note in result.clauses:
        if note["norm"] is None:
            what = "not a norm (skipped)"
        elif method == "llm":
            what = f"{note['norm']['sign']} {note['norm']['data_type']} -> {note['norm']['recipient_role']}"
        else:
            n = note["norm"]
            what = f"{n['sign']} {', '.join(n['data'])} -> {n['recipient']} for {n['purpose']}"
        console.print(f"[green]{note['clause']}[/]: {escape(what)}", highlight=False, markup=True)
    if method == "offline":
        for f in result.failures:
            err_console.print(f"[yellow]not extracted[/] {f['clause']}: {escape(f['error'])}", highlight=False)
        for q in questions:
            err_console.print(f"[yellow]open question[/] {q['id']} ({'advisory ' if q.get('advisory') else ''}"
                              f"{q['kind']} {q['phrase']!r}): "
                              f"{escape(q['reason'])}", highlight=False)
    requests = f"{usage.requests} LLM requests, {usage.repairs} repairs" if method == "llm" else "offline rules"
    if questions:
        advisory = sum(1 for q in questions if q.get("advisory"))
        label = f" ({advisory} advisory: their permits are in the draft as read)" if advisory else ""
        console.print(f"draft with {len(questions)} open question(s){label} written to {out}; the clauses they hold "
                      f"are not enforced: answer them with `pimento policy extract {text_path} --db {db} --out "
                      "P.yaml --review`", highlight=False, markup=False)
    console.print(f"{len((reviewed or result.policy)['norms'])} norms written to {out} "
                  f"({requests}): review it, then "
                  f"`pimento policy compile {out} --db {db}`", highlight=False, markup=False)


@handle_errors
def explain_cmd(
    db: str = typer.Option(..., "--db", help="Database (the one the policy was compiled against)."),
    policy: str = typer.Option(..., "--policy", help="Compiled policy (JSON from `pimento policy compile`)."),
    sender: str = typer.Option(..., "--sender", help="Sender identity, KIND:ID (e.g. employee:10)."),
    recipient: str = typer.Option(..., "--recipient", help="Recipient (querier) identity, KIND:ID."),
    purpose: str = typer.Option(..., "--purpose", help="Declared purpose (a value listed in the policy)."),
    sql: str = typer.Option(..., "--sql", help="The analyst query to explain."),
    cells: int = typer.Option(20, "--cells", min=0, help="Also list up to N governed cells (values, deciding norms)."),
    config: str = typer.Option(None, "--config", help="pimento.toml to use (default: the one beside --db)."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Custodian tool: shows private data. Explains a CI answer: the norms that decided,
    how many cells each permitted or denied, and governed cells with their values (denied
    ones included). Every use is written to the audit log. Never give its output to an analyst."""
    require_path(policy, "--policy", "compiled policy", PolicyError)
    require_database(db)
    from pimento.engines.database import load_database
    from pimento.policy import Enforcer, load_compiled_policy

    compiled = load_compiled_policy(policy)
    database = load_database(db, config=config)
    try:
        enforcer = Enforcer(compiled, database.engine, database.catalog)
        context = enforcer.context(sender, recipient, purpose, verify=True)
        explanation = enforcer.explain(context, sql, cells=cells)
        _audit(database, "policy explain", {
            "policy": compiled.name, "sender": str(context.sender), "recipient": str(context.recipient),
            "purpose": context.purpose, "sql": sql, "cells": cells,
        })
    finally:
        database.close()
    payload = explanation.to_dict()
    if json_out:
        emit_json(payload)
        return
    err_console.print("[bold yellow]custodian tool: this output shows private data[/]", highlight=False)
    ctx = payload["context"]
    console.print(f"[bold]{ctx['sender']} -> {ctx['recipient']}[/] for {ctx['purpose']}: relevant norms "
                  f"{', '.join(payload['relevant_norms']) or 'none'}", highlight=False)
    decided = Table(title="Decisions per column (cells)")
    for h in ("column", "norm", "sign", "cells"):
        decided.add_column(h)
    for d in payload["decided"]:
        decided.add_row(f"{d['relation']}.{d['attribute']}", d["norm"], d["sign"], str(d["cells"]))
    console.print(decided)
    if payload["cells"]:
        table = Table(title=f"First {len(payload['cells'])} governed cells")
        for h in ("cell", "value", "permitted by", "prohibited by", "authorized"):
            table.add_column(h)
        for c in payload["cells"]:
            closed = set(c["failed_closed_by"])
            denied = ", ".join(n + (" (fail closed)" if n in closed else "") for n in c["prohibited_by"])
            table.add_row(f"{c['relation']}.{c['attribute']}[{c['row_key']}]", escape(str(c["value"])),
                          ", ".join(c["permitted_by"]), denied, "yes" if c["authorized"] else "no")
        console.print(table)


@handle_errors
def show_cmd(
    compiled_path: str = typer.Argument(..., help="A compiled policy (JSON from `pimento policy compile`)."),
    norm: str = typer.Option(None, "--norm", help="Show the SQL views of this clause only."),
    config: str = typer.Option(None, "--config", help="pimento.toml whose [policy] acknowledge_observable_denials "
                                                      "marks the observable denials acknowledged."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Show the norms, views and check results of a compiled policy, and its observable denials
    (acknowledged or not, with --config; `pimento serve` refuses one that is not)."""
    require_path(compiled_path, "COMPILED_PATH", "compiled policy", PolicyError)
    from pimento.policy import load_compiled_policy

    compiled = load_compiled_policy(compiled_path)
    if norm is not None:
        compiled.norm(norm)
    denials = _observable(compiled, config, norm)
    if json_out:
        data = compiled.to_dict()
        if norm is not None:
            data = {"norm": compiled.norm(norm).to_dict(), "views": data["views"][norm]}
        emit_json({**data, "observable_denials": denials})
        return
    table = Table(title=f"Policy {compiled.name}", show_lines=True)
    for heading in ("clause", "sign", "sender -> recipient", "subject", "data", "purpose", "condition"):
        table.add_column(heading)
    for n in compiled.norms:
        if norm is not None and n.id != norm:
            continue
        d = n.to_dict()
        cond = json.dumps(d["condition"]) + ("" if d["when"] is True else f" when {json.dumps(d['when'])}")
        table.add_row(n.id, n.sign, f"{n.sender} -> {n.recipient}", n.subject, ", ".join(n.data), n.purpose, cond)
    console.print(table)
    _show_observable(denials)
    if norm is not None:
        for name, sql in compiled.views(norm).items():
            console.print(f"[bold]{name}[/]", highlight=False)
            console.print(sql, highlight=False, markup=False)


def _declared_vocabulary(database, config: str | None, path: str | None) -> dict[str, list[str]] | None:
    """pimento.toml's ``[vocabulary]`` merged with the ``--vocabulary`` file (the file first for a phrase of
    both), every column checked against the database's schema; errors name the file and the phrase."""
    from pimento.config import CONFIG_FILE_NAME
    from pimento.policy.vocabulary import check_vocabulary, merge_vocabularies

    toml = config or str(Path(database.settings.base_dir) / CONFIG_FILE_NAME)
    declared = check_vocabulary(database.settings.vocabulary, database.catalog, source=toml, config=True)
    given = _read_vocabulary(path)
    if given is not None:
        given = check_vocabulary(given, database.catalog, source=str(path))
    return merge_vocabularies(declared, given)


def _read_vocabulary(path: str | None) -> dict | None:
    """The declared vocabulary file: ``{phrase: [Table.column, ...]}``."""
    if path is None:
        return None
    import yaml

    require_path(path, "--vocabulary", "vocabulary file", PolicyError)
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise PolicyError(f"{path}: not YAML or JSON: {exc}") from None
    if not isinstance(data, dict) or not all(isinstance(v, list) and v for v in data.values()):
        raise PolicyError(f"{path}: a vocabulary maps each phrase to a list of 'Table.column'",
                          hint='e.g. {"academic record": ["Grade.score", "Transcript.gpa"]}')
    return {str(k): [str(c) for c in v] for k, v in data.items()}


def _questions(draft: dict) -> list[dict]:
    from pimento.policy.review import open_questions

    return open_questions(draft)


def _proposal_text(q: dict) -> str:
    """A question's proposal as the prompt shows it: columns, "any purpose", or a role (``Table where ...``)."""
    if q["kind"] == "purpose":
        return "any purpose" if q["proposal"] == "any" else str(q["proposal"])
    if q["kind"] == "role":
        p = q["proposal"]
        return f"{p['principal']} where {p['where']}" if p.get("where") else f"{p['principal']} (every row)"
    return ", ".join(f"{x['relation']}.{x['attribute']}" for x in q["proposal"])


def _review(draft: dict, review_file: str | None) -> dict:
    """The reviewed policy: answers from ``review_file`` (JSON), else asked one by one."""
    from pimento.policy.review import apply_review, holds_norm, open_questions

    if review_file is not None:
        require_path(review_file, "--review-file", "review answers", PolicyError)
        try:
            answers = json.loads(Path(review_file).read_text(encoding="utf-8"))
        except ValueError as exc:
            raise PolicyError(f"{review_file}: not JSON: {exc}") from None
        if not isinstance(answers, dict):
            raise PolicyError(f"{review_file}: answers are a JSON object {{question id: answer}}")
        return apply_review(draft, answers)
    answers = {}
    for q in open_questions(draft):
        console.print(f"\n[bold]{q['id']}[/] (clause {q['clause']}): {escape(q['source'])}", highlight=False)
        kind = f"role ({q.get('var')})" if q["kind"] == "role" else q["kind"]
        console.print(f"  {kind} {q['phrase']!r}: {escape(q['reason'])}", highlight=False)
        if q.get("proposal"):
            console.print(f"  proposal: {escape(_proposal_text(q))}", highlight=False)
        if q["kind"] == "role" and q.get("principals"):
            console.print(f"  tables an edit may name: {escape(', '.join(q['principals']))}", highlight=False)
        if q["kind"] == "purpose" and q.get("options"):
            console.print(f"  purposes the text names: {escape(', '.join(q['options']))}", highlight=False)
        if not holds_norm(q):
            console.print(f"  advisory: enforced as {escape(_proposal_text(q))} unless you narrow it (edit) "
                          "or drop it", highlight=False)
        choices = ["confirm", "edit", "drop"] if q.get("proposal") else ["edit", "drop"]
        default = "drop" if holds_norm(q) else "confirm"  # an advisory question's default is what the draft enforces
        action = typer.prompt(f"  {'/'.join(choices)}", default=default)
        while action not in choices:
            action = typer.prompt(f"  one of {'/'.join(choices)}", default=default)
        if action == "edit":
            what = {"data": "columns (Table.column, comma-separated)", "condition": "SQL SELECT",
                    "purpose": "purposes the permit holds for (comma-separated)",
                    "role": "the role: Table, or Table where col = 'value'"}[q["kind"]]
            value = typer.prompt(f"  {what}")
            answers[q["id"]] = {"edit": value if q["kind"] in ("condition", "role")
                                else [v.strip() for v in value.split(",") if v.strip()]}
        else:
            answers[q["id"]] = action
    return apply_review(draft, answers)


def register(app: typer.Typer) -> None:
    """Add this module's commands to ``app`` (wiring only: the commands are the module-level functions above)."""
    policy_app = typer.Typer(help="Contextual-integrity policies: compile to SQL views, inspect, explain "
                                  "(compile and explain are custodian tools: they show private data).",
                             no_args_is_help=True)
    app.add_typer(policy_app, name="policy")
    policy_app.command("compile")(compile_cmd)
    policy_app.command("extract")(extract_cmd)
    policy_app.command("explain")(explain_cmd)
    policy_app.command("show")(show_cmd)


def _observable(compiled, config: str | None, norm: str | None) -> list[dict]:
    """The policy's observable denials (of ``norm`` only, if given); ``acknowledged`` per the pimento.toml
    ``config`` names, None without one."""
    from pimento.config import load_settings
    from pimento.policy.observable import observable_denials, with_acknowledgement

    denials = [d for d in observable_denials(compiled) if norm is None or d["norm"] == norm]
    if config is None:
        return [{**d, "acknowledged": None} for d in denials]
    return with_acknowledgement(denials, load_settings(config).policy.acknowledge_observable_denials)


def _show_observable(denials: list[dict]) -> None:
    if not denials:
        console.print("[green]observable denials[/]: none (every filtered denial withholds its whole row)")
    for d in denials:
        state = {True: "acknowledged", False: "[red]not acknowledged[/]: `pimento serve` refuses the policy",
                 None: "acknowledgement not checked (pass --config)"}[d["acknowledged"]]
        console.print(f"[yellow]observable denial[/] {escape(d['id'])}: withheld on the rows passing its filter while "
                      f"{escape(', '.join(d['visible_through']))} leave {escape(', '.join(d['columns']))} visible; {state}",
                      highlight=False)


def _audit(database, tool: str, details: dict) -> None:
    """Record a custodian tool's use in the audit log of the database's ledger (before any output)."""
    from pimento.mechanisms import Ledger

    ledger = Ledger.for_database(str(database.location), database.settings)
    try:
        ledger.record_custodian_action(str(database.location), tool, details)
    finally:
        ledger.close()


def _show_checks(name: str, compiled, report: dict, out: str | None) -> None:
    console.print(f"[bold]policy {name}[/]: {len(compiled.norms)} norms compiled", highlight=False)
    console.print(f"[green]coverage[/]: every clause compiled ({report['coverage']['clauses']} clauses)")
    impl = report["information_implication"]
    if impl:
        for item in impl:
            over = f"; overrides permits of {', '.join(item['overrides_permits_of'])}" if item["overrides_permits_of"] else ""
            console.print(f"[yellow]implication[/]: {item['norm']} now also governs {item['location']} "
                          f"({item['because']}){over}", highlight=False)
    else:
        console.print("[green]implication[/]: nothing to add")
    merged = report["redundancy"]["merged"]
    for kind, pairs in merged.items():
        for a, b in pairs.items():
            console.print(f"[yellow]redundancy[/]: {kind[:-1]} {a} merged into {b}", highlight=False)
    for eq in report["redundancy"]["equivalent_on_data"]:
        console.print(f"[yellow]redundancy[/]: {eq['kind']} views {' and '.join(eq['views'])} return the same "
                      f"{eq['rows']} rows on this database (not merged)", highlight=False)
    sat = report["satisfiability"]
    for nid, w in sat["witnesses"].items():
        console.print(f"[green]satisfiable[/]: {nid} permits e.g. {w['sender']} -> {w['recipient']} for "
                      f"{w['purpose']}: {w['cell']['relation']}.{w['cell']['attribute']}[{w['cell']['row_key']}]",
                      highlight=False)
    for nid, why in sat["unsatisfied"].items():
        console.print(f"[red]no flow[/]: {nid}: {why}", highlight=False)
    for c in sat["contradictions"]:
        console.print(f"[red]contradiction[/]: {c['reason']}", highlight=False)
    for o in report.get("observable_denials", []):
        console.print(f"[yellow]observable denial[/] {o['id']}: {o['norm']} withholds {o['location']} on the rows "
                      f"passing its filter; where {', '.join(o['visible_through'])} make such a row visible through "
                      f"{', '.join(o['columns'])}, the withheld cell shows that the row passes the filter (`pimento serve` "
                      "refuses the policy unless [policy] acknowledge_observable_denials lists it)", highlight=False)
    for u in report.get("unresolved_subjects", []):
        count = "every cell" if u["cells"] is None else f"{u['cells']} cell(s)"
        console.print(f"[yellow]fail closed[/]: {u['norm']} ({u['sign']}) cannot be evaluated on {count} of "
                      f"{u['location']} ({u['reason']}): {u['effect']}", highlight=False)
    if out:
        console.print(f"written to {out}", highlight=False)
