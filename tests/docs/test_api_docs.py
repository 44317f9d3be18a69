"""docs/api.md keeps up with the code: every exported name, every public
method and property of CRFTagger and every entry point appears on the page."""

import inspect
import re

import pytest

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib

import spacy_crf
from spacy_crf.pipeline.crf_tagger import CRFTagger

from conftest import ROOT
API = (ROOT / "docs" / "api.md").read_text(encoding="utf8")


def public_members():
    """Names not starting with ``_`` defined in CRFTagger's own class body."""
    return sorted(name for name, _ in inspect.getmembers(CRFTagger)
                  if not name.startswith("_") and name in vars(CRFTagger))


def entry_point_names():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf8"))
    groups = meta["project"]["entry-points"]
    return sorted((group, name) for group, points in groups.items() for name in points)


def mentioned(name: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", API) is not None


@pytest.mark.parametrize("name", spacy_crf.__all__)
def test_every_exported_name_is_documented(name):
    assert mentioned(name), f"spacy_crf.{name} is missing from docs/api.md"


def test_crf_tagger_has_public_members():
    names = public_members()
    assert {"predict", "update", "initialize", "labels", "to_disk"} <= set(names)


@pytest.mark.parametrize("name", public_members())
def test_every_public_method_of_crf_tagger_is_documented(name):
    assert mentioned(name), f"CRFTagger.{name} is missing from docs/api.md"


def test_entry_points_are_found():
    names = {name for _, name in entry_point_names()}
    assert {"crf_tagger", "spacy-crf.Chain.v1", "spacy-crf.crf_scorer.v1"} <= names


@pytest.mark.parametrize("group,name", entry_point_names())
def test_every_entry_point_is_documented(group, name):
    assert mentioned(name), f"entry point {name} ({group}) is missing from docs/api.md"
    assert mentioned(group), f"entry-point group {group} is missing from docs/api.md"


def test_the_check_detects_a_missing_name():
    assert not mentioned("crf_tagger_that_does_not_exist")
    assert not mentioned("predic")


def test_every_registered_feature_source_has_an_entry_point_and_a_row():
    """spacy.load without an import finds a source through its entry point, and
    the registry's table in docs/api.md lists it with its initialize settings."""
    from spacy_crf.feature_sources.registry import FEATURE_SOURCES

    pointed = {name for group, name in entry_point_names() if group == "spacy_crf_feature_sources"}
    text = (ROOT / "docs" / "api.md").read_text(encoding="utf8")
    for name, cls in FEATURE_SOURCES.in_process().items():
        if not cls.__module__.startswith("spacy_crf."):  # a test's own source
            continue
        assert name in pointed, f"feature source {name} has no entry point in pyproject.toml"
        path = f"`{cls.__module__}:{cls.__name__}`"
        row = next((line for line in text.splitlines()
                    if line.startswith(f"| `{name}` | {path} |")), "")
        assert row, f"no registry row for {name}"
        for setting in cls.settings():
            assert f"`{setting}`" in row, f"{name}'s setting {setting} is not in its row"
