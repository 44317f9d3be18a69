"""Tables of spacy-lookups-data, and the cache of what is computed from them.

spaCy's own components find a language's tables through the ``spacy_lookups``
entry points that spacy-lookups-data registers (``registry.lookups``): a JSON
file per table (``en_lexeme_cluster.json.gz``, ``en_lemma_lookup.json.gz``).
Reading one and building from it takes up to a second or two (English's
three tables, 2.5 s in all); what a feature source makes of it is kept as numpy
arrays in :func:`cache_dir`, under a name that changes with the files it was
made from, and read from there by the next process.
"""

import contextlib
import functools
import gc
import os
import re
import threading
import zipfile
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, Optional, Sequence, TypeVar

import numpy as np

T = TypeVar("T")


def once_per_language(make: Callable[[str], T]) -> Callable[[str], T]:
    """``make(lang)`` called once per language and process, behind a lock of
    its own (threads of one process, e.g. Dask's, ask at once): a table of
    spacy-lookups-data is read or built once, then shared."""
    made: Dict[str, T] = {}
    lock = threading.Lock()

    @functools.wraps(make)
    def table(lang: str) -> T:
        with lock:
            if lang not in made:
                made[lang] = make(lang)
            return made[lang]

    return table


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """The cyclic garbage collector off while a table is built: the build
    makes hundreds of thousands of objects, none in a cycle, and each
    collection would walk every one of them (English's lemma table: 0.2-0.3 s
    of its 1.1 s). It is on again after, where it was."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def table_source(lang: str, table: str) -> Optional[Path]:
    """The file spacy-lookups-data ships for ``lang``'s table ``table``; None
    where the package is not installed or has no such table."""
    from spacy.util import registry

    try:
        source = registry.lookups.get(lang).get(table) if lang in registry.lookups else None
    except Exception:  # a broken entry point of the package: as if it were not installed
        source = None
    return None if source is None else Path(source)


def cache_dir() -> Path:
    """Where tables read from spacy-lookups-data are kept as numpy arrays:
    ``$SPACY_CRF_CACHE``, else ``$XDG_CACHE_HOME/spacy-crf``, else
    ``~/.cache/spacy-crf`` (the kernel cache's ``numba/`` is beside them,
    ``_kernels/shared_cache.py``)."""
    setting = os.environ.get("SPACY_CRF_CACHE")
    if setting:
        return Path(setting)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "spacy-crf"


def cache_file(sources: Sequence[Path], stem: str) -> Optional[Path]:
    """Where what is made of the files ``sources`` is cached: ``stem`` and each
    file's size and time (None where one cannot be read)."""
    stamps = []
    for source in sources:
        # the package names foo.json and ships foo.json.gz (spaCy's loader tries both)
        for candidate in (source, source.with_name(source.name + ".gz")):
            try:
                stat = candidate.stat()
                break
            except OSError:
                continue
        else:
            return None
        stamps.append(f"{stat.st_size}_{int(stat.st_mtime)}")
    return cache_dir() / f"{stem}_{'_'.join(stamps)}{CACHE_SUFFIX}"


#: the suffix of a cached table, after its stem and its sources' stamps
CACHE_SUFFIX = ".npz"
#: the files of one stem kept (of other stamps: other releases of
#: spacy-lookups-data, which two environments may use in turn); older go
KEPT_PER_STEM = 2


def read_cache(path: Optional[Path]) -> Optional[Dict[str, np.ndarray]]:
    """The arrays cached at ``path``; None where there are none, or they are damaged."""
    if path is None or not path.exists():
        return None
    try:
        with np.load(path) as arrays:
            return {name: arrays[name] for name in arrays.files}
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
        # a damaged cache (cut short by a full disk or a killed process, empty,
        # or not an archive): the caller reads the package's files again
        return None


def write_cache(path: Optional[Path], arrays: Dict[str, np.ndarray],
                stem: Optional[str] = None) -> None:
    """Keep ``arrays`` for the next process (written whole, then renamed; a cache
    that cannot be written is no error: the tables are read from the package).
    ``stem`` (``path``'s, :func:`cache_file`): of its other files, made of
    other releases of the sources, the newest :data:`KEPT_PER_STEM` stay (each
    reinstall of spacy-lookups-data added a copy, never removed)."""
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{path.name}.{os.getpid()}.tmp.npz")
        np.savez(partial, **arrays)
        partial.replace(path)
        if stem is not None:
            _prune(path, stem)
    except OSError:
        pass


def _prune(path: Path, stem: str) -> None:
    """Remove the oldest cached files of ``stem`` but :data:`KEPT_PER_STEM`."""
    same = re.compile(re.escape(stem) + r"(_\d+_-?\d+)+" + re.escape(CACHE_SUFFIX) + "$")
    found = [p for p in path.parent.iterdir() if same.match(p.name)]
    found.sort(key=lambda p: (p == path, p.stat().st_mtime))  # (this one the newest)
    for old in found[:-KEPT_PER_STEM]:
        with contextlib.suppress(OSError):
            old.unlink()


def cached_word_table(lang: str, table: str, stem: str,
                      build: Callable[[Any], Optional["WordTable"]],
                      key_attr: str = "ORTH") -> Optional["WordTable"]:
    """The word table made by ``build`` from spacy-lookups-data's table
    ``table`` for ``lang`` (its JSON as ``spacy.lookups.load_language_data``
    reads it), kept in the cache under ``stem`` and read from there the next
    time; None where the package has no such table or ``build`` makes none."""
    from spacy.lookups import load_language_data

    from .word_table import WordTable

    source = table_source(lang, table)
    if source is None:
        return None
    cached = cache_file([source], stem)
    arrays = read_cache(cached)
    if arrays is not None:
        try:
            return WordTable(arrays["keys"], arrays["values"], key_attr)
        except (KeyError, ValueError):  # a cache of another layout: made anew below
            pass
    with paused_gc():
        made = build(load_language_data(source))
    if made is not None:
        write_cache(cached, {"keys": made.keys, "values": made.values}, stem)
    return made
