"""Fitting a pool's weights on held-out data (``training/pool_weights.py``).

* the held-out negative log-likelihood is convex in the weight, and the fit
  finds its minimum (checked against a fine grid);
* the fitted weights are the model's: the component decodes with them and
  they survive a save;
* examples without labels leave the weights as they were;
* the ``spacy train`` callback refits at its steps from the config's dev corpus,
  leaves the pools of ``[training] frozen_components`` as they are, and bad
  settings or a pipeline without a pool (or with every pool frozen) are clear
  errors.
"""

import numpy as np
import pytest
import spacy
from spacy.tokens import Doc, DocBin
from spacy.training import Example
from thinc.api import fix_random_seed

from spacy_crf import inference
from spacy_crf.models.pooled_experts import WEIGHTS, pool_weights_node, weighted_sum
from spacy_crf.structures.chain import ChainLayout
from spacy_crf.training.pool_weights import (BOUNDS, _held_out_scores, _pooled_nll,
                                             create_fit_pool_weights, fit_pool_weights,
                                             frozen_components, golden_section, pooled_crfs)
from conftest import FROM_INITIALIZE, train

TOK2VEC = {"@architectures": "spacy.HashEmbedCNN.v2", "width": 16, "depth": 1,
           "embed_size": 100, "window_size": 1, "maxout_pieces": 2,
           "subword_features": False, "pretrained_vectors": None}
TRAIN = [("the cat sat", "DET NOUN VERB"), ("a dog ran off fast", "DET NOUN VERB ADP ADV"),
         ("ok", "INTJ"), ("the dog sat on a mat", "DET NOUN VERB ADP DET NOUN")]
HELD_OUT = [("a cat ran", "DET NOUN VERB"), ("the mat sat off", "DET NOUN VERB ADV"),
            ("fast dog", "ADV NOUN")]


def examples_of(nlp, data):
    return [Example.from_dict(Doc(nlp.vocab, words=text.split()), {"pos": tags.split()})
            for text, tags in data]


def trained_pool(steps=20):
    fix_random_seed(0)
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"target": "pos", "model": {
        "@architectures": "spacy-crf.NeuralCRF.v3", "tok2vec": TOK2VEC,
        "templates": ["NORM[-1..1]", "SUFFIX2"], "n_buckets": 256, "neural_weight": 0.2}})
    examples = examples_of(nlp, TRAIN)
    train(nlp, examples, steps, optimizer=FROM_INITIALIZE)
    return nlp


def weights_of(nlp):
    return list(pool_weights_node(nlp.get_pipe("crf_tagger").model).attrs[WEIGHTS])


def held_out_nll(nlp, weight):
    pipe = nlp.get_pipe("crf_tagger")
    held_out = _held_out_scores(nlp, "crf_tagger", pipe, examples_of(nlp, HELD_OUT), 2)
    return _pooled_nll(pipe, held_out, weight)


@pytest.mark.parametrize("minimum", [0.37, 0.0, 0.93])
def test_golden_section_finds_the_minimum_of_a_convex_function(minimum):
    calls = []

    def func(x):
        calls.append(x)
        return (x - minimum) ** 2 + abs(x - minimum)

    found = golden_section(func, 0.0, 1.0, 1e-3)
    assert abs(found - minimum) < 1e-3
    assert len(calls) < 25  # a golden-section search, not a grid


def test_the_held_out_likelihood_is_convex_in_the_weight():
    nlp = trained_pool()
    grid = np.linspace(*BOUNDS, 25)
    nll = np.array([held_out_nll(nlp, w) for w in grid])
    assert np.ptp(nll) > 1e-3  # the weight matters
    assert np.all(nll[:-2] - 2 * nll[1:-1] + nll[2:] >= -1e-6 * np.abs(nll).max())


def test_the_fit_minimises_the_held_out_likelihood_and_the_component_decodes_with_it(tmp_path):
    nlp = trained_pool()
    grid_best = min(held_out_nll(nlp, w) for w in np.linspace(*BOUNDS, 99))
    fitted = fit_pool_weights(nlp, examples_of(nlp, HELD_OUT))
    weights = weights_of(nlp)
    assert fitted == {"crf_tagger": weights}
    assert weights != [0.8, 0.2] and sum(weights) == pytest.approx(1.0)
    assert held_out_nll(nlp, weights[1]) <= grid_best + 1e-4 * abs(grid_best)
    # the component decodes the pool under the fitted weights
    crf = nlp.get_pipe("crf_tagger")
    docs = [nlp.make_doc(text) for text, _ in HELD_OUT]
    scores = crf.model.predict(docs)
    np.testing.assert_allclose(
        scores.emissions, weights[0] * scores.experts[0].emissions
        + weights[1] * scores.experts[1].emissions, rtol=1e-5)
    labels, _ = inference.viterbi(scores, ChainLayout(np.array([len(d) for d in docs])))
    assert crf.predict(docs).label_ids.tolist() == labels.tolist()
    nlp.to_disk(tmp_path / "nlp")
    assert weights_of(spacy.load(tmp_path / "nlp")) == weights


def test_an_expert_that_only_misleads_gets_weight_zero_and_the_pool_decodes_as_the_other():
    nlp = trained_pool()
    crf = nlp.get_pipe("crf_tagger")
    feature_expert, tok2vec_expert = pool_weights_node(crf.model).layers
    # the tok2vec CRF's output layer turned against what it learnt: on held-out
    # text it now prefers the wrong tags, so any weight on it costs likelihood
    output = next(node for node in tok2vec_expert.walk() if node.name == "linear")
    for param in ("W", "b"):
        output.set_param(param, -20.0 * output.get_param(param))
    fit_pool_weights(nlp, examples_of(nlp, HELD_OUT))
    assert weights_of(nlp) == [1.0, 0.0]  # the end of the interval, exactly
    docs = [nlp.make_doc(text) for text, _ in HELD_OUT]
    scores = crf.model.predict(docs)
    np.testing.assert_array_equal(scores.emissions, scores.experts[0].emissions)
    alone, _ = inference.viterbi(feature_expert.predict(docs),
                                 ChainLayout(np.array([len(d) for d in docs])))
    assert crf.predict(docs).label_ids.tolist() == alone.tolist()


def test_a_zero_weight_drops_its_expert_even_where_its_scores_are_minus_infinity():
    first = np.array([[1.0, -np.inf]])
    second = np.array([[-np.inf, 2.0]])
    np.testing.assert_array_equal(weighted_sum([first, second], [1.0, 0.0]), first)
    np.testing.assert_array_equal(weighted_sum([first, second], [0.0, 1.0]), second)


def test_examples_without_labels_leave_the_weights_as_they_were():
    nlp = trained_pool(steps=5)
    unlabelled = [Example(Doc(nlp.vocab, words=t.split()), Doc(nlp.vocab, words=t.split()))
                  for t, _ in HELD_OUT]
    assert fit_pool_weights(nlp, unlabelled) == {"crf_tagger": [0.8, 0.2]}
    assert fit_pool_weights(nlp, []) == {"crf_tagger": [0.8, 0.2]}


def test_a_pool_of_three_experts_is_a_clear_error():
    nlp = trained_pool(steps=1)
    pool_weights_node(nlp.get_pipe("crf_tagger").model).attrs[WEIGHTS] = [0.5, 0.3, 0.2]
    with pytest.raises(ValueError, match="E122.*3 experts"):
        fit_pool_weights(nlp, examples_of(nlp, HELD_OUT))


@pytest.mark.parametrize("settings", [{"every": 0}, {"every": True}, {"every": "200"},
                                      {"max_examples": 0}])
def test_bad_callback_settings_are_a_clear_error(settings):
    with pytest.raises(ValueError, match="E122.*positive integer"):
        create_fit_pool_weights(**settings)


def test_the_callback_says_at_step_zero_when_no_component_has_a_pool():
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"target": "pos"})
    with pytest.raises(ValueError, match="E122.*no crf_tagger.*pool"):
        create_fit_pool_weights(every=10)(nlp, {"step": 0, "epoch": 0})


def test_the_callback_refits_on_the_configs_dev_corpus_at_its_steps(tmp_path):
    nlp = trained_pool()
    dev = tmp_path / "dev.spacy"
    DocBin(docs=[eg.reference for eg in examples_of(nlp, HELD_OUT)]).to_disk(dev)
    # as in spacy train (resolving [corpora] reads both paths)
    nlp.config["paths"].update({"train": str(dev), "dev": str(dev)})
    callback = create_fit_pool_weights(every=10)
    for step in (0, 5, 11):
        callback(nlp, {"step": step, "epoch": 0})
    assert weights_of(nlp) == [0.8, 0.2]
    callback(nlp, {"step": 20, "epoch": 0})
    expected = trained_pool()
    fit_pool_weights(expected, examples_of(expected, HELD_OUT))
    assert weights_of(nlp) == pytest.approx(weights_of(expected))
    assert weights_of(nlp) != [0.8, 0.2]


# -- [training] frozen_components: spaCy promises that a frozen component comes
# out of training as it went in, and a refitted pool weight changes what it
# predicts; the callback reads the list from the config of the pipeline it
# runs on (as spacy train gives it, nlp.config is the training config)

START = [0.8, 0.2]  # neural_weight = 0.2


def two_pools(frozen):
    """Two pooled POS components, 'upos' and 'upos2', trained alike; ``frozen``
    in the config's [training] frozen_components; HELD_OUT as the dev corpus."""
    fix_random_seed(0)
    nlp = spacy.blank("en")
    for name in ("upos", "upos2"):
        nlp.add_pipe("crf_tagger", name=name, config={"target": "pos", "model": {
            "@architectures": "spacy-crf.NeuralCRF.v3", "tok2vec": TOK2VEC,
            "templates": ["NORM[-1..1]", "SUFFIX2"], "n_buckets": 256, "neural_weight": 0.2}})
    train(nlp, examples_of(nlp, TRAIN), 20, optimizer=FROM_INITIALIZE, component=None)
    nlp.config["training"]["frozen_components"] = list(frozen)
    return nlp


def weights(nlp, name):
    return list(pool_weights_node(nlp.get_pipe(name).model).attrs[WEIGHTS])


def test_the_callback_leaves_a_frozen_pool_as_it_is(tmp_path):
    nlp = two_pools(frozen=["upos"])
    dev = tmp_path / "dev.spacy"
    DocBin(docs=[eg.reference for eg in examples_of(nlp, HELD_OUT)]).to_disk(dev)
    nlp.config["paths"].update({"train": str(dev), "dev": str(dev)})
    callback = create_fit_pool_weights(every=10)
    callback(nlp, {"step": 0, "epoch": 0})  # one pool is not frozen: no error
    callback(nlp, {"step": 10, "epoch": 0})
    assert weights(nlp, "upos") == START  # frozen: as it came in
    assert weights(nlp, "upos2") != START  # the other pool is fitted as before
    assert sum(weights(nlp, "upos2")) == pytest.approx(1.0)


def test_the_callback_says_at_step_zero_when_every_pool_is_frozen():
    nlp = two_pools(frozen=["upos", "upos2"])
    callback = create_fit_pool_weights(every=10)
    with pytest.raises(ValueError, match=r"E122.*frozen_components \(upos, upos2\)"):
        callback(nlp, {"step": 0, "epoch": 0})


def test_fit_pool_weights_skips_the_components_it_is_told_to():
    nlp = two_pools(frozen=["upos2"])
    assert frozen_components(nlp) == ["upos2"]  # what the callback passes
    assert [name for name, _ in pooled_crfs(nlp, skip=["upos2"])] == ["upos"]
    fitted = fit_pool_weights(nlp, examples_of(nlp, HELD_OUT), skip=["upos2"])
    assert list(fitted) == ["upos"] and fitted["upos"] != START
    assert weights(nlp, "upos2") == START
