"""Hashed linear emission kernels (numba only, no spaCy)."""

from numba import njit


@njit(cache=True)
def gather_sum(weights, bias, features, out):
    """out[t, :] = bias + sum_k weights[features[t, k] % n_buckets, :]."""
    n_buckets = weights.shape[0]
    n_labels = weights.shape[1]
    for t in range(features.shape[0]):
        for j in range(n_labels):
            out[t, j] = bias[j]
        for k in range(features.shape[1]):
            row = features[t, k] % n_buckets
            for j in range(n_labels):
                out[t, j] += weights[row, j]
