"""The kernels' cache shared by every copy of the same code (``_kernels/shared_cache.py``).

Each child process imports spacy_crf from a copy of the package (another path,
fresh file times, as a new clone, venv or install has), runs one kernel and
says how many kernels of ours it compiled (numba's compile events)."""

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import spacy_crf
from spacy_crf._kernels import shared_cache

PACKAGE = Path(spacy_crf.__file__).resolve().parent

CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    from numba.core import event
    with event.install_recorder("numba:compile") as compiled:
        import spacy_crf
        from spacy_crf._kernels.emissions import feature_rows
        rows = np.empty((2, 2), dtype=np.int64)
        feature_rows(np.arange(4, dtype=np.uint64).reshape(2, 2), 3, True, rows)
    ours = [e for _, e in compiled.buffer if e.is_start
            and e.data["dispatcher"].py_func.__module__.startswith("spacy_crf.")]
    print(json.dumps({"package": spacy_crf.__file__, "rows": rows.tolist(),
                      "compiled": len(ours)}))
""")


def copy_package(where: Path) -> Path:
    """A copy of the package's sources (no caches), with new file times."""
    target = where / "spacy_crf"
    shutil.copytree(PACKAGE, target, ignore=shutil.ignore_patterns("__pycache__"))
    for path in target.rglob("*.py"):
        os.utime(path)
    return where


def run(copy: Path, tmp_path: Path, **env):
    environ = {key: value for key, value in os.environ.items() if key != "NUMBA_CACHE_DIR"}
    # these tests are about the cache's place: the kernels shipped compiled
    # (_kernels/prebuilt.py, tested apart) stay out of it
    environ.update(PYTHONPATH=str(copy), SPACY_CRF_PREBUILT="off")
    environ.update(env)
    proc = subprocess.run([sys.executable, "-c", CHILD], env=environ, cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["package"].startswith(str(copy)) and result["rows"] == [[0, 1], [2, 0]]
    result["stderr"] = proc.stderr
    return result


def test_a_second_copy_of_the_same_code_compiles_nothing(tmp_path):
    cache = tmp_path / "cache"
    first, second = copy_package(tmp_path / "a"), copy_package(tmp_path / "b")
    assert run(first, tmp_path, SPACY_CRF_NUMBA_CACHE=str(cache))["compiled"] >= 1
    assert run(second, tmp_path, SPACY_CRF_NUMBA_CACHE=str(cache))["compiled"] == 0
    # one directory, named by numba's and Python's versions and the code's digest
    (root,) = cache.iterdir()
    assert root.name.startswith("numba") and any(root.rglob("*.nbi"))


def test_a_changed_kernel_anywhere_gets_a_directory_of_its_own(tmp_path):
    """A kernel calls kernels of other files: a change to any of them must not
    let a copy read machine code compiled from the old source."""
    cache = tmp_path / "cache"
    first, changed = copy_package(tmp_path / "a"), copy_package(tmp_path / "b")
    with open(changed / "spacy_crf" / "_kernels" / "primitives.py", "a") as f:
        f.write("\n# a change in a file the kernel run here does not live in\n")
    run(first, tmp_path, SPACY_CRF_NUMBA_CACHE=str(cache))
    assert run(changed, tmp_path, SPACY_CRF_NUMBA_CACHE=str(cache))["compiled"] >= 1
    assert len(list(cache.iterdir())) == 2


@pytest.mark.parametrize("how", ["numba_cache_dir", "off", "unwritable"])
def test_numbas_own_cache_where_asked_or_where_ours_cannot_be_written(tmp_path, how):
    cache = tmp_path / "cache"
    copy = copy_package(tmp_path / "a")
    env = {"SPACY_CRF_NUMBA_CACHE": str(cache)}
    if how == "numba_cache_dir":
        env["NUMBA_CACHE_DIR"] = str(tmp_path / "numba")
    elif how == "off":
        env["SPACY_CRF_NUMBA_CACHE"] = "off"
    else:
        (tmp_path / "a_file").write_text("not a directory")
        env["SPACY_CRF_NUMBA_CACHE"] = str(tmp_path / "a_file" / "cache")
    result = run(copy, tmp_path, **env)
    assert result["compiled"] >= 1
    assert not cache.exists()
    if how == "numba_cache_dir":
        assert any((tmp_path / "numba").rglob("*.nbi"))
    else:  # numba's default: beside the sources
        assert any((copy / "spacy_crf").rglob("__pycache__/*.nbi"))


def test_old_code_directories_are_pruned_and_nothing_else(tmp_path):
    base = tmp_path / "cache"
    names = [f"numba0.68.1-py311-{i:020x}" for i in range(12)]
    for i, name in enumerate(names):
        old = base / name
        old.mkdir(parents=True)
        os.utime(old, (1000 + i, 1000 + i))
    # SPACY_CRF_NUMBA_CACHE may name a directory that holds other things
    (base / "my_project").mkdir()
    (base / "numba-notes").mkdir()
    os.utime(base / "my_project", (1, 1))
    root = base / f"numba0.68.1-py311-{'f' * 20}"
    shared_cache.prune(root, keep=4)
    assert sorted(p.name for p in base.iterdir()) == sorted(names[-3:] + ["my_project",
                                                                          "numba-notes"])
    # the name cache_root gives matches what prune removes
    assert shared_cache.CODE_DIRECTORY.fullmatch(root.name)
    real = shared_cache.cache_root()
    assert real is None or shared_cache.CODE_DIRECTORY.fullmatch(real.name)


def test_the_digest_covers_every_file_with_jitted_code():
    jitted = {p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py")
              if b"njit" in p.read_bytes()}
    assert "_kernels/chain.py" in jitted and "features/gazetteer.py" in jitted
    # all but the file that looks for them
    assert set(shared_cache.jitted_sources()) == jitted - {"_kernels/shared_cache.py"}
    assert len(shared_cache.kernel_digest()) == 64


# ------------------------------------------------ a cache that is unsafe or cannot work

#: the user id of ``nobody``, who owns what "another user" planted
NOBODY = 65534


class Planted:
    """Unpickled, makes the directory ``marker``: what a planted pickle could do."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self):
        return os.mkdir, (self.marker,)


def planted_index(marker: Path) -> bytes:
    """A numba index file (its version, then a pickle) whose loading runs code."""
    import pickle

    import numba

    return pickle.dumps(numba.__version__) + pickle.dumps(Planted(marker))


def as_another_user(path: Path) -> None:
    """Give ``path`` to ``nobody`` (skips where this process cannot: not root)."""
    try:
        os.chown(path, NOBODY, NOBODY)
    except (PermissionError, AttributeError):
        pytest.skip("needs to give a file to another user (run as root)")


def said(result, code: str) -> int:
    """How many times the child's stderr carries the warning ``code``."""
    return result["stderr"].count(f"[CRF-{code}]")


def filled_cache(tmp_path: Path):
    """A copy of the package and a cache its first run filled: (copy, cache, code dir)."""
    cache = tmp_path / "cache"
    copy = copy_package(tmp_path / "a")
    assert run(copy, tmp_path, SPACY_CRF_NUMBA_CACHE=str(cache))["compiled"] >= 1
    (root,) = cache.iterdir()
    return copy, cache, root


@pytest.fixture(scope="module")
def filled_once(tmp_path_factory) -> Path:
    """``filled_cache`` made once, for the tests that damage a cache file or
    plant one: each damages its own copy (``copy_of_filled``)."""
    where = tmp_path_factory.mktemp("filled")
    filled_cache(where)
    return where


def copy_of_filled(filled_once: Path, tmp_path: Path):
    """What ``filled_cache(tmp_path)`` gives, copied from ``filled_once`` (file
    modes and times kept): a cache file's stamp is its source's digest, not its
    place, so the copy reads the copied cache as the original read its own."""
    for name in ("a", "cache"):
        shutil.copytree(filled_once / name, tmp_path / name, symlinks=True)
    (root,) = (tmp_path / "cache").iterdir()
    return tmp_path / "a", tmp_path / "cache", root


@pytest.mark.parametrize("how", ["another_users_entry", "others_can_write_the_entry",
                                 "another_users_directory", "others_can_write_the_directory"])
def test_a_planted_cache_file_is_never_loaded(filled_once, tmp_path, how):
    """numba's cache files are pickles: one that another user could have
    written or changed is ignored (issue #48), not run."""
    copy, cache, root = copy_of_filled(filled_once, tmp_path)
    marker = tmp_path / "the_planted_code_ran"
    indexes = sorted(root.rglob("*.nbi"))
    for index in indexes:
        index.write_bytes(planted_index(marker))
        if how == "another_users_entry":
            as_another_user(index)
        elif how == "others_can_write_the_entry":
            index.chmod(0o666)
    if how == "another_users_directory":
        as_another_user(root / "_kernels")
    elif how == "others_can_write_the_directory":
        cache.chmod(0o777)
    result = run(copy, tmp_path, SPACY_CRF_NUMBA_CACHE=str(cache))
    assert not marker.exists()
    assert result["compiled"] >= 1
    if how.endswith("_entry"):
        # ignored, compiled, and written anew: the next run loads its own
        assert said(result, "W022") == 1 and said(result, "W020") == 0
        assert all(index.stat().st_uid == os.getuid() for index in indexes)
        assert run(copy, tmp_path, SPACY_CRF_NUMBA_CACHE=str(cache))["compiled"] == 0
    else:
        # the directory is not used: numba's default place instead
        assert said(result, "W020") == 1
        assert any((copy / "spacy_crf").rglob("__pycache__/*.nbi"))


@pytest.mark.parametrize("damage", ["empty_index", "garbage_index", "garbage_data",
                                    "cut_short_data", "other_data"])
def test_a_damaged_cache_file_is_compiled_again_and_healed(filled_once, tmp_path, damage):
    import pickle

    copy, cache, root = copy_of_filled(filled_once, tmp_path)
    suffix = ".nbi" if damage.endswith("index") else ".nbc"
    for path in root.rglob(f"*{suffix}"):
        data = path.read_bytes()
        path.write_bytes({"empty_index": b"", "garbage_index": b"\x80\x05garbage",
                          "garbage_data": b"not a pickle at all",
                          "cut_short_data": data[:len(data) // 2],
                          # a pickle, but not of a compiled kernel
                          "other_data": pickle.dumps(("not", "a", "kernel"))}[damage])
    result = run(copy, tmp_path, SPACY_CRF_NUMBA_CACHE=str(cache))
    assert result["compiled"] >= 1 and said(result, "W022") == 1
    # written anew: the next run loads it
    healed = run(copy, tmp_path, SPACY_CRF_NUMBA_CACHE=str(cache))
    assert healed["compiled"] == 0 and said(healed, "W022") == 0


def test_with_no_writable_place_the_kernels_run_uncached(tmp_path):
    """A read-only home and a read-only install (a locked-down container):
    every place numba could cache in fails, and the kernels compile in each
    process, with one warning, where importing the package failed."""
    copy = copy_package(tmp_path / "a")
    # (this process may be root, who writes anywhere: a file where a directory
    # should be fails for everyone)
    for package in (copy / "spacy_crf").rglob("__init__.py"):
        (package.parent / "__pycache__").write_text("not a directory")
    blocked = tmp_path / "a_file"
    blocked.write_text("not a directory")
    environ = dict(HOME=str(blocked / "home"), XDG_CACHE_HOME=str(blocked / "cache"),
                   PYTHONDONTWRITEBYTECODE="1")
    result = run(copy, tmp_path, **environ)
    assert result["compiled"] >= 1 and said(result, "W021") == 1
    assert run(copy, tmp_path, **environ)["compiled"] >= 1  # nothing was kept


def test_a_full_disk_under_the_cache_is_no_error(tmp_path, monkeypatch):
    """numba's save of a compiled kernel hits ENOSPC: the kernel runs, once
    warned, uncached."""
    import errno

    import numba
    import numpy as np
    from numba.core import caching

    from spacy_crf._kernels.emissions import feature_rows

    def full(self, filepath):
        raise OSError(errno.ENOSPC, "No space left on device", filepath)

    monkeypatch.setenv("SPACY_CRF_NUMBA_CACHE", str(tmp_path / "cache"))
    # (each warning is said once a process: as if none had been)
    monkeypatch.setattr(shared_cache, "_SAID", set(), raising=False)
    monkeypatch.setattr(caching.IndexDataCacheFile, "_open_for_write", full)
    kernel = numba.njit(cache=True)(feature_rows.py_func)  # a dispatcher of its own
    rows = np.empty((2, 2), dtype=np.int64)
    with pytest.warns(UserWarning, match=r"\[CRF-W023\].*No space left"):
        kernel(np.arange(4, dtype=np.uint64).reshape(2, 2), 3, True, rows)
    assert rows.tolist() == [[0, 1], [2, 0]]
    assert not any((tmp_path / "cache").rglob("*.nb[ic]"))


def test_a_umask_that_lets_the_group_write_still_gives_a_cache_of_ones_own(tmp_path):
    """Where each user has a group of their own, the umask is often 002: what
    the cache makes is writable by the user alone all the same, or the next
    run would refuse it."""
    umask = os.umask(0o002)
    try:
        copy, cache, root = filled_cache(tmp_path)
        again = run(copy, tmp_path, SPACY_CRF_NUMBA_CACHE=str(cache))
    finally:
        os.umask(umask)
    assert again["compiled"] == 0 and "[W02" not in again["stderr"]
    made = [cache, *cache.rglob("*")]
    assert any(path.suffix == ".nbi" for path in made)
    assert not [path for path in made if path.stat().st_mode & 0o022]
