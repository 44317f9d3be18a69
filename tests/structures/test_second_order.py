"""The second-order chain (``order = 2``): brute-force enumeration of every labelling
of tiny chains, with and without pruned label pairs, finite differences, and the
component through ``nlp.update``, ``to_disk`` and ``spacy train``."""

import numpy as np
import pytest
import spacy
import srsly
from spacy.tokens import Doc
from spacy.training import Example

from finite_differences import assert_counts_are_path_score_gradient, central_difference
from kernels.oracle import enumerate_sequences, labellings, logsumexp
from spacy_crf import inference
from spacy_crf.models.potentials import CRFScores
from spacy_crf.structures import ChainLayout, get_structure
from spacy_crf.structures.second_order import SecondOrderLayout, all_pairs, seen_pairs
from conftest import FROM_INITIALIZE, chain, ewt_sample_corpus, spacy_train, train

from conftest import ROOT
SEEDS = range(6)



def problem(seed, L=3, prune=False):
    rng = np.random.default_rng(seed)
    lengths = np.asarray([1, 2, 3, 4][: int(rng.integers(1, 5))])
    rng.shuffle(lengths)
    N = int(lengths.sum())
    scores = CRFScores.of(rng.normal(size=(N, L)) * 2, transitions=rng.normal(size=(L, L)),
                          start=rng.normal(size=L), end=rng.normal(size=L),
                          pair=np.zeros((1, L, L)), root=np.zeros(L),
                          triples=rng.normal(size=(L + 1, L, L)))
    pairs = all_pairs(L)
    if prune:  # keep a random two thirds of the pairs, and at least one start pair
        keep = rng.random(len(pairs)) < 0.67
        keep[int(rng.integers(L))] = True  # pairs[:L] are the START pairs
        pairs = pairs[keep]
    return scores, SecondOrderLayout(lengths, pairs), rng


def path_score(scores, o, ys):
    L = scores.emissions.shape[1]
    total = scores.start[ys[0]] + scores.end[ys[-1]]
    for t, y in enumerate(ys):
        total += scores.emissions[o + t, y]
        if t >= 1:
            total += scores.transitions[ys[t - 1], y]
            total += scores.triples[ys[t - 2] if t >= 2 else L, ys[t - 1], y]
    return total


def brute(scores, layout, fixed=None):
    """Per sequence: log Z, token marginals, best score and labelling, agreeing with ``fixed``."""
    L = scores.emissions.shape[1]
    return enumerate_sequences(layout.lengths, L, lambda o, ys: path_score(scores, o, ys), fixed,
                               lambda n: labellings(n, L, layout.pairs))


@pytest.mark.parametrize("prune", [False, True])
@pytest.mark.parametrize("seed", SEEDS)
def test_log_z_marginals_and_viterbi_match_brute_force(seed, prune):
    scores, layout, rng = problem(seed, prune=prune)
    structure = get_structure("chain_order2")
    probs, log_z = inference.marginals(scores, layout)
    labels, best = inference.viterbi(scores, layout)
    o = 0
    for s, (bz, bm, bb, by) in enumerate(brute(scores, layout)):
        n = layout.lengths[s]
        assert log_z[s] == pytest.approx(bz, rel=1e-9, abs=1e-9)
        if np.isfinite(bz):
            np.testing.assert_allclose(probs[o:o + n], bm, atol=1e-9)
            assert best[s] == pytest.approx(bb, rel=1e-9, abs=1e-9)
            assert tuple(labels[o:o + n]) == tuple(by)
        o += n
    assert structure.name == "chain_order2"


@pytest.mark.parametrize("prune", [False, True])
@pytest.mark.parametrize("seed", SEEDS)
def test_fixed_labels_match_brute_force(seed, prune):
    scores, layout, rng = problem(seed, prune=prune)
    N, L = scores.emissions.shape
    fixed = np.where(rng.random(N) < 0.4, rng.integers(0, L, size=N), -1)
    probs, log_z = inference.marginals(scores, layout, fixed)
    labels, best = inference.viterbi(scores, layout, fixed)
    o = 0
    for s, (bz, bm, bb, by) in enumerate(brute(scores, layout, fixed)):
        n = layout.lengths[s]
        assert log_z[s] == pytest.approx(bz, rel=1e-9, abs=1e-9)
        assert best[s] == pytest.approx(bb, rel=1e-9, abs=1e-9)
        if np.isfinite(bz):
            np.testing.assert_allclose(probs[o:o + n], bm, atol=1e-9)
            assert tuple(labels[o:o + n]) == tuple(by)
        o += n


def numeric_gradient(f, scores, name, eps=1e-6):
    return central_difference(f, getattr(scores, name), eps)


@pytest.mark.parametrize("prune", [False, True])
@pytest.mark.parametrize("seed", SEEDS[:4])
def test_nll_matches_brute_force_and_its_gradient_finite_differences(seed, prune):
    scores, layout, rng = problem(seed, L=2, prune=prune)
    N, L = scores.emissions.shape
    # gold inside the kept pairs (a Viterbi labelling), some of it unannotated
    gold, _ = inference.viterbi(scores, layout)
    gold = np.where(rng.random(N) < 0.3, -1, gold)
    nll, gradient = inference.nll_and_gradient(scores, layout, gold)
    free, clamped = brute(scores, layout), brute(scores, layout, gold)
    # a sequence with no labelling in the kept pairs has nothing to learn: nll 0
    expected = [f[0] - c[0] if np.isfinite(f[0]) else 0.0 for f, c in zip(free, clamped)]
    np.testing.assert_allclose(nll, expected, atol=1e-9)
    assert gradient.pair is None and gradient.root is None
    for name in ("emissions", "transitions", "start", "end", "triples"):
        expected = numeric_gradient(
            lambda: inference.nll_and_gradient(scores, layout, gold)[0].sum(), scores, name)
        np.testing.assert_allclose(getattr(gradient, name), expected, atol=1e-5, err_msg=name)


def test_gold_outside_the_kept_pairs_counts_as_unannotated():
    scores, _, _ = problem(0, L=2)
    layout = SecondOrderLayout(np.asarray([2]), np.asarray([[-1, 0], [0, 0]]))
    scores = scores.replace(emissions=scores.emissions[:2])
    nll, gradient = inference.nll_and_gradient(scores, layout, np.asarray([0, 1]))
    assert nll.tolist() == [0.0]
    assert np.all(gradient.emissions == 0) and np.all(gradient.triples == 0)


@pytest.mark.parametrize("seed", SEEDS[:3])
def test_labelling_counts_are_the_gradient_of_the_path_score(seed):
    scores, layout, rng = problem(seed)
    N, L = scores.emissions.shape
    labels = rng.integers(0, L, size=N)
    weights = rng.normal(size=len(layout.lengths))
    assert_counts_are_path_score_gradient(
        scores, layout, labels, weights, ("emissions", "transitions", "start", "end", "triples"),
        lambda o, ys: path_score(scores, o, ys))


def test_seen_pairs_are_the_adjacent_known_gold_labels():
    gold = np.asarray([0, 1, 1, -1, 2, 2, 0])
    lengths = np.asarray([3, 2, 2])
    assert seen_pairs(gold, lengths).tolist() == [[-1, 0], [-1, 2], [0, 1], [1, 1], [2, 0]]


# ------------------------------------------------------------------ the component

PERIOD = ["A", "A", "B", "B"] * 3  # label two back decides: first order cannot say when to switch


def period_examples(nlp):
    words = ["x"] * len(PERIOD)
    return [Example.from_dict(nlp.make_doc(" ".join(words)), {"tags": PERIOD})]


def trained(order):
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"target": "tag", "structure": chain(order), "model": {
        "@architectures": "spacy-crf.FeatureCRF.v2", "templates": ["NORM"], "n_buckets": 64,
        "learn_rate_scale": 1.0}})
    train(nlp, period_examples(nlp), 150)  # Adam(0.1)
    return nlp


def test_order_two_learns_what_order_one_cannot(tmp_path):
    second, first = trained(2), trained(1)
    text = " ".join(["x"] * len(PERIOD))
    assert [t.tag_ for t in second(text)] == PERIOD
    assert [t.tag_ for t in first(text)] != PERIOD
    tagger = second.get_pipe("crf_tagger")
    assert tagger.cfg["order"] == 2
    assert sorted(map(tuple, tagger.cfg["label_pairs"])) == [(-1, 0), (0, 0), (0, 1), (1, 0),
                                                             (1, 1)]
    second.to_disk(tmp_path / "model")
    again = spacy.load(tmp_path / "model")
    assert again.get_pipe("crf_tagger").crf_structure.name == "chain_order2"
    assert [t.tag_ for t in again(text)] == PERIOD
    assert again.get_pipe("crf_tagger").cfg["label_pairs"] == tagger.cfg["label_pairs"]


def test_order_two_keeps_span_schemes_and_refuses_what_it_lacks():
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"target": "ents", "structure": chain(2), "scheme": "BIO"})
    words = "Ana met Bo in Rome today".split()
    examples = [Example.from_dict(nlp.make_doc(" ".join(words)),
                                  {"entities": [(0, 3, "PER"), (8, 10, "PER"), (14, 18, "LOC")]})]
    train(nlp, examples, 30, optimizer=FROM_INITIALIZE)
    doc = nlp("Ana met Bo in Rome today")
    assert [(e.text, e.label_) for e in doc.ents] == [("Ana", "PER"), ("Bo", "PER"), ("Rome", "LOC")]
    for config, code in (({"structure": chain(3)}, "E094"), ({"structure": chain(0)}, "E094"),
                         ({"structure": chain(True)}, "order")):
        with pytest.raises(ValueError, match=code):
            spacy.blank("en").add_pipe("crf_tagger", config=config)


def test_order_two_trains_with_spacy_train(tmp_path):
    ewt_sample_corpus(tmp_path, train=150, dev=150)
    out = tmp_path / "out"
    spacy_train(ROOT / "configs" / "ewt_upos_order2.cfg", out,
                "--paths.train", tmp_path / "train.spacy", "--paths.dev", tmp_path / "dev.spacy",
                "--training.max_epochs", "2", "--training.eval_frequency", "10",
                "--components.crf_tagger.model.n_buckets", "16384")
    perf = srsly.read_json(out / "model-best" / "meta.json")["performance"]
    assert perf["pos_acc"] > 0.5
    nlp = spacy.load(out / "model-best")
    tagger = nlp.get_pipe("crf_tagger")
    assert tagger.cfg["order"] == 2 and len(tagger.cfg["label_pairs"]) > 17
    doc = nlp("This is a short sentence .")
    assert all(t.pos_ for t in doc)


@pytest.mark.parametrize("seed", SEEDS[:3])
def test_extreme_scores_go_through_the_exact_path(seed):
    """Scores far apart (shifted values below the guard) make the scaled edge pass
    hand the sequence to the log-space kernel: results still match brute force."""
    scores, layout, rng = problem(seed)
    scores.emissions[...] *= 150.0
    probs, log_z = inference.marginals(scores, layout)
    o = 0
    for s, (bz, bm, _, _) in enumerate(brute(scores, layout)):
        n = layout.lengths[s]
        assert log_z[s] == pytest.approx(bz, rel=1e-9)
        np.testing.assert_allclose(probs[o:o + n], bm, atol=1e-9)
        o += n


def test_order_two_trains_with_the_batch_trainer(tmp_path):
    """spacy_crf.fit: the generic shard likelihood over the second-order structure."""
    import io

    from spacy_crf.training.fit import fit

    paths = ewt_sample_corpus(tmp_path, train=200, dev=200)
    out = tmp_path / "fit"
    log = io.StringIO()
    fit(ROOT / "configs" / "ewt_upos_order2.cfg", out, max_iterations=15, eval_frequency=5,
        stdout=log, overrides={"paths.train": str(paths["train"]), "paths.dev": str(paths["dev"]),
                               "components.crf_tagger.model.n_buckets": 16384})
    losses = [float(line.split()[1]) for line in log.getvalue().splitlines()
              if line.strip()[:1].isdigit() and len(line.split()) >= 6]
    assert losses[-1] < losses[0] / 2
    nlp = spacy.load(out / "model-best")
    tagger = nlp.get_pipe("crf_tagger")
    assert tagger.crf_structure.name == "chain_order2"
    triples = [n for n in tagger.model.walk() if n.name == "crf_potentials"][0].get_param("triples")
    assert np.abs(triples).max() > 0  # fit wrote the triple scores
    assert srsly.read_json(out / "model-best" / "meta.json")["performance"]["pos_acc"] > 0.6


@pytest.mark.parametrize("prune", [False, True])
@pytest.mark.parametrize("seed", SEEDS[:4])
def test_n_best_matches_brute_force(seed, prune):
    scores, layout, rng = problem(seed, prune=prune)
    N, L = scores.emissions.shape
    fixed = np.where(rng.random(N) < 0.2, rng.integers(0, L, size=N), -1)
    k = 4
    labels, best, counts = inference.n_best(scores, layout, k, fixed)
    o = 0
    for s, n in enumerate(layout.lengths):
        seqs = [ys for ys in labellings(int(n), L, layout.pairs)
                if all(f < 0 or f == y for f, y in zip(fixed[o:o + n], ys))]
        sc = sorted((path_score(scores, o, ys) for ys in seqs), reverse=True)[:k]
        assert counts[s] == len(sc)
        np.testing.assert_allclose(best[s, :len(sc)], sc, rtol=1e-9, atol=1e-9)
        for r in range(len(sc)):  # each listed labelling scores what it is listed with
            ys = tuple(labels[r, o:o + n])
            assert ys in seqs
            assert path_score(scores, o, ys) == pytest.approx(best[s, r], rel=1e-9, abs=1e-9)
        o += n


def test_component_n_best_with_order_two():
    nlp = trained(2)
    nlp.get_pipe("crf_tagger").cfg["n_best"] = 3
    doc = nlp(" ".join(["x"] * len(PERIOD)))
    lists = doc._.crf_nbest
    assert len(lists) == 1 and len(lists[0]) == 3
    probability, tags = lists[0][0]
    assert tags == PERIOD and 0.0 < probability <= 1.0
    assert sum(p for p, _ in lists[0]) <= 1.0 + 1e-9


@pytest.mark.parametrize("prune", [False, True])
@pytest.mark.parametrize("seed", SEEDS[:5])
def test_span_probabilities_match_brute_force(seed, prune):
    """P(labels[s:e] on the span's tokens, and no blocked label right after it)."""
    scores, layout, rng = problem(seed, prune=prune)
    L = scores.emissions.shape[1]
    structure = get_structure("chain_order2")
    N = int(layout.lengths.sum())
    labels = rng.integers(0, L, size=N)
    seq_start = np.cumsum(layout.lengths) - layout.lengths
    spans = []
    for o, n in zip(seq_start, layout.lengths):
        a = int(rng.integers(0, n))
        spans.append((o + a, o + int(rng.integers(a + 1, n + 1))))
    starts, ends = (np.asarray(x) for x in zip(*spans))
    blocked = rng.random((L, L)) < 0.3  # [last label of the span, next label]
    fixed = np.where(rng.random(N) < 0.2, rng.integers(0, L, size=N), -1)
    log_p, log_z = structure.span_log_probabilities(scores, layout, labels, starts, ends,
                                                    blocked, fixed)
    for q, ((s, e), o, n) in enumerate(zip(spans, seq_start, layout.lengths)):
        seqs = [ys for ys in labellings(int(n), L, layout.pairs)
                if all(f < 0 or f == y for f, y in zip(fixed[o:o + n], ys))]
        sc = np.asarray([path_score(scores, o, ys) for ys in seqs])
        assert log_z[q] == pytest.approx(logsumexp(sc), abs=1e-8)
        inside = [all(ys[t - o] == labels[t] for t in range(s, e))
                  and (e == o + n or not blocked[labels[e - 1], ys[e - o]]) for ys in seqs]
        expected = logsumexp(sc[np.asarray(inside, dtype=bool)]) - logsumexp(sc)
        if np.isfinite(expected):
            assert log_p[q] == pytest.approx(expected, abs=1e-8)
        else:
            assert log_p[q] == -np.inf or not np.isfinite(log_p[q])


def test_entity_confidences_with_order_two():
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"target": "ents", "structure": chain(2), "store_confidence": True})
    examples = [Example.from_dict(nlp.make_doc("Ana met Bo in Rome today"),
                                  {"entities": [(0, 3, "PER"), (8, 10, "PER"), (14, 18, "LOC")]})]
    train(nlp, examples, 30, optimizer=FROM_INITIALIZE)
    doc = nlp("Ana met Bo in Rome today")
    assert [e.label_ for e in doc.ents] == ["PER", "PER", "LOC"]
    for ent in doc.ents:
        assert 0.5 < ent._.crf_confidence <= 1.0


@pytest.mark.parametrize("seed", SEEDS[:4])
def test_span_probabilities_without_triples_are_the_first_order_chains(seed):
    scores, layout, rng = problem(seed)
    scores.triples[...] = 0.0
    L = scores.emissions.shape[1]
    N = int(layout.lengths.sum())
    labels = rng.integers(0, L, size=N)
    seq_start = np.cumsum(layout.lengths) - layout.lengths
    starts = seq_start
    ends = seq_start + np.maximum(layout.lengths // 2, 1)
    blocked = rng.random((L, L)) < 0.3
    got, _ = get_structure("chain_order2").span_log_probabilities(
        scores, layout, labels, starts, ends, blocked)
    chain_layout = ChainLayout(layout.lengths)
    expected, _ = get_structure("chain").span_log_probabilities(
        scores, chain_layout, labels, starts, ends, blocked)
    np.testing.assert_allclose(got, expected, atol=1e-8)


def test_ents_default_to_order_2_over_every_pair_the_scheme_allows():
    """``order = null`` (the default) is 2 for ``ents``; its kept pairs are every
    pair the scheme allows, so a corpus that shows few of them (here one
    entity, the rest unannotated) still decodes every doc, and forced
    decoding keeps an entity of a pairing training never saw."""
    from spacy.tokens import Span

    nlp = spacy.blank("en")
    pipe = nlp.add_pipe("crf_tagger", config={"target": "ents"})
    assert pipe.cfg["order"] == 2 and nlp.config["components"]["crf_tagger"]["structure"] == {
        "@structures": "spacy-crf.Chain.v1", "order": None, "transition_templates": None,
        "transition_buckets": 2**16}
    reference = Doc(nlp.vocab, words=["Ann", "met", "Bob"], ents=["B-PER", "", ""])
    eg = Example(Doc(nlp.vocab, words=["Ann", "met", "Bob"]), reference)
    nlp.initialize(lambda: [eg])
    allowed, start, _ = pipe.target.constraints()
    kept = {tuple(p) for p in pipe.cfg["label_pairs"]}
    assert {(a, b) for a, b in zip(*np.nonzero(allowed))} <= kept
    assert {(-1, b) for b in np.flatnonzero(start)} <= kept
    for words in (["Bob"], ["Ann", "Ann", "Ann", "met"], ["met"] * 7):
        doc = nlp(Doc(nlp.vocab, words=words))
        assert all(t.ent_iob_ in ("B", "I", "O") for t in doc)
    doc = Doc(nlp.vocab, words=["Ann", "Bob", "met"])
    doc.ents = [Span(doc, 0, 1, label="PER"), Span(doc, 1, 2, label="PER")]  # U-PER U-PER
    assert [(e.start, e.end) for e in nlp(doc).ents] == [(0, 1), (1, 2)]


def test_a_token_target_keeps_order_1_by_default_and_an_explicit_order_stays():
    nlp = spacy.blank("en")
    assert nlp.add_pipe("crf_tagger", config={"target": "pos"}).cfg["order"] == 1
    explicit = nlp.add_pipe("crf_tagger", name="ner", config={
        "target": "ents", "structure": {"@structures": "spacy-crf.Chain.v1", "order": 1}})
    assert explicit.cfg["order"] == 1
    hmm = nlp.add_pipe("crf_tagger", name="hmm", config={
        "target": "ents", "model": {"@architectures": "spacy-crf.HMM.v1"}})
    assert hmm.cfg["order"] == 1  # the HMM scores first-order chains only


@pytest.mark.parametrize("integer", [False, True])
@pytest.mark.parametrize("seed", SEEDS[:4])
def test_k_best_over_the_pair_graph_is_the_dense_pair_kernels(seed, integer):
    """kbest_edges reads each pair state's few edges in (a dense pair matrix
    read every pair: the labels' fourth power a token); the same lists in the
    same order, ties included (integer scores), -inf emissions too."""
    from spacy_crf._kernels import kbest

    rng = np.random.default_rng(seed)
    P, lengths = 7, np.asarray([5, 1, 0, 4])
    N = int(lengths.sum())
    draw = (lambda *shape: rng.integers(-2, 3, size=shape).astype(float)) if integer else \
        (lambda *shape: rng.normal(size=shape))
    joined = rng.random((P, P)) < 0.45
    src, dst = (np.ascontiguousarray(x, dtype=np.int64) for x in np.nonzero(joined))
    weight = draw(len(src))
    in_edges = np.argsort(dst, kind="stable").astype(np.int64)
    in_ptr = np.searchsorted(dst[in_edges], np.arange(P + 1)).astype(np.int64)
    emissions = draw(N, P)
    emissions[rng.random((N, P)) < 0.15] = -np.inf
    start = np.where(rng.random(P) < 0.7, draw(P), -np.inf)
    end = draw(P)
    dense = np.full((P, P), -np.inf)
    dense[src, dst] = weight
    k = 6
    out = [(np.zeros((k, N), dtype=np.int64), np.zeros((len(lengths), k)),
            np.zeros(len(lengths), dtype=np.int64)) for _ in range(2)]
    kbest.kbest_edges(emissions, lengths, src, weight, in_ptr, in_edges, start, end, k, *out[0])
    kbest.kbest_viterbi(emissions, lengths, dense, start, end, np.full(N, -1, dtype=np.int64), k,
                        *out[1])
    np.testing.assert_array_equal(out[0][2], out[1][2])
    np.testing.assert_array_equal(out[0][1], out[1][1])
    for r in range(k):  # the labellings found (rows past a sequence's count are padding)
        found = np.repeat(r < out[0][2], lengths)
        np.testing.assert_array_equal(out[0][0][r][found], out[1][0][r][found])
