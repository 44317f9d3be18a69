"""The tests mirror the package (issue #50): every test file sits in the
directory of what it tests, none at the top of tests/.

tests/ keeps only the shared helpers at its top (conftest.py, whose helpers
the test files import as ``from conftest import ...``, and
finite_differences.py); each directory below it is a package, so that two
test files of the same name in two directories do not clash under pytest's
default import mode. A directory is named after a subpackage of spacy_crf
(``kernels`` for ``_kernels``) or is one of the few that test something
else, listed in ``OTHER_DIRECTORIES``.
"""

from conftest import PACKAGE, ROOT

TESTS = ROOT / "tests"

#: test directories that do not mirror a subpackage of spacy_crf, and what they test
OTHER_DIRECTORIES = {
    "assets": "files the tests read (no tests)",
    "benchmarks": "the scripts under benchmarks/",
    "commands": "the command-line modules (spacy_crf/commands/, python -m spacy_crf.X)",
    "configs": "the shipped configs/ and project.yml",
    "core": "the package's top-level modules (spacy_crf/*.py) and the package as a whole",
    "docs": "README.md and the pages under docs/",
    "kernels": "spacy_crf/_kernels/",
    "suite": "the test suite itself",
}

#: the modules at the top of tests/: helpers, not tests
TOP_LEVEL_MODULES = {"conftest.py", "finite_differences.py"}


def is_test_file(name: str) -> bool:
    """What pytest collects by default (``python_files = test_*.py *_test.py``)."""
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


def test_no_test_file_sits_at_the_top_of_tests():
    top = sorted(p.name for p in TESTS.glob("*.py") if is_test_file(p.name))
    assert not top, (f"{top} sit at the top of tests/: move each into the directory of the "
                     "module it tests (git mv), e.g. tests/structures/ for spacy_crf/structures/")


def test_the_top_of_tests_holds_only_the_shared_helpers():
    extra = sorted({p.name for p in TESTS.glob("*.py")} - TOP_LEVEL_MODULES)
    assert not extra, (f"{extra} at the top of tests/: a helper shared by many test files "
                       "goes into conftest.py, one of a directory's into that directory")
    # no __init__.py at the top: conftest.py stays the module ``conftest``
    assert not (TESTS / "__init__.py").exists()


def test_every_test_directory_is_a_package():
    dirs = {p.parent for p in TESTS.rglob("*.py") if p.parent != TESTS
            and "assets" not in p.relative_to(TESTS).parts}
    missing = sorted(str(d.relative_to(ROOT)) for d in dirs if not (d / "__init__.py").exists())
    assert not missing, f"{missing} need an __init__.py (same-named test files clash without one)"


def test_every_test_directory_mirrors_a_subpackage_or_is_listed():
    subpackages = {p.parent.name.lstrip("_") for p in PACKAGE.glob("*/__init__.py")}
    dirs = {p.name for p in TESTS.iterdir() if p.is_dir() and not p.name.startswith((".", "__"))}
    stray = sorted(dirs - subpackages - set(OTHER_DIRECTORIES))
    assert not stray, (f"{stray} under tests/ mirror no subpackage of spacy_crf: name the directory "
                       "after the module its tests test, or list it in OTHER_DIRECTORIES")
