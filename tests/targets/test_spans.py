"""Span targets (``ents``, ``spans:KEY``) with BIO / BILUO schemes.

1. the schemes' allowed moves against an independent definition of a
   well-formed tag sequence, over every sequence of every short length;
2. constrained inference (log Z, Viterbi, span probabilities, forced
   decoding) against brute-force enumeration of the well-formed labellings;
3. the ``crf_tagger`` component on a toy NER corpus;
4. the UNER converter and ``spacy train`` with ``configs/uner_ner.cfg``.

Well-formedness, span reading and span writing are re-implemented here, on
tag strings, without ``spacy_crf.schemes``.
"""

import itertools
import warnings
from functools import lru_cache

import numpy as np
import pytest
import spacy
import srsly
from spacy.tokens import Doc, DocBin, Span
from spacy.training import Example

from kernels.oracle import logsumexp
from spacy_crf import inference, schemes
from spacy_crf.structures import ChainLayout
from spacy_crf.models.potentials import CRFScores
from spacy_crf.targets import SpanTarget, make_target
import conftest
from conftest import ROOT, TOY_NER, ner_examples, run_main, spacy_train, train

EWT = ROOT / "assets" / "ewt_sample"
CONFIGS = ROOT / "configs"
SCHEMES = ("BIO", "BILUO")
TYPE_SETS = (("X",), ("X", "Y"))


# ---------------------------------------------------------------- independent scheme logic


def split_tag(tag):
    return ("O", None) if tag == "O" else tuple(tag.split("-", 1))


def read_spans(tags, scheme):
    """Spans ``(start, end, type)`` of a tag sequence (lenient, never overlapping).

    BIO: a span starts at ``B-X`` and runs over the ``I-X`` that follow.
    BILUO: ``U-X`` is a span; ``B-?`` opens one that the next ``L-X`` closes.
    """
    spans = []
    if scheme == "BIO":
        cur = None
        for i, tag in enumerate(list(tags) + ["O"]):
            p, k = split_tag(tag)
            if cur is not None and not (p == "I" and k == cur[1]):
                spans.append((cur[0], i, cur[1]))
                cur = None
            if p == "B":
                cur = (i, k)
        return spans
    opened = None
    for i, tag in enumerate(tags):
        p, k = split_tag(tag)
        if p == "U":
            spans.append((i, i + 1, k))
            opened = None
        elif p == "B":
            opened = i
        elif p == "L" and opened is not None:
            spans.append((opened, i + 1, k))
            opened = None
        elif p == "O":
            opened = None
    return spans


def write_spans(n, spans, scheme):
    """The tags of non-overlapping spans: obviously well formed."""
    tags = ["O"] * n
    for a, b, k in spans:
        if scheme == "BILUO" and b - a == 1:
            tags[a] = f"U-{k}"
            continue
        tags[a] = f"B-{k}"
        for t in range(a + 1, b):
            tags[t] = f"I-{k}"
        if scheme == "BILUO":
            tags[b - 1] = f"L-{k}"
    return tags


def well_formed(tags, scheme):
    tags = list(tags)
    if scheme == "BIO":
        prev = ("O", None)
        for tag in tags:
            p, k = split_tag(tag)
            if p not in "OBI":
                return False
            if p == "I" and not (prev[0] in ("B", "I") and prev[1] == k):
                return False
            prev = (p, k)
        return True
    return write_spans(len(tags), read_spans(tags, "BILUO"), "BILUO") == tags


def test_reference_definitions_on_examples():
    """The test's own definitions, on hand-checked sequences."""
    assert well_formed(["B-X", "I-X", "O", "B-Y"], "BIO")
    assert not well_formed(["O", "I-X"], "BIO")
    assert not well_formed(["B-X", "I-Y"], "BIO")
    assert not well_formed(["I-X"], "BIO")
    assert well_formed(["B-X", "I-X", "L-X", "U-Y", "O"], "BILUO")
    assert not well_formed(["B-X"], "BILUO")
    assert not well_formed(["B-X", "L-Y"], "BILUO")
    assert not well_formed(["B-X", "O", "L-X"], "BILUO")
    assert not well_formed(["L-X"], "BILUO")
    assert not well_formed(["B-X", "B-X", "L-X"], "BILUO")
    assert read_spans(["B-X", "I-X", "B-X", "O", "B-Y"], "BIO") == [(0, 2, "X"), (2, 3, "X"), (4, 5, "Y")]
    assert read_spans(["U-X", "B-Y", "I-Y", "L-Y"], "BILUO") == [(0, 1, "X"), (1, 4, "Y")]


# ---------------------------------------------------------------- brute-force universe


@lru_cache(maxsize=None)
def universe(scheme, types, n):
    """Every tag sequence of length ``n`` over the scheme's tags.

    Returns the tag list, all sequences as label ids (M, n), which are well
    formed (by the definition above) and the spans of each well-formed one.
    """
    tags = schemes.tag_set(types, scheme)
    seqs = np.asarray(list(itertools.product(range(len(tags)), repeat=n)), dtype=np.int64)
    seqs = seqs.reshape(-1, n)
    wf = np.asarray([well_formed([tags[i] for i in row], scheme) for row in seqs])
    spans = [frozenset(read_spans([tags[i] for i in row], scheme)) if ok else None
             for row, ok in zip(seqs, wf)]
    return tags, seqs, wf, spans


def passes_moves(seqs, transitions, start, end):
    ok = start[seqs[:, 0]] & end[seqs[:, -1]]
    if seqs.shape[1] > 1:
        ok &= transitions[seqs[:, :-1], seqs[:, 1:]].all(axis=1)
    return ok


# ---------------------------------------------------------------- 1. schemes


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("types", TYPE_SETS)
def test_allowed_moves_accept_exactly_the_well_formed_sequences(scheme, types):
    tags = schemes.tag_set(types, scheme)
    expected_prefixes = {"BIO": "OBI", "BILUO": "OBILU"}[scheme]
    assert tags[0] == "O" and len(tags) == 1 + len(types) * (len(expected_prefixes) - 1)
    assert {split_tag(t)[0] for t in tags} == set(expected_prefixes)
    transitions, start, end = schemes.allowed_moves(tags, scheme)
    assert transitions.shape == (len(tags), len(tags)) and transitions.dtype == bool
    n_good = 0
    for n in range(1, 6):
        _, seqs, wf, _ = universe(scheme, types, n)
        ok = passes_moves(seqs, transitions, start, end)
        bad = np.flatnonzero(ok != wf)
        assert not len(bad), [
            ([tags[i] for i in seqs[j]], "allowed" if ok[j] else "forbidden") for j in bad[:5]]
        n_good += int(wf.sum())
    assert n_good > 10  # not vacuous


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("types", TYPE_SETS)
def test_codes_and_spans_of_every_well_formed_sequence(scheme, types):
    """codes_to_spans reads every well-formed sequence as the test does, and
    spans_to_codes writes the sequence's prefixes back."""
    for n in range(1, 6):
        tags, seqs, wf, spans = universe(scheme, types, n)
        prefix, kind, names = schemes.parse_tags(tags)
        for row, ok, expected in zip(seqs, wf, spans):
            if not ok:
                continue
            starts, ends = schemes.codes_to_spans(prefix[row], scheme)
            got = {(int(a), int(b), names[kind[row[a]]]) for a, b in zip(starts, ends)}
            assert got == set(expected), [tags[i] for i in row]
            codes = schemes.spans_to_codes(n, np.asarray(starts, dtype=np.int64),
                                           np.asarray(ends, dtype=np.int64), scheme)
            assert codes.tolist() == prefix[row].tolist(), [tags[i] for i in row]


def random_spans(rng, n):
    spans, t = [], 0
    while t < n:
        if rng.random() < 0.45:
            length = int(rng.integers(1, min(4, n - t) + 1))
            spans.append((t, t + length))
            t += length  # the next span may start right here (adjacent spans)
        else:
            t += 1
    return spans


@pytest.mark.parametrize("scheme", SCHEMES)
def test_spans_to_codes_round_trip_random(scheme):
    rng = np.random.default_rng(0)
    letters = {"O": schemes.OUT, "B": schemes.BEGIN, "I": schemes.INSIDE,
               "L": schemes.LAST, "U": schemes.UNIT}
    n_spans = 0
    for _ in range(500):
        n = int(rng.integers(1, 40))
        spans = random_spans(rng, n)
        n_spans += len(spans)
        starts = np.asarray([a for a, _ in spans], dtype=np.int64)
        ends = np.asarray([b for _, b in spans], dtype=np.int64)
        codes = schemes.spans_to_codes(n, starts, ends, scheme)
        expected = [letters[split_tag(t)[0]]
                    for t in write_spans(n, [(a, b, "X") for a, b in spans], scheme)]
        assert codes.tolist() == expected, spans
        got_starts, got_ends = schemes.codes_to_spans(codes, scheme)
        assert list(zip(got_starts.tolist(), got_ends.tolist())) == spans
    assert n_spans > 1000


@pytest.mark.parametrize("scheme", SCHEMES)
def test_a_batch_of_sequences_reads_as_each_sequence_alone(scheme):
    """codes_to_spans over concatenated well-formed sequences (a batch) with
    their ends gives each one's spans, shifted: none crosses a boundary (in
    BIO an I- opening the next sequence would, were the ends not given)."""
    rng = np.random.default_rng(1)
    tags, seqs, wf, _ = universe(scheme, ("X", "Y"), 3)
    prefix, kind, names = schemes.parse_tags(tags)
    good = seqs[wf]
    for _ in range(300):
        rows = [good[i] for i in rng.integers(0, len(good), size=int(rng.integers(1, 5)))]
        codes = np.concatenate([prefix[row] for row in rows])
        ends = np.cumsum([len(row) for row in rows])
        starts, stops = schemes.codes_to_spans(codes, scheme, ends)
        expected = []
        for offset, row in zip(ends - 3, rows):
            a, b = schemes.codes_to_spans(prefix[row], scheme)
            expected += list(zip((a + offset).tolist(), (b + offset).tolist()))
        assert list(zip(starts.tolist(), stops.tolist())) == expected


@pytest.mark.parametrize("scheme, tags, ends", [
    ("BILUO", ["B-X", "O"], None),            # opened, never closed
    ("BILUO", ["O", "L-X"], None),            # closed, never opened
    ("BIO", ["O", "I-X"], None),              # an I- that opens a span
    ("BIO", ["B-X", "I-X", "I-X"], [2, 3]),   # ... the second sequence's first tag
    ("BILUO", ["B-X", "L-X", "B-X", "L-X"], [1, 4]),  # a span across sequences
])
def test_tags_that_are_not_well_formed_are_an_error_not_wrong_spans(scheme, tags, ends):
    prefix, _, _ = schemes.parse_tags(tags)
    with pytest.raises(ValueError, match="E179"):
        schemes.codes_to_spans(prefix, scheme, None if ends is None else np.asarray(ends))


@pytest.mark.parametrize("keep_existing", [False, True])
def test_a_batch_is_written_as_each_doc_would_be(keep_existing):
    """write_batch over docs of several lengths (one empty, one with an entity
    already on it) writes each doc's spans; kept entities stay as they were."""
    nlp = spacy.blank("en")
    target = make_target("ents", "BILUO")
    labels = target.order_labels(schemes.tag_set(["X", "Y"], "BILUO"))
    target.set_labels(labels, nlp.vocab)
    words = [["a", "b", "c"], [], ["d", "e", "f", "g"], ["h", "i"]]
    docs = [Doc(nlp.vocab, words=w) for w in words]
    docs[3].ents = [Span(docs[3], 0, 1, label="Y")]
    tags = [["B-X", "L-X", "O"], [], ["U-Y", "O", "B-X", "L-X"], ["O", "U-X"]]
    ids = np.asarray([labels.index(t) for row in tags for t in row], dtype=np.int64)
    target.write_batch(docs, ids, np.asarray([len(w) for w in words]), keep_existing)
    got = [[(e.start, e.end, e.label_) for e in doc.ents] for doc in docs]
    assert got[:3] == [[(0, 2, "X")], [], [(0, 1, "Y"), (2, 4, "X")]]
    assert got[3] == ([(0, 1, "Y"), (1, 2, "X")] if keep_existing else [(1, 2, "X")])
    assert [t.ent_iob_ for t in docs[0]] == ["B", "I", "O"]


def test_scheme_names_and_bad_tags_are_clear_errors():
    with pytest.raises(ValueError, match=r"\[CRF-E060\] Unknown scheme 'IOB'"):
        schemes.check_scheme("IOB")
    with pytest.raises(ValueError, match=r"\[CRF-E060\] Unknown scheme 'BILOU'"):
        schemes.tag_set(["X"], "BILOU")
    for bad in ("X", "Q-X", "B-", "O-X"):
        with pytest.raises(ValueError, match=rf"\[CRF-E061\] '{bad}' is not a span tag"):
            schemes.parse_tags(["O", bad])


# ---------------------------------------------------------------- 2. constrained inference


@lru_cache(maxsize=1)
def _vocab():
    return spacy.blank("en").vocab


def span_target(tags, scheme):
    """An ``ents`` target with these tags as its labels (in this order)."""
    target = make_target("ents", scheme)
    target.set_labels(tags, _vocab())
    return target


def random_scores(rng, L, N, scale=1.0, dtype=np.float64):
    return CRFScores.of((rng.normal(size=(N, L)) * 2 * scale).astype(dtype),
                        transitions=(rng.normal(size=(L, L)) * scale).astype(dtype),
                        start=(rng.normal(size=L) * scale).astype(dtype),
                        end=(rng.normal(size=L) * scale).astype(dtype),
                        pair=np.zeros((1, L, L), dtype=dtype), root=np.zeros(L, dtype=dtype))


def constrain(scores, tags, scheme):
    """The scheme's -inf masks, as the span target's constrain adds them."""
    allowed_t, allowed_start, allowed_end = schemes.allowed_moves(tags, scheme)
    penalty = lambda ok, x: np.where(ok, x, -np.inf).astype(x.dtype)  # noqa: E731
    ours = CRFScores.of(scores.emissions, transitions=penalty(allowed_t, scores.transitions),
                        start=penalty(allowed_start, scores.start),
                        end=penalty(allowed_end, scores.end), pair=scores.pair, root=scores.root)
    theirs = span_target(tags, scheme).constrain(scores)
    for name in ("emissions", "transitions", "start", "end"):
        np.testing.assert_array_equal(getattr(theirs, name), getattr(ours, name))
    return ours


def path_scores(seqs, emissions, scores):
    """Score of every labelling in ``seqs`` (M, n) under the raw (unmasked) scores."""
    em = np.asarray(emissions, dtype=np.float64)
    tr, st, en = (np.asarray(x, dtype=np.float64) for x in
                  (scores.transitions, scores.start, scores.end))
    n = seqs.shape[1]
    total = st[seqs[:, 0]] + en[seqs[:, -1]] + em[np.arange(n)[None, :], seqs].sum(axis=1)
    if n > 1:
        total += tr[seqs[:, :-1], seqs[:, 1:]].sum(axis=1)
    return total



def case_stream(seed, n_cases, max_len=5):
    rng = np.random.default_rng(seed)
    for c in range(n_cases):
        scheme = SCHEMES[c % 2]
        types = TYPE_SETS[(c // 2) % 2]
        lengths = rng.integers(1, max_len + 1, size=int(rng.integers(1, 4)))
        if types == ("X", "Y") and scheme == "BILUO":
            lengths = np.minimum(lengths, 4)  # 9**5 labellings per sequence is slow enough
        yield rng, scheme, types, lengths


def test_log_z_and_marginals_match_brute_force_over_well_formed_sequences():
    checked = 0
    for rng, scheme, types, lengths in case_stream(1, 80):
        tags = schemes.tag_set(types, scheme)
        scale = float(rng.choice([0.3, 1.0, 5.0, 80.0]))
        raw = random_scores(rng, len(tags), int(lengths.sum()), scale)
        scores = constrain(raw, tags, scheme)
        structure = ChainLayout(lengths)
        probs, log_z = inference.marginals(scores, structure)
        offsets = np.cumsum(lengths) - lengths
        for s, (o, n) in enumerate(zip(offsets, lengths)):
            _, seqs, wf, _ = universe(scheme, types, int(n))
            good = seqs[wf]
            sc = path_scores(good, raw.emissions[o:o + n], raw)
            expected = logsumexp(sc)
            assert log_z[s] == pytest.approx(expected, rel=1e-9, abs=1e-9 * (1 + scale)), (scheme, types, n)
            weights = np.exp(sc - expected)
            for t in range(n):
                brute = np.bincount(good[:, t], weights=weights, minlength=len(tags))
                np.testing.assert_allclose(probs[o + t], brute, atol=1e-8)
            # and the nll of a well-formed gold labelling is log Z - its score
            g = int(rng.integers(len(good)))
            gold = np.full(int(lengths.sum()), -1, dtype=np.int64)
            gold[o:o + n] = good[g]
            nll, _ = inference.nll_and_gradient(scores, structure, gold)
            assert nll[s] == pytest.approx(expected - sc[g], rel=1e-8, abs=1e-8 * (1 + scale))
            checked += 1
    assert checked > 100


def adversarial_scores(rng, tags, scheme, N, W, dtype):
    """Raw scores that favour exactly the moves the scheme forbids."""
    allowed_t, allowed_start, allowed_end = schemes.allowed_moves(tags, scheme)
    prefix, _, _ = schemes.parse_tags(tags)
    L = len(tags)
    sign = lambda ok: np.where(ok, -1.0, 1.0)  # noqa: E731
    emissions = rng.normal(size=(N, L)) * W * 0.01
    emissions[:, (prefix == schemes.INSIDE) | (prefix == schemes.LAST)] += W
    return CRFScores.of(emissions.astype(dtype),
                        transitions=(sign(allowed_t) * W * rng.uniform(0.5, 1.5, size=(L, L))).astype(dtype),
                        start=(sign(allowed_start) * W).astype(dtype),
                        end=(sign(allowed_end) * W).astype(dtype),
                        pair=np.zeros((1, L, L), dtype=dtype), root=np.zeros(L, dtype=dtype))


@pytest.mark.parametrize("scheme", SCHEMES)
def test_viterbi_is_always_well_formed(scheme):
    rng = np.random.default_rng(2 if scheme == "BIO" else 3)
    n_tokens = 0
    for case in range(300):
        types = ("X", "Y", "Z")[: 1 + case % 3]
        tags = schemes.tag_set(types, scheme)
        lengths = rng.integers(1, 13, size=int(rng.integers(1, 5)))
        N = int(lengths.sum())
        dtype = np.float32 if case % 4 == 0 else np.float64
        if case % 3 == 0:
            raw = adversarial_scores(rng, tags, scheme, N, float(rng.choice([1e2, 1e4, 1e8])), dtype)
        else:
            raw = random_scores(rng, len(tags), N, float(rng.choice([0.1, 1.0, 30.0, 1e4])), dtype)
        scores = constrain(raw, tags, scheme)
        labels, best = inference.viterbi(scores, ChainLayout(lengths))
        assert np.isfinite(best).all()
        for o, n in zip(np.cumsum(lengths) - lengths, lengths):
            seq = [tags[i] for i in labels[o:o + n]]
            assert well_formed(seq, scheme), (case, seq)
        n_tokens += N
    assert n_tokens > 1000


def test_viterbi_is_the_best_well_formed_sequence():
    for rng, scheme, types, lengths in case_stream(4, 80):
        tags = schemes.tag_set(types, scheme)
        raw = random_scores(rng, len(tags), int(lengths.sum()), float(rng.choice([1.0, 50.0])))
        labels, best = inference.viterbi(constrain(raw, tags, scheme), ChainLayout(lengths))
        for s, (o, n) in enumerate(zip(np.cumsum(lengths) - lengths, lengths)):
            _, seqs, wf, _ = universe(scheme, types, int(n))
            sc = path_scores(seqs[wf], raw.emissions[o:o + n], raw)
            assert best[s] == pytest.approx(sc.max(), rel=1e-9, abs=1e-9)
            mine = path_scores(labels[None, o:o + n], raw.emissions[o:o + n], raw)[0]
            assert mine == pytest.approx(sc.max(), rel=1e-9, abs=1e-9)
            assert well_formed([tags[i] for i in labels[o:o + n]], scheme)


def span_mass(scheme, types, n, emissions, raw, span):
    """Brute force: P(the labelling contains exactly ``span``), over well-formed labellings."""
    _, seqs, wf, spans = universe(scheme, types, n)
    sc = path_scores(seqs[wf], emissions, raw)
    p = np.exp(sc - logsumexp(sc))
    has = np.asarray([span in s for s, ok in zip(spans, wf) if ok])
    return float(p[has].sum())


@pytest.mark.parametrize("scheme", SCHEMES)
def test_span_probabilities_match_brute_force(scheme):
    """span_probabilities (what span._.crf_confidence stores) for Viterbi spans and
    for the spans of random well-formed labellings, in batches of sequences."""
    checked = 0
    rng = np.random.default_rng(5 if scheme == "BIO" else 6)
    for case in range(60):
        types = TYPE_SETS[case % 2]
        tags = schemes.tag_set(types, scheme)
        stub = span_target(tags, scheme)
        lengths = rng.integers(1, 6, size=int(rng.integers(1, 4)))
        if scheme == "BILUO" and len(types) == 2:
            lengths = np.minimum(lengths, 4)
        N = int(lengths.sum())
        raw = random_scores(rng, len(tags), N, float(rng.choice([0.5, 1.0, 3.0])))
        scores = constrain(raw, tags, scheme)
        structure = ChainLayout(lengths)
        viterbi_ids, _ = inference.viterbi(scores, structure)
        sampled = []
        for n in lengths:
            _, seqs, wf, _ = universe(scheme, types, int(n))
            sampled.append(seqs[wf][int(rng.integers(wf.sum()))])
        sampled = np.concatenate(sampled)
        for label_ids in (viterbi_ids, sampled):
            out, _ = stub.span_confidence(scores, structure, label_ids, None)
            assert out.shape == (N,)
            starts = set()
            for o, n in zip(np.cumsum(lengths) - lengths, lengths):
                seq = [tags[i] for i in label_ids[o:o + n]]
                for a, b, k in read_spans(seq, scheme):
                    expected = span_mass(scheme, types, int(n), raw.emissions[o:o + n], raw, (a, b, k))
                    assert out[o + a] == pytest.approx(expected, rel=2e-5, abs=1e-7), (seq, (a, b, k))
                    starts.add(int(o + a))
                    checked += 1
            assert set(np.flatnonzero(~np.isnan(out)).tolist()) == starts
    assert checked > 100


@pytest.mark.parametrize("scheme", SCHEMES)
def test_forced_decoding_keeps_the_fixed_span(scheme):
    """Fixed labels on one span per sequence (as target.forced gives them, through
    SpanTarget.fixed_labels): Viterbi keeps exactly that span, stays well formed and is
    the best well-formed labelling that contains it; log Z sums over those."""
    rng = np.random.default_rng(7 if scheme == "BIO" else 8)
    vocab = spacy.blank("en").vocab
    checked = 0
    for case in range(120):
        types = TYPE_SETS[case % 2]
        tags = schemes.tag_set(types, scheme)
        tag_id = {t: i for i, t in enumerate(tags)}
        lengths = rng.integers(1, 6, size=int(rng.integers(1, 4)))
        if scheme == "BILUO" and len(types) == 2:
            lengths = np.minimum(lengths, 4)
        N = int(lengths.sum())
        raw = random_scores(rng, len(tags), N, float(rng.choice([1.0, 5.0])))
        # emissions that like to continue spans: the BIO mask after a fixed span matters
        prefix, _, _ = schemes.parse_tags(tags)
        raw.emissions[:, prefix == schemes.INSIDE] += 4.0
        docs, fixed_of, wanted = [], {}, []
        for n in lengths:
            n = int(n)
            a = int(rng.integers(n))
            b = int(rng.integers(a + 1, n + 1))
            k = str(rng.choice(types))
            fixed = np.full(n, -1, dtype=np.int64)
            fixed[a:b] = [tag_id[t] for t in write_spans(n, [(a, b, k)], scheme)[a:b]]
            doc = Doc(vocab, words=[f"w{i}" for i in range(n)])
            docs.append(doc)
            fixed_of[id(doc)] = fixed
            wanted.append((a, b, k))
        stub = span_target(tags, scheme)
        stub.forced = lambda doc: fixed_of[id(doc)]
        scores = constrain(raw, tags, scheme)
        scores = CRFScores.of(scores.emissions.copy(), transitions=scores.transitions, start=scores.start,
                              end=scores.end, pair=scores.pair, root=scores.root)
        before = scores.emissions.copy()
        fixed, scores_fixed = stub.fixed_labels(docs, scores)
        np.testing.assert_array_equal(scores.emissions, before)  # a copy is masked, if any
        scores = scores_fixed
        structure = ChainLayout(lengths)
        labels, best = inference.viterbi(scores, structure, fixed)
        _, log_z = inference.marginals(scores, structure, fixed)
        for s, (o, n) in enumerate(zip(np.cumsum(lengths) - lengths, lengths)):
            seq = [tags[i] for i in labels[o:o + n]]
            assert well_formed(seq, scheme), seq
            assert wanted[s] in read_spans(seq, scheme), (seq, wanted[s])
            _, seqs, wf, spans = universe(scheme, types, int(n))
            keep = np.asarray([ok and wanted[s] in sp for ok, sp in zip(wf, spans)])
            sc = path_scores(seqs[keep], raw.emissions[o:o + n], raw)
            assert best[s] == pytest.approx(sc.max(), rel=1e-9, abs=1e-9)
            assert log_z[s] == pytest.approx(logsumexp(sc), rel=1e-9, abs=1e-9)
            checked += 1
    assert checked > 150


def test_well_formed_unannotates_forbidden_moves_and_leaves_feasible_gold():
    """SpanTarget.repair_gold against the rule written out here: a known gold tag
    is dropped if it starts / ends its sequence where the scheme forbids, or takes
    part in a forbidden move with a known neighbour of the same sequence. Where the
    rest still admits no well-formed labelling (e.g. ``B-X ? L-Y``), more tags of
    that sequence go, and only of that sequence: every result is feasible."""
    rng = np.random.default_rng(9)
    n_dropped = 0
    for case in range(300):
        scheme = SCHEMES[case % 2]
        tags = schemes.tag_set(("X", "Y"), scheme)
        lengths = rng.integers(1, 7, size=int(rng.integers(1, 5)))
        gold = rng.integers(-1, len(tags), size=int(lengths.sum()))
        expected = gold.copy()
        for o, n in zip(np.cumsum(lengths) - lengths, lengths):
            seq = [None if g < 0 else tags[g] for g in gold[o:o + n]]
            bad = set()
            if seq[0] is not None and split_tag(seq[0])[0] in ("I", "L"):
                bad.add(0)
            if seq[-1] is not None and scheme == "BILUO" and split_tag(seq[-1])[0] in ("B", "I"):
                bad.add(n - 1)
            for t in range(1, n):
                if seq[t - 1] is not None and seq[t] is not None and not well_formed_pair(
                        seq[t - 1], seq[t], scheme):
                    bad.update((t - 1, t))
            for t in bad:
                expected[o + t] = -1
        L = len(tags)
        zero = CRFScores.of(np.zeros((int(lengths.sum()), L)), transitions=np.zeros((L, L)), start=np.zeros(L),
                            end=np.zeros(L), pair=np.zeros((1, L, L)), root=np.zeros(L))
        stub = span_target(tags, scheme)
        allowed_t, allowed_s, allowed_e = schemes.allowed_moves(tags, scheme)
        masked = CRFScores.of(zero.emissions, transitions=np.where(allowed_t, 0.0, -np.inf),
                              start=np.where(allowed_s, 0.0, -np.inf),
                              end=np.where(allowed_e, 0.0, -np.inf), pair=zero.pair,
                              root=zero.root)
        structure = ChainLayout(lengths)
        got, n_bad = stub.repair_gold(masked, gold.copy(), structure)
        # the pairwise rule's tags are all gone
        assert np.all(got[expected < 0] < 0)
        # every sequence can now be labelled well formed, honouring what is left
        _, best = inference.viterbi(masked, structure, got)
        assert np.all(np.isfinite(best))
        # tags beyond the pairwise rule go only in sequences that were infeasible
        _, before = inference.viterbi(masked, structure, expected)
        seq_of = np.repeat(np.arange(len(lengths)), lengths)
        extra = (got < 0) & (expected >= 0)
        assert np.all(~np.isfinite(before[seq_of[extra]]))
        dropped = int((got != gold).sum())
        n_dropped += dropped
        assert n_bad == dropped  # the count the component's W003 reports
    assert n_dropped > 100
    # directed: B-X ? L-Y passes the pairwise rule but admits no labelling
    tags = schemes.tag_set(("X", "Y"), "BILUO")
    gold = np.asarray([tags.index("B-X"), -1, tags.index("L-Y")])
    allowed_t, allowed_s, allowed_e = schemes.allowed_moves(tags, "BILUO")
    L = len(tags)
    masked = CRFScores.of(np.zeros((3, L)), transitions=np.where(allowed_t, 0.0, -np.inf),
                          start=np.where(allowed_s, 0.0, -np.inf),
                          end=np.where(allowed_e, 0.0, -np.inf), pair=np.zeros((1, L, L)),
                          root=np.zeros(L))
    got, n_bad = span_target(tags, "BILUO").repair_gold(masked, gold,
                                                         ChainLayout(np.asarray([3])))
    assert got.tolist() == [-1, -1, -1] and n_bad == 2


def well_formed_pair(prev, tag, scheme):
    """Whether ``tag`` may follow ``prev`` somewhere inside a well-formed sequence."""
    p, k = split_tag(prev)
    q, m = split_tag(tag)
    if scheme == "BIO":
        return q != "I" or (p in ("B", "I") and k == m)
    if p in ("B", "I"):
        return q in ("I", "L") and k == m
    return q in ("O", "B", "U")


# ---------------------------------------------------------------- 3. the component

MODEL = {
    "@architectures": "spacy-crf.FeatureCRF.v2",
    "templates": ["NORM[-1..1]", "NORM[-1]|NORM[0]", "SUFFIX2", "PREFIX1", "IS_TITLE[-1..1]"],
    "n_buckets": 4096,
    # the toy's borderline generalisations ("Alice visited ..." as PER) are
    # what these tests read; the factory's L1 penalty tips one of them
    "l1_penalty": 0.0,
}

TEXTS = ["Alice visited New York City .", "Bob met Alice in Paris with Carol Smith .",
         "the cat visited Berlin .", "New York is far ."]


def make_nlp(target="ents", model=MODEL, **config):
    return conftest.make_nlp(target, model, **config)


def ents_of(doc):
    return [(e.start, e.end, e.label_) for e in doc.ents]


@pytest.mark.parametrize("scheme", SCHEMES)
def test_ents_target_learns_toy_ner(scheme):
    nlp = make_nlp(scheme=scheme)
    examples = ner_examples(nlp)
    loss = train(nlp, examples, n_iter=30)[-1]
    assert np.isfinite(loss) and loss < 1.0
    pipe = nlp.get_pipe("crf_tagger")
    assert set(pipe.tags) == set(schemes.tag_set(["PER", "LOC"], scheme))
    assert pipe.labels == ("LOC", "PER")  # the types, as spaCy's ner.labels
    scores = nlp.evaluate(examples)
    assert scores["ents_f"] == 1.0
    assert scores["ents_p"] == 1.0 and scores["ents_r"] == 1.0
    assert set(scores["ents_per_type"]) == {"PER", "LOC"}
    assert scores["crf_acc"] == 1.0
    for (text, ents), doc in zip(TOY_NER, nlp.pipe([t for t, _ in TOY_NER])):
        assert ents_of(doc) == sorted(ents)
        # spaCy's own IOB view of the written entities is well formed
        iob = [f"{t.ent_iob_}-{t.ent_type_}" if t.ent_type_ else "O" for t in doc]
        assert well_formed(iob, "BIO")


@pytest.mark.parametrize("scheme", SCHEMES)
def test_span_confidence_is_a_probability_when_stored(scheme):
    nlp = make_nlp(scheme=scheme, store_confidence=True)
    train(nlp, ner_examples(nlp), n_iter=8)  # not to convergence: confidences below 1
    n_ents = 0
    for doc in nlp.pipe(TEXTS + [t for t, _ in TOY_NER]):
        for ent in doc.ents:
            conf = ent._.crf_confidence
            assert conf is not None and 0.0 < conf <= 1.0, (ent.text, conf)
            # the span's labelling implies each of its token labels: P(span) <= P(token label)
            assert conf <= min(t._.crf_confidence for t in ent) + 1e-6
            n_ents += 1
        # a span that no predicted span starts at has no confidence
        starts = {e.start for e in doc.ents}
        for i in range(len(doc)):
            if i not in starts:
                assert doc[i:i + 1]._.crf_confidence is None
    assert n_ents >= 8


def test_no_span_confidence_when_not_stored():
    nlp = make_nlp(store_confidence=False)
    train(nlp, ner_examples(nlp), n_iter=30)
    docs = list(nlp.pipe(TEXTS))
    assert sum(len(doc.ents) for doc in docs) >= 4
    for doc in docs:
        for ent in doc.ents:
            assert ent._.crf_confidence is None
        assert all(t._.crf_confidence is None for t in doc)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_keep_existing_keeps_ruler_entities_and_decodes_the_rest(scheme):
    nlp = make_nlp(scheme=scheme, keep_existing=True)
    train(nlp, ner_examples(nlp), n_iter=30)
    ruler = nlp.add_pipe("entity_ruler", before="crf_tagger")
    # "Alice" is a PER in training: the ruler says LOC
    ruler.add_patterns([{"label": "LOC", "pattern": "Alice"}])
    doc = nlp("Alice visited New York City .")
    assert ents_of(doc) == [(0, 1, "LOC"), (2, 5, "LOC")]
    doc = nlp("Bob met Alice in Paris with Carol Smith .")
    assert ents_of(doc) == [(0, 1, "PER"), (2, 3, "LOC"), (4, 5, "LOC"), (6, 8, "PER")]


@pytest.mark.parametrize("scheme", SCHEMES)
def test_keep_existing_stops_a_span_at_a_kept_entity(scheme):
    """A kept one-token LOC entity is not continued by the CRF's I-LOC (the BIO mask)."""
    nlp = make_nlp(scheme=scheme, keep_existing=True)
    train(nlp, ner_examples(nlp), n_iter=30)
    assert ents_of(nlp("Carol Smith visited New York City yesterday ."))[1] == (3, 6, "LOC")
    ruler = nlp.add_pipe("entity_ruler", before="crf_tagger")
    ruler.add_patterns([{"label": "LOC", "pattern": "New"}])
    doc = nlp("Carol Smith visited New York City yesterday .")
    assert (3, 4, "LOC") in ents_of(doc), ents_of(doc)
    assert ents_of(doc)[0] == (0, 2, "PER")


@pytest.mark.parametrize("scheme", SCHEMES)
def test_keep_existing_keeps_entities_with_labels_the_crf_does_not_know(scheme):
    nlp = make_nlp(scheme=scheme, keep_existing=True)
    train(nlp, ner_examples(nlp), n_iter=30)
    ruler = nlp.add_pipe("entity_ruler", before="crf_tagger")
    ruler.add_patterns([{"label": "ORG", "pattern": "Alice"}])
    assert ents_of(nlp("Alice visited New York City ."))[0] == (0, 1, "ORG")


def test_keep_existing_asks_each_doc_once_and_a_fresh_batch_skips_the_kept_path(monkeypatch):
    """A batch of fresh docs has nothing to keep: each doc is asked once whether
    it has entities (it was asked three times), no fixed labels are read, and a
    batch mixing docs with and without entities writes what each doc alone gets."""
    nlp = make_nlp(keep_existing=True)
    train(nlp, ner_examples(nlp), n_iter=30)
    target = nlp.get_pipe("crf_tagger").target
    texts = ["Alice visited New York City .", "Bob met Carol Smith in Paris .", "", "Hi ."]
    alone = [ents_of(nlp(t)) for t in texts]
    asked = []
    has_existing = type(target).has_existing
    monkeypatch.setattr(type(target), "has_existing",
                        lambda self, doc: asked.append(doc.text) or has_existing(self, doc))

    def no_fixed_labels(*args):
        raise AssertionError("fixed labels read for a batch of fresh docs")

    monkeypatch.setattr(target, "fixed_labels", no_fixed_labels)
    assert [ents_of(d) for d in nlp.pipe(texts)] == alone
    assert sorted(asked) == sorted(t for t in texts if t)
    # one doc with an entity of its own (the ruler's), the others fresh
    monkeypatch.undo()
    ruler = nlp.add_pipe("entity_ruler", before="crf_tagger")
    ruler.add_patterns([{"label": "ORG", "pattern": "Alice"}])
    alone = [ents_of(nlp(t)) for t in texts]
    assert alone[0][0] == (0, 1, "ORG")
    assert [ents_of(d) for d in nlp.pipe(texts)] == alone


@pytest.mark.parametrize("scheme", SCHEMES)
def test_keep_existing_false_overwrites_preset_entities(scheme):
    nlp = make_nlp(scheme=scheme, keep_existing=False)
    train(nlp, ner_examples(nlp), n_iter=30)
    ruler = nlp.add_pipe("entity_ruler", before="crf_tagger")
    ruler.add_patterns([{"label": "LOC", "pattern": "Alice"}])
    assert nlp.get_pipe("entity_ruler")(nlp.make_doc("Alice visited Paris .")).ents[0].label_ == "LOC"
    doc = nlp("Alice visited New York City .")
    assert ents_of(doc) == [(0, 1, "PER"), (2, 5, "LOC")]


@pytest.mark.parametrize("scheme", SCHEMES)
def test_span_confidence_with_keep_existing_is_a_probability(scheme):
    nlp = make_nlp(scheme=scheme, keep_existing=True, store_confidence=True)
    train(nlp, ner_examples(nlp), n_iter=30)
    ruler = nlp.add_pipe("entity_ruler", before="crf_tagger")
    ruler.add_patterns([{"label": "LOC", "pattern": "Alice"}])
    doc = nlp("Alice visited New York City .")
    assert (0, 1, "LOC") in ents_of(doc)
    for ent in doc.ents:
        assert 0.0 < ent._.crf_confidence <= 1.0, (ent.text, ent._.crf_confidence)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_span_group_target(scheme):
    nlp = make_nlp("spans:sc", scheme=scheme)
    examples = ner_examples(nlp, key="sc")
    train(nlp, examples, n_iter=30)
    scores = nlp.evaluate(examples)
    assert scores["spans_sc_f"] == 1.0
    assert scores["spans_sc_p"] == 1.0 and scores["spans_sc_r"] == 1.0
    for (text, ents), doc in zip(TOY_NER, nlp.pipe([t for t, _ in TOY_NER])):
        assert "sc" in doc.spans
        assert [(s.start, s.end, s.label_) for s in doc.spans["sc"]] == sorted(ents)
        assert not doc.ents  # the span group target leaves doc.ents alone


def test_overlapping_gold_spans_warn_and_keep_the_longest():
    nlp = make_nlp("spans:sc")
    data = TOY_NER + [("the New York City office closed .", [(1, 4, "LOC"), (1, 3, "LOC"), (2, 3, "ORG")])]
    examples = ner_examples(nlp, data, key="sc")
    with pytest.warns(UserWarning, match=r"\[CRF-W002\].*'sc'"):
        loss = train(nlp, examples, n_iter=30)[-1]
    assert np.isfinite(loss)
    pipe = nlp.get_pipe("crf_tagger")
    gold = pipe.target.gold_ids(examples[-1])
    assert [pipe.tags[i] for i in gold] == (
        ["O", "B-LOC", "I-LOC", "L-LOC", "O", "O", "O"])
    assert "B-ORG" not in pipe.tags and "U-ORG" not in pipe.tags
    doc = nlp("the New York City office closed .")
    assert [(s.start, s.end, s.label_) for s in doc.spans["sc"]] == [(1, 4, "LOC")]


def update_with_warnings(nlp, examples, n_iter=5):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        history = train(nlp, examples, n_iter, initialize=False)
    return history, [str(w.message) for w in caught]


def test_gold_from_a_different_tokenization_is_projected_onto_the_predicted_tokens():
    """Reference "Foo NewYork" = B-LOC L-LOC; the predicted doc splits NewYork.
    The gold span is projected onto the predicted tokens, as
    Example.get_aligned_ner() does: B-LOC I-LOC L-LOC, well-formed, so no W003
    (each half once took the L-LOC of the token it aligns to, which broke BILUO;
    issue 35 item 2)."""
    nlp = make_nlp(scheme="BILUO")
    ref = Doc(nlp.vocab, words=["Foo", "NewYork", "rocks"], spaces=[True, True, False])
    ref.set_ents([Span(ref, 0, 2, label="LOC")], default="outside")
    pred = Doc(nlp.vocab, words=["Foo", "New", "York", "rocks"], spaces=[True, False, True, False])
    assert pred.text == ref.text
    bad = Example(pred, ref)
    examples = ner_examples(nlp) + [bad]
    nlp.initialize(lambda: examples)
    history, messages = update_with_warnings(nlp, examples)
    assert not any("[CRF-W003]" in m for m in messages), messages
    assert all(np.isfinite(history)) and history[-1] < history[0]
    pipe = nlp.get_pipe("crf_tagger")
    gold = [pipe.tags[i] for i in pipe.target.gold_ids(bad)]
    assert gold == bad.get_aligned_ner() == ["B-LOC", "I-LOC", "L-LOC", "O"]
    loss, _ = pipe.get_loss([bad], pipe.model.predict([bad.predicted]))
    assert np.isfinite(loss)


def test_scheme_breaking_gold_from_sentence_boundaries_is_unannotated():
    """A predicted sentence boundary inside a gold entity: the second sentence
    starts with I-LOC, which BIO forbids (W003)."""
    nlp = make_nlp(scheme="BIO", sequence="sentence")
    words = ["I", "saw", "New", "York", "City", "today"]
    ref = Doc(nlp.vocab, words=words)
    ref.set_ents([Span(ref, 2, 5, label="LOC")], default="outside")
    pred = Doc(nlp.vocab, words=words, sent_starts=[True, False, False, True, False, False])
    examples = ner_examples(nlp) + [Example(pred, ref)]
    nlp.initialize(lambda: examples)
    history, messages = update_with_warnings(nlp, examples)
    w003 = [m for m in messages if "[CRF-W003]" in m]
    assert w003 and "1 gold tag(s)" in w003[0] and "BIO" in w003[0]
    assert all(np.isfinite(history))


def test_scheme_breaking_gold_after_an_empty_doc():
    # scheme-breaking gold: a predicted sentence boundary inside a gold entity
    # (a split token no longer breaks the scheme: gold spans are projected)
    nlp = make_nlp(scheme="BIO", sequence="sentence")
    words = ["I", "saw", "New", "York", "City", "today"]
    ref = Doc(nlp.vocab, words=words)
    ref.set_ents([Span(ref, 2, 5, label="LOC")], default="outside")
    pred = Doc(nlp.vocab, words=words, sent_starts=[True, False, False, True, False, False])
    bad = Example(pred, ref)
    empty = Example(Doc(nlp.vocab, words=[]), Doc(nlp.vocab, words=[]))
    examples = ner_examples(nlp)
    nlp.initialize(lambda: examples)
    history, messages = update_with_warnings(nlp, [bad], n_iter=1)  # fine alone
    assert any("[CRF-W003]" in m for m in messages) and np.isfinite(history[0])
    history, messages = update_with_warnings(nlp, [empty, bad], n_iter=1)  # E009 here
    assert any("[CRF-W003]" in m for m in messages) and np.isfinite(history[0])


def test_gold_without_a_well_formed_completion_is_unannotated():
    """Known tags B-X ? L-Y admit no well-formed labelling: the feasibility pass
    of repair_gold unannotates the known tags next to the gap (W003).

    Merged tokens no longer give such gold: "Foo BarBaz Qux" against B-X L-X
    B-Y L-Y projects neither span (each ends inside "BarBaz"), so every token
    is unannotated, as in Example.get_aligned_ner()."""
    nlp = make_nlp(scheme="BILUO")
    ref = Doc(nlp.vocab, words=["Foo", "Bar", "Baz", "Qux"], spaces=[True, False, True, False])
    ref.set_ents([Span(ref, 0, 2, label="PER"), Span(ref, 2, 4, label="LOC")], default="outside")
    pred = Doc(nlp.vocab, words=["Foo", "BarBaz", "Qux"], spaces=[True, True, False])
    assert pred.text == ref.text
    merged = Example(pred, ref)
    examples = ner_examples(nlp) + [merged]
    nlp.initialize(lambda: examples)
    pipe = nlp.get_pipe("crf_tagger")
    assert merged.get_aligned_ner() == [None, None, None]
    assert pipe.target.gold_ids(merged).tolist() == [-1, -1, -1]
    history, messages = update_with_warnings(nlp, examples, n_iter=1)
    assert all(np.isfinite(history))
    first, second = sorted({t.split("-", 1)[1] for t in pipe.tags if t != "O"})[:2]
    gold = np.asarray([pipe.tags.index(f"B-{first}"), -1,
                       pipe.tags.index(f"L-{second}")], dtype=np.int64)
    scores = pipe.target.constrain(pipe.model.predict([pred]))
    repaired, n_bad = pipe.target.repair_gold(scores, gold, pipe.batch_layout([pred]))
    assert repaired.tolist() == [-1, -1, -1] and n_bad == 2


@pytest.mark.parametrize("target", ["ents", "spans:sc"])
def test_tree_structure_with_a_span_target_is_a_clear_error(target):
    nlp = spacy.blank("en")
    with pytest.raises(ValueError, match=r"\[CRF-E018\].*chain"):
        nlp.add_pipe("crf_tagger", config={"model": dict(MODEL), "target": target,
                                           "structure": "tree"})
    assert "crf_tagger" not in nlp.pipe_names


@pytest.mark.parametrize("target", ["ents", "spans:sc"])
@pytest.mark.parametrize("scheme", ["IOB", "bio", "BILOU", ""])
def test_unknown_scheme_is_a_clear_error(target, scheme):
    nlp = spacy.blank("en")
    with pytest.raises(ValueError, match=r"\[CRF-E060\] Unknown scheme.*'BIO' or 'BILUO'"):
        nlp.add_pipe("crf_tagger", config={"model": dict(MODEL), "target": target,
                                           "scheme": scheme})


@pytest.mark.parametrize("scheme", SCHEMES)
def test_save_and_load_gives_identical_entities_and_confidences(scheme, tmp_path):
    nlp = make_nlp(scheme=scheme, store_confidence=True)
    train(nlp, ner_examples(nlp), n_iter=10)
    texts = TEXTS + [t for t, _ in TOY_NER]
    before = [(ents_of(d), [e._.crf_confidence for e in d.ents], [t._.crf_confidence for t in d])
              for d in nlp.pipe(texts)]
    assert sum(len(b[0]) for b in before) >= 8
    nlp.to_disk(tmp_path / "ner")
    loaded = spacy.load(tmp_path / "ner")
    pipe = loaded.get_pipe("crf_tagger")
    assert pipe.cfg["scheme"] == scheme and pipe.cfg["target"] == "ents"
    assert pipe.cfg["store_confidence"] is True
    after = [(ents_of(d), [e._.crf_confidence for e in d.ents], [t._.crf_confidence for t in d])
             for d in loaded.pipe(texts)]
    assert after == before


# ---------------------------------------------------------------- 4. CLI


def read_iob2(path):
    """(words, tags) of every sentence of a UNER file."""
    sents = []
    for block in path.read_text(encoding="utf8").strip("\n").split("\n\n"):
        rows = [line.split("\t") for line in block.splitlines() if line and not line.startswith("#")]
        if rows:
            sents.append(([r[1] for r in rows], [r[2] for r in rows]))
    return sents


@pytest.fixture(scope="module")
def uner_corpus(tmp_path_factory):
    from spacy_crf.commands.convert import main as convert_main

    work = tmp_path_factory.mktemp("uner")
    out = {}
    for split in ("train", "dev"):
        path = work / "corpus" / f"{split}.spacy"
        proc = run_main(convert_main, ["uner", EWT / f"en_ewt-{split}.iob2", path,
                                       "--conllu", EWT / f"en_ewt-{split}.conllu"])
        assert proc.returncode == 0, proc.stderr
        assert "Wrote" in proc.stdout
        out[split] = path
    out["work"] = work
    return out


@pytest.mark.parametrize("split", ["train", "dev"])
def test_uner_conversion_has_entities_and_trees(uner_corpus, split):
    nlp = spacy.blank("en")
    docs = list(DocBin().from_disk(uner_corpus[split]).get_docs(nlp.vocab))
    sents = read_iob2(EWT / f"en_ewt-{split}.iob2")
    assert len(docs) == len(sents) > 100
    n_ents = 0
    for doc, (words, tags) in zip(docs, sents):
        assert [t.text for t in doc] == words
        expected = read_spans(tags, "BIO")
        assert ents_of(doc) == expected
        n_ents += len(expected)
        assert doc.has_annotation("DEP") and doc.has_annotation("POS")
        assert doc.has_annotation("TAG") and doc.has_annotation("LEMMA")
        assert all(t.pos_ for t in doc)
        assert sum(t.dep_ == "root" for t in doc) >= 1
        assert all(t.head.i == t.i for t in doc if t.dep_ == "root")
        assert doc.user_data[("spacy_crf", "sent_id")]
    assert n_ents > 100
    assert {label for doc in docs for label in (e.label_ for e in doc.ents)} == {"PER", "ORG", "LOC"}


def test_uner_converter_rejects_mismatched_conllu(tmp_path):
    from spacy_crf.commands.convert import main as convert_main

    out = tmp_path / "bad.spacy"
    proc = run_main(convert_main, ["uner", EWT / "en_ewt-train.iob2", out,
                                   "--conllu", EWT / "en_ewt-dev.conllu"])
    assert proc.returncode != 0
    stderr = " ".join(proc.stderr.split())  # wasabi wraps its lines at 80 columns
    assert "no CoNLL-U sentence has its tokens" in stderr
    first_id = next(line.split("=", 1)[1].strip() for line in
                    (EWT / "en_ewt-train.iob2").read_text(encoding="utf8").splitlines()
                    if line.startswith("# sent_id"))
    assert first_id in stderr
    assert not out.exists()


@pytest.fixture(scope="module")
def uner_trained(uner_corpus):
    work = uner_corpus["work"]
    out = work / "output"
    spacy_train(CONFIGS / "uner_ner.cfg", out,
                "--paths.train", uner_corpus["train"], "--paths.dev", uner_corpus["dev"],
                "--training.max_epochs", "2", "--training.eval_frequency", "20",
                "--training.batcher.size", "300",
                "--components.crf_tagger.model.n_buckets", "65536", cwd=work)
    return out


def test_uner_training_model_best_loads_and_scores(uner_trained, uner_corpus):
    path = uner_trained / "model-best"
    perf = srsly.read_json(path / "meta.json")["performance"]
    assert perf["ents_f"] > 0.2
    assert {"ents_p", "ents_r"} <= set(perf)
    nlp = spacy.load(path)
    assert nlp.pipe_names == ["crf_tagger"]
    pipe = nlp.get_pipe("crf_tagger")
    assert pipe.cfg["target"] == "ents" and pipe.cfg["scheme"] == "BILUO"
    assert set(pipe.tags) == set(schemes.tag_set(["PER", "ORG", "LOC"], "BILUO"))
    docs = list(DocBin().from_disk(uner_corpus["dev"]).get_docs(nlp.vocab))
    predicted = list(nlp.pipe(doc.text for doc in docs[:100]))
    assert sum(len(doc.ents) for doc in predicted) > 10
    for doc in predicted:
        iob = [f"{t.ent_iob_}-{t.ent_type_}" if t.ent_type_ else "O" for t in doc]
        assert well_formed(iob, "BIO")


@pytest.mark.parametrize("scheme", ["BIO", "BILUO"])
def test_a_sentence_boundary_inside_a_name_keeps_predictions_well_formed(scheme):
    """An upstream parser or senter that splits a name: each sentence is its own
    chain, so no predicted entity crosses the boundary, every one is well formed
    and has a confidence, and the tokens around the split are still labelled."""
    nlp = make_nlp(scheme=scheme, store_confidence=True, sequence="sentence")
    examples = ner_examples(nlp)
    train(nlp, examples, n_iter=30)
    text = TOY_NER[2][0].split()  # "Carol Smith visited New York City yesterday ."
    a = 3
    starts = [False] * len(text)
    starts[0] = starts[a + 1] = True  # a boundary before "York"
    doc = nlp(Doc(nlp.vocab, words=text, sent_starts=starts))
    boundaries = {sent.start for sent in doc.sents}
    assert a + 1 in boundaries
    for ent in doc.ents:
        assert not any(ent.start < k < ent.end for k in boundaries)
        assert 0.0 < ent._.crf_confidence <= 1.0
    assert all(t.ent_iob_ in ("B", "I", "O") for t in doc)


def test_spacys_spancat_scorer_scores_a_span_group_component():
    """spaCy's spancat passes its scorer the spans_key; the component passes
    it too, so spacy.spancat_scorer.v1 serves as a scorer (it was a KeyError
    'spans_key' at evaluate), and agrees with the component's own."""
    def scored(scorer):
        nlp = spacy.blank("en")
        config = {"target": "spans:sc"}
        if scorer:
            config["scorer"] = {"@scorers": scorer}
        nlp.add_pipe("crf_tagger", config=config)
        ref = Doc(nlp.vocab, words=["John", "lives", "in", "Paris"])
        ref.spans["sc"] = [Span(ref, 0, 1, "PER"), Span(ref, 3, 4, "LOC")]
        examples = [Example(nlp.make_doc(ref.text), ref)] * 4
        train(nlp, examples, 20)
        return nlp.evaluate(examples)

    own, spancat = scored(None), scored("spacy.spancat_scorer.v1")
    assert spancat["spans_sc_f"] == own["spans_sc_f"] == 1.0
    assert spancat["spans_sc_per_type"] == own["spans_sc_per_type"]


@pytest.mark.parametrize("target", ["ents", "spans:sc"])
def test_no_span_starts_on_a_whitespace_token(target):
    """spaCy's ner never starts an entity on whitespace; a doc of whitespace
    tokens alone came out as one entity (a probe: PER over 10 to 100k
    tokens). A gold span that starts there is left unannotated, not a
    diverged loss."""
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"target": target})
    words = ["\n\n", "John", "Smith", "saw", "\n", "Paris", "."]
    gold = Doc(nlp.vocab, words=words, spaces=[False] * len(words))
    spans = [Span(gold, 1, 3, "PER"), Span(gold, 4, 6, "LOC")]  # "\n Paris": starts on "\n"
    if target == "ents":
        gold.set_ents(spans)
    else:
        gold.spans["sc"] = spans
    examples = [Example(Doc(nlp.vocab, words=words, spaces=[False] * len(words)), gold)] * 4
    losses = train(nlp, examples, 20)
    assert np.isfinite(losses).all() and losses[-1] < losses[0]
    for n in (1, 10, 1000):
        blank = Doc(nlp.vocab, words=["\n", "  ", "\t"] * n, spaces=[False] * 3 * n)
        found = list(nlp(blank).ents) if target == "ents" else list(nlp(blank).spans["sc"])
        assert found == []
    doc = nlp(Doc(nlp.vocab, words=words, spaces=[False] * len(words)))
    found = doc.ents if target == "ents" else doc.spans["sc"]
    assert [(span.text, span.label_) for span in found] == [("JohnSmith", "PER")]
