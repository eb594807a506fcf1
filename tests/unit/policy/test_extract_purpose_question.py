"""Issue 27 (RQ4 with the reviewed extracted policy): a permit that states no purpose, in a text whose
other sentences name purposes, gets an *advisory purpose* question for the custodian, on a scratch gym
schema (none of the shipped domains' words).

A text that says "to a trainer" may mean "to a trainer, for training"; the review can narrow it. The
question is advisory (POLICY6): the draft enforces the permit as the text reads, any purpose (at
609bad9 it held the permit out of the draft, which cost the draft reading's F1 on texts where such
permits do mean any purpose). Its proposal is ``any`` (confirming keeps the literal reading, so a
confirm-all review equals the draft), an edit names the purposes it holds for, a drop drops the
permit; compile still refuses a draft with an open advisory question (the custodian must have seen
it), ``--drop-open-questions`` compiles the permit as read. The CLI's ``--review`` prompt labels it
advisory with ``confirm`` as the default; the careful simulated review (``benchmarks.cql_review``)
answers it. Not asked: public data, the subject's own access ("about them"), or a text that names no
purpose anywhere.
"""

from __future__ import annotations

import duckdb
import pytest
import yaml
from typer.testing import CliRunner

from benchmarks.cql_review import careful_answers, careful_review
from pimento.cli.app import app
from pimento.engines.database import load_database
from pimento.errors import PolicyError
from pimento.policy import compile_policy
from pimento.policy.extract_offline import extract_policy_offline
from pimento.policy.model import policy_from_dict
from pimento.policy.review import apply_review, confirm_all, holds_norm, open_questions, require_reviewed
from purpose_review_support import GYM_SQL, GYM_TEXT

runner = CliRunner()


def _gym_db(path, *extra: str):
    """The scratch gym database at ``path``, with ``extra`` statements after the shared ones."""
    con = duckdb.connect(str(path))
    for sql in [*GYM_SQL, *extra]:
        con.execute(sql)
    con.close()
    return path


@pytest.fixture(scope="module")
def gym(tmp_path_factory):
    return _gym_db(tmp_path_factory.mktemp("purpose") / "gym.duckdb")


def _extract(path, text=GYM_TEXT):
    db = load_database(path)
    try:
        return extract_policy_offline(text, db.catalog, engine=db.engine, year=2024)
    finally:
        db.close()


def _purpose(doc, nid):
    norm = next(n for n in doc["norms"] if n["id"] == nid)
    return norm["purpose"], doc["grounding"]["purposes"].get(norm["purpose"])


def _ids(doc):
    return [n["id"] for n in doc["norms"]]


def test_a_permit_stating_no_purpose_is_enforced_as_read_with_an_advisory_question(gym) -> None:
    result = _extract(gym)
    assert _ids(result.policy) == ["G1", "G2", "G3", "G4"]  # G1 is in the draft as read: any purpose
    assert _purpose(result.policy, "G1")[0] == "any"
    (q,) = [q for q in open_questions(result.draft()) if q["clause"] == "G1"]
    assert (q["kind"], q["proposal"], q["options"]) == ("purpose", "any", ["nutrition"])
    assert q["advisory"] is True and not holds_norm(q)
    assert "enforced as any purpose unless you narrow it" in q["reason"]
    # public data and the subject's own access are not asked about
    assert {q["clause"] for q in open_questions(result.draft())} == {"G1"}


def test_a_text_that_names_no_purpose_asks_none(gym) -> None:
    result = _extract(gym, GYM_TEXT.replace(" for nutrition", ""))
    assert not open_questions(result.draft())
    assert _ids(result.policy) == ["G1", "G2", "G3", "G4"]


def test_review_confirm_edit_drop_a_purpose(gym) -> None:
    db = load_database(gym)
    try:
        draft = _extract(gym).draft()
        # edit: the permit holds for exactly the named purposes (no sub-purposes), and compiles
        doc = apply_review(draft, {"G1.1": {"edit": ["coaching", "rehab"]}})
        name, spec = _purpose(doc, "G1")
        assert spec == {"values": ["coaching", "rehab"]} and name != "any"
        compile_policy(policy_from_dict(doc), db.catalog, db.engine)
        # a purpose the draft already grounds exactly is reused; a comma-separated string is accepted
        assert _purpose(apply_review(draft, {"G1.1": {"edit": "nutrition"}}), "G1")[0] == "nutrition"
        # the edit narrows the one enforced G1, it does not add a second
        assert _ids(doc) == ["G1", "G2", "G3", "G4"]
        # confirm: the proposal, any purpose: the reviewed norms are the draft's (confirm-all equals the draft)
        assert confirm_all(draft) == {"G1.1": "confirm"}
        confirmed = apply_review(draft, {"G1.1": "confirm"})
        assert confirmed["norms"] == _extract(gym).policy["norms"]
        # drop: the permit is gone (fail closed), the others stay
        assert _ids(apply_review(draft, {"G1.1": "drop"})) == ["G2", "G3", "G4"]
        for bad in ([], "", ["any"], ["x;y"], [3]):
            with pytest.raises(PolicyError, match="purpose"):
                apply_review(draft, {"G1.1": {"edit": bad}})
    finally:
        db.close()


def test_the_careful_review_answers_a_purpose_question_from_the_gold(gym) -> None:
    draft = _extract(gym).draft()
    gold = {"grounding": {"purposes": {"training": {"values": ["training"], "includes": ["rehab"]},
                                       "rehab": {"values": ["rehab"]}}},
            "norms": [{"id": "G1", "sign": "permit", "data": [], "purpose": "training"}]}
    assert careful_answers(draft, gold) == {"G1.1": {"edit": ["training", "rehab"]}}
    assert _purpose(careful_review(draft, gold), "G1")[1] == {"values": ["training", "rehab"]}
    gold["norms"][0]["purpose"] = "any"
    assert careful_answers(draft, gold) == {"G1.1": "confirm"}


def _cli_review(gym, tmp_path, answers: str):
    text, out = tmp_path / "policy.txt", tmp_path / "reviewed.yaml"
    text.write_text(GYM_TEXT, encoding="utf-8")
    res = runner.invoke(app, ["policy", "extract", str(text), "--db", str(gym), "--out", str(out), "--review"],
                        input=answers)
    assert res.exit_code == 0, res.output
    return res.output, yaml.safe_load(out.read_text(encoding="utf-8"))


def test_the_cli_review_prompt_asks_the_purpose(gym, tmp_path) -> None:
    output, reviewed = _cli_review(gym, tmp_path, "edit\ncoaching, rehab\n")
    assert "proposal: any purpose" in output and "purposes the text names: nutrition" in output
    assert "advisory: enforced as any purpose unless you narrow it" in output
    assert _purpose(reviewed, "G1")[1] == {"values": ["coaching", "rehab"]}


def test_the_cli_prompt_defaults_an_advisory_question_to_what_the_draft_enforces(gym, tmp_path) -> None:
    """Enter alone at the prompt confirms an advisory question (any purpose: the draft's reading), where a
    question that holds its permit defaults to drop (fail closed)."""
    output, reviewed = _cli_review(gym, tmp_path, "\n")
    assert "[confirm]" in output
    assert _ids(reviewed) == ["G1", "G2", "G3", "G4"] and _purpose(reviewed, "G1")[0] == "any"


def test_compile_refuses_a_draft_whose_only_open_question_is_advisory(gym, tmp_path) -> None:
    """The enforced policy is only ever the reviewed one: an advisory question is open until answered, so
    compile refuses the draft (naming it advisory); --drop-open-questions compiles the draft's norms, where
    the advisory permit is enforced as read (it holds nothing back)."""
    draft = _extract(gym).draft()
    with pytest.raises(PolicyError, match="1 open question.*1 advisory"):
        require_reviewed(draft, source="draft")
    path = tmp_path / "policy.draft.yaml"
    path.write_text(yaml.safe_dump(draft, sort_keys=False), encoding="utf-8")
    refused = runner.invoke(app, ["policy", "compile", str(path), "--db", str(gym), "--json", "--quiet"])
    assert refused.exit_code != 0 and "open question" in refused.output
    res = runner.invoke(app, ["policy", "compile", str(path), "--db", str(gym), "--json", "--quiet",
                              "--drop-open-questions"])
    assert res.exit_code == 0, res.output
    assert '"norms": 4' in res.output  # G1 included


def test_a_condition_pointing_back_with_that_is_a_question_not_a_view_of_one_party(tmp_path) -> None:
    """"to a staff member who supervises *that* trainer": the trainer the sentence names (the sender), not any
    trainer. A view that binds one party only ("SELECT ... FROM Supervises", every supervisor) is broader than
    the text, so the condition is asked (the permit held); "supervises *a* trainer" keeps its view."""
    path = _gym_db(tmp_path / "gym.duckdb",
                   "CREATE TABLE Supervises (supervisor_id INTEGER REFERENCES Staff(staff_id), "
                   "supervisee_id INTEGER REFERENCES Staff(staff_id), PRIMARY KEY (supervisor_id, supervisee_id))",
                   "INSERT INTO Supervises VALUES (2, 1)")
    text = "G1. A trainer may disclose a member's workouts for training to a staff member who supervises {} trainer.\n"
    pointing_back = _extract(path, text.format("that"))
    assert not pointing_back.policy["norms"] and not pointing_back.policy["grounding"]["conditions"]
    assert [(q["kind"], q["phrase"]) for q in open_questions(pointing_back.draft())] == [
        ("condition", "who supervises that trainer")]
    assert _ids(_extract(path, text.format("a")).policy) == ["G1"]


def test_the_careful_review_writes_the_one_missing_condition_beside_a_purpose_question(gym) -> None:
    text = GYM_TEXT.replace("G1. A trainer may view a member's workouts.",
                            "G1. A trainer may view a member's workouts if the trainer coaches the member.")
    draft = _extract(gym, text).draft()
    assert [q["kind"] for q in open_questions(draft) if q["clause"] == "G1"] == ["condition", "purpose"]
    sql = "SELECT staff_id AS recipient, member_id AS subject FROM Staff, Member WHERE staff_id = member_id"
    gold = {"grounding": {"conditions": {"coaches": {"sql": sql}}, "purposes": {}},
            "norms": [{"id": "G1", "sign": "permit", "data": [], "condition": "coaches"}]}
    assert careful_answers(draft, gold) == {"G1.1": {"edit": sql}, "G1.2": "confirm"}


def test_a_prohibition_asks_about_the_free_text_that_may_mention_it(tmp_path) -> None:
    """"shall not disclose a member's injury": the column is prohibited at once (enforced without a question), and
    the member's free-text columns it does not cover (a trainer's remark, which may name the injury; no dependency
    sees inside it) are an extension question: confirm prohibits them too, drop leaves the prohibition as it was."""
    path = _gym_db(tmp_path / "gym.duckdb",
                   "CREATE TABLE Checkup (checkup_id INTEGER PRIMARY KEY, member_id INTEGER REFERENCES "
                   "Member(member_id), injury VARCHAR, remark VARCHAR)",
                   "INSERT INTO Checkup VALUES (1, 1, 'knee', 'Member reports knee pain after the long run')")
    text = ("G1. A dietitian may view a member's weight for nutrition.\n"
            "G2. A dietitian shall not view a member's injury.\n")
    result = _extract(path, text)
    draft = result.draft()
    assert _ids(result.policy) == ["G1", "G2"]  # the prohibition is enforced as grounded
    (q,) = open_questions(draft)
    assert (q["clause"], q["kind"], q["extends"]) == ("G2", "data", True)
    assert q["proposal"] == [{"relation": "Checkup", "attribute": "remark"}]  # not the names, keys or categories

    def columns(doc):
        norm = next(n for n in doc["norms"] if n["id"] == "G2")
        types = doc["grounding"]["data_types"]
        return {(loc["relation"], loc["attribute"]) for d in norm["data"] for loc in types[d]["locations"]}

    confirmed = apply_review(draft, confirm_all(draft))
    assert _ids(confirmed) == ["G1", "G2"]  # one G2, extended
    assert columns(confirmed) == columns(result.policy) | {("Checkup", "remark")}
    assert columns(apply_review(draft, {q["id"]: "drop"})) == columns(result.policy)
    db = load_database(path)
    try:
        compile_policy(policy_from_dict(confirmed), db.catalog, db.engine)
    finally:
        db.close()
