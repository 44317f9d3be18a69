"""The batch trainer's objective: the likelihood of a featurized corpus, shard by shard.

A corpus is featurized once (``spacy_crf.training.corpus``) into
:class:`FeaturizedShard` objects: contiguous runs of docs with their feature
rows, gold labels and structure, all plain numpy arrays. Every parameter of
the CRF lives in one flat float64 vector ``theta`` whose layout is a
:class:`ParameterLayout`: the rows of the hashed table that the corpus uses
(``rows x labels``), the bias, then ``transitions``, ``start``, ``end``
(chain) or ``pair``, ``root`` (tree).

``shard.loss_and_gradient(theta)`` is the summed negative log-likelihood of
its sequences and its gradient, nothing else: the objective of the corpus is
the sum over shards plus the penalty. Shards pickle and hold no numba object,
so the same call runs on other workers; :class:`ShardedObjective` runs them on
a thread pool (the kernels release the GIL) and adds CRFsuite's L2 term, and
``training.distributed.DaskObjective`` runs them on Dask workers.
"""

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from .._kernels import lbfgs as vectors
from ..structures import BatchLayout, get_structure

@dataclass(frozen=True)
class ParameterLayout:
    """Where each parameter of the CRF sits in the flat vector ``theta``.

    Attributes
    ----------
    n_rows : int
        Rows of the compact weight table (the hashed rows the corpus uses).
    n_labels : int
        Number of labels ``L``.
    structure : str
        The registered structure (``spacy_crf.structures``) whose parameters
        follow the table and the bias: ``transitions``, ``start``, ``end``
        for the chain, ``pair``, ``root`` for the tree.
    n_relations : int
        Relation groups ``R`` of the tree's pair scores.
    """

    n_rows: int
    n_labels: int
    structure: str = "chain"
    n_relations: int = 1

    @property
    def params(self) -> Tuple[str, ...]:
        """The structure's parameter names."""
        return get_structure(self.structure).params

    @property
    def shapes(self) -> Dict[str, Tuple[int, ...]]:
        """Name -> shape of every parameter, in the order of ``theta``."""
        L = self.n_labels
        shapes: Dict[str, Tuple[int, ...]] = {"W": (self.n_rows, L), "b": (L,)}
        shapes.update(get_structure(self.structure).param_shapes(L, self.n_relations))
        return shapes

    @property
    def size(self) -> int:
        """Length of ``theta``."""
        return sum(int(np.prod(shape)) for shape in self.shapes.values())

    def split(self, theta: np.ndarray) -> Dict[str, np.ndarray]:
        """Views of ``theta`` (or of a gradient) shaped as each parameter."""
        if theta.shape != (self.size,):
            raise ValueError(f"theta has shape {theta.shape}, the layout needs ({self.size},)")
        views, start = {}, 0
        for name, shape in self.shapes.items():
            n = int(np.prod(shape))
            views[name] = theta[start:start + n].reshape(shape)
            start += n
        return views


@dataclass
class FeaturizedShard:
    """A contiguous run of a corpus's docs, featurized: everything the likelihood needs.

    Attributes
    ----------
    layout : ParameterLayout
        The layout of ``theta`` (shared by every shard of a corpus).
    rows : numpy.ndarray
        (N, K) int64 row of the compact weight table of every token and template.
    gold : numpy.ndarray
        (N,) int64 gold label ids, -1 where unknown (marginalised).
    structure : BatchLayout
        The batch layout (chains, forests, ...), rows relative to the shard.
    constraints : dict, optional
        ``transitions``, ``start``, ``end`` masks of a span scheme: 0 where
        allowed, ``-inf`` where forbidden, added to the parameters.
    blocked : numpy.ndarray, optional
        (N, L) bool: the labels the target does not let each token take
        (``Target.allowed_labels``: the lemma trees that do not apply to its
        form), whose emissions are ``-inf`` as in the component's training
        and decoding; None where every token may take every label.
    """

    layout: ParameterLayout
    rows: np.ndarray
    gold: np.ndarray
    structure: BatchLayout
    constraints: Optional[Dict[str, np.ndarray]] = None
    blocked: Optional[np.ndarray] = None
    # (emissions, d_emissions, nll) kept between calls: fresh arrays of this
    # size would be page-faulted in again at every evaluation
    _workspace: Optional[Tuple[np.ndarray, np.ndarray, np.ndarray]] = field(
        default=None, init=False, repr=False, compare=False)

    @property
    def n_tokens(self) -> int:
        return int(self.rows.shape[0])

    def loss_and_gradient(self, theta: np.ndarray,
                          out: Optional[np.ndarray] = None) -> Tuple[float, np.ndarray]:
        """Summed negative log-likelihood of the shard's gold labels at ``theta``.

        Parameters
        ----------
        theta : numpy.ndarray
            (layout.size,) float64 parameters.
        out : numpy.ndarray, optional
            (layout.size,) float64 array to write the gradient into.

        Returns
        -------
        loss : float
            Sum over the shard's sequences (``inf`` if a gold labelling is impossible).
        gradient : numpy.ndarray
            (layout.size,) float64: ``out``, or a new array.
        """
        theta = np.ascontiguousarray(theta, dtype=np.float64)
        params = self.layout.split(theta)
        if out is None:
            gradient = np.zeros(self.layout.size)
        else:
            gradient = out
            gradient[...] = 0.0
        grads = self.layout.split(gradient)
        N, L = self.n_tokens, self.layout.n_labels
        s = self.structure
        if self._workspace is None:
            self._workspace = (np.empty((N, L)), np.empty((N, L)), np.empty(s.lengths.shape[0]))
        if self.constraints is not None:  # a span scheme's forbidden moves
            params = {name: params[name] + self.constraints[name] if name in self.constraints
                      else params[name] for name in params}
        if self.blocked is None:
            loss = s.structure.shard_nll(self.rows, s, self.gold, params, grads, self._workspace)
        else:  # the target's candidates: the generic path, which masks the emissions
            loss = s.structure.masked_shard_nll(self.rows, s, self.gold, params, grads,
                                                self._workspace, self.blocked)
        return float(loss), gradient


class ShardedObjective:
    """The corpus objective: the shards' likelihood summed, plus ``c2 * ||theta||^2``.

    Parameters
    ----------
    shards : sequence of FeaturizedShard
        The corpus, with one layout.
    c2 : float
        L2 coefficient in CRFsuite's convention (the penalty is ``c2`` times
        the squared norm, its gradient ``2 * c2 * theta``).
    n_threads : int, optional
        Threads that evaluate shards at once (default: one per shard, at most
        the number of CPUs).
    """

    def __init__(self, shards: Sequence[FeaturizedShard], c2: float = 0.0,
                 n_threads: Optional[int] = None) -> None:
        if not shards:
            raise ValueError("The objective needs at least one shard.")
        self.shards: List[FeaturizedShard] = list(shards)
        self.layout = self.shards[0].layout
        if any(shard.layout != self.layout for shard in self.shards):
            raise ValueError("Every shard of an objective must have the same parameter layout.")
        self.c2 = float(c2)
        self.n_threads = n_threads or len(self.shards)
        self._pool: Optional[ThreadPoolExecutor] = None
        # one gradient buffer per shard but the first (which writes into the output)
        self._buffers: List[np.ndarray] = []
        self.n_evaluations = 0

    def data_loss_and_gradient(self, theta: np.ndarray,
                               out: Optional[np.ndarray] = None) -> Tuple[float, np.ndarray]:
        """The summed likelihood of every shard (no penalty), its gradient in ``out``."""
        theta = np.ascontiguousarray(theta, dtype=np.float64)
        out = np.empty(self.layout.size) if out is None else out
        if len(self._buffers) != len(self.shards) - 1:
            self._buffers = [np.empty(self.layout.size) for _ in self.shards[1:]]
        targets = [out] + self._buffers
        jobs = list(zip(self.shards, targets))
        if self.n_threads > 1 and len(jobs) > 1:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.n_threads, thread_name_prefix="crf-fit")
            results = list(self._pool.map(lambda job: job[0].loss_and_gradient(theta, job[1]),
                                          jobs))
        else:
            results = [shard.loss_and_gradient(theta, target) for shard, target in jobs]
        loss = 0.0
        for part_loss, part_gradient in results:
            loss += part_loss
            if part_gradient is not out:
                vectors.add_into(out, part_gradient)
        return loss, out

    def __call__(self, theta: np.ndarray,
                 out: Optional[np.ndarray] = None) -> Tuple[float, np.ndarray]:
        """Objective value and gradient at ``theta``, the gradient in ``out`` if given
        (else a new array, as scipy's ``jac=True`` expects)."""
        self.n_evaluations += 1
        loss, gradient = self.data_loss_and_gradient(theta, out)
        if self.c2:
            loss += vectors.add_l2(theta, self.c2, gradient)
        return loss, gradient

    def close(self) -> None:
        """Stop the thread pool (a later call starts a new one)."""
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None
