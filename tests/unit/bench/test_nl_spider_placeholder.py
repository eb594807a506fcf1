"""nl_spider --values placeholder: text values become the synthetic placeholder, numeric ranges stay."""

from __future__ import annotations

import pytest

from benchmarks import nl_spider
from benchmarks.nl_spider import in_partition, placeholder_index, train_partition
from pimento.nl import ValueIndex


def test_text_columns_become_placeholders_and_numbers_stay():
    real = ValueIndex.from_values({("cars", "maker"): ["ford", "fiat"], ("cars", "year"): [1970, 1982]})
    index = placeholder_index(real)
    assert index.columns[("cars", "maker")] == ("[synthetic]",)
    assert index.columns[("cars", "year")] == real.columns[("cars", "year")]
    assert index.synthetic and index.numeric == real.numeric


def test_round_two_splits_the_old_heldout_half_into_open_and_sealed():
    assert in_partition("hospital_1", "heldout-open") and not in_partition("hospital_1", "sealed")
    assert in_partition("aircraft", "sealed") and not in_partition("aircraft", "heldout-open")
    assert in_partition("aircraft", "heldout") and in_partition("baseball_1", "tune")
    assert not in_partition("baseball_1", "sealed") and not in_partition("activity_1", "heldout-open")
    for db in ("aircraft", "hospital_1", "wedding", "debate", "railway", "movie_1"):
        assert train_partition(db) == "heldout"
        assert in_partition(db, "heldout-open") != in_partition(db, "sealed")
    with pytest.raises(ValueError):
        in_partition("aircraft", "secret")


def test_failures_are_refused_on_the_sealed_databases(monkeypatch, capsys):
    monkeypatch.setattr("sys.argv", ["nl_spider", "--split", "train", "--partition", "sealed", "--failures"])
    monkeypatch.setattr(nl_spider, "run", lambda *a, **k: pytest.fail("must refuse before running"))
    with pytest.raises(SystemExit):
        nl_spider.main()
    assert "sealed" in capsys.readouterr().err
