"""Kernels compiled ahead of time for a family of CPUs, shipped with the
package, so that a fresh install does not wait for numba (issue #32).

numba compiles a kernel on its first call in an environment with an empty
cache: 10-15 s before a new user's first training step, and again in every
new container, CI job or Dask worker on a fresh machine. The package carries
an archive of its kernels' cache, compiled by ``tools/build_prebuilt_kernels.py``
for a CPU level rather than a chip (``NUMBA_CPU_NAME=x86-64-v3``: the AVX2 /
FMA level of x86-64 CPUs since about 2015; ``generic`` for any x86-64), one
per platform, CPU level, numba and Python version and digest of the jitted
sources (``prebuilt/<platform>-<cpu>-<code directory>.tar.xz``).

When this code's shared cache directory (:mod:`.shared_cache`) is new, the
best archive this machine's CPU can run is unpacked into it. numba keys an
entry of its cache by the CPU it compiled for, so each entry is relabelled
for this machine's CPU, and numba then loads it as it would its own. A kernel
or signature the archive lacks compiles as before, into the same directory;
any change to the sources gives a digest no archive matches, and nothing is
unpacked. ``SPACY_CRF_PREBUILT=off`` leaves the archives alone (compile for
this very CPU instead, once); where ``NUMBA_CPU_NAME`` is set, only an archive
for that CPU is used.

Nothing is read outside the archive's own code directory, and a damaged
archive is skipped: the kernels then compile as they would without one.
"""

import lzma
import os
import pickle
import platform
import shutil
import sys
import tarfile
import uuid
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import numba

from .cache_files import DIRECTORY_MODE, restrict_tree

#: environment variable: ``off`` leaves the shipped kernels unused
ENV = "SPACY_CRF_PREBUILT"
_OFF = ("off", "0", "false", "no")
#: where the archives live, inside the package
DIRECTORY = Path(__file__).resolve().parent / "prebuilt"
#: the CPU levels an archive may be built for, best first: numba's CPU name
#: (LLVM's) -> the host CPU features (LLVM's names) its code may use
PORTABLE_CPUS: Dict[str, Tuple[str, ...]] = {
    "x86-64-v3": ("avx", "avx2", "bmi", "bmi2", "f16c", "fma", "lzcnt", "movbe", "xsave",
                  "cx16", "popcnt", "sahf", "sse3", "ssse3", "sse4.1", "sse4.2"),
    "generic": (),
}
#: the only files an archive may hold: numba's index and data files
_SUFFIXES = (".nbi", ".nbc")


def switched_off(setting: str) -> bool:
    """Whether an environment setting says off (``off``, ``0``, ``false``, ``no``)."""
    return setting.strip().lower() in _OFF


def enabled() -> bool:
    """Whether the shipped archives may be used (``SPACY_CRF_PREBUILT`` not off)."""
    return not switched_off(os.environ.get(ENV, ""))


def platform_tag() -> str:
    """``sys.platform`` and the machine, e.g. ``linux-x86_64``: what the
    portable code runs on."""
    return f"{sys.platform}-{platform.machine().lower()}"


def archive_path(code_directory: str, cpu: str) -> Path:
    """The archive of a code directory (named as :func:`.shared_cache.cache_root`
    names it: numba's and Python's versions and the sources' digest) compiled
    for ``cpu``."""
    return DIRECTORY / f"{platform_tag()}-{cpu}-{code_directory}.tar.xz"


def host_supports(cpu: str) -> bool:
    """Whether this machine's CPU has every feature ``cpu``'s code may use (a
    feature this LLVM does not name is not one it would use)."""
    needed = PORTABLE_CPUS.get(cpu)
    if needed is None:
        return False
    if cpu.startswith("x86-64") and platform.machine().lower() not in ("x86_64", "amd64"):
        return False  # (another architecture's LLVM names none of these features)
    if not needed:
        return True
    try:
        from llvmlite import binding

        host = binding.get_host_cpu_features()
    except (RuntimeError, ImportError, OSError):
        return False
    return all(host.get(name, True) for name in needed)


def usable_cpus() -> List[str]:
    """The CPU levels whose code may run here, best first: the one
    ``NUMBA_CPU_NAME`` names where it is set."""
    from numba.core import config

    if config.CPU_NAME:
        return [config.CPU_NAME]
    return [cpu for cpu in PORTABLE_CPUS if host_supports(cpu)]


def host_magic_tuple() -> Tuple:
    """What numba's cache keys this process's compiled code by: the target
    triple, the CPU and its features."""
    from numba.core.registry import cpu_target

    return cpu_target.target_context.codegen().magic_tuple()


def _members(tar: tarfile.TarFile):
    """The archive's regular files, each a numba index or data file under a
    relative path, or ValueError: nothing else is unpacked."""
    members = tar.getmembers()
    for member in members:
        parts = Path(member.name).parts
        if member.isdir():
            if Path(member.name).is_absolute() or ".." in parts:
                raise ValueError(f"unexpected directory {member.name!r}")
            continue
        if (not member.isfile() or Path(member.name).is_absolute() or ".." in parts
                or not member.name.endswith(_SUFFIXES)):
            raise ValueError(f"unexpected member {member.name!r}")
    return members


def read_index(path: Path) -> Optional[Tuple[Any, Dict]]:
    """A numba index file's source stamp and its entries (key -> data file name),
    or None where another numba version wrote it (numba reads no further then:
    the rest may not unpickle)."""
    with open(path, "rb") as f:
        version = pickle.load(f)
        data = f.read()
    if version != numba.__version__:
        return None
    stamp, overloads = pickle.loads(data)
    return stamp, overloads


def relabel_index(path: Path, magic: Tuple, cpu: str) -> int:
    """Key every entry of a numba index file by ``magic`` (this machine's CPU)
    where the archive keyed it by ``cpu`` (the archive's, on the same target);
    returns how many. An index of another numba version is left as it is
    (numba ignores it)."""
    index = read_index(path)
    if index is None:
        return 0
    stamp, overloads = index
    relabelled = {}
    count = 0
    for key, name in overloads.items():
        signature, key_magic, code_hashes = key
        if key_magic[0] == magic[0] and key_magic[1] == cpu:
            key_magic = magic
            count += 1
        relabelled[(signature, key_magic, code_hashes)] = name
    # numba's layout: its version, then the pickled (stamp, entries)
    with open(path, "wb") as f:
        pickle.dump(numba.__version__, f, protocol=-1)
        f.write(pickle.dumps((stamp, relabelled), protocol=-1))
    return count


def seed(root: Path, archive: Optional[Path] = None, cpu: Optional[str] = None) -> bool:
    """Fill the new code directory ``root`` from the best archive this CPU
    can run (or from ``archive``, built for ``cpu``); True if it did. Unpacks
    beside ``root`` and renames into place, so a process sees the whole
    archive or none of it (and two seeding at once do not mix)."""
    if not enabled() or root.exists():
        return False
    if archive is None:
        found = [(path, level) for level in usable_cpus()
                 for path in (archive_path(root.name, level),) if path.is_file()]
        if not found:
            return False
        archive, cpu = found[0]
    if not archive.is_file() or cpu is None:
        return False
    staging = None
    try:
        root.parent.mkdir(parents=True, exist_ok=True)
        # writable by the user alone, as every directory of the cache must be
        # to be used (.cache_files: its files are pickles, which run code)
        staging = root.parent / f".{root.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}"
        staging.mkdir(mode=DIRECTORY_MODE)
        with tarfile.open(archive, "r:xz") as tar:
            members = _members(tar)
            # (the members are checked above; Python's own check where it has one)
            safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
            tar.extractall(staging, members=members, **safe)
        restrict_tree(staging)
        magic = host_magic_tuple()
        for index in staging.rglob("*.nbi"):
            relabel_index(index, magic, cpu)
        os.rename(staging, root)
        staging = None
        return True
    except (OSError, EOFError, ValueError, TypeError, LookupError, AttributeError, ImportError,
            tarfile.TarError, lzma.LZMAError, pickle.PickleError):
        # a damaged archive or a directory another process just made: the
        # kernels compile (or load) as they would without the archive
        return False
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
