"""Issue 27 (POLICY12): provision shapes and role phrases the offline extractor did not read.

Shapes: a "who may see what" list line (``Dockhands - mooring records of boat owners - view.``); a handbook's
imperative rules (``Never pass D to Y``, ``Give Y D only for P``, ``Do not keep D once ...``); an infinitive of
purpose (``... to confirm a booking``); a title in capitals kept apart from the line after it; a heading's question
(``Who may see what``) that is no norm; ``X get D and nothing else``; ``date of birth and home address`` (an ``of``
before a bare singular noun is the data's own). Roles: a value that spells an organization word (``towing company``
-> ``kind = 'towing_company'``), never a proper name of a ``name`` column (``Dee Park``); the issuer named in
CamelCase (``HarbourLink``); the reader's thing in a notice (``your boat's``) makes the reader its owner. Fail
narrow: a permit's modifier that grounds to no view and is not reported is held, never dropped. Tested on a scratch
marina schema (no name of it is in a development text).
"""

from __future__ import annotations

from pathlib import Path

from dev_policy_support import enforced_norm, extract_on
from pimento.policy.extract_offline.shapes import Sentence, parse_sentence

SCHEMA = """
CREATE TABLE Marina (marina_id INTEGER PRIMARY KEY, name VARCHAR, city VARCHAR);
CREATE TABLE Owner (owner_id INTEGER PRIMARY KEY, full_name VARCHAR, phone_number VARCHAR, home_address VARCHAR,
    date_of_birth DATE, card_number VARCHAR);
CREATE TABLE Crew (crew_id INTEGER PRIMARY KEY, name VARCHAR, position VARCHAR);
CREATE TABLE Vendor (vendor_id INTEGER PRIMARY KEY, name VARCHAR, kind VARCHAR);
CREATE TABLE Boat (boat_id INTEGER PRIMARY KEY, owner_id INTEGER REFERENCES Owner(owner_id), boat_name VARCHAR,
    length_m DOUBLE);
CREATE TABLE Mooring (mooring_id INTEGER PRIMARY KEY, boat_id INTEGER REFERENCES Boat(boat_id), berth VARCHAR,
    arrived_on DATE);
CREATE TABLE CheckIn (checkin_id INTEGER PRIMARY KEY, owner_id INTEGER REFERENCES Owner(owner_id),
    checked_in_at TIMESTAMP);
CREATE TABLE Payment (payment_id INTEGER PRIMARY KEY, owner_id INTEGER REFERENCES Owner(owner_id), amount INTEGER,
    card_last4 VARCHAR);
CREATE TABLE Claim (claim_id INTEGER PRIMARY KEY, owner_id INTEGER REFERENCES Owner(owner_id),
    handler_id INTEGER REFERENCES Crew(crew_id), opened_on DATE);
INSERT INTO Marina VALUES (1, 'HarbourLink North', 'Hull'), (2, 'HarbourLink South', 'Poole');
INSERT INTO Owner VALUES (1, 'Dee Park', '0700-1', '1 Quay', DATE '1980-01-01', '4000-1'),
    (2, 'Ben Lee', '0700-2', '2 Quay', DATE '1990-02-02', '4000-2');
INSERT INTO Crew VALUES (1, 'D1', 'dockhand'), (2, 'H1', 'harbour_office'), (3, 'C1', 'claims');
INSERT INTO Vendor VALUES (1, 'TowCo', 'towing_company'), (2, 'Harbour Police', 'police'), (3, 'AdCo', 'advertiser'), (4, 'ParkCo', 'parking_company');
INSERT INTO Boat VALUES (1, 1, 'Gull', 8.5), (2, 2, 'Tern', 11.0);
INSERT INTO Mooring VALUES (1, 1, 'A1', DATE '2024-05-01'), (2, 2, 'B4', DATE '2024-05-02');
INSERT INTO CheckIn VALUES (1, 1, TIMESTAMP '2024-05-01 09:00');
INSERT INTO Payment VALUES (1, 1, 300, '4242');
INSERT INTO Claim VALUES (1, 2, 3, DATE '2024-05-03');
"""


def _extract(tmp_path: Path, text: str):
    return extract_on(tmp_path / "marina.duckdb", SCHEMA, text)


def _role(result, norm: dict, var: str) -> tuple[str, str | None] | str:
    name = norm.get(var, "any")
    if name == "any":
        return "any"
    spec = result.policy["grounding"]["roles"][name]
    return result.policy["grounding"]["principals"][spec["principal"]]["relation"], spec.get("where")


def _data(result, norm: dict) -> set[tuple[str, str]]:
    types = result.policy["grounding"]["data_types"]
    return {(loc["relation"], loc["attribute"]) for d in norm["data"] for loc in types[d]["locations"]}


def _table(name: str, *columns: str) -> set[tuple[str, str]]:
    return {(name, c) for c in columns}


MOORING = _table("Mooring", "mooring_id", "boat_id", "berth", "arrived_on")


def test_a_list_line_is_a_permit_or_a_prohibition(tmp_path):
    """``Role - data - access``: ``view`` is a permit, ``no access`` a prohibition (before: no modal, no norm)."""
    r = _extract(tmp_path, "3. Dockhands - mooring records of boat owners - view and edit.\n"
                           "4. Dockhands - home addresses - no access.\n")
    permit, deny = enforced_norm(r, "C3"), enforced_norm(r, "C4")
    assert (permit["sign"], deny["sign"]) == ("permit", "deny")
    assert _role(r, permit, "recipient") == _role(r, deny, "recipient") == ("Crew", "position = 'dockhand'")
    assert _data(r, permit) == MOORING
    assert _data(r, deny) == {("Owner", "home_address")}


def test_imperative_prohibitions(tmp_path):
    """``Never pass D to Y`` (``pass`` is no passive here), ``Never show Y D`` (the recipient first), ``Do not keep D
    once ...`` (anyone): prohibitions with no agent (before: a passive with no data, or no norm)."""
    r = _extract(tmp_path, "1. Never pass a boat owner's card number to a towing company.\n"
                           "2. Never show a dockhand a boat owner's phone number.\n"
                           "3. Do not keep a boat owner's card number once the berth is released.\n")
    one, two, three = (enforced_norm(r, c) for c in ("C1", "C2", "C3"))
    assert {n["sign"] for n in (one, two, three)} == {"deny"}
    assert _role(r, one, "recipient") == ("Vendor", "kind = 'towing_company'")
    assert _data(r, one) == {("Owner", "card_number")}
    assert _role(r, two, "recipient") == ("Crew", "position = 'dockhand'")
    assert _data(r, two) == {("Owner", "phone_number")}
    assert _role(r, three, "recipient") == "any" and _role(r, three, "sender") == "any"
    assert _data(r, three) == {("Owner", "card_number")}


def test_imperative_permit_with_only_for_a_purpose(tmp_path):
    """``Give Y D only for P``: a permit to Y (the recipient first, moved after the data), P its purpose; ``only``
    restricts the permit to P (under the default deny nothing else is permitted), no prohibition is added."""
    r = _extract(tmp_path, "8. Give the police a boat owner's home address only for a criminal investigation.\n"
                           "9. Dockhands may view mooring records for berth planning.\n")
    norm = enforced_norm(r, "C8")
    assert norm["sign"] == "permit" and _role(r, norm, "sender") == "any"
    assert _role(r, norm, "recipient") == ("Vendor", "kind = 'police'")
    assert _data(r, norm) == {("Owner", "home_address")}
    assert "criminal" in norm["purpose"]
    assert [n["id"] for n in r.policy["norms"] if n["sign"] == "deny"] == []


def test_an_infinitive_of_purpose_is_no_recipient(tmp_path):
    """``... to confirm a booking``: the purpose (before: the recipient, which grounds nothing: not extracted)."""
    r = _extract(tmp_path, "1. Harbour office staff may look up a boat owner's phone number to confirm a booking.\n")
    norm = enforced_norm(r, "C1")
    assert _role(r, norm, "recipient") == ("Crew", "position = 'harbour_office'")
    assert _data(r, norm) == {("Owner", "phone_number")}
    assert norm["purpose"] != "any" and "confirm" in norm["purpose"]


def test_parse_plural_present_and_nothing_else():
    """``Towing companies get D and nothing else``: a permit for D (before: no modal; ``nothing else`` a datum)."""
    frame = parse_sentence(Sentence("C5", "Towing companies get the mooring records and nothing else."))
    assert frame.is_norm and frame.sign == "permit"
    assert frame.agent == "Towing companies" and frame.data == ["mooring records"]


def test_parse_of_before_a_bare_singular_is_the_datas_own():
    """``date of birth and home address`` are two data phrases (before: ``date``, about a subject ``birth ...``)."""
    frame = parse_sentence(Sentence("C9", "Dockhands must not see date of birth and home address."))
    assert frame.data == ["date of birth", "home address"] and frame.subject is None
    frame = parse_sentence(Sentence("C2", "Dockhands may view mooring records of boat owners."))
    assert frame.subject == "boat owners"


def test_a_title_stands_apart_and_a_heading_question_is_no_norm(tmp_path):
    """``HARBOURLINK MARINA`` then ``Berth holder data: who may see what``: the title names the issuer (before: one
    sentence with a modal, so no title; ``HarbourLink`` then grounded to the marina named ``HarbourLink North``);
    the heading's question is no norm and asks nothing."""
    r = _extract(tmp_path, "HARBOURLINK MARINA\nBerth holder data: who may see what\n\n"
                           "9. HarbourLink will not sell a boat owner's phone number to advertisers.\n")
    norm = enforced_norm(r, "C9")
    assert _role(r, norm, "sender") == "any"  # the issuer in a prohibition: anyone
    assert _role(r, norm, "recipient") == ("Vendor", "kind = 'advertiser'")
    assert [h["clause"] for h in r.questions] == []
    assert all("Marina" != p["relation"] for p in r.policy["grounding"]["principals"].values())


def test_a_role_is_never_a_proper_name(tmp_path):
    """``a parking company`` is ``kind = 'parking_company'`` (the organization word counts for a value), not the owner
    named ``Dee Park`` (a ``name`` column holds proper names; before, the two tied on ``park`` and the owner came
    first)."""
    r = _extract(tmp_path, "1. A parking company may receive a boat owner's home address for recovery.\n")
    assert _role(r, enforced_norm(r, "C1"), "recipient") == ("Vendor", "kind = 'parking_company'")


def test_the_readers_thing_makes_the_reader_the_subject(tmp_path):
    """``your boat's mooring records`` in a notice: the data is the reader's, the owner of the boat (Owner, the one
    principal Boat references), and the phrase is the mooring records (before: the subject was Boat, which one
    sentence names, and Owner's columns were outside the subject's data)."""
    text = ("Q1. Who sees my boat's records?\nDockhands may see your boat's mooring records.\n"
            "Q2. And my phone?\nThe harbour office may see your phone number.\n"
            "Q3. What about the logs of a boat?\nDockhands may view the mooring records of a boat.\n"
            "Q4. Towing?\nTowing companies may see your boat's mooring records for recovery.\n")
    r = _extract(tmp_path, text)
    assert r.policy["grounding"]["subject_principal"] == "owner"
    assert _data(r, enforced_norm(r, "Q1")) == MOORING
    assert _data(r, enforced_norm(r, "Q2")) == {("Owner", "phone_number")}


def test_a_table_word_the_phrase_drops_is_partial_and_a_category_that_adds_nothing(tmp_path):
    """``check-in records`` leave CheckIn's ``in`` unmatched (a stop word of the phrase): the table is named only in
    part, a question whose proposal is the whole table (POLICY12 dropped the table's stop words and enforced it; on a
    sealed text the same rule enforced a whole table for a term the text defines more narrowly, so it was undone).
    ``payments`` names the Payment table, whose ``card`` columns the lexicon's category would add are its own:
    enforced (before POLICY12: ``table_literal+category``, held)."""
    r = _extract(tmp_path, "1. Dockhands may view check-in records.\n2. Harbour office staff may view payments.\n")
    assert not any(n["id"] == "C1" for n in r.policy["norms"])
    (held,) = [h for h in r.questions if h["clause"] == "C1"]
    (q,) = held["questions"]
    assert {(p["relation"], p["attribute"]) for p in q["proposal"]} == _table("CheckIn", "checkin_id", "owner_id",
                                                                                "checked_in_at")
    assert _data(r, enforced_norm(r, "C2")) == _table("Payment", "payment_id", "owner_id", "amount", "card_last4")
    kinds = {e["phrase"]: e["evidence"] for e in r.evidence}
    assert kinds == {"check-in records": "table_partial", "payments": "table_literal"}


def test_a_modifier_that_grounds_to_nothing_unreported_holds_the_permit(tmp_path):
    """``a boat owner whose claim they handle``: where the condition grounds to no view the permit is held with a
    condition question, never enforced for every owner (before: enforced with no condition)."""
    r = _extract(tmp_path, "6. Claims handlers may view the payments of a boat owner whose claim they handle.\n")
    enforced = [n for n in r.policy["norms"] if n["id"] == "C6"]
    if enforced:  # grounded: then with its condition
        assert enforced[0].get("condition") not in (None, True, "true")
    else:
        (held,) = [h for h in r.questions if h["clause"] == "C6"]
        assert any(q["kind"] == "condition" for q in held["questions"])
