"""Feature sources are a registry: a new source is one module that registers itself.

The source below is all it takes to add one (its module would live in
``spacy_crf/feature_sources/``, or in a package of its own with an entry
point in the group ``spacy_crf_feature_sources``): templates then read its
attribute ``LONG``, ``[initialize.components.NAME] long_from`` reaches its
build (checked by spaCy as the component's own settings), and the component
trains, saves and loads it with no other change. And no module of the
templates, the word tables or the component names a particular source.
"""

import ast
import re
from typing import List

import catalogue
import numpy as np
import pytest
import spacy
import srsly
from confection import ConfigValidationError
from spacy.training import Example
from spacy.util import registry

from spacy_crf.feature_sources import (FeatureSource, register_feature_source,
                                       registered_feature_sources, source_of)
from spacy_crf.features.lexicon import Lexicon
from spacy_crf.features.templates import FeatureTemplates

from conftest import FROM_INITIALIZE, NO_WORD_TABLES, PACKAGE, train


@register_feature_source
class Lengths(FeatureSource):
    """``LONG``: 2 for a token of at least ``long_from`` characters, else 1."""

    name, attrs_hint, saved_keys = "lengths", "LONG", ("lengths",)

    def __init__(self, long_from: int) -> None:
        self.long_from = long_from

    @classmethod
    def provides(cls, attr):
        return attr == "LONG"

    @classmethod
    def build(cls, context, attrs, *, long_from: int = 6):
        return cls(long_from) if attrs else None

    def columns(self, docs, attrs, keys, held_out):
        lengths = np.asarray([len(t.text) for doc in docs for t in doc], dtype=np.int64)
        return np.repeat((1 + (lengths >= self.long_from)).astype(np.uint64)[:, None],
                         len(attrs), axis=1)

    def to_msg(self):
        return {"lengths": {"long_from": self.long_from}}

    @classmethod
    def from_msg(cls, msg):
        saved = msg.get("lengths")
        return None if saved is None else cls(saved["long_from"])


def teardown_module():
    # (the process's other tests list the registered sources: leave it as it was)
    catalogue._remove((*registry.crf_feature_sources.namespace, Lengths.name))


DATA = [("we walked everywhere", "S L L"), ("they ran", "S S"), ("elephants sleep", "L S"),
        ("a wonderful afternoon", "S L L")]


def lengths_nlp(**settings):
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"target": "tag", "model": {
        "@architectures": "spacy-crf.FeatureCRF.v2", "templates": ["LONG[-1..1]"],
        "cluster_templates": None, "n_buckets": 1024}})
    # (spaCy's lemma tables and the usual case, which the tag target reads by default, left out:
    # the model reads the new source alone)
    nlp.config["initialize"]["components"]["crf_tagger"] = {**NO_WORD_TABLES, **settings}
    examples = [Example.from_dict(nlp.make_doc(t), {"tags": g.split()}) for t, g in DATA]
    return nlp, examples


def test_the_new_source_is_registered_and_its_attribute_parses():
    assert list(registered_feature_sources()) == ["clusters", "vector_clusters", "gazetteer",
                                                  "lemma_lookups", "usual_case", "space_after",
                                                  "lengths"]
    assert source_of("LONG") is Lengths and source_of("GAZETTEER").name == "gazetteer"
    assert FeatureTemplates(["LONG[-1..1]", "NORM|LONG"]).lexicon_attrs == ["LONG"]
    with pytest.raises(ValueError, match=r"\[CRF-E001\].*CLUSTER, CLUSTERk, VECTOR_CLUSTERk, "
                                         r"GAZETTEER, LOOKUP_LEMMA, RULE_LEMMA_POS, USUAL_CASE, "
                                         r"SPACE_AFTER, LONG, "
                                         r"head:ATTR"):
        FeatureTemplates(["SHORT"])


def test_a_component_reading_the_new_source_trains_saves_and_loads(tmp_path):
    nlp, examples = lengths_nlp(long_from=5)  # the setting, as a config gives it
    train(nlp, examples, 10, optimizer=FROM_INITIALIZE)
    pipe = nlp.get_pipe("crf_tagger")
    lexicon = next(n.attrs["crf_lexicon"] for n in pipe.model.walk() if n.name == "crf_featurize")
    assert lexicon["lengths"].long_from == 5
    assert [t.tag_ for t in nlp("a beautiful day")] == ["S", "L", "S"]
    nlp.to_disk(tmp_path / "p")
    loaded = spacy.load(tmp_path / "p")
    docs = [loaded.make_doc(text) for text, _ in DATA]
    assert np.array_equal(loaded.get_pipe("crf_tagger").model.predict(docs).emissions,
                          pipe.model.predict(docs).emissions)


def test_the_new_sources_settings_are_checked_as_the_components_own():
    nlp, examples = lengths_nlp(long_from="five")
    with pytest.raises(ConfigValidationError, match="long_from"):
        nlp.initialize(lambda: examples)
    nlp, examples = lengths_nlp(long_form=5)
    with pytest.raises(ConfigValidationError, match="long_form"):
        nlp.initialize(lambda: examples)
    # called directly, a setting no source takes is named with what they take
    with pytest.raises(ValueError, match=r"\[CRF-E242\].*'long_form'.*lengths: long_from"):
        nlp.get_pipe("crf_tagger").initialize(lambda: examples, nlp=nlp, long_form=5)
    # and so is it where a trained component keeps its weights and word tables
    nlp, examples = lengths_nlp(long_from=5)
    train(nlp, examples, 2, optimizer=FROM_INITIALIZE)
    with pytest.raises(ValueError, match=r"\[CRF-E242\].*'long_form'"):
        nlp.get_pipe("crf_tagger").initialize(lambda: examples, nlp=nlp, keep_weights=True,
                                              long_form=5)


def test_two_sources_cannot_take_one_setting():
    with pytest.raises(ValueError, match=r"\[CRF-E244\].*'twin'.*long_from.*'lengths'"):
        @register_feature_source
        class Twin(Lengths):
            name = "twin"


def test_tables_of_a_source_not_registered_are_refused_by_name():
    msg = srsly.msgpack_loads(Lexicon({"lengths": Lengths(3)}).to_bytes())
    assert msg["lengths"] == {"long_from": 3} and msg["gazetteer"] is None
    msg["wordnet"] = {"senses": []}
    with pytest.raises(ValueError, match=r"\[CRF-E243\].*'wordnet'"):
        Lexicon.from_msg(msg)


# ------------------------------------------------ nothing else names a source

#: the modules the issue names: a new source touches none of them
GENERIC = ["features/templates.py", "features/lexicon.py", "pipeline/lexicon_setup.py",
           "pipeline/crf_tagger.py", "pipeline/initialize.py", "models/featurize.py"]


def _source_words() -> List[str]:
    """What names a particular source: its registry name, settings, attributes,
    class and module names (the package's own sources)."""
    words = set()
    for name, cls in registered_feature_sources().items():
        if not cls.__module__.startswith("spacy_crf."):
            continue
        words |= {name, cls.__name__, cls.__module__.rsplit(".", 1)[1], *cls.settings(),
                  *cls.saved_keys, *re.findall(r"[A-Z_]+", cls.attrs_hint)}
    return sorted(words - {"k"})


def _code_names(source: str) -> List[str]:
    """Identifiers, attributes, imported names and string constants of a
    module's code, leaving docstrings and comments out."""
    tree = ast.parse(source)
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr)
                  and isinstance(node.body[0].value, ast.Constant)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            found.append(node.id)
        elif isinstance(node, ast.Attribute):
            found.append(node.attr)
        elif isinstance(node, ast.arg):
            found.append(node.arg)
        elif isinstance(node, ast.alias):
            found += node.name.split(".")
        elif isinstance(node, ast.ImportFrom) and node.module:
            found += node.module.split(".")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and id(node) not in docstrings:
            found += re.findall(r"\w+", node.value)
    return found


def _names_of_sources(source: str) -> List[str]:
    words = set(_source_words())
    return sorted({name for name in _code_names(source) if name in words})


def test_the_check_finds_a_source_named():
    probe = ('from ..features.gazetteer import Gazetteer\n'
             'def f(attr, lexicon, clusters=None):\n    return attr == "GAZETTEER" or lexicon.vector_ks\n')
    assert _names_of_sources(probe) == ["GAZETTEER", "clusters", "gazetteer", "vector_ks"]


@pytest.mark.parametrize("module", GENERIC)
def test_the_generic_modules_name_no_source(module):
    assert _names_of_sources((PACKAGE / module).read_text(encoding="utf8")) == []
