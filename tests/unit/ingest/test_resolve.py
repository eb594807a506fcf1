"""Entity resolution and constraint checking on hand-made mentions."""

from __future__ import annotations

import datetime as dt

import pytest

from pimento.ingest import Cell, Lookup, Mention, Span, load_target, resolve


@pytest.fixture
def catalog(clinic):
    return load_target(clinic["schema"]).catalog


def _m(table: str, doc: str, lookups=(), **values) -> Mention:
    cells = {c: Cell(v, (Span(doc, i, i + 1),)) for i, (c, v) in enumerate(values.items())}
    return Mention(table, cells, doc, tuple(lookups))


def _rows(resolution, table):
    return [{c: cell.value for c, cell in r.cells.items()} for r in resolution.rows[table]]


def test_the_same_key_in_many_documents_is_one_row_with_every_span(catalog) -> None:
    mentions = [_m("Patient", f"note-{i}", pat_id="17", name="Ada  Lovelace" if i else "ada lovelace") for i in range(10)]
    mentions.append(_m("Patient", "reg", pat_id=17, birth_year="1956"))
    result = resolve(catalog, mentions)
    assert _rows(result, "Patient") == [{"pat_id": 17, "name": "ada lovelace", "birth_year": 1956}]
    (row,) = result.rows["Patient"]
    assert sorted({s.doc_id for s in row.cells["pat_id"].spans}) == sorted([f"note-{i}" for i in range(10)] + ["reg"])
    assert not result.rejected


def test_a_mention_without_key_joins_the_row_that_agrees_on_match_on_whatever_the_order(catalog) -> None:
    early = _m("Patient", "a-note", name="Ada Lovelace", birth_year="1956", sex="F")
    keyed = _m("Patient", "z-reg", pat_id="17", name="Ada Lovelace", birth_year="1956")
    result = resolve(catalog, [early, keyed], match_on={"Patient": ("name", "birth_year")})
    assert _rows(result, "Patient") == [{"pat_id": 17, "name": "Ada Lovelace", "birth_year": 1956, "sex": "F"}]


def test_without_match_on_a_keyless_mention_is_a_new_row_with_a_surrogate_key(catalog) -> None:
    result = resolve(catalog, [_m("Patient", "r", pat_id="41", name="A B"), _m("Patient", "n", name="A B")])
    assert _rows(result, "Patient") == [{"pat_id": 41, "name": "A B"}, {"name": "A B", "pat_id": 42}]
    assert result.rows["Patient"][1].cells["pat_id"].spans == ()  # a surrogate has no span


def test_ambiguous_and_conflicting_mentions_are_rejected_with_the_reason(catalog) -> None:
    rows = [_m("Patient", "r1", pat_id="1", name="Sam Lee", birth_year="1970"),
            _m("Patient", "r2", pat_id="2", name="Sam Lee", birth_year="1970")]
    vague = _m("Patient", "n1", name="sam lee", birth_year="1970", sex="M")
    clash = _m("Patient", "n2", pat_id="1", birth_year="1971")
    result = resolve(catalog, [*rows, vague, clash], match_on={"Patient": ("name", "birth_year")})
    reasons = {r.mentions[0].doc_id: r.reason for r in result.rejected}
    assert reasons["n1"].startswith("ambiguous: 2 Patient rows")
    assert "conflicts with Patient row [1]: birth_year is 1970 (document r1), this mention says 1971" in reasons["n2"]
    assert [r["birth_year"] for r in _rows(result, "Patient")] == [1970, 1970]


def test_lookup_fills_the_key_of_the_one_matching_row_and_points_at_its_text(catalog) -> None:
    on = {"name": Cell("ADA LOVELACE", (Span("v", 20, 32),)), "birth_year": Cell("1956", (Span("v", 34, 38),))}
    visit = _m("Visit", "v", [Lookup("pat_id", "Patient", "pat_id", on)], visit_id="5", visit_date="2021-03-03")
    missing = _m("Visit", "w", [Lookup("pat_id", "Patient", "pat_id", {"name": Cell("Bob Smith")})], visit_id="6", visit_date="2021-03-03")
    result = resolve(catalog, [_m("Patient", "r", pat_id="17", name="Ada Lovelace", birth_year="1956"), visit, missing])
    (row,) = result.rows["Visit"]
    assert row.cells["pat_id"].value == 17 and row.cells["visit_date"].value == dt.date(2021, 3, 3)
    assert row.cells["pat_id"].spans == (Span("v", 20, 32), Span("v", 34, 38))
    (rejected,) = result.rejected
    assert rejected.reason == "lookup of pat_id: no Patient row(s) with name = 'Bob Smith'"


def test_a_rejected_parent_rejects_its_children_and_nothing_is_dropped(catalog) -> None:
    mentions = [
        _m("Patient", "r", pat_id="1"),  # no name: NOT NULL fails
        _m("Visit", "v1", visit_id="10", pat_id="1", visit_date="2020-01-01"),
        _m("Visit", "v2", visit_id="11", pat_id="99", visit_date="2020-01-01"),
        _m("Visit", "v3", visit_id="12", pat_id="1", visit_date="someday"),
    ]
    result = resolve(catalog, mentions)
    assert result.rows == {"Patient": [], "Visit": []}
    reasons = sorted((r.table, r.reason) for r in result.rejected)
    assert reasons == [
        ("Patient", "no value for required column(s) name"),
        ("Visit", "foreign key Visit(pat_id) -> Patient(pat_id): no Patient row with pat_id = 1"),
        ("Visit", "foreign key Visit(pat_id) -> Patient(pat_id): no Patient row with pat_id = 99"),
        ("Visit", "value 'someday' of Visit.visit_date does not convert (Invalid isoformat string: 'someday') (DATE)"),
    ]
    assert len(result.rejected) == len(mentions)


def test_a_repeated_unique_key_is_rejected(tmp_path) -> None:
    from pimento.ingest import load_target

    schema = tmp_path / "u.sql"
    schema.write_text("CREATE TABLE Badge (badge_id INTEGER PRIMARY KEY, code TEXT UNIQUE);", encoding="utf-8")
    catalog = load_target(schema).catalog
    result = resolve(catalog, [_m("Badge", "a", badge_id="1", code="X-1"), _m("Badge", "b", badge_id="2", code="x-1")])
    assert [r.value("badge_id") for r in result.rows["Badge"]] == [1]
    assert result.rejected[0].reason == "repeats the unique key (code) of Badge row [1]"
