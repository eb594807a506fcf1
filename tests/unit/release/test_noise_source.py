"""Noise is the mechanism's: no caller of a release path chooses the random source (issue 23, finding 3).

``Session(rng=...)`` took a caller's random source: one that draws 0 released 20 of 20 exact
counts and, through ``noise_scale_upper``, the exact RS. Now no argument of ``Session``, no
option of the CLI and no field of the service's requests names a noise source; every release
draws from :func:`pimento.mechanisms.samplers.default_rng` (the OS CSPRNG), which only the
test hook :func:`pimento.mechanisms.samplers.fixed_noise_for_tests` replaces.
"""

from __future__ import annotations

import inspect
import random
from pathlib import Path
from secrets import SystemRandom

import pytest
from db_support import duckdb_file

from pimento.mechanisms import samplers
from pimento.mechanisms.samplers import default_rng, fixed_noise_for_tests
from pimento.release.session import Session

#: words that would name a noise source in a parameter, an option or a request field
NOISE_WORDS = ("rng", "random", "noise", "entropy")


class Counting:
    """A seeded random source that counts its draws."""

    def __init__(self, seed: int = 0) -> None:
        self.inner = random.Random(seed)
        self.draws = 0

    def getrandbits(self, k: int) -> int:
        self.draws += 1
        return self.inner.getrandbits(k)

    def randrange(self, n: int) -> int:
        self.draws += 1
        return self.inner.randrange(n)


@pytest.fixture()
def db(tmp_path) -> Path:
    return duckdb_file(tmp_path / "t.duckdb", ("CREATE TABLE t (a INTEGER)", "INSERT INTO t SELECT range FROM range(40)"))


def test_a_session_takes_no_noise_source(db):
    """The attack of finding 3: a caller-supplied source that draws 0. Refused as an unknown argument."""

    class DrawsZero:
        def getrandbits(self, k: int) -> int:
            return 0

        def randrange(self, n: int) -> int:
            return 0

    with pytest.raises(TypeError):
        Session(db, rng=DrawsZero())  # type: ignore[call-arg]
    for method in (Session.__init__, Session.release_sql, Session.ask, Session.preview):
        names = [n.lower() for n in inspect.signature(method).parameters]
        assert not [n for n in names if any(w in n for w in NOISE_WORDS)], (method.__qualname__, names)


def test_a_release_draws_from_the_mechanisms_source_only(db):
    """A Session release draws its noise through default_rng (so only the test hook reaches it), and the
    hook is undone on exit: the next release draws from the OS CSPRNG again."""
    spy = Counting()
    with fixed_noise_for_tests(spy), Session(db) as s:
        s.release_sql("SELECT COUNT(*) FROM t WHERE a > 3", "1")
    assert spy.draws > 0
    drawn = spy.draws
    assert isinstance(default_rng(), SystemRandom) and samplers._TEST_NOISE is None
    with Session(db) as s:
        s.release_sql("SELECT COUNT(*) FROM t WHERE a > 5", "1")
    assert spy.draws == drawn


def test_the_hook_takes_a_source_or_a_factory_and_nests():
    a, b = Counting(1), Counting(2)
    with fixed_noise_for_tests(a):
        assert default_rng() is a and default_rng() is a
        with fixed_noise_for_tests(lambda: b):
            assert default_rng() is b
        assert default_rng() is a
        fresh = []
        with fixed_noise_for_tests(lambda: fresh.append(1) or random.Random(0)):
            default_rng(), default_rng()
        assert len(fresh) == 2
    assert isinstance(default_rng(), SystemRandom)
    with pytest.raises(RuntimeError), fixed_noise_for_tests(a):
        raise RuntimeError("a failing test")
    assert isinstance(default_rng(), SystemRandom)  # restored even when the body raises


def _cli_options() -> dict[str, list[str]]:
    import typer.main

    from pimento.cli.app import app

    out: dict[str, list[str]] = {}

    def walk(command, name: str) -> None:
        if hasattr(command, "commands"):
            for sub_name, sub in command.commands.items():
                walk(sub, f"{name} {sub_name}".strip())
        else:
            out[name] = [p.name for p in command.params]

    walk(typer.main.get_command(app), "")
    return out


def test_the_cli_has_no_noise_option():
    """No command of ``pimento`` takes a noise source. The seeds it has are listed: each drives
    something other than the release noise (the search, the synthetic copy's sampling, the demo data)."""
    options = _cli_options()
    assert "sql" in options and "ask" in options
    for command, names in options.items():
        assert not [n for n in names if any(w in n.lower() for w in NOISE_WORDS)], (command, names)
    seeds = {(command, n) for command, names in options.items() for n in names if "seed" in n.lower()}
    assert seeds <= {
        ("search", "seed"), ("search", "seed_sql"), ("ask", "seed"), ("ask", "seed_sql"),  # the search's
        ("synth", "seed"),  # the copy's sampling; its noise is drawn from the OS CSPRNG (synth/PRIVACY.md)
        ("demo create", "seed"), ("demo run", "seed"), ("demo corpus", "seed"),  # the demo data
    }, seeds


def test_the_service_has_no_noise_field():
    """No request body of the service, and no argument of the app or the deployment, names a noise source."""
    from pydantic import BaseModel

    from pimento.service import app as service_app
    from pimento.service.deployment import Deployment

    models = [v for v in vars(service_app).values() if isinstance(v, type) and issubclass(v, BaseModel) and v is not BaseModel]
    assert models
    for model in models:
        fields = list(model.model_fields)
        if "accept_noise" in fields:  # whether to spend despite the warning (docs/accuracy.md): a yes/no, never a source
            assert model.model_fields["accept_noise"].annotation in (bool, "bool"), model.__name__
            fields.remove("accept_noise")
        assert not [f for f in fields if any(w in f.lower() for w in NOISE_WORDS)], (model.__name__, fields)
        if "seed" in fields:
            assert model.__name__ == "SynthRequest"  # the copy's sampling seed, never its noise
    for call in (service_app.create_app, service_app.ServiceOptions, Deployment.__init__):
        names = list(inspect.signature(call).parameters)
        assert not [n for n in names if any(w in n.lower() for w in NOISE_WORDS)], (call, names)
