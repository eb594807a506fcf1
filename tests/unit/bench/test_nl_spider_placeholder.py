"""nl_spider --values placeholder: text values become the synthetic placeholder, numeric ranges stay."""

from __future__ import annotations

from pimento.bench.nl_spider import placeholder_index
from pimento.nl import ValueIndex


def test_text_columns_become_placeholders_and_numbers_stay():
    real = ValueIndex.from_values({("cars", "maker"): ["ford", "fiat"], ("cars", "year"): [1970, 1982]})
    index = placeholder_index(real)
    assert index.columns[("cars", "maker")] == ("[synthetic]",)
    assert index.columns[("cars", "year")] == real.columns[("cars", "year")]
    assert index.synthetic and index.numeric == real.numeric
