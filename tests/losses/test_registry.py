"""Losses are a registry: a new loss is one module that registers itself.

The loss below is all it takes to add one (its module would live in
``spacy_crf/losses/``, or in a package of its own with an entry point in the
group ``spacy_crf_losses``): a ``crf_tagger`` with ``loss = "half_nll"`` then
trains, saves and loads with no other change; E040 lists it, and the batch
trainer refuses it as the loss itself says.
"""

import importlib
import tomllib

import catalogue
import pytest
import spacy
from spacy.training import Example
from spacy.util import registry

from spacy_crf import inference
from spacy_crf.losses import Loss, get_loss, register_loss, registered_losses

from conftest import FROM_INITIALIZE, ROOT, train


@register_loss("half_nll")
def half_nll(scores, layout, gold):
    """Half the likelihood's loss and gradient: training as ``nll`` at half the rate."""
    loss, gradient = inference.nll_and_gradient(scores, layout, gold)
    return loss / 2, gradient.map(lambda g: None if g is None else g / 2)


def teardown_module():
    # (the process's other tests list the registered losses: leave it as it was)
    catalogue._remove((*registry.crf_losses.namespace, "half_nll"))


def test_the_new_loss_is_registered_and_found_by_name():
    assert isinstance(half_nll, Loss) and get_loss("half_nll") is half_nll
    assert list(registered_losses())[:4] == ["nll", "perceptron", "hinge", "half_nll"]
    assert not half_nll.supports_batch_fit  # (a loss says so to be fitted by the batch trainer)
    with pytest.raises(ValueError, match=r"\[CRF-E040\] Unknown loss 'halfnll'.*'nll', "
                                         r"'perceptron', 'hinge', 'half_nll'"):
        get_loss("halfnll")


def trained(loss, n=10):
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"target": "tag", "loss": loss})
    data = [("the cat sat", "DT NN VBD"), ("a dog ran", "DT NN VBD")]
    examples = [Example.from_dict(nlp.make_doc(t), {"tags": g.split()}) for t, g in data]
    return nlp, train(nlp, examples, n, optimizer=FROM_INITIALIZE)


def test_a_component_with_the_new_loss_trains_saves_and_loads(tmp_path):
    nlp, losses = trained("half_nll")
    # the first update's loss (fresh weights) is half the likelihood's
    assert losses[0] == pytest.approx(trained("nll", n=1)[1][0] / 2, rel=1e-6)
    assert losses[-1] < losses[0]
    assert [t.tag_ for t in nlp("a cat ran")] == ["DT", "NN", "VBD"]
    nlp.to_disk(tmp_path / "p")
    assert spacy.load(tmp_path / "p").get_pipe("crf_tagger").cfg["loss"] == "half_nll"


def test_every_loss_of_the_package_has_its_entry_point():
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]
    points = declared["spacy_crf_losses"]
    ours = {name: loss for name, loss in registered_losses().items()
            if loss.function.__module__.startswith("spacy_crf.")}
    assert set(points) == set(ours)
    for name, target in points.items():
        module, attr = target.split(":")
        assert getattr(importlib.import_module(module), attr) is ours[name]
