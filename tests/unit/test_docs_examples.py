"""Every command example in docs/ runs, and its output has the shape the page shows (issue 17).

The way datasette tests its documentation: a page's examples are fenced ```console blocks; a line
starting with ``$ `` is a command (a trailing ``\\`` continues it), the lines after it, up to the
next command, are what the page says it prints. The test runs each command in a workspace that
holds every database the pages name (the demo hospital, a shop and a copy of it with its whole
budget, a clinic with a broken foreign key; the hospital with the custodian's compiled policy ``hospital.policy.json`` configured and a
30-patient narrated ``corpus/`` beside it), in page order, and compares shapes:

- JSON output (the page's text starts with ``{``; ``...`` stands for fields not shown): every field
  the page shows exists in the output, recursively, with the same JSON type, and a string the page
  shows is the string printed (numbers as wildcards, ``...`` for any text);
- text output: every line the page shows appears, in order, in the output, with numbers as
  wildcards (``1.6`` and ``8/5`` differ, ``2006`` and ``1994`` do not) and whitespace, line
  wrapping and folding ignored; examples run at 100 columns; ``...`` inside a line stands for any text (a path), a line ``...`` for lines
  not shown; table rules are not compared. A page that shows no output asks for exit status 0.

A block with another info string (``text``, ``python``, a synopsis) is not run; a synopsis line
``pimento CMD ...`` is checked instead: every ``--option`` it names exists on that command.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from pimento.cli.app import app

REPO = Path(__file__).resolve().parents[2]
PAGES = sorted(p for p in (REPO / "docs").glob("*.md") if p.name != "benchmarks.md")
FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```", re.M | re.S)
NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
RULE = re.compile(r"^[\s┏┓┗┛┡┩━┃│├┤┼─└┘┌┐┬┴╇╋┳┻═╞╡╪]+$")

#: The databases the examples may name, built once by :func:`workspace`, and the folder each example
#: runs in (a database's pimento.toml applies to its folder, so each kind has its own).
KNOWN_DATABASES = {
    "pimento-demo/hospital.duckdb": "hospital",
    "hospital.duckdb": "hospital",
    "shop.duckdb": "shop",
    "clinic.sqlite": "clinic",
    "misconfigured/hospital.duckdb": ".",
    "misvalued/hospital.duckdb": ".",
    "retail/shop.duckdb": ".",
}


@dataclass(frozen=True)
class Example:
    page: str
    line: int
    command: str
    expected: tuple[str, ...]

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def _examples() -> list[Example]:
    out = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            if match.group(1).strip() != "console":
                continue
            first = text[: match.start(2)].count("\n") + 1
            lines = match.group(2).splitlines()
            i = 0
            while i < len(lines):
                if not lines[i].startswith("$ "):
                    raise AssertionError(f"{page.name}:{first + i}: a console block must start with a `$ ` command line")
                start = i
                command = lines[i][2:]
                while command.endswith("\\"):
                    i += 1
                    command = command[:-1] + " " + lines[i].strip()
                i += 1
                expected = []
                while i < len(lines) and not lines[i].startswith("$ "):
                    expected.append(lines[i])
                    i += 1
                out.append(Example(page.name, first + start, command, tuple(expected)))
    return out


EXAMPLES = _examples()


def _synopses() -> list[tuple[str, int, str]]:
    """Lines ``pimento ...`` in non-console blocks: synopses and shell snippets."""
    out = []
    for page in [*PAGES, REPO / "README.md"]:
        text = page.read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            if match.group(1).strip() in ("console", "python", "json", "sql", "toml", "yaml"):
                continue
            first = text[: match.start(2)].count("\n") + 1
            lines = match.group(2).splitlines()
            for n, line in enumerate(lines):
                body = line.strip().removeprefix(".venv/bin/")
                if body.startswith("pimento "):
                    while body.endswith("\\") and n + 1 < len(lines):
                        n += 1
                        body = body[:-1] + " " + lines[n].strip()
                    out.append((page.name, first + n, body.split("#", 1)[0]))
    return out


def _command(words: list[str]):  # -> (name, click command) for `pimento WORDS...`
    root = typer.main.get_command(app)
    command = root.commands.get(words[0])  # type: ignore[attr-defined]
    name = words[0]
    if command is not None and hasattr(command, "commands") and len(words) > 1:
        name = f"{words[0]} {words[1]}"
        command = command.commands.get(words[1])
    return name, command


@pytest.mark.parametrize(("page", "line", "synopsis"), _synopses(), ids=[f"{p}:{n}" for p, n, _ in _synopses()])
def test_a_synopsis_names_only_options_that_exist(page, line, synopsis):
    words = [w for w in re.split(r"[\s\[\]|()]+", synopsis) if w][1:]
    name, command = _command(words)
    assert command is not None, f"{page}:{line}: `pimento {words[0]}` is not a command"
    known = {opt for p in command.params for opt in (*p.opts, *p.secondary_opts)}
    named = {w.split("=", 1)[0] for w in words if w.startswith("-") and w not in ("-", "--")}
    unknown = sorted(named - known)
    assert not unknown, f"{page}:{line}: `pimento {name}` has no option {unknown}"


def test_every_page_with_command_output_runs_it():
    """The pages that show what a command prints show it in a console block, so it is run."""
    assert len(EXAMPLES) >= 7
    stale = []
    for page in PAGES:
        for match in FENCE.finditer(page.read_text(encoding="utf-8")):
            if match.group(1).strip() != "console" and re.search(r"^\$ pimento ", match.group(2), re.M):
                stale.append(page.name)
    assert not stale, f"`$ pimento` examples outside console blocks (not run): {sorted(set(stale))}"


@pytest.fixture(scope="module")
def workspace(tmp_path_factory, standin_synthetic) -> Path:
    import duckdb

    from pimento.demo.hospital import create_demo

    root = tmp_path_factory.mktemp("docs_examples")
    for name in ("pimento-demo/hospital.duckdb", "hospital.duckdb"):
        db = root / "hospital" / name
        db.parent.mkdir(parents=True, exist_ok=True)
        create_demo(db, patients=300, seed=0)
        (root / "copies" / name).parent.mkdir(parents=True, exist_ok=True)
        made = standin_synthetic(root / "copies" / name, seed=6, for_database=db)
        shutil.copy(made, db.with_name("hospital.synthetic.duckdb"))
    # hospital.duckdb is a deployment with the custodian's compiled policy (the CI examples of
    # authorize, modes and policy) and a narrated corpus beside it (the ingest examples)
    hospital = root / "hospital"
    for words in (["policy", "compile", "example:hospital_hipaa", "--db", str(hospital / "hospital.duckdb"),
                   "--out", str(hospital / "hospital.policy.json"), "--quiet"],
                  ["demo", "corpus", "--out", str(hospital / "corpus"), "--patients", "30"]):
        made_by = CliRunner().invoke(app, words)
        assert made_by.exit_code == 0, made_by.output
    with (hospital / "pimento.toml").open("a", encoding="utf-8") as toml:
        toml.write('\n[policy]\ncompiled = "hospital.policy.json"\n')
    for folder in ("shop", "clinic"):
        (root / folder).mkdir()
    (root / "misconfigured").mkdir()
    shutil.copy(root / "hospital" / "hospital.duckdb", root / "misconfigured" / "hospital.duckdb")
    (root / "misconfigured" / "pimento.toml").write_text('[privacy]\nprivat = ["Patient"]\n', encoding="utf-8")
    (root / "misvalued").mkdir()  # a bad value rather than an unknown key (configuration.md)
    shutil.copy(root / "hospital" / "hospital.duckdb", root / "misvalued" / "hospital.duckdb")
    (root / "misvalued" / "pimento.toml").write_text("[ledger]\nepsilon_cap = -5\n", encoding="utf-8")
    con = duckdb.connect(str(root / "shop" / "shop.duckdb"))
    con.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, region VARCHAR)")
    con.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers(id))")
    con.execute("INSERT INTO customers SELECT i, CASE WHEN i % 2 = 0 THEN 'north' ELSE 'south' END FROM range(1, 2001) t(i)")
    con.execute("INSERT INTO orders SELECT i, 1 + (i * 7) % 2000 FROM range(1, 4001) t(i)")
    con.close()
    (root / "retail").mkdir()  # the shop again, its whole budget left (sql.md spends the shop's delta cap)
    shutil.copy(root / "shop" / "shop.duckdb", root / "retail" / "shop.duckdb")
    import sqlite3

    con = sqlite3.connect(root / "clinic" / "clinic.sqlite")
    con.executescript(
        "CREATE TABLE Patient (pid INTEGER PRIMARY KEY NOT NULL, email TEXT UNIQUE, zip TEXT NOT NULL);"
        "CREATE TABLE Visit (vid INTEGER PRIMARY KEY NOT NULL, pid INTEGER REFERENCES Patient(pid), ward TEXT);"
        "INSERT INTO Patient VALUES (1, 'a@x', '10001'), (2, 'b@x', '10002');"
        "INSERT INTO Visit VALUES (1, 1, 'A'), (2, 2, 'B'), (3, 3, 'C');"
    )
    con.close()
    return root


def _normal(text: str) -> str:
    """Numbers as ``#``, table borders and whitespace dropped (a terminal may wrap or fold a line anywhere)."""
    return "".join(NUMBER.sub("#", re.sub(r"[┃│]", " ", text)).split())


def _shape(value):
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return "null" if value is None else "string"


def _expected_json(lines: tuple[str, ...]):
    text = "\n".join(lines)
    text = re.sub(r",\s*\.\.\.\s*([}\]])", r"\1", text)  # `..., ...}`: fields not shown
    text = re.sub(r"(\[|\{)\s*\.\.\.\s*([}\]])", r"\1\2", text)
    text = re.sub(r'"\.\.\."', '""', text)
    return json.loads(text)


def _split_json(lines: list[str]) -> tuple[tuple[str, ...], list[str]]:
    """The page's JSON object (up to its closing brace) and the lines shown after it (stderr)."""
    depth = 0
    for n, line in enumerate(lines):
        depth += len(re.findall(r"[{\[]", re.sub(r'"(?:[^"\\]|\\.)*"', '""', line)))
        depth -= len(re.findall(r"[}\]]", re.sub(r'"(?:[^"\\]|\\.)*"', '""', line)))
        if depth == 0:
            return tuple(lines[: n + 1]), lines[n + 1 :]
    return tuple(lines), []


def _same_shape(expected, actual, where: str = "$") -> list[str]:
    if _shape(expected) != _shape(actual) and expected is not None:
        return [f"{where}: the page shows a {_shape(expected)}, the command prints a {_shape(actual)}"]
    problems = []
    if isinstance(expected, dict):
        for key, value in expected.items():
            if key not in actual:
                problems.append(f"{where}.{key}: shown on the page, not printed")
            else:
                problems += _same_shape(value, actual[key], f"{where}.{key}")
    elif isinstance(expected, list) and expected and actual:
        problems += _same_shape(expected[0], actual[0], f"{where}[0]")
    elif isinstance(expected, str) and not _matches(expected, actual):
        problems.append(f"{where}: the page shows {expected!r}, the command prints {actual!r}")
    return problems


def _matches(shown: str, printed: str) -> bool:
    """``printed`` has the text ``shown`` (numbers as wildcards, ``...`` for any text)."""
    pattern = ".*".join(re.escape(_normal(piece)) for piece in re.split(r"\.\.\.(?!\.)", shown))
    return re.fullmatch(pattern, _normal(printed), re.S) is not None


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.id for e in EXAMPLES])
def test_a_docs_example_runs_and_prints_what_the_page_shows(example: Example, workspace: Path, monkeypatch):
    words = shlex.split(example.command)
    assert words[0] == "pimento", f"{example.id}: only `pimento` commands are run ({example.command})"
    named = [words[i + 1] for i, w in enumerate(words[:-1]) if w == "--db"]
    assert all(db in KNOWN_DATABASES for db in named), f"{example.id}: the workspace has no {named} (known: {sorted(KNOWN_DATABASES)})"
    monkeypatch.chdir(workspace / KNOWN_DATABASES[named[0]] if named else workspace / "hospital")
    from pimento.cli import _common

    for console in (_common.console, _common.err_console):  # the width the pages were written at
        monkeypatch.setattr(console, "width", 100)
    result = CliRunner().invoke(app, words[1:])
    printed = result.stdout + result.stderr
    wanted = [line for line in example.expected if line.strip() and line.strip() != "..."]
    if wanted and wanted[0].lstrip().startswith("{"):
        shown, wanted = _split_json(wanted)
        problems = _same_shape(_expected_json(shown), json.loads(result.stdout))
        assert not problems, f"{example.id}: {problems}"
        printed = result.stderr
    if not wanted:  # the page shows no output: the command must succeed
        assert result.exit_code == 0, f"{example.id}: exit {result.exit_code}: {printed}"
    flat, flat_err = _normal(result.stdout if printed is not result.stderr else ""), _normal(result.stderr)
    at = 0
    for line in wanted:
        if RULE.match(line):
            continue
        if "│" in line and _normal(line) not in flat:  # a table row wrapped otherwise: cell by cell
            for cell in (c for c in (_normal(c) for c in re.split(r"[┃│]", line)) if c and c != "..."):
                assert cell in flat + flat_err, f"{example.id}: the page shows {cell!r}, the command does not print it:\n{printed}"
            continue
        pattern = ".*?".join(re.escape(_normal(p)) for p in re.split(r"\.\.\.(?!\.)", line))  # `...` in a line: anything
        found = re.compile(pattern).search(flat, at)
        if found is not None:  # stdout in the page's order
            at = found.end()
        else:  # stderr (a warning, a note) interleaves with stdout on a terminal: anywhere
            assert re.search(pattern, flat_err), f"{example.id}: the page shows {line.strip()!r}; the command printed:\n{printed}"
