"""The Dask client: one on a local cluster or on a running scheduler.

We run on Dask's distributed scheduler rather than a scheduler of our own.
Both users of a cluster (the annotation driver, :mod:`spacy_crf.annotation`,
and the data-parallel batch trainer, :mod:`spacy_crf.training.fit`) get their
client from :func:`dask_client` (Brown *clusters* are another thing:
:mod:`spacy_crf.features.brown_clusters`):

* without an address, a :class:`distributed.LocalCluster` of ``n_workers``
  processes with one thread each (the CRF kernels and spaCy run one thread per
  process; processes side-step the GIL), no dashboard, quiet logs; its
  processes ignore SIGINT, so Ctrl-C in a terminal (which signals the whole
  process group) interrupts the driver alone, which shuts the cluster down,
  instead of every worker printing its own traceback;
* with an address (``tcp://HOST:8786``), a client of that running cluster,
  whose workers must be able to import spacy_crf and read the paths they are
  given (a shared file system).

Dask is an optional dependency: ``pip install -e ".[distributed]"`` in a checkout.
"""

import logging
import os
import signal
import threading
from contextlib import contextmanager
from typing import Any, Dict, Iterator, Optional

from .errors import Errors


@contextmanager
def dask_client(n_workers: int = 2, address: Optional[str] = None,
                timeout: float = 60.0) -> Iterator[Any]:
    """A ``distributed.Client``, closed (with its local cluster) on exit.

    Parameters
    ----------
    n_workers : int
        Worker processes of the local cluster (ignored with ``address``).
    address : str, optional
        A running scheduler to join instead of starting a local cluster.
    timeout : float
        Seconds to wait for the scheduler or the workers.

    Raises
    ------
    RuntimeError
        E100 when Dask is not installed or the cluster cannot be started or joined.
    """
    try:
        from distributed import Client, LocalCluster
    except ImportError as err:
        raise RuntimeError(Errors.E100.format(why=f"dask.distributed is not installed: {err}"))
    _drop_dask_cancel_noise()
    cluster = None
    try:
        if address:
            client = Client(address, timeout=timeout)
        else:
            if n_workers < 1:
                raise RuntimeError(Errors.E100.format(why=f"--n-workers is {n_workers}, not >= 1"))
            with _sigint_ignored():  # inherited by the nannies and their workers
                cluster = LocalCluster(n_workers=n_workers, threads_per_worker=1,
                                       processes=True, dashboard_address=None,
                                       silence_logs=logging.ERROR,
                                       # a worker that dies is restarted by its nanny
                                       env={"OMP_NUM_THREADS": "1"})
            client = Client(cluster, timeout=timeout)
            client.wait_for_workers(n_workers, timeout=timeout)
    except (OSError, TimeoutError) as err:
        if cluster is not None:
            cluster.close()
        raise RuntimeError(Errors.E100.format(why=f"{type(err).__name__}: {err}")) from err
    try:
        yield client
    except BaseException:
        # interrupted (Ctrl-C) or failed: the scheduler's complaints about the
        # results it can no longer deliver, and the workers' about a scheduler
        # that went away mid-heartbeat, are noise after the caller's message
        with _quiet("distributed"):
            if cluster is not None:  # (a shared cluster's workers are not ours to silence)
                _silence_workers(client)
            _close(client, cluster)
        raise
    _close(client, cluster)


class _DaskCancelNoise(logging.Filter):
    """Drops the one log record of a known Dask bug (distributed 2026.8).

    A Ctrl-C that lands while ``distributed.utils.sync`` waits for a coroutine
    that has not started yet schedules a ``cancel`` callback which reads the
    coroutine's ``future`` before it exists; tornado logs the ``NameError`` with
    its traceback from the client's loop thread, after our one-line message and
    at a moment we cannot order against. Nothing is lost (there is nothing to
    cancel), so the record is noise; every other callback error still shows.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if not isinstance(error, NameError):
            return True
        trace = error.__traceback__
        while trace is not None and trace.tb_next is not None:
            trace = trace.tb_next
        if trace is None:
            return True
        code = trace.tb_frame.f_code
        where = code.co_filename.replace(os.sep, "/")
        return not (code.co_name == "cancel" and where.endswith("distributed/utils.py"))


def _drop_dask_cancel_noise() -> None:
    """Installs :class:`_DaskCancelNoise` on tornado's callback logger (once):
    the callback may run after the client is closed, so it stays installed."""
    logger = logging.getLogger("tornado.application")
    if not any(isinstance(f, _DaskCancelNoise) for f in logger.filters):
        logger.addFilter(_DaskCancelNoise())


def _close(client: Any, cluster: Any) -> None:
    client.close()
    if cluster is not None:
        cluster.close()


def _silence_logs() -> None:
    """(Runs in a worker or nanny process) Dask's loggers there silenced."""
    for name in ["distributed", *logging.root.manager.loggerDict]:
        if name == "distributed" or name.startswith("distributed."):
            logging.getLogger(name).setLevel(logging.CRITICAL + 1)


def _silence_workers(client: Any) -> None:
    """The local cluster's workers and nannies quiet before it shuts down (best effort)."""
    for nanny in (False, True):
        try:
            client.run(_silence_logs, nanny=nanny)
        except Exception:  # a worker already gone has nothing more to say
            pass


@contextmanager
def _quiet(name: str) -> Iterator[None]:
    """The logger ``name`` (and its children) silenced for the block."""
    logger = logging.getLogger(name)
    level = logger.level
    logger.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        logger.setLevel(level)


def worker_memory_mb(client: Any) -> Dict[str, float]:
    """Resident memory (MB) of every worker process of ``client``'s cluster."""
    return {address: rss / 2**20 for address, rss in client.run(_rss).items()}


def worker_peak_memory_mb(client: Any) -> Dict[str, float]:
    """Peak resident memory (MB) of every worker process of ``client``'s cluster
    over its life so far: the high-water mark of a run, not what is left after it."""
    return {address: rss / 2**20 for address, rss in client.run(_peak_rss).items()}


@contextmanager
def _sigint_ignored() -> Iterator[None]:
    """SIGINT ignored while processes are started: a child keeps an ignored
    signal ignored (and Python, asyncio and Dask install no handler for it then).
    Only the main thread may change signal handlers; elsewhere a no-op."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


def worker_pids(client: Any) -> Dict[str, int]:
    """The process id of every worker (what a test kills to lose a worker)."""
    return client.run(os.getpid)


def _rss() -> int:
    import psutil  # a dependency of distributed

    return psutil.Process().memory_info().rss


def _peak_rss() -> int:
    """This process's peak resident set size in bytes (``ru_maxrss`` is in KiB
    on Linux, in bytes on macOS); the current RSS where ``resource`` is missing."""
    try:
        import resource
        import sys
    except ImportError:
        return _rss()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)
