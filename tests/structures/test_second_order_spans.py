"""Issue 29 item 2: order-2 span confidence is one constrained forward-backward
per sequence (linear in tokens), exact against brute-force enumeration, and
order 2 refuses a label set whose pair states would not fit in memory."""

import subprocess
import sys

import numpy as np
import pytest
import spacy
from spacy.training import Example

from kernels.oracle import labellings, logsumexp
from spacy_crf.errors import Errors
from spacy_crf.structures import get_structure
from spacy_crf.structures.second_order import MAX_LABEL_TRIPLES, max_order2_labels
from structures.test_second_order import path_score, problem
from conftest import chain


def random_spans(rng, lengths, per_sequence=3):
    """A few spans per sequence (sorted by start; they may overlap: each is its own question)."""
    spans = []
    for o, n in zip(np.cumsum(lengths) - lengths, lengths):
        for _ in range(per_sequence):
            a = int(rng.integers(0, n))
            spans.append((int(o) + a, int(o) + int(rng.integers(a + 1, n + 1))))
    spans.sort()
    return spans


def brute_span_log_probabilities(scores, layout, labels, spans, blocked, fixed):
    L = scores.emissions.shape[1]
    seq_start = np.cumsum(layout.lengths) - layout.lengths
    out = []
    for s, e in spans:
        q = int(np.searchsorted(seq_start + layout.lengths, s, side="right"))
        o, n = int(seq_start[q]), int(layout.lengths[q])
        seqs = [ys for ys in labellings(n, L, layout.pairs)
                if all(f < 0 or f == y for f, y in zip(fixed[o:o + n], ys))]
        sc = np.asarray([path_score(scores, o, ys) for ys in seqs])
        inside = np.asarray([all(ys[t - o] == labels[t] for t in range(s, e))
                             and (e == o + n or not blocked[labels[e - 1], ys[e - o]])
                             for ys in seqs], dtype=bool)
        out.append(logsumexp(sc[inside]) - logsumexp(sc) if len(seqs) else np.nan)
    return np.asarray(out)


def check_against_brute_force(scores, layout, rng, force_log, gold_like):
    L = scores.emissions.shape[1]
    N = int(layout.lengths.sum())
    # gold-like labels follow kept pairs more often than random ones do
    labels = rng.integers(0, L, size=N) if not gold_like else np.zeros(N, dtype=np.int64)
    spans = random_spans(rng, layout.lengths)
    starts, ends = (np.asarray(x, dtype=np.int64) for x in zip(*spans))
    blocked = rng.random((L, L)) < 0.3
    fixed = np.where(rng.random(N) < 0.15, rng.integers(0, L, size=N), -1)
    log_p, _ = get_structure("chain_order2").span_log_probabilities(
        scores, layout, labels, starts, ends, blocked, fixed, force_log=force_log)
    expected = brute_span_log_probabilities(scores, layout, labels, spans, blocked, fixed)
    finite = np.isfinite(expected)
    np.testing.assert_allclose(log_p[finite], expected[finite], atol=1e-8)
    assert np.all(np.isneginf(log_p[np.isneginf(expected)]))
    assert np.all(np.isnan(log_p[np.isnan(expected)]))
    return finite.sum()


@pytest.mark.parametrize("force_log", [False, True], ids=["scaled", "log"])
@pytest.mark.parametrize("prune", [False, True])
@pytest.mark.parametrize("seed", range(8))
def test_several_spans_per_sequence_match_brute_force(seed, prune, force_log):
    scores, layout, rng = problem(100 + seed, prune=prune)
    check_against_brute_force(scores, layout, rng, force_log, gold_like=bool(seed % 2))


@pytest.mark.parametrize("seed", range(4))
def test_scores_too_large_to_scale_take_the_log_path_exactly(seed):
    """Scores far beyond the scaled pass's guard: the kernel falls back to logs."""
    scores, layout, rng = problem(200 + seed)
    scores.emissions[...] *= 300.0
    scores.triples[...] *= 300.0
    check_against_brute_force(scores, layout, rng, False, gold_like=False)


MEMORY_SCRIPT = """
import resource, sys
import numpy as np
from spacy_crf.models.potentials import CRFScores
from spacy_crf.structures import get_structure
from spacy_crf.structures.second_order import SecondOrderLayout, all_pairs
n, L = int(sys.argv[1]), 3
rng = np.random.default_rng(0)
scores = CRFScores.of(rng.normal(size=(n, L)), transitions=rng.normal(size=(L, L)),
                      start=rng.normal(size=L), end=rng.normal(size=L),
                      triples=rng.normal(size=(L + 1, L, L)))
layout = SecondOrderLayout(np.asarray([n]), all_pairs(L))
labels = np.zeros(n, dtype=np.int64)
starts = np.arange(0, n, 2, dtype=np.int64)  # a one-token span at every other token
structure = get_structure("chain_order2")
structure.span_log_probabilities(scores, layout, labels, starts[:2], starts[:2] + 1,
                                 np.zeros((L, L), dtype=bool))  # compiled / cached kernels
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
log_p, _ = structure.span_log_probabilities(scores, layout, labels, starts, starts + 1,
                                            np.zeros((L, L), dtype=bool))
assert np.all(np.isfinite(log_p))
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024)
"""


def test_memory_does_not_grow_with_spans_times_length():
    """2000 tokens, 1000 spans: a clamped copy of the sequence per span took 2 million
    rows of pair scores (hundreds of MB); one pass per sequence takes a few MB."""
    run = subprocess.run([sys.executable, "-c", MEMORY_SCRIPT, "2000"], capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert float(run.stdout.strip()) < 40.0, f"peak grew by {run.stdout.strip()} MB"


def test_the_label_bound_is_documented_and_consistent():
    L = max_order2_labels()
    assert (L + 1) * L * L <= MAX_LABEL_TRIPLES < (L + 2) * (L + 1) ** 2
    assert str(L) in Errors.E147


def test_too_many_labels_for_order_two_is_a_clear_error_at_initialize():
    """300 labels took about 1 GB at initialize, with no guard."""
    n = max_order2_labels() + 1
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"target": "tag", "structure": chain(2)})
    words = [f"w{i}" for i in range(n)]
    examples = [Example.from_dict(nlp.make_doc(" ".join(words)),
                                  {"tags": [f"T{i}" for i in range(n)]})]
    with pytest.raises(ValueError, match=rf"\[CRF-E147\].*{n} labels"):
        nlp.initialize(lambda: examples)
