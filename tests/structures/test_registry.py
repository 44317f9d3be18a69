"""The structure interface: the registry, and a structure added without touching the component."""

from dataclasses import dataclass

import numpy as np
import pytest
import spacy
from spacy.training import Example

from spacy_crf import inference
from spacy_crf.features.doc_arrays import batch_sequence_lengths
from spacy_crf.structures import (BatchLayout, ChainLayout, CRFStructure, TreeLayout,
                                  get_structure, register_structure, structure_names)
from spacy_crf.structures import base as structures_base
from spacy_crf.structures.base import gradient_in_dtype


def test_registry_has_chain_and_tree():
    assert {"chain", "tree"} <= set(structure_names())
    assert get_structure("chain").params == ("transitions", "start", "end")
    assert get_structure("tree").params == ("pair", "root")
    assert ChainLayout(np.array([2])).structure is get_structure("chain")
    assert TreeLayout(np.array([2]), np.array([-1, 0]), np.array([1, 0])).structure is \
        get_structure("tree")


def test_unknown_structure_names_the_known_ones():
    with pytest.raises(ValueError, match=r"E012.*'tre'.*'chain', 'tree'"):
        get_structure("tre")
    nlp = spacy.blank("en")
    with pytest.raises(ValueError, match=r"E012.*'chian'"):
        nlp.add_pipe("crf_tagger", config={"structure": "chian"})


def test_optional_methods_raise_clear_errors_on_trees():
    layout = TreeLayout(np.array([2]), np.array([-1, 0]), np.array([1, 0]))
    tree = get_structure("tree")
    assert not tree.supports_spans and not tree.supports_n_best
    with pytest.raises(ValueError, match="E065"):
        tree.n_best(None, layout, 2)
    with pytest.raises(ValueError, match="E051"):
        tree.span_log_probabilities(None, layout, None, None, None, None)


# -- a structure defined here: tokens labelled independently (no interactions) ---------

@dataclass
class TokensLayout(BatchLayout):
    structure_name = "independent_tokens"


class IndependentTokens(CRFStructure):
    """Each token's label on its own: softmax marginals, argmax decoding."""

    name = "independent_tokens"
    params = ()
    layout_class = TokensLayout

    def layout(self, docs, pipe):
        return TokensLayout(batch_sequence_lengths(docs))

    def param_shapes(self, n_labels, n_relations=1):
        return {}

    def _log_softmax(self, scores, layout, fixed):
        e = self.check(scores, layout).copy()
        if fixed is not None:
            keep = np.asarray(fixed) >= 0
            mask = np.full_like(e, -np.inf)
            mask[keep, np.asarray(fixed)[keep]] = 0.0
            e[keep] += mask[keep]
        top = e.max(axis=1, keepdims=True)
        log_norm = top[:, 0] + np.log(np.exp(e - top).sum(axis=1))
        return e, log_norm

    def _per_sequence(self, values, layout):
        return np.add.reduceat(values, np.cumsum(layout.lengths) - layout.lengths) \
            if values.size else np.zeros(layout.n_sequences)

    def viterbi(self, scores, layout, fixed=None):
        e, _ = self._log_softmax(scores, layout, fixed)
        labels = e.argmax(axis=1)
        return labels, self._per_sequence(e[np.arange(len(labels)), labels], layout)

    def marginals(self, scores, layout, fixed=None):
        e, log_norm = self._log_softmax(scores, layout, fixed)
        return np.exp(e - log_norm[:, None]), self._per_sequence(log_norm, layout)

    def nll_and_gradient(self, scores, layout, gold):
        e, log_norm = self._log_softmax(scores, layout, None)
        gold = np.asarray(gold)
        known = gold >= 0
        token_nll = np.where(known, log_norm - e[np.arange(len(gold)), np.maximum(gold, 0)], 0.0)
        grad = np.exp(e - log_norm[:, None])
        grad[known, gold[known]] -= 1.0
        grad[~known] = 0.0
        return self._per_sequence(token_nll, layout), gradient_in_dtype(scores, {"emissions": grad})

    def labelling_counts(self, layout, labels, weights, out):
        pass


@pytest.fixture
def independent_tokens():
    import catalogue

    from spacy_crf.structures import config as structure_config

    register_structure(IndependentTokens)
    # its config block: what a new structure's module registers beside its strategy
    structure_config.register_spec("test.IndependentTokens.v1", "independent_tokens")(
        lambda: structure_config.StructureSpec("independent_tokens"))
    yield get_structure("independent_tokens")
    structures_base._STRUCTURES.pop("independent_tokens")
    structure_config._BLOCKS.pop("independent_tokens")
    catalogue.REGISTRY.pop(("spacy", "structures", "test.IndependentTokens.v1"), None)


def test_a_registered_structure_runs_in_the_component_unchanged(independent_tokens, tmp_path):
    """Adding a structure is adding code of its own: the component trains, decodes,
    stores confidences and round-trips with it, with no branch of its own."""
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"target": "tag", "store_confidence": True,
                                       "structure": {"@structures": "test.IndependentTokens.v1"}})
    words = ["the", "cat", "sat", "on", "a", "mat"]
    tags = ["DT", "NN", "VBD", "IN", "DT", "NN"]
    examples = [Example.from_dict(nlp.make_doc(" ".join(words)), {"tags": tags})]
    optimizer = nlp.initialize(lambda: examples)
    for _ in range(30):
        losses = nlp.update(examples, sgd=optimizer)
    assert losses["crf_tagger"] < 0.5
    doc = nlp("the cat sat on a mat")
    assert [t.tag_ for t in doc] == tags
    assert all(0.5 < t._.crf_confidence <= 1.0 for t in doc)
    nlp.to_disk(tmp_path / "model")
    again = spacy.load(tmp_path / "model")
    assert again.get_pipe("crf_tagger").crf_structure is independent_tokens
    assert [t.tag_ for t in again("the cat sat on a mat")] == tags
    # the optional parts it does not define fail with their clear errors
    with pytest.raises(ValueError, match="E019"):
        nlp.add_pipe("crf_tagger", name="nbest", config={"structure": "independent_tokens",
                                                         "n_best": 2})
    with pytest.raises(ValueError, match="E018"):
        nlp.add_pipe("crf_tagger", name="ents", config={"structure": "independent_tokens",
                                                        "target": "ents"})


def test_inference_entry_points_delegate_to_the_layouts_structure(independent_tokens):
    rng = np.random.default_rng(0)
    from spacy_crf.models.potentials import CRFScores

    L = 3
    scores = CRFScores.of(rng.normal(size=(5, L)), transitions=np.zeros((L, L)), start=np.zeros(L),
                          end=np.zeros(L), pair=np.zeros((1, L, L)), root=np.zeros(L))
    layout = TokensLayout(np.array([2, 3]))
    labels, best = inference.viterbi(scores, layout)
    assert labels.tolist() == scores.emissions.argmax(axis=1).tolist()
    probs, log_z = inference.marginals(scores, layout)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0)
    # log Z of a sequence of independent tokens: the sum of each token's log-sum-exp
    expected = np.log(np.exp(scores.emissions).sum(axis=1))
    np.testing.assert_allclose(log_z, [expected[:2].sum(), expected[2:].sum()])
    nll, gradient = inference.nll_and_gradient(scores, layout, np.array([0, -1, 1, 2, 0]))
    assert gradient.transitions is None and gradient.pair is None
    assert np.all(gradient.emissions[1] == 0)


def test_ragged_sequence_helpers_respect_boundaries_and_empty_sequences():
    from spacy_crf.structures.base import (positions_in_sequence, previous_in_sequence,
                                           sequence_ends)
    lengths = np.array([3, 0, 1, 2], dtype=np.int64)
    values = np.array([10, 11, 12, 13, 14, 15])
    assert positions_in_sequence(lengths).tolist() == [0, 1, 2, 0, 0, 1]
    first, last = sequence_ends(lengths)
    assert first.tolist() == [0, 3, 4] and last.tolist() == [2, 3, 5]
    assert previous_in_sequence(values, lengths, fill=-1).tolist() == [-1, 10, 11, -1, -1, 14]
    assert previous_in_sequence(values, lengths, fill=-1, steps=2).tolist() == [-1, -1, 10, -1, -1, -1]
    assert previous_in_sequence(values[:0], lengths[:0], fill=-1).shape == (0,)
