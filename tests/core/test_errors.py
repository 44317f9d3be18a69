"""Numbered errors: every message the package raises comes from ``spacy_crf.errors``,
names its code, and the failures of the component, the inference wrappers and the
tagging schemes each give theirs."""

import ast
import re
from pathlib import Path

import numpy as np
import pytest
import spacy
from thinc.api import Linear

from spacy_crf import inference, schemes
from spacy_crf.errors import Errors, Warnings
from spacy_crf.models.potentials import CRFScores
from spacy_crf.models.potentials import potentials_of
from spacy_crf.structures import ChainLayout, TreeLayout

from conftest import PACKAGE
NUMBERED = ["pipeline/crf_tagger.py", "inference.py", "schemes.py"]


def _raised_messages(path: Path):
    """The first argument of every ``raise SomethingError(...)`` in a module."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf8"))):
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and node.exc.args:
            name = getattr(node.exc.func, "id", getattr(node.exc.func, "attr", ""))
            if name.endswith("Error"):
                yield node.lineno, node.exc.args[0]


@pytest.mark.parametrize("module", NUMBERED)
def test_no_raw_string_errors(module):
    raw = [line for line, arg in _raised_messages(PACKAGE / module)
           if isinstance(arg, (ast.Constant, ast.JoinedStr))]
    assert not raw, f"{module}: raw-string errors at lines {raw}: use spacy_crf.errors.Errors"


def test_every_defined_code_is_raised_somewhere():
    source = "\n".join(p.read_text(encoding="utf8") for p in PACKAGE.rglob("*.py")
                       if p.name != "errors.py")
    for table in (Errors, Warnings):
        codes = [c for c in vars(table) if re.fullmatch(r"[EW]\d{3}", c)]
        unused = [c for c in codes if not re.search(rf"\b{c}\b", source)]
        assert not unused, f"defined but never used: {unused}"


# -------------------------------------------------------------- each error, where it fires


def test_scheme_errors():
    with pytest.raises(ValueError, match=r"^\[CRF-E060\] Unknown scheme 'IOB2': use 'BIO' or 'BILUO'"):
        schemes.check_scheme("IOB2")
    with pytest.raises(ValueError, match=r"^\[CRF-E061\] 'Z-PER' is not a span tag"):
        schemes.parse_tags(["O", "Z-PER"])


def test_add_label_errors(toy):
    tagger = toy.make_nlp("tag").get_pipe("crf_tagger")
    with pytest.raises(ValueError, match=r"^\[CRF-E062\] Labels must be strings, got 3"):
        tagger.add_label(3)
    nlp, examples = toy.trained_nlp("tag", n_iter=1)
    tagger = nlp.get_pipe("crf_tagger")
    with pytest.raises(ValueError) as info:
        tagger.initialize(lambda: examples, nlp=nlp, labels=["NN", "NEWTAG"], keep_weights=True)
    message = str(info.value)
    assert message.startswith("[CRF-E167] initialize(keep_weights=True) of 'crf_tagger' keeps its "
                              "trained labels") and "'DT'" in message and "NEWTAG" not in tagger.labels


def test_growing_errors(toy, tmp_path):
    from spacy_crf.training.fit import _source
    from spacy_crf.training.add_labels import create_add_labels

    nlp = toy.make_nlp("tag")
    with pytest.raises(ValueError, match=r"^\[CRF-E168\] spacy-crf.add_labels.v1: the pipeline has no "
                                         r"crf_tagger named 'tagger'"):
        create_add_labels(component="tagger", from_corpus=False)(nlp)
    with pytest.raises(ValueError, match=r"^\[CRF-E169\] python -m spacy_crf.fit --init-from"):
        _source(nlp, "crf_tagger", tmp_path / "missing")
    spacy.blank("en").to_disk(tmp_path / "empty")
    with pytest.raises(ValueError, match=r"^\[CRF-E169\].*its components are \[\]"):
        _source(nlp, "crf_tagger", tmp_path / "empty")


def _scores(n_tokens, n_labels=3, n_groups=1, seed=0):
    rng = np.random.default_rng(seed)
    return CRFScores.of(rng.normal(size=(n_tokens, n_labels)),
                        transitions=rng.normal(size=(n_labels, n_labels)),
                        start=rng.normal(size=n_labels), end=rng.normal(size=n_labels),
                        pair=rng.normal(size=(n_groups, n_labels, n_labels)),
                        root=rng.normal(size=n_labels))


def test_inference_errors():
    scores = _scores(5)
    with pytest.raises(ValueError, match=r"^\[CRF-E063\] The sequence lengths sum to 4 tokens but "
                                         r"there are 5 rows"):
        inference.viterbi(scores, ChainLayout(np.array([2, 2])))
    forest = TreeLayout(np.array([5]), np.array([-1, 0, 0, 1, 1]),
                                        np.array([4, 3, 2, 1, 0]), np.array([0, 1, 0, 2, 0]))
    with pytest.raises(ValueError, match=r"^\[CRF-E064\] Relation groups .* \[0, 1\).* got 0\.\.2"):
        inference.viterbi(scores, forest)
    with pytest.raises(ValueError, match=r"^\[CRF-E065\] .* k = 2 with a tree"):
        inference.n_best(_scores(5, n_groups=3), forest, 2)
    with pytest.raises(ValueError, match=r"^\[CRF-E065\] .* k = 0 with a chain"):
        inference.n_best(scores, ChainLayout(np.array([5])), 0)


def test_model_without_potentials_layer():
    with pytest.raises(ValueError, match=r"^\[CRF-E066\] The model has no 'crf_potentials' layer"):
        potentials_of(Linear(3, 4))


def test_emission_width_that_is_not_the_label_count_is_reported_as_a_bug(toy):
    nlp, _ = toy.trained_nlp("tag", n_iter=1)
    tagger = nlp.get_pipe("crf_tagger")
    n = len(tagger.labels)
    with pytest.raises(ValueError, match=rf"^\[CRF-E013\] .* {n + 1} label columns .* expects {n} "
                                         r"\(one per label, per CRF of its structure\)\. "
                                         r"This is a bug"):
        tagger._state.check_width(_scores(4, n_labels=n + 1))
