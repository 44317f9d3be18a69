"""One line on stderr when this package's kernels compile for more than a second.

numba compiles a kernel the first time a process calls it with new types, and
caches the machine code (``cache=True``): in a fresh environment (a new venv,
container, CI job or Dask worker) the first training step waits several
seconds for that with no word. This listener to numba's compile events says
so once per process, a second into the first compilation of a kernel of ours,
and says nothing when the kernels come from the cache (numba raises no compile
event then) or when compiling is quick.
"""

import sys
import threading
import time
from typing import Optional

from numba.core import event

#: seconds of compiling before the notice is printed
DELAY_S = 1.0
MESSAGE = ("spacy-crf: compiling its CRF kernels for this machine (once: numba caches "
           "them, and later runs load them in a fraction of a second)...")


class CompileNotice(event.Listener):
    """Prints :data:`MESSAGE` once if a kernel of ``package`` compiles for over ``delay`` s."""

    def __init__(self, package: str = "spacy_crf", delay: float = DELAY_S) -> None:
        self.package = package
        self.delay = delay
        self.depth = 0
        self.said = False
        self.started = 0.0
        self.timer: Optional[threading.Timer] = None
        self.lock = threading.Lock()

    def _ours(self, ev: event.Event) -> bool:
        dispatcher = (ev.data or {}).get("dispatcher")
        module = getattr(getattr(dispatcher, "py_func", None), "__module__", "") or ""
        return module.startswith(self.package + ".")

    def on_start(self, ev: event.Event) -> None:
        if self.said or not self._ours(ev):
            return
        with self.lock:
            self.depth += 1
            if self.depth == 1:
                self.started = time.perf_counter()
                self.timer = threading.Timer(self.delay, self._say)
                self.timer.daemon = True
                self.timer.start()

    def on_end(self, ev: event.Event) -> None:
        if not self._ours(ev):
            return
        with self.lock:
            if self.depth == 0:
                return
            self.depth -= 1
            if self.depth == 0 and self.timer is not None:
                self.timer.cancel()
                self.timer = None

    def _say(self) -> None:
        with self.lock:
            if self.said or self.depth == 0:
                return
            self.said = True
        print(MESSAGE, file=sys.stderr, flush=True)


_NOTICE = CompileNotice()


def install() -> None:
    """Listen to numba's compile events (once per process)."""
    if not getattr(install, "done", False):
        event.register("numba:compile", _NOTICE)
        install.done = True
