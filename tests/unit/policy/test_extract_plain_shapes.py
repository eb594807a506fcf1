"""Issue 27 (POLICY9): generic fixes found on two more development texts written in styles no earlier text used,
an insurer's claims-file records manual (``tests/data/policies/dev_insurer_claims``: lettered sub-clauses under a
lead-in, ``is prohibited from``, cross-references) and a recruitment agency's plain-English notice
(``dev_recruitment``: "Our recruiters can see your profile", "Clients never get ...", "We let X see ..."), each
written with its gold before the extractor first ran on it. Every fix is tested on a scratch schema of another
domain (a car-rental company's renters), none of whose names are in those texts:

* shapes: a lead-in (``5. A desk agent may:``) completed by each lettered sub-clause (one sentence each, id
  ``C5_a``; before: the lead-in alone, and sub-clauses without agent or modal); a ``3.2`` label; contractions
  (``can't``, ``aren't allowed to``, ``we'll``), ``never``/``do not`` before a verb of data flow, ``is never
  shared``, ``will send``, ``We let X see``, ``X gets D``, ``No X shall``, a leading cross-reference
  (``Subject to paragraph 4,``), an adverb after the modal (``can only see ... if``), ``but only while`` and
  ``look at``; ``you have the right to work`` is no norm (before: the notice's norms were not read at all);
* the reader of a notice is the data subject: ``your X`` is the subject's X;
* roles: a table named only by a modifier of the role's head noun is weaker than a value as full (``rental agent``:
  Employee where team = 'rental', not the Rental table), a table named by the head whose modifier is one of its
  values covers the whole phrase (``valet provider``: Partner where kind = 'valet', not Employee where team
  = 'valet'), an agent noun names its activity's value (``recruiter`` ~ 'recruitment'), and a table named by
  lemma beats one that only shares its stem (``renter``: Renter, not Rental);
* conditions: a relationship to a record of the subject binds the subject through it (``the agent is assigned to
  the booking``; before: assigned to any booking: broader than the text); a party the conjunct points at (``they
  manage your account``) is bound or the permit is held; a reference between the parties named like a word of
  the conjunct grounds it (Renter.account_manager_id);
* data: a word that names columns of several tables is the subject's own column (``your name``: Renter.full_name,
  not BankAccount.account_name); a phrase that names a table in part and spells out one of its columns (``account
  number``) is that column, not the whole table.
"""

from __future__ import annotations

import pytest

from dev_policy_support import draft_and_confirmed_scores, enforced_norm, extract_on
from pimento.policy.review import apply_review, confirm_all
from pimento.policy.extract_offline.shapes import Sentence, parse_sentence, split_sentences


SCHEMA = """
CREATE TABLE Employee (employee_id INTEGER PRIMARY KEY, name VARCHAR, team VARCHAR);
CREATE TABLE Partner (partner_id INTEGER PRIMARY KEY, name VARCHAR, kind VARCHAR);
CREATE TABLE Renter (renter_id INTEGER PRIMARY KEY, full_name VARCHAR, home_address VARCHAR, date_of_birth DATE,
    licence_number VARCHAR, account_manager_id INTEGER REFERENCES Employee(employee_id));
CREATE TABLE Rental (rental_id INTEGER PRIMARY KEY, renter_id INTEGER REFERENCES Renter(renter_id),
    pickup_date DATE, mileage INTEGER);
CREATE TABLE Booking (booking_id INTEGER PRIMARY KEY, renter_id INTEGER REFERENCES Renter(renter_id), pickup_date DATE);
CREATE TABLE BookingAssignment (booking_id INTEGER REFERENCES Booking(booking_id),
    employee_id INTEGER REFERENCES Employee(employee_id), assigned_on DATE);
CREATE TABLE DamageReport (report_id INTEGER PRIMARY KEY, rental_id INTEGER REFERENCES Rental(rental_id),
    remarks VARCHAR);
CREATE TABLE BankAccount (bank_account_id INTEGER PRIMARY KEY, renter_id INTEGER REFERENCES Renter(renter_id),
    account_name VARCHAR, account_number VARCHAR);
INSERT INTO Employee VALUES (1, 'S1', 'rental'), (2, 'S2', 'inspection'), (3, 'S3', 'valet'), (4, 'S4', 'desk'),
    (5, 'S5', 'recruitment');
INSERT INTO Partner VALUES (1, 'P1', 'valet'), (2, 'P2', 'insurer');
INSERT INTO Renter VALUES (1, 'R1', 'a', DATE '1980-01-01', 'L1', 4), (2, 'R2', 'b', DATE '1990-01-01', 'L2', 4);
INSERT INTO Rental VALUES (1, 1, DATE '2024-01-01', 120), (2, 2, DATE '2024-02-01', 80);
INSERT INTO Booking VALUES (1, 1, DATE '2024-01-01');
INSERT INTO BookingAssignment VALUES (1, 1, DATE '2024-01-01');
INSERT INTO DamageReport VALUES (1, 1, 'scratch on the rear door');
INSERT INTO BankAccount VALUES (1, 1, 'R One', '11111111');
"""


def _frame(text: str):
    return parse_sentence(Sentence("C1", text))


# --------------------------------------------------------------------------- sentences and shapes


def test_lead_in_completed_by_each_sub_clause():
    text = ("5. A desk agent may:\n   (a) view the damage reports of a renter;\n   (b) view the mileage of a renter.\n"
            "6. The Company shall not:\n   (a) disclose the licence number of a renter to an insurer; or\n"
            "   (b) share a renter's home address with a valet provider.\n")
    got = [(s.id, s.text) for s in split_sentences(text)]
    assert got == [("C5_a", "A desk agent may view the damage reports of a renter"),
                   ("C5_b", "A desk agent may view the mileage of a renter."),
                   ("C6_a", "The Company shall not disclose the licence number of a renter to an insurer"),
                   ("C6_b", "The Company shall not share a renter's home address with a valet provider.")]


def test_section_number_label():
    assert [s.id for s in split_sentences("3.2 A desk agent may view the mileage of a renter.")] == ["C3_2"]


@pytest.mark.parametrize("text, sign, verb, agent, data, recipient", [
    ("Insurers never get your home address.", "deny", "receive", "Insurers", ["home address"], None),
    ("We don't sell your licence number to anyone.", "deny", "disclose", "We", ["licence number"], "anyone"),
    ("Your damage reports are never shared with insurers.", "deny", "passive", None, ["damage reports"],
     "insurers"),
    ("We'll send your licence number to an insurer.", "permit", "disclose", "We", ["licence number"], "insurer"),
    ("We let our valet provider see your home address.", "permit", "receive", "valet provider", ["home address"],
     None),
    ("Our valet provider gets your home address.", "permit", "receive", "valet provider", ["home address"], None),
    ("No insurer shall receive the damage reports of a renter.", "deny", "receive", "insurer", ["damage reports"],
     None),
    ("Desk agents can't look at your damage reports.", "deny", "receive", "Desk agents", ["damage reports"], None),
    ("Desk agents aren't allowed to see your mileage.", "deny", "receive", "Desk agents", ["mileage"], None),
    ("Subject to paragraph 4, a desk agent may view the mileage of a renter.", "permit", "receive", "desk agent",
     ["mileage"], None),
])
def test_plain_english_shapes(text, sign, verb, agent, data, recipient):
    f = _frame(text)
    assert (f.is_norm, f.sign, f.verb, f.agent, f.data, f.recipient) == (True, sign, verb, agent, data, recipient)


def test_present_tense_is_a_permit_only_in_a_provision():
    assert parse_sentence(Sentence("P3", "Our valet provider gets your home address.")).is_norm is False  # prose
    assert not _frame("We keep your home address for two years.").is_norm  # keep: no verb of data flow


def test_adverb_after_the_modal_and_but_only_while():
    f = _frame("A desk agent can only see your mileage if they are assigned to the rental.")
    assert (f.data, f.conditions) == (["mileage"], ["they are assigned to the rental"])
    f = _frame("Our desk team can view your mileage, but only while your rental is open.")
    assert (f.data, f.conditions) == (["mileage"], ["your rental is open"])


def test_a_right_that_is_no_flow_is_no_norm():
    assert not _frame("You have the right to work here before you start.").is_norm
    assert _frame("A renter has the right to inspect the damage reports of a renter.").is_norm


def test_the_reader_of_a_notice_is_the_subject():
    f = _frame("Our desk agents can see your home address and your date of birth.")
    assert (f.data, f.subject) == (["home address", "date of birth"], "you")
    assert _frame("An insurer can see the remarks on your rentals.").subject == "you"


# --------------------------------------------------------------------------- extraction on the scratch schema


TEXT = """RENTAL RENTER DATA RULES

1. A rental agent may view the mileage of a renter.
2. A valet provider may view the home address of a renter.
3. A recruiter may view the damage reports of a renter.
4. A desk agent may view the damage reports of a renter only if the agent is assigned to the booking.
5. A desk agent may view the licence number of a renter only if they manage the renter's account.
6. Desk agents may view the name and account number of a renter.
7. A desk agent can see your mileage only if they manage your account.
"""


@pytest.fixture(scope="module")
def extracted(tmp_path_factory):
    return extract_on(tmp_path_factory.mktemp("rental") / "rental.duckdb", SCHEMA, TEXT)


_norm = enforced_norm


def _role(result, name):
    g = result.policy["grounding"]
    spec = g["roles"][name]
    return g["principals"][spec["principal"]]["relation"], spec.get("where")


def _sql(result, nid):
    return result.policy["grounding"]["conditions"][_norm(result, nid)["condition"]]["sql"]


def test_role_head_noun_and_modifier_values(extracted):
    assert _role(extracted, _norm(extracted, "C1")["recipient"]) == ("Employee", "team = 'rental'")
    assert _role(extracted, _norm(extracted, "C2")["recipient"]) == ("Partner", "kind = 'valet'")
    # "recruiter" is team 'recruitment' by a shared root only (a synonym): since POLICY14 a role question, held in the
    # draft; its proposal, confirmed, is that value
    held = next(h for h in extracted.questions if h["clause"] == "C3")
    assert [(q["kind"], q["evidence"]) for q in held["questions"] if q["kind"] == "role"] == [("role", "synonym")]
    draft = extracted.draft()
    confirmed = apply_review(draft, confirm_all(draft))
    g = confirmed["grounding"]
    spec = g["roles"][next(n for n in confirmed["norms"] if n["id"] == "C3")["recipient"]]
    assert (g["principals"][spec["principal"]]["relation"], spec.get("where")) == ("Employee", "team = 'recruitment'")


def test_notice_subject_is_the_subject_principal(extracted):
    assert _role(extracted, _norm(extracted, "C7")["subject"]) == ("Renter", None)
    assert _role(extracted, _norm(extracted, "C1")["subject"]) == ("Renter", None)  # "renter": not Rental ("rent")


def test_relationship_to_the_subjects_record_binds_the_subject(extracted):
    assert _sql(extracted, "C4") == ("SELECT a.employee_id AS recipient, b.renter_id AS subject FROM BookingAssignment "
                                     "AS a JOIN Booking AS b ON b.booking_id = a.booking_id")


def test_pointed_party_bound_by_the_reference_named_like_a_word(extracted):
    assert _sql(extracted, "C5") == "SELECT renter_id AS subject, account_manager_id AS recipient FROM Renter"
    assert _sql(extracted, "C7") == _sql(extracted, "C5")  # "your account": the reader is the subject


def test_pointed_party_the_view_cannot_bind_is_held(tmp_path):
    schema = SCHEMA.replace(", account_manager_id INTEGER REFERENCES Employee(employee_id)", "").replace(", 4)", ")")
    result = extract_on(tmp_path / "x.duckdb", schema,
                        "1. A desk agent can see your licence number only if they manage your account.")
    assert not any(n["id"] == "C1" for n in result.policy.get("norms", []))  # not enforced for every renter
    (held,) = result.questions
    assert [q["kind"] for q in held["questions"]] == ["condition"]


def test_data_words_the_subject_owns_and_spelled_columns(extracted):
    # "name" shares a word with full_name without spelling it: proposed (POLICY10), enforced once confirmed
    (held,) = [h for h in extracted.questions if h["clause"] == "C6"]
    assert [q["evidence"] for q in held["questions"]] == ["column_partial"]
    draft = extracted.draft()
    confirmed = apply_review(draft, confirm_all(draft))
    norm = next(n for n in confirmed["norms"] if n["id"] == "C6")
    types = confirmed["grounding"]["data_types"]
    cols = {(loc["relation"], loc["attribute"]) for d in norm["data"] for loc in types[d]["locations"]}
    assert cols == {("Renter", "full_name"), ("BankAccount", "account_number")}


# --------------------------------------------------------------------------- figures (loose pins)


@pytest.mark.parametrize("name", ["dev_insurer_claims", "dev_recruitment"])
def test_new_dev_figures(tmp_path, name):
    s, confirmed = draft_and_confirmed_scores(tmp_path, name)  # the draft: since POLICY10 weak groundings are questions (79.9%, 99.5%)
    assert s["data"]["precision"] >= 0.95
    # since POLICY14 a permit whose role is grounded weakly is held too (dev_recruitment 79.9% -> 59.7%)
    assert s["all"]["f1"] >= (0.55 if name == "dev_recruitment" else 0.75)
    assert confirmed["all"]["f1"] >= 0.9  # confirmed: as before
