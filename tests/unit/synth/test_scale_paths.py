"""The memory-light paths used at scale give exactly what the general paths give."""

from __future__ import annotations

import numpy as np

from pimento.synth._encode import ColumnData, _unique_text, select_keys
from pimento.synth._rows import key_tuples, keys_agree, lookup, match_keys


def _col(values, null=None):
    values = np.asarray(values)
    return ColumnData("integer", values, np.zeros(len(values), dtype=bool) if null is None else np.asarray(null, dtype=bool))


def test_unique_text_equals_numpy_unique_of_strings():
    rng = np.random.default_rng(3)
    vocab = ["b", "a", "ä", "Zeta", "", "a b", "日本", "note " * 30, "A"]
    keys = np.empty(500, dtype=object)
    keys[:] = [vocab[i] for i in rng.integers(0, len(vocab), 500)]
    uniq, inv = _unique_text(keys)
    want_uniq, want_inv = np.unique(keys.astype(str), return_inverse=True)
    assert [str(u) for u in uniq] == [str(u) for u in want_uniq]
    assert inv.tolist() == want_inv.tolist()


def test_select_keys_counts_each_unit_once_per_key_as_before():
    # Units 0..2 hold keys; unit 0 holds "x" twice (counted once), "y" and "z".
    keys = np.array(["x", "x", "y", "z", "x", "y", "q"], dtype=object)
    unit = np.array([0, 0, 0, 0, 1, 2, 2])
    present = np.ones(len(keys), dtype=bool)
    kept, noisy, _ = select_keys(
        keys, present, unit, sigma=1e-9, delta_column=1e-6, keys_per_unit=8,
        noise=lambda size: np.zeros(size), order_rng=np.random.default_rng(0),
    )
    # Threshold 1 + ~0: keys held by two or more units are kept, largest first.
    assert kept == ["x", "y"] and noisy.tolist() == [2.0, 2.0]


def test_match_keys_equals_the_tuple_lookup():
    rng = np.random.default_rng(0)
    parent = {"k": _col(rng.integers(0, 50, 80), rng.random(80) < 0.1)}  # duplicates and NULLs
    child = {"f": _col(rng.integers(-5, 60, 300), rng.random(300) < 0.1)}
    idx = rng.integers(0, 300, 120)
    for sub in (None, idx):
        want = lookup(key_tuples(parent, ("k",)), key_tuples(child, ("f",), sub))
        assert match_keys(parent, ("k",), child, ("f",), sub).tolist() == want.tolist()
    # Text keys take the general path.
    ptext = {"k": ColumnData("text", np.array(["a", "b", "a"], dtype=object), np.zeros(3, dtype=bool))}
    ctext = {"f": ColumnData("text", np.array(["b", "c", "a"], dtype=object), np.zeros(3, dtype=bool))}
    assert match_keys(ptext, ("k",), ctext, ("f",)).tolist() == [1, -1, 0]


def test_keys_agree_equals_the_tuple_comparison():
    rng = np.random.default_rng(1)
    anc = {"k": _col(rng.integers(0, 5, 40), rng.random(40) < 0.2)}
    mine = {"f": _col(rng.integers(0, 5, 100), rng.random(100) < 0.2)}
    anc_idx = rng.integers(-1, 40, 100)
    akeys, own = key_tuples(anc, ("k",)), key_tuples(mine, ("f",))
    want = [i >= 0 and (k is None or akeys[i] == k) for i, k in zip(anc_idx.tolist(), own)]
    assert keys_agree(anc, ("k",), anc_idx, mine, ("f",)).tolist() == want
