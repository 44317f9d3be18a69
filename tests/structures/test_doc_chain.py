"""The doc chain (``spacy-crf.DocChain.v1``): a chain over each doc whose moves
across sentence boundaries have a transition matrix of their own.

Its kernels are the tree's (a path with two relation groups); checked here
against enumeration of every labelling of small random docs (log Z, token
marginals, MAP and its score, with fixed labels), finite differences of the
likelihood, the counts of a labelling against its score, the chain it is
without boundaries, and as a component: it learns a label that only the
previous sentence decides, which a chain over sentences cannot.
"""

import numpy as np
import pytest
import spacy
from spacy.tokens import Doc
from spacy.training import Example

from conftest import fit_ewt_sample, train
from finite_differences import assert_counts_are_path_score_gradient, central_difference
from kernels.oracle import all_labellings, logsumexp
from spacy_crf import inference
from spacy_crf.models.potentials import CRFScores
from spacy_crf.structures import ChainLayout
from spacy_crf.structures.doc_chain import ACROSS, DocChainLayout

BLOCK = {"@structures": "spacy-crf.DocChain.v1"}
SEEDS = range(8)


def random_problem(seed, L=3):
    """Docs of 0..5 tokens cut into random sentences, random scores."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 6, size=3)
    lengths[0] = max(lengths[0], 2)
    N = int(lengths.sum())
    crossing = np.zeros(N, dtype=np.int64)
    o = 0
    for n in lengths:
        for t in range(o + 1, o + n):
            crossing[t] = ACROSS if rng.random() < 0.4 else 0
        o += n
    scores = CRFScores.of(rng.normal(size=(N, L)), transitions=rng.normal(size=(L, L)),
                          boundary=rng.normal(size=(L, L)), start=rng.normal(size=L),
                          end=rng.normal(size=L))
    return scores, DocChainLayout(lengths, crossing), rng


def path_score(scores, layout, o, ys):
    """The score of labels ``ys`` of the doc starting at row ``o``."""
    if not len(ys):
        return 0.0
    s = scores.start[ys[0]] + scores.end[ys[-1]]
    for i, y in enumerate(ys):
        s += scores.emissions[o + i, y]
        if i:
            moves = scores.boundary if layout.crossing[o + i] == ACROSS else scores.transitions
            s += moves[ys[i - 1], y]
    return s


def brute(scores, layout, fixed):
    """Per doc: log Z, marginals, best labelling and its score, by enumeration."""
    L = scores.emissions.shape[1]
    log_z, best, labels = [], [], np.zeros(layout.n_tokens, dtype=np.int64)
    marginals = np.zeros(scores.emissions.shape)
    o = 0
    for n in layout.lengths:
        if n == 0:
            log_z.append(0.0)
            best.append(0.0)
            continue
        ok = [ys for ys in all_labellings(n, L)
              if all(fixed[o + i] < 0 or fixed[o + i] == y for i, y in enumerate(ys))]
        values = np.array([path_score(scores, layout, o, ys) for ys in ok])
        z = logsumexp(values)
        log_z.append(z)
        for ys, v in zip(ok, values):
            marginals[o + np.arange(n), ys] += np.exp(v - z)
        k = int(np.argmax(values))
        best.append(values[k])
        labels[o:o + n] = ok[k]
        o += n
    return np.array(log_z), marginals, labels, np.array(best)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("with_fixed", [False, True])
def test_log_z_marginals_and_map_against_enumeration(seed, with_fixed):
    scores, layout, rng = random_problem(seed)
    fixed = np.full(layout.n_tokens, -1, dtype=np.int64)
    if with_fixed:
        chosen = rng.random(layout.n_tokens) < 0.3
        fixed[chosen] = rng.integers(0, 3, size=int(chosen.sum()))
    log_z, marginals, labels, best = brute(scores, layout, fixed)
    got_marginals, got_log_z = inference.marginals(scores, layout, fixed)
    np.testing.assert_allclose(got_log_z, log_z, atol=1e-9)
    np.testing.assert_allclose(got_marginals, marginals, atol=1e-9)
    got_labels, got_best = inference.viterbi(scores, layout, fixed)
    np.testing.assert_allclose(got_best, best, atol=1e-9)
    np.testing.assert_array_equal(got_labels, labels)


@pytest.mark.parametrize("seed", SEEDS[:4])
def test_nll_and_its_gradient(seed):
    scores, layout, rng = random_problem(seed)
    gold = rng.integers(0, 3, size=layout.n_tokens)
    gold[rng.random(layout.n_tokens) < 0.3] = -1  # partly annotated: marginalised
    nll, grad = inference.nll_and_gradient(scores, layout, gold)
    log_z, _, _, _ = brute(scores, layout, np.full(layout.n_tokens, -1))
    log_z_gold, _, _, _ = brute(scores, layout, gold)
    np.testing.assert_allclose(nll, log_z - log_z_gold, atol=1e-9)
    total = lambda: float(inference.nll_and_gradient(scores, layout, gold)[0].sum())  # noqa: E731
    for name in ("emissions", "transitions", "boundary", "start", "end"):
        np.testing.assert_allclose(getattr(grad, name), central_difference(
            total, getattr(scores, name)), atol=1e-5, err_msg=name)


@pytest.mark.parametrize("seed", SEEDS[:4])
def test_labelling_counts_are_the_gradient_of_the_path_score(seed):
    scores, layout, rng = random_problem(seed)
    labels = rng.integers(0, 3, size=layout.n_tokens)
    weights = rng.normal(size=layout.n_sequences)
    assert_counts_are_path_score_gradient(
        scores, layout, labels, weights, ("emissions", "transitions", "boundary", "start", "end"),
        lambda o, ys: path_score(scores, layout, o, ys))


@pytest.mark.parametrize("seed", SEEDS[:4])
def test_without_boundaries_it_is_the_chain_over_each_doc(seed):
    scores, layout, _ = random_problem(seed)
    flat = DocChainLayout(layout.lengths, np.zeros(layout.n_tokens, dtype=np.int64))
    chain = ChainLayout(layout.lengths)
    for a, b in zip(inference.marginals(scores, flat), inference.marginals(scores, chain)):
        np.testing.assert_allclose(a, b, atol=1e-9)
    np.testing.assert_array_equal(inference.viterbi(scores, flat)[0],
                                  inference.viterbi(scores, chain)[0])


# ------------------------------------------------------------------ the component

def two_sentence_docs(vocab, gold=False):
    """``a w`` / ``b w``, each word a sentence: ``w``'s tag is its previous
    sentence's, which no feature of ``w``'s own sentence can tell."""
    out = []
    for first, tag in (("a", "A"), ("b", "B")):
        out.append(Doc(vocab, words=[first, "w"], sent_starts=[True, True],
                       tags=[tag, tag] if gold else None))
    return out


def trained(structure, loss="nll"):
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={
        "target": "tag", "structure": structure, "sequence": "sentence", "loss": loss,
        "store_confidence": True,
        "model": {"@architectures": "spacy-crf.FeatureCRF.v2", "templates": ["NORM[-1..1]"],
                  "n_buckets": 1024, "cluster_templates": None, "boost_updates": 0}})
    examples = [Example(p, g) for p, g in zip(two_sentence_docs(nlp.vocab),
                                              two_sentence_docs(nlp.vocab, gold=True))]
    train(nlp, examples, 40)
    return nlp


@pytest.mark.parametrize("loss", ["nll", "perceptron"])
def test_it_learns_what_only_the_previous_sentence_tells(loss, tmp_path):
    nlp = trained(BLOCK, loss)
    tags = [[t.tag_ for t in nlp(doc)] for doc in two_sentence_docs(nlp.vocab)]
    assert tags == [["A", "A"], ["B", "B"]]
    # a chain over sentences sees nothing of the previous one: one of the two is wrong
    sentences = trained({"@structures": "spacy-crf.Chain.v1", "order": 1}, loss)
    assert [[t.tag_ for t in sentences(doc)] for doc in two_sentence_docs(nlp.vocab)] != tags
    nlp.to_disk(tmp_path / "p")
    again = spacy.load(tmp_path / "p")
    assert again.get_pipe("crf_tagger").crf_structure.name == "doc_chain"
    for doc in two_sentence_docs(nlp.vocab):
        a, b = nlp(doc.copy()), again(Doc(again.vocab, words=[t.text for t in doc],
                                          sent_starts=[True, True]))
        assert [t.tag_ for t in a] == [t.tag_ for t in b]
        assert [t._.crf_confidence for t in a] == [t._.crf_confidence for t in b]


@pytest.mark.parametrize("config, code", [
    ({"target": "ents"}, "E018"),
    ({"n_best": 2}, "E019"),
])
def test_what_it_does_not_do_is_named(config, code):
    with pytest.raises(ValueError, match=code):
        spacy.blank("en").add_pipe("crf_tagger", config={"structure": BLOCK, **config})


def test_the_batch_trainer_fits_it_from_a_config(tmp_path):
    """``python -m spacy_crf.fit``: the base class's shard likelihood serves it."""
    nlp, accuracy = fit_ewt_sample(tmp_path, BLOCK)
    assert nlp.get_pipe("crf_tagger").crf_structure.name == "doc_chain"
    assert accuracy > 0.7
