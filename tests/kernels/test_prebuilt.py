"""The kernels the package ships compiled for a portable CPU (``_kernels/prebuilt.py``).

A child process (``test_shared_cache.CHILD``) imports a copy of the package,
runs one kernel and says how many kernels of ours it compiled."""

import ast
import importlib.util
import io
import os
import pickle
import subprocess
import sys
import tarfile
from pathlib import Path

import numba
import pytest
from kernels.test_shared_cache import PACKAGE, copy_package, run

from spacy_crf._kernels import prebuilt, shared_cache

REPO = PACKAGE.parent
BUILDER = REPO / "tools" / "build_prebuilt_kernels.py"
TRIPLE = "x86_64-unknown-linux-gnu"


@pytest.fixture(autouse=True)
def plain_environment(monkeypatch):
    """No CPU or archive setting of the environment (the builder runs this
    suite with them set) reaches these tests or their children."""
    for name in ("NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES", prebuilt.ENV):
        monkeypatch.delenv(name, raising=False)


def child_magic_tuple():
    """This machine's CPU as a child process (this environment, less the
    settings above) keys numba's cache by."""
    code = ("from numba.core.registry import cpu_target; "
            "print(repr(cpu_target.target_context.codegen().magic_tuple()))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    return ast.literal_eval(out.strip().splitlines()[-1])


def builder():
    spec = importlib.util.spec_from_file_location("build_prebuilt_kernels", BUILDER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_shipped_kernels_match_the_sources():
    """Fails when a file with jitted code changed after the archive was built."""
    if prebuilt.platform_tag() != "linux-x86_64":
        pytest.skip("kernels are shipped compiled for linux-x86_64 only")
    digest = shared_cache.kernel_digest()[:20]
    shipped = [path.name for path in prebuilt.DIRECTORY.glob("linux-x86_64-*.tar.xz")]
    assert any(name.endswith(f"-{digest}.tar.xz") for name in shipped), (
        f"no archive of the kernels for these sources (digest {digest}; shipped: {shipped}): "
        "run `python tools/build_prebuilt_kernels.py` and commit spacy_crf/_kernels/prebuilt/")


@pytest.mark.parametrize("cpu", list(prebuilt.PORTABLE_CPUS))
def test_a_new_cache_starts_from_the_shipped_kernels(tmp_path, cpu):
    """Compile one kernel for a CPU level as the builder does, pack it, and ship
    it in a copy of the package: a fresh cache then compiles nothing, and
    reads the kernel under this machine's CPU."""
    if not prebuilt.host_supports(cpu):
        pytest.skip(f"this CPU cannot run {cpu} code")
    built = tmp_path / "built"
    copy = copy_package(tmp_path / "a")
    tool = builder()
    env = {key: value for key, value in tool.workload_env(built, cpu).items()
           if key != "PYTHONPATH"}  # the copy's
    assert run(copy, tmp_path, **env)["compiled"] >= 1
    (directory,) = built.iterdir()
    assert directory.name == shared_cache.code_directory_name()
    assert tool.check_portable(directory, cpu) >= 1
    shipped = copy / "spacy_crf" / "_kernels" / "prebuilt"
    for old in shipped.glob("*.tar.xz"):
        old.unlink()
    tool.pack(directory, shipped / prebuilt.archive_path(directory.name, cpu).name)

    fresh = tmp_path / "fresh"
    assert run(copy, tmp_path, SPACY_CRF_NUMBA_CACHE=str(fresh),
               SPACY_CRF_PREBUILT="")["compiled"] == 0
    magic = child_magic_tuple()
    keys = [key for index in (fresh / directory.name).rglob("*.nbi")
            for key in read_index(index)[2]]
    assert keys and all(key[1] == magic for key in keys)
    # switched off, the archive is left alone: this machine compiles its own
    assert run(copy, tmp_path, SPACY_CRF_NUMBA_CACHE=str(tmp_path / "off"),
               SPACY_CRF_PREBUILT="off")["compiled"] >= 1


def write_index(path: Path, overloads, version=numba.__version__, stamp="stamp") -> None:
    with open(path, "wb") as f:
        pickle.dump(version, f, protocol=-1)
        f.write(pickle.dumps((stamp, overloads), protocol=-1))


def read_index(path: Path):
    with open(path, "rb") as f:
        version = pickle.load(f)
        stamp, overloads = pickle.loads(f.read())
    return version, stamp, overloads


def test_only_portable_entries_of_this_platform_are_relabelled(tmp_path):
    host = (TRIPLE, "znver4", "+avx2")
    portable = ((numba.int64,), (TRIPLE, "generic", ""), ("code", "cells"))
    native = ((numba.float32,), (TRIPLE, "skylake", "+avx"), ("code", "cells"))
    foreign = ((numba.int64,), ("aarch64-unknown-linux-gnu", "generic", ""), ("code", "cells"))
    index = tmp_path / "f-1.py311.nbi"
    write_index(index, {portable: "f-1.py311.1.nbc", native: "f-1.py311.2.nbc",
                        foreign: "f-1.py311.3.nbc"})
    assert prebuilt.relabel_index(index, host, "generic") == 1
    version, stamp, overloads = read_index(index)
    assert (version, stamp) == (numba.__version__, "stamp")
    assert overloads == {(portable[0], host, portable[2]): "f-1.py311.1.nbc",
                         native: "f-1.py311.2.nbc", foreign: "f-1.py311.3.nbc"}
    # another numba's index is left as it is (numba ignores it)
    other = tmp_path / "g-1.py311.nbi"
    write_index(other, {portable: "g-1.py311.1.nbc"}, version="0.0.1")
    before = other.read_bytes()
    assert prebuilt.relabel_index(other, host, "generic") == 0
    assert other.read_bytes() == before


def archive(path: Path, members) -> Path:
    """A tar.xz of (TarInfo, bytes) pairs."""
    with tarfile.open(path, "w:xz") as tar:
        for info, data in members:
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if info.isfile() else None)
    return path


def test_a_good_archive_is_unpacked_whole(tmp_path):
    if prebuilt.host_magic_tuple()[0] != TRIPLE:
        pytest.skip(f"an archive made for {TRIPLE}")
    index = tmp_path / "f-1.py311.nbi"
    write_index(index, {((numba.int64,), (TRIPLE, "generic", ""), ("c", "v")): "f-1.py311.1.nbc"})
    good = archive(tmp_path / "good.tar.xz", [
        (tarfile.TarInfo("_kernels/f-1.py311.nbi"), index.read_bytes()),
        (tarfile.TarInfo("_kernels/f-1.py311.1.nbc"), b"machine code")])
    root = tmp_path / "cache" / "numba-code"
    # a umask that lets the group write: the cache's files are pickles, which
    # run code as they load, so they are writable by the user alone whatever
    # the umask (or the locator would not use them, issue #48)
    umask = os.umask(0o002)
    try:
        assert prebuilt.seed(root, good, "generic")
    finally:
        os.umask(umask)
    assert {p.stat().st_mode & 0o777 for p in (root, *root.rglob("*"))} == {0o755, 0o644}
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*.nb?")) == [
        "_kernels/f-1.py311.1.nbc", "_kernels/f-1.py311.nbi"]
    (key,) = read_index(root / "_kernels" / "f-1.py311.nbi")[2]
    assert key[1] == prebuilt.host_magic_tuple()
    # a directory that exists already (another process seeded it) is not touched
    assert not prebuilt.seed(root, good, "generic")
    assert [p.name for p in (tmp_path / "cache").iterdir()] == ["numba-code"]


def hostile(kind: str, tmp_path: Path) -> Path:
    path = tmp_path / f"{kind}.tar.xz"
    if kind == "garbage":
        path.write_bytes(os.urandom(4096))
        return path
    if kind == "truncated":
        data = archive(tmp_path / "whole.tar.xz", [
            (tarfile.TarInfo("_kernels/f.nbc"), os.urandom(50_000))]).read_bytes()
        path.write_bytes(data[: len(data) // 2])
        return path
    if kind == "escape":
        return archive(path, [(tarfile.TarInfo("../escaped.nbc"), b"x")])
    if kind == "absolute":
        return archive(path, [(tarfile.TarInfo(str(tmp_path / "absolute.nbc")), b"x")])
    if kind == "symlink":
        link = tarfile.TarInfo("_kernels/f.nbc")
        link.type, link.linkname = tarfile.SYMTYPE, str(tmp_path / "target")
        return archive(path, [(link, b"")])
    if kind == "other file":
        return archive(path, [(tarfile.TarInfo("_kernels/evil.py"), b"print('hi')")])
    if kind == "bad index":
        return archive(path, [(tarfile.TarInfo("_kernels/f.nbi"), b"not a pickle")])
    raise ValueError(kind)


@pytest.mark.parametrize("kind", ["garbage", "truncated", "escape", "absolute", "symlink",
                                  "other file", "bad index"])
def test_a_damaged_or_hostile_archive_is_skipped(tmp_path, kind):
    """Nothing is written (the kernels then compile as without an archive), and
    nothing lands outside the cache."""
    bad = hostile(kind, tmp_path)
    cache = tmp_path / "cache"
    before = sorted(p.name for p in tmp_path.iterdir())
    assert not prebuilt.seed(cache / "numba-code", bad, "generic")
    assert list(cache.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir() if p != cache) == before


def test_no_archive_or_switched_off_leaves_the_directory_to_numba(tmp_path, monkeypatch):
    root = tmp_path / "cache" / "numba-code"
    assert not prebuilt.seed(root, tmp_path / "missing.tar.xz", "generic")
    good = archive(tmp_path / "good.tar.xz", [(tarfile.TarInfo("_kernels/f.nbc"), b"x")])
    monkeypatch.setenv(prebuilt.ENV, "off")
    assert not prebuilt.seed(root, good, "generic")
    assert not root.exists()


def test_a_cpu_level_is_used_only_where_the_cpu_has_its_features(monkeypatch):
    from llvmlite import binding

    needed = prebuilt.PORTABLE_CPUS["x86-64-v3"]
    full = {name: True for name in needed}
    monkeypatch.setattr(binding, "get_host_cpu_features", lambda: full)
    assert prebuilt.host_supports("x86-64-v3") and prebuilt.host_supports("generic")
    # an older CPU (no AVX2): its features are named and off
    monkeypatch.setattr(binding, "get_host_cpu_features", lambda: {**full, "avx2": False})
    assert not prebuilt.host_supports("x86-64-v3") and prebuilt.host_supports("generic")
    # a feature this LLVM does not name is not one its code would use
    monkeypatch.setattr(binding, "get_host_cpu_features",
                        lambda: {k: v for k, v in full.items() if k != "sahf"})
    assert prebuilt.host_supports("x86-64-v3")
    assert not prebuilt.host_supports("a-cpu-of-another-age")
    # an x86 level is not for another architecture, whatever its LLVM names
    monkeypatch.setattr(prebuilt.platform, "machine", lambda: "aarch64")
    assert not prebuilt.host_supports("x86-64-v3") and prebuilt.host_supports("generic")
