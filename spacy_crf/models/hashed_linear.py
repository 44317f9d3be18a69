"""Layer: hashed feature ids -> emission scores, one weight row per bucket."""

from typing import Callable, Optional, Tuple

import numpy as np
from thinc.api import Model
from thinc.types import Floats2d

from .._kernels.emissions import gather_sum
from .sparse_table import ATTR, SparseTable

InT = np.ndarray  # (N, K) uint64 feature ids
OutT = Floats2d  # (N, nO) emission scores


def hashed_linear(n_buckets: int, nO: Optional[int] = None) -> Model[InT, OutT]:
    """Sum one weight row per feature: a linear model over hashed sparse features.

    Parameters
    ----------
    n_buckets : int
        Rows of the weight table; feature ids are taken modulo this.
    nO : int, optional
        Number of labels; set by the component at initialize when not given.
    """
    return Model(
        "crf_hashed_linear",
        forward,
        init=init,
        dims={"nO": nO, "nV": n_buckets},
        params={"W": None, "b": None},
    )


def forward(model: Model[InT, OutT], features: InT, is_train: bool) -> Tuple[OutT, Callable]:
    W = model.get_param("W")
    b = model.get_param("b")
    scores = np.empty((features.shape[0], W.shape[1]), dtype=W.dtype)
    gather_sum(W, b, features, scores)

    def backprop(d_scores: OutT) -> InT:
        d_scores = np.ascontiguousarray(d_scores, dtype=W.dtype)
        # a batch touches few rows: keep them compact for a row-sparse step
        # (see sparse_table.py); a dense (n_buckets, nO) gradient per batch
        # would cost more than all the rest of training
        table = model.attrs.get(ATTR)
        if table is None:
            table = model.attrs[ATTR] = SparseTable(*W.shape)
        table.add(d_scores, features)
        model.inc_grad("b", d_scores.sum(axis=0))
        return features

    return scores, backprop


def init(model: Model[InT, OutT], X: Optional[InT] = None, Y: Optional[OutT] = None) -> None:
    nO, nV = model.get_dim("nO"), model.get_dim("nV")
    model.set_param("W", model.ops.alloc2f(nV, nO))
    model.set_param("b", model.ops.alloc1f(nO))
