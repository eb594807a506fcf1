"""API keys: shown once, stored hashed (mode 0600), compared in constant time, revocable, validated."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import stat

import pytest

from pimento.errors import BudgetError, UserError
from pimento.service.keys import KeyStore, keys_path


def test_a_key_is_stored_only_as_its_hash(tmp_path):
    store = KeyStore(tmp_path / "ledger.sqlite.keys.json")
    entry, key = store.add("ann", "employee:17")
    text = store.path.read_text()
    assert key not in text and key.split("_", 2)[2] not in text
    assert json.loads(text)["keys"][0]["sha256"] == hashlib.sha256(key.encode()).hexdigest()
    assert stat.S_IMODE(os.stat(store.path).st_mode) == 0o600
    assert store.verify(key) == entry and entry.analyst == "ann" and entry.principal == "employee:17"
    assert store.verify(key + "x") is None and store.verify("") is None and store.verify(None) is None


def test_verify_compares_with_every_key_in_constant_time(tmp_path, monkeypatch):
    store = KeyStore(tmp_path / "k.json")
    keys = [store.add(f"a{i}")[1] for i in range(5)]
    calls = []
    real = hmac.compare_digest

    def counting(a, b):
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", counting)
    assert store.verify(keys[0]).analyst == "a0"
    assert len(calls) == 5  # did not stop at the first (matching) key
    calls.clear()
    assert store.verify("pmk_wrong") is None and len(calls) == 5


def test_revoke_takes_effect_for_another_store_on_the_same_file(tmp_path):
    path = keys_path(tmp_path / "db.ledger.sqlite")
    issuing, serving = KeyStore(path), KeyStore(path)
    entry, key = issuing.add("ann")
    assert serving.verify(key) is not None
    issuing.revoke(entry.id)
    assert serving.verify(key) is None
    assert [k.revoked is not None for k in serving.keys()] == [True]
    with pytest.raises(UserError, match="already revoked"):
        issuing.revoke(entry.id)
    with pytest.raises(UserError, match="no key with id"):
        issuing.revoke("nope")


@pytest.mark.parametrize("analyst", ["", " ann", "a b", "x" * 65, "<synthetic>", "*"])
def test_bad_analyst_names_are_refused(tmp_path, analyst):
    with pytest.raises(UserError, match="invalid analyst"):
        KeyStore(tmp_path / "k.json").add(analyst)


@pytest.mark.parametrize("principal", ["17", "employee:", ":17", "employee:17; drop", "a b:1"])
def test_bad_principals_are_refused(tmp_path, principal):
    with pytest.raises(UserError, match="invalid principal"):
        KeyStore(tmp_path / "k.json").add("ann", principal)


def test_a_corrupt_key_file_is_an_error_not_an_empty_store(tmp_path):
    path = tmp_path / "k.json"
    path.write_text("{oops")
    with pytest.raises(UserError, match="unreadable"):
        KeyStore(path).verify("pmk_x")


def test_keys_only_for_known_analysts_when_the_custodian_lists_them(tmp_path):
    from pimento.demo.hospital import create_demo
    from pimento.service.deployment import Deployment

    db = tmp_path / "hospital.duckdb"
    create_demo(db, patients=50, seed=1)
    with open(tmp_path / "pimento.toml", "a") as fh:
        fh.write('\n[ledger]\nanalysts = ["ann"]\n')
    deployment = Deployment(db)
    assert deployment.add_key("ann")[0].analyst == "ann"
    with pytest.raises(BudgetError, match="unknown analyst"):
        deployment.add_key("bob")
    assert deployment.keys.path.parent == deployment.ledger_file.parent


def test_a_key_carries_its_context_and_old_entries_still_load(tmp_path):
    store = KeyStore(tmp_path / "k.json")
    entry, key = store.add("ann", "employee:13", ["employee:56", "employee:56", "employee:57"], ["treatment"])
    assert entry.senders == ("employee:56", "employee:57") and entry.purposes == ("treatment",) and entry.bound
    assert KeyStore(store.path).verify(key) == entry  # stored and read back
    assert entry.choose("sender", "employee:57") == "employee:57" and entry.choose("purpose", None) == "treatment"
    data = json.loads(store.path.read_text())
    for item in data["keys"]:  # as the key file was written before keys carried a context
        del item["senders"], item["purposes"]
    store.path.write_text(json.dumps(data))
    old = KeyStore(store.path).verify(key)
    assert old is not None and old.senders == () and old.purposes == () and not old.bound
    with pytest.raises(UserError, match="bound to no context"):
        old.choose("sender", "employee:56")
    data["keys"][0]["senders"] = "employee:56"  # not a list: a malformed entry, not a key bound to 11 characters
    store.path.write_text(json.dumps(data))
    with pytest.raises(UserError, match="malformed entry"):
        KeyStore(store.path).keys()
