"""``spacy-crf.HMM.v1``: a first-order hidden Markov model, the generative baseline.

An HMM tags as a chain CRF whose scores are log probabilities:

* ``transitions[a, b] = log P(b | a)``, ``start[b] = log P(b | START)``,
  ``end[a] = log P(END | a)``, smoothed by adding ``smoothing`` to every count;
* ``emissions[t, y] = log P(y | w_t) - log P(y)`` for a word seen in
  training, ``P(y | w)`` its tag counts with ``smoothing`` times ``P(y)``
  added. By Bayes' rule this is ``log P(w | y) - log P(w)``: it differs from
  the HMM's ``log P(w | y)`` by ``log P(w)``, the same for every tag, which
  changes neither the best path nor the marginals;
* for an unseen word, TnT's suffix model (Brants 2000) in the same form,
  ``log P(y | s) - log P(y)``, where ``s`` is the word's longest suffix (1 to
  4 characters, with its capitalisation) seen among the rare training words,
  and ``P(y | s)`` is interpolated with the shorter suffixes by successive
  abstraction (weight ``theta``, the standard deviation of the tag
  probabilities).

So the chain kernel's Viterbi is the HMM's Viterbi and its marginals are the
HMM's posteriors. The model learns from counts, once: the component hands it
the gold labels of the training corpus at ``initialize`` (``FIT_COUNTS``);
``update`` computes its loss but changes nothing (no parameter gets a
gradient, so no optimizer step, no weight decay). Words are ORTH; every count
table is hashed (``n_buckets`` rows).
"""

from typing import List, Optional, Sequence, Tuple

import numpy as np
from spacy.tokens import Doc
from thinc.api import Model

from ..features.extract import extract_features
from ..features.templates import FeatureTemplates
from ..features.whitespace import FOLDED, WHITESPACE, folds
from ..ragged import previous_in_sequence
from .grow import LABEL_AXES
from .hooks import FIT_COUNTS, STRUCTURES
from .potentials import CRFScores

#: the word, then its capitalisation and suffixes of 1..4 characters with it
TEMPLATES = ("ORTH", "IS_TITLE", "SUFFIX1|IS_TITLE", "SUFFIX2|IS_TITLE", "SUFFIX3|IS_TITLE",
             "SUFFIX4|IS_TITLE")
N_SUFFIX_LEVELS = len(TEMPLATES) - 1
#: words seen at most this often feed the suffix model (TnT's threshold)
RARE = 10


def hmm(n_buckets: int = 2**18, smoothing: float = 0.1, nO: Optional[int] = None
        ) -> Model[List[Doc], CRFScores]:
    """The HMM layer (see the module docstring); ``nO`` is the number of tags."""
    return Model(
        "hmm",
        forward,
        init=init,
        dims={"nO": nO},
        params={"lexicon": None, "lexicon_count": None, "suffix": None, "suffix_count": None,
                "transitions": None, "start": None, "end": None},
        attrs={LABEL_AXES: {"lexicon": (None, "out"), "suffix": (None, "out"),
                            "transitions": ("out", "out"), "start": ("out",), "end": ("out",)},
               "templates": FeatureTemplates(list(TEMPLATES)), "n_buckets": n_buckets,
               "smoothing": float(smoothing), FIT_COUNTS: fit_counts, STRUCTURES: ("chain",),
               WHITESPACE: FOLDED},
    )


def init(model: Model, X=None, Y=None) -> None:
    L, B = model.get_dim("nO"), model.attrs["n_buckets"]
    zeros = model.ops.alloc2f
    model.set_param("lexicon", zeros(B, L))
    model.set_param("lexicon_count", model.ops.alloc1f(B))
    model.set_param("suffix", zeros(B, L))
    model.set_param("suffix_count", model.ops.alloc1f(B))
    # uniform until fit_counts has seen the corpus
    model.set_param("transitions", zeros(L, L))
    model.set_param("start", model.ops.alloc1f(L))
    model.set_param("end", model.ops.alloc1f(L))


def forward(model: Model, docs: List[Doc], is_train: bool) -> Tuple[CRFScores, callable]:
    buckets = _buckets(model, docs)
    emissions = emission_scores(model, buckets)
    scores = CRFScores(emissions, {name: model.get_param(name)
                                   for name in ("transitions", "start", "end")})

    def backprop(d_scores: CRFScores) -> List:
        return []  # counts are not learned by gradient

    return scores, backprop


def emission_scores(model: Model, buckets: np.ndarray) -> np.ndarray:
    """(N, L) log P(w | y) for known words, the suffix model's score for the rest."""
    lexicon_count = model.get_param("lexicon_count")
    suffix, suffix_count = model.get_param("suffix"), model.get_param("suffix_count")
    known = lexicon_count[buckets[:, 0]] > 0
    # the longest suffix level seen in training (level 0: capitalisation only)
    seen = suffix_count[buckets[:, 1:]] > 0
    level = N_SUFFIX_LEVELS - 1 - np.argmax(seen[:, ::-1], axis=1)
    rows = buckets[np.arange(buckets.shape[0]), 1 + level]
    emissions = np.where(seen.any(axis=1)[:, None], suffix[rows], 0.0)
    emissions = np.where(known[:, None], model.get_param("lexicon")[buckets[:, 0]], emissions)
    return np.ascontiguousarray(emissions, dtype=model.get_param("lexicon").dtype)


def fit_counts(model: Model, docs: Sequence[Doc], gold: np.ndarray, lengths: np.ndarray) -> None:
    """Set every table from the counts of a labelled corpus.

    Parameters
    ----------
    model : Model
        The HMM layer, initialized for ``L`` tags.
    docs : sequence of Doc
        The training docs, their tokens concatenated in order.
    gold : numpy.ndarray
        (N,) tag ids, -1 where unknown (not counted).
    lengths : numpy.ndarray
        The lengths of the chains (sentences) the tokens form.
    """
    L, B = model.get_dim("nO"), model.attrs["n_buckets"]
    d = model.attrs["smoothing"]
    buckets = _buckets(model, docs)
    gold = np.asarray(gold, dtype=np.int64)
    known = gold >= 0
    tag_count = np.bincount(gold[known], minlength=L).astype(np.float64)
    p_tag = (tag_count + d) / (tag_count.sum() + d * L)

    # transitions, with START and END: every a -> b of known neighbours
    before = previous_in_sequence(gold, lengths, fill=L)  # L: START
    first_rows = before == L
    moves = known & ((before >= 0) | first_rows)
    pair = np.zeros((L + 1, L + 1))
    np.add.at(pair, (before[moves], gold[moves]), 1.0)
    last = np.zeros(gold.shape[0], dtype=bool)
    ends = np.cumsum(lengths)[np.asarray(lengths) > 0] - 1
    last[ends] = True
    np.add.at(pair, (gold[known & last], L), 1.0)
    smoothed = np.log(pair + d) - np.log(pair.sum(axis=1, keepdims=True) + d * (L + 1))
    model.set_param("transitions", smoothed[:L, :L].astype("f"))
    model.set_param("start", smoothed[L, :L].astype("f"))
    model.set_param("end", smoothed[:L, L].astype("f"))

    # lexicon: log P(y | w) - log P(y), P(y | w) smoothed towards P(y)
    words = buckets[known, 0]
    word_tag = np.zeros((B, L))
    np.add.at(word_tag, (words, gold[known]), 1.0)
    word_count = word_tag.sum(axis=1)
    lexicon = (np.log(word_tag + d * p_tag[None, :]) - np.log(word_count + d)[:, None]
               - np.log(p_tag)[None, :])
    model.set_param("lexicon", np.where(word_count[:, None] > 0, lexicon, 0.0).astype("f"))
    model.set_param("lexicon_count", word_count.astype("f"))

    # suffixes of the rare words, by successive abstraction from level 0 up
    rare = known & (word_count[buckets[:, 0]] <= RARE)
    theta = float(np.std(p_tag, ddof=1)) if L > 1 else 1.0
    suffix = np.zeros((B, L))
    suffix_count = np.zeros(B)
    parent_p = np.broadcast_to(p_tag, (int(rare.sum()), L))  # P(y) below level 0
    for level in range(N_SUFFIX_LEVELS):
        rows = buckets[rare, 1 + level]
        counts = np.zeros((B, L))
        np.add.at(counts, (rows, gold[rare]), 1.0)
        total = counts.sum(axis=1)
        estimate = counts[rows] / total[rows, None]
        p = (estimate + theta * parent_p) / (1.0 + theta)
        suffix[rows] = np.log(p) - np.log(p_tag)[None, :]
        suffix_count[rows] = total[rows]
        parent_p = p
    model.set_param("suffix", suffix.astype("f"))
    model.set_param("suffix_count", suffix_count.astype("f"))


def _buckets(model: Model, docs: Sequence[Doc]) -> np.ndarray:
    """(N, 6) int64 hashed-table rows of the word and its suffix levels."""
    features = extract_features(docs, model.attrs["templates"],
                                fold_whitespace=folds(model.attrs))
    return (features % np.uint64(model.attrs["n_buckets"])).astype(np.int64)
