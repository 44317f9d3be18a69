"""Span probabilities from one forward-backward per sequence.

Against brute-force enumeration with forced labels and -inf scores, in the
scaled and in the log-space pass; memory that does not grow with the number
of spans (the old per-span passes were quadratic); 100k-token documents with
dense entities, where both passes must still agree.
"""

import tracemalloc

import numpy as np
import pytest
import spacy
from spacy.tokens import Doc

from spacy_crf import inference, schemes
from spacy_crf.structures import ChainLayout
from targets.test_spans import (MODEL, SCHEMES, TYPE_SETS, constrain, span_target, logsumexp,
                                path_scores, random_scores, read_spans, universe)
from conftest import ner_examples, train


def brute_span_probability(scheme, types, emissions, raw, fixed, span):
    """P(span) over the well-formed labellings that agree with ``fixed``; NaN if there are none."""
    n = emissions.shape[0]
    _, seqs, wf, spans = universe(scheme, types, n)
    agree = wf & ((fixed[None, :] < 0) | (seqs == fixed[None, :])).all(axis=1)
    sc = path_scores(seqs, emissions, raw)
    support = agree & np.isfinite(sc)
    if not support.any():
        return np.nan
    p = np.exp(sc[support] - logsumexp(sc[support]))
    has = np.asarray([span in spans[i] for i in np.flatnonzero(support)])
    return float(p[has].sum())


def cases(scheme, seed, n_cases):
    """Random batches: potentials from mild to extreme (scale 400 defeats scaling),
    some emissions -inf, a random part of a well-formed labelling forced."""
    rng = np.random.default_rng(seed)
    for case in range(n_cases):
        types = TYPE_SETS[case % 2]
        tags = schemes.tag_set(types, scheme)
        lengths = rng.integers(1, 6, size=int(rng.integers(1, 4)))
        if scheme == "BILUO" and len(types) == 2:
            lengths = np.minimum(lengths, 4)
        N = int(lengths.sum())
        raw = random_scores(rng, len(tags), N, float(rng.choice([0.5, 2.0, 400.0])))
        raw.emissions[rng.random(raw.emissions.shape) < 0.1] = -np.inf
        scores = constrain(raw, tags, scheme)
        fixed = np.full(N, -1, dtype=np.int64)
        labellings = []
        for o, n in zip(np.cumsum(lengths) - lengths, lengths):
            _, seqs, wf, _ = universe(scheme, types, int(n))
            good = seqs[wf]
            forced = good[int(rng.integers(len(good)))]
            part = rng.random(int(n)) < (0.4 if case % 3 else 0.0)
            fixed[o:o + n][part] = forced[part]
            # spans to ask about: any well-formed labelling (it may break `fixed`: P = 0)
            labellings.append(good[int(rng.integers(len(good)))])
        yield rng, types, tags, lengths, raw, scores, fixed, np.concatenate(labellings)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_span_probabilities_match_brute_force_with_forced_labels(scheme):
    checked = zeros = 0
    for rng, types, tags, lengths, raw, scores, fixed, sampled in cases(scheme, 11, 70):
        structure = ChainLayout(lengths)
        stub = span_target(tags, scheme)
        viterbi_ids, best = inference.viterbi(scores, structure, fixed)
        # where nothing agrees with `fixed`, Viterbi's labels need not be well formed
        stuck = np.repeat(best == -np.inf, lengths)
        viterbi_ids[stuck] = sampled[stuck]
        for label_ids in (viterbi_ids, sampled):
            probs, span_end = stub.span_confidence(scores, structure, label_ids, fixed)
            prefix, _, _ = schemes.parse_tags(tags)
            starts, ends = schemes.codes_to_spans(prefix[label_ids], scheme)
            # the log-space pass, forced, on the same spans
            log_p, _ = inference.span_log_probabilities(scores, structure, label_ids, starts, ends,
                                                        schemes.continuations(tags, scheme), fixed,
                                                        force_log=True)
            found = 0
            for o, n in zip(np.cumsum(lengths) - lengths, lengths):
                seq = [tags[i] for i in label_ids[o:o + n]]
                for a, b, k in read_spans(seq, scheme):
                    expected = brute_span_probability(scheme, types, raw.emissions[o:o + n], raw,
                                                      fixed[o:o + n], (a, b, k))
                    assert span_end[o + a] == o + b
                    got_log = np.exp(log_p[found])
                    found += 1
                    if np.isnan(expected):
                        assert np.isnan(probs[o + a]) and np.isnan(got_log)
                        continue
                    assert probs[o + a] == pytest.approx(expected, rel=2e-5, abs=1e-7), (seq, (a, b, k))
                    assert got_log == pytest.approx(expected, rel=1e-9, abs=1e-12), (seq, (a, b, k))
                    zeros += expected == 0.0
                    checked += 1
            assert found == len(starts)
            assert set(np.flatnonzero(~np.isnan(probs) | (span_end >= 0)).tolist()) == set(starts.tolist())
    assert checked > 150 and zeros > 5


def test_spans_must_lie_inside_their_sequence():
    tags = schemes.tag_set(["X"], "BIO")
    scores = constrain(random_scores(np.random.default_rng(0), len(tags), 4), tags, "BIO")
    labels = np.array([0, 1, 2, 0])
    with pytest.raises(ValueError, match=r"\[CRF-E050\]"):
        inference.span_log_probabilities(scores, ChainLayout(np.array([2, 2])), labels,
                                         np.array([1]), np.array([3]), schemes.continuations(tags, "BIO"))


# ---------------------------------------------------------------- the component


def dense_entity_pipe(scheme, n_tokens):
    """An untrained ents tagger whose bias makes every token a one-token LOC entity
    (``dense``) or an O (``none``), and a doc without sentence boundaries."""
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"model": dict(MODEL), "target": "ents", "scheme": scheme,
                                       "store_confidence": True})
    nlp.initialize(lambda: ner_examples(nlp))
    pipe = nlp.get_pipe("crf_tagger")
    (linear,) = [n for n in pipe.model.walk() if n.name == "crf_hashed_linear"]
    words = [f"w{i % 50}" for i in range(n_tokens)]

    def run(kind):
        bias = linear.get_param("b")
        bias[:] = 0.0
        bias[pipe.tags.index({"none": "O", "dense": "B-LOC" if scheme == "BIO" else "U-LOC"}[kind])] = 8.0
        doc = Doc(nlp.vocab, words=words)
        tracemalloc.start()
        doc = nlp(doc)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return doc, peak

    return run


@pytest.mark.parametrize("scheme", SCHEMES)
def test_span_confidence_memory_does_not_grow_with_the_number_of_spans(scheme):
    """The old per-span passes copied the whole sequence for every span:
    1,500 tokens, 1,500 entities took hundreds of MB. One pass needs O(tokens)."""
    run = dense_entity_pipe(scheme, 1500)
    run("dense")  # compile and warm up outside the measurement
    none_doc, none_peak = run("none")
    dense_doc, dense_peak = run("dense")
    assert len(none_doc.ents) == 0 and len(dense_doc.ents) == 1500
    assert all(0.0 < e._.crf_confidence <= 1.0 for e in dense_doc.ents)
    assert dense_peak < 3 * none_peak + 2**20, (dense_peak, none_peak)


@pytest.fixture(scope="module")
def toy_ner():
    out = {}
    for scheme in SCHEMES:
        nlp = spacy.blank("en")
        nlp.add_pipe("crf_tagger", config={"model": dict(MODEL), "target": "ents", "scheme": scheme,
                                           "store_confidence": True})
        train(nlp, ner_examples(nlp), n_iter=30)
        out[scheme] = nlp
    return out


@pytest.mark.parametrize("scheme", SCHEMES)
def test_100k_tokens_with_dense_entities(toy_ner, scheme):
    """One 100,000-token doc, no sentence boundaries, a third of it entities:
    every span gets a probability, and the scaled and log-space passes agree."""
    nlp = toy_ner[scheme]
    pattern = "Alice met Bob in Paris and Carol Smith visited New York City yesterday .".split()
    words = (pattern * (100_000 // len(pattern) + 1))[:100_000]
    doc = nlp(Doc(nlp.vocab, words=words))
    ents = list(doc.ents)
    assert len(ents) > 20_000
    conf = np.asarray([e._.crf_confidence for e in ents])
    assert np.isfinite(conf).all() and (conf > 0).all() and (conf <= 1.0).all()
    # a span's labelling implies each of its tokens' labels
    token_conf = np.asarray([t._.crf_confidence for t in doc])
    lowest = np.asarray([token_conf[e.start:e.end].min() for e in ents])
    assert (conf <= lowest + 1e-6).all()
    if scheme == "BILUO":
        # a U-X tag is the span on its own: P(span) is that token's marginal
        single = np.asarray([len(e) == 1 for e in ents])
        np.testing.assert_allclose(conf[single], lowest[single], rtol=1e-5)
    # the same spans through the log-space pass
    pipe = nlp.get_pipe("crf_tagger")
    scores = pipe.target.constrain(pipe.model.predict([doc]))
    structure = pipe.batch_layout([doc])  # a second-order chain: the default for ents
    assert pipe.cfg["order"] == 2
    labels, _ = inference.viterbi(scores, structure)
    starts = np.array([e.start for e in ents])
    ends = np.array([e.end for e in ents])
    log_p, log_z = inference.span_log_probabilities(scores, structure, labels, starts, ends,
                                                    pipe.target.continuations(), force_log=True)
    assert np.isfinite(log_z).all()
    np.testing.assert_allclose(np.exp(log_p), conf, rtol=1e-5)
