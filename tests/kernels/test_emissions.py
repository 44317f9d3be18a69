"""The emission gather against a plain numpy sum (the prefetch must not change it)."""

import numpy as np
import pytest

from spacy_crf._kernels.emissions import PREFETCH_AHEAD, gather_sum


def _reference(weights, bias, rows, scale):
    out = np.tile(bias, (rows.shape[0], 1)).astype(weights.dtype)
    for t in range(rows.shape[0]):
        for r in rows[t]:
            if r >= 0:
                out[t] += scale * weights[r]
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n_labels", [1, 3, 17, 40])
@pytest.mark.parametrize("n_tokens", [0, 1, PREFETCH_AHEAD, PREFETCH_AHEAD + 1, 57])
def test_gather_sum_is_the_sum_of_the_kept_rows(dtype, n_labels, n_tokens):
    rng = np.random.default_rng(n_tokens * 100 + n_labels)
    weights = rng.standard_normal((1000, n_labels)).astype(dtype)
    bias = rng.standard_normal(n_labels).astype(dtype)
    rows = rng.integers(-1, 1000, size=(n_tokens, 6)).astype(np.int64)  # -1: a dropped feature
    rows[:, 0] = 999  # the last row of the table: a prefetch there stays inside it
    out = np.empty((n_tokens, n_labels), dtype=dtype)
    scale = dtype(1.5)
    gather_sum(weights, bias, rows, scale, out)
    np.testing.assert_allclose(out, _reference(weights, bias, rows, scale), rtol=1e-6)


def test_gather_sum_with_every_feature_dropped_is_the_bias():
    weights = np.ones((8, 4), dtype=np.float32)
    bias = np.arange(4, dtype=np.float32)
    rows = np.full((5, 3), -1, dtype=np.int64)
    out = np.empty((5, 4), dtype=np.float32)
    gather_sum(weights, bias, rows, np.float32(1), out)
    np.testing.assert_array_equal(out, np.tile(bias, (5, 1)))
