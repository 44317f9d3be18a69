"""The L1 penalty of the hashed table (``FeatureCRF(l1_penalty=...)``), taken
lazily by the row-sparse step, against a float64 numpy reference that shrinks
every row training has touched at every step."""

import numpy as np
import pytest
import spacy
from spacy.tokens import Doc
from spacy.training import Example
from thinc.api import SGD, Adam

from spacy_crf._kernels import sparse_update as kernels
from spacy_crf.models.hashed_linear import NAME as HASHED_NAME
from spacy_crf.models.sparse_table import (ATTR, BOOST_UPDATES, L1_PENALTY, UPDATES_DONE, boost,
                                           settle_tables, step_model)
from models.test_sparse_update import N_BUCKETS, batches, dense_grad, make_layer, run_sparse


def soft_threshold(w, amount):
    return np.sign(w) * np.maximum(np.abs(w) - amount, 0.0)


def reference(W0, steps, l1, adam=True, lr=0.05, b1=0.9, b2=0.999, eps=1e-8, moments=False,
              data_scales=None):
    """Sparse Adam (moments of a row move only when a batch touches it) or SGD,
    then at every step a soft threshold of every row touched so far by
    ``l1 * lr * sqrt(1 - b2^t) / max(sqrt(v) + eps, l1)`` (SGD: ``l1 * lr``).
    ``data_scales[t - 1]`` multiplies the rate of step t's data term only."""
    W = W0.astype(np.float64)
    m, v = np.zeros_like(W), np.zeros_like(W)
    touched = np.zeros(W.shape[0], dtype=bool)
    for t, (ids, d_scores) in enumerate(steps, start=1):
        g = dense_grad(ids, d_scores).astype(np.float64)
        rows = np.unique((ids % np.uint64(N_BUCKETS)).astype(np.int64))
        touched[rows] = True
        data_lr = lr * (data_scales[t - 1] if data_scales is not None else 1.0)
        if adam:
            rate = data_lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t)
            m[rows] = b1 * m[rows] + (1 - b1) * g[rows]
            v[rows] = b2 * v[rows] + (1 - b2) * g[rows] ** 2
            W[rows] -= rate * m[rows] / (np.sqrt(v[rows]) + eps)
            amount = l1 * lr * np.sqrt(1 - b2 ** t) / np.maximum(np.sqrt(v[touched]) + eps, l1)
        else:
            W[rows] -= data_lr * g[rows]
            amount = l1 * lr
        W[touched] = soft_threshold(W[touched], amount)
    return (W, v) if moments else W


def penalized_layer(l1, seed=0):
    layer = make_layer(seed)
    layer.attrs[L1_PENALTY] = l1
    return layer


OPTIMIZERS = {
    "adam": (lambda: Adam(0.05, grad_clip=0.0, use_averages=False), True),
    "sgd": (lambda: SGD(0.05, grad_clip=0.0, use_averages=False), False),
}


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_lazy_penalty_equals_a_shrink_of_every_row_at_every_step(name):
    make, adam = OPTIMIZERS[name]
    l1 = 1.0 if adam else 0.2
    layer = penalized_layer(l1)
    W0 = layer.get_param("W").copy()
    # gradients large enough that some weights' sqrt(v) passes the floor l1, some not
    steps = [(ids, 30 * d_scores) for ids, d_scores in batches(30, seed=11)]
    run_sparse(layer, make(), steps)
    want, v = reference(W0, steps, l1, adam=adam, moments=True)
    if adam:
        seen = v[v > 0]
        assert (np.sqrt(seen) > l1).any() and (np.sqrt(seen) < l1).any()
    table = layer.attrs[ATTR]
    # rows the last batch left alone still owe their penalty ...
    assert not np.allclose(layer.get_param("W"), want, atol=1e-5)
    settle_tables(layer)
    # ... and once settled every row is where the per-step penalty puts it
    assert np.allclose(layer.get_param("W"), want, atol=1e-5)
    assert table._settled_upto == table.n_steps == len(steps)
    # the penalty made exact zeros, and left the rows training never touched alone
    W = layer.get_param("W")
    assert (W == 0).sum() > 0 and (W0 != 0).all()
    assert np.array_equal(W[:8], W0[:8])


def test_settling_midway_changes_nothing_later():
    """Prediction settles the weights mid-training (spacy train evaluates):
    soft thresholds add up, so the end weights are the same."""
    steps = batches(10, seed=12)
    plain, midway = penalized_layer(0.02), penalized_layer(0.02)
    W0 = plain.get_param("W").copy()
    opt_plain, opt_midway = OPTIMIZERS["adam"][0](), OPTIMIZERS["adam"][0]()
    run_sparse(plain, opt_plain, steps)
    for i, step in enumerate(steps):
        run_sparse(midway, opt_midway, [step])
        if i in (1, 4, 5):
            settle_tables(midway)
    settle_tables(plain)
    settle_tables(midway)
    assert np.allclose(plain.get_param("W"), midway.get_param("W"), atol=1e-6)
    assert np.allclose(midway.get_param("W"), reference(W0, steps, 0.02), atol=1e-5)


def test_settling_twice_takes_the_penalty_once():
    layer = penalized_layer(0.02)
    run_sparse(layer, OPTIMIZERS["adam"][0](), batches(6, seed=13))
    settle_tables(layer)
    once = layer.get_param("W").copy()
    settle_tables(layer)
    assert np.array_equal(layer.get_param("W"), once)


def test_a_new_optimizer_first_settles_what_the_last_one_owed():
    steps = batches(10, seed=14)
    layer = penalized_layer(0.02)
    W0 = layer.get_param("W").copy()
    run_sparse(layer, OPTIMIZERS["adam"][0](), steps[:5])
    run_sparse(layer, OPTIMIZERS["adam"][0](), steps[5:])  # a fresh Adam: moments from zero
    settle_tables(layer)
    want = reference(reference(W0, steps[:5], 0.02), steps[5:], 0.02)
    assert np.allclose(layer.get_param("W"), want, atol=1e-5)


def test_the_head_start_hurries_the_data_term_not_the_penalty():
    """boost_updates scales the first updates' rate; the penalty keeps the
    layer's own rate (learn_rate_scale), as does the reference."""
    steps = batches(10, seed=16)
    layer = penalized_layer(0.02)
    layer.attrs[BOOST_UPDATES], layer.attrs[UPDATES_DONE] = 4, 0
    W0 = layer.get_param("W").copy()
    opt = OPTIMIZERS["adam"][0]()
    for ids, d_scores in steps:
        _, backprop = layer(ids, is_train=True)
        backprop(d_scores)
        step_model(layer, opt)
    settle_tables(layer)
    scales = [boost(t, 4) for t in range(len(steps))]
    assert scales[0] == 2.0 and scales[-1] == 1.0
    want = reference(W0, steps, 0.02, data_scales=scales)
    assert np.allclose(layer.get_param("W"), want, atol=1e-5)


def test_no_penalty_is_the_plain_step_to_the_bit():
    steps = batches(8, seed=15)
    plain, zero = make_layer(), penalized_layer(0.0)
    run_sparse(plain, OPTIMIZERS["adam"][0](), steps)
    run_sparse(zero, OPTIMIZERS["adam"][0](), steps)
    settle_tables(zero)
    assert np.array_equal(plain.get_param("W"), zero.get_param("W"))
    assert not (plain.get_param("W") == 0).any()


def test_soft_threshold_kernel():
    for w, amount, want in ((0.5, 0.2, 0.3), (-0.5, 0.2, -0.3), (0.1, 0.2, 0.0), (-0.1, 0.2, 0.0),
                            (0.0, 0.0, 0.0)):
        assert kernels.soft_threshold(w, amount) == pytest.approx(want)


# ---------------------------------------------------------------- the component


def tiny_pipeline(**model):
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"target": "pos", "model": model})
    words = [["I", "like", "green", "eggs"], ["We", "see", "a", "red", "car"],
             ["They", "eat", "ham"]]
    tags = [["PRON", "VERB", "ADJ", "NOUN"], ["PRON", "VERB", "DET", "ADJ", "NOUN"],
            ["PRON", "VERB", "NOUN"]]
    examples = [Example(Doc(nlp.vocab, words=w), Doc(nlp.vocab, words=w, pos=t))
                for w, t in zip(words, tags)]
    return nlp, examples


def hashed_table(nlp):
    model = nlp.get_pipe("crf_tagger").model
    return next(node for node in model.walk() if node.name == HASHED_NAME)


def test_factory_default_model_has_the_penalty():
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"target": "pos"})
    config = nlp.config["components"]["crf_tagger"]["model"]
    assert config["l1_penalty"] == pytest.approx(3e-6)
    nlp.initialize(lambda: [Example(Doc(nlp.vocab, words=["a", "b"]),
                                    Doc(nlp.vocab, words=["a", "b"], pos=["DET", "NOUN"]))])
    assert hashed_table(nlp).attrs[L1_PENALTY] == pytest.approx(3e-6)


def test_prediction_reads_settled_weights():
    """Without averaged weights the iterate predicts: its arrears are taken first."""
    nlp, examples = tiny_pipeline(**{"@architectures": "spacy-crf.FeatureCRF.v2",
                                     "templates": ["NORM", "SUFFIX3", "NORM[-1]"],
                                     "n_buckets": 4096, "average_weights": False,
                                     "l1_penalty": 0.05})
    optimizer = nlp.initialize(lambda: examples)
    for i in range(6):
        nlp.update(examples[i % 3: i % 3 + 1], sgd=optimizer)
    node = hashed_table(nlp)
    table = node.attrs[ATTR]
    before = node.get_param("W").copy()
    mom2 = optimizer.mom2[(node.id, "W")].reshape(-1, before.shape[1])
    want = before.copy()
    kernels.settle_l1(want, mom2, table.moment_row, table.l1_synced.copy(), table.cum_rate,
                      table.n_steps, 0.05, float(optimizer.eps), True)
    assert not np.array_equal(want, before)  # (rows the last updates left alone owe some)
    nlp("We like red eggs")
    assert np.array_equal(node.get_param("W"), want)


@pytest.mark.parametrize("value", [-1e-6, -1])
def test_negative_penalty_is_refused(value):
    nlp = spacy.blank("en")
    with pytest.raises(ValueError, match="E184"):
        nlp.add_pipe("crf_tagger", config={"target": "pos", "model": {
            "@architectures": "spacy-crf.FeatureCRF.v2", "templates": ["NORM"],
            "l1_penalty": value}})


def test_evaluating_with_the_optimizers_averages_leaves_them_alone():
    """spacy train evaluates inside nlp.use_params(optimizer.averages): the model
    then holds the averages, which must not take the iterate's L1 arrears."""
    nlp, examples = tiny_pipeline(**{"@architectures": "spacy-crf.FeatureCRF.v2",
                                     "templates": ["NORM", "SUFFIX3", "NORM[-1]"],
                                     "n_buckets": 4096, "l1_penalty": 0.005})
    nlp.initialize(lambda: examples)
    optimizer = Adam(0.05, use_averages=True)
    for i in range(6):
        nlp.update(examples[i % 3: i % 3 + 1], sgd=optimizer)
    node = hashed_table(nlp)
    iterate = node.get_param("W").copy()
    with nlp.use_params(optimizer.averages):
        averages = node.get_param("W").copy()
        nlp("We like red eggs")
        assert np.array_equal(node.get_param("W"), averages)
    # the iterate is back, arrears still owed (an update or a prediction takes them)
    assert np.array_equal(node.get_param("W"), iterate)
    nlp("We like red eggs")
    assert not np.array_equal(node.get_param("W"), iterate)
