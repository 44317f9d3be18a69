"""The Dask glue's logging: a known Dask race on Ctrl-C must not print a traceback
after the driver's one-line message (it did once in CI, 1 run in ~40)."""

import logging
import signal
import threading
import time

import pytest

pytest.importorskip("distributed")

from distributed.utils import LoopRunner, sync  # noqa: E402

from spacy_crf.dask_client import _DaskCancelNoise, _drop_dask_cancel_noise  # noqa: E402


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def interrupt_sync_before_its_coroutine_starts() -> None:
    """Ctrl-C in the main thread while ``sync`` waits and the loop is still busy:
    ``sync`` schedules ``cancel`` behind its coroutine's first step, so ``cancel``
    runs before the coroutine has made its future (Dask's race, made certain)."""
    runner = LoopRunner(asynchronous=False)
    runner.start()
    # Ctrl-C's handler, whatever the runner inherited: a job started in the
    # background of a script has SIGINT ignored, and pytest under it too
    handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        runner.loop.add_callback(time.sleep, 0.5)  # the loop thread is busy
        main = threading.main_thread().ident
        threading.Timer(0.1, signal.pthread_kill, (main, signal.SIGINT)).start()

        async def work() -> int:
            return 1

        with pytest.raises(KeyboardInterrupt):
            sync(runner.loop, work)
        time.sleep(0.8)  # the loop runs the coroutine's first step, then cancel
    finally:
        signal.signal(signal.SIGINT, handler)
        runner.stop()


@pytest.fixture
def tornado_records():
    logger = logging.getLogger("tornado.application")
    handler, filters = Records(), list(logger.filters)
    logger.addHandler(handler)
    yield logger, handler.records
    logger.removeHandler(handler)
    logger.filters[:] = filters


def test_the_race_logs_a_traceback_without_the_filter(tornado_records):
    """The reason for the filter (and proof the next test can fail)."""
    logger, records = tornado_records
    logger.filters[:] = [f for f in logger.filters if not isinstance(f, _DaskCancelNoise)]
    interrupt_sync_before_its_coroutine_starts()
    errors = [r.exc_info[1] for r in records if r.exc_info]
    if not any(isinstance(e, NameError) for e in errors):
        pytest.skip("this version of distributed no longer has the race")


def test_the_filter_drops_the_race_and_nothing_else(tornado_records):
    logger, records = tornado_records
    _drop_dask_cancel_noise()
    _drop_dask_cancel_noise()  # installed once however many clients start
    assert sum(isinstance(f, _DaskCancelNoise) for f in logger.filters) == 1
    interrupt_sync_before_its_coroutine_starts()
    assert not [r for r in records if r.exc_info], [r.getMessage() for r in records]
    try:
        raise NameError("another callback's bug")
    except NameError:
        logger.error("Exception in callback", exc_info=True)
    assert len(records) == 1  # every other error still shows
