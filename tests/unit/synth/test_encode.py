"""Public domains (CHECK lists, declared value sets, booleans) are encoded by value, not bucketed."""

from __future__ import annotations

import datetime as dt

import numpy as np

from pimento.synth._encode import ColumnData, public_encoding


def test_public_integer_domain_is_encoded_by_value():
    # Before: integers of a public domain were bucketed (complex keys) and all got code 0.
    enc = public_encoding("integer", [1, 2, 3, 150], nullable=True)
    col = ColumnData("integer", np.array([1.0, 2, 3, 150, 7, 0]), np.array([False] * 5 + [True]))
    assert enc.encode(col).tolist() == [0, 1, 2, 3, 0, enc.null_code]
    out = enc.decode(np.array([3, 1, enc.null_code]), np.random.default_rng(0), not_null=False)
    assert out.tolist() == [150, 2, None]


def test_public_date_and_boolean_domains():
    days = [dt.date(2020, 1, 1), dt.date(2021, 6, 30)]
    enc = public_encoding("date", days, nullable=False)
    col = ColumnData("date", np.array(["2021-06-30", "2020-01-01"], dtype="datetime64[us]"), np.zeros(2, dtype=bool))
    assert enc.encode(col).tolist() == [1, 0]
    assert enc.decode(np.array([1]), np.random.default_rng(0), not_null=True).tolist() == [dt.date(2021, 6, 30)]
    b = public_encoding("boolean", [False, True], nullable=True)
    assert b.encode(ColumnData("boolean", np.array([True, False, 1, None], dtype=object), np.array([0, 0, 0, 1], bool))).tolist() == [1, 0, 1, 2]
