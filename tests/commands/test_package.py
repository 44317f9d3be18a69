"""python -m spacy crf-package: the checks before any work, the install text, and
(slow) a packaged pipeline installed in fresh venvs, from the registry and offline."""

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from types import SimpleNamespace

import pytest
import spacy

from conftest import make_nlp, toy_examples, train
from spacy_crf.commands import package as pkg
from spacy_crf.commands.package import (INSTALL_FILE, Plan, check_build, check_model_dir,
                                        check_out_dir, check_requirement, find_source_tree,
                                        install_instructions, package_name, plan)

from conftest import ROOT
CRF_WHEEL = "spacy_crf-0.1.0-py3-none-any.whl"


def fake_model(path: Path, meta=None) -> Path:
    """A directory that passes the checks (they read meta.json, and see config.cfg)."""
    path.mkdir(parents=True)
    (path / "meta.json").write_text(json.dumps(meta or {"lang": "en", "name": "demo",
                                                        "version": "1.0.0"}))
    (path / "config.cfg").write_text("[nlp]\nlang = \"en\"\n")
    return path


# ------------------------------------------------------------------- the checks, each error


def test_model_dir_errors(tmp_path):
    with pytest.raises(ValueError, match=r"^\[CRF-E171\] .*missing does not exist\. Give the "):
        check_model_dir(tmp_path / "missing")
    (tmp_path / "file").write_text("")
    with pytest.raises(ValueError, match=r"^\[CRF-E171\] .*file is not a directory"):
        check_model_dir(tmp_path / "file")
    model = fake_model(tmp_path / "no_meta")
    (model / "meta.json").unlink()
    with pytest.raises(ValueError,
                       match=r"^\[CRF-E171\] .* has no meta\.json\. .*meta\.json and config\.cfg"):
        check_model_dir(model)
    model = fake_model(tmp_path / "no_config")
    (model / "config.cfg").unlink()
    with pytest.raises(ValueError, match=r"^\[CRF-E171\] .* has no config\.cfg"):
        check_model_dir(model)
    model = fake_model(tmp_path / "bad_meta")
    (model / "meta.json").write_text("{not json")
    with pytest.raises(ValueError, match=r"^\[CRF-E171\] .* has a meta\.json that is not JSON"):
        check_model_dir(model)
    assert check_model_dir(fake_model(tmp_path / "good"))["name"] == "demo"


def test_build_missing_names_the_fix(monkeypatch):
    def not_found(name):
        raise pkg.importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(pkg.importlib.metadata, "version", not_found)
    with pytest.raises(ValueError, match=r"^\[CRF-E172\] .*needs the 'build' package.*pip install "
                                         r"build \(or.*pip install -e \"\.\[package\]\"\)"):
        check_build()


def test_output_dir_errors(tmp_path):
    (tmp_path / "a_file").write_text("")
    with pytest.raises(ValueError, match=r"^\[CRF-E173\] .*cannot write to the output directory "
                                         r".*a_file \(it is a file, not a directory\)"):
        check_out_dir(tmp_path / "a_file")
    # a parent that is a file: mkdir fails, and the OS's reason is given
    with pytest.raises(ValueError, match=r"^\[CRF-E173\] .*a_file/out \(Not a directory\)\. Give "):
        check_out_dir(tmp_path / "a_file" / "out")
    made = check_out_dir(tmp_path / "new" / "out")
    assert made.is_dir() and made.is_absolute() and not list(made.iterdir())


def test_output_dir_not_writable(tmp_path, monkeypatch):
    # permission bits do not stop root (CI containers run as root): fake the write's failure
    def read_only(**kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(pkg.tempfile, "NamedTemporaryFile", read_only)
    with pytest.raises(ValueError, match=r"^\[CRF-E173\] .* \(Permission denied\)"):
        check_out_dir(tmp_path)


def test_source_tree(tmp_path, monkeypatch):
    # the editable install of this checkout
    assert find_source_tree() == ROOT
    assert find_source_tree(ROOT) == ROOT
    with pytest.raises(ValueError, match=r"^\[CRF-E174\] .*, but --source .* is not a spacy-crf "
                                         r"checkout .*\. Pass --source DIR"):
        find_source_tree(tmp_path)
    # a wheel install: pip records no directory, and the module sits in site-packages
    fake_dist = SimpleNamespace(read_text=lambda name: None)
    monkeypatch.setattr(pkg.importlib.metadata, "distribution", lambda name: fake_dist)
    installed = tmp_path / "site-packages" / "spacy_crf" / "commands" / "package.py"
    monkeypatch.setattr(pkg, "__file__", str(installed))
    with pytest.raises(ValueError, match=r"^\[CRF-E174\] .*installed from site-packages, with no "
                                         r"source tree.*pip install -e DIR\)\.$"):
        find_source_tree()


def test_package_names():
    meta = {"lang": "en", "name": "demo"}
    assert package_name(meta) == "en_demo"
    assert package_name(meta, "other") == "en_other"
    assert package_name({"lang": "de", "name": "de_core"}) == "de_core"
    with pytest.raises(ValueError, match=r"^\[CRF-E176\] .*'en_my-model' is not a valid Python "
                                         r"module name.*--name my_model\.$"):
        package_name(meta, "my-model")


def test_plan_refuses_an_existing_package_unless_forced(tmp_path):
    model = fake_model(tmp_path / "model")
    out = tmp_path / "out"
    checked = plan(model, out, version="2.0.0")
    assert (checked.package, checked.version, checked.source) == ("en_demo", "2.0.0", ROOT)
    assert checked.package_dir == out.resolve() / "en_demo-2.0.0"
    checked.package_dir.mkdir()
    with pytest.raises(ValueError, match=r"^\[CRF-E175\] .*en_demo-2\.0\.0 already exists.*--force"):
        plan(model, out, version="2.0.0")
    assert plan(model, out, version="2.0.0", force=True).package == "en_demo"
    # meta.json's version by default
    assert plan(model, out).version == "1.0.0"


def test_main_reports_a_failed_check_with_exit_2(tmp_path, capsys):
    assert pkg.main([str(tmp_path / "missing"), str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err  # wasabi's failure line, on stderr
    assert "✘ [CRF-E171] " in err and capsys.readouterr().out == ""
    assert not (tmp_path / "out").exists()  # nothing done


def test_failed_builds(tmp_path, monkeypatch):
    with pytest.raises(RuntimeError, match=r"^\[CRF-E177\] .*: the step failed \(exit code 3\)"):
        pkg._run("the step", [sys.executable, "-c", "raise SystemExit(3)"])
    # spaCy reports success even when its wheel step falls back and writes none
    monkeypatch.setattr(pkg, "_run", lambda step, command, cwd=None: None)
    checked = Plan(model_dir=tmp_path, out_dir=tmp_path, source=ROOT, package="en_demo",
                   version="1.0.0")
    with pytest.raises(RuntimeError, match=r"^\[CRF-E177\] .*spacy package --build wheel failed "
                                           r"\(no wheel of en_demo 1\.0\.0 in "):
        pkg.build_model_wheel(checked)


def test_the_wheel_is_found_under_the_names_the_build_gives_it(tmp_path, monkeypatch):
    """The build lowercases the name and normalizes the version in the wheel's
    file name (en_Demo 1.0.0-rc1: en_demo-1.0.0rc1); crf-package had looked for
    the name as given, and reported a failed build of a wheel it had built."""
    monkeypatch.setattr(pkg, "_run", lambda step, command, cwd=None: None)
    checked = Plan(model_dir=tmp_path, out_dir=tmp_path, source=ROOT, package="en_Demo",
                   version="1.0.0-rc1")
    dist = checked.package_dir / "dist"
    dist.mkdir(parents=True)
    (dist / "en_other-1.0.0rc1-py3-none-any.whl").touch()
    wheel = dist / "en_demo-1.0.0rc1-py3-none-any.whl"
    wheel.touch()
    assert pkg.build_model_wheel(checked) == wheel
    with pytest.raises(ValueError, match=r"^\[CRF-E261\] .*'one\.two' is not a version"):
        plan(fake_model(tmp_path / "model"), tmp_path / "out", version="one.two")


def test_requirement_check(tmp_path):
    checked = Plan(model_dir=tmp_path, out_dir=tmp_path, source=ROOT, package="en_demo",
                   version="1.0.0")
    checked.package_dir.mkdir()
    meta = checked.package_dir / "meta.json"
    meta.write_text(json.dumps({"requirements": ["spacy-crf>=0.1.0,<0.2.0", "spacy>=3.8"]}))
    check_requirement(checked, tmp_path / CRF_WHEEL)
    meta.write_text(json.dumps({"requirements": ["spacy_crf>=0.2.0,<0.3.0"]}))
    with pytest.raises(RuntimeError, match=r"^\[CRF-E178\] .*requires spacy_crf>=0\.2\.0,<0\.3\.0, "
                                           r"which the spacy-crf wheel just built "
                                           r"\(spacy_crf-0\.1\.0-py3-none-any\.whl\)"):
        check_requirement(checked, tmp_path / CRF_WHEEL)
    # a pipeline without a crf_tagger does not require spacy-crf at all
    meta.write_text(json.dumps({"requirements": []}))
    check_requirement(checked, tmp_path / CRF_WHEEL)


# ------------------------------------------------------------------------- the install text


def test_install_instructions(tmp_path):
    out = tmp_path / "my out"
    text = install_instructions(out, out / CRF_WHEEL,
                                out / "en_demo-1.2.3" / "dist" / "en_demo-1.2.3-py3-none-any.whl",
                                "en_demo", "1.2.3")
    wheels = f"{CRF_WHEEL} en_demo-1.2.3/dist/en_demo-1.2.3-py3-none-any.whl"
    lines = [line.strip() for line in text.splitlines()]
    assert lines[0] == "Pipeline en_demo 1.2.3, packaged with spacy-crf 0.1.0."
    # a path with a space is quoted, so the line can be pasted into a shell
    assert f"cd '{out}'" in lines
    assert f"pip install {wheels}" in lines
    assert f"pip download -d wheelhouse {wheels}" in lines
    assert "pip install --no-index --find-links wheelhouse en_demo" in lines
    assert "spacy.load('en_demo')" in text


def test_both_spellings_of_the_command(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([sys.executable, "-m", "spacy", "crf-package", "--help"],
                         capture_output=True, text=True, cwd=str(tmp_path), env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    assert all(opt in out.stdout for opt in ("--name", "--version", "--source", "--force"))
    out = subprocess.run([sys.executable, "-m", "spacy_crf.package", str(tmp_path / "missing"),
                          str(tmp_path / "out")], capture_output=True, text=True,
                         cwd=str(tmp_path), env=env, timeout=300)
    assert out.returncode == 2 and "✘ [CRF-E171] " in out.stderr, out.stderr


# --------------------------------------------------- end to end: fresh venvs, with no spacy-crf


TEXTS = ["the dog sat .", "a big cat ran home .", "the old bird sang in a tree ."]
# prints the tags and where spacy_crf came from, as JSON
PREDICT = ("import json, sys, spacy, spacy_crf; nlp = spacy.load('en_demo'); "
           "print(json.dumps({'tags': [[t.tag_ for t in nlp(x)] for x in sys.argv[1:]], "
           "'spacy_crf': spacy_crf.__file__}))")


def run(args, cwd, env=None, timeout=600) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(a) for a in args], cwd=str(cwd), capture_output=True, text=True,
                          env=env, timeout=timeout)
    assert proc.returncode == 0, \
        f"{args}\nSTDOUT:\n{proc.stdout[-3000:]}\nSTDERR:\n{proc.stderr[-3000:]}"
    return proc


def clean_env(**extra) -> dict:
    """This environment without what would let a venv see our checkout or our venv."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    return {**env, **extra}


def fresh_venv(path: Path) -> Path:
    """A new venv (no system site-packages: nothing of ours is importable); its python."""
    run([sys.executable, "-m", "venv", path], cwd=path.parent)
    return path / "bin" / "python"


def check_predictions(python: Path, venv: Path, expected, cwd: Path) -> None:
    got = json.loads(run([python, "-c", PREDICT, *TEXTS], cwd=cwd, env=clean_env()).stdout
                     .strip().splitlines()[-1])
    assert got["tags"] == expected
    # the spacy-crf of the wheel, not this checkout
    assert Path(got["spacy_crf"]).resolve().is_relative_to(venv.resolve())


@pytest.fixture(scope="module")
def packaged(tmp_path_factory):
    """A tiny trained crf_tagger pipeline, its tags of TEXTS, and crf-package's output."""
    if not pkg.has_build():
        pytest.skip("crf-package needs the build package: pip install build "
                    "(or pip install -e \".[package]\")")
    work = tmp_path_factory.mktemp("package")
    nlp = make_nlp("tag")
    train(nlp, toy_examples(nlp)[:3], n_iter=5)
    nlp.meta["name"] = "demo"
    nlp.to_disk(work / "model")
    expected = [[t.tag_ for t in doc] for doc in spacy.load(work / "model").pipe(TEXTS)]
    assert any(tag for tags in expected for tag in tags)
    out = work / "out"
    run([sys.executable, "-m", "spacy", "crf-package", work / "model", out, "--version", "1.2.3"],
        cwd=work, env=clean_env())
    return SimpleNamespace(work=work, out=out, expected=expected)


@pytest.mark.slow
def test_packaged_pipeline_installs_offline_from_a_wheelhouse(packaged):
    """The route that proves most (one fresh venv keeps the suite short): the
    install text's pip download, then an install with no index at all. The
    registry route installs the same two wheels (test_install_instructions)."""
    out, work = packaged.out, packaged.work
    assert (out / CRF_WHEEL).is_file()
    # the wheel carries the kernels shipped compiled (_kernels/prebuilt.py)
    with zipfile.ZipFile(out / CRF_WHEEL) as wheel:
        shipped = [name for name in wheel.namelist() if name.endswith(".tar.xz")]
    assert shipped and all(name.startswith("spacy_crf/_kernels/prebuilt/") for name in shipped)
    assert (out / "en_demo-1.2.3" / "dist" / "en_demo-1.2.3-py3-none-any.whl").is_file()
    lines = [line.strip() for line in (out / INSTALL_FILE).read_text().splitlines()]
    download = next(line for line in lines if line.startswith("pip download"))
    offline = next(line for line in lines if "--no-index" in line)
    run([sys.executable, "-m", *download.split()], cwd=out, env=clean_env())
    venv = work / "venv-offline"
    python = fresh_venv(venv)
    # no pip config (its index or find-links) and no index: the wheelhouse alone
    run([python, "-m", *offline.split()], cwd=out,
        env=clean_env(PIP_CONFIG_FILE=os.devnull, PIP_NO_INDEX="1"))
    check_predictions(python, venv, packaged.expected, work)
