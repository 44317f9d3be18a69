"""The semi-Markov CRF (``structure = "semi_markov"``): brute-force enumeration of
every segmentation of tiny chains (log Z, token and segment marginals, Viterbi,
fixed labels), finite differences, and the component through ``nlp.update``,
``to_disk`` and ``spacy train``."""

import itertools
import warnings

import numpy as np
import pytest
import spacy
from spacy.training import Example

from finite_differences import assert_counts_are_path_score_gradient, central_difference
from kernels.oracle import logsumexp
from spacy_crf import inference, schemes
from spacy_crf.models.potentials import CRFScores
from spacy_crf.structures import ChainLayout, get_structure
from spacy_crf.structures.semi_markov import SemiMarkovLayout, segment_tables
from conftest import FROM_INITIALIZE, semi_markov, spacy_train, train

from conftest import ROOT
SEEDS = range(5)
SCHEMES = ["BIO", "BILUO"]



def parse(tags, scheme):
    """Segments ``(start, length, type)`` of a tag sequence, or None where the
    scheme does not allow it (written from the scheme's rules, not the code)."""
    out, t = [], 0
    while t < len(tags):
        head, _, kind = tags[t].partition("-")
        if head == "O" or head == "U":
            out.append((t, 1, kind or "O"))
            t += 1
            continue
        if head != "B":
            return None
        u = t + 1
        while u < len(tags) and tags[u] == "I-" + kind:
            u += 1
        if scheme == "BILUO":
            if u >= len(tags) or tags[u] != "L-" + kind:
                return None
            u += 1
        out.append((t, u - t, kind))
        t = u
    return out


def problem(seed, scheme, D=None, types=("A", "B"), max_len=4):
    rng = np.random.default_rng(seed)
    tags = schemes.tag_set(list(types), scheme)
    L = len(tags)
    lengths = np.asarray([1, 2, 3, max_len][: int(rng.integers(1, 5))])
    rng.shuffle(lengths)
    N = int(lengths.sum())
    D = D or int(rng.integers(1, max_len + 1))
    scores = CRFScores.of(rng.normal(size=(N, L)) * 2, transitions=rng.normal(size=(L, L)),
                          start=rng.normal(size=L), end=rng.normal(size=L),
                          pair=np.zeros((1, L, L)), root=np.zeros(L),
                          segments=rng.normal(size=(N, D, L)))
    layout = SemiMarkovLayout(lengths, D, **segment_tables(tags, scheme, D))
    return scores, layout, tags, rng


def segmentations(n, tags, scheme, D):
    for ys in itertools.product(range(len(tags)), repeat=n):
        segs = parse([tags[y] for y in ys], scheme)
        if segs is not None and all(length <= D for _, length, _ in segs):
            yield ys, segs


def path_score(scores, o, ys, segs):
    total = scores.start[ys[0]] + scores.end[ys[-1]]
    for t, y in enumerate(ys):
        total += scores.emissions[o + t, y]
        if t:
            total += scores.transitions[ys[t - 1], y]
    for start, length, _ in segs:
        total += scores.segments[o + start, length - 1, ys[start]]
    return total


def brute(scores, layout, tags, scheme, fixed=None):
    """Per sequence: log Z, token marginals, best score and labelling, and the
    marginal of every segment ``(start, length, type)``."""
    L = len(tags)
    out, o = [], 0
    for n in layout.lengths:
        found = [(ys, segs) for ys, segs in segmentations(int(n), tags, scheme, layout.max_length)
                 if fixed is None or all(f < 0 or f == y for f, y in zip(fixed[o:o + n], ys))]
        sc = np.asarray([path_score(scores, o, ys, segs) for ys, segs in found])
        marg = np.zeros((n, L))
        seg_marg = {}
        if len(found):
            p = np.exp(sc - logsumexp(sc))
            for (ys, segs), w in zip(found, p):
                marg[np.arange(n), ys] += w
                for seg in segs:
                    seg_marg[seg] = seg_marg.get(seg, 0.0) + w
        best = found[int(np.argmax(sc))][0] if len(found) else None
        out.append((logsumexp(sc), marg, sc.max() if len(sc) else -np.inf, best, seg_marg))
        o += n
    return out


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("seed", SEEDS)
def test_log_z_marginals_and_viterbi_match_brute_force(seed, scheme):
    scores, layout, tags, _ = problem(seed, scheme)
    probs, log_z = inference.marginals(scores, layout)
    labels, best = inference.viterbi(scores, layout)
    o = 0
    for s, (bz, bm, bb, by, _) in enumerate(brute(scores, layout, tags, scheme)):
        n = layout.lengths[s]
        assert log_z[s] == pytest.approx(bz, rel=1e-9, abs=1e-9)
        np.testing.assert_allclose(probs[o:o + n], bm, atol=1e-9)
        assert best[s] == pytest.approx(bb, rel=1e-9, abs=1e-9)
        assert tuple(labels[o:o + n]) == tuple(by)
        o += n
    assert layout.structure is get_structure("semi_markov")


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("seed", SEEDS)
def test_fixed_labels_match_brute_force(seed, scheme):
    scores, layout, tags, rng = problem(seed, scheme)
    N, L = scores.emissions.shape
    fixed = np.where(rng.random(N) < 0.3, rng.integers(0, L, size=N), -1)
    probs, log_z = inference.marginals(scores, layout, fixed)
    labels, best = inference.viterbi(scores, layout, fixed)
    o = 0
    for s, (bz, bm, bb, by, _) in enumerate(brute(scores, layout, tags, scheme, fixed)):
        n = layout.lengths[s]
        assert log_z[s] == pytest.approx(bz, rel=1e-9, abs=1e-9)
        assert best[s] == pytest.approx(bb, rel=1e-9, abs=1e-9)
        if np.isfinite(bz):
            np.testing.assert_allclose(probs[o:o + n], bm, atol=1e-9)
            assert tuple(labels[o:o + n]) == tuple(by)
        else:  # nothing agrees with the fixed labels: no mass, nothing decoded
            assert not probs[o:o + n].any()
        o += n


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("seed", SEEDS)
def test_span_probabilities_are_the_segment_marginals(seed, scheme):
    scores, layout, tags, rng = problem(seed, scheme)
    N, L = scores.emissions.shape
    fixed = np.where(rng.random(N) < 0.2, rng.integers(0, L, size=N), -1) if seed % 2 else None
    labels, _ = inference.viterbi(scores, layout, fixed)
    results = brute(scores, layout, tags, scheme, fixed)
    starts, ends, expected, o = [], [], [], 0
    for s, n in enumerate(layout.lengths):
        ys = labels[o:o + n]
        if np.isfinite(results[s][0]):
            for start, length, kind in parse([tags[y] for y in ys], scheme):
                if kind != "O":
                    starts.append(o + start)
                    ends.append(o + start + length)
                    expected.append(results[s][4].get((start, length, kind), 0.0))
        o += n
    continues = schemes.continuations(tags, scheme)
    log_p, _ = inference.span_log_probabilities(scores, layout, labels, np.asarray(starts, int),
                                                np.asarray(ends, int), continues, fixed)
    np.testing.assert_allclose(np.exp(log_p), expected, atol=1e-9)


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("seed", SEEDS)
def test_n_best_matches_brute_force(seed, scheme):
    scores, layout, tags, rng = problem(seed, scheme)
    N, L = scores.emissions.shape
    fixed = np.where(rng.random(N) < 0.2, rng.integers(0, L, size=N), -1) if seed % 2 else None
    k = 7
    labels, best, counts = inference.n_best(scores, layout, k, fixed)
    o = 0
    for s, n in enumerate(layout.lengths):
        found = [(path_score(scores, o, ys, segs), ys)
                 for ys, segs in segmentations(int(n), tags, scheme, layout.max_length)
                 if fixed is None or all(f < 0 or f == y for f, y in zip(fixed[o:o + n], ys))]
        found.sort(key=lambda x: -x[0])
        assert counts[s] == min(k, len(found))
        np.testing.assert_allclose(best[s, :counts[s]], [sc for sc, _ in found[:k]], rtol=1e-9)
        assert np.all(best[s, counts[s]:] == -np.inf)
        for r in range(counts[s]):  # each listed labelling has the score listed for it
            ys = tuple(labels[r, o:o + n])
            segs = parse([tags[y] for y in ys], scheme)
            assert segs is not None
            assert path_score(scores, o, ys, segs) == pytest.approx(best[s, r], rel=1e-9)
        assert len({tuple(labels[r, o:o + n]) for r in range(counts[s])}) == counts[s]
        o += n


@pytest.mark.parametrize("scheme", SCHEMES)
def test_zero_segment_scores_give_the_constrained_chain(scheme):
    scores, layout, tags, _ = problem(3, scheme, D=4)
    scores.segments[:] = 0.0
    allowed, first, last = schemes.allowed_moves(tags, scheme)
    chain_scores = CRFScores.of(scores.emissions, transitions=np.where(allowed, scores.transitions, -np.inf),
                                start=np.where(first, scores.start, -np.inf),
                                end=np.where(last, scores.end, -np.inf), pair=scores.pair,
                                root=scores.root)
    chain = ChainLayout(layout.lengths)
    probs, log_z = inference.marginals(scores, layout)
    chain_probs, chain_z = inference.marginals(chain_scores, chain)
    np.testing.assert_allclose(log_z, chain_z, rtol=1e-10)
    np.testing.assert_allclose(probs, chain_probs, atol=1e-10)
    assert (inference.viterbi(scores, layout)[0] == inference.viterbi(chain_scores, chain)[0]).all()


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("seed", SEEDS[:3])
def test_nll_matches_brute_force_and_its_gradient_finite_differences(seed, scheme):
    scores, layout, tags, rng = problem(seed, scheme, types=("A",))
    N, L = scores.emissions.shape
    gold, _ = inference.viterbi(scores, layout)
    gold = np.where(rng.random(N) < 0.3, -1, gold)
    nll, gradient = inference.nll_and_gradient(scores, layout, gold)
    free, clamped = brute(scores, layout, tags, scheme), brute(scores, layout, tags, scheme, gold)
    np.testing.assert_allclose(nll, [f[0] - c[0] for f, c in zip(free, clamped)], atol=1e-9)
    assert gradient.pair is None and gradient.triples is None
    for name in ("emissions", "transitions", "start", "end", "segments"):
        expected = central_difference(
            lambda: inference.nll_and_gradient(scores, layout, gold)[0].sum(),
            getattr(scores, name))
        np.testing.assert_allclose(getattr(gradient, name), expected, atol=1e-5, err_msg=name)


def test_gold_span_longer_than_the_segments_counts_as_unannotated():
    scores, _, tags, _ = problem(0, "BIO", types=("A",))
    layout = SemiMarkovLayout(np.asarray([3]), 2, **segment_tables(tags, "BIO", 2))
    scores = CRFScores.of(scores.emissions[:3], transitions=scores.transitions, start=scores.start,
                          end=scores.end, pair=scores.pair, root=scores.root,
                          segments=np.zeros((3, 2, len(tags))))
    gold = np.asarray([tags.index("B-A"), tags.index("I-A"), tags.index("I-A")])
    nll, gradient = inference.nll_and_gradient(scores, layout, gold)
    assert nll.tolist() == [0.0]
    assert not gradient.emissions.any() and not gradient.segments.any()


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("seed", SEEDS[:3])
def test_labelling_counts_are_the_gradient_of_the_path_score(seed, scheme):
    scores, layout, tags, rng = problem(seed, scheme)
    labels, _ = inference.viterbi(scores, layout)
    weights = rng.normal(size=len(layout.lengths))
    assert_counts_are_path_score_gradient(
        scores, layout, labels, weights, ("emissions", "transitions", "start", "end", "segments"),
        lambda o, ys: path_score(scores, o, ys, parse([tags[y] for y in ys], scheme)))


# ------------------------------------------------------------------ the component

TEXTS = [("Alice Smith lives in New York City .", [(0, 11, "PER"), (21, 34, "LOC")]),
         ("Bob went to Paris yesterday .", [(0, 3, "PER"), (12, 17, "LOC")]),
         ("Carol Ann Jones met Bob in Paris .", [(0, 15, "PER"), (20, 23, "PER"), (27, 32, "LOC")])]


def examples(nlp):
    return [Example.from_dict(nlp.make_doc(text), {"entities": ents}) for text, ents in TEXTS]


def trained(scheme="BILUO", **config):
    nlp = spacy.blank("en")
    crf = nlp.add_pipe("crf_tagger", config={"target": "ents", "structure": "semi_markov",
                                             "scheme": scheme, **config})
    train(nlp, examples(nlp), 15, optimizer=FROM_INITIALIZE)
    return nlp, crf


@pytest.mark.parametrize("scheme", SCHEMES)
def test_component_learns_entities_with_confidences(scheme):
    nlp, crf = trained(scheme, store_confidence=True)
    assert crf.cfg["segment_length"] == 3  # the longest gold entity
    for text, ents in TEXTS:
        doc = nlp(text)
        assert [(e.start_char, e.end_char, e.label_) for e in doc.ents] == ents
        for ent in doc.ents:
            assert 0.5 < ent._.crf_confidence <= 1.0
        assert all(0.0 < t._.crf_confidence <= 1.0 for t in doc)


def test_the_segment_layer_reads_the_longest_segment_from_the_batch_layout():
    """The layout travels with the batch to the model: predicting changes no
    dim of the model, and the model alone on a plain list of Docs says what it
    lacks (E180) instead of guessing a length."""
    from spacy_crf.models.segment_scores import NAME

    nlp, crf = trained()
    docs = [nlp.make_doc(text) for text, _ in TEXTS]
    layer = next(node for node in crf.model.walk() if node.name == NAME)
    dims = dict(layer._dims)
    crf.predict(docs)
    batch = crf.read_batch(docs)
    scores = crf.model.predict(batch)
    assert scores.segments.shape[1] == batch.layout.max_length == crf.cfg["segment_length"] == 3
    assert dict(layer._dims) == dims
    with pytest.raises(ValueError, match="E180"):
        crf.model.predict(docs)
    layer.set_dim("nD", 3)  # a length given by hand serves a plain list
    np.testing.assert_array_equal(crf.model.predict(docs).segments, scores.segments)


def test_save_and_load_give_the_same_predictions(tmp_path):
    nlp, crf = trained(store_confidence=True)
    nlp.to_disk(tmp_path / "model")
    loaded = spacy.load(tmp_path / "model")
    assert loaded.get_pipe("crf_tagger").cfg["segment_length"] == 3
    for text, _ in TEXTS:
        a, b = nlp(text), loaded(text)
        assert [(e.start, e.end, e.label_) for e in a.ents] == [(e.start, e.end, e.label_)
                                                                for e in b.ents]
        assert [e._.crf_confidence for e in a.ents] == [e._.crf_confidence for e in b.ents]


def test_max_segment_length_setting_and_long_gold_spans_warn():
    with pytest.warns(UserWarning, match="W006.*longer than max_segment_length = 2"):
        nlp, crf = trained(structure=semi_markov(2))
    assert crf.cfg["segment_length"] == 2
    doc = nlp("Carol Ann Jones met Bob in Paris .")
    assert all(len(ent) <= 2 for ent in doc.ents)


def test_keep_existing_forces_the_given_entities():
    nlp, crf = trained(keep_existing=True)
    doc = nlp.make_doc("Alice Smith lives in New York City .")
    doc.ents = [doc.char_span(21, 34, label="PER")]
    doc = crf(doc)
    assert ("New York City", "PER") in [(e.text, e.label_) for e in doc.ents]


@pytest.mark.parametrize("config, code", [
    ({"target": "tag", "structure": "semi_markov"}, "E108"),
    ({"target": "ents", "structure": semi_markov(-1)}, "E109"),
    ({"target": "ents", "structure": semi_markov(10 ** 6)}, "E166"),
    ({"target": "ents", "structure": {"@structures": "spacy-crf.Tree.v2"}}, "spacy-crf.Tree.v2"),
])
def test_config_errors(config, code):
    nlp = spacy.blank("en")
    with pytest.raises(ValueError, match=code):
        nlp.add_pipe("crf_tagger", config=config)


def test_n_best_lists_on_the_component():
    nlp, crf = trained(n_best=3)
    doc = nlp("Bob went to Paris yesterday .")
    (sentence,) = doc._.crf_nbest
    probs = [p for p, _ in sentence]
    assert len(sentence) == 3 and probs == sorted(probs, reverse=True) and sum(probs) <= 1 + 1e-9
    assert sentence[0][1] == [f"{t.ent_iob_}-{t.ent_type_}".replace("B-", "U-")
                              if t.ent_iob_ != "O" else "O" for t in doc]


def test_perceptron_and_hinge_train_it():
    for loss in ("perceptron", "hinge"):
        nlp, _ = trained(loss=loss)
        doc = nlp("Bob went to Paris yesterday .")
        assert [(e.text, e.label_) for e in doc.ents] == [("Bob", "PER"), ("Paris", "LOC")]


@pytest.mark.slow
def test_spacy_train_and_the_batch_trainer(tmp_path, capsys):
    from spacy_crf.commands.convert import main as convert_main
    from spacy_crf.commands.fit import main as fit_main

    config = ROOT / "configs" / "uner_ner_semi_markov.cfg"
    train = ROOT / "assets" / "ewt_sample" / "en_ewt-train.iob2"
    dev = ROOT / "assets" / "ewt_sample" / "en_ewt-dev.iob2"
    for src, name in ((train, "train"), (dev, "dev")):  # python -m spacy_crf.convert uner, in process
        assert convert_main(["uner", str(src), str(tmp_path / f"{name}.spacy")]) == 0
    spacy_train(config, tmp_path / "out", "--paths.train", tmp_path / "train.spacy",
                "--paths.dev", tmp_path / "dev.spacy", "--training.max_epochs", "1",
                "--training.eval_frequency", "50")
    nlp = spacy.load(tmp_path / "out" / "model-last")
    assert nlp.get_pipe("crf_tagger").cfg["structure"] == "semi_markov"
    capsys.readouterr()
    # python -m spacy_crf.fit, in process
    code = fit_main([str(config), "--output", str(tmp_path / "fit"),
                     "--paths.train", str(tmp_path / "train.spacy"),
                     "--paths.dev", str(tmp_path / "dev.spacy")])
    assert code != 0 and "E110" in capsys.readouterr().err


def test_a_span_longer_than_the_segments_is_w006_alone_not_tags_breaking_the_scheme():
    """In a batch with unannotated tokens, the feasibility pass of the gold ran
    the semi-Markov CRF: a sentence whose span is longer than its segments had
    no labelling there, and its tokens were counted as tags that break the
    scheme (W003, sending the user to repair the corpus)."""
    from spacy.tokens import Doc

    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"target": "ents", "structure": semi_markov(2)})
    words = ["The", "New", "York", "Stock", "Exchange", "fell", "."]
    gold = Doc(nlp.vocab, words=words,
               ents=["O", "B-ORG", "I-ORG", "I-ORG", "I-ORG", "O", None])  # "." unannotated
    short = Doc(nlp.vocab, words=["Ada", "ran", "."], ents=["B-PER", "O", None])
    examples = [Example(Doc(nlp.vocab, words=d.text.split()), d) for d in (gold, short)]
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        nlp.initialize(lambda: examples)
        nlp.update(examples)
    said = " ".join(str(w.message) for w in record)
    assert "W006" in said and "W003" not in said
