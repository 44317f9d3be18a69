"""The batch trainer's objective is the component's: for the ``lemma`` target the
trees that do not apply to a token's form are ``-inf`` in ``fit``'s shards as
they are in ``nlp.update`` and in decoding (``Target.allowed_labels``), so the
objective ``fit`` minimises equals the component's own nll at any weights."""

import numpy as np
import pytest
import spacy
from spacy.tokens import Doc
from spacy.training import Example

from conftest import SMALL_MODEL, chain, ewt_sample_docs
from spacy_crf.training.corpus import featurize_corpus, write_weights
from spacy_crf.training.objective import ShardedObjective


def initialized(target, n_docs=40):
    nlp = spacy.blank("en")
    pipe = nlp.add_pipe("crf_tagger", name="crf", config={
        "target": target, "structure": chain(1), "model": SMALL_MODEL})
    references = ewt_sample_docs("train")[:n_docs]
    examples = [Example(Doc(nlp.vocab, words=[t.text for t in d],
                            spaces=[bool(t.whitespace_) for t in d]), d) for d in references]
    nlp.initialize(lambda: examples)
    return pipe, examples


def component_loss(pipe, examples):
    """The component's nll of ``examples`` at its model's weights, and its gradient."""
    docs = [eg.predicted for eg in examples]
    return pipe.get_loss(examples, pipe.model.predict(pipe.read_batch(docs)))


@pytest.mark.parametrize("target", ["lemma", "pos"])
def test_fits_objective_is_the_components_nll(target):
    pipe, examples = initialized(target)
    shards, buckets = featurize_corpus(pipe, examples, 2)
    objective = ShardedObjective(shards, c2=0.0, n_threads=1)
    layout = shards[0].layout
    try:
        for scale in (0.0, 0.3):  # at zero weights (every label alike) and at random ones
            theta = np.random.default_rng(0).normal(size=layout.size) * scale
            write_weights(pipe, layout, buckets, theta)
            want, d_scores = component_loss(pipe, examples)
            got, gradient = objective(theta)
            assert np.isfinite(got)
            assert got == pytest.approx(want, rel=1e-4)
            split = layout.split(gradient)
            np.testing.assert_allclose(split["transitions"], d_scores.transitions,
                                       rtol=1e-3, atol=1e-3)
    finally:
        objective.close()


def test_the_shards_block_the_trees_that_do_not_apply_as_the_component_does():
    pipe, examples = initialized("lemma")
    shards, _ = featurize_corpus(pipe, examples, 1)
    docs = [eg.predicted for eg in examples]
    masked = pipe.constrain_target(pipe.model.predict(pipe.read_batch(docs)), docs)
    assert shards[0].blocked is not None
    np.testing.assert_array_equal(shards[0].blocked, np.isneginf(masked.emissions))
    pos_pipe, pos_examples = initialized("pos")
    assert featurize_corpus(pos_pipe, pos_examples, 1)[0][0].blocked is None
