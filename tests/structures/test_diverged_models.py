"""Issue 29: a diverged model (weights NaN) raises E009 under every structure.

The semi-Markov CRF and the second-order chain set the loss of a sequence
with no labelling to 0 with ``nll[~np.isfinite(log Z)] = 0``, which took a NaN
log Z for "no labelling" too: the loss read 0.0, E009 never fired and the
model went on to predict all ``O``.
"""

import numpy as np
import pytest
import spacy
from spacy.training import Example

from spacy_crf.models.potentials import CRFScores
from spacy_crf.structures import get_structure
from spacy_crf.structures.second_order import SecondOrderLayout, all_pairs
from conftest import chain

TEXTS = [("Alice Smith lives in New York City .", [(0, 11, "PER"), (21, 34, "LOC")]),
         ("Bob went to Paris yesterday .", [(0, 3, "PER"), (12, 17, "LOC")])]

CONFIGS = {"chain": {}, "semi_markov": {"structure": "semi_markov"}, "order2": {"structure": chain(2)}}


def poison(model, value=np.nan):
    """Every parameter of ``model`` set to ``value``, as a diverged optimizer leaves them."""
    for node in model.walk():
        for name in node.param_names:
            if node.has_param(name):
                node.set_param(name, np.full_like(node.get_param(name), value))


@pytest.mark.parametrize("kind", sorted(CONFIGS))
def test_an_update_with_nan_weights_raises_e009(kind):
    nlp = spacy.blank("en")
    crf = nlp.add_pipe("crf_tagger", config={"target": "ents", **CONFIGS[kind]})
    examples = [Example.from_dict(nlp.make_doc(t), {"entities": e}) for t, e in TEXTS]
    optimizer = nlp.initialize(lambda: examples)
    nlp.update(examples, sgd=optimizer)
    poison(crf.model)
    with pytest.raises(ValueError, match=r"\[CRF-E009\].*became nan"):
        nlp.update(examples, sgd=optimizer)


def test_second_order_nll_is_nan_not_zero_when_scores_are_nan():
    L, lengths = 3, np.asarray([3, 2])
    N = int(lengths.sum())
    scores = CRFScores.of(np.full((N, L), np.nan), transitions=np.zeros((L, L)), start=np.zeros(L),
                          end=np.zeros(L), pair=np.zeros((1, L, L)), root=np.zeros(L),
                          triples=np.zeros((L + 1, L, L)))
    nll, _ = get_structure("chain_order2").nll_and_gradient(
        scores, SecondOrderLayout(lengths, all_pairs(L)), np.zeros(N, dtype=np.int64))
    assert np.isnan(nll).all()


def test_no_labelling_at_all_still_costs_nothing():
    """What the zeroing is for: a sequence whose every labelling is forbidden (-inf)."""
    L, lengths = 3, np.asarray([2])
    scores = CRFScores.of(np.full((2, L), -np.inf), transitions=np.zeros((L, L)), start=np.zeros(L),
                          end=np.zeros(L), pair=np.zeros((1, L, L)), root=np.zeros(L),
                          triples=np.zeros((L + 1, L, L)))
    nll, _ = get_structure("chain_order2").nll_and_gradient(
        scores, SecondOrderLayout(lengths, all_pairs(L)), np.zeros(2, dtype=np.int64))
    assert nll.tolist() == [0.0]
