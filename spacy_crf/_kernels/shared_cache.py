"""Where numba caches this package's kernels: one place per user, shared by
every copy of the same code (issue #32).

numba's default cache lives in the ``__pycache__`` beside each source file,
so every new venv, clone or reinstall of spacy-crf compiles every kernel
again (10-30 s before a first training step). This locator keeps the
compiled kernels under the user's cache directory instead, in a directory
named by numba's and Python's versions and a digest of every source file of
the package that holds jitted code: a second venv or clone of the same code
on the same machine loads them, and any change to a kernel's source (or to a
kernel it calls, in any file) gets a directory of its own, so no copy ever
reads machine code compiled from other source.

Where: ``$SPACY_CRF_NUMBA_CACHE`` if set (a directory; ``off`` keeps
numba's default), else ``$XDG_CACHE_HOME/spacy-crf/numba`` or
``~/.cache/spacy-crf/numba``. ``NUMBA_CACHE_DIR``, numba's own setting,
takes precedence: where it is set, numba's locators do as they always did.
A directory that cannot be written falls back to numba's default as well.
The directories of the :data:`KEEP` most recently written versions of the
code are kept, older ones removed when a new one is made. A new directory
starts from the kernels the package ships compiled for it (:mod:`.prebuilt`).
"""

import hashlib
import os
import re
import shutil
import sys
from functools import lru_cache
from pathlib import Path
from typing import Dict, Optional

import numba
from numba.core import caching, config

from .prebuilt import seed, switched_off

#: the package's root directory (``spacy_crf/``)
PACKAGE_ROOT = Path(__file__).resolve().parents[1]
#: environment variable: the cache directory, or ``off``
ENV = "SPACY_CRF_NUMBA_CACHE"
#: code directories kept (this code's and the most recently written others)
KEEP = 8


@lru_cache(maxsize=None)
def jitted_sources() -> Dict[str, str]:
    """Relative path -> sha256 of each source file of the package that holds
    jitted code, read once per process (the directory's name and every
    function's source stamp come from it)."""
    # (this file names njit only to look for it: changing it recompiles nothing)
    return {path.relative_to(PACKAGE_ROOT).as_posix(): hashlib.sha256(data).hexdigest()
            for path in sorted(PACKAGE_ROOT.rglob("*.py")) if path != Path(__file__).resolve()
            for data in (path.read_bytes(),) if b"njit" in data}


def kernel_digest() -> str:
    """sha256 over the package's source files that hold jitted code."""
    digest = hashlib.sha256()
    for relative, sha in jitted_sources().items():
        digest.update(relative.encode())
        digest.update(bytes.fromhex(sha))
    return digest.hexdigest()


def code_directory_name() -> str:
    """The name of this code's cache directory: numba's and Python's versions
    and the sources' digest (compiled code of another version, interpreter or
    source is never read)."""
    version = f"numba{numba.__version__}-py{sys.version_info[0]}{sys.version_info[1]}"
    return f"{version}-{kernel_digest()[:20]}"


def cache_root() -> Optional[Path]:
    """This code's cache directory, or None where numba's default applies
    (also where it cannot be named: no home directory, sources not on disk)."""
    setting = os.environ.get(ENV, "").strip()
    if switched_off(setting) or config.CACHE_DIR:
        return None
    try:
        if setting:
            base = Path(setting).expanduser()
        else:
            home = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
            base = Path(home) / "spacy-crf" / "numba"
        return base / code_directory_name()
    except (OSError, RuntimeError, ValueError):
        return None


# numba's base class of locators (private: where a numba release lacks it,
# install() leaves numba's default alone)
_LOCATOR = getattr(caching, "_CacheLocator", None)


class SharedCacheLocator(_LOCATOR or object):
    """numba's cache locator for the functions of this package (see the module)."""

    def __init__(self, py_func, py_file: str, root: Path) -> None:
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        self._relative = Path(py_file).resolve().relative_to(PACKAGE_ROOT)
        self._cache_path = str(root / self._relative.parent)

    def get_cache_path(self) -> str:
        return self._cache_path

    def get_source_stamp(self) -> str:
        # the content, not the file's time: a fresh copy of the same code matches
        # (hashed once, with the directory's digest)
        stamp = jitted_sources().get(self._relative.as_posix())
        return stamp or hashlib.sha256(Path(self._py_file).read_bytes()).hexdigest()

    def get_disambiguator(self) -> str:
        return str(self._lineno)

    @classmethod
    def from_function(cls, py_func, py_file: str) -> Optional["SharedCacheLocator"]:
        try:
            Path(py_file).resolve().relative_to(PACKAGE_ROOT)
        except (ValueError, OSError):
            return None  # not a function of this package
        root = cache_root()
        if root is None:
            return None
        locator = cls(py_func, py_file, root)
        try:
            locator.ensure_cache_path()
        except OSError:
            return None  # not writable: numba's own locators then
        return locator


#: the name of a code directory (:func:`cache_root`); nothing else is ever pruned
CODE_DIRECTORY = re.compile(r"numba[0-9A-Za-z.+_]*-py[0-9]+-[0-9a-f]{20}")


def prune(root: Path, keep: int = KEEP) -> None:
    """Remove all but the ``keep`` most recently written code directories
    beside ``root`` (each change to the kernels' sources makes a new one, of
    up to ~15 MB); ``root`` itself stays, and so does anything not named as
    a code directory (``SPACY_CRF_NUMBA_CACHE`` may name a directory that
    holds other things)."""
    try:
        others = [path for path in root.parent.iterdir()
                  if path != root and path.is_dir() and CODE_DIRECTORY.fullmatch(path.name)]
        others.sort(key=lambda path: path.stat().st_mtime, reverse=True)
    except OSError:
        return
    for path in others[max(keep - 1, 0):]:
        shutil.rmtree(path, ignore_errors=True)


def install() -> None:
    """Put the locator first in numba's list (before any kernel is decorated:
    numba picks a function's locator when ``cache=True`` is applied), and
    prune old code directories when this code's is new. Where numba's
    internals differ from those known here, nothing changes."""
    impl = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl", None)
    classes = getattr(impl, "_locator_classes", None)
    if _LOCATOR is None or not isinstance(classes, list) or SharedCacheLocator in classes:
        return
    classes.insert(0, SharedCacheLocator)
    root = cache_root()
    if root is not None and not root.exists():
        # a new version of the code: the kernels shipped compiled for it, if any
        seed(root)
        prune(root)
