"""What a new user gets: factory defaults, ``nlp.initialize()``'s optimizer
(spaCy's default Adam: 0.001, decoupled L2 0.01, grad_clip 1.0) and a plain
``nlp.update`` loop, on the shipped EWT sample."""

import random

import pytest
import spacy
from spacy.tokens import Doc
from spacy.training import Example
from spacy.util import minibatch

from spacy_crf.converters import read_conllu_upos

from conftest import EWT_SAMPLE as SAMPLE


def train_plain_loop(model_overrides: dict, epochs: int = 5, lemma_lookups: bool = True) -> float:
    nlp = spacy.blank("en")
    config = {"target": "pos"}
    if model_overrides:
        config["model"] = model_overrides
    nlp.add_pipe("crf_tagger", config=config)
    nlp.config["initialize"]["components"]["crf_tagger"] = {"lemma_lookups": lemma_lookups}
    train = [Example.from_dict(Doc(nlp.vocab, words=w), {"pos": t})
             for w, t in read_conllu_upos(SAMPLE / "en_ewt-train.conllu")]
    dev = [Example.from_dict(Doc(nlp.vocab, words=w), {"pos": t})
           for w, t in read_conllu_upos(SAMPLE / "en_ewt-dev.conllu", limit=200)]
    optimizer = nlp.initialize(lambda: train)
    random.seed(0)
    for _ in range(epochs):
        random.shuffle(train)
        for batch in minibatch(train, size=32):
            nlp.update(batch, sgd=optimizer)
    return nlp.evaluate(dev)["pos_acc"]


def test_default_optimizer_is_spacys():
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"target": "pos"})
    optimizer = nlp.initialize(lambda: [Example.from_dict(Doc(nlp.vocab, words=["a"]), {"pos": ["DET"]})])
    assert optimizer.learn_rate == pytest.approx(0.001)
    assert optimizer.L2_is_weight_decay and optimizer.L2 == pytest.approx(0.01)
    assert optimizer.grad_clip == pytest.approx(1.0)


def test_factory_defaults_train_under_spacys_default_optimizer():
    """The model's learning-rate scale is what makes Adam 0.001 work for sparse
    weights: without it (scale 1) five epochs leave the tagger far behind. The
    head start (boost_updates) then gains more in the 95 updates of this loop."""
    defaults = train_plain_loop({})
    scaled = train_plain_loop({"boost_updates": 0})
    unscaled = train_plain_loop({"learn_rate_scale": 1.0, "boost_updates": 0})
    assert defaults >= 0.88
    assert scaled >= unscaled + 0.05  # measured: 0.919 against 0.855
    assert defaults >= scaled + 0.005  # measured: 0.932 against 0.919


def test_word_clusters_of_spacy_lookups_data_help_the_defaults():
    """With spacy-lookups-data installed the factory defaults read its English
    Brown clusters (measured, the lemma tables left out: 0.934 against 0.908
    without them)."""
    pytest.importorskip("spacy_lookups_data")
    assert train_plain_loop({}, lemma_lookups=False) >= \
        train_plain_loop({"cluster_templates": None}, lemma_lookups=False) + 0.015


def test_the_lemma_tables_of_spacy_lookups_data_help_the_defaults():
    """And its lemma tables (``TAGGING_TEMPLATES``; measured: 0.936 against 0.934;
    without clusters 0.929 against 0.908)."""
    pytest.importorskip("spacy_lookups_data")
    assert train_plain_loop({}) > train_plain_loop({}, lemma_lookups=False)


def _template_names(nlp, name="crf_tagger"):
    pipe = nlp.get_pipe(name)
    return [n for node in pipe.model.walk() if "templates" in node.attrs
            for n in node.attrs["templates"].names]


def test_tree_structure_gets_tree_features_by_default():
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"target": "pos", "structure": "tree"})
    names = _template_names(nlp)
    assert "head:NORM[0]" in names and "HEAD_DIST[0]" in names and "DEP[0]|head:DEP[0]" in names
    # the chain default reads no parse, so it runs on docs without one
    chain = spacy.blank("en")
    chain.add_pipe("crf_tagger", config={"target": "pos"})
    assert not any(n.startswith("head:") or "DEP" in n for n in _template_names(chain))
    assert set(_template_names(chain)) < set(names)


def test_dep_target_tree_defaults_leave_out_features_that_read_dep():
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"target": "dep", "structure": "tree"})  # no E017
    names = _template_names(nlp)
    assert "head:NORM[0]" in names and "HEAD_DIST[0]" in names
    assert not any("DEP" in n for n in names)


def test_tree_templates_already_in_templates_are_not_added_twice():
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={
        "target": "pos", "model": {"templates": ["NORM", "head:NORM"]},
        "structure": {"@structures": "spacy-crf.Tree.v1", "tree_templates": ["head:NORM", "HEAD_DIST"]}})
    assert _template_names(nlp) == ["NORM[0]", "head:NORM[0]", "HEAD_DIST[0]"]


def test_spacys_training_loop_with_accumulated_gradients_and_a_frozen_crf():
    """spaCy's own loop (``train_while_improving``) with ``accumulate_gradient = 2``
    and a second crf_tagger frozen: the trained one learns with its row-sparse
    steps, the frozen one keeps every weight bit for bit."""
    import numpy as np
    from spacy.training.loop import train_while_improving

    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", name="crf_pos", config={"target": "pos"})
    nlp.add_pipe("crf_tagger", name="crf_tag", config={"target": "tag"})
    sents = read_conllu_upos(SAMPLE / "en_ewt-train.conllu", limit=200)
    train = [Example.from_dict(Doc(nlp.vocab, words=w), {"pos": t, "tags": t}) for w, t in sents]
    optimizer = nlp.initialize(lambda: train)
    frozen = [node.get_param(name).copy() for node in nlp.get_pipe("crf_tag").model.walk()
              for name in node.param_names if node.has_param(name)]
    before = nlp.evaluate(train)["pos_acc"]

    def batches():
        for epoch in range(3):
            for batch in minibatch(train, size=16):
                yield epoch, batch

    loop = train_while_improving(nlp, optimizer, batches(), lambda: (0.0, {}), dropout=0.0,
                                 eval_frequency=1000, accumulate_gradient=2, patience=0,
                                 max_steps=0, exclude=["crf_tag"], annotating_components=[],
                                 before_update=None)
    steps = sum(1 for _ in loop)
    assert steps > 30
    after = nlp.evaluate(train)["pos_acc"]
    assert after > before + 0.3, (before, after)
    now = [node.get_param(name) for node in nlp.get_pipe("crf_tag").model.walk()
           for name in node.param_names if node.has_param(name)]
    assert len(now) == len(frozen) and all(np.array_equal(a, b) for a, b in zip(now, frozen))
