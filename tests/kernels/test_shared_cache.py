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
