"""The core works without the extras, and a command that needs a missing one says which to install.

Issue 28: the heavy parts (synthesis, service, LLM, PostgreSQL, Spark) are extras of the
distribution (pyproject.toml, pimento.extras). One subprocess refuses to import every extra's
modules (a ``sys.meta_path`` finder, so the test environment's copies are invisible) and runs,
in-process: ``import pimento`` and the layers the core uses, ``pimento --help``, ``pimento sql``
on a small DuckDB file (an answer), and ``pimento serve``, ``pimento synth``, ``pimento sql`` on a
PostgreSQL DSN and the OpenAI backend, each of which must fail with exit status 2 and one line
naming its extra (``pip install 'pimento-dp[...]'``), with nothing charged by the refused ``synth``.
It fails on the code before issue 28 (``import uvicorn`` and the service were a traceback, the
synthesizer imported jax after the charge, ``import httpx`` broke ``import pimento.llm``).
"""

from __future__ import annotations

import enum
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pimento._compat import BackportStrEnum
from pimento.errors import ConfigError, UserError
from pimento.extras import DISTRIBUTION, EXTRAS, MODULES, check_extra, missing_extra, require_extra

REPO = Path(__file__).resolve().parents[2]

_DRIVER = textwrap.dedent(
    """
    import contextlib, importlib.abc, io, json, sys

    BLOCKED = set(sys.argv[2].split(","))

    class Refuse(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, Refuse())
    results = {}
    import pimento, pimento.release, pimento.llm, pimento.synth, pimento.engines, pimento.mechanisms
    results["imported"] = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
    from pimento.cli.app import main

    def run(name, argv):
        out, err = io.StringIO(), io.StringIO()
        sys.argv = ["pimento", *argv]
        code = 0
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main()
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        results[name] = {"code": code, "out": out.getvalue(), "err": err.getvalue()}

    for name, argv in json.loads(sys.argv[1]):
        run(name, argv)
    from pimento.llm.openai import OpenAIBackend
    try:
        OpenAIBackend("http://127.0.0.1:9/v1")
    except Exception as exc:
        results["openai"] = {"type": type(exc).__name__, "line": exc.one_line()}
    print(json.dumps(results))
    """
)


def _tiny(folder: Path) -> Path:
    import duckdb

    db = folder / "tiny.duckdb"
    con = duckdb.connect(str(db))
    # Two attributes, so that the synthesizer needs its graphical model (mbi) for this table.
    con.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, a VARCHAR, b INTEGER)")
    con.execute("INSERT INTO t SELECT i, CASE WHEN i % 2 = 0 THEN 'x' ELSE 'y' END, i % 3 FROM range(2000) r(i)")
    con.close()
    (folder / "pimento.toml").write_text('[privacy]\nprivate = ["t"]\nroot = "t"\n', encoding="utf-8")
    return db


def test_the_core_runs_without_the_extras_and_names_a_missing_one(tmp_path: Path) -> None:
    db = str(_tiny(tmp_path))
    blocked = sorted({module for modules in MODULES.values() for module in modules})
    commands = [
        ["help", ["--help"]],
        ["sql", ["sql", "--db", db, "--sql", "SELECT COUNT(*) FROM t", "--epsilon", "1", "--json"]],
        ["serve", ["serve", "--db", db]],
        ["synth", ["synth", "--db", db, "--out", str(tmp_path / "syn.duckdb"), "--epsilon", "1", "--delta", "1e-6"]],
        ["postgres", ["sql", "--db", "postgresql://nobody@127.0.0.1:9/none", "--sql", "SELECT COUNT(*) FROM t", "--epsilon", "1"]],
        ["budget", ["budget", "--db", db, "--json"]],
    ]
    proc = subprocess.run(
        [sys.executable, "-c", _DRIVER, json.dumps(commands), ",".join(blocked)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    assert results["imported"] == []
    assert results["help"]["code"] == 0 and "serve" in results["help"]["out"]
    assert results["sql"]["code"] == 0, results["sql"]
    assert "Traceback" not in json.dumps(results)
    for name, extra in [("serve", "service"), ("synth", "synth"), ("postgres", "postgres")]:
        got = results[name]
        assert got["code"] == 2, (name, got)
        assert f"pip install '{DISTRIBUTION}[{extra}]'" in got["err"], (name, got)
        assert len(got["err"].strip().splitlines()) == 1, (name, got)
    assert results["openai"] == {"type": "ConfigError", "line": missing_extra("llm", "the OpenAI-compatible LLM backend").one_line()}
    # The refused synth charged nothing (it would spend delta 1e-6): the only spend is the sql release.
    assert results["budget"]["code"] == 0, results["budget"]
    spent = json.loads(results["budget"]["out"])["spent"]
    assert (spent["epsilon"], spent["delta"]) == ("1", "0")


def test_missing_extra_names_the_distribution_and_the_extra() -> None:
    err = missing_extra("service", "pimento serve")
    assert isinstance(err, ConfigError) and isinstance(err, UserError)
    assert err.one_line() == "pimento serve needs the 'service' extra, which is not installed (pip install 'pimento-dp[service]')"
    with pytest.raises(ValueError):
        missing_extra("nope", "x")
    assert set(MODULES) == set(EXTRAS)


def test_the_extras_match_pyproject() -> None:
    from pimento._compat import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["name"] == DISTRIBUTION
    assert set(EXTRAS) <= set(project["optional-dependencies"])


def test_require_extra_converts_only_the_extras_own_modules() -> None:
    with pytest.raises(ConfigError, match="'llm' extra"):
        check_extra(ModuleNotFoundError("No module named 'httpx'", name="httpx"), "llm", "x")
    check_extra(ModuleNotFoundError("No module named 'foo'", name="foo"), "llm", "x")  # not the extra's: left alone
    with pytest.raises(ModuleNotFoundError):
        require_extra("pimento_no_such_module", "llm", "x")
    assert require_extra("json", "llm", "x") is json


@pytest.mark.skipif(sys.version_info < (3, 11), reason="compares with Python 3.11's enum.StrEnum")
def test_the_backport_str_enum_behaves_like_python_311s() -> None:
    class New(enum.StrEnum):
        A = "a-b"
        B = enum.auto()

    class Old(BackportStrEnum):
        A = "a-b"
        B = enum.auto()

    for new, old in [(New.A, Old.A), (New.B, Old.B)]:
        assert (str(old), f"{old}", f"{old:>6}", repr(str(old))) == (str(new), f"{new}", f"{new:>6}", repr(str(new)))
        assert old == new.value and isinstance(old, str) and old.value == new.value
    assert Old("a-b") is Old.A and json.dumps([Old.A]) == json.dumps([New.A])
    with pytest.raises(TypeError):
        BackportStrEnum("Bad", {"X": 1})
