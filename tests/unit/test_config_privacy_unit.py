"""``[privacy] unit``, ``max_contribution`` and ``one_person_per_row`` (issue 26; docs/privacy-unit.md)."""

from __future__ import annotations

import pytest

from pimento.config import settings_from_dict
from pimento.errors import ConfigError


def privacy(**keys):
    return settings_from_dict({"privacy": keys}, source="pimento.toml").privacy


def test_the_unit_is_a_tuple_by_default_and_names_a_relation_otherwise():
    assert privacy().unit == "tuple" and privacy().person_unit is None
    assert privacy(unit=" TUPLE ").person_unit is None
    chosen = privacy(unit="Patient", max_contribution=64, one_person_per_row=False)
    assert (chosen.person_unit, chosen.max_contribution, chosen.one_person_per_row) == ("Patient", 64, False)
    assert privacy().max_contribution == 1024 and privacy().one_person_per_row is True


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        ({"unit": ""}, r"pimento.toml: \[privacy\] unit: must be \"tuple\" or the name"),
        ({"unit": 3}, r"\[privacy\] unit"),
        ({"max_contribution": 0}, r"\[privacy\] max_contribution"),
        ({"max_contribution": 2**41}, r"\[privacy\] max_contribution"),
        ({"units": "Patient"}, "did you mean 'unit'"),
    ],
)
def test_bad_values_name_the_file_and_the_key(keys, message):
    with pytest.raises(ConfigError, match=message):
        privacy(**keys)
