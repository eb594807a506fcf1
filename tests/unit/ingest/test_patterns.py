"""The offline extractor: pattern spec checks, wordings, normalisers, spans, context, derived forms."""

from __future__ import annotations

import pytest
import yaml

from pimento.errors import CatalogError, ConfigError
from pimento.ingest import Document, OfflineExtractor, derive_spec, load_target, parse_spec

from .conftest import SPEC


@pytest.fixture
def catalog(clinic):
    return load_target(clinic["schema"]).catalog


def _spec(catalog, text: str = SPEC):
    return parse_spec(yaml.safe_load(text), catalog)


def test_each_wording_gives_one_mention_with_normalised_values(catalog) -> None:
    doc = Document("d1", "Patient Ada Lovelace (MRN 17), born 1956, female. Later: Alan Turing, a man born in 1912.")
    mentions = OfflineExtractor(_spec(catalog), catalog).extract(doc)
    assert [(m.table, {c: v.value for c, v in m.cells.items()}) for m in mentions] == [
        ("Patient", {"name": "Ada Lovelace", "pat_id": "17", "birth_year": "1956", "sex": "F"}),
        ("Patient", {"name": "Alan Turing", "sex": "M", "birth_year": "1912"}),
    ]


def test_spans_slice_the_document_to_the_text_read(catalog) -> None:
    text = "Visit 5 on 3 March 2021: Ada Lovelace (1956) seen for asthma.\nVisit 6 on 2021-03-04: MRN 17 seen for  flu ."
    mentions = OfflineExtractor(_spec(catalog), catalog).extract(Document("n", text))
    read = [(c, text[s.start:s.end]) for m in mentions for c, cell in m.cells.items() for s in cell.spans]
    assert ("visit_date", "3 March 2021") in read and ("visit_date", "2021-03-04") in read
    assert ("diagnosis", "flu") in read  # blanks around a group are not part of its span
    lookup = mentions[0].lookups[0]
    assert {c: text[s.start:s.end] for c, cell in lookup.on.items() for s in cell.spans} == {
        "name": "Ada Lovelace", "birth_year": "1956"
    }
    assert mentions[0].cells["visit_date"].value == "2021-03-03"
    assert not mentions[1].lookups  # MRN stated: no lookup needed


def test_context_copies_a_column_and_a_lookup_from_the_same_document(catalog) -> None:
    text = yaml.safe_load(SPEC)
    text["tables"]["Visit"]["rules"].append({
        "patterns": [r"Follow-up visit (?P<visit_id>\d+) on (?P<visit_date>\d{4}-\d\d-\d\d) for (?P<diagnosis>\w+)"],
        "context": {"pat_id": "Visit.pat_id"},
    })
    spec = parse_spec(text, catalog)
    doc = Document("n", "Visit 5 on 3 March 2021: Ada Lovelace (1956) seen for asthma. Follow-up visit 9 on 2021-04-01 for asthma")
    mentions = OfflineExtractor(spec, catalog).extract(doc)
    follow = next(m for m in mentions if m.cells["visit_id"].value == "9")
    assert follow.lookups and follow.lookups[0].column == "pat_id"
    assert follow.lookups[0].on["name"].value == "Ada Lovelace"


@pytest.mark.parametrize(
    ("change", "error", "words"),
    [
        (lambda s: s.replace("(?P<sex>female|male|other)", "(?P<gender>female|male)"), CatalogError, "gender"),
        (lambda s: s.replace("(?P<birth_year>\\d{4}), (?P<sex>", "(?P<birth_year>\\d{4}(, (?P<sex>"), ConfigError, "bad regex"),
        (lambda s: s.replace("by: {", "on: {"), ConfigError, "'by'"),
        (lambda s: s.replace("  Visit:", "  Visits:"), CatalogError, "Visits"),
        (lambda s: s.replace("match_on: [name, birth_year]", "match_on: [nme]"), CatalogError, "nme"),
        (lambda s: s.replace("values:\n          sex", "valeus:\n          sex"), ConfigError, "valeus"),
    ],
)
def test_bad_specs_are_clear_errors(catalog, change, error, words) -> None:
    with pytest.raises(error) as caught:
        _spec(catalog, change(SPEC))
    assert words in caught.value.one_line()


def test_a_spec_file_that_is_not_yaml_is_a_config_error(catalog, tmp_path) -> None:
    from pimento.ingest import load_spec

    bad = tmp_path / "bad.yaml"
    bad.write_text("tables: [unclosed", encoding="utf-8")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_spec(bad, catalog)


def test_derived_spec_reads_forms_in_any_case_with_columns_left_out(catalog) -> None:
    text = "Patient\npat id: 3\nName: Grace Hopper\nsex: F\n\nvisit:\nvisit_id: 8\npat_id: 3\nvisit date: 2020-01-02\n"
    mentions = OfflineExtractor(derive_spec(catalog), catalog).extract(Document("form", text))
    assert [(m.table, {c: v.value for c, v in m.cells.items()}) for m in mentions] == [
        ("Patient", {"pat_id": "3", "name": "Grace Hopper", "sex": "F"}),
        ("Visit", {"visit_id": "8", "pat_id": "3", "visit_date": "2020-01-02"}),
    ]
    for mention in mentions:
        for cell in mention.cells.values():
            (span,) = cell.spans
            assert text[span.start:span.end] == cell.value


def test_number_and_case_normalisers(catalog) -> None:
    text = yaml.safe_load(SPEC)
    text["tables"]["Patient"]["rules"] = [{
        "patterns": [r"No\. (?P<pat_id>[\d,]+): (?P<name>[a-z ]+)$"],
        "values": {"pat_id": {"number": True}, "name": {"case": "title"}},
    }]
    (mention,) = OfflineExtractor(parse_spec(text, catalog), catalog).extract(Document("d", "No. 12,345: ada   lovelace"))
    assert {c: v.value for c, v in mention.cells.items()} == {"pat_id": "12345", "name": "Ada Lovelace"}


def test_the_spec_example_of_the_docs_is_valid_on_the_demo_schema(tmp_path) -> None:
    import re
    from pathlib import Path

    from pimento.demo.corpus import CORPUS_PATTERNS, write_demo_corpus

    docs = (Path(__file__).resolve().parents[3] / "docs" / "ingest.md").read_text(encoding="utf-8")
    (example,) = re.findall(r"```yaml\n(.*?)```", docs, re.DOTALL)
    info = write_demo_corpus(tmp_path / "c", patients=5)
    catalog = load_target(info.schema_path).catalog
    spec = parse_spec(yaml.safe_load(example), catalog)
    assert [t.table for t in spec.tables] == ["Patient", "Visit", "MedicationOrders"]
    assert len(parse_spec(yaml.safe_load(CORPUS_PATTERNS), catalog).tables) == len(catalog.tables)
