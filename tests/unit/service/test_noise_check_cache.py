"""Issue 28, item 3: the mostly-noise check before a spend is cheap and never refuses a free answer.

A request whose answer the ledger already holds is not checked (the release returns it, spending nothing); a
preview made for the same request, analyst and synthetic copy is reused (:mod:`pimento.release.noise_check_cache`);
the key the check computes for a cached answer is the one the release stores the answer under.
"""

from __future__ import annotations

import pytest

from service_support import TESTCLIENT_WARNING
from test_analyst_view import COUNT, JOIN, _charges, tight, with_policy  # noqa: F401  (the module's deployment fixtures)

from pimento.release import Request
from pimento.release.noise_check_cache import PreviewMemo, plain_count_key
from pimento.service import noise_check as service_check

pytestmark = pytest.mark.filterwarnings(TESTCLIENT_WARNING)


def _counting(monkeypatch) -> list[tuple[str, ...] | None]:
    """Record every SQL preview the check computes (their ``epsilons``)."""
    calls: list[tuple[str, ...] | None] = []
    real = service_check._sql_preview

    def counted(deployment, key, request, epsilons):
        calls.append(epsilons)
        return real(deployment, key, request, epsilons)

    monkeypatch.setattr(service_check, "_sql_preview", counted)
    return calls


def _refused_then_paid(client, headers, path, body):
    """``body`` at ``path`` is refused 409 (mostly noise, not accepted), then paid with ``accept_noise``: the fresh answer."""
    refused = client.post(path, headers=headers, json=body)
    assert refused.status_code == 409, refused.text
    spent = client.post(path, headers=headers, json={**body, "accept_noise": True})
    assert spent.status_code == 200 and spent.json()["cached"] is False, spent.text
    return spent


def test_a_cached_answer_is_never_refused_and_not_checked(tight, monkeypatch):  # noqa: F811
    deployment, client = tight
    entry, key = deployment.add_key("cache-never-refused")
    headers = {"Authorization": f"Bearer {key}"}
    body = {"sql": COUNT, "epsilon": "0.001"}
    spent = _refused_then_paid(client, headers, "/v1/sql", body)
    calls = _counting(monkeypatch)
    again = client.post("/v1/sql", headers=headers, json=body)  # identical, without accept_noise: the stored answer, free
    assert again.status_code == 200, again.text
    assert again.json()["cached"] is True and again.json()["value"] == spent.json()["value"]
    assert calls == []  # no preview at all for an answer already paid for
    assert len(_charges(deployment, entry.analyst)) == 1


def test_the_second_identical_check_reuses_the_preview(tight, monkeypatch):  # noqa: F811
    deployment, client = tight
    _entry, key = deployment.add_key("cache-memo")
    headers = {"Authorization": f"Bearer {key}"}
    calls = _counting(monkeypatch)
    body = {"sql": JOIN, "epsilon": "0.001"}
    first = client.post("/v1/sql", headers=headers, json=body)
    assert first.status_code == 409, first.text
    computed = len(calls)
    assert computed >= 1
    second = client.post("/v1/sql", headers=headers, json=body)
    assert second.status_code == 409 and second.json()["error"] == first.json()["error"]  # the same decision, made again
    assert len(calls) == computed  # ... on the preview already made
    monkeypatch.setattr(type(deployment), "copy_identity", property(lambda self: (0, 0, 0, 0)))  # another synthetic copy
    assert client.post("/v1/sql", headers=headers, json=body).status_code == 409
    assert len(calls) > computed  # a new copy: a new preview


def test_the_second_identical_question_check_reuses_the_preview(tight, monkeypatch):  # noqa: F811
    deployment, client = tight
    _entry, key = deployment.add_key("cache-memo-ask")
    headers = {"Authorization": f"Bearer {key}"}
    calls = []
    real = type(deployment).preview

    def counted(self, *args, **kwargs):
        calls.append(args)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(type(deployment), "preview", counted)
    body = {"question": "How many patients are there?", "epsilon": "0.001"}
    first = client.post("/v1/ask", headers=headers, json=body)
    assert first.status_code == 409, first.text
    second = client.post("/v1/ask", headers=headers, json=body)
    assert second.status_code == 409 and second.json()["error"] == first.json()["error"]
    assert len(calls) == 1


def test_a_cached_answer_to_a_question_is_never_refused(tight):  # noqa: F811
    deployment, client = tight
    entry, key = deployment.add_key("cache-ask-never-refused")
    headers = {"Authorization": f"Bearer {key}"}
    body = {"question": "How many patients are there?", "epsilon": "0.002"}
    spent = _refused_then_paid(client, headers, "/v1/ask", body)
    again = client.post("/v1/ask", headers=headers, json=body)
    assert again.status_code == 200 and again.json()["cached"] is True, again.text
    assert len(_charges(deployment, entry.analyst)) == 1


@pytest.mark.parametrize("sql", [COUNT, JOIN])
def test_the_checks_key_is_the_key_the_release_stores_the_answer_under(tight, sql):  # noqa: F811
    deployment, client = tight
    entry, key = deployment.add_key(f"cache-key-{len(sql)}")
    headers = {"Authorization": f"Bearer {key}"}
    request = deployment.request(entry, sql=sql, epsilon="0.01", delta=None)
    assert not deployment.answered(entry, request)
    released = client.post("/v1/sql", headers=headers, json={"sql": sql, "epsilon": "0.01", "accept_noise": True})
    assert released.status_code == 200, released.text
    assert deployment.answered(entry, request)
    with deployment.ledger() as ledger:
        cache_key = plain_count_key(request, catalog=deployment.catalog, settings=deployment.settings, ledger=ledger,
                                    location=deployment.location, analyst=entry.analyst, dialect=deployment.dialect)
        assert cache_key is not None and ledger.cached_answer(cache_key)["charge_id"] == released.json()["charge_id"]
    other = deployment.request(entry, sql=sql, epsilon="0.02", delta=None)
    assert not deployment.answered(entry, other)  # another epsilon: another answer
    assert not deployment.answered(entry, deployment.request(entry, question="How many patients?", epsilon="0.01", delta=None))


def test_only_a_count_of_sql_in_a_noisy_mode_gets_a_key(tight):  # noqa: F811
    deployment, _client = tight
    entry, _key = deployment.add_key("cache-kinds")
    with deployment.ledger() as ledger:
        def key_of(**fields):
            return plain_count_key(Request(**fields), catalog=deployment.catalog, settings=deployment.settings, ledger=ledger,
                                   location=deployment.location, analyst=entry.analyst, dialect=deployment.dialect)

        assert key_of(sql=COUNT, epsilon="1") is not None
        assert key_of(question="How many patients?", epsilon="1") is None
        assert key_of(sql="SELECT diagnosis, COUNT(*) FROM Visit GROUP BY diagnosis", epsilon="1") is None  # its plan's key


PER_SEX = "SELECT Patient.sex, COUNT(*) FROM Patient GROUP BY Patient.sex"  # the demo declares the domain of Patient.sex


def test_a_cached_grouped_answer_is_never_refused(tight):  # noqa: F811
    """A grouped answer already paid for is returned free without accept_noise (before: 409, mostly noise)."""
    deployment, client = tight
    entry, key = deployment.add_key("cache-grouped-never-refused")
    headers = {"Authorization": f"Bearer {key}"}
    body = {"sql": PER_SEX, "epsilon": "0.001"}
    spent = _refused_then_paid(client, headers, "/v1/sql", body)
    again = client.post("/v1/sql", headers=headers, json=body)
    assert again.status_code == 200, again.text
    assert again.json()["cached"] is True and again.json()["groups"] == spent.json()["groups"]
    assert len(_charges(deployment, entry.analyst)) == 1
    other = client.post("/v1/sql", headers=headers, json={**body, "epsilon": "0.0011"})  # another plan: checked again
    assert other.status_code == 409, other.text


def test_a_cached_answer_to_a_grouped_question_is_never_refused(tight):  # noqa: F811
    deployment, client = tight
    entry, key = deployment.add_key("cache-grouped-ask")
    headers = {"Authorization": f"Bearer {key}"}
    body = {"question": "How many patients are there per sex?", "epsilon": "0.002"}
    spent = _refused_then_paid(client, headers, "/v1/ask", body)
    assert spent.json()["chosen_sql"] == PER_SEX, spent.text
    again = client.post("/v1/ask", headers=headers, json=body)
    assert again.status_code == 200 and again.json()["cached"] is True, again.text
    assert len(_charges(deployment, entry.analyst)) == 1


def test_a_split_counts_key_is_the_key_the_release_stores_it_under(with_policy):  # noqa: F811
    """The check's key of a count in a mode with a context (split) is the release's: its policy and context included."""
    deployment, client = with_policy
    entry, key = deployment.add_key("cache-split", "employee:1", ["employee:1"], ["treatment"])
    context = {"sender": "employee:1", "purpose": "treatment"}
    request = deployment.request(entry, sql=COUNT, epsilon="0.5", delta="0.000001", mode="split", **context)
    assert not deployment.answered(entry, request)
    released = client.post("/v1/sql", headers={"Authorization": f"Bearer {key}"},
                           json={"sql": COUNT, "epsilon": "0.5", "delta": "0.000001", "mode": "split", "accept_noise": True, **context})
    assert released.status_code == 200, released.text
    assert deployment.answered(entry, request)
    contextual = deployment.request(entry, sql=COUNT, epsilon="0.5", delta="0.000001", mode="contextual", **context)
    assert not deployment.answered(entry, contextual)  # another mode: another answer


def test_the_memo_keeps_the_most_recent_previews():
    memo = PreviewMemo(size=2)
    memo.put("a", {"n": 1})
    memo.put("b", {"n": 2})
    assert memo.get("a") == {"n": 1}  # now the most recent
    memo.put("c", {"n": 3})
    assert memo.get("b") is None and memo.get("a") == {"n": 1} and memo.get("c") == {"n": 3}
    assert memo.computed == 3


def test_the_load_benchmark_can_leave_the_noise_unaccepted():
    from benchmarks.service_load import _request, main

    for kind in ("sql_cached", "sql_uncached", "ask_cached", "ask_uncached"):
        assert _request(kind, 3, "1")[1]["accept_noise"] is True
        assert "accept_noise" not in _request(kind, 3, "1", accept_noise=False)[1]
    with pytest.raises(SystemExit):  # the option parses (and --db without --key is refused before anything runs)
        main(["--no-accept", "--db", "nowhere.duckdb"])
