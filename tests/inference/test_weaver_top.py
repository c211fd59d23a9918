"""The weaver's top-k selection equals a stable descending sort, ties broken by index."""

from __future__ import annotations

import numpy as np

from inference.weaver import top_indices


def test_top_indices_equal_the_stable_descending_sort_with_ties():
    rng = np.random.default_rng(3)
    for n in (5, 300, 5000):
        for k in (1, 5, 15, 600):
            tied = rng.integers(0, 12, n).astype(np.float32)  # many ties at the k-th value
            spread = rng.standard_normal(n).astype(np.float32)
            for values in (tied, spread):
                np.testing.assert_array_equal(top_indices(values, k), np.argsort(-values, kind="stable")[:k])


def test_top_indices_of_a_large_array_pick_the_best_first_and_the_lowest_index_on_a_tie():
    values = np.zeros(1000, dtype=np.float32)
    values[[700, 20, 999]] = 0.9
    values[500] = 1.0
    assert top_indices(values, 3).tolist() == [500, 20, 700]
