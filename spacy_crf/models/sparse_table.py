"""Row-sparse gradients and optimizer steps for the hashed weight table.

The hashed layer's backprop hands its gradient to a :class:`SparseTable`
(compact rows, built in numba) instead of a dense ``(n_buckets, nO)`` array.
The component's ``finish_update`` then calls :func:`apply_sparse_updates`,
which steps only those rows. Moments and averages live in the thinc
optimizer's own ``mom1``/``mom2``/``averages`` dicts under the parameter's
usual key, so ``nlp.use_params(optimizer.averages)`` (evaluation, saving in
``spacy train``) finds them; :func:`sync_averages` first brings the lazily
updated averages up to date.

Optimizers other than thinc's Adam and SGD (RAdam) fall back to the dense
path: the rows are scattered into the layer's gradient and thinc steps it.
L2 (either kind) acts on the rows a batch touches.
"""

from typing import Dict, Tuple

import numpy as np
from thinc.api import Model, Optimizer

from .._kernels import sparse_update as kernels

ATTR = "sparse_table"


class SparseTable:
    """Pending row gradient and lazy-average bookkeeping of one weight table."""

    def __init__(self, n_buckets: int, n_labels: int) -> None:
        self.slot = np.full(n_buckets, -1, dtype=np.int64)
        self.rows = np.zeros(0, dtype=np.int64)
        self.grads = np.zeros((0, n_labels), dtype=np.float32)
        self.n_rows = 0
        self.synced = np.zeros(0, dtype=np.int64)
        self.cum_log_decay = np.zeros(1, dtype=np.float64)
        self.n_steps = 0
        self._averages_id = 0  # id() of the average array kept up to date lazily

    def add(self, d_scores: np.ndarray, features: np.ndarray) -> None:
        """Accumulate the gradient of ``gather_sum`` (several calls may precede a step)."""
        need = self.n_rows + features.size
        if need > self.rows.shape[0]:
            cap = max(need, 2 * self.rows.shape[0])
            rows = np.zeros(cap, dtype=np.int64)
            grads = np.zeros((cap, self.grads.shape[1]), dtype=np.float32)
            rows[: self.n_rows] = self.rows[: self.n_rows]
            grads[: self.n_rows] = self.grads[: self.n_rows]
            self.rows, self.grads = rows, grads
        self.n_rows = kernels.gather_rows(d_scores, features, self.slot, self.rows, self.grads,
                                          self.n_rows)

    def clear(self) -> None:
        kernels.clear_slots(self.slot, self.rows, self.n_rows)
        self.n_rows = 0

    def to_dense(self, model: Model) -> None:
        """Move the pending rows into the layer's dense gradient (fallback path)."""
        W = model.get_param("W")
        if not model.has_grad("W"):
            model.set_grad("W", np.zeros_like(W))
        kernels.scatter_rows(self.rows, self.grads, self.n_rows, model.get_grad("W"))
        self.clear()

    def _state_for(self, sgd: Optimizer, key: Tuple[int, str], W: np.ndarray):
        # (thinc optimizers take no weak references, so the table keeps none:
        # a key missing from the optimizer's dicts means a new optimizer)
        if key not in sgd.mom1:
            # plain SGD needs no moments: keep a token array (the key marks the run)
            size = W.size if _uses_adam(sgd) else 1
            sgd.mom1[key] = np.zeros(size, dtype=np.float32)
            sgd.mom2[key] = np.zeros(size, dtype=np.float32)
            self.synced = np.zeros(W.shape[0], dtype=np.int64)
            self.cum_log_decay = np.zeros(1, dtype=np.float64)
        if sgd.averages is not None:
            if key not in sgd.averages:
                # thinc starts averages at zero too
                sgd.averages[key] = np.zeros_like(W)
                self.synced[:] = sgd.nr_update[key]
            self._averages_id = id(sgd.averages[key])
        if not _uses_adam(sgd):
            return sgd.mom1[key].reshape(1, 1), sgd.mom2[key].reshape(1, 1)
        return sgd.mom1[key].reshape(W.shape), sgd.mom2[key].reshape(W.shape)

    def step(self, model: Model, sgd: Optimizer) -> None:
        """Apply ``sgd`` to the pending rows of ``model``'s ``W`` and clear them."""
        key = (model.id, "W")
        W = model.get_param("W")
        mom1, mom2 = self._state_for(sgd, key, W)
        sgd.nr_update[key] += 1
        step = sgd.nr_update[key]
        decay = min((1.0 + step) / (10.0 + step), 0.9999)
        if self.cum_log_decay.shape[0] <= step:
            grown = np.zeros(max(step + 1, 2 * self.cum_log_decay.shape[0]))
            grown[: self.cum_log_decay.shape[0]] = self.cum_log_decay
            self.cum_log_decay = grown
        self.cum_log_decay[step] = self.cum_log_decay[step - 1] + np.log(decay)
        self.n_steps = step
        grads = self.grads
        if sgd.L2 and not sgd.L2_is_weight_decay:
            # thinc adds coupled L2 before it clips
            grads = grads.copy()
            grads[: self.n_rows] += sgd.L2 * W[self.rows[: self.n_rows]]
        clip_scale = 1.0
        if sgd.grad_clip:
            norm = np.sqrt(kernels.sq_norm(grads, self.n_rows))
            if norm > sgd.grad_clip:
                clip_scale = sgd.grad_clip / norm
        decay_rate = 1.0 - sgd.learn_rate * sgd.L2 if (sgd.L2 and sgd.L2_is_weight_decay) else 1.0
        use_avg = sgd.averages is not None
        avg = sgd.averages[key] if use_avg else W
        kernels.update_rows(W, mom1, mom2, self.rows, grads, self.n_rows, step,
                            float(sgd.learn_rate), float(sgd.b1), float(sgd.b2), float(sgd.eps),
                            clip_scale, decay_rate, avg, self.synced, self.cum_log_decay,
                            _uses_adam(sgd), use_avg)
        self.clear()

    def sync_averages(self, model: Model, averages: Dict) -> None:
        """Bring every row of the lazily updated average up to date."""
        avg = averages.get((model.id, "W")) if averages else None
        if avg is None or id(avg) != self._averages_id:
            return
        kernels.catch_up_all(avg, model.get_param("W"), self.synced, self.cum_log_decay,
                             self.n_steps)


def _uses_adam(sgd: Optimizer) -> bool:
    return sgd.b1 > 0 and sgd.b2 > 0


def _supports(sgd: Optimizer) -> bool:
    return not getattr(sgd, "use_radam", False)


def apply_sparse_updates(model: Model, sgd: Optimizer) -> None:
    """Step every hashed table in ``model`` that has pending rows."""
    for node in model.walk():
        table = node.attrs.get(ATTR)
        if table is None or not table.n_rows:
            continue
        if _supports(sgd):
            table.step(node, sgd)
        else:
            table.to_dense(node)
            # thinc steps W with the other dense parameters afterwards


def sync_averages(model: Model, averages: Dict) -> None:
    """Make lazily updated averages exact before they are swapped in."""
    for node in model.walk():
        table = node.attrs.get(ATTR)
        if table is not None:
            table.sync_averages(node, averages)
