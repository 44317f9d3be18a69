"""What ``python -m spacy_crf.fit`` says when it refuses a config: every setting
it needs at once (E211 for the morph target's filled config names the
structure's order and the model's factoring together), and for a model that is
no FeatureCRF the route that trains that kind of model (E031)."""

import io

import pytest
import spacy

from conftest import ROOT, ewt_sample_corpus, filled_config
from spacy_crf.training.fit import fit


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return ewt_sample_corpus(tmp_path_factory.mktemp("corpus"), train=40, dev=20)


def overrides(corpus, name, **more):
    return {"paths.train": str(corpus["train"]), "paths.dev": str(corpus["dev"]),
            f"components.{name}.model.n_buckets": 4096, **more}


def test_e211_names_every_setting_the_morph_config_needs_and_they_suffice(tmp_path, corpus):
    """The filled morph config picks the pruned chain (E211) over a table factored
    over label parts (E241): one message names both fixes, and with both fit trains."""
    config = filled_config(tmp_path, "morphologizer", "morph")
    path = tmp_path / "morph.cfg"
    config.to_disk(path)
    with pytest.raises(ValueError) as info:
        fit(path, tmp_path / "refused", max_iterations=1, stdout=io.StringIO(),
            overrides=overrides(corpus, "morphologizer"))
    message = str(info.value)
    assert message.startswith("[CRF-E211]")
    assert "order = 1" in message
    assert "factored = false in the [components.morphologizer.model] block" in message
    fixed = overrides(corpus, "morphologizer", **{
        "components.morphologizer.structure.order": 1,
        "components.morphologizer.model.factored": False})
    fit(path, tmp_path / "fixed", max_iterations=1, stdout=io.StringIO(), overrides=fixed)
    nlp = spacy.load(tmp_path / "fixed" / "model-last")
    assert nlp.get_pipe("morphologizer").crf_structure.name == "chain"


def test_e211_names_order_alone_where_the_model_has_a_weight_per_label(tmp_path, corpus):
    config = filled_config(tmp_path, "lemmatizer", "lemma")
    path = tmp_path / "lemma.cfg"
    config.to_disk(path)
    with pytest.raises(ValueError, match=r"\[CRF-E211\].*order = 1") as info:
        fit(path, tmp_path / "refused", max_iterations=1, stdout=io.StringIO(),
            overrides=overrides(corpus, "lemmatizer"))
    assert "factored" not in str(info.value)


@pytest.mark.parametrize("config, route", [
    ("ewt_upos_hmm.cfg", r"learns from counts when the component is initialized"),
    ("ewt_upos_neural.cfg", r"NeuralCRF model.*spacy train"),
])
def test_e031_names_what_trains_each_kind_of_model(corpus, config, route):
    with pytest.raises(ValueError, match=rf"\[CRF-E031\].*{route}") as info:
        fit(ROOT / "configs" / config, None, max_iterations=1, stdout=io.StringIO(),
            overrides={"paths.train": str(corpus["train"]), "paths.dev": str(corpus["dev"])})
    if "hmm" in config:
        assert "NeuralCRF" not in str(info.value)
