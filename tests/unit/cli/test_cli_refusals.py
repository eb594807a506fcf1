"""Every refusal of bad arguments answers at once (issue 28, item 2): before anything heavy is imported,
and a database that does not exist is named as missing by every command that reads one.

No wall-clock assert: each refusal runs in a child of one fresh interpreter (forked after importing the
CLI, so every child starts from the modules `pimento --help` needs) and the test asserts which modules
the refusal imported. The heavy ones were chosen by measuring `python -X importtime -c "import X"`
(2 cores, Python 3.11; the CLI itself imports in about 0.35 s): JAX/mbi about 1.2 s, the synthesizer
1.2 s, FastAPI 0.35 s, the search 0.3 s (sqlglot), SciPy 0.2 s, sqlglot 0.17 s, DuckDB 0.13 s,
NumPy 0.09 s, the configuration (its pydantic models) 0.15 s, Pygments (Rich's Syntax) 0.06 s. pydantic itself
is not in the list: Typer imports it to run any command. `python -m benchmarks.cli_startup` has the wall
times (docs/benchmarks.md).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

#: Modules a refusal of bad arguments must not import (see the module docstring for the figures).
HEAVY = (
    "jax", "mbi", "duckdb", "numpy", "scipy", "sqlglot", "fastapi", "uvicorn", "pygments",
    "pimento.search", "pimento.synth", "pimento.engines.database", "pimento.mechanisms", "pimento.config",
    "pimento.release.session", "pimento.service",
)

#: Imports the CLI once, then runs each case (JSON lines on stdin) in a forked child with CliRunner and
#: prints, per case, its exit code, stderr, stdout and the heavy modules loaded.
_RUNNER = r"""
import json, os, sys
HEAVY = tuple(json.loads(sys.argv[1]))
from typer.testing import CliRunner
from pimento.cli.app import app
baseline = [m for m in HEAVY if m in sys.modules]
print(json.dumps({"baseline": baseline}), flush=True)
for line in sys.stdin:
    args = json.loads(line)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        r = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
        out = {"args": args, "exit": r.exit_code, "stderr": r.stderr, "stdout": r.stdout,
               "heavy": [m for m in HEAVY if m in sys.modules]}
        with os.fdopen(write, "w") as f:
            f.write(json.dumps(out))
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as f:
        data = f.read()
    os.waitpid(pid, 0)
    print(data, flush=True)
"""


def run_cases(cases: list[list[str]], cwd: Path) -> tuple[list[str], list[dict]]:
    """(heavy modules imported by the CLI itself, one result per case), all in one fresh interpreter."""
    proc = subprocess.run(
        [sys.executable, "-c", _RUNNER, json.dumps(HEAVY)], input="".join(json.dumps(c) + "\n" for c in cases),
        capture_output=True, text=True, cwd=cwd, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    return lines[0]["baseline"], lines[1:]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A folder with an existing (empty) file where a database must exist and one named nowhere."""
    root = tmp_path_factory.mktemp("refusals")
    (root / "exists.duckdb").write_bytes(b"")
    (root / "text.txt").write_text("Nurses may see the diagnosis for treatment.\n")
    (root / "compiled.json").write_text("{}")
    return root


def _missing_db_cases(root: Path) -> dict[str, list[str]]:
    """Every command that reads an existing database, called with ``--db`` naming none."""
    m = str(root / "typo.duckdb")
    q = "SELECT COUNT(*) FROM Patient"
    return {
        "sql": ["sql", "--db", m, "--sql", q, "--epsilon", "1"],
        "ask": ["ask", "How many patients?", "--db", m, "--epsilon", "1"],
        "search": ["search", "How many patients?", "--db", m],
        "synth": ["synth", "--db", m, "--out", str(root / "new.duckdb"), "--epsilon", "1", "--delta", "1e-6"],
        "catalog": ["catalog", "--db", m],
        "parse": ["parse", "--db", m, "--sql", q],
        "sensitivity": ["sensitivity", "--db", m, "--sql", q, "--beta", "0.1"],
        "authorize": ["authorize", "--db", m, "--sender", "a:1", "--recipient", "b:2", "--purpose", "p", "--sql", q],
        "translate": ["translate", "How many patients?", "--db", m],
        "policy compile": ["policy", "compile", "example:hospital_hipaa", "--db", m],
        "policy extract": ["policy", "extract", str(root / "text.txt"), "--db", m, "--out", str(root / "p.yaml")],
        "policy explain": ["policy", "explain", "--db", m, "--policy", str(root / "compiled.json"), "--sender", "a:1",
                           "--recipient", "b:2", "--purpose", "p", "--sql", q],
        "keys add": ["keys", "add", "--db", m, "--analyst", "ann"],
        "keys list": ["keys", "list", "--db", m],
        "keys revoke": ["keys", "revoke", "--db", m, "--id", "k1"],
        # The commands below are not in this module's files (budget, audit, serve): named as missing, but
        # through the ledger/deployment modules, which import the engines first (see test below).
        "budget": ["budget", "--db", m],
        "audit verify": ["audit", "verify", "--db", m],
        "audit show": ["audit", "show", "--db", m],
        "audit resume": ["audit", "resume", "--db", m],
    }


#: Commands whose missing-database refusal still imports heavy modules (their files are not the CLI's
#: cheap-check path yet: pimento.cli._ledger_common imports the engines at its top).
_NOT_YET_LIGHT: set[str] = set()


def test_every_command_names_a_missing_database_at_once(files):
    cases = _missing_db_cases(files)
    before = sorted(p.name for p in files.rglob("*"))
    baseline, results = run_cases(list(cases.values()), files)
    assert baseline == [], f"`pimento --help` imports {baseline}"
    missing = str(files / "typo.duckdb")
    for name, r in zip(cases, results):
        lines = [line for line in r["stderr"].splitlines() if line.strip()]
        assert r["exit"] == 2, (name, r)
        assert len(lines) == 1 and lines[0].startswith("error: database file not found: " + missing), (name, r["stderr"])
        if name not in _NOT_YET_LIGHT:
            assert r["heavy"] == [], (name, r["heavy"])
    assert sorted(p.name for p in files.rglob("*")) == before  # nothing created: no ledger, no keys file, no output


def _bad_argument_cases(root: Path) -> list[tuple[str, list[str], str]]:
    """(name, arguments, what the one error line says) of refusals decided from the arguments alone."""
    db = str(root / "exists.duckdb")
    q = "SELECT COUNT(*) FROM Patient"
    return [
        ("synth bad epsilon", ["synth", "--db", db, "--out", str(root / "new.duckdb"), "--epsilon", "abc", "--delta", "1e-6"],
         "epsilon must be a number"),
        ("synth bad delta", ["synth", "--db", db, "--out", str(root / "new.duckdb"), "--epsilon", "1", "--delta", "tiny"],
         "delta must be a number"),
        ("synth existing output", ["synth", "--db", db, "--out", db, "--epsilon", "1", "--delta", "1e-6"], "already exists"),
        ("sql bad epsilon", ["sql", "--db", db, "--sql", q, "--epsilon", "one"], "epsilon must be a number"),
        ("ask empty question", ["ask", "", "--db", db, "--epsilon", "1"], "the question is empty"),
        ("ask blank question", ["ask", "   ", "--db", db, "--epsilon", "1"], "the question is empty"),
        ("ask bad epsilon", ["ask", "How many patients?", "--db", db, "--epsilon", "x"], "epsilon must be a number"),
        ("search empty question", ["search", "", "--db", db], "the question is empty"),
        ("search bad delta", ["search", "How many patients?", "--db", db, "--delta", "1e-6x"], "delta must be a number"),
        ("ask unknown variant", ["ask", "How many patients?", "--db", db, "--epsilon", "1", "--variant", "bogus"],
         "unknown search variant 'bogus'"),
        ("search unknown variant", ["search", "How many patients?", "--db", db, "--variant", "alpha"], "unknown search variant"),
        ("sensitivity beta and epsilon", ["sensitivity", "--db", db, "--sql", q, "--beta", "0.1", "--epsilon", "1"],
         "give exactly one of --beta or --epsilon"),
        ("sensitivity bad epsilon", ["sensitivity", "--db", db, "--sql", q, "--epsilon", "abc"], "epsilon must be a number"),
        ("translate nothing to translate", ["translate", "--db", db], "give either a QUESTION or --questions FILE"),
        ("translate unknown kind", ["translate", "How many?", "--db", db, "--kind", "list"], "--kind must be"),
        ("translate empty question", ["translate", "", "--db", db], "the question is empty"),
        ("ingest missing corpus", ["ingest", "--corpus", str(root / "nocorpus"), "--schema", db, "--out", str(root / "o.duckdb")],
         "corpus folder not found"),
        ("policy show missing file", ["policy", "show", str(root / "none.json")], "compiled policy not found"),
        ("policy explain missing policy", ["policy", "explain", "--db", db, "--policy", str(root / "none.json"), "--sender", "a:1",
                                           "--recipient", "b:2", "--purpose", "p", "--sql", q], "compiled policy not found"),
        ("demo run no patients", ["demo", "run", "--patients", "0", "--out", str(root / "d.duckdb")], "--patients must be a positive"),
        ("demo create no patients", ["demo", "create", "--patients", "-3", "--out", str(root / "d.duckdb")], "--patients must be a positive"),
        ("serve remote host", ["serve", "--db", db, "--host", "0.0.0.0"], "refusing to listen on 0.0.0.0"),
    ]


def test_bad_arguments_are_refused_before_anything_heavy_is_imported(files):
    cases = _bad_argument_cases(files)
    before = sorted(p.name for p in files.rglob("*"))
    _baseline, results = run_cases([args for _, args, _ in cases], files)
    for (name, _args, says), r in zip(cases, results):
        lines = [line for line in r["stderr"].splitlines() if line.strip()]
        assert r["exit"] == 2, (name, r)
        assert len(lines) == 1 and lines[0].startswith("error: ") and says in lines[0], (name, r["stderr"])
        assert r["heavy"] == [], (name, r["heavy"])
    assert sorted(p.name for p in files.rglob("*")) == before


def test_refusals_under_json_are_one_json_document(files):
    """Under --json the early refusal is the same JSON error document as every other error."""
    db = str(files / "exists.duckdb")
    _baseline, results = run_cases([["synth", "--db", db, "--out", db, "--epsilon", "1", "--delta", "1e-6", "--json"],
                                    ["budget", "--db", str(files / "typo.duckdb"), "--json"]], files)
    for r in results:
        assert r["exit"] == 2, r
        error = json.loads(r["stdout"])["error"]
        assert error["type"] == "DataSourceError" and error["hint"], error


def test_the_cheap_dsn_rule_is_the_engines_rule():
    """pimento.cli._checks keeps a copy of the DSN rule so as not to import the engines: pinned here."""
    from pimento.cli._checks import looks_like_dsn
    from pimento.engines.database import _is_dsn

    for text in ("postgresql://u@h/db", "host=h dbname=d", " dbname = d", "a.duckdb", "dir/x=1.duckdb", "C:/x.db", "=x", ""):
        assert looks_like_dsn(text) == _is_dsn(text), text


def test_the_cli_copy_of_the_search_variants_is_the_search_s():
    """`pimento ask/search` list and check the variants without importing the search: the copy is pinned to VARIANTS,
    and an unknown one is refused with the search's own words."""
    from pimento.cli._checks import SEARCH_VARIANTS, check_variant
    from pimento.errors import UserError
    from pimento.search.config import VARIANTS, config_for_variant

    assert SEARCH_VARIANTS == tuple(VARIANTS)
    with pytest.raises(UserError) as ours:
        check_variant("bogus")
    with pytest.raises(UserError) as theirs:
        config_for_variant("bogus")
    assert ours.value.one_line() == theirs.value.one_line()


def test_unknown_mode_and_neighbourhood_are_refused_lightly(files):
    db = str(files / "exists.duckdb")
    cases = [["sql", "--db", db, "--sql", "SELECT COUNT(*) FROM t", "--epsilon", "1", "--mode", "bogus"],
             ["sql", "--db", db, "--sql", "SELECT COUNT(*) FROM t", "--epsilon", "1", "--neighbours", "bogus"]]
    _baseline, results = run_cases(cases, files)
    for r in results:
        assert r["exit"] == 2 and r["stderr"].startswith("error: "), r
    assert all(r["heavy"] == [] for r in results), [r["heavy"] for r in results]


def test_only_a_file_path_that_does_not_exist_is_refused(tmp_path):
    """Locations an engine names (a DSN, ``spark:/folder``, a plug-in's prefix, ``:memory:``) are left to the engine."""
    from pimento.cli._checks import require_database
    from pimento.errors import DataSourceError

    for location in ("postgresql://u@h/db", "host=h dbname=d", "spark:/no/such/folder", "myengine:whatever", ":memory:", str(tmp_path)):
        require_database(location)
    for location in (str(tmp_path / "typo.duckdb"), "typo.duckdb", "C:/typo.db", ""):
        with pytest.raises(DataSourceError, match="database file not found"):
            require_database(location)


_REQUEST_RUNNER = r"""
import json, sys
HEAVY = tuple(json.loads(sys.argv[1]))
from pimento.errors import ModeError
from pimento.release.request import Request
out = []
for fields in ({"mode": "bogus"}, {"neighbours": "bogus"}, {"mode": "split"}):
    try:
        Request.for_sql("SELECT COUNT(*) FROM t", epsilon="1", **fields)
        out.append("built")
    except ModeError as e:
        out.append(e.one_line())
print(json.dumps({"out": out, "heavy": [m for m in HEAVY if m in sys.modules]}))
"""


def test_a_request_refuses_an_unknown_mode_lightly():
    """Building a :class:`Request` (what every edge does first) refuses an unknown mode or neighbourhood
    without loading the release modes, the mechanisms, NumPy or sqlglot (lazy package faces, and no
    plug-in can be registered while the built-in modes are not loaded)."""
    proc = subprocess.run([sys.executable, "-c", _REQUEST_RUNNER, json.dumps(HEAVY + ("pimento.release.modes._builtin",))],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["heavy"] == []
    assert result["out"][0].startswith("unknown mode 'bogus'") and "ci, dp, split, contextual" in result["out"][0]
    assert result["out"][1].startswith("unknown --neighbours 'bogus'")
    assert result["out"][2] == "built"


def test_a_plug_in_mode_is_still_found_by_a_request():
    """Once a plug-in mode is registered (which loads the built-ins first), a request names it."""
    from pimento.release.modes import register_mode, unregister_mode
    from pimento.release.modes.dp import DpMode
    from pimento.release.request import Request

    register_mode(type("PerfTestMode", (DpMode,), {"name": "perf-test-mode"})())
    try:
        assert Request.for_sql("SELECT COUNT(*) FROM t", epsilon="1", mode="perf-test-mode").mode == "perf-test-mode"
    finally:
        unregister_mode("perf-test-mode")
