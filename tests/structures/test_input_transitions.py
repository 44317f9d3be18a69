"""Input-dependent transitions (``transition_templates``, structure ``chain_input``):
log Z, marginals, Viterbi, fixed labels and the likelihood against enumeration,
gradients against finite differences, and the component end to end."""

import numpy as np
import pytest
import spacy
from spacy.tokens import Doc
from spacy.training import Example

from finite_differences import assert_counts_are_path_score_gradient, central_difference
from kernels.oracle import enumerate_sequences, labellings
from spacy_crf import inference
from spacy_crf.models.potentials import CRFScores
from spacy_crf.structures import ChainLayout, get_structure
from spacy_crf.structures.input_chain import InputChainLayout
from confection import ConfigValidationError

from conftest import FROM_INITIALIZE, ROOT, ewt_sample_corpus, spacy_train, train
SEEDS = list(range(8))
TRANSITION_TEMPLATES = ["NORM[-1]|NORM[0]", "SHAPE[-1]|SHAPE[0]"]



def problem(seed, L=3):
    rng = np.random.default_rng(seed)
    lengths = np.asarray([1, 2, 3, 4][: int(rng.integers(1, 5))])
    rng.shuffle(lengths)
    N = int(lengths.sum())
    scores = CRFScores.of(rng.normal(size=(N, L)), transitions=rng.normal(size=(L, L)),
                          start=rng.normal(size=L), end=rng.normal(size=L),
                          pair=np.zeros((1, L, L)), root=np.zeros(L),
                          token_transitions=rng.normal(size=(N, L, L)))
    return scores, InputChainLayout(lengths), rng


def path_score(scores, o, ys):
    total = scores.start[ys[0]] + scores.end[ys[-1]]
    for t, y in enumerate(ys):
        total += scores.emissions[o + t, y]
        if t:
            total += scores.transitions[ys[t - 1], y] + scores.token_transitions[o + t, ys[t - 1], y]
    return total


def brute(scores, layout, fixed=None):
    return enumerate_sequences(layout.lengths, scores.emissions.shape[1],
                               lambda o, ys: path_score(scores, o, ys), fixed)


@pytest.mark.parametrize("seed", SEEDS)
def test_log_z_marginals_and_viterbi_match_brute_force(seed):
    scores, layout, rng = problem(seed)
    fixed = np.where(rng.random(layout.n_tokens) < 0.3,
                     rng.integers(0, 3, size=layout.n_tokens), -1)
    for f in (None, fixed):
        expected = brute(scores, layout, f)
        marginals, log_z = inference.marginals(scores, layout, f)
        labels, best = inference.viterbi(scores, layout, f)
        np.testing.assert_allclose(log_z, [e[0] for e in expected], atol=1e-9)
        np.testing.assert_allclose(marginals, np.concatenate([e[1] for e in expected]), atol=1e-9)
        np.testing.assert_allclose(best, [e[2] for e in expected], atol=1e-9)
        assert labels.tolist() == [y for e in expected for y in e[3]]


@pytest.mark.parametrize("seed", SEEDS[:5])
def test_nll_matches_brute_force_and_its_gradient_finite_differences(seed):
    scores, layout, rng = problem(seed, L=2)
    gold, _ = inference.viterbi(scores, layout)
    gold = np.where(rng.random(layout.n_tokens) < 0.3, -1, rng.integers(0, 2, layout.n_tokens))
    nll, gradient = inference.nll_and_gradient(scores, layout, gold)
    expected = [f[0] - c[0] for f, c in zip(brute(scores, layout), brute(scores, layout, gold))]
    np.testing.assert_allclose(nll, expected, atol=1e-9)
    for name in ("emissions", "transitions", "start", "end", "token_transitions"):
        numeric = central_difference(
            lambda: inference.nll_and_gradient(scores, layout, gold)[0].sum(),
            getattr(scores, name))
        np.testing.assert_allclose(getattr(gradient, name), numeric, atol=1e-5, err_msg=name)


@pytest.mark.parametrize("seed", SEEDS[:3])
def test_zero_token_transitions_are_the_plain_chain(seed):
    scores, layout, rng = problem(seed)
    scores.token_transitions[...] = 0.0
    chain_layout = ChainLayout(layout.lengths)
    fixed = np.where(rng.random(layout.n_tokens) < 0.3, 1, -1)
    for got, want in zip(inference.marginals(scores, layout, fixed),
                         inference.marginals(scores, chain_layout, fixed)):
        np.testing.assert_allclose(got, want, atol=1e-9)
    assert (inference.viterbi(scores, layout)[0] == inference.viterbi(scores, chain_layout)[0]).all()


def test_labelling_counts_are_the_gradient_of_the_path_score():
    scores, layout, rng = problem(11)
    structure = get_structure("chain_input")
    labels = rng.integers(0, 3, size=layout.n_tokens)
    out = structure.zero_gradient(scores)
    weights = rng.random(layout.n_sequences)
    structure.labelling_counts(layout, labels, weights, out)
    total = lambda: sum(w * path_score(scores, start, labels[start:start + n])  # noqa: E731
                        for w, start, n in zip(weights, np.cumsum(layout.lengths) - layout.lengths,
                                               layout.lengths))
    for name in ("transitions", "start", "end", "token_transitions"):
        np.testing.assert_allclose(getattr(out, name), central_difference(total, getattr(scores, name)),
                                   atol=1e-6, err_msg=name)


# -- the component --------------------------------------------------------------

def model(**extra):
    return {"@architectures": "spacy-crf.FeatureCRF.v2", "templates": ["NORM", "SHAPE"],
            "n_buckets": 4096,
            # no word clusters: every "x" must look alike to the token features
            "cluster_templates": None, **extra}


def transitions(order=None, block="spacy-crf.Chain.v1", templates=TRANSITION_TEMPLATES):
    """A structure block with input-dependent transitions."""
    settings = {"order": order} if block == "spacy-crf.Chain.v1" else {}
    return {"@structures": block, **settings, "transition_templates": templates,
            "transition_buckets": 1024}


def alternation_examples(nlp):
    """"x" takes A after "to" and B after "of", and "to" and "of" share the label
    P: the label pair (P, A or B) depends on the word before, which a label
    bigram cannot see, nor emissions that read the token alone (as here)."""
    rows = [("to x of x".split(), ["P", "A", "P", "B"]), ("of x to x".split(), ["P", "B", "P", "A"]),
            ("to x".split(), ["P", "A"]), ("of x".split(), ["P", "B"])]
    return [Example.from_dict(Doc(nlp.vocab, words=w), {"tags": t}) for w, t in rows]


def test_transition_templates_learn_what_token_features_cannot(tmp_path):
    results = {}
    for name, structure in (("plain", transitions(templates=None)), ("input", transitions())):
        nlp = spacy.blank("en")
        nlp.add_pipe("crf_tagger", config={"target": "tag", "model": model(),
                                           "structure": structure})
        examples = alternation_examples(nlp)
        train(nlp, examples, 60, optimizer=FROM_INITIALIZE)
        doc = nlp(Doc(nlp.vocab, words="of x to x of x".split()))
        results[name] = [t.tag_ for t in doc]
        if name == "input":
            assert nlp.get_pipe("crf_tagger").crf_structure.name == "chain_input"
            nlp.to_disk(tmp_path / "m")
            loaded = spacy.load(tmp_path / "m")
            assert [t.tag_ for t in loaded(Doc(loaded.vocab, words="of x to x".split()))] == \
                ["P", "B", "P", "A"]
    assert results["input"] == ["P", "B", "P", "A", "P", "B"]
    # without them the "x" at 1 and the one at 3 (both between two P) look alike to
    # the chain and get the same tag, so one of them is wrong (the last "x" has the
    # end scores beside it and may differ)
    assert results["plain"][1] == results["plain"][3]
    assert results["plain"] != results["input"]


def test_gradient_reaches_the_transition_table():
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"target": "tag", "model": model(),
                                       "structure": transitions()})
    examples = alternation_examples(nlp)
    optimizer = nlp.initialize(lambda: examples)
    pair_layer = [node for node in nlp.get_pipe("crf_tagger").model.walk()
                  if node.attrs.get("crf_label_pair_sized")][0]
    L = len(nlp.get_pipe("crf_tagger").labels)
    assert pair_layer.get_dim("nO") == L * L
    nlp.update(examples, sgd=optimizer)
    assert np.abs(pair_layer.get_param("W")).sum() > 0


@pytest.mark.parametrize("loss", ["perceptron", "hinge"])
def test_margin_losses_train_with_transition_templates(loss):
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"target": "tag", "model": model(), "loss": loss,
                                       "structure": transitions()})
    examples = alternation_examples(nlp)
    train(nlp, examples, 30, optimizer=FROM_INITIALIZE)
    assert [t.tag_ for t in nlp(Doc(nlp.vocab, words="to x of x".split()))] == ["P", "A", "P", "B"]


@pytest.mark.parametrize("config, code", [
    # a model of the earlier release, which took them, under a structure without them
    ({"structure": "semi_markov", "target": "ents",
      "model": {"@architectures": "spacy-crf.FeatureCRF.v1", "templates": ["NORM"],
                "transition_templates": TRANSITION_TEMPLATES}}, "E105"),
    # a block without them cannot take them
    ({"structure": {"@structures": "spacy-crf.SemiMarkov.v1",
                    "transition_templates": TRANSITION_TEMPLATES}, "target": "ents"},
     "transition_templates"),
    ({"structure": transitions(order=3)}, "E094"),
    # transition_buckets is checked with or without templates, as the docs say
    ({"structure": {"@structures": "spacy-crf.Chain.v1", "transition_buckets": 0}}, "E005"),
    ({"structure": {"@structures": "spacy-crf.Tree.v1", "transition_buckets": -3}}, "E005"),
    ({"structure": transitions(), "n_best": 2}, "E019"),
    # (order 1: the default order for ents, 2, computes them with transition templates)
    ({"target": "ents", "store_confidence": True, "structure": transitions(order=1)}, "E096"),
])
def test_combinations_that_do_not_exist_are_named(config, code):
    with pytest.raises((ValueError, ConfigValidationError), match=code):
        spacy.blank("en").add_pipe("crf_tagger", config={"target": "tag", "model": model(),
                                                         **config})


def test_they_need_a_feature_crf():
    """Input-dependent transitions add a hashed table beside a FeatureCRF's own:
    another model is named (E183) rather than wrapped wrongly."""
    from spacy_crf.models.architectures import HMM
    from spacy_crf.models.token_transitions import add_token_transitions

    with pytest.raises(ValueError, match="E183"):
        add_token_transitions(HMM(64), ["NORM"], 64)
    with pytest.raises(ValueError, match="E183"):  # a pool of two experts (NeuralCRF.v3)
        spacy.blank("en").add_pipe("crf_tagger", config={
            "target": "tag", "structure": transitions(order=1),
            "model": {"@architectures": "spacy-crf.NeuralCRF.v3", "templates": ["NORM"],
                      "tok2vec": {"@architectures": "spacy.HashEmbedCNN.v2", "width": 8,
                                  "depth": 1, "embed_size": 64, "window_size": 1,
                                  "maxout_pieces": 2, "subword_features": False,
                                  "pretrained_vectors": None}}})


@pytest.mark.slow
def test_spacy_train_and_the_batch_trainer(tmp_path, capsys):
    from spacy_crf.commands.fit import main as fit_main

    ewt_sample_corpus(tmp_path, train=150, dev=150)
    config = ROOT / "configs" / "conll2000_chunking_transitions.cfg"
    paths = ["--paths.train", str(tmp_path / "train.spacy"), "--paths.dev", str(tmp_path / "dev.spacy")]
    spacy_train(config, tmp_path / "out", *paths, "--components.crf_tagger.target", "pos",
                "--training.max_epochs", "2", "--training.eval_frequency", "10",
                "--components.crf_tagger.model.n_buckets", "65536")
    nlp = spacy.load(tmp_path / "out" / "model-best")
    assert nlp.get_pipe("crf_tagger").crf_structure.name == "chain_input"
    assert nlp.meta["performance"]["pos_acc"] > 0.5
    capsys.readouterr()
    # python -m spacy_crf.fit, in process
    code = fit_main([str(config), *paths, "--components.crf_tagger.target", "pos"])
    out = capsys.readouterr()
    assert code != 0 and "E106" in out.err + out.out


def test_scores_without_token_transitions_are_named():
    scores, layout, _ = problem(1)
    scores.token_transitions = None
    with pytest.raises(ValueError, match="E107"):
        inference.marginals(scores, layout)


# -- order 2 with transition templates ---------------------------------------------

def order2_problem(seed, L=3, prune=False):
    from spacy_crf.structures.second_order import SecondOrderLayout, all_pairs

    scores, layout, rng = problem(seed, L)
    scores.triples = rng.normal(size=(L + 1, L, L))
    pairs = all_pairs(L)
    if prune:
        keep = rng.random(len(pairs)) < 0.67
        keep[int(rng.integers(L))] = True
        pairs = pairs[keep]
    return scores, SecondOrderLayout(layout.lengths, pairs), rng


def order2_score(scores, o, ys):
    L = scores.emissions.shape[1]
    total = path_score(scores, o, ys)
    for t in range(1, len(ys)):
        total += scores.triples[ys[t - 2] if t >= 2 else L, ys[t - 1], ys[t]]
    return total


def order2_brute(scores, layout, fixed=None):
    L = scores.emissions.shape[1]
    return enumerate_sequences(layout.lengths, L, lambda o, ys: order2_score(scores, o, ys), fixed,
                               lambda n: labellings(n, L, layout.pairs))


@pytest.mark.parametrize("prune", [False, True])
@pytest.mark.parametrize("seed", SEEDS[:5])
def test_order2_with_token_transitions_matches_brute_force(seed, prune):
    scores, layout, rng = order2_problem(seed, prune=prune)
    N, L = scores.emissions.shape
    fixed = np.where(rng.random(N) < 0.3, rng.integers(0, L, size=N), -1) if seed % 2 else None
    probs, log_z = inference.marginals(scores, layout, fixed)
    labels, best = inference.viterbi(scores, layout, fixed)
    o = 0
    for s, (bz, bm, bb, by) in enumerate(order2_brute(scores, layout, fixed)):
        n = layout.lengths[s]
        assert log_z[s] == pytest.approx(bz, rel=1e-9, abs=1e-9)
        if np.isfinite(bz):
            np.testing.assert_allclose(probs[o:o + n], bm, atol=1e-9)
            assert best[s] == pytest.approx(bb, rel=1e-9)
            assert tuple(labels[o:o + n]) == tuple(by)
        o += n


def check_gradient_and_counts(scores, layout, rng, brute, differentiated, counted, score_of):
    """NLL against enumeration (``brute``) with a third of the gold labels unknown,
    its gradient in every ``differentiated`` parameter against finite
    differences, and the labelling counts of the ``counted`` parameters as the
    gradient of the path score (``score_of(o, ys)`` of the sequence at row ``o``)."""
    N = scores.emissions.shape[0]
    gold, _ = inference.viterbi(scores, layout)
    gold = np.where(rng.random(N) < 0.3, -1, gold)
    nll, gradient = inference.nll_and_gradient(scores, layout, gold)
    free, clamped = brute(scores, layout), brute(scores, layout, gold)
    np.testing.assert_allclose(nll, [f[0] - c[0] for f, c in zip(free, clamped)], atol=1e-9)
    for name in differentiated:
        expected = central_difference(
            lambda: inference.nll_and_gradient(scores, layout, gold)[0].sum(), getattr(scores, name))
        np.testing.assert_allclose(getattr(gradient, name), expected, atol=1e-5, err_msg=name)
    assert_counts_are_path_score_gradient(scores, layout, gold.clip(0), np.ones(len(layout.lengths)),
                                          counted, score_of)


@pytest.mark.parametrize("seed", SEEDS[:3])
def test_order2_with_token_transitions_gradient_and_counts(seed):
    scores, layout, rng = order2_problem(seed, L=2)
    check_gradient_and_counts(
        scores, layout, rng, order2_brute, ("emissions", "transitions", "triples", "token_transitions"),
        ("emissions", "transitions", "start", "end", "triples", "token_transitions"),
        lambda o, ys: order2_score(scores, o, ys))


def test_order2_with_transition_templates_trains_and_gives_confidences(tmp_path):
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"target": "tag", "structure": transitions(order=2), "model": model(),
                                       "store_confidence": True, "n_best": 2})
    examples = alternation_examples(nlp)
    train(nlp, examples, 60, optimizer=FROM_INITIALIZE)
    crf = nlp.get_pipe("crf_tagger")
    assert crf.crf_structure.name == "chain_order2"
    doc = nlp(Doc(nlp.vocab, words="of x to x of x".split()))
    assert [t.tag_ for t in doc] == ["P", "B", "P", "A", "P", "B"]
    assert all(0.5 < t._.crf_confidence <= 1 for t in doc)
    nlp.to_disk(tmp_path / "m")
    loaded = spacy.load(tmp_path / "m")
    assert [t.tag_ for t in loaded(Doc(loaded.vocab, words="to x of x".split()))] == \
        ["P", "A", "P", "B"]


# -- trees with transition templates ------------------------------------------------

def tree_problem(seed, L=3, R=2):
    from spacy_crf._kernels import tree
    from spacy_crf.structures.input_tree import InputTreeLayout

    rng = np.random.default_rng(seed)
    lengths = np.asarray([1, 3, 4][: int(rng.integers(1, 4))])
    heads, o = [], 0
    for n in lengths:  # each token's head is an earlier token (a forest), roots at -1
        for i in range(n):
            heads.append(-1 if i == 0 or rng.random() < 0.2 else o + int(rng.integers(0, i)))
        o += n
    heads = np.asarray(heads, dtype=np.int64)
    order = np.zeros(len(heads), dtype=np.int64)
    tree.check_forest(heads, lengths, order)
    N = int(lengths.sum())
    scores = CRFScores.of(rng.normal(size=(N, L)), transitions=np.zeros((L, L)), start=np.zeros(L),
                          end=np.zeros(L), pair=rng.normal(size=(R, L, L)),
                          root=rng.normal(size=L), token_transitions=rng.normal(size=(N, L, L)))
    relations = rng.integers(0, R, size=N)
    return scores, InputTreeLayout(lengths, heads, order, relations), rng


def tree_score(scores, layout, o, ys):
    total = 0.0
    for i, y in enumerate(ys):
        t = o + i
        total += scores.emissions[t, y]
        h = layout.heads[t]
        if h < 0:
            total += scores.root[y]
        else:
            hy = ys[h - o]
            total += scores.pair[layout.relations[t], y, hy] + scores.token_transitions[t, hy, y]
    return total


def tree_brute(scores, layout, fixed=None):
    return enumerate_sequences(layout.lengths, scores.emissions.shape[1],
                               lambda o, ys: tree_score(scores, layout, o, ys), fixed)


@pytest.mark.parametrize("seed", SEEDS[:6])
def test_tree_with_token_transitions_matches_brute_force(seed):
    scores, layout, rng = tree_problem(seed)
    N, L = scores.emissions.shape
    fixed = np.where(rng.random(N) < 0.3, rng.integers(0, L, size=N), -1) if seed % 2 else None
    probs, log_z = inference.marginals(scores, layout, fixed)
    labels, best = inference.viterbi(scores, layout, fixed)
    o = 0
    for s, (bz, bm, bb, by) in enumerate(tree_brute(scores, layout, fixed)):
        n = layout.lengths[s]
        assert log_z[s] == pytest.approx(bz, rel=1e-9, abs=1e-9)
        np.testing.assert_allclose(probs[o:o + n], bm, atol=1e-9)
        assert best[s] == pytest.approx(bb, rel=1e-9)
        assert tuple(labels[o:o + n]) == tuple(by)
        o += n


@pytest.mark.parametrize("seed", SEEDS[:3])
def test_tree_with_token_transitions_gradient_and_counts(seed):
    scores, layout, rng = tree_problem(seed, L=2)
    params = ("emissions", "pair", "root", "token_transitions")
    check_gradient_and_counts(scores, layout, rng, tree_brute, params, params,
                              lambda o, ys: tree_score(scores, layout, o, ys))


def test_tree_with_transition_templates_trains_saves_and_loads(tmp_path):
    """Labels that depend on the head's word through the edge: "x" is A under
    "to" and B under "of", where "to" and "of" share the label P."""
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={
        "target": "tag", "structure": transitions(block="spacy-crf.Tree.v1", templates=["head:NORM"]),
        "model": {"@architectures": "spacy-crf.FeatureCRF.v2", "templates": ["NORM"],
                  "n_buckets": 4096}})

    def doc(words, tags=None):
        d = Doc(nlp.vocab, words=words, heads=[1, 1, 3, 3], deps=["dep", "ROOT", "dep", "ROOT"],
                sent_starts=[True, False, True, False])
        return d, tags

    rows = [(["x", "to", "x", "of"], ["A", "P", "B", "P"]),
            (["x", "of", "x", "to"], ["B", "P", "A", "P"])]
    examples = []
    for words, tags in rows:
        d, _ = doc(words)
        ref, _ = doc(words)
        examples.append(Example.from_dict(d, {"tags": tags, "heads": [1, 1, 3, 3],
                                              "deps": ["dep", "ROOT", "dep", "ROOT"]}))
    train(nlp, examples, 60, optimizer=FROM_INITIALIZE)
    crf = nlp.get_pipe("crf_tagger")
    assert crf.crf_structure.name == "tree_input"
    # the tree's templates go to the emissions, the transitions read their own alone
    sources = [list(node.attrs["templates"].source) for node in crf.model.walk()
               if node.name == "crf_featurize"]
    assert sources[1] == ["head:NORM"] and "HEAD_DIST" in sources[0]
    test, _ = doc(["x", "of", "x", "to"])
    assert [t.tag_ for t in crf(test)] == ["B", "P", "A", "P"]
    nlp.to_disk(tmp_path / "m")
    loaded = spacy.load(tmp_path / "m").get_pipe("crf_tagger")
    test, _ = doc(["x", "to", "x", "of"])
    assert [t.tag_ for t in loaded(test)] == ["A", "P", "B", "P"]
