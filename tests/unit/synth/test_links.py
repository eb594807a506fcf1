"""Link in-degrees: the sensitivity bound of the measured profile, and weighted target choice."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pimento.synth.passes.measure_link_degrees import LINK_TOP_K, _non_increasing, degree_profile, link_sensitivity
from pimento.synth._sample import _match

N_KEYS, N_CELLS = 12, 3
CELL_OF_KEY = np.arange(N_KEYS) % N_CELLS


def _profile(rows: list[tuple[int, int]], m: int) -> np.ndarray:
    """The measured vector for link rows (unit, key), counting the first m rows of each unit."""
    seen: dict[int, int] = {}
    deg = np.zeros(N_KEYS, dtype=np.int64)
    for unit, key in rows:
        if seen.get(unit, 0) < m:
            seen[unit] = seen.get(unit, 0) + 1
            deg[key] += 1
    top, total = degree_profile(deg, CELL_OF_KEY, N_CELLS)
    return np.concatenate([top.ravel(), total])


unit_rows = st.lists(st.integers(0, N_KEYS - 1), min_size=0, max_size=4)


@settings(max_examples=200, deadline=None)
@given(
    others=st.lists(st.tuples(st.integers(1, 30), st.integers(0, N_KEYS - 1)), max_size=120),
    before=unit_rows,
    after=unit_rows,
    m=st.integers(1, 3),
)
def test_replacing_one_unit_moves_the_profile_by_at_most_the_sensitivity(others, before, after, m):
    # Unit 0 is replaced (any rows before, any rows after); every other unit is unchanged.
    a = _profile([(0, k) for k in before] + others, m)
    b = _profile([(0, k) for k in after] + others, m)
    assert np.linalg.norm(a - b) <= link_sensitivity(m) + 1e-9


def test_the_bound_is_attained_up_to_a_constant():
    # One unit moving its m rows from the top key of one cell to a new key of another cell.
    m = 2
    others = [(u, 0) for u in range(1, 50)]
    a = _profile([(0, 0)] * m + others, m)
    b = _profile([(0, 1)] * m + others, m)
    assert np.linalg.norm(a - b) >= link_sensitivity(m) / 2


def test_profile_is_sorted_and_padded():
    deg = np.array([5, 1, 9, 0, 3])
    top, total = degree_profile(deg, np.array([0, 0, 0, 1, 1]), 2)
    assert top.shape == (2, LINK_TOP_K)
    assert list(top[0, :4]) == [9, 5, 1, 0] and list(top[1, :2]) == [3, 0]
    assert list(total) == [15, 3]


@pytest.mark.parametrize("y", [[5.0, 7.0, 1.0, 2.0, 0.0], [1.0, 2.0, 3.0], [3.0, 2.0, 1.0], []])
def test_non_increasing_fit(y):
    out = _non_increasing(np.array(y))
    assert len(out) == len(y)
    assert np.all(np.diff(out) <= 1e-12)
    assert out.sum() == pytest.approx(sum(y))


def test_weighted_match_draws_in_proportion_within_the_context():
    rng = np.random.default_rng(0)
    pool_ctx = np.array([0, 0, 0, 1, 1])
    weights = np.array([8.0, 1.0, 1.0, 1.0, 3.0])
    want = np.array([0] * 20000 + [1] * 20000)
    pick = _match([pool_ctx], [want], rng, m=want.size, n_pool=5, weights=weights)
    assert np.all(pool_ctx[pick] == want)
    first = np.bincount(pick[:20000], minlength=5)[:3] / 20000
    second = np.bincount(pick[20000:], minlength=5)[3:] / 20000
    # Binomial standard errors are below 0.004: 5 of them is 0.02.
    assert first == pytest.approx([0.8, 0.1, 0.1], abs=0.02)
    assert second == pytest.approx([0.25, 0.75], abs=0.02)


def test_weighted_match_backs_off_to_all_rows_by_weight():
    rng = np.random.default_rng(1)
    pick = _match([np.array([0, 0, 1])], [np.array([5] * 10000)], rng, m=10000, n_pool=3, weights=np.array([1.0, 0.0, 3.0]))
    share = np.bincount(pick, minlength=3) / 10000
    assert share == pytest.approx([0.25, 0.0, 0.75], abs=0.02)
