"""The key of the cache of readings (:mod:`pimento.release.reading_cache`) names every input of a reading.

Each variant changes exactly one input the search or the mode's choice on the copy depends on; each
must give another key (a key that dropped one part would hand a reading made for other inputs).
"""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import pytest

from pimento.config import Settings
from pimento.mechanisms import mechanism_for
from pimento.release import reading_cache
from pimento.release.request import Context, SearchOptions
from pimento.search import SearchConfig


def _inputs(tmp_path, **change):
    policy = tmp_path / change.pop("policy_name", "policy.json")
    policy.write_text(change.pop("policy_text", '{"norms": []}'))
    search = change.pop("search", SearchOptions(k=10, config=SearchConfig(rollouts=10, seed=0)))
    job = SimpleNamespace(
        question=change.pop("question", "How many patients are there?"),
        analyst=change.pop("analyst", "ann"),
        mode=SimpleNamespace(name=change.pop("mode", "contextual")),
        context=change.pop("context", Context.parse({"sender": "employee:1", "recipient": "employee:2", "purpose": "care"})),
        policy=str(policy),
        neighbours=change.pop("neighbours", "add_remove"),
        request=SimpleNamespace(search=search),
    )
    mechanism = change.pop("mechanism", mechanism_for("1", None))
    catalog = SimpleNamespace(to_dict=lambda: change.get("catalog", {"tables": [{"name": "Patient"}]}))
    settings = change.pop("settings", Settings())
    parts = reading_cache.reading_parts(job, mechanism, catalog, settings, copy_id=change.pop("copy_id", "copy-1"),
                                        database=change.pop("database", "deployment:abc"))
    return reading_cache.reading_key(parts)


BASE_SEARCH = SearchOptions(k=10, config=SearchConfig(rollouts=10, seed=0))

VARIANTS = {
    "question": {"question": "How many patients are there ?"},
    "analyst (timing would tell one analyst what another asked)": {"analyst": "bob"},
    "mode": {"mode": "split"},
    "context": {"context": Context.parse({"sender": "employee:1", "recipient": "employee:3", "purpose": "care"})},
    "no context": {"context": None},
    "policy file": {"policy_name": "other-policy.json"},
    "policy bytes": {"policy_text": '{"norms": [1]}'},
    "neighbours": {"neighbours": "replace"},
    "epsilon": {"mechanism": mechanism_for("0.5", None)},
    "delta": {"mechanism": mechanism_for("1", "1e-6")},
    "k": {"search": replace(BASE_SEARCH, k=5)},
    "rollouts": {"search": replace(BASE_SEARCH, config=SearchConfig(rollouts=11, seed=0))},
    "search seed": {"search": replace(BASE_SEARCH, config=SearchConfig(rollouts=10, seed=1))},
    "seed sql": {"search": replace(BASE_SEARCH, seed_sql=("SELECT COUNT(*) FROM Patient",))},
    "llm": {"search": replace(BASE_SEARCH, llm="http://127.0.0.1:9/v1")},
    "copy": {"copy_id": "copy-2"},
    "database": {"database": "deployment:abd"},
    "catalog": {"catalog": {"tables": [{"name": "Patient"}, {"name": "Doctor"}]}},
    "settings": {"settings": Settings().model_copy(update={"extra": {"x": 1}})},
    "settings folder": {"settings": Settings().model_copy(update={"base_dir": "/elsewhere"})},
}


def test_the_same_inputs_give_the_same_key(tmp_path):
    assert _inputs(tmp_path) == _inputs(tmp_path)


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_each_input_is_part_of_the_key(tmp_path, name):
    base = _inputs(tmp_path)
    assert _inputs(tmp_path, **VARIANTS[name]) != base, f"the key does not depend on {name}"


def test_the_code_version_is_part_of_the_key(tmp_path, monkeypatch):
    base = _inputs(tmp_path)
    monkeypatch.setattr(reading_cache, "__version__", "0.0.0-other")
    assert _inputs(tmp_path) != base


def test_an_unreadable_entry_is_a_miss_and_the_store_is_private(tmp_path):
    store = reading_cache.ReadingStore(tmp_path / "copy.duckdb.readings.sqlite")
    assert store.get("k") is None
    store.put("k", {"sql": "SELECT COUNT(*) FROM Patient"})
    assert store.get("k") == {"sql": "SELECT COUNT(*) FROM Patient"}
    assert (store.path.stat().st_mode & 0o077) == 0
    store._conn().execute("UPDATE readings SET entry = ? WHERE key = 'k'", (b"not a pickle",))
    assert store.get("k") is None
    assert reading_cache.cached_reading(store, "k", lambda: "made") == "made" and store.get("k") == "made"


def test_the_cache_is_off_unless_turned_on():
    assert not reading_cache.enabled()
    with reading_cache.shared_readings():
        assert reading_cache.enabled()
    assert not reading_cache.enabled()
