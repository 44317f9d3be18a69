"""A gold labelling that leaves a second-order chain's kept label pairs is
trained on as unannotated by every loss (docs/structures.md, "Second-order
chains"): the perceptron and the hinge as the nll, a finite loss and no NaN
gradient, and W045 once per component, counting the sequences."""

import warnings

import numpy as np
import pytest
import spacy
from spacy.tokens import Doc
from spacy.training import Example

from spacy_crf import inference, losses
from spacy_crf.models.potentials import CRFScores
from spacy_crf.structures import get_structure
from spacy_crf.structures.second_order import SecondOrderLayout, all_pairs

LOSSES = ("nll", "perceptron", "hinge")


def problem(seed, L=3):
    """Three sequences of random scores over pairs pruned so that label 2
    follows nothing but START: gold with a pair into 2 after a label leaves them."""
    rng = np.random.default_rng(seed)
    lengths = np.asarray([3, 4, 2])
    N = int(lengths.sum())
    scores = CRFScores.of(rng.normal(size=(N, L)), transitions=rng.normal(size=(L, L)),
                          start=rng.normal(size=L), end=rng.normal(size=L),
                          triples=rng.normal(size=(L + 1, L, L)))
    pairs = all_pairs(L)
    pairs = pairs[(pairs[:, 1] != 2) | (pairs[:, 0] == -1)]
    return scores, SecondOrderLayout(lengths, pairs)


def loss_of(name):
    return losses.get_loss(name)


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("seed", range(3))
def test_a_sequence_whose_gold_leaves_the_kept_pairs_is_unannotated(loss, seed):
    scores, layout = problem(seed)
    # sequence 0: 0 -> 2 is no kept pair; sequence 2: known labels 1 then 2 (partial
    # gold, one token between none): the kept pairs join no path through them
    gold = np.asarray([0, 2, 1, 1, 0, 1, 0, 2, 1])
    gold_partial = gold.copy()
    gold_partial[[3, 4, 5, 6]] = [1, -1, 2, 0]  # sequence 1: 1, ?, 2: ? -> 2 is never kept
    for labels, lost in ((gold, [True, False, False]), (gold_partial, [True, True, False])):
        found = get_structure("chain_order2").unreachable_gold(scores, layout, labels)
        assert found.tolist() == lost
        # the same as the clamped Viterbi finds (the generic check)
        _, best = inference.viterbi(scores, layout, labels)
        assert np.isneginf(best).tolist() == lost
        per_sequence, gradient = loss_of(loss)(scores, layout, labels)
        unannotated = np.where(np.repeat(lost, layout.lengths), -1, labels)
        want, want_gradient = loss_of(loss)(scores, layout, unannotated)
        assert np.isfinite(per_sequence).all()
        np.testing.assert_allclose(per_sequence, want)
        for name, value in gradient.named().items():
            assert np.isfinite(value).all()
            np.testing.assert_allclose(value, getattr(want_gradient, name), err_msg=name)
        np.testing.assert_allclose(gradient.emissions, want_gradient.emissions)
        # an unannotated sequence adds nothing to the margin losses
        if loss != "nll":
            assert (per_sequence[np.asarray(lost)] == 0).all()


@pytest.mark.parametrize("loss", ("perceptron", "hinge"))
def test_an_impossible_gold_labelling_of_a_chain_that_keeps_every_labelling_is_still_inf(loss):
    """Where the structure prunes nothing an impossible gold is divergence or a
    bug, for E009, as before."""
    from spacy_crf.structures import ChainLayout

    L = 2
    scores = CRFScores.of(np.zeros((2, L)), transitions=np.asarray([[0.0, -np.inf], [0.0, 0.0]]),
                          start=np.zeros(L), end=np.zeros(L))
    per_sequence, _ = loss_of(loss)(scores, ChainLayout(np.asarray([2])), np.asarray([0, 1]))
    assert per_sequence.tolist() == [np.inf]


def example(nlp, words, pos):
    reference = Doc(nlp.vocab, words=words, pos=[p or "X" for p in pos])
    for token, p in zip(reference, pos):
        if p is None:
            token.pos = 0  # no gold for this token
    return Example(Doc(nlp.vocab, words=words), reference)


def order2_nlp(loss):
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"target": "pos", "loss": loss, "structure": {
        "@structures": "spacy-crf.Chain.v1", "order": 2}})
    return nlp


@pytest.mark.parametrize("loss", LOSSES)
def test_the_component_trains_on_it_and_warns_once(loss):
    """initialize keeps no pair into ADV (its one token follows an unknown
    label): the first doc's gold leaves the kept pairs. Every loss trains on
    (finite, no NaN weights) and W045 says it once, counting the sequences."""
    nlp = order2_nlp(loss)
    train = [example(nlp, ["the", "dog", "runs", "fast"], ["DET", "NOUN", None, "ADV"]),
             example(nlp, ["a", "cat", "sleeps", "."], ["DET", "NOUN", "VERB", "PUNCT"])]
    optimizer = nlp.initialize(lambda: train)
    pipe = nlp.get_pipe("crf_tagger")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            losses_ = nlp.update(train, sgd=optimizer)
            assert np.isfinite(losses_["crf_tagger"])
        docs = [eg.predicted for eg in train]
        _, d_scores = pipe.get_loss(train, pipe.model.predict(docs))
    said = [str(w.message) for w in caught if "W045" in str(w.message)]
    assert len(said) == 1 and "1 of the 2 sequence(s)" in said[0]
    for value in (d_scores.emissions, *d_scores.named().values()):
        assert np.isfinite(value).all()
    assert all(np.isfinite(node.get_param(name)).all() for node in pipe.model.walk()
               for name in node.param_names if node.has_param(name))


def test_fully_annotated_batches_within_the_kept_pairs_need_no_viterbi_pass(monkeypatch):
    """The check costs no pass where every gold label is known (the pairs say it)."""
    structure = get_structure("chain_order2")
    scores, layout = problem(0)

    def refuse(*args, **kwargs):
        raise AssertionError("a Viterbi pass")

    monkeypatch.setattr(type(structure), "viterbi", refuse)
    gold = np.asarray([0, 1, 0, 1, 1, 0, 0, 2, 0])
    assert structure.unreachable_gold(scores, layout, gold).tolist() == [False, False, False]
    gold[1] = 2
    assert structure.unreachable_gold(scores, layout, gold).tolist() == [True, False, False]
