"""Issue 27 (POLICY7): generic grounding fixes found on two new development texts, a mobile operator's
subscriber-data policy (``tests/data/policies/dev_telecom``) and a university's admissions-records policy
(``dev_admissions``), each written with its gold before the extractor first ran on it. Every fix is tested on
a scratch schema of another domain (a permit office's registrants), none of whose names are in those texts:

* the subject's ``of`` is the one a determiner follows ("the date of birth and street address *of a*
  registrant"; before: the data was ``date`` alone, the address lost);
* two definitions in one sentence (``"X" means ..., and "Y" means ...``; before: the second was read as an
  item of the first, which then grounded nothing), and a listed item's own subject dropped ("permit
  histories of a registrant's sites" -> permit histories);
* a table named word for word beats one that shares only a stem or a substring with the phrase
  ("registrations" -> Registration, not every column about the Registrant; before: all of them);
* a table named word for word and then one of its columns is that column ("inspection remarks" ->
  Inspection.remarks; "registration outcome" -> Registration.outcome; before: the table's keys too, or every
  key named like "registrant" in every table: a permit covering columns the text does not name);
* a condition that names only the two parties ("if the caseworker is the registrant's caseworker") is the
  foreign key between them named like one of its words (Registrant.caseworker_id; before: no content word,
  so the conjunct was dropped and the permit enforced for every registrant: broader than the text), and
  held for review when no such key exists;
* ``information about a registrant's nationality`` is the nationality (before: every column about the
  registrant, in a prohibition);
* a word that is part of a several-word table's name the phrase spells out is that name, not its
  lexicon category ("payment card details" -> PaymentCard; before: every payment/invoice table too).
"""

from __future__ import annotations

import pytest

from dev_policy_support import draft_and_confirmed_scores, enforced_norm, extract_on

from pimento.policy.review import apply_review, confirm_all
from pimento.policy.extract_offline import definitions
from pimento.policy.extract_offline.shapes import Sentence, parse_sentence

SCHEMA = """
CREATE TABLE Staff (staff_id INTEGER PRIMARY KEY, name VARCHAR, unit VARCHAR);
CREATE TABLE Registrant (registrant_id INTEGER PRIMARY KEY, full_name VARCHAR, date_of_birth DATE,
    street_address VARCHAR, nationality VARCHAR, caseworker_id INTEGER REFERENCES Staff(staff_id));
CREATE TABLE Registration (registration_id INTEGER PRIMARY KEY,
    registrant_id INTEGER REFERENCES Registrant(registrant_id), trade VARCHAR, outcome VARCHAR);
CREATE TABLE Inspection (inspection_id INTEGER PRIMARY KEY,
    registration_id INTEGER REFERENCES Registration(registration_id),
    inspector_id INTEGER REFERENCES Staff(staff_id), remarks VARCHAR);
CREATE TABLE PaymentCard (card_id INTEGER PRIMARY KEY, registrant_id INTEGER REFERENCES Registrant(registrant_id),
    last4 VARCHAR);
CREATE TABLE Invoice (invoice_id INTEGER PRIMARY KEY, registrant_id INTEGER REFERENCES Registrant(registrant_id),
    amount DECIMAL(8, 2));
INSERT INTO Staff VALUES (1, 'S1', 'clerk'), (2, 'S2', 'inspector'), (3, 'S3', 'caseworker');
INSERT INTO Registrant VALUES (1, 'R1', DATE '1970-01-01', 'a', 'X', 3), (2, 'R2', DATE '1980-01-01', 'b', 'Y', 3);
INSERT INTO Registration VALUES (1, 1, 'plumbing', 'granted'), (2, 2, 'roofing', 'refused');
INSERT INTO Inspection VALUES (1, 1, 2, 'ok');
INSERT INTO PaymentCard VALUES (1, 1, '4242');
INSERT INTO Invoice VALUES (1, 1, 10.00);
"""

TEXT = """PERMIT OFFICE RECORDS RULES

In this Policy, "identity details" means a registrant's full name and date of birth, and "origin information"
means a registrant's nationality and street address.

1. A clerk may view the registrations of a registrant.
2. A clerk may view the registration outcome of any registrant.
3. An inspector may view the inspection remarks of a registrant.
4. A clerk may view the date of birth and street address of a registrant.
5. A clerk may view the origin information of a registrant.
6. An inspector shall not view the payment card details of a registrant.
7. A clerk may view the identity details of a registrant.
8. A caseworker may view the registrations of a registrant if the caseworker is the registrant's caseworker.
9. Information about a registrant's nationality must not be shared with an inspector.
"""


@pytest.fixture(scope="module")
def extracted(tmp_path_factory):
    return extract_on(tmp_path_factory.mktemp("permits") / "permits.duckdb", SCHEMA, TEXT)


def _columns(result, nid):
    norm = enforced_norm(result, nid)
    types = result.policy["grounding"]["data_types"]
    return {(loc["relation"], loc["attribute"]) for d in norm["data"] for loc in types[d]["locations"]}


def test_subject_is_the_of_a_determiner_follows():
    frame = parse_sentence(Sentence("C1", "A clerk may view the date of birth and street address of a registrant."))
    assert frame.data == ["date of birth", "street address"] and frame.subject == "registrant"
    # no determiner after any "of": the first one, as before
    assert parse_sentence(Sentence("C2", "A clerk may view the records of registrants.")).subject == "registrants"


def test_date_of_birth_and_another_column(extracted):
    assert _columns(extracted, "C4") == {("Registrant", "date_of_birth"), ("Registrant", "street_address")}


def test_two_definitions_in_one_sentence(extracted):
    defined = definitions(TEXT)
    assert defined["identity details"] == ["full name", "date of birth"]
    assert defined["origin information"] == ["nationality", "street address"]
    assert _columns(extracted, "C5") == {("Registrant", "nationality"), ("Registrant", "street_address")}
    assert _columns(extracted, "C7") == {("Registrant", "full_name"), ("Registrant", "date_of_birth")}


def test_defined_item_drops_its_own_subject():
    defined = definitions('"site data" means the permit histories of a registrant\'s sites and their addresses.')
    assert defined["site data"] == ["permit histories", "addresses"]


def test_table_named_word_for_word_beats_a_shared_stem(extracted):
    assert _columns(extracted, "C1") == {("Registration", c) for c in
                                         ("registration_id", "registrant_id", "trade", "outcome")}


def test_table_then_its_column_is_that_column(extracted):
    assert _columns(extracted, "C2") == {("Registration", "outcome")}
    # C3's recipient ("inspector": the Inspection table by a shared stem only) is a role question since POLICY14, so
    # the permit is held; its data grounding is read from the confirmed reading
    draft = extracted.draft()
    confirmed = apply_review(draft, confirm_all(draft))
    norm = next(n for n in confirmed["norms"] if n["id"] == "C3")
    types = confirmed["grounding"]["data_types"]
    assert {(loc["relation"], loc["attribute"]) for d in norm["data"] for loc in types[d]["locations"]} == {
        ("Inspection", "remarks")}
    assert [q["evidence"] for h in extracted.questions if h["clause"] == "C3" for q in h["questions"]] == ["synonym"]


def test_compound_table_name_is_not_its_category(extracted):
    assert _columns(extracted, "C6") == {("PaymentCard", c) for c in ("card_id", "registrant_id", "last4")}


def test_condition_naming_only_the_parties_is_their_reference(extracted):
    norm = next(n for n in extracted.policy["norms"] if n["id"] == "C8")
    sql = extracted.policy["grounding"]["conditions"][norm["condition"]]["sql"]
    assert sql == "SELECT registrant_id AS subject, caseworker_id AS recipient FROM Registrant"


def test_party_relation_without_a_reference_is_held(tmp_path):
    result = extract_on(tmp_path / "x.duckdb",
                        SCHEMA.replace(", caseworker_id INTEGER REFERENCES Staff(staff_id)", "").replace(", 3)", ")"),
                        "1. A caseworker may view the registrations of a registrant if the caseworker is the registrant's "
                        "caseworker.")
    assert not any(n["id"] == "C1" for n in result.policy["norms"])  # not enforced for every registrant
    (held,) = result.questions
    assert [q["kind"] for q in held["questions"]] == ["condition"]


def test_information_about_a_possessive_is_its_noun(extracted):
    assert _columns(extracted, "C9") == {("Registrant", "nationality")}


# --------------------------------------------------------------------------- figures (loose pins)


@pytest.mark.parametrize("name", ["dev_telecom", "dev_admissions"])
def test_new_dev_figures(tmp_path, name):
    s, confirmed = draft_and_confirmed_scores(tmp_path, name)  # the draft: since POLICY10 weak groundings are questions (82.3%, 88.5%)
    assert s["data"]["precision"] >= 0.95
    assert s["all"]["f1"] >= 0.8
    assert confirmed["all"]["f1"] >= 0.85  # confirmed: as before
