"""Central finite differences, shared by the gradient tests."""

import numpy as np


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
