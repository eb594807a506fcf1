"""Counting rules of round 3 (docs/offline-parser.md, "Round 3"): generic rules for placing a
literal when the value index shows only placeholders, written from failures on 'tune',
'heldout-open' and Spider dev only. Each test builds the smallest schema that shows the rule and
fails on the parser before round 3; the guards check a rule does not overreach (real values win).

``PH`` is what a small DP synthetic copy gives: every text column only the placeholder.
"""

from __future__ import annotations

from nl_support import catalog as _cat
from nl_support import placeholder_index as _placeholders
from pimento.nl import ValueIndex, translate
from pimento.nl.gazetteer import kind_of
from pimento.schema import Column, Table
from pimento.schema.catalog import ForeignKey


MUSIC = _cat(
    [
        Table("Genre", (Column("GenreId", "integer"), Column("Name", "text")), ("GenreId",)),
        Table("Track", (Column("TrackId", "integer"), Column("Name", "text"), Column("Composer", "text"), Column("GenreId", "integer")), ("TrackId",)),
    ],
    [ForeignKey("Track", ("GenreId",), "Genre", ("GenreId",))],
)

PETS = _cat(
    [
        Table("Student", (Column("StuID", "integer"), Column("LName", "text"), Column("Sex", "text")), ("StuID",)),
        Table("Pets", (Column("PetID", "integer"), Column("PetType", "text"), Column("weight", "real")), ("PetID",)),
        Table("Has_Pet", (Column("StuID", "integer"), Column("PetID", "integer")), ()),
    ],
    [ForeignKey("Has_Pet", ("StuID",), "Student", ("StuID",)), ForeignKey("Has_Pet", ("PetID",), "Pets", ("PetID",))],
)


def test_a_lower_case_modifier_of_a_table_name_is_that_tables_label():
    # "rock genre": the word before the table's name is one of its labels (Genre.Name), capitalised
    # first on a placeholder label column (see the casing test below)
    top = translate("How many tracks belong to the rock genre?", MUSIC, values=_placeholders(MUSIC))[0]
    assert top.sql == "SELECT COUNT(*) FROM Genre JOIN Track ON Genre.GenreId = Track.GenreId WHERE Genre.Name = 'Rock'"


def test_a_lower_case_modifier_of_the_counted_noun_is_its_category():
    # "dog pets": the counted table's category column (PetType), not dropped
    top = translate("How many dog pets are there?", PETS, values=_placeholders(PETS))[0]
    assert top.sql == "SELECT COUNT(*) FROM Pets WHERE Pets.PetType = 'Dog'"


def test_the_modifier_rule_is_not_used_where_the_copy_holds_real_values():
    values = ValueIndex.from_values({("Pets", "PetType"): ["cat", "bird"], ("Student", "LName"): ["Smith"], ("Student", "Sex"): ["F", "M"]})
    top = translate("How many dog pets are there?", PETS, values=values)[0]
    assert "PetType" not in top.sql  # the copy shows other values: 'dog' is not invented there


COURSES = _cat(
    [
        Table("classroom", (Column("building", "text"), Column("room_number", "text")), ("building", "room_number")),
        Table("section", (Column("course_id", "text"), Column("sec_id", "text"), Column("semester", "text"), Column("year", "integer"),
                          Column("building", "text")), ("course_id", "sec_id", "semester", "year")),
    ],
    [ForeignKey("section", ("building",), "classroom", ("building",))],
)


def test_a_season_names_a_term_and_a_year_goes_to_the_year_column():
    # 'Spring' is a season (semester), not a building "in" which something happens; 2010 is the
    # year, not the text column named beside it
    assert kind_of("Spring") == "season" and kind_of("fall") == "season"
    top = translate("How many sections are in the Spring 2010 semester?", COURSES, values=_placeholders(COURSES))[0]
    assert top.sql == "SELECT COUNT(*) FROM section WHERE section.semester = 'Spring' AND section.year = 2010"


MAKERS = _cat([Table("Manufacturers", (Column("Code", "integer"), Column("Name", "text"), Column("Founder", "text"), Column("Headquarter", "text")), ("Code",))])
BOOKS = _cat([Table("book", (Column("id", "integer"), Column("title", "text"), Column("Writer", "text")), ("id",))])


def test_by_names_the_agent_not_the_counted_things_name():
    # "created by Andy": the company is not named Andy; its founder is
    top = translate("How many companies were created by Andy?", MAKERS, values=_placeholders(MAKERS))[0]
    assert top.sql == "SELECT COUNT(*) FROM Manufacturers WHERE Manufacturers.Founder = 'Andy'"
    # the agent noun made from the verb ("written by" -> Writer)
    top = translate("How many books were written by Elaine Lee?", BOOKS, values=_placeholders(BOOKS))[0]
    assert top.sql == "SELECT COUNT(*) FROM book WHERE book.Writer = 'Elaine Lee'"


def test_named_by_a_name_cue_still_goes_to_the_name():
    top = translate("How many companies are named Andy?", MAKERS, values=_placeholders(MAKERS))[0]
    assert top.sql == "SELECT COUNT(*) FROM Manufacturers WHERE Manufacturers.Name = 'Andy'"


SHIPS = _cat([Table("ship", (Column("id", "integer"), Column("name", "text"), Column("ship_type", "text"), Column("disposition_of_ship", "text")), ("id",))])


def test_a_quoted_participle_is_a_state_not_a_name():
    ph = _placeholders(SHIPS)
    top = translate("How many ships ended up being 'Captured'?", SHIPS, values=ph)[0]
    assert top.sql == "SELECT COUNT(*) FROM ship WHERE ship.disposition_of_ship = 'Captured'"
    # a name cue keeps a participle-shaped name on the name column
    top = translate("How many ships are named 'Mildred'?", SHIPS, values=ph)[0]
    assert top.sql == "SELECT COUNT(*) FROM ship WHERE ship.name = 'Mildred'"


LESSONS = _cat([Table("Lessons", (Column("lesson_id", "integer"), Column("lesson_status_code", "text"), Column("lesson_time", "text")), ("lesson_id",))])
ROOMS = _cat([Table("Rooms", (Column("RoomId", "text"), Column("roomName", "text"), Column("bedType", "text"), Column("beds", "integer")), ("RoomId",))])


def test_a_participle_states_the_rows_status():
    ph = _placeholders(LESSONS)
    for q in ("How many lessons have been cancelled?", "How many lessons were in cancelled state?"):
        top = translate(q, LESSONS, values=ph)[0]
        assert top.sql == "SELECT COUNT(*) FROM Lessons WHERE Lessons.lesson_status_code = 'Cancelled'", q
    # not a status: a participle followed by more of its clause
    top = translate("How many lessons were cancelled by phone?", LESSONS, values=ph)[0]
    assert "lesson_status_code" not in top.sql


def test_a_lower_case_value_on_a_placeholder_category_column_is_capitalised_first():
    cands = translate("How many rooms have a king bed?", ROOMS, values=_placeholders(ROOMS))
    assert cands[0].sql == "SELECT COUNT(*) FROM Rooms WHERE Rooms.bedType = 'King'"
    assert any(c.sql.endswith("bedType = 'king'") for c in cands)  # the other casing stays in the top k
    # where the copy shows the column's values, their casing decides
    values = ValueIndex.from_values({("Rooms", "bedType"): ["king", "queen"], ("Rooms", "roomName"): ["Blue"]})
    assert translate("How many rooms have a king bed?", ROOMS, values=values)[0].sql.endswith("bedType = 'king'")


FACULTY = _cat(
    [
        Table("Activity", (Column("actid", "integer"), Column("activity_name", "text")), ("actid",)),
        Table("Faculty", (Column("FacID", "integer"), Column("Fname", "text"), Column("Lname", "text")), ("FacID",)),
        Table("Faculty_Participates_in", (Column("FacID", "integer"), Column("actid", "integer")), ()),
    ],
    [ForeignKey("Faculty_Participates_in", ("FacID",), "Faculty", ("FacID",)), ForeignKey("Faculty_Participates_in", ("actid",), "Activity", ("actid",))],
)


def test_a_subject_after_the_counted_noun_is_another_entity_than_the_counted_one():
    ph = _placeholders(FACULTY)
    for q in ("How many activities does Mark Giuliano participate in?", "Find the number of activities Mark Giuliano is involved in."):
        top = translate(q, FACULTY, values=ph)[0]
        assert "Faculty.Fname = 'Mark' AND Faculty.Lname = 'Giuliano'" in top.sql, q
        assert "activity_name" not in top.sql, q
    # a guard: the counted thing's own name after "named" stays on it
    top = translate("How many activities are named Mark Giuliano?", FACULTY, values=ph)[0]
    assert top.sql == "SELECT COUNT(*) FROM Activity WHERE Activity.activity_name = 'Mark Giuliano'"


SHOP = _cat(
    [
        Table("Customers", (Column("customer_id", "integer"), Column("customer_name", "text")), ("customer_id",)),
        Table("Addresses", (Column("address_id", "integer"), Column("city", "text")), ("address_id",)),
        Table("Customer_Addresses", (Column("customer_id", "integer"), Column("address_id", "integer")), ()),
        Table("Customer_Orders", (Column("order_id", "integer"), Column("customer_id", "integer"), Column("order_status", "text"),
                                  Column("order_details", "text")), ("order_id",)),
    ],
    [
        ForeignKey("Customer_Addresses", ("customer_id",), "Customers", ("customer_id",)),
        ForeignKey("Customer_Addresses", ("address_id",), "Addresses", ("address_id",)),
        ForeignKey("Customer_Orders", ("customer_id",), "Customers", ("customer_id",)),
    ],
)


def test_a_generic_noun_beside_the_literal_names_its_column():
    # "detail" is a generic word, but it is the only word of order_details besides its table's
    top = translate('How many orders have detail "Second time"?', SHOP, values=_placeholders(SHOP))[0]
    assert top.sql == "SELECT COUNT(*) FROM Customer_Orders WHERE Customer_Orders.order_details = 'Second time'"


def test_a_column_named_beside_the_literal_beats_the_counted_things_name():
    top = translate("Find the number of customers who live in the city called Lake Geovannyton.", SHOP, values=_placeholders(SHOP))[0]
    assert "Addresses.city = 'Lake Geovannyton'" in top.sql


COUNTRY = _cat([Table("country", (Column("Code", "text"), Column("Name", "text"), Column("GovernmentForm", "text")), ("Code",))])


def test_a_value_as_their_column():
    top = translate("How many countries have a republic as their form of government?", COUNTRY, values=_placeholders(COUNTRY))[0]
    assert top.sql == "SELECT COUNT(*) FROM country WHERE country.GovernmentForm = 'Republic'"


def test_a_multi_word_name_is_a_required_filter_even_far_away():
    # the only column for 'Rodrick Heaney' is three joins away; the name is not dropped for a shorter query
    cat = _cat(
        [
            Table("Customers", (Column("customer_id", "integer"), Column("customer_name", "text")), ("customer_id",)),
            Table("Customer_Orders", (Column("order_id", "integer"), Column("customer_id", "integer")), ("order_id",)),
            Table("Order_Items", (Column("order_id", "integer"), Column("product_id", "integer")), ()),
            Table("Products", (Column("product_id", "integer"), Column("product_details", "text")), ("product_id",)),
        ],
        [
            ForeignKey("Customer_Orders", ("customer_id",), "Customers", ("customer_id",)),
            ForeignKey("Order_Items", ("order_id",), "Customer_Orders", ("order_id",)),
            ForeignKey("Order_Items", ("product_id",), "Products", ("product_id",)),
        ],
    )
    top = translate("Find the number of distinct products Rodrick Heaney has bought so far.", cat, values=_placeholders(cat))[0]
    assert "Customers.customer_name = 'Rodrick Heaney'" in top.sql


GAMES = _cat([Table("Video_Games", (Column("GameID", "integer"), Column("GName", "text"), Column("GType", "text")), ("GameID",))])


def test_a_capitalised_value_goes_on_in_lower_case_up_to_its_category_word():
    ph = _placeholders(GAMES)
    for q in ("How many video games have type Massively multiplayer online game?",
              "Count the number of video games with Massively multiplayer online game type."):
        top = translate(q, GAMES, values=ph)[0]
        assert top.sql == "SELECT COUNT(*) FROM Video_Games WHERE Video_Games.GType = 'Massively multiplayer online game'", q


ARTISTS = _cat(
    [
        Table("artist", (Column("artist_name", "text"), Column("country", "text"), Column("gender", "text"), Column("status", "text")), ("artist_name",)),
        Table("song", (Column("song_name", "text"), Column("artist_name", "text")), ("song_name",)),
    ],
    [ForeignKey("song", ("artist_name",), "artist", ("artist_name",))],
)


def test_an_adjective_of_nationality_fills_a_country_column_with_the_country():
    from pimento.nl.gazetteer import country_of

    assert country_of("Bangladeshi") == "Bangladesh" and kind_of("Bangladeshi") == "demonym"
    top = translate("How many Bangladeshi artists are listed?", ARTISTS, values=_placeholders(ARTISTS))[0]
    assert top.sql == "SELECT COUNT(*) FROM artist WHERE artist.country = 'Bangladesh'"  # and "listed" is no status


def test_a_season_on_a_placeholder_cycle_column_is_capitalised():
    cat = _cat([Table("Voting_record", (Column("StuID", "integer"), Column("Election_Cycle", "text")), ())])
    top = translate("How many voting records are in the fall election cycle?", cat, values=_placeholders(cat))[0]
    assert top.sql == "SELECT COUNT(*) FROM Voting_record WHERE Voting_record.Election_Cycle = 'Fall'"


def test_a_column_named_beside_the_literal_beats_what_the_gazetteer_says():
    # Georgia is a country in the gazetteer, but "state Georgia" names the state column
    cat = _cat([Table("Addresses", (Column("address_id", "integer"), Column("state_province_county", "text"), Column("country", "text")), ("address_id",))])
    top = translate("How many addresses are in state Georgia?", cat, values=_placeholders(cat))[0]
    assert top.sql == "SELECT COUNT(*) FROM Addresses WHERE Addresses.state_province_county = 'Georgia'"
    top = translate("How many addresses are in Georgia?", cat, values=_placeholders(cat))[0]
    assert top.sql == "SELECT COUNT(*) FROM Addresses WHERE Addresses.country = 'Georgia'"  # no label: the gazetteer decides
