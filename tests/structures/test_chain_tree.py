"""structure = "chain_tree": a chain CRF and a tree CRF, each with emissions of its own.

Checked against brute-force enumeration of every labelling of small random docs
(each split into sentences for the chain, a random forest for the tree): the
product of the two CRFs' token marginals, the decoding, the summed negative
log-likelihood (full and partial gold) and its gradient by finite differences,
and the labelling counts; then the component trains with it, saves and loads.
"""

import itertools

import numpy as np
import pytest
import spacy
from spacy.tokens import Doc
from spacy.training import Example

from finite_differences import assert_counts_are_path_score_gradient, central_difference
from kernels.oracle import logsumexp
from spacy_crf import inference
from spacy_crf._kernels.tree import check_forest
from spacy_crf.models.potentials import CRFScores
from spacy_crf.structures import ChainLayout, TreeLayout
from spacy_crf.structures.chain_tree import ChainTreeLayout, product_of_marginals
from conftest import FROM_INITIALIZE, train

SEEDS = range(8)


def random_problem(seed: int, L: int = 3, R: int = 2):
    """Docs of 1..4 tokens, each cut into one or two chain sequences (sentences),
    with a random forest per doc; random scores."""
    rng = np.random.default_rng(seed)
    doc_lengths = rng.integers(1, 5, size=rng.integers(1, 4))
    chain_lengths, heads = [], []
    offset = 0
    for n in doc_lengths:
        cut = int(rng.integers(1, n)) if n > 1 and rng.random() < 0.5 else n
        chain_lengths += [cut, n - cut] if cut < n else [n]
        for t in range(n):
            # a random forest: each token's head comes before it in a random order
            heads.append(-1 if t == 0 or rng.random() < 0.25 else offset + int(rng.integers(0, t)))
        offset += n
    perm_heads = np.asarray(heads, dtype=np.int64)
    N = int(doc_lengths.sum())
    order = np.full(N, -3, dtype=np.int64)
    assert check_forest(perm_heads, np.asarray(doc_lengths, dtype=np.int64), order) == 0
    relations = rng.integers(0, R, size=N).astype(np.int64)
    tree = TreeLayout(doc_lengths, perm_heads, order, relations)
    layout = ChainTreeLayout(doc_lengths, ChainLayout(np.asarray(chain_lengths)), tree)
    # the chain's emissions, then the tree's
    scores = CRFScores.of(rng.normal(size=(N, 2 * L)), transitions=rng.normal(size=(L, L)),
                          start=rng.normal(size=L), end=rng.normal(size=L),
                          pair=rng.normal(size=(R, L, L)), root=rng.normal(size=L))
    return scores, layout, rng


def chain_score(scores, layout, o, n, ys):
    """Score of ``ys`` (the doc at row ``o``) under the chain: its sentences' paths."""
    total = 0.0
    starts = np.cumsum(layout.chain.lengths) - layout.chain.lengths
    for start, m in zip(starts, layout.chain.lengths):
        if m == 0 or not o <= start < o + n:
            continue
        part = ys[start - o:start - o + m]
        total += scores.start[part[0]] + scores.end[part[-1]]
        total += sum(scores.emissions[start + i, y] for i, y in enumerate(part))
        total += sum(scores.transitions[a, b] for a, b in zip(part[:-1], part[1:]))
    return total


def tree_score(scores, layout, o, ys):
    tree, L = layout.tree, scores.n_labels
    total = 0.0
    for i, y in enumerate(ys):
        t = o + i
        total += scores.emissions[t, L + y]
        h = tree.heads[t]
        total += scores.root[y] if h < 0 else scores.pair[tree.relations[t], y, ys[h - o]]
    return total


def enumerate_doc(scores, layout, o, n, allowed=None):
    """Every labelling of the doc at row ``o`` with its chain and tree scores."""
    L = scores.n_labels
    ys = [y for y in itertools.product(range(L), repeat=n)
          if allowed is None or all(a < 0 or a == b for a, b in zip(allowed, y))]
    chain = np.array([chain_score(scores, layout, o, n, y) for y in ys])
    tree = np.array([tree_score(scores, layout, o, y) for y in ys])
    return np.asarray(ys), chain, tree



def brute(scores, layout, fixed=None):
    N, L = scores.emissions.shape[0], scores.n_labels
    marg = np.zeros((N, L))
    log_z = np.zeros(layout.n_sequences)
    o = 0
    for d, n in enumerate(layout.lengths):
        ys, chain, tree = enumerate_doc(scores, layout, o, n, None if fixed is None
                                        else fixed[o:o + n])
        pc, pt = np.exp(chain - logsumexp(chain)), np.exp(tree - logsumexp(tree))
        for i in range(n):
            mc = np.bincount(ys[:, i], weights=pc, minlength=L)
            mt = np.bincount(ys[:, i], weights=pt, minlength=L)
            marg[o + i] = mc * mt / (mc * mt).sum()
        log_z[d] = logsumexp(chain) + logsumexp(tree)
        o += n
    return marg, log_z


def brute_nll(scores, layout, gold):
    nll = np.zeros(layout.n_sequences)
    o = 0
    for d, n in enumerate(layout.lengths):
        _, chain, tree = enumerate_doc(scores, layout, o, n)
        _, chain_gold, tree_gold = enumerate_doc(scores, layout, o, n, gold[o:o + n])
        nll[d] = (logsumexp(chain) - logsumexp(chain_gold)) + (logsumexp(tree) - logsumexp(tree_gold))
        o += n
    return nll


@pytest.mark.parametrize("seed", SEEDS)
def test_marginals_are_the_product_of_the_chain_and_tree_marginals(seed):
    scores, layout, rng = random_problem(seed)
    got, log_z = inference.marginals(scores, layout)
    want, want_log_z = brute(scores, layout)
    np.testing.assert_allclose(got, want, atol=1e-9)
    np.testing.assert_allclose(log_z, want_log_z, atol=1e-9)
    labels, best = inference.viterbi(scores, layout)
    np.testing.assert_array_equal(labels, want.argmax(axis=1))
    doc = np.repeat(np.arange(layout.n_sequences), layout.lengths)
    np.testing.assert_allclose(best, np.bincount(doc, np.log(want.max(axis=1))), atol=1e-9)


@pytest.mark.parametrize("seed", SEEDS)
def test_fixed_labels_hold_in_both_crfs(seed):
    scores, layout, rng = random_problem(seed)
    N, L = scores.emissions.shape[0], scores.n_labels
    fixed = np.where(rng.random(N) < 0.4, rng.integers(0, L, size=N), -1).astype(np.int64)
    got, log_z = inference.marginals(scores, layout, fixed)
    want, want_log_z = brute(scores, layout, fixed)
    np.testing.assert_allclose(got, want, atol=1e-9)
    np.testing.assert_allclose(log_z, want_log_z, atol=1e-9)
    labels, _ = inference.viterbi(scores, layout, fixed)
    assert np.all((fixed < 0) | (labels == fixed))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("partial", [False, True], ids=["full", "partial"])
def test_nll_is_the_sum_of_both_and_its_gradient_matches_finite_differences(seed, partial):
    scores, layout, rng = random_problem(seed)
    N, L = scores.emissions.shape[0], scores.n_labels
    gold = rng.integers(0, L, size=N).astype(np.int64)
    if partial:
        gold[rng.random(N) < 0.5] = -1
    nll, grad = inference.nll_and_gradient(scores, layout, gold)
    np.testing.assert_allclose(nll, brute_nll(scores, layout, gold), atol=1e-9)
    for name in ("emissions", "transitions", "start", "end", "pair", "root"):
        value = getattr(scores, name)
        numeric = central_difference(
            lambda: float(inference.nll_and_gradient(scores, layout, gold)[0].sum()), value)
        np.testing.assert_allclose(getattr(grad, name), numeric, atol=1e-5, err_msg=name)


@pytest.mark.parametrize("seed", SEEDS)
def test_labelling_counts_are_the_gradient_of_both_path_scores(seed):
    scores, layout, rng = random_problem(seed)
    N, L = scores.emissions.shape[0], scores.n_labels
    labels = rng.integers(0, L, size=N).astype(np.int64)
    weights = rng.normal(size=layout.n_sequences)
    assert_counts_are_path_score_gradient(
        scores, layout, labels, weights, ("emissions", "transitions", "start", "end", "pair", "root"),
        lambda o, ys: chain_score(scores, layout, o, len(ys), ys) + tree_score(scores, layout, o, ys))


def test_product_of_marginals_falls_back_where_nothing_is_shared():
    first = np.array([[1.0, 0.0], [0.25, 0.75]])
    second = np.array([[0.0, 1.0], [0.5, 0.5]])
    np.testing.assert_allclose(product_of_marginals(first, second), [[0.5, 0.5], [0.25, 0.75]])


# -- the component -----------------------------------------------------------------

WORDS = [("the", "DET"), ("a", "DET"), ("dog", "NOUN"), ("cat", "NOUN"), ("runs", "VERB"),
         ("sleeps", "VERB"), ("fast", "ADV"), ("here", "ADV")]


def parsed_examples(vocab, n=40, seed=0):
    """DET NOUN VERB ADV sentences, the verb the root, the noun its subject."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        words = [WORDS[rng.integers(0, 2)], WORDS[rng.integers(2, 4)], WORDS[rng.integers(4, 6)],
                 WORDS[rng.integers(6, 8)]]
        doc = Doc(vocab, words=[w for w, _ in words], heads=[1, 2, 2, 2],
                  deps=["det", "nsubj", "ROOT", "advmod"], pos=[p for _, p in words])
        predicted = Doc(vocab, words=[w for w, _ in words], heads=[1, 2, 2, 2],
                        deps=["det", "nsubj", "ROOT", "advmod"])
        out.append(Example(predicted, doc))
    return out


def test_component_trains_saves_and_loads(tmp_path):
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"target": "pos", "structure": "chain_tree",
                                       "store_confidence": True})
    examples = parsed_examples(nlp.vocab)
    train(nlp, examples, 15, optimizer=FROM_INITIALIZE)
    docs = [eg.predicted.copy() for eg in examples[:10]]
    docs = list(nlp.get_pipe("crf_tagger").pipe(docs))
    assert [t.pos_ for d in docs for t in d] == [t.pos_ for eg in examples[:10] for t in eg.reference]
    confidence = [t._.crf_confidence for d in docs for t in d]
    assert all(0.5 < c <= 1.0 for c in confidence)
    nlp.to_disk(tmp_path / "model")
    loaded = spacy.load(tmp_path / "model")
    again = list(loaded.get_pipe("crf_tagger").pipe([eg.predicted.copy() for eg in examples[:10]]))
    assert [t.pos_ for d in again for t in d] == [t.pos_ for d in docs for t in d]
    assert [t._.crf_confidence for d in again for t in d] == pytest.approx(confidence)


def test_component_errors():
    nlp = spacy.blank("en")
    with pytest.raises(ValueError, match="E113"):
        nlp.add_pipe("crf_tagger", config={"target": "pos", "structure": "chain_tree",
                                           "loss": "perceptron"})
    with pytest.raises(ValueError, match="E018.*structure 'chain_tree'"):
        nlp.add_pipe("crf_tagger", name="ner_crf", config={"target": "ents",
                                                           "structure": "chain_tree"})
    nlp.add_pipe("crf_tagger", config={"target": "pos", "structure": "chain_tree"})
    examples = parsed_examples(nlp.vocab, n=5)
    nlp.initialize(lambda: examples)
    # E015 names the structure the config names (it said "tree")
    with pytest.raises(ValueError, match=r"E015.*structure = \"chain_tree\""):
        nlp("the dog runs fast")  # no parse


def test_the_chain_reads_the_words_and_the_tree_reads_the_parse():
    from spacy_crf.models.experts import is_two_experts

    nlp = spacy.blank("en")
    pipe = nlp.add_pipe("crf_tagger", config={"target": "pos", "structure": "chain_tree"})
    assert is_two_experts(pipe.model)
    chain_model, tree_model = pipe.model.layers
    templates = [node.attrs["templates"] for model in (chain_model, tree_model)
                 for node in model.walk() if "templates" in node.attrs]
    assert not templates[0].uses_tree and not templates[0].reads("DEP")
    assert templates[1].uses_tree and set(templates[0].names) < set(templates[1].names)


def test_models_chain_tree_cannot_split_get_clear_errors(tmp_path):
    nlp = spacy.blank("en")
    neural = {"@architectures": "spacy-crf.NeuralCRF.v1",
              "tok2vec": {"@architectures": "spacy.HashEmbedCNN.v2", "width": 16, "depth": 1,
                          "embed_size": 100, "window_size": 1, "maxout_pieces": 2,
                          "subword_features": False, "pretrained_vectors": None}}
    with pytest.raises(ValueError, match="E115.*neural_crf"):
        nlp.add_pipe("crf_tagger", config={"target": "pos", "structure": "chain_tree",
                                           "model": neural})
    only_tree = {"@architectures": "spacy-crf.FeatureCRF.v2", "templates": ["head:NORM", "DEP"]}
    with pytest.raises(ValueError, match="E114"):
        nlp.add_pipe("crf_tagger", config={"target": "pos", "structure": "chain_tree",
                                           "model": only_tree})
    assert "crf_tagger" not in nlp.pipe_names


def test_the_batch_trainer_names_spacy_train_for_chain_tree():
    from spacy_crf.training.fit import _not_fittable

    nlp = spacy.blank("en")
    pipe = nlp.add_pipe("crf_tagger", config={"target": "pos", "structure": "chain_tree"})
    assert "E116" in str(_not_fittable(pipe))


# -- the experts as an architecture (issue #50) ------------------------------------------

EXPERTS = "spacy-crf.ChainTreeExperts.v1"


def test_the_kept_config_names_the_experts_architecture_and_builds_that_model(tmp_path):
    """``structure = "chain_tree"`` with the factory's FeatureCRF: the config the
    pipeline keeps (and saves) has the FeatureCRF inside the experts'
    architecture, and a pipeline built from that config is the same model,
    loading the trained weights and predicting the same."""
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"target": "pos", "structure": "chain_tree"})
    model_block = nlp.config["components"]["crf_tagger"]["model"]
    assert model_block["@architectures"] == EXPERTS
    assert model_block["crf"]["@architectures"] == "spacy-crf.FeatureCRF.v2"
    examples = parsed_examples(nlp.vocab)
    optimizer = nlp.initialize(lambda: examples)
    for _ in range(5):
        nlp.update(examples, sgd=optimizer)
    nlp.to_disk(tmp_path / "model")
    saved = spacy.util.load_config(tmp_path / "model" / "config.cfg", interpolate=False)
    assert saved["components"]["crf_tagger"]["model"]["@architectures"] == EXPERTS
    loaded = spacy.load(tmp_path / "model")
    assert loaded.config["components"]["crf_tagger"]["model"] == model_block

    def tagged(pipeline):
        docs = pipeline.get_pipe("crf_tagger").pipe([eg.predicted.copy() for eg in examples[:8]])
        return [t.pos_ for d in docs for t in d]

    assert tagged(loaded) == tagged(nlp)
    # the config written with the architecture builds the same shape of model
    rebuilt = spacy.util.load_model_from_config(saved, auto_fill=True, validate=True)
    rebuilt.get_pipe("crf_tagger").from_bytes(nlp.get_pipe("crf_tagger").to_bytes())
    assert tagged(rebuilt) == tagged(nlp)


def test_the_experts_architecture_belongs_to_chain_tree_alone():
    nlp = spacy.blank("en")
    experts = {"@architectures": EXPERTS,
               "crf": {"@architectures": "spacy-crf.FeatureCRF.v2", "templates": ["NORM"]}}
    pipe = nlp.add_pipe("crf_tagger", config={"target": "pos", "structure": "chain_tree",
                                              "model": experts})
    assert pipe.crf_structure.name == "chain_tree"
    assert nlp.config["components"]["crf_tagger"]["model"]["@architectures"] == EXPERTS
    # the fix it names is the structure the model scores, not the chain the user has
    with pytest.raises(ValueError, match=r"E103.*Use structure = \"chain_tree\" with it"):
        nlp.add_pipe("crf_tagger", name="chain", config={"target": "pos", "model": experts})
    neural = {"@architectures": EXPERTS, "crf": {"@architectures": "spacy-crf.HMM.v1"}}
    with pytest.raises(ValueError, match="E115"):
        nlp.add_pipe("crf_tagger", name="hmm", config={"target": "pos",
                                                       "structure": "chain_tree",
                                                       "model": neural})


def test_a_pickled_chain_tree_component_predicts_the_same():
    import pickle

    nlp = spacy.blank("en")
    pipe = nlp.add_pipe("crf_tagger", config={"target": "pos", "structure": "chain_tree",
                                              "store_confidence": True})
    examples = parsed_examples(nlp.vocab)
    optimizer = nlp.initialize(lambda: examples)
    for _ in range(5):
        nlp.update(examples, sgd=optimizer)
    copy = pickle.loads(pickle.dumps(pipe))
    assert len(copy.model.layers) == 2
    docs = [eg.predicted.copy() for eg in examples[:8]]
    first = [(t.pos_, t._.crf_confidence) for d in pipe.pipe([d.copy() for d in docs]) for t in d]
    second = [(t.pos_, t._.crf_confidence) for d in copy.pipe(docs) for t in d]
    assert first == second
