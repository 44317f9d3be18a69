"""Compile the package's kernels for numba's portable CPU and store them in the
archive the package ships (``spacy_crf/_kernels/prebuilt/``, issue #32).

Run it after any change to a file with jitted code (the test
``tests/kernels/test_prebuilt.py`` says when the archive no longer matches the
sources) and commit the archive it writes:

    python tools/build_prebuilt_kernels.py            # the test suite's fast subset, ~6.5 min
    python tools/build_prebuilt_kernels.py --all      # the whole suite, ~12 min

The workload is the test suite: it calls every kernel with the signatures the
package's paths use, so a fresh install compiles nothing on any of them (nor
does CI). It runs with an empty cache of its own, numba compiling for a CPU
level (``--cpu``, ``NUMBA_CPU_NAME``, with no extra features: ``x86-64-v3`` by
default, the AVX2 / FMA level; ``generic`` for any x86-64, whose code ran the
batch trainer's objective 18% slower here) and the shipped archives switched off, then packs that cache:
numba's index and data files under their paths in the code directory, in a
fixed order with no owner or time, so the same code gives the same archive.
The archive replaces the older ones of its platform and CPU level (another
digest, numba or Python).
"""

import argparse
import io
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
# this process only names the archive: it leaves the user's kernel cache alone
os.environ["SPACY_CRF_NUMBA_CACHE"] = "off"

#: the test that checks the archive against the sources (stale while building)
STALENESS_TEST = "tests/kernels/test_prebuilt.py::test_the_shipped_kernels_match_the_sources"


def workload_env(cache: Path, cpu: str) -> dict:
    env = {key: value for key, value in os.environ.items() if key != "NUMBA_CACHE_DIR"}
    env.update(SPACY_CRF_NUMBA_CACHE=str(cache), NUMBA_CPU_NAME=cpu, NUMBA_CPU_FEATURES="",
               SPACY_CRF_PREBUILT="off", PYTHONPATH=str(ROOT))
    return env


def code_directory(cache: Path) -> Path:
    """The one code directory the workload filled."""
    directories = [path for path in cache.iterdir() if path.is_dir()]
    if len(directories) != 1:
        raise SystemExit(f"expected one code directory in {cache}, found {directories}")
    return directories[0]


def check_portable(directory: Path, cpu: str) -> int:
    """Every entry was compiled for ``cpu`` and no more; returns how many there are."""
    from spacy_crf._kernels.prebuilt import read_index

    count = 0
    for index in sorted(directory.rglob("*.nbi")):
        read = read_index(index)
        if read is None:
            raise SystemExit(f"{index.name}: written by another numba than this one")
        for key in read[1]:
            if key[1][1:] != (cpu, ""):
                raise SystemExit(f"{index.name}: an entry compiled for {key[1][1:]!r}")
            count += 1
    return count


def pack(directory: Path, archive: Path) -> None:
    """Write the code directory's index and data files into ``archive``,
    reproducibly (sorted, no owner, time 0)."""
    archive.parent.mkdir(parents=True, exist_ok=True)
    partial = archive.with_suffix(".partial")
    with tarfile.open(partial, "w:xz") as tar:
        for path in sorted(directory.rglob("*")):
            if not path.is_file() or path.suffix not in (".nbi", ".nbc"):
                continue
            info = tarfile.TarInfo(path.relative_to(directory).as_posix())
            data = path.read_bytes()
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            tar.addfile(info, io.BytesIO(data))
    partial.replace(archive)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--all", action="store_true", help="the whole suite, slow tests too")
    parser.add_argument("--cpu", default="x86-64-v3", help="the CPU level (numba's CPU name)")
    parser.add_argument("pytest_args", nargs="*", help="more arguments for pytest")
    args = parser.parse_args()

    from spacy_crf._kernels import prebuilt

    if args.cpu not in prebuilt.PORTABLE_CPUS:
        raise SystemExit(f"--cpu {args.cpu}: not one of {list(prebuilt.PORTABLE_CPUS)} "
                         "(spacy_crf/_kernels/prebuilt.py lists what each level needs)")

    with tempfile.TemporaryDirectory(prefix="spacy-crf-prebuilt-") as tmp:
        cache = Path(tmp) / "cache"
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                   "--deselect", STALENESS_TEST]
        if not args.all:
            command += ["-m", "not slow"]
        command += args.pytest_args
        start = time.perf_counter()
        run = subprocess.run(command, cwd=ROOT, env=workload_env(cache, args.cpu))
        print(f"workload: {time.perf_counter() - start:.0f} s, pytest exit {run.returncode}")
        if run.returncode != 0:
            print("some tests failed: the kernels they compiled are packed all the same",
                  file=sys.stderr)
        directory = code_directory(cache)
        entries = check_portable(directory, args.cpu)
        archive = prebuilt.archive_path(directory.name, args.cpu)
        for old in prebuilt.DIRECTORY.glob(f"{prebuilt.platform_tag()}-{args.cpu}-*.tar.xz"):
            if old != archive:
                old.unlink()
        pack(directory, archive)
    print(f"{archive.relative_to(ROOT)}: {entries} compiled signatures, "
          f"{archive.stat().st_size / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
