"""The zeroth-order CRF (``spacy-crf.Independent.v1``): kernels against brute-force
enumeration and finite differences, and the component end to end."""


import numpy as np
import pytest
import spacy

from conftest import fit_ewt_sample, toy_examples, train
from finite_differences import central_difference
from kernels.oracle import all_labellings, assert_sequence_matches_enumeration
from spacy_crf import inference
from spacy_crf.models.potentials import CRFScores
from spacy_crf.structures import ChainLayout
from spacy_crf.structures.independent import IndependentLayout

BLOCK = {"@structures": "spacy-crf.Independent.v1"}


def random_problem(rng, lengths, L, forbid=0.0):
    N = int(sum(lengths))
    emissions = rng.normal(scale=2.0, size=(N, L))
    if forbid:
        emissions[rng.random((N, L)) < forbid] = -np.inf
        emissions[np.arange(N), rng.integers(0, L, N)] = rng.normal(size=N)  # one allowed
    L_zero = np.zeros((L, L))
    scores = CRFScores.of(emissions, transitions=L_zero, start=np.zeros(L), end=np.zeros(L),
                          pair=np.zeros((1, L, L)), root=np.zeros(L))
    return scores, IndependentLayout(np.asarray(lengths))


def enumerate_sequence(emissions, fixed):
    """Scores of every labelling of one sequence that honours ``fixed``."""
    n, L = emissions.shape
    paths = all_labellings(n, L)
    keep = np.all((fixed < 0) | (paths == fixed), axis=1)
    paths = paths[keep]
    return paths, emissions[np.arange(n), paths].sum(axis=1)


@pytest.mark.parametrize("seed", range(12))
def test_log_z_marginals_and_map_against_enumeration(seed):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 5, size=rng.integers(1, 4))
    L = int(rng.integers(2, 4))
    scores, layout = random_problem(rng, lengths, L, forbid=0.3 if seed % 2 else 0.0)
    N = layout.n_tokens
    fixed = np.where(rng.random(N) < 0.25, rng.integers(0, L, N), -1)
    fixed[fixed >= 0] = np.where(np.isfinite(scores.emissions[np.arange(N), fixed]),
                                 fixed, -1)[fixed >= 0]
    probs, log_z = inference.marginals(scores, layout, fixed)
    labels, best = inference.viterbi(scores, layout, fixed)
    start = 0
    for s, n in enumerate(lengths):
        rows = slice(start, start + n)
        paths, totals = enumerate_sequence(scores.emissions[rows], fixed[rows])
        assert_sequence_matches_enumeration(paths, totals, probs[rows], log_z[s], best[s],
                                            labels[rows])
        start += n


@pytest.mark.parametrize("seed", range(6))
def test_it_is_a_chain_with_no_label_interactions(seed):
    rng = np.random.default_rng(100 + seed)
    lengths = rng.integers(1, 7, size=3)
    scores, layout = random_problem(rng, lengths, 4)
    gold = np.where(rng.random(layout.n_tokens) < 0.3, -1, rng.integers(0, 4, layout.n_tokens))
    chain = ChainLayout(layout.lengths)
    for ours, theirs in zip(inference.marginals(scores, layout), inference.marginals(scores, chain)):
        np.testing.assert_allclose(ours, theirs, atol=1e-9)
    nll, grad = inference.nll_and_gradient(scores, layout, gold)
    chain_nll, chain_grad = inference.nll_and_gradient(scores, chain, gold)
    np.testing.assert_allclose(nll, chain_nll, atol=1e-9)
    np.testing.assert_allclose(grad.emissions, chain_grad.emissions, atol=1e-9)


def test_nll_gradient_against_finite_differences():
    rng = np.random.default_rng(7)
    scores, layout = random_problem(rng, [3, 1, 4], 3)
    gold = np.array([0, -1, 2, 1, 2, -1, 0, 1])
    _, grad = inference.nll_and_gradient(scores, layout, gold)
    numeric = central_difference(
        lambda: float(inference.nll_and_gradient(scores, layout, gold)[0].sum()), scores.emissions)
    np.testing.assert_allclose(grad.emissions, numeric, atol=1e-5)


@pytest.mark.parametrize("loss", ["nll", "perceptron"])
def test_the_component_trains_saves_and_loads_with_it(loss, tmp_path):
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"structure": BLOCK, "store_confidence": True,
                                       "loss": loss})
    examples = toy_examples(nlp, "tag")
    train(nlp, examples, 30, learn_rate=0.05)
    predicted = nlp.evaluate(examples)["tag_acc"]
    assert predicted == 1.0
    doc = nlp("the big dog sat on a box .")
    assert all(0.0 < t._.crf_confidence <= 1.0 for t in doc)
    nlp.to_disk(tmp_path / "p")
    again = spacy.load(tmp_path / "p")
    assert again.get_pipe("crf_tagger").crf_structure.name == "independent"
    assert [t.tag_ for t in again("the big dog sat on a box .")] == [t.tag_ for t in doc]


@pytest.mark.parametrize("config, code", [
    # a span scheme needs the moves between tags; E018 names this structure
    # (it spoke of "the tree structures")
    ({"target": "ents"}, "E018.*structure 'independent' does not apply"),
    ({"n_best": 2}, "E019"),
])
def test_what_it_does_not_do_is_named(config, code):
    with pytest.raises(ValueError, match=code):
        spacy.blank("en").add_pipe("crf_tagger", config={"structure": BLOCK, **config})


def test_the_batch_trainer_fits_it_from_a_config(tmp_path):
    """``python -m spacy_crf.fit`` with the block as a config override: the
    base class's shard likelihood serves it as every structure."""
    nlp, accuracy = fit_ewt_sample(tmp_path, BLOCK)
    assert nlp.get_pipe("crf_tagger").crf_structure.name == "independent"
    assert accuracy > 0.7
