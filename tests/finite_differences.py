"""Central finite differences and the counts check, shared by the gradient tests."""

import numpy as np
import pytest


def central_difference(f, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """d f / d x by central differences, ``x`` perturbed in place entry by entry
    (and restored): ``f`` reads ``x`` (e.g. a parameter array of the model)."""
    grad = np.zeros(x.shape)
    for idx in np.ndindex(x.shape):
        keep = x[idx]
        x[idx] = keep + eps
        up = f()
        x[idx] = keep - eps
        down = f()
        x[idx] = keep
        grad[idx] = (up - down) / (2 * eps)
    return grad


def assert_counts_are_path_score_gradient(scores, layout, labels, weights, params, score_of) -> None:
    """``labelling_counts`` of ``labels`` (weighted per sequence) are the gradient of
    the weighted path score: path scores are linear in the parameters, so
    ``<counts, params> = sum_s w_s score_s``, with ``score_of(o, ys)`` the score
    of the sequence ``ys`` starting at row ``o``."""
    from spacy_crf import losses

    out = losses.zero_gradient(scores, layout)
    losses.labelling_counts(layout, labels, weights, out)
    total = sum(float(np.sum(getattr(out, name) * getattr(scores, name))) for name in params)
    o, expected = 0, 0.0
    for s, n in enumerate(layout.lengths):
        expected += weights[s] * score_of(o, tuple(labels[o:o + n]))
        o += n
    assert total == pytest.approx(expected, rel=1e-9)
