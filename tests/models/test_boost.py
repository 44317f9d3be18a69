"""The head start of short training loops (``boost_updates``): larger early
steps that decay as 1/sqrt(t), counted with the model and restarted by
``initialize``."""

import numpy as np
import pytest
import spacy
from spacy.training import Example

from spacy_crf.models.sparse_table import BOOST_UPDATES, UPDATES_DONE, boost
from spacy_crf.pipeline.factory import DEFAULT_MODEL
from conftest import FROM_INITIALIZE, train


def test_boost_decays_as_one_over_sqrt_t_to_one():
    assert boost(0, 100) == pytest.approx(10.0)
    assert boost(24, 100) == pytest.approx(2.0)
    assert boost(99, 100) == 1.0 and boost(5000, 100) == 1.0
    assert boost(0, 0) == 1.0


def pipeline(boost_updates):
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"model": {**DEFAULT_MODEL, "boost_updates": boost_updates,
                                                 "cluster_templates": None}})
    examples = [Example.from_dict(nlp.make_doc("the cat sat"), {"tags": ["D", "N", "V"]}),
                Example.from_dict(nlp.make_doc("a dog ran"), {"tags": ["D", "N", "V"]})]
    return nlp, examples


def weights(nlp):
    return {(node.name, name): node.get_param(name).copy()
            for node in nlp.get_pipe("crf_tagger").model.walk()
            for name in node.param_names if node.has_param(name)}


def test_first_update_steps_sqrt_boost_updates_times_farther():
    moved = {}
    for n in (0, 100):
        nlp, examples = pipeline(n)
        optimizer = nlp.initialize(lambda: examples)
        before = weights(nlp)
        nlp.update(examples, sgd=optimizer)
        after = weights(nlp)
        moved[n] = {k: float(np.abs(after[k] - before[k]).max()) for k in before}
    assert ("crf_hashed_linear", "W") in moved[0] and moved[0][("crf_hashed_linear", "W")] > 0
    for param, distance in moved[0].items():
        # Adam's first step is about lr * scale * sign(g) (eps and weight decay aside)
        assert moved[100][param] == pytest.approx(10 * distance, rel=1e-3), param


def counters(pipe):
    return [node.attrs[UPDATES_DONE] for node in pipe.model.walk()
            if node.attrs.get(BOOST_UPDATES)]


def test_the_count_is_saved_and_initialize_starts_it_again():
    nlp, examples = pipeline(100)
    train(nlp, examples, 3, optimizer=FROM_INITIALIZE)
    pipe = nlp.get_pipe("crf_tagger")
    assert counters(pipe) == [3, 3]  # the hashed table and the label interactions
    other, _ = pipeline(100)
    loaded = other.get_pipe("crf_tagger").from_bytes(pipe.to_bytes())
    assert counters(loaded) == [3, 3]  # a loaded model that trains on gets no new head start
    nlp.initialize(lambda: examples)
    assert counters(pipe) == [0, 0]


@pytest.mark.parametrize("bad", [-1, 1.5, True, "100"])
def test_bad_boost_updates_is_named(bad):
    nlp = spacy.blank("en")
    # ours (E127), or spaCy's config validation where the type is not an int at all
    with pytest.raises(ValueError, match=r"boost_updates"):
        nlp.add_pipe("crf_tagger", config={"model": {**DEFAULT_MODEL, "boost_updates": bad}})
