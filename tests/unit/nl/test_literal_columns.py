"""Which column a literal goes to: words beside it, its own head word, what is compared with it."""

from __future__ import annotations

from pimento.nl import ValueIndex, translate
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
