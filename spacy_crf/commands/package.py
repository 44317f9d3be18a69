"""Package a trained pipeline for machines where spacy-crf is on no package registry.

``spacy package`` makes a pipeline's wheel require every plugin that provides
one of its factories, so a pipeline with a ``crf_tagger`` requires
``spacy-crf>=X.Y.0,<X.(Y+1).0`` (spacy/cli/package.py,
``get_third_party_dependencies``), and ``pip install`` of that wheel alone fails
wherever spacy-crf cannot be found. This command builds the two wheels that
install together::

    python -m spacy crf-package MODEL_DIR OUT_DIR [--name NAME] [--version V]
    python -m spacy_crf.package MODEL_DIR OUT_DIR ...        (the same)

and writes ``OUT_DIR/README-install.txt``, the pip command that installs them
(spacy-crf from its wheel on the same command line, the other dependencies from
the registry) and how to install with no registry at all. It needs the
``build`` package (``pip install build``, or the ``package`` extra), which
``spacy package --build wheel`` uses.
"""

import importlib.metadata
import json
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional
from urllib.parse import unquote, urlparse

from ._util import Arg, Opt, command, msg, our_errors, run
from ..errors import Errors

#: the file of install instructions written in OUT_DIR
INSTALL_FILE = "README-install.txt"
#: our distribution's name, as pip and spaCy's requirements spell it
DIST_NAME = "spacy-crf"
# a pyproject.toml is ours if its [project] name is spacy-crf
_OUR_PYPROJECT = re.compile(r'^name\s*=\s*["\']spacy[-_]crf["\']\s*$', re.MULTILINE)


@dataclass
class Plan:
    """What a run will build, known (and checked) before anything is built.

    Attributes
    ----------
    model_dir : Path
        The trained pipeline directory (nlp.to_disk output).
    out_dir : Path
        The output directory, absolute; created if missing.
    source : Path
        The spacy-crf source tree the spacy-crf wheel is built from.
    package : str
        The pipeline's package name, what ``spacy.load`` takes (e.g. ``en_demo``).
    version : str
        The pipeline package's version.
    name : str or None
        ``--name`` as given, passed on to ``spacy package``.
    """

    model_dir: Path
    out_dir: Path
    source: Path
    package: str
    version: str
    name: Optional[str] = None

    @property
    def package_dir(self) -> Path:
        """The directory ``spacy package`` writes: ``OUT_DIR/<package>-<version>``."""
        return self.out_dir / f"{self.package}-{self.version}"


# ------------------------------------------------------------------ checks, before any work


def check_model_dir(model_dir: Path) -> Dict:
    """The meta.json of a trained pipeline directory, or E171 naming what is missing.

    Parameters
    ----------
    model_dir : Path
        The directory given on the command line.

    Returns
    -------
    dict
        Its meta.json.
    """
    if not model_dir.exists():
        raise ValueError(Errors.E171.format(path=model_dir, why="does not exist"))
    if not model_dir.is_dir():
        raise ValueError(Errors.E171.format(path=model_dir, why="is not a directory"))
    for name in ("meta.json", "config.cfg"):
        if not (model_dir / name).is_file():
            raise ValueError(Errors.E171.format(path=model_dir, why=f"has no {name}"))
    try:
        meta = json.loads((model_dir / "meta.json").read_text(encoding="utf8"))
    except ValueError as err:
        raise ValueError(Errors.E171.format(
            path=model_dir, why=f"has a meta.json that is not JSON ({err})")) from None
    if not isinstance(meta, dict):
        raise ValueError(Errors.E171.format(path=model_dir,
                                            why="has a meta.json that is not a JSON object"))
    return meta


def has_build() -> bool:
    """Whether the ``build`` package is installed.

    Checked by its distribution's version, as spaCy does: an editable checkout
    often has a ``build/`` directory, which an import would find instead.
    """
    try:
        importlib.metadata.version("build")
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def check_build() -> None:
    """E172 unless ``build`` is installed (``spacy package --build wheel`` needs it)."""
    if not has_build():
        raise ValueError(Errors.E172)


def check_out_dir(out_dir: Path) -> Path:
    """Create the output directory if missing and prove it writable (E173 if not).

    Parameters
    ----------
    out_dir : Path
        The directory given on the command line.

    Returns
    -------
    Path
        It, absolute.
    """
    out_dir = out_dir.resolve()
    if out_dir.exists() and not out_dir.is_dir():
        raise ValueError(Errors.E173.format(path=out_dir, why="it is a file, not a directory"))
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        # a real write: permission bits say nothing for root, nor of read-only mounts
        with tempfile.NamedTemporaryFile(dir=out_dir):
            pass
    except OSError as err:
        raise ValueError(Errors.E173.format(path=out_dir, why=err.strerror or err)) from None
    return out_dir


def is_source_tree(path: Path) -> bool:
    """Whether ``path`` is a spacy-crf checkout: our pyproject.toml and package beside it."""
    pyproject = path / "pyproject.toml"
    return (pyproject.is_file() and (path / "spacy_crf" / "__init__.py").is_file()
            and bool(_OUR_PYPROJECT.search(pyproject.read_text(encoding="utf8"))))


def find_source_tree(source: Optional[Path] = None) -> Path:
    """The spacy-crf source tree to build the spacy-crf wheel from.

    ``source`` if given; else the directory an editable (or local directory)
    install was made from, as pip records it in ``direct_url.json``; else the
    tree this module is imported from. E174 if none is a checkout.

    Parameters
    ----------
    source : Path, optional
        ``--source DIR``.

    Returns
    -------
    Path
        The checkout, absolute.
    """
    if source is not None:
        if is_source_tree(source):
            return source.resolve()
        raise ValueError(Errors.E174.format(
            why=f"--source {source} is not a spacy-crf checkout (no pyproject.toml of "
                f"spacy-crf with spacy_crf/ beside it)"))
    candidates: List[Path] = []
    where = "site-packages"
    try:
        dist = importlib.metadata.distribution(DIST_NAME)
    except importlib.metadata.PackageNotFoundError:
        dist = None
    direct_url = dist.read_text("direct_url.json") if dist is not None else None
    if direct_url:
        info = json.loads(direct_url)
        url = info.get("url", "")
        if url.startswith("file://") and "dir_info" in info:
            candidates.append(Path(unquote(urlparse(url).path)))
        else:
            where = url or where
    # this module is spacy_crf/commands/package.py: the checkout is the parent of spacy_crf/
    candidates.append(Path(__file__).resolve().parents[2])
    for path in candidates:
        if is_source_tree(path):
            return path.resolve()
    raise ValueError(Errors.E174.format(
        why=f"spacy-crf is installed from {where}, with no source tree beside it"))


def package_name(meta: Dict, name: Optional[str] = None) -> str:
    """The pipeline's package name as ``spacy package`` makes it: ``LANG_NAME``.

    Parameters
    ----------
    meta : dict
        The pipeline's meta.json.
    name : str, optional
        ``--name``, which replaces meta's name.

    Returns
    -------
    str
        E.g. ``en_demo`` (a name that starts with ``LANG_`` is kept as it is).
    """
    lang = meta.get("lang", "en")
    base = name if name is not None else meta.get("name", "pipeline")
    full = base if base.startswith(f"{lang}_") else f"{lang}_{base}"
    # spacy.load imports the package, so the name must be a module name
    if not full.isidentifier():
        suggest = re.sub(r"\W", "_", base) or "pipeline"
        raise ValueError(Errors.E176.format(name=full, suggest=suggest))
    return full


def plan(model_dir: Path, out_dir: Path, name: Optional[str] = None,
         version: Optional[str] = None, source: Optional[Path] = None,
         force: bool = False) -> Plan:
    """Every check, before anything is built: a failure costs no build time.

    Parameters
    ----------
    model_dir, out_dir : Path
        The pipeline directory and the output directory.
    name, version : str, optional
        Override the pipeline's meta.json name and version.
    source : Path, optional
        The spacy-crf checkout (default: the one spacy-crf is installed from).
    force : bool
        Replace an existing package directory of the same name and version.

    Returns
    -------
    Plan
    """
    meta = check_model_dir(model_dir)
    package = package_name(meta, name)
    check_build()
    out_dir = check_out_dir(out_dir)
    tree = find_source_tree(source)
    result = Plan(model_dir=model_dir.resolve(), out_dir=out_dir, source=tree, package=package,
                  version=checked_version(version if version is not None
                                          else meta.get("version", "0.0.0")),
                  name=name)
    if result.package_dir.exists() and not force:
        raise ValueError(Errors.E175.format(path=result.package_dir))
    return result


def checked_version(version: Any) -> str:
    """``version`` as given, E261 where pip could not install it (PEP 440)."""
    from packaging.version import InvalidVersion, Version

    try:
        Version(str(version))
    except InvalidVersion as err:
        raise ValueError(Errors.E261.format(version=str(version), why=err)) from err
    return str(version)


# ------------------------------------------------------------------------------- the work


def _run(step: str, command: List[str], cwd: Optional[Path] = None) -> None:
    """Run a build step, its output to ours; E177 if it fails."""
    msg.info(step)
    # the command unwrapped (wasabi wraps at 80 columns), to copy and paste
    print(f"$ {shlex.join(command)}", flush=True)
    done = subprocess.run(command, cwd=None if cwd is None else str(cwd))
    if done.returncode != 0:
        raise RuntimeError(Errors.E177.format(step=step, why=f"exit code {done.returncode}"))


def build_crf_wheel(source: Path, out_dir: Path) -> Path:
    """Build spacy-crf's wheel from ``source`` into ``out_dir``.

    ``python -m build`` makes an sdist and the wheel from it, not from the tree:
    stale files in the tree's build/ (e.g. of a deleted module) cannot get in,
    and the tree is not written to, beyond its (ignored) egg-info.

    Returns
    -------
    Path
        The wheel, ``OUT_DIR/spacy_crf-VERSION-py3-none-any.whl``.
    """
    with tempfile.TemporaryDirectory(prefix="spacy-crf-wheel-") as tmp:
        _run("building the spacy-crf wheel (python -m build)",
             [sys.executable, "-m", "build", "--outdir", tmp, str(source)])
        wheels = sorted(Path(tmp).glob("spacy_crf-*.whl"))
        if not wheels:
            raise RuntimeError(Errors.E177.format(
                step="building the spacy-crf wheel", why="python -m build wrote no wheel"))
        target = out_dir / wheels[0].name
        shutil.copyfile(wheels[0], target)
    return target


def build_model_wheel(plan: Plan, force: bool = False) -> Path:
    """Build the pipeline's wheel with spaCy's own ``spacy package --build wheel``.

    spaCy adds to the wheel's requirements the spacy-crf version range of the
    plugin installed here, and spaCy's. Run as a subprocess: spaCy's package()
    exits the process on its errors.

    Returns
    -------
    Path
        The wheel, in ``OUT_DIR/<package>-<version>/dist``.
    """
    if force and plan.package_dir.exists():
        # spacy package --force keeps the old dist/; start clean so one wheel is there
        shutil.rmtree(plan.package_dir)
    command = [sys.executable, "-m", "spacy", "package", str(plan.model_dir), str(plan.out_dir),
               "--build", "wheel", "--version", plan.version]
    if plan.name is not None:
        command += ["--name", plan.name]
    _run("spacy package --build wheel", command)
    from packaging.utils import canonicalize_name, parse_wheel_filename
    from packaging.version import Version

    # the build names the wheel in normal form: runs of underscores squashed, the
    # name lowercased (en_Demo: en_demo-...), the version normalized (1.0.0-rc1: 1.0.0rc1)
    dist = plan.package_dir / "dist"
    wanted = (canonicalize_name(plan.package), Version(plan.version))
    wheels = sorted(path for path in dist.glob("*.whl")
                    if parse_wheel_filename(path.name)[:2] == wanted)
    if not wheels:
        # spaCy falls back to setup.py when build fails and reports success either way
        raise RuntimeError(Errors.E177.format(step="spacy package --build wheel",
                                              why=f"no wheel of {plan.package} {plan.version} "
                                                  f"in {dist}"))
    return wheels[0]


def check_requirement(plan: Plan, crf_wheel: Path) -> None:
    """E178 if the pipeline package requires a spacy-crf the built wheel is not.

    spaCy writes the range of the spacy-crf installed here, and keeps a range
    already in the pipeline's meta.json (e.g. of the version that trained it).
    """
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    version = crf_wheel.name.split("-")[1]
    meta = json.loads((plan.package_dir / "meta.json").read_text(encoding="utf8"))
    for text in meta.get("requirements", []):
        req = Requirement(text)
        if (canonicalize_name(req.name) == DIST_NAME
                and not req.specifier.contains(version, prereleases=True)):
            raise RuntimeError(Errors.E178.format(requirement=text, wheel=crf_wheel.name))


def install_instructions(out_dir: Path, crf_wheel: Path, model_wheel: Path, package: str,
                         version: str) -> str:
    """The text of README-install.txt: how to install the two wheels, online and offline.

    Paths are relative to ``out_dir``, after a ``cd`` to it, so the text still
    holds in a copy of the directory on another machine.

    Parameters
    ----------
    out_dir : Path
        The output directory.
    crf_wheel, model_wheel : Path
        The two wheels, inside ``out_dir``.
    package, version : str
        The pipeline's package name (what ``spacy.load`` takes) and version.

    Returns
    -------
    str
    """
    wheels = " ".join(shlex.quote(p.relative_to(out_dir).as_posix())
                      for p in (crf_wheel, model_wheel))
    crf_version = crf_wheel.name.split("-")[1]
    return f"""\
Pipeline {package} {version}, packaged with spacy-crf {crf_version}.

spacy-crf is on no package registry, and the pipeline's wheel requires it. Install
both wheels with one pip command, in this directory (the output directory of
python -m spacy crf-package, or a copy of it):

    cd {shlex.quote(str(out_dir))}
    pip install {wheels}

pip takes spacy-crf from its wheel on the command line and the other dependencies
(spaCy, numba, ...) from the package registry. Then:

    python -c "import spacy; nlp = spacy.load('{package}'); print(nlp('A test.'))"

With no registry access on the target machine: on a machine with the same Python
version and platform (numba's wheels are per platform) that has access, collect
every dependency in a directory:

    pip download -d wheelhouse {wheels}

copy wheelhouse/ to the target machine and install from it alone:

    pip install --no-index --find-links wheelhouse {package}
"""


def package_pipeline(model_dir: Path, out_dir: Path, name: Optional[str] = None,
                     version: Optional[str] = None, source: Optional[Path] = None,
                     force: bool = False) -> Path:
    """Build the spacy-crf wheel and the pipeline's wheel, and write the instructions.

    Parameters are those of :func:`plan`.

    Returns
    -------
    Path
        ``OUT_DIR/README-install.txt``.
    """
    checked = plan(model_dir, out_dir, name=name, version=version, source=source, force=force)
    crf_wheel = build_crf_wheel(checked.source, checked.out_dir)
    model_wheel = build_model_wheel(checked, force=force)
    check_requirement(checked, crf_wheel)
    text = install_instructions(checked.out_dir, crf_wheel, model_wheel, checked.package,
                                checked.version)
    path = checked.out_dir / INSTALL_FILE
    path.write_text(text, encoding="utf8")
    print(f"\n{text}")  # as written: wasabi's msg.text would reflow its indented commands
    msg.good(f"Install instructions written to {path}")
    return path


@command("crf-package")
def package_cli(
    # fmt: off
    input_dir: Path = Arg(..., help="Directory with the trained pipeline"),
    output_dir: Path = Arg(..., help="Output directory for the wheels and README-install.txt (created if missing)"),
    name: Optional[str] = Opt(None, "--name", "-n", help="Package name to override meta (spacy.load then takes LANG_NAME)"),
    version: Optional[str] = Opt(None, "--version", "-v", help="Package version to override meta"),
    source: Optional[Path] = Opt(None, "--source", help="The spacy-crf checkout to build its wheel from (default: the one installed editable)"),
    force: bool = Opt(False, "--force", "-f", help="Force overwriting existing data in output directory"),
    # fmt: on
):
    """
    Package a pipeline with spacy-crf's own wheel. For machines where
    spacy-crf is on no package registry: the pipeline's wheel (as spacy
    package builds it) and spacy-crf's own, which install together, and
    OUTPUT_DIR/README-install.txt with the pip commands. Needs the build
    package (pip install build).
    """
    # checks that fail before any work (E-codes naming the fix) exit 2, a failed build 1
    with our_errors({ValueError: 2, RuntimeError: 1}):
        package_pipeline(input_dir, output_dir, name=name, version=version, source=source,
                         force=force)


def main(argv: Optional[List[str]] = None) -> int:
    """``python -m spacy_crf.package``: :func:`package_cli`; its exit code."""
    return run(package_cli, argv, "python -m spacy_crf.package")

