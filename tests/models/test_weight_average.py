"""Averaged weights (``FeatureCRF(average_weights=True)``): the component keeps
thinc's moving average when the optimizer keeps none, predicts and saves with
it, and trains on the iterate."""

import pickle

import numpy as np
import pytest
from thinc.api import Adam

from conftest import SMALL_MODEL, make_nlp, toy_examples

TEXTS = ["the red dog sat on a box .", "a cat ran home .", "birds sang in the old tree ."]


def emissions(nlp, texts=TEXTS):
    pipe = nlp.get_pipe("crf_tagger")
    pipe.use_prediction_weights()
    return pipe.model.predict([nlp.make_doc(t) for t in texts]).emissions.copy()


def iterate_emissions(nlp, texts=TEXTS):
    """The emissions of the training weights (what the model holds after an update)."""
    pipe = nlp.get_pipe("crf_tagger")
    pipe._state.averages.show_iterate(pipe.model)
    return pipe.model.predict([nlp.make_doc(t) for t in texts]).emissions.copy()


def trained(model=None, use_averages=False, n_iter=12, predict_between=False):
    nlp = make_nlp("tag", model=model)
    examples = toy_examples(nlp, "tag")
    nlp.initialize(lambda: examples)
    optimizer = Adam(0.05, use_averages=use_averages)
    for i in range(n_iter):
        nlp.update(examples[i % 3::3], sgd=optimizer)
        if predict_between:
            list(nlp.pipe(TEXTS))
    return nlp, optimizer


def test_own_averages_are_thincs_averages():
    # the component's averages follow thinc's formula for the sparse table and
    # the dense potentials alike: the same numbers as the optimizer's averages
    own, _ = trained(use_averages=False)
    theirs, optimizer = trained(use_averages=True)
    with theirs.use_params(optimizer.averages):
        expected = emissions(theirs)
        expected_tags = [[t.tag_ for t in doc] for doc in theirs.pipe(TEXTS)]
    np.testing.assert_allclose(emissions(own), expected, rtol=1e-5, atol=1e-6)
    assert [[t.tag_ for t in doc] for doc in own.pipe(TEXTS)] == expected_tags
    # and they are not the iterate (averaging did something)
    assert not np.allclose(iterate_emissions(own), expected, atol=1e-4)


def test_predicting_between_updates_does_not_change_training():
    quiet, _ = trained(predict_between=False)
    busy, _ = trained(predict_between=True)
    np.testing.assert_array_equal(iterate_emissions(quiet), iterate_emissions(busy))
    # (an average caught up in several goes differs from one caught up at once
    # by float rounding only)
    np.testing.assert_allclose(emissions(quiet), emissions(busy), rtol=1e-6, atol=1e-6)


def test_saved_and_pickled_models_predict_with_the_averages(tmp_path):
    nlp, _ = trained()
    expected = emissions(nlp)
    tags = [[t.tag_ for t in doc] for doc in nlp.pipe(TEXTS)]
    nlp.get_pipe("crf_tagger")._state.averages.show_iterate(nlp.get_pipe("crf_tagger").model)
    nlp.to_disk(tmp_path / "nlp")  # saving shows the averages itself
    loaded = make_nlp("tag").from_disk(tmp_path / "nlp")
    np.testing.assert_array_equal(emissions(loaded), expected)
    assert [[t.tag_ for t in doc] for doc in loaded.pipe(TEXTS)] == tags
    nlp.get_pipe("crf_tagger")._state.averages.show_iterate(nlp.get_pipe("crf_tagger").model)
    copy = pickle.loads(pickle.dumps(nlp))  # as nlp.pipe(n_process=2) sends it
    np.testing.assert_array_equal(emissions(copy), expected)


@pytest.mark.parametrize("exclude", [["model"], ["cfg", "model"]])
def test_a_load_that_keeps_the_model_keeps_its_averages_and_iterate(exclude):
    # with an L1 penalty rows skipped by the last update owe it; a load that
    # leaves the model alone must neither drop the iterate under the averages
    # (the averages then took its penalty at the next prediction) nor the averages
    nlp, _ = trained(model={**SMALL_MODEL, "l1_penalty": 0.01})
    expected = emissions(nlp)
    pipe = nlp.get_pipe("crf_tagger")
    pipe.from_bytes(pipe.to_bytes(), exclude=exclude)
    np.testing.assert_array_equal(emissions(nlp), expected)
    assert not np.allclose(iterate_emissions(nlp), expected, atol=1e-4)


def test_average_weights_false_predicts_with_the_last_weights():
    nlp, _ = trained(model={**SMALL_MODEL, "average_weights": False})
    pipe = nlp.get_pipe("crf_tagger")
    assert not pipe._state.averages.averages
    np.testing.assert_array_equal(emissions(nlp), iterate_emissions(nlp))


def test_an_optimizer_with_averages_keeps_them_itself():
    nlp, optimizer = trained(use_averages=True)
    assert not nlp.get_pipe("crf_tagger")._state.averages.averages
    assert optimizer.averages


def test_initialize_starts_the_averages_afresh():
    nlp, _ = trained()
    pipe = nlp.get_pipe("crf_tagger")
    assert pipe._state.averages.averages
    list(nlp.pipe(TEXTS))  # the model holds the averages now
    nlp.initialize(lambda: toy_examples(nlp, "tag"))
    assert not pipe._state.averages.averages
    assert not np.any(emissions(nlp))  # fresh zero weights, not old averages


def test_a_label_added_after_training_keeps_the_predictions():
    nlp, _ = trained()
    tags = [[t.tag_ for t in doc] for doc in nlp.pipe(TEXTS)]
    pipe = nlp.get_pipe("crf_tagger")
    pipe._state.averages.show_iterate(pipe.model)
    assert pipe.add_label("NEW") == 1
    assert [[t.tag_ for t in doc] for doc in nlp.pipe(TEXTS)] == tags
    # training goes on from the averaged weights, averaging anew
    optimizer = Adam(0.05, use_averages=False)
    nlp.update(toy_examples(nlp, "tag")[:2], sgd=optimizer)
    assert pipe._state.averages.averages


@pytest.mark.parametrize("value", ["yes", 2])
def test_a_config_typo_is_refused(value):
    from spacy.util import registry

    with pytest.raises(Exception, match="average_weights"):
        registry.resolve({"m": {**SMALL_MODEL, "average_weights": value}})
