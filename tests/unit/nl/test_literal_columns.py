"""Which column a literal goes to: words beside it, its own head word, what is compared with it."""

from __future__ import annotations

from pimento.nl import ValueIndex, translate
from pimento.nl.values import NumericRange
from pimento.schema import Catalog, Column, ForeignKey, Table

PLACEHOLDER = "[synthetic]"


def _catalog() -> Catalog:
    t = (
        Table("carriers", (Column("uid", "integer"), Column("Carrier"), Column("Abbreviation"), Column("Country")), ("uid",)),
        Table("ports", (Column("PortCode"), Column("PortName"), Column("City")), ("PortCode",)),
        Table(
            "trips",
            (Column("TripNo", "integer"), Column("Carrier", "integer"), Column("SourcePort"), Column("DestPort")),
            ("TripNo",),
        ),
    )
    fks = (
        ForeignKey("trips", ("SourcePort",), "ports", ("PortCode",)),
        ForeignKey("trips", ("DestPort",), "ports", ("PortCode",)),
    )
    return Catalog(t, fks)


CATALOG = _catalog()


def _synthetic(catalog: Catalog) -> ValueIndex:
    values = {(t.name, c.name): [PLACEHOLDER] for t in catalog.tables for c in t.columns if c.type == "text"}
    return ValueIndex.from_values(values, source="synthetic", synthetic=True)


def _top(question: str, catalog: Catalog = CATALOG) -> str:
    return translate(question, catalog, values=_synthetic(catalog), k=5)[0].sql


def test_a_quoted_literal_does_not_take_the_word_labelling_another_literal():
    # "Port" labels 'XYZ'; it must not pull 'Blue Sky Carriers' onto PortName
    top = _top("How many 'Blue Sky Carriers' trips go to Port 'XYZ'?")
    assert "carriers.Carrier = 'Blue Sky Carriers'" in top
    assert "PortName" not in top


def test_the_literal_s_last_word_names_its_table():
    # trips.Carrier -> carriers.uid is only inferred from names (a costlier join), as in Spider's flight_2
    top = _top("Count the number of Blue Sky Carriers trips arriving in XYZ Port.")
    assert "carriers.Carrier = 'Blue Sky Carriers'" in top


def _pets() -> Catalog:
    t = (
        Table("owners", (Column("OwnerId", "integer"), Column("Name")), ("OwnerId",)),
        Table("animals", (Column("AnimalId", "integer"), Column("Kind"), Column("weight", "real")), ("AnimalId",)),
        Table("owns", (Column("OwnerId", "integer"), Column("AnimalId", "integer")), ()),
    )
    fks = (ForeignKey("owns", ("OwnerId",), "owners", ("OwnerId",)), ForeignKey("owns", ("AnimalId",), "animals", ("AnimalId",)))
    return Catalog(t, fks)


def _pet_values(catalog: Catalog) -> ValueIndex:
    # the identifiers are stored as text-like values, so "10" is an exact hit on them
    values = {("owns", "AnimalId"): ["10", "11"], ("animals", "AnimalId"): ["10", "11"], ("owners", "Name"): [PLACEHOLDER]}
    numeric = [NumericRange("animals", "weight", 1.0, 20.0, 15, False)]
    return ValueIndex.from_values(values, numeric=numeric, source="synthetic", synthetic=True)


def test_a_comparison_with_a_measurement_word_does_not_go_to_an_identifier():
    catalog = _pets()
    for question in ("Find the number of animals whose weight is heavier than 10.", "How many animals have a greater weight than 10?"):
        top = translate(question, catalog, values=_pet_values(catalog), k=3)[0].sql
        assert top == "SELECT COUNT(*) FROM animals WHERE animals.weight > 10", question


def test_in_or_after_is_at_least():
    catalog = _pets()
    top = translate("How many animals have weight 5 or more?", catalog, values=_pet_values(catalog), k=1)[0].sql
    assert "animals.weight >= 5" in top
    top = translate("Count the animals that weigh in or after 5.", catalog, values=_pet_values(catalog), k=1)[0].sql
    assert "animals.weight >= 5" in top


def test_a_counted_table_s_own_column_beats_a_child_column_reached_without_a_join():
    catalog = Catalog(
        (
            Table("bands", (Column("Band_ID", "integer"), Column("Band"), Column("Major_Record_Format")), ("Band_ID",)),
            Table("shows", (Column("Show_ID", "integer"), Column("Band_ID", "integer"), Column("Type")), ("Show_ID",)),
        ),
        (ForeignKey("shows", ("Band_ID",), "bands", ("Band_ID",)),),
    )
    top = _top("Count the number of bands that have CD or DVD as their record format.", catalog)
    assert top.startswith("SELECT COUNT(*) FROM bands WHERE"), top
    assert "Major_Record_Format = 'CD'" in top
