"""Clusters of a pipeline's static vectors, as word features (``VECTOR_CLUSTERk``).

A CRF cannot weigh a 300-dimensional vector the way it weighs a word, but it
can weigh the word's cluster: k-means over the vectors' directions (spherical
k-means: rows scaled to unit length, so clusters follow cosine similarity, as
the clustered embeddings of Turian et al. 2010 and Guo et al. 2014), at a few
granularities at once. The clusters are computed once, at ``initialize``, and
saved with the component as a word table (word hash -> cluster id per k), so a
loaded model needs neither the vectors nor the k-means again.
"""

from typing import List, Sequence

import numpy as np

from ..errors import Errors
from .word_table import WordTable

#: rows k-means learns its centroids from; every row is then assigned to its nearest
MAX_TRAIN_ROWS = 50_000
ITERATIONS = 25
_ASSIGN_BLOCK = 8192


def kmeans(data: np.ndarray, k: int, seed: int = 0, iterations: int = ITERATIONS) -> np.ndarray:
    """Spherical k-means (Lloyd's iterations after k-means++ seeding).

    Parameters
    ----------
    data : numpy.ndarray
        ``(n, d)`` float rows, already of unit length (zero rows stay where they fall).
    k : int
        Clusters; at most ``n`` are non-empty.
    seed : int
        Seed of the k-means++ draws: the same data and seed give the same clusters.
    iterations : int
        Lloyd's iterations at most (it stops early when no row moves).

    Returns
    -------
    numpy.ndarray
        ``(k, d)`` float32 centroids, of unit length.
    """
    rng = np.random.default_rng(seed)
    n = data.shape[0]
    k = min(k, n)
    centroids = _kmeans_plus_plus(data, k, rng)
    assigned = np.full(n, -1, dtype=np.int64)
    for _ in range(iterations):
        new = assign(data, centroids)
        if np.array_equal(new, assigned):
            break
        assigned = new
        sums = np.zeros_like(centroids)
        np.add.at(sums, assigned, data)
        norms = np.linalg.norm(sums, axis=1)
        empty = norms == 0
        if empty.any():  # restart an empty cluster at the rows farthest from theirs
            far = np.argsort(np.einsum("ij,ij->i", data, centroids[assigned]))[:int(empty.sum())]
            sums[empty] = data[far]
            norms[empty] = np.linalg.norm(sums[empty], axis=1)
        centroids = (sums / np.maximum(norms, 1e-12)[:, None]).astype(np.float32)
    return centroids


def _kmeans_plus_plus(data: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """k-means++ seeding under the cosine distance 1 - cos."""
    n = data.shape[0]
    chosen = [int(rng.integers(n))]
    distance = np.maximum(1.0 - data @ data[chosen[0]], 0.0)
    for _ in range(1, k):
        total = float(distance.sum())
        pick = int(rng.integers(n)) if total <= 0 else int(rng.choice(n, p=distance / total))
        chosen.append(pick)
        distance = np.minimum(distance, np.maximum(1.0 - data @ data[pick], 0.0))
    return data[chosen].astype(np.float32)


def assign(data: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """Index of each row's nearest centroid (highest cosine), in blocks of rows."""
    out = np.empty(data.shape[0], dtype=np.int64)
    for start in range(0, data.shape[0], _ASSIGN_BLOCK):
        block = data[start:start + _ASSIGN_BLOCK]
        out[start:start + _ASSIGN_BLOCK] = np.argmax(block @ centroids.T, axis=1)
    return out


def unit_rows(data: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows left at zero), as float32."""
    data = np.asarray(data, dtype=np.float32)
    norms = np.linalg.norm(data, axis=1, keepdims=True)
    return data / np.maximum(norms, 1e-12)


def vector_cluster_table(vectors, ks: Sequence[int], seed: int = 0) -> WordTable:
    """Word -> cluster id (from 1; 0 is a word without a vector) for each k in ``ks``.

    Parameters
    ----------
    vectors : spacy.vectors.Vectors
        The pipeline's static vectors (``nlp.vocab.vectors``), in spaCy's
        default mode: a table of words. Floret vectors have no list of words
        to cluster.
    ks : sequence of int
        Cluster counts, one column each, in the given order.
    seed : int
        Seed of the k-means draws.

    Raises
    ------
    ValueError
        E124 where there are no vectors, or they are floret vectors; E255
        where a word's vector holds NaN or infinity.
    """
    if getattr(vectors, "mode", "default") != "default":
        raise ValueError(Errors.E124.format(why=f"its vectors are in '{vectors.mode}' mode, "
                                                "which keeps no list of words to cluster"))
    if not vectors.shape[0] or not len(vectors.key2row):
        raise ValueError(Errors.E124.format(why="nlp.vocab.vectors is empty"))
    from spacy.attrs import LOWER

    key_attr = "LOWER" if getattr(vectors, "attr", None) == LOWER else "ORTH"
    items = list(vectors.key2row.items())
    keys = np.fromiter((k for k, _ in items), dtype=np.uint64, count=len(items))
    rows = np.fromiter((r for _, r in items), dtype=np.int64, count=len(items))
    raw = (vectors.data if isinstance(vectors.data, np.ndarray)
           else np.asarray(vectors.data.get() if hasattr(vectors.data, "get") else vectors.data))
    _check_finite(vectors, raw, keys, rows)
    data = unit_rows(raw)
    used = np.unique(rows)
    rng = np.random.default_rng(seed)
    train = used if used.shape[0] <= MAX_TRAIN_ROWS else np.sort(
        rng.choice(used, MAX_TRAIN_ROWS, replace=False))
    columns: List[np.ndarray] = []
    for k in ks:
        centroids = kmeans(data[train], int(k), seed=seed)
        cluster_of_row = np.zeros(data.shape[0], dtype=np.int64)
        cluster_of_row[used] = assign(data[used], centroids) + 1
        columns.append(cluster_of_row[rows])
    return WordTable(keys, np.stack(columns, axis=1), key_attr=key_attr)


def _check_finite(vectors, data: np.ndarray, keys: np.ndarray, rows: np.ndarray) -> None:
    """E255 where a word's vector (of ``data``, rows of ``vectors``) is not
    finite: k-means++ would fail on it with numpy's bare "Probabilities contain
    NaN", and Lloyd's iterations would spread the NaN to every centroid."""
    bad_rows = ~np.isfinite(data).all(axis=1)
    bad = bad_rows[rows]
    if not bad.any():
        return
    key = int(keys[np.argmax(bad)])
    strings = getattr(vectors, "strings", None)
    example = f"'{strings[key]}'" if strings is not None and key in strings else f"key {key}"
    raise ValueError(Errors.E255.format(n=int(bad.sum()), total=len(keys), example=example))
