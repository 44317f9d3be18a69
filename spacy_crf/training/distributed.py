"""The batch trainer's objective with its shards on Dask workers (data-parallel L-BFGS).

Each worker holds one or more :class:`FeaturizedShard` objects, scattered once;
every evaluation broadcasts ``theta``, each worker returns its shards' summed
negative log-likelihood and gradient, and the driver adds them up in shard
order and runs the optimizer. With the same shards this is the same
arithmetic, in the same order, as :class:`ShardedObjective` on threads, so
the trained weights equal the single-process fit's.

A worker lost mid-run loses the shards it held: the driver, which keeps the
featurized corpus, scatters them again to the workers left (or to the nanny's
replacement) and repeats the evaluation.
"""

import time
from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

from .._kernels import lbfgs as vectors
from .objective import FeaturizedShard, ShardedObjective

#: evaluations repeated after a lost worker before giving up
MAX_RETRIES = 3
#: seconds before the first retry (then twice, three times that): the
#: scheduler drops a lost worker from its list within a heartbeat or so
RETRY_PAUSE_S = 0.5


class DaskObjective(ShardedObjective):
    """:class:`ShardedObjective` whose shards live on the workers of a Dask client.

    Parameters
    ----------
    shards : sequence of FeaturizedShard
        The corpus, with one layout (one shard per worker is the natural split).
    client : distributed.Client
        A client of the cluster (kept open by the caller for the objective's life).
    c2 : float
        L2 coefficient, as for ShardedObjective.
    """

    def __init__(self, shards: Sequence[FeaturizedShard], client: Any, c2: float = 0.0) -> None:
        super().__init__(shards, c2=c2, n_threads=1)
        self.client = client
        self._remote: List[Any] = []
        self._homes: List[str] = []
        self.n_rescatters = 0
        self._scatter()

    def _scatter(self) -> None:
        """Place shard ``i`` on worker ``i mod W`` (sorted addresses)."""
        workers = sorted(self.client.scheduler_info()["workers"])
        if not workers:
            self.client.wait_for_workers(1, timeout=60)
            workers = sorted(self.client.scheduler_info()["workers"])
        self._homes = [workers[i % len(workers)] for i in range(len(self.shards))]
        self._remote = [self.client.scatter(shard, workers=[home], hash=False)
                        for shard, home in zip(self.shards, self._homes)]

    def data_loss_and_gradient(self, theta: np.ndarray,
                               out: Optional[np.ndarray] = None) -> Tuple[float, np.ndarray]:
        theta = np.ascontiguousarray(theta, dtype=np.float64)
        out = np.empty(self.layout.size) if out is None else out
        lost = False
        for attempt in range(MAX_RETRIES + 1):
            try:
                if lost:
                    # inside the try: the scheduler may list a lost worker a moment
                    # longer, and a scatter to it then fails as the evaluation did
                    self._scatter()
                results = self._evaluate(theta)
                break
            except Exception:  # noqa: BLE001 -- a lost worker shows as several error types
                if attempt == MAX_RETRIES:
                    raise
                self.n_rescatters += 1
                lost = True
                time.sleep(RETRY_PAUSE_S * (attempt + 1))  # time to notice the loss
        loss = 0.0
        out[...] = results[0][1]
        loss += results[0][0]
        for part_loss, part_gradient in results[1:]:
            loss += part_loss
            vectors.add_into(out, part_gradient)
        return loss, out

    def _evaluate(self, theta: np.ndarray) -> List[Tuple[float, np.ndarray]]:
        theta_remote = self.client.scatter(theta, broadcast=True, hash=False)
        futures = [self.client.submit(shard_loss_and_gradient, remote, theta_remote,
                                      workers=[home], allow_other_workers=True, pure=False)
                   for remote, home in zip(self._remote, self._homes)]
        return self.client.gather(futures)

    def close(self) -> None:
        """Release the scattered shards (the client stays open)."""
        for remote in self._remote:
            remote.release()
        self._remote = []


def shard_loss_and_gradient(shard: FeaturizedShard, theta: np.ndarray) -> Tuple[float, np.ndarray]:
    """One shard's likelihood and gradient, on the worker that holds it.

    Arrays that arrive through Dask's serialization may be read-only buffers;
    the kernels only read them, but numba compiles a separate specialization
    for read-only arrays, so they are copied once, on purpose, instead.
    """
    _own_arrays(shard)
    if not theta.flags.writeable:
        theta = np.array(theta)
    return shard.loss_and_gradient(theta)


def _own_arrays(shard: FeaturizedShard) -> None:
    if getattr(shard, "_arrays_owned", False):
        return
    shard.rows = _writable(shard.rows)
    shard.gold = _writable(shard.gold)
    for name, value in vars(shard.structure).items():
        if isinstance(value, np.ndarray):
            setattr(shard.structure, name, _writable(value))
    if shard.constraints is not None:
        shard.constraints = {k: _writable(v) for k, v in shard.constraints.items()}
    shard._arrays_owned = True


def _writable(array: np.ndarray) -> np.ndarray:
    return array if array.flags.writeable else np.array(array)
