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

Weight decay (``L2_is_weight_decay``, spaCy's default) does not act on the
hashed table; every other parameter gets it as thinc gives it. thinc decays
every weight at every step, but a row-sparse step only reaches the rows a
batch touches, which would make the decay frequency-weighted: the most
frequent features shrunk most, the opposite of what a regulariser should do
(measured on EWT UPOS dev: decay on touched rows at L2 = 1 cost 1.0 point).
Applying it exactly to every row (a dense pass per step, measured at L2 =
0.01 and 0.05) moved dev accuracy by 0.00 and +0.16 while doubling the step
time, so the table is exempt, as biases often are. Coupled L2
(``L2_is_weight_decay = false``) is part of the gradient of the rows a batch
touches, as in thinc.
"""

from typing import Dict, Optional, Tuple

import numpy as np
from thinc.api import Model, Optimizer

from .._kernels import sparse_update as kernels
from .grow import grow_optimizer_state, grow_rows
from .layer_attrs import AVERAGE_WEIGHTS
from .layer_attrs import SPARSE_TABLE as ATTR

#: attrs key of a layer's learning-rate scale (a multiplier of the optimizer's rate)
LR_SCALE = "crf_lr_scale"
#: attrs keys of a layer's head start: its first ``BOOST_UPDATES`` updates
#: take larger steps (:func:`boost`), counted in ``UPDATES_DONE`` (saved with
#: the model, so a loaded model that trains on does not start over)
BOOST_UPDATES = "crf_boost_updates"
UPDATES_DONE = "crf_updates_done"
#: attrs key of a table's L1 penalty per update (``FeatureCRF(l1_penalty=...)``)
L1_PENALTY = "crf_l1_penalty"


def boost(updates_done: int, boost_updates: int) -> float:
    """The learning-rate multiplier of update ``updates_done + 1``:
    ``sqrt(boost_updates / t)`` while that is above 1, then 1.

    Adam moves a weight by about its learning rate per update whatever the
    gradient's size, so a plain loop of few updates (5 epochs of a 2,000-
    sentence corpus in batches of 128: 80 updates) leaves the sparse weights
    far from where the likelihood wants them. Larger early steps that decay
    as 1/sqrt(t), the classic schedule of stochastic gradient for CRFs, cover
    that distance; from update ``boost_updates`` on the rate is the
    optimizer's. Measured on EWT UPOS and UNER dev, clusters on (README,
    "Defaults"): 80 updates gain 1.5 and 5.1 points; the full corpora's
    1,960 updates move 0.0 and -0.2.
    """
    t = updates_done + 1
    return max(1.0, (boost_updates / t) ** 0.5) if boost_updates > 0 else 1.0


class SparseTable:
    """Pending row gradient and lazy-average bookkeeping of one weight table."""

    def __init__(self, n_buckets: int, n_labels: int) -> None:
        self.slot = np.full(n_buckets, -1, dtype=np.int64)
        self.rows = np.zeros(0, dtype=np.int64)
        self.grads = np.zeros((0, n_labels), dtype=np.float32)
        self.n_rows = 0
        self.synced = np.zeros(0, dtype=np.int64)
        self.cum_log_decay = np.zeros(1, dtype=np.float64)
        self.moment_row = np.zeros(0, dtype=np.int64)
        self.n_moment_rows = 0
        self.moment_width = n_labels  # columns of the compact moments (labels at their start)
        self.n_steps = 0
        self._averages_id = 0  # id() of the average array kept up to date lazily
        # the L1 penalty, taken lazily (_kernels/sparse_update.py): the step up
        # to which each row has taken it (-1: untouched), the summed rates of
        # steps 1..t, and what settle() needs of the last step
        self.l1_synced = np.zeros(0, dtype=np.int64)
        self.cum_rate = np.zeros(1, dtype=np.float64)
        self._l1_step: Optional[Tuple[float, np.ndarray, float, bool]] = None
        self._settled_upto = 0

    def __getstate__(self) -> Dict:
        # a copy (pickle: nlp.pipe(n_process=...), deepcopy) is made of a model
        # showing the weights it predicts with, averages as often as not: it
        # must not settle this iterate's L1 arrears on them
        state = dict(self.__dict__)
        state["_l1_step"] = None
        return state

    def add(self, d_scores: np.ndarray, picked: np.ndarray, scale: float = 1.0) -> None:
        """Accumulate the gradient of ``gather_sum`` (several calls may precede a step).

        ``picked`` (N, K) int64 holds the row each feature read (-1: dropped),
        ``scale`` the factor the forward pass gave each kept row.
        """
        need = self.n_rows + picked.size
        if need > self.rows.shape[0]:
            cap = max(need, 2 * self.rows.shape[0])
            rows = np.zeros(cap, dtype=np.int64)
            grads = np.zeros((cap, self.grads.shape[1]), dtype=np.float32)
            rows[: self.n_rows] = self.rows[: self.n_rows]
            grads[: self.n_rows] = self.grads[: self.n_rows]
            self.rows, self.grads = rows, grads
        self.n_rows = kernels.gather_rows(d_scores, picked, self.grads.dtype.type(scale), self.slot,
                                          self.rows, self.grads, self.n_rows)

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

    def _state_for(self, model: Model, sgd: Optimizer, key: Tuple[int, str], W: np.ndarray,
                   averages: Optional[Dict]):
        # (thinc optimizers take no weak references, so the table keeps none:
        # a key missing from the optimizer's dicts means a new optimizer)
        if key not in sgd.mom1:
            self.settle(model)  # the last optimizer's penalty, before its state goes
            # moments exist only for rows training touches (a third of a 2^20
            # table on CoNLL-2000): row r's are row moment_row[r] of the compact
            # arrays kept in the optimizer's dicts. Plain SGD keeps a token
            # array (the key marks the run).
            sgd.mom1[key] = np.zeros(0 if _uses_adam(sgd) else 1, dtype=np.float32)
            sgd.mom2[key] = np.zeros_like(sgd.mom1[key])
            self.moment_row = np.full(W.shape[0], -1, dtype=np.int64)
            self.n_moment_rows = 0
            self.synced = np.zeros(W.shape[0], dtype=np.int64)
            self.cum_log_decay = np.zeros(1, dtype=np.float64)
            self.l1_synced = np.full(W.shape[0], -1, dtype=np.int64)
            self.cum_rate = np.zeros(1, dtype=np.float64)
            self._settled_upto = 0
            self.moment_width = W.shape[1]
        elif _uses_adam(sgd) and self.moment_width != W.shape[1]:
            # the table grew new labels (models/grow.py): so do its moments
            for moments in (sgd.mom1, sgd.mom2):
                rows = moments[key].reshape(-1, self.moment_width)
                moments[key] = grow_rows(model, rows, W.shape[1]).reshape(-1)
            self.moment_width = W.shape[1]
        if averages is not None:
            if key not in averages:
                # thinc starts averages at zero too
                averages[key] = np.zeros_like(W)
                self.synced[:] = sgd.nr_update[key]
            self._averages_id = id(averages[key])
        if not _uses_adam(sgd):
            return sgd.mom1[key].reshape(1, 1), sgd.mom2[key].reshape(1, 1)
        self._add_moment_rows(sgd, key, W.shape[1])
        n_labels = W.shape[1]
        return (sgd.mom1[key].reshape(-1, n_labels), sgd.mom2[key].reshape(-1, n_labels))

    def _add_moment_rows(self, sgd: Optimizer, key: Tuple[int, str], n_labels: int) -> None:
        """Give the pending rows that have none a row of (zero) moments."""
        rows = self.rows[: self.n_rows]
        new = rows[self.moment_row[rows] < 0]
        if not new.size:
            return
        first = self.n_moment_rows
        self.moment_row[new] = np.arange(first, first + new.size)
        self.n_moment_rows += new.size
        capacity = sgd.mom1[key].size // n_labels
        if self.n_moment_rows > capacity:
            # by half again, not double: the moments of a wide table are its
            # largest arrays after the table (EWT's morphology: 2 x 94 MB for
            # 293k rows, where doubling reserved 2 x 168 MB)
            # (and never past the table's own rows: a row has one row of moments
            # at most, and 1.34 dense copies were reserved on a long run)
            capacity = min(max(self.n_moment_rows, capacity + capacity // 2, 1024),
                           self.moment_row.shape[0])
            for moments in (sgd.mom1, sgd.mom2):
                grown = np.zeros(capacity * n_labels, dtype=np.float32)
                grown[: moments[key].size] = moments[key]
                moments[key] = grown

    def step(self, model: Model, sgd: Optimizer, lr_scale: float = 1.0,
             averages: Optional[Dict] = None, l1: float = 0.0,
             l1_scale: Optional[float] = None) -> None:
        """Apply ``sgd`` to the pending rows of ``model``'s ``W`` and clear them.

        ``lr_scale`` multiplies the optimizer's learning rate, as thinc's
        ``Optimizer.__call__(..., lr_scale=...)`` does (weight decay included).
        ``averages`` (thinc's layout), if given, get the step's moving average:
        the optimizer's own (``use_averages``) or the component's. ``l1``: the
        L1 penalty of this step (``_kernels/sparse_update.py``; rows left
        alone take theirs when next touched or at :meth:`settle`), at the
        optimizer's rate times ``l1_scale`` (default ``lr_scale``).
        """
        key = (model.id, "W")
        W = model.get_param("W")
        mom1, mom2 = self._state_for(model, sgd, key, W, averages)
        sgd.nr_update[key] += 1
        step = sgd.nr_update[key]
        decay = min((1.0 + step) / (10.0 + step), 0.9999)
        self.cum_log_decay = _room_for(self.cum_log_decay, step)
        self.cum_log_decay[step] = self.cum_log_decay[step - 1] + np.log(decay)
        learn_rate = float(sgd.learn_rate) * lr_scale
        adam = _uses_adam(sgd)
        self.cum_rate = _room_for(self.cum_rate, step)
        self.cum_rate[step] = self.cum_rate[step - 1] + kernels.penalty_rate(
            float(sgd.learn_rate) * (lr_scale if l1_scale is None else l1_scale),
            float(sgd.b2), step, adam)
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
        # (no weight decay on the hashed table: see the module docstring)
        use_avg = averages is not None
        avg = averages[key] if use_avg else W
        kernels.update_rows(W, mom1, mom2, self.moment_row, self.rows, grads, self.n_rows, step,
                            learn_rate, float(sgd.b1), float(sgd.b2), float(sgd.eps),
                            clip_scale, avg, self.synced, self.cum_log_decay, adam, use_avg,
                            float(l1), self.cum_rate, self.l1_synced)
        self._l1_step = (float(l1), mom2, float(sgd.eps), adam) if l1 > 0 else None
        self.clear()

    def settle(self, model: Model) -> None:
        """Give every row the L1 penalty it owes (before the iterate predicts
        or is saved; averages do without, :func:`sync_averages`). Cheap when
        nothing is owed."""
        if self._l1_step is None or self._settled_upto >= self.n_steps:
            return
        l1, mom2, eps, adam = self._l1_step
        kernels.settle_l1(model.get_param("W"), mom2, self.moment_row, self.l1_synced,
                          self.cum_rate, self.n_steps, l1, eps, adam)
        self._settled_upto = self.n_steps

    def waive(self) -> None:
        """Forget the L1 penalty the rows owe: the iterate that owed it is gone
        (its averages became the weights, ``WeightAverages.commit``). Averages
        owe none (:func:`sync_averages`), as a saved and loaded model owes none;
        rows take the penalty of the steps after this one as before."""
        touched = self.l1_synced >= 0
        self.l1_synced[touched] = self.n_steps
        self._settled_upto = self.n_steps

    def sync_averages(self, model: Model, averages: Dict) -> None:
        """Bring every row of the lazily updated average up to date."""
        avg = averages.get((model.id, "W")) if averages else None
        if avg is None or id(avg) != self._averages_id:
            return
        kernels.catch_up_all(avg, model.get_param("W"), self.synced, self.cum_log_decay,
                             self.n_steps)


def _room_for(table: np.ndarray, step: int) -> np.ndarray:
    """``table`` (indexed by step), grown if needed so that ``step`` fits."""
    if table.shape[0] > step:
        return table
    grown = np.zeros(max(step + 1, 2 * table.shape[0]), dtype=table.dtype)
    grown[: table.shape[0]] = table
    return grown


def _uses_adam(sgd: Optimizer) -> bool:
    return sgd.b1 > 0 and sgd.b2 > 0


def _supports(sgd: Optimizer) -> bool:
    return not getattr(sgd, "use_radam", False)


def restart_boost(model: Model) -> None:
    """Give every layer with a head start its boosted updates again (a model
    initialized anew trains from scratch)."""
    for node in model.walk():
        if node.attrs.get(BOOST_UPDATES):
            node.attrs[UPDATES_DONE] = 0


def _lr_scales(model: Model) -> Dict[int, float]:
    """Each layer's learning-rate scale for this update (its ``LR_SCALE`` times
    its head start), and the head start's update counted."""
    scales: Dict[int, float] = {}
    for node in model.walk():
        scale = float(node.attrs.get(LR_SCALE, 1.0))
        if node.attrs.get(BOOST_UPDATES):
            done = int(node.attrs.get(UPDATES_DONE, 0))
            scale *= boost(done, int(node.attrs[BOOST_UPDATES]))
            node.attrs[UPDATES_DONE] = done + 1
        scales[node.id] = scale
    return scales


def _averages_of(node: Model, sgd: Optimizer, own: Optional[Dict]) -> Optional[Dict]:
    """Where a step of ``node``'s parameters is averaged: the optimizer's
    averages (``use_averages``), else the component's own (``own``) for a layer
    that asks for them (``weight_average.AVERAGE_WEIGHTS``), else nowhere."""
    if sgd.averages is not None:
        return sgd.averages
    return own if own is not None and node.attrs.get(AVERAGE_WEIGHTS) else None


def apply_sparse_updates(model: Model, sgd: Optimizer,
                         scales: Optional[Dict[int, float]] = None,
                         averages: Optional[Dict] = None) -> None:
    """Step every hashed table in ``model`` that has pending rows (``averages``:
    the component's own, see :func:`step_model`)."""
    for node in model.walk():
        table = node.attrs.get(ATTR)
        if table is None or not table.n_rows:
            continue
        if _supports(sgd):
            scale = scales[node.id] if scales is not None else node.attrs.get(LR_SCALE, 1.0)
            # the L1 penalty takes the layer's rate scale, not its head start:
            # the head start hurries the data's pull, and a penalty as hurried
            # cut features short on small corpora (docs/component.md)
            table.step(node, sgd, scale, _averages_of(node, sgd, averages),
                       float(node.attrs.get(L1_PENALTY, 0.0)),
                       float(node.attrs.get(LR_SCALE, 1.0)))
        else:
            table.to_dense(node)
            # stepped with the other dense parameters by step_model


def step_model(model: Model, sgd: Optimizer, averages: Optional[Dict] = None) -> None:
    """thinc's ``Model.finish_update``, with each layer's learning-rate scale.

    The hashed tables take their row-sparse step; every other parameter is
    stepped by ``sgd`` with ``lr_scale`` read from its layer's attrs
    (``LR_SCALE``, default 1, times the layer's head start, :func:`boost`),
    the argument thinc's optimizers take for it. ``averages``: the
    component's own averages (``weight_average.WeightAverages``), stepped for
    the layers that ask for them when ``sgd`` keeps none.
    """
    grow_optimizer_state(model, sgd)  # moments of weights that grew new labels
    scales = _lr_scales(model)
    apply_sparse_updates(model, sgd, scales, averages)
    for node in model.walk():
        for shim in node.shims:
            shim.finish_update(sgd)
    for node in model.walk():
        lr_scale = scales[node.id]
        for name in node.param_names:
            if node.has_grad(name):
                key = (node.id, name)
                param, _ = sgd(key, node.get_param(name), node.get_grad(name),
                               lr_scale=lr_scale)
                node.set_param(name, param)
                if sgd.averages is None and _averages_of(node, sgd, averages) is not None:
                    # (the optimizer averaged its own already, where it keeps them)
                    if key not in averages:
                        averages[key] = np.zeros_like(param)  # as thinc's start at zero
                    node.ops.update_averages(averages[key], param, sgd.nr_update[key])


def settle_tables(model: Model) -> None:
    """Give the training iterate's hashed tables the L1 penalty they owe
    (:meth:`SparseTable.settle`); ``model`` must hold its iterate."""
    for node in model.walk():
        table = node.attrs.get(ATTR)
        if table is not None:
            table.settle(node)


def waive_arrears(model: Model) -> None:
    """Forget the L1 penalty ``model``'s hashed tables owe (:meth:`SparseTable.waive`):
    for a model whose averages have replaced its iterate for good."""
    for node in model.walk():
        table = node.attrs.get(ATTR)
        if table is not None:
            table.waive()


def sync_averages(model: Model, averages: Dict) -> None:
    """Make lazily updated averages exact before they are swapped in.

    The L1 penalty a row owes is left owed (:func:`settle_tables` is for an
    iterate that predicts): a row's average catches up with the weight the row
    had after its last update, whenever it is synced, so how often a model
    predicts during training changes neither its averages nor its iterate.
    """
    for node in model.walk():
        table = node.attrs.get(ATTR)
        if table is not None:
            table.sync_averages(node, averages)
