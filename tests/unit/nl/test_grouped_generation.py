"""Candidate generation of grouped and summed readings (nl/aggregate_readings.py, issue 25): generic
fixes found from the ``tune`` misses whose correct reading was not among the 20 candidates, each on
a small constructed schema (no Spider database).

- the join to the group's table goes through the key the question names ("each *target* member":
  ``target_id``, not ``source_id``; the count parser's edge bonus);
- a group word the schema spells otherwise ("each organization": ``organisation_id``);
- a key suffix glued to a word (``seasonid``) names the word, and the body's own column is tried
  even when many other tables have a column named exactly as the phrase;
- a word and a number before the group's noun ("each level 3 room") filter the group.
"""

from __future__ import annotations

from pimento.nl import ValueIndex, translate_aggregate
from pimento.schema import Catalog, Column, ForeignKey, Table

NO_VALUES = ValueIndex.from_values({})


def _sqls(question: str, catalog: Catalog, k: int = 20) -> list[str]:
    return [c.sql for c in translate_aggregate(question, catalog, values=NO_VALUES, k=k, learned=False)]


def test_join_goes_through_the_key_the_question_names() -> None:
    """Two foreign keys from ``endorsement`` to ``member``: "each target member" groups the
    endorsements by the member they target (old code: the first key, ``source_id``)."""
    catalog = Catalog(
        (
            Table("member", (Column("member_id", "integer"), Column("name")), ("member_id",)),
            Table(
                "endorsement",
                (Column("source_id", "integer"), Column("target_id", "integer"), Column("score", "real")),
            ),
        ),
        (
            ForeignKey("endorsement", ("source_id",), "member", ("member_id",)),
            ForeignKey("endorsement", ("target_id",), "member", ("member_id",)),
        ),
    )
    top = _sqls("Find each target member's name and the average endorsement score.", catalog)[0]
    assert "endorsement.target_id = member.member_id" in top, top
    assert "GROUP BY member.name" in top, top
    top = _sqls("Find each source member's name and the average endorsement score.", catalog)[0]
    assert "endorsement.source_id = member.member_id" in top, top


def test_group_word_in_the_schemas_other_spelling() -> None:
    """"organization" (American) names ``organisation_id`` (British): old code found no group
    and read an ungrouped SUM."""
    catalog = Catalog(
        (
            Table("donation", (Column("donation_id", "integer"), Column("organisation_id", "integer"), Column("amount", "real")), ("donation_id",)),
        )
    )
    top = _sqls("What is the total donation amount for each organization?", catalog)[0]
    assert top == "SELECT donation.organisation_id, SUM(donation.amount) FROM donation GROUP BY donation.organisation_id", top


def test_glued_key_suffix_and_the_bodys_own_column() -> None:
    """``award.seasonid`` names "season"; four other tables have a column ``season`` (each a join
    away): old code never tried ``award.seasonid`` (it tried the best three links only)."""
    others = tuple(
        Table(name, (Column(f"{name}_id", "integer"), Column("player_id", "integer"), Column("season", "integer")), (f"{name}_id",))
        for name in ("batting", "fielding", "pitching", "appearance")
    )
    catalog = Catalog(
        (
            Table("player", (Column("player_id", "integer"), Column("name")), ("player_id",)),
            Table("award", (Column("award_id", "integer"), Column("player_id", "integer"), Column("seasonid", "integer")), ("award_id",)),
            *others,
        ),
        tuple(ForeignKey(t.name, ("player_id",), "player", ("player_id",)) for t in (*others,))
        + (ForeignKey("award", ("player_id",), "player", ("player_id",)),),
    )
    sqls = _sqls("How many awards are there for each season?", catalog)
    assert sqls[0] == "SELECT award.seasonid, COUNT(*) FROM award GROUP BY award.seasonid", sqls[:3]


def test_whole_words_ending_in_id_stay_whole() -> None:
    """A column named ``valid`` is not "val" + "id" (six letters at least before the split)."""
    from pimento.nl.aggregate_readings import _unglued
    from pimento.nl.schema_linking import _lexicon

    catalog = Catalog((Table("ticket", (Column("ticket_id", "integer"), Column("valid"), Column("zoneid", "integer")), ("ticket_id",)),))
    words = {e.column: _unglued(e).words for e in _lexicon(catalog)[1]}
    assert words["valid"] == ("valid",)
    assert words["zoneid"] == ("zone", "id")


def _school() -> Catalog:
    return Catalog(
        (
            Table("room", (Column("room_id", "integer"), Column("room_name"), Column("floor", "integer")), ("room_id",)),
            Table("pupil", (Column("pupil_id", "integer"), Column("level", "integer"), Column("room_id", "integer")), ("pupil_id",)),
        ),
        (ForeignKey("pupil", ("room_id",), "room", ("room_id",)),),
    )


def test_a_word_and_a_number_before_the_group_noun_filter_it() -> None:
    """"each level 3 room" = each room, pupils of level 3, among the readings (old code: only
    grouped by ``level``, "3 room" left in the body); the order is the scores' and the ranker's."""
    want = "SELECT room.room_name, COUNT(*) FROM pupil JOIN room ON pupil.room_id = room.room_id WHERE pupil.level = 3 GROUP BY room.room_name"
    assert want in _sqls("For each level 3 room, report the number of pupils.", _school())

