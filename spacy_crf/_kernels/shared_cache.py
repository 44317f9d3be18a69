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

A cache never stops the work, nor runs what another user wrote (issue #48):

* numba's cache files are pickles, which run code as they load: a directory
  of the cache (from ``$SPACY_CRF_NUMBA_CACHE``, or ``.../spacy-crf``, down)
  owned by another user or writable by others is not used (W020, numba's
  default instead), and a cache file of this package's functions that is
  not the user's own and writable by them alone is not loaded (W022): see
  :mod:`.cache_files`;
* where no place at all can be written (a read-only home and install),
  numba would refuse to import the kernels ("no locator available"): they
  compile in every process instead (:class:`UncachedLocator`, W021);
* a cache file that is empty or damaged is a miss, and the kernel compiled
  writes it anew (W022); a save that fails (a full disk, a directory made
  read-only) leaves the kernel compiled but uncached (W023).

Each warning is said once per process. numba's own functions, and those of
other packages, are cached as numba always does.
"""

import contextlib
import hashlib
import inspect
import io
import os
import pickle
import re
import shutil
import sys
from functools import lru_cache
from pathlib import Path
from typing import Dict, Optional, Set, Tuple

import numba
from numba.core import caching, config, dispatcher

from ..errors import Warnings, warn
from .cache_files import UnsafeCacheFile, make_private_directories, read_private, restrict
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


def cache_place() -> Optional[Tuple[Path, Path]]:
    """(top, root): the highest directory of the cache the package names
    (``$SPACY_CRF_NUMBA_CACHE`` itself, or ``.../spacy-crf``), and this code's
    cache directory below it; each directory from ``top`` down must be the
    user's own. None where numba's default applies (also where the place
    cannot be named: no home directory, sources not on disk)."""
    setting = os.environ.get(ENV, "").strip()
    if switched_off(setting) or config.CACHE_DIR:
        return None
    try:
        if setting:
            top = base = Path(setting).expanduser()
        else:
            home = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
            top = Path(home) / "spacy-crf"
            base = top / "numba"
        return top, base / code_directory_name()
    except (OSError, RuntimeError, ValueError):
        return None


def cache_root() -> Optional[Path]:
    """This code's cache directory, or None where numba's default applies."""
    place = cache_place()
    return None if place is None else place[1]


def package_path(py_file: str) -> Optional[Path]:
    """The path of a source file relative to the package's root, or None for a
    file of another package."""
    try:
        return Path(py_file).resolve().relative_to(PACKAGE_ROOT)
    except (ValueError, OSError):
        return None


#: the codes of the warnings said in this process (each is said once)
_SAID: Set[str] = set()


def say_once(code: str, **fields: object) -> None:
    """Warn ``Warnings.<code>``, the first time only: one broken cache would
    otherwise say it for each of some 130 kernels."""
    if code not in _SAID:
        _SAID.add(code)
        warn(getattr(Warnings, code).format(**fields))


# numba's base class of locators (private: where a numba release lacks it,
# install() leaves numba's default alone)
_LOCATOR = getattr(caching, "_CacheLocator", None)
# and of caches' machinery, which holds the list of locators
_IMPL = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl", None)


class _PackageLocator(_LOCATOR or object):
    """What numba's locators of this package's functions share."""

    def __init__(self, py_func, py_file: str) -> None:
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno

    def get_disambiguator(self) -> str:
        return str(self._lineno)


class SharedCacheLocator(_PackageLocator):
    """numba's cache locator for the functions of this package (see the module)."""

    def __init__(self, py_func, py_file: str, top: Path, root: Path) -> None:
        super().__init__(py_func, py_file)
        self._relative = package_path(py_file)
        self._top = top
        self._cache_path = str(root / self._relative.parent)

    def get_cache_path(self) -> str:
        return self._cache_path

    def ensure_cache_path(self) -> None:
        # every directory from the top down the user's own, writable by them
        # alone (UnsafeCacheFile otherwise); then numba's check that a file
        # can be written there
        make_private_directories(self._top, Path(self._cache_path))
        super().ensure_cache_path()

    def get_source_stamp(self) -> str:
        # the content, not the file's time: a fresh copy of the same code matches
        # (hashed once, with the directory's digest)
        stamp = jitted_sources().get(self._relative.as_posix())
        return stamp or hashlib.sha256(Path(self._py_file).read_bytes()).hexdigest()

    @classmethod
    def from_function(cls, py_func, py_file: str) -> Optional["SharedCacheLocator"]:
        if package_path(py_file) is None:
            return None  # not a function of this package
        place = cache_place()
        if place is None:
            return None  # numba's default asked for
        locator = cls(py_func, py_file, *place)
        try:
            locator.ensure_cache_path()
        except UnsafeCacheFile as unsafe:
            say_once("W020", path=unsafe.path, why=unsafe.why)
            return None  # numba's own locators then
        except OSError:
            return None  # not writable: numba's own locators then
        return locator


class UncachedLocator(_PackageLocator):
    """The last of numba's locators, for this package's functions only: where
    no other could make a writable directory, numba would refuse to decorate
    the function ("no locator available") and the package would not import.
    :class:`GuardedFunctionCache` switches the cache of a function this
    locates off, so it compiles in each process; its path is never used."""

    def get_cache_path(self) -> str:
        return str(Path(self._py_file).parent)

    def ensure_cache_path(self) -> None:
        raise OSError("no writable place to cache the kernels")

    def get_source_stamp(self) -> str:
        return ""

    @classmethod
    def from_function(cls, py_func, py_file: str) -> Optional["UncachedLocator"]:
        if package_path(py_file) is None:
            return None
        say_once("W021")
        return cls(py_func, py_file)


class GuardedCacheFile(getattr(caching, "IndexDataCacheFile", object)):
    """numba's index and data files of a function of this package, read only
    where the user's own and writable by them alone (:mod:`.cache_files`),
    written so, and read as a miss where damaged."""

    def _read(self, path: str) -> bytes:
        try:
            return read_private(Path(path))
        except UnsafeCacheFile as unsafe:
            say_once("W022", path=unsafe.path, why=unsafe.why)
            raise

    def _load_index(self) -> dict:
        # numba's, but for the reading, and for a damaged index, which numba
        # raises on at every load and save (the save then writes it anew)
        try:
            stream = io.BytesIO(self._read(self._index_path))
        except OSError:
            return {}  # none yet (numba's case), or one not to read
        try:
            if pickle.load(stream) != self._version:
                return {}  # another numba's: the rest may not unpickle
            stamp, overloads = pickle.loads(stream.read())
            if not isinstance(overloads, dict):
                raise TypeError(f"the entries are a {type(overloads).__name__}")
        except Exception as damage:  # noqa: BLE001 (pickle raises any error on garbage)
            self._damaged(self._index_path, damage)
            return {}
        return overloads if stamp == self._source_stamp else {}

    def _load_data(self, name: str):
        path = self._data_path(name)
        data = self._read(path)  # (numba's load() reads an OSError as a miss)
        try:
            return pickle.loads(data)
        except Exception as damage:  # noqa: BLE001 (as above)
            self._damaged(path, damage)
            return None  # a miss: the save writes the same file anew

    @staticmethod
    def _damaged(path: str, damage: Exception) -> None:
        say_once("W022", path=path, why=f"is damaged ({type(damage).__name__}: {damage})")

    @contextlib.contextmanager
    def _open_for_write(self, filepath: str):
        # (a umask of 002 would let the group write what is read back as code)
        with super()._open_for_write(filepath) as file:
            restrict(file.fileno())
            yield file


class GuardedFunctionCache(getattr(caching, "FunctionCache", object)):
    """numba's cache of a jitted function; for the functions of this package,
    one that never stops the work: no cache where there is no place for one,
    a miss for an entry that cannot be loaded, and a warning for one that
    cannot be saved. Other functions' caches are numba's, unchanged."""

    def __init__(self, py_func) -> None:
        super().__init__(py_func)
        self._ours = package_path(inspect.getfile(py_func)) is not None
        if not self._ours:
            return
        if isinstance(self._impl.locator, UncachedLocator):
            self.disable()
            return
        self._cache_file = GuardedCacheFile(cache_path=self._cache_path,
                                            filename_base=self._impl.filename_base,
                                            source_stamp=self._impl.locator.get_source_stamp())

    def load_overload(self, sig, target_context):
        if not self._ours:
            return super().load_overload(sig, target_context)
        try:
            return super().load_overload(sig, target_context)
        except Exception as damage:  # noqa: BLE001
            # an entry that unpickles but does not rebuild: compiled instead,
            # and the save writes it anew
            GuardedCacheFile._damaged(self._cache_path, damage)
            return None

    def save_overload(self, sig, data) -> None:
        if not self._ours:
            return super().save_overload(sig, data)
        try:
            super().save_overload(sig, data)
        except OSError as error:  # a full disk, a directory made read-only...
            say_once("W023", path=self._cache_path, why=error)


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


def _numba_as_known() -> bool:
    """Whether numba's internals are those this module replaces parts of."""
    classes = getattr(_IMPL, "_locator_classes", None)
    return (_LOCATOR is not None and isinstance(classes, list)
            and hasattr(caching, "IndexDataCacheFile")
            and getattr(dispatcher, "FunctionCache", None) is getattr(caching, "FunctionCache", 0))



def install() -> None:
    """Put the locator first in numba's list and :class:`UncachedLocator`
    last, and have numba's dispatchers make :class:`GuardedFunctionCache`
    caches (before any kernel is decorated: numba picks a function's cache
    and its locator when ``cache=True`` is applied); then prune old code
    directories when this code's is new. Where numba's internals differ from
    those known here, nothing changes."""
    if not _numba_as_known() or SharedCacheLocator in _IMPL._locator_classes:
        return
    dispatcher.FunctionCache = GuardedFunctionCache
    _IMPL._locator_classes.insert(0, SharedCacheLocator)
    _IMPL._locator_classes.append(UncachedLocator)
    place = cache_place()
    if place is None or place[1].exists():
        return
    top, root = place
    try:
        make_private_directories(top, root.parent)
    except OSError:
        return  # not the user's own, or not writable: the locator says which
    # a new version of the code: the kernels shipped compiled for it, if any
    seed(root)
    prune(root)
