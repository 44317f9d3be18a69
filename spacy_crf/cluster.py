"""Dask glue: a client on a local cluster or on a running scheduler.

We run on Dask's distributed scheduler rather than a scheduler of our own.
Both users of a cluster (``spacy_crf.annotate`` and the data-parallel
``spacy_crf.fit``) get their client from :func:`dask_client`:

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
